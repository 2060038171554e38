import ActionRuntime
import Datasets
import Foundation
import TestSupport
import XCTest

/// docs/library.md's examples (Examples/Library): the doc shows the files as they are, and
/// the package builds as a package of its own that depends on this checkout by path (so only
/// the products' public API is reachable), and each example runs and does what the CLI does:
/// `train` writes `actiontrain fit`'s model byte for byte, `cancel-and-resume` the same model
/// again, `evaluate` eval's report.json, `export` export's ONNX file, `export-coreml` the
/// `.mlmodel` of export --format coreml, and `stream` gives the windows `ActionModel.predict`
/// cuts from the same recording and the events of `predict --events`.
///
/// The package builds in `.build/library-examples` of the checkout, kept between runs (an
/// incremental build when nothing changed). Debug, as `swift test` builds this package: the
/// examples' models are then compared with the CLI's of the same build configuration, and a
/// debug build of the library takes about half the time of a release one (docs/library.md).
final class LibraryExamplesTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let examples = root.appendingPathComponent("Examples/Library").path
    static let fixture = root.appendingPathComponent("Tests/Fixtures/tiny-natops.jsonl").path

    /// The fenced code after each `<!-- example: PATH -->` line of the doc, by PATH (relative to
    /// Examples/Library).
    static func shownFiles(_ doc: String) throws -> [String: String] {
        var shown: [String: String] = [:]
        let lines = doc.components(separatedBy: "\n")
        var i = 0
        while i < lines.count {
            defer { i += 1 }
            guard lines[i].hasPrefix("<!-- example: ") else { continue }
            let path = String(lines[i].dropFirst("<!-- example: ".count).dropLast(" -->".count))
            i += 1
            guard i < lines.count, lines[i] == "```swift" else { throw TestFailure("docs/library.md: no ```swift block after the marker of \(path)") }
            var code: [String] = []
            i += 1
            while i < lines.count && lines[i] != "```" {
                code.append(lines[i])
                i += 1
            }
            guard shown[path] == nil else { throw TestFailure("docs/library.md shows \(path) twice") }
            shown[path] = code.joined(separator: "\n") + "\n"
        }
        return shown
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    func testTheDocShowsEveryExampleFileAsItIs() throws {
        let doc = try String(contentsOfFile: Self.root.appendingPathComponent("docs/library.md").path, encoding: .utf8)
        let shown = try Self.shownFiles(doc)
        let sources = try FileManager.default.subpathsOfDirectory(atPath: Self.examples + "/Sources").filter { $0.hasSuffix(".swift") }
        XCTAssertEqual(Set(shown.keys), Set(["Package.swift"] + sources.map { "Sources/" + $0 }), "the files the doc shows")
        for (path, code) in shown.sorted(by: { $0.key < $1.key }) {
            let file = try String(contentsOfFile: Self.examples + "/" + path, encoding: .utf8)
            XCTAssertEqual(code, file, "docs/library.md shows \(path) otherwise than Examples/Library/\(path)")
        }
        // A block that differs by one character is found.
        let changed = doc.replacingOccurrences(of: "config.epochs = epochs", with: "config.epochs = epochs + 1")
        XCTAssertNotEqual(try Self.shownFiles(changed)["Sources/LibraryExamples/Train.swift"], shown["Sources/LibraryExamples/Train.swift"])
    }

    /// Runs a program to its end: exit code, stdout and stderr (through files in `logs`).
    func run(_ executable: String, _ args: [String], logs: String) throws -> (code: Int32, out: String, err: String) {
        let tag = UUID().uuidString, outPath = "\(logs)/\(tag).out", errPath = "\(logs)/\(tag).err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        p.standardOutput = FileHandle(forWritingAtPath: outPath)
        p.standardError = FileHandle(forWritingAtPath: errPath)
        try p.run()
        p.waitUntilExit()
        func text(_ path: String) throws -> String { String(decoding: try bytes(path), as: UTF8.self) }
        return (p.terminationStatus, try text(outPath), try text(errPath))
    }

    func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    func testTheExamplesBuildAsAPackageOfTheirOwnAndDoWhatTheCLIDoes() throws {
        // Build (swift from PATH, as scripts/test runs it).
        let scratch = Self.root.appendingPathComponent(".build/library-examples").path, dir = try scratchFolder()
        func run(_ executable: String, _ args: [String]) throws -> (code: Int32, out: String, err: String) {
            try self.run(executable, args, logs: dir)
        }
        let args = ["swift", "build", "--package-path", Self.examples, "--scratch-path", scratch, "--product", "library-examples"]
        var build = try run("/usr/bin/env", args)
        if build.code != 0 {
            // The kept scratch folder can hold a stale build of the parent package (a Swift file
            // added to one of its modules was once not seen): build once more from nothing.
            try? FileManager.default.removeItem(atPath: scratch)
            build = try run("/usr/bin/env", args)
        }
        XCTAssertEqual(build.code, 0, "building Examples/Library:\n\(build.out)\n\(build.err)")
        guard build.code == 0 else { return }
        let bin = scratch + "/debug/library-examples", data = Self.fixture

        // Train: the model of `actiontrain fit` with the same settings, byte for byte.
        let train = try run(bin, ["train", data, dir + "/run", "3", "6"])
        XCTAssertEqual(train.code, 0, train.err)
        XCTAssertTrue(train.out.contains("recipe: "), train.out)
        XCTAssertTrue(train.out.contains("finished: wrote \(dir)/run/model.atm"), train.out)
        let fit = runCLI(["fit", data, "--epochs", "3", "--window-mode", "sliding", "--window-frames", "6", "--out", dir + "/cli"])
        XCTAssertEqual(fit.code, 0, fit.err)
        let model = dir + "/run/model.atm"
        XCTAssertEqual(try bytes(model), try bytes(dir + "/cli/model.atm"), "the example's model against actiontrain fit's")

        // Cancel and resume: the same model as the uninterrupted run.
        let resumed = try run(bin, ["cancel-and-resume", data, dir + "/resumed", "3", "6"])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertTrue(resumed.out.contains("cancelled: interrupted("), resumed.out)
        XCTAssertTrue(resumed.out.contains("resumed at epoch"), resumed.out)
        XCTAssertEqual(try bytes(dir + "/resumed/model.atm"), try bytes(model), "cancelled and resumed against uninterrupted")

        // Evaluate: eval's report.json, and every report file.
        let evaluate = try run(bin, ["evaluate", model, data, dir + "/reports"])
        XCTAssertEqual(evaluate.code, 0, evaluate.err)
        XCTAssertTrue(evaluate.out.contains("accuracy "), evaluate.out)
        let eval = runCLI(["eval", model, data, "--report", dir + "/cli-reports"])
        XCTAssertEqual(eval.code, 0, eval.err)
        XCTAssertEqual(try bytes(dir + "/reports/report.json"), try bytes(dir + "/cli-reports/report.json"))
        for name in ["report.txt", "report.md", "report.html"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/reports/" + name), name)
        }

        // Export: export's ONNX file.
        let export = try run(bin, ["export", model, dir + "/model.onnx"])
        XCTAssertEqual(export.code, 0, export.err)
        let cliExport = runCLI(["export", model, "--out", dir + "/cli.onnx", "--parity-windows", "0"])
        XCTAssertEqual(cliExport.code, 0, cliExport.err)
        XCTAssertEqual(try bytes(dir + "/model.onnx"), try bytes(dir + "/cli.onnx"))
        // Export to Core ML: export --format coreml's file.
        let coreml = try run(bin, ["export-coreml", model, dir + "/Model.mlmodel"])
        XCTAssertEqual(coreml.code, 0, coreml.err)
        XCTAssertTrue(coreml.out.hasPrefix("wrote \(dir)/Model.mlmodel: "), coreml.out)
        let cliCoreML = runCLI([
            "export", model, "--format", "coreml", "--author", "Example", "--license", "CC0", "--out", dir + "/cli.mlmodel", "--parity-windows", "0",
        ])
        XCTAssertEqual(cliCoreML.code, 0, cliCoreML.err)
        XCTAssertEqual(try bytes(dir + "/Model.mlmodel"), try bytes(dir + "/cli.mlmodel"))

        // Stream: the windows the runtime cuts from the first sequence offline, the same classes
        // and probabilities.
        let stream = try run(bin, ["stream", model, data])
        XCTAssertEqual(stream.code, 0, stream.err)
        let loaded = try ActionModel(contentsOf: model), dataset = try DatasetLoader.read(data).dataset
        let offline = try loaded.predict(
            sequence: dataset.sequences[0], stride: StreamOptions.standard(for: loaded).stride, sourceFrameRate: dataset.frameRate)
        let windows = stream.out.split(separator: "\n").filter { $0.hasPrefix("window ") }
        XCTAssertEqual(windows.count, offline.count, stream.out)
        for (line, w) in zip(windows, offline) {
            let fields = line.split(separator: " ")  // window START-END: CLASS PROBABILITY
            XCTAssertEqual(fields.count, 4, String(line))
            guard fields.count == 4, let p = Float(fields[3]) else { continue }
            XCTAssertEqual(String(fields[1]), "\(w.start)-\(w.end):")
            XCTAssertEqual(String(fields[2]), loaded.classes[w.classIndex])
            XCTAssertEqual(p, w.probabilities[w.classIndex], accuracy: 1e-6, String(line))
        }
        // And the events `predict FILE --events` gives for the first sequence (its rule: from
        // frames when the model file records the numbers, which fit writes).
        XCTAssertNotNil(loaded.header.streaming?.frames)
        let predict = runCLI(["predict", model, data, "--events"])
        XCTAssertEqual(predict.code, 0, predict.err)
        let cli = predict.out.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["sequence"] as? String == dataset.sequences[0].id }
        let shown = stream.out.split(separator: "\n").filter { $0.hasPrefix("event: ") }
        XCTAssertEqual(shown.count, cli.count, stream.out)
        for (line, e) in zip(shown, cli) {
            let fields = line.split(separator: " ")  // event: LABEL from START s to END s, ...
            XCTAssertEqual(String(fields[1]), e["label"] as? String, String(line))
            XCTAssertEqual(Double(fields[3]) ?? -1, e["start"] as? Double ?? -2, accuracy: 0.0005, String(line))
            XCTAssertEqual(Double(fields[6]) ?? -1, e["end"] as? Double ?? -2, accuracy: 0.0005, String(line))
        }
    }
}
