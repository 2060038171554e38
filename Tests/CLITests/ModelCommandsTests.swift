import ActionRuntime
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// `predict`, `export`, `InspectModel` and the determinism of `fit`'s model file.
final class ModelCommandsTests: XCTestCase {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ActionRuntimeTests/Golden/model.atm").path

    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    /// A native dataset on the golden model's skeleton: `count` sequences of `frames` frames at
    /// 30 fps, labels alternating wave / clap, one joint absent now and then.
    func nativeDataset(count: Int, frames: Int, skeleton: String? = nil) -> [String] {
        let s =
            skeleton
            ?? #"{"bones":[["neck","head"],["root","neck"],["neck","hand"]],"centre":["root"],"dimensions":2,"joints":["head","neck","root","hand"],"mirrorPairs":[],"name":"golden-4","torsoLower":["root"],"torsoUpper":["neck"],"units":"pixels"}"#
        var lines = [#"{"actiontrain": "poses", "version": 1, "skeleton": \#(s), "frameRate": 30, "classes": ["wave", "clap", "squat"]}"#]
        var g = SeededGenerator(seed: 5)
        for i in 0..<count {
            var frameJSON: [String] = []
            for f in 0..<frames {
                var joints: [String] = []
                for (j, name) in ["head", "neck", "root", "hand"].enumerated() where (f + j + i) % 7 != 0 {
                    let x = 100 + 10 * Float(j) + g.nextSymmetric(5) + (i % 2 == 0 ? 20 * sin(Float(f)) : 0)
                    let y = 50 + 40 * Float(j) + g.nextSymmetric(5)
                    joints.append("\"\(name)\": [\(x), \(y), 0.9]")
                }
                frameJSON.append("{\"pose\": {\(joints.joined(separator: ", "))}}")
            }
            let split = i < count / 2 ? "train" : "test"
            lines.append(
                #"{"id": "s\#(i)", "label": "\#(i % 2 == 0 ? "wave" : "clap")", "split": "\#(split)", "frames": [\#(frameJSON.joined(separator: ", "))]}"#)
        }
        return lines
    }

    func writeLines(_ lines: [String], _ name: String) throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent(name)
        try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    // MARK: - predict

    func parseJSONLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map {
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], String($0))
        }
    }

    func testPredictGivesOneLinePerSlidingWindowWithTheRuntimesProbabilities() throws {
        let lines = nativeDataset(count: 3, frames: 10)
        let data = try writeLines(lines, "clips.jsonl")
        let r = run(["predict", Self.golden, data])
        XCTAssertEqual(r.code, 0, r.err)
        let rows = try parseJSONLines(r.out)
        // 10 frames, windows of 6, default stride 6 / 3 = 2: starts 0, 2, 4 per sequence.
        XCTAssertEqual(rows.count, 9)
        XCTAssertEqual(rows.map { $0["start"] as? Int }, [0, 2, 4, 0, 2, 4, 0, 2, 4])
        XCTAssertEqual(rows.map { $0["end"] as? Int }, [6, 8, 10, 6, 8, 10, 6, 8, 10])
        XCTAssertEqual(rows.map { $0["sequence"] as? String }, ["s0", "s0", "s0", "s1", "s1", "s1", "s2", "s2", "s2"])
        XCTAssertEqual(r.err, "predict: 9 windows from 3 sequences; \(rows.filter { $0["label"] as? String == $0["truth"] as? String }.count) of 9 labeled windows agree with their sequence's label (\(String(format: "%.3f", Double(rows.filter { $0["label"] as? String == $0["truth"] as? String }.count) / 9)))\n")
        // The same numbers as the runtime's own sliding-window API.
        let model = try ActionModel(contentsOf: Self.golden)
        let dataset = try DatasetLoader.load(data)
        var expected: [WindowPrediction] = []
        for s in dataset.sequences { expected += try model.predict(sequence: s, stride: 2, sourceFrameRate: 30) }
        for (row, e) in zip(rows, expected) {
            let p = try XCTUnwrap(row["probabilities"] as? [String: Double])
            XCTAssertEqual(Set(p.keys), Set(model.classes))
            assertClose(model.classes.map { Float(p[$0]!) }, e.probabilities, absolute: 1e-6, relative: 1e-6)
            XCTAssertEqual(row["label"] as? String, model.classes[e.classIndex])
            assertClose(p.values.reduce(0, +), 1, absolute: 1e-5)
        }
        XCTAssertTrue(r.out.hasPrefix(#"{"sequence": "s0", "window": 0, "start": 0, "end": 6, "label": "#), r.out)
    }

    func testPredictReadsNativeLinesFromStdinAndStreamsThem() throws {
        let lines = nativeDataset(count: 3, frames: 10)
        let fromFile = run(["predict", Self.golden, try writeLines(lines, "clips.jsonl"), "--stride", "3"])
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        var seenBeforeEnd: [Int] = []
        let options = try XCTUnwrap(try ArgumentParser.parse([Self.golden, "-", "--stride", "3"], for: PredictCommand.spec))
        try PredictCommand.run(options, out: &output, stdin: .lines(lines) { _ in seenBeforeEnd.append(stdout.split(separator: "\n").count) })
        XCTAssertEqual(stdout, fromFile.out)
        XCTAssertEqual(stderr, fromFile.err)
        // Windows of 10 frames at stride 3: starts 0, 3, 4. Each sequence is printed before the next line is read.
        XCTAssertEqual(seenBeforeEnd, [0, 0, 3, 6, 9])
    }

    func testPredictStdinErrorsNameTheLine() throws {
        var lines = nativeDataset(count: 3, frames: 8)
        lines[2] = #"{"id": "bad", "frames": [{"pose": {"elbow": [1, 2]}}]}"#
        var output = Output(write: { _ in }, note: { _ in }, isTerminal: false)
        let options = try XCTUnwrap(try ArgumentParser.parse([Self.golden, "-"], for: PredictCommand.spec))
        assertThrows(["<stdin>:3:", "joint 'elbow' is not in skeleton 'golden-4'"]) {
            try PredictCommand.run(options, out: &output, stdin: .lines(lines))
        }
    }

    /// `--unknown-below P`: a window whose top probability is below P is answered "unknown"
    /// (`"decision": null`, the table's `unknown (label)`), the others keep their label; the
    /// summary counts them; P outside (0, 1] and P with events or streams are usage errors.
    func testPredictAnswersUnknownBelowAProbability() throws {
        let data = try writeLines(nativeDataset(count: 3, frames: 10), "clips.jsonl")
        let plain = try parseJSONLines(run(["predict", Self.golden, data]).out)
        let top = plain.map { ($0["probability"] as? Double)! }
        let threshold = top.sorted()[top.count / 2]  // about half the windows below it
        let r = run(["predict", Self.golden, data, "--unknown-below", "\(threshold)"])
        XCTAssertEqual(r.code, 0, r.err)
        let rows = try parseJSONLines(r.out)
        XCTAssertEqual(rows.count, plain.count)
        var unknown = 0, decided = 0, agree = 0
        for (i, row) in rows.enumerated() {
            XCTAssertEqual(row["label"] as? String, plain[i]["label"] as? String, "the label is the most probable class either way")
            if Float(top[i]) < Float(threshold) {
                XCTAssertTrue(row["decision"] is NSNull, "\(row)")
                unknown += 1
            } else {
                XCTAssertEqual(row["decision"] as? String, row["label"] as? String)
                decided += 1
                if row["label"] as? String == row["truth"] as? String { agree += 1 }
            }
        }
        XCTAssertGreaterThan(unknown, 0)
        XCTAssertGreaterThan(decided, 0)
        XCTAssertTrue(
            r.err.contains(
                "; \(unknown) unknown (most probable class below \(String(format: "%g", Float(threshold))))"
                    + ", \(agree) of the \(decided) labeled windows decided agree"), r.err)
        XCTAssertNil(plain.first?["decision"], "no decision key without the flag")
        let table = run(["predict", Self.golden, data, "--unknown-below", "1", "--format", "table"])
        XCTAssertEqual(table.code, 0, table.err)
        XCTAssertEqual(table.out.components(separatedBy: " unknown (").count - 1, rows.count, "every window is below 1")
        for (flags, message) in [
            (["--unknown-below", "0"], "--unknown-below must be a probability in (0, 1], got 0.0"),
            (["--unknown-below", "1.5"], "--unknown-below must be a probability in (0, 1], got 1.5"),
            (["--unknown-below", "0.5", "--events"], "--unknown-below decides the windows of a file; events and streams have their own thresholds (--enter, --exit): leave it out"),
        ] {
            let bad = run(["predict", Self.golden, data] + flags)
            XCTAssertEqual(bad.code, 2, "\(flags)")
            XCTAssertTrue(bad.err.contains(message), bad.err)
        }
    }

    func testPredictTableAndSplit() throws {
        let data = try writeLines(nativeDataset(count: 4, frames: 6), "clips.jsonl")
        let r = run(["predict", Self.golden, data, "--format", "table", "--split", "test"])
        XCTAssertEqual(r.code, 0, r.err)
        let rows = r.out.split(separator: "\n")
        XCTAssertEqual(rows.count, 3)  // header + s2 + s3, one window each
        XCTAssertTrue(rows[0].hasPrefix("sequence"))
        XCTAssertTrue(rows[1].hasPrefix("s2 "))
        XCTAssertTrue(rows[2].hasPrefix("s3 "))
        XCTAssertTrue(rows[2].hasSuffix(" clap"), String(rows[2]))
        // Events count the sequences of the split they ran, not the file's.
        let events = run(["predict", Self.golden, data, "--events", "--split", "test"])
        XCTAssertEqual(events.code, 0, events.err)
        XCTAssertTrue(events.err.hasSuffix(" events from 2 sequences\n"), events.err)
        // A split the data does not have is an error, as in eval (issue 37), with or without --events.
        for extra in [[], ["--events"]] {
            let none = run(["predict", Self.golden, data, "--split", "nosuch"] + extra)
            XCTAssertEqual(none.code, 1, none.err)
            XCTAssertEqual(none.err, "error: \(data): no sequences in split 'nosuch'; splits present: [\"test\", \"train\"]\n")
            XCTAssertEqual(none.out, "")
        }
    }

    func testPredictRejectsAnotherSkeletonAndBadOptions() throws {
        let other = #"{"bones":[],"centre":[],"dimensions":2,"joints":["a","b"],"mirrorPairs":[],"name":"two","torsoLower":[],"torsoUpper":[],"units":"pixels"}"#
        var lines = nativeDataset(count: 1, frames: 6, skeleton: other)
        lines[1] = #"{"id": "x", "label": "wave", "frames": [{"pose": {"a": [1, 2]}}]}"#
        let data = try writeLines(lines, "other.jsonl")
        let r = run(["predict", Self.golden, data])
        XCTAssertEqual(r.code, 1)
        XCTAssertEqual(
            r.err,
            "error: \(data): joint 0 is 'a' in the data's skeleton 'two' (2 joints, 2D) but 'head' in the model's 'golden-4' (4 joints, 2D)\n")
        XCTAssertEqual(run(["predict", Self.golden, data, "--format", "xml"]).code, 2)
        XCTAssertEqual(run(["predict", Self.golden, data, "--stride", "0"]).code, 2)
        let missing = run(["predict", "/nonexistent/model.atm", data])
        XCTAssertEqual(missing.code, 1)
        XCTAssertEqual(missing.err, "error: /nonexistent/model.atm: cannot open the model file: no such file; check the path\n")
    }

    /// The golden model's joints in another order: the error names the first joint that
    /// differs (before, it showed the same skeleton description twice).
    func testPredictAndEvalNameTheFirstJointThatDiffers() throws {
        let reordered = #"{"bones":[["neck","head"],["root","neck"],["neck","hand"]],"centre":["root"],"dimensions":2,"joints":["head","root","neck","hand"],"mirrorPairs":[],"name":"golden-4","torsoLower":["root"],"torsoUpper":["neck"],"units":"pixels"}"#
        let data = try writeLines(nativeDataset(count: 2, frames: 6, skeleton: reordered), "reordered.jsonl")
        let message =
            "joint 1 is 'root' in the data's skeleton 'golden-4' (4 joints, 2D) but 'neck' in the model's 'golden-4' (4 joints, 2D); "
            + "the model has 'root' at index 2: put the data's joints in the model's order"
        for command in ["predict", "eval"] {
            let r = run([command, Self.golden, data])
            XCTAssertEqual(r.code, 1, command)
            XCTAssertEqual(r.err, "error: \(data): \(message)\n", command)
        }
    }

    /// Labels the model does not know: predict still predicts (exit 0) but warns once per label,
    /// naming them (before, it said nothing).
    func testPredictWarnsAboutLabelsTheModelDoesNotKnow() throws {
        var lines = nativeDataset(count: 4, frames: 6)
        lines[0] = lines[0].replacingOccurrences(of: #"["wave", "clap", "squat"]"#, with: #"["wave", "clap", "squat", "jump", "kick"]"#)
        lines[2] = lines[2].replacingOccurrences(of: #""label": "clap""#, with: #""label": "jump""#)
        lines[3] = lines[3].replacingOccurrences(of: #""label": "wave""#, with: #""label": "kick""#)
        lines[4] = lines[4].replacingOccurrences(of: #""label": "clap""#, with: #""label": "jump""#)
        let data = try writeLines(lines, "unknown.jsonl")
        let warning =
            "warning: \(data): labels 'jump' (2 sequences), 'kick' (1 sequence) are not among the model's classes "
            + "(wave, clap, squat): the model cannot predict them, so those windows never agree with their label\n"
        let r = run(["predict", Self.golden, data])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.err.hasPrefix(warning), r.err)
        XCTAssertEqual(r.out.split(separator: "\n").count, 4)
        // Only the split predicted counts; from stdin, each new label is named once, when it arrives.
        let train = run(["predict", Self.golden, data, "--split", "train"])  // s0 wave, s1 jump
        XCTAssertTrue(train.err.hasPrefix("warning: \(data): label 'jump' (1 sequence) is not among the model's classes"), train.err)
        var stderr = ""
        var output = Output(write: { _ in }, note: { stderr += $0 }, isTerminal: false)
        let options = try XCTUnwrap(try ArgumentParser.parse([Self.golden, "-"], for: PredictCommand.spec))
        try PredictCommand.run(options, out: &output, stdin: .lines(lines))
        XCTAssertEqual(stderr.components(separatedBy: "warning: <stdin>: label 'jump' (1 sequence) is not among").count, 2, stderr)
        XCTAssertEqual(stderr.components(separatedBy: "warning: <stdin>: label 'kick' (1 sequence) is not among").count, 2, stderr)
        let known = run(["predict", Self.golden, try writeLines(nativeDataset(count: 2, frames: 6), "known.jsonl")])
        XCTAssertFalse(known.err.contains("warning"), known.err)
    }

    // MARK: - export

    func testExportWritesOnnxAndReportsParity() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("golden.onnx").path
        let r = run(["export", Self.golden, "--format", "onnx", "--out", out, "--parity-windows", "8"])
        XCTAssertEqual(r.code, 0, r.err)
        let lines = r.out.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("export: wrote \(out) ("), lines[0])
        XCTAssertTrue(lines[0].hasSuffix("ONNX opset 17, input [batch, 6, 47], 3 classes)"), lines[0])
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: out)[.size] as? Int)
        XCTAssertTrue(lines[0].contains("(\(size) bytes"))
        XCTAssertEqual(lines.count, 2)
        if lines[1].hasPrefix("parity: not checked") {
            XCTAssertFalse(prerequisitesRequired, "onnxruntime is required under CI: \(lines[1])")
            XCTAssertTrue(lines[1].contains("pip install numpy onnxruntime"))
        } else {
            // "parity: max |logit difference| vs the Swift runtime over 8 random windows: 3.1e-07 (tolerance ...; onnxruntime 1.x)"
            XCTAssertTrue(lines[1].hasPrefix("parity: max |logit difference| vs the Swift runtime over 8 random windows: "), lines[1])
            let figure = lines[1].split(separator: ":")[2].split(separator: " ")[0]
            XCTAssertLessThan(try XCTUnwrap(Double(figure)), 1e-4)
        }
        // Not overwritten without --force.
        let again = run(["export", Self.golden, "--out", out, "--parity-windows", "0"])
        XCTAssertEqual(again.code, 1)
        XCTAssertEqual(again.err, "error: \(out) exists; pass --force to overwrite it or choose another --out\n")
        XCTAssertEqual(run(["export", Self.golden, "--out", out, "--parity-windows", "0", "--force"]).code, 0)
        // Issue 26 item 9: a missing folder is named, not the temporary file in it.
        let missing = dir.appendingPathComponent("missing").path
        let noFolder = run(["export", Self.golden, "--out", "\(missing)/m.onnx", "--parity-windows", "0"])
        XCTAssertEqual(noFolder.code, 1)
        XCTAssertEqual(noFolder.err, "error: \(missing)/m.onnx: cannot write: the folder \(missing) does not exist; create it first\n")
        // ... before the parity check (which would first find its data file missing).
        let early = run(["export", Self.golden, "--out", "\(missing)/n.onnx", "--data", "\(missing)/windows.jsonl"])
        XCTAssertEqual(early.code, 1)
        XCTAssertEqual(early.err, "error: \(missing)/n.onnx: cannot write: the folder \(missing) does not exist; create it first\n")
        let bad = run(["export", Self.golden, "--format", "tflite"])
        XCTAssertEqual(bad.code, 2)
        XCTAssertEqual(bad.err, "error: --format must be onnx or coreml, got 'tflite'\n")
    }

    // MARK: - inspect

    /// The version printed is the file's own: the 1.7 golden fixture says 1.7, the 1.8 one 1.8.
    func testInspectPrintsTheFilesOwnVersion() throws {
        let old = Self.golden.replacingOccurrences(of: "model.atm", with: "model-1.7.atm")
        for (path, version) in [(old, "1.7"), (Self.golden, "1.8")] {
            var text = ""
            var out = Output(write: { text += $0 }, note: { _ in }, isTerminal: false)
            try InspectModel.run(path: path, json: false, out: &out)
            XCTAssertTrue(text.hasPrefix("\(path): actiontrain model file \(version), "), String(text.prefix(200)))
        }
    }

    func testInspectPrintsTheHeaderInHumanForm() throws {
        var text = ""
        var out = Output(write: { text += $0 }, note: { _ in }, isTerminal: false)
        try InspectModel.run(path: Self.golden, json: false, out: &out)
        for fragment in [
            "\(Self.golden): actiontrain model file 1.8,",
            "classes (3), in logit order:\n  0  wave\n  1  clap\n  2  squat\n",
            "probabilities: not calibrated (no calibration recorded: a file before format 1.6, or fitted with calibration none)",
            "skeleton     golden-4: 4 joints, 2D, image pixels, origin top-left, y down; sides anatomical",
            "joints       0 head, 1 neck, 2 root, 3 hand",
            "window       6 frames, sliding windows, padded with empty poses; resampled to 30 fps first",
            "steps        1. fill each joint's gaps in the window: linear in time between its seen frames, the nearest seen value before "
                + "the first and after the last (mask and confidence still say not seen)",
            "2. centre on the mean of root per frame",
            "3. divide by the median torso length (neck to root)",
            "4. divide the axes by 2, 0.5",
            "channels     47 per frame: coordinates 0..<8, confidence 8..<12, mask 12..<16, motion 16..<24, bones 24..<30, "
                + "relativePositions 30..<36, distances 36..<39, fastMotion 39..<47",
            "pairs        3 joint pairs (b − a): head-hand, hand-root, neck-head",
            "network input [6, 47] per window",
            "conv1d 47 -> 8, kernel 3, stride 1, dilation 1, padding 1",
            "residual [residual [residual [globalAveragePool] + [globalMaxPool]] + [fourierPyramid 1,3, 2 frequencies, standardize 48 channels, "
                + "linear 48 -> 6]] + [temporalPyramidPool 1,2, linear 18 -> 6]",
            "layers.9.weight", "[outputs, kernel, inputs]",
            // standardize's statistics, the first tensors since format 1.8; not parameters (layer 7 has 408).
            "layers.7.body.0.shortcut.1.mean   [48]            [channels]                  offset 0 (layer data, docs/format.md 3.2)",
            "  7   [1, 6]               408  residual",
            "tool         actiontrain golden", "seed         2026", "metric       validationAccuracy  0.75",
            "note         purpose             golden test model",
        ] {
            XCTAssertTrue(text.contains(fragment), "missing '\(fragment)' in:\n\(text)")
        }
        // The layer table: index, description, output shape, parameter count.
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("  0   ") || $0.hasPrefix("  9   ") }
        XCTAssertEqual(
            rows,
            [
                "  0   [6, 8]             1,136  conv1d 47 -> 8, kernel 3, stride 1, dilation 1, padding 1",  // 8·3·47 + 8
                "  9   [1, 3]                21  linear 6 -> 3",
            ])
    }

    func testModelFilesAreRecognisedByTheirMagic() throws {
        XCTAssertTrue(InspectModel.isModelFile(path: Self.golden))
        let data = try writeLines(nativeDataset(count: 1, frames: 2), "clips.jsonl")
        XCTAssertFalse(InspectModel.isModelFile(path: data))
        XCTAssertFalse(InspectModel.isModelFile(path: "/nonexistent"))
        // A damaged model file is still a model file: inspect says what is wrong with it.
        let damaged = try writeLines([], "damaged.atm")
        try Data([0x89, 0x41, 0x54, 0x4D, 0x0A, 0x1A, 0x0A]).write(to: URL(fileURLWithPath: damaged))  // \r\n became \n
        XCTAssertTrue(InspectModel.isModelFile(path: damaged))
        var out = Output(write: { _ in }, note: { _ in }, isTerminal: false)
        assertThrows([damaged, "text-mode transfer"]) { try InspectModel.run(path: damaged, json: false, out: &out) }
    }

    func testInspectJSONIsTheHeader() throws {
        var text = ""
        var out = Output(write: { text += $0 }, note: { _ in }, isTerminal: false)
        try InspectModel.run(path: Self.golden, json: true, out: &out)
        let header = try JSONDecoder().decode(ModelHeader.self, from: Data(text.utf8))
        XCTAssertEqual(header, try ModelFile.load(contentsOf: Self.golden).header)
        assertThrows(["/nonexistent.atm", "no such file"]) { try InspectModel.run(path: "/nonexistent.atm", json: false, out: &out) }
    }

    // MARK: - fit

    func testIdenticalFitRunsWriteByteIdenticalModelFiles() throws {
        // (Without 'squat', which no sequence has: fit refuses a class it cannot learn.)
        var lines = nativeDataset(count: 12, frames: 8)
        lines[0] = lines[0].replacingOccurrences(of: #", "squat""#, with: "")
        let data = try writeLines(lines, "train.jsonl")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var files: [Data] = []
        for run in ["a", "b"] {
            let r = self.run([
                "fit", data, "--out", dir.appendingPathComponent(run).path, "--window-frames", "4", "--hidden", "6", "--epochs", "2",
                "--threads", "1",
            ])
            XCTAssertEqual(r.code, 0, r.err)
            files.append(try Data(contentsOf: dir.appendingPathComponent("\(run)/model.atm")))
        }
        XCTAssertEqual(files[0], files[1])
        let header = try files[0].withUnsafeBytes { try ModelFile.decode($0).header }
        XCTAssertEqual(header.trainingFrameRate, 30)
        XCTAssertNil(header.provenance.metrics["trainingSeconds"])
        XCTAssertNotNil(header.provenance.datasetHash)
    }
}
