import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// The libraries' errors name files, folders and config keys, never a command-line flag:
/// the flags are the CLI's business.
final class PipelineErrorTests: XCTestCase {
    func folder() throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }

    /// Runs `body`, expects it to throw `expected` and checks that its message names no flag.
    func assertFails<E: Error & Equatable>(_ expected: E, message: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual(error as? E, expected, file: file, line: line)
            XCTAssertEqual("\(error)", message, file: file, line: line)
            XCTAssertNil("\(error)".range(of: #"--[a-z]"#, options: .regularExpression), "names a flag: \(error)", file: file, line: line)
        }
    }

    func testFitErrorsNameNoFlag() throws {
        let d = try DatasetLoader.load(FitRunTests.fixture)
        let dir = try folder()
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(dir)/file"))
        assertFails(FitError.runFolderIsAFile("\(dir)/file"), message: "\(dir)/file exists and is not a folder; choose another run folder") {
            _ = try RunFolder.create("\(dir)/file", replacing: true)
        }
        assertFails(FitError.noCheckpoint(folder: dir), message: "\(dir): no checkpoint.atc to resume from") {
            _ = try FitRun.resume(folder: RunFolder(existing: dir))
        }
        var allTest = d
        for i in allTest.sequences.indices { allTest.sequences[i].split = "test" }
        assertFails(FitError.noTrainingSequences(dataset: "tiny-natops"), message: "tiny-natops: no training sequences (every sequence is in the test split)") {
            _ = try FitRun.start(dataPath: FitRunTests.fixture, dataset: allTest, config: FitRunTests.quick, folder: nil)
        }
        var empty = d  // sequences without frames give no windows
        for i in 0..<2 {
            let s = d.sequences[i]
            empty.sequences[i] = PoseSequence(
                id: s.id, label: s.label, jointCount: s.jointCount, dimensions: s.dimensions, frameCount: 0, coordinates: [], present: [])
        }
        // A run refuses them before it cuts a window (Guards.requireTrainable, docs/bad-input.md)...
        for i in [8] {
            let s = d.sequences[i]
            empty.sequences[i] = PoseSequence(
                id: s.id, label: s.label, jointCount: s.jointCount, dimensions: s.dimensions, frameCount: 0, coordinates: [], present: [])
        }
        assertFails(
            DatasetError.invalidValue(
                SourceLocation(file: FitRunTests.fixture), problem: "the 2 training sequences have no frames",
                fix: "give each sequence its frames (\"frames\": [...])"),
            message: "\(FitRunTests.fixture): the 2 training sequences have no frames; give each sequence its frames (\"frames\": [...])"
        ) {
            _ = try FitRun.start(dataPath: FitRunTests.fixture, dataset: empty, config: FitRunTests.quick, folder: nil, split: .init(train: [0, 8], validation: []))
        }
        // ...and the training data, made without a run, still says it gives no windows.
        let resolved = try FitPipeline.resolve(FitRunTests.quick, for: empty, explicit: nil)
        assertFails(
            FitError.noTrainingWindows(dataset: "tiny-natops", sequences: 2),
            message: "tiny-natops: no training windows from 2 training sequences; check the config's windowFrames and the data"
        ) {
            _ = try TrainingData(dataset: empty, train: [0, 8], validation: [], config: resolved.config, input: resolved.input)
        }

        // Divergence: without a folder, after the first epoch's checkpoint, and in it.
        var wild = FitRunTests.quick
        wild.learningRate = 1e30
        wild.epochs = 30
        XCTAssertThrowsError(try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: wild, folder: nil).train()) { e in
            guard case .diverged(_, nil, _) = e as? FitError else { return XCTFail("\(e)") }
            XCTAssertTrue("\(e)".hasSuffix("; start again with a lower learning rate"), "\(e)")
        }
        do {  // (each run holds the folder's lock until it ends)
            let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: FitRunTests.quick, folder: try RunFolder.create("\(dir)/run", replacing: false))
            _ = try run.train(shouldStop: { run.progress.epoch == 2 })
        }
        do {
            let resumed = try FitRun.resume(folder: RunFolder(existing: "\(dir)/run")) { c in
                var c = c
                c.learningRate = 1e30
                return c
            }
            XCTAssertThrowsError(try resumed.train()) { e in
                guard case .diverged(_, "\(dir)/run/checkpoint.atc", 1) = e as? FitError else { return XCTFail("\(e)") }
                XCTAssertTrue("\(e)".hasSuffix("the last good checkpoint (end of epoch 1) is intact in \(dir)/run/checkpoint.atc; resume from it with a lower learning rate"), "\(e)")
                XCTAssertNil("\(e)".range(of: "--"))
            }
        }

        // Resuming may change only what leaves the model and the data as they were.
        assertFails(
            FitError.changedOnResume(keys: ["hidden", "seed"]),
            message: "the config's hidden, seed cannot change when resuming (it changes the model or the data); start a new run instead"
        ) {
            _ = try FitRun.resume(folder: RunFolder(existing: "\(dir)/run")) { c in
                var c = c
                (c.hidden, c.seed, c.epochs) = ([8], 9, 5)
                return c
            }
        }
        var other = d
        other.sequences[0].label = "wave"
        let changed = "\(dir)/changed.jsonl"
        try NativeFormat.write(other, to: changed)
        XCTAssertThrowsError(try FitRun.resume(folder: RunFolder(existing: "\(dir)/run"), dataPath: changed)) { e in
            guard case .datasetChanged(changed, other.contentHash, d.contentHash) = e as? FitError else { return XCTFail("\(e)") }
            XCTAssertNil("\(e)".range(of: "--"))
        }
    }

    /// No library source puts a command-line flag in a message: no string literal with `--x`.
    func testNoLibrarySourceNamesAFlag() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let libraries = ["PoseCore", "Datasets", "ActionRuntime", "ActionTrain", "ModelExport", "Eval", "Pipelines"]
        var found: [String] = []
        for library in libraries {
            let dir = sources.appendingPathComponent(library)
            for name in try FileManager.default.subpathsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    if code.hasPrefix("//") { continue }
                    if code.range(of: #""[^"]*--[a-z][^"]*""#, options: .regularExpression) != nil { found.append("\(library)/\(name):\(n + 1)") }
                }
            }
        }
        XCTAssertEqual(found, [], "library messages name command-line flags")
    }
}
