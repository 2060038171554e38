import ActionRuntime
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// `predict --stream` (frames on stdin, several people) and `predict --events`.
final class StreamCLITests: XCTestCase {
    static let golden = ModelCommandsTests.golden
    let joints = ["head", "neck", "root", "hand"]

    /// Frame `f` of person `p`: a pose on the golden skeleton (the hand absent now and then).
    func pose(_ p: Int, _ f: Int) -> [String: PosePoint] {
        var points: [String: PosePoint] = [:]
        for (j, name) in joints.enumerated() where !(name == "hand" && (f + p) % 5 == 0) {
            let phase = Float(f) * 0.3 + Float(p)
            points[name] = PosePoint(x: 100 + 10 * Float(j) + 15 * sinf(phase * Float(j + 1)), y: 50 + 40 * Float(j) + 5 * cosf(phase), confidence: 0.9)
        }
        return points
    }

    /// The time of frame `f` (about 30 fps, jittered).
    func time(_ f: Int) -> Double { Double(f) / 30 + (f % 3 == 1 ? 0.004 : 0) }

    func line(_ p: Int, _ f: Int) -> String {
        let points = pose(p, f).map { "\"\($0.key)\": [\($0.value.x), \($0.value.y), \($0.value.confidence!)]" }
        return "{\"t\": \(time(f)), \"person\": \(p), \"pose\": {\(points.joined(separator: ", "))}}"
    }

    func runPredict(_ args: [String], stdin lines: [String]) throws -> (out: String, err: String, seen: [Int]) {
        var remaining = lines[...], stdout = "", stderr = "", seen: [Int] = []
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        guard let options = try ArgumentParser.parse(args, for: PredictCommand.spec) else { throw CLIError.usage("help") }
        try PredictCommand.run(
            options, out: &output,
            stdin: {
                seen.append(stdout.split(separator: "\n").count)
                return remaining.popFirst()
            })
        return (stdout, stderr, seen)
    }

    func rows(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testStreamWritesEachPersonsWindowsAsTheyComeEqualToOfflinePredict() throws {
        let frames = 30
        var lines: [String] = []
        for f in 0..<frames { lines += [line(1, f), line(4, f)] }
        let r = try runPredict([Self.golden, "-", "--stream", "--stride", "2"], stdin: lines)
        let out = try rows(r.out)
        XCTAssertGreaterThan(r.seen[20], 0, "windows are written before the input ends")
        let model = try ActionModel(contentsOf: Self.golden)
        for person in [1, 4] {
            let mine = out.filter { $0["person"] as? Int == person && $0["type"] as? String == "window" }
            let sequence = try PoseSequence(
                id: "p", label: nil, poses: (0..<frames).map { Pose(points: pose(person, $0), time: time($0)) }, skeleton: model.input.skeleton)
            let offline = try model.predict(sequence: sequence, stride: 2, sourceFrameRate: nil)
            XCTAssertEqual(mine.count, offline.count, "person \(person)")
            for (row, w) in zip(mine, offline) {
                XCTAssertEqual(try XCTUnwrap(row["start"] as? Double), time(0) + Double(w.start) / 30, accuracy: 0.0005)
                let p = try XCTUnwrap(row["probabilities"] as? [String: Double])
                assertClose(model.classes.map { Float(p[$0]!) }, w.probabilities, absolute: 1e-6, relative: 1e-6)
                XCTAssertEqual(row["label"] as? String, model.classes[w.classIndex])
            }
        }
        XCTAssertTrue(r.err.hasPrefix("predict: 60 frames from 60 lines, \(out.count) windows, 0 events\n"), r.err)
    }

    func testEventsOnAFileAreTheEventsOfTheStream() throws {
        let frames = 40
        let lines = (0..<frames).map { line(0, $0) }
        let events = ["--events", "--smoothing", "1", "--enter", "0.34", "--exit", "0.2"]
        let streamed = try runPredict([Self.golden, "-", "--stream"] + events, stdin: lines)
        let fromStream = try rows(streamed.out)
        XCTAssertFalse(fromStream.isEmpty)
        XCTAssertTrue(fromStream.allSatisfy { $0["type"] as? String == "event" })
        // The same frames as one sequence of a native file.
        let frameJSON = (0..<frames).map { f in
            "{\"t\": \(time(f)), \"pose\": {" + pose(0, f).map { "\"\($0.key)\": [\($0.value.x), \($0.value.y), 0.9]" }.joined(separator: ", ") + "}}"
        }
        let skeleton = #"{"bones":[["neck","head"],["root","neck"],["neck","hand"]],"centre":["root"],"dimensions":2,"joints":["head","neck","root","hand"],"mirrorPairs":[],"name":"golden-4","torsoLower":["root"],"torsoUpper":["neck"],"units":"pixels"}"#
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rec.jsonl").path
        try ([#"{"actiontrain": "poses", "version": 1, "skeleton": \#(skeleton)}"#, #"{"id": "clip", "frames": [\#(frameJSON.joined(separator: ", "))]}"#],).joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let r = try runPredict([Self.golden, file] + events, stdin: [])
        let fromFile = try rows(r.out)
        XCTAssertEqual(fromFile.count, fromStream.count)
        for (a, b) in zip(fromFile, fromStream) {
            XCTAssertEqual(a["sequence"] as? String, "clip")
            for key in ["label", "windows"] { XCTAssertEqual("\(a[key]!)", "\(b[key]!)") }
            for key in ["start", "end", "peak", "mean"] {
                XCTAssertEqual(try XCTUnwrap(a[key] as? Double), try XCTUnwrap(b[key] as? Double), accuracy: 1e-6, key)
            }
            XCTAssertLessThanOrEqual(try XCTUnwrap(a["mean"] as? Double), try XCTUnwrap(a["peak"] as? Double))
        }
        let table = try runPredict([Self.golden, file, "--format", "table"] + events, stdin: [])
        XCTAssertTrue(table.out.hasPrefix("who"), table.out)
        XCTAssertEqual(table.out.split(separator: "\n").count, fromFile.count + 1)
    }

    func testStreamErrorsNameTheLineAndOptionsAreChecked() throws {
        assertThrows(["<stdin>:2:", "no time \"t\""]) { _ = try self.runPredict([Self.golden, "-", "--stream"], stdin: [self.line(0, 0), "{\"pose\": {}}"]) }
        assertThrows(["<stdin>:3:", "joint 'hand' must be [x, y] or [x, y, confidence]"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream"], stdin: [self.line(0, 0), "", "{\"t\": 1, \"pose\": {\"hand\": [1]}}"])
        }
        assertThrows(["<stdin>:2:", "track 1 is one more than the 1 tracks"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--max-tracks", "1"], stdin: [self.line(0, 0), self.line(1, 0)])
        }
        assertThrows(["<stdin>:2:", "rejected frame 1", "unknown joint name tail"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--strict"], stdin: [self.line(0, 0), "{\"t\": 0.1, \"pose\": {\"tail\": [1, 2]}}"])
        }
        let warned = try runPredict([Self.golden, "-", "--stream"], stdin: [line(0, 0), "{\"t\": 0.1, \"pose\": {\"tail\": [1, 2]}}"])
        XCTAssertTrue(warned.err.contains("warning: <stdin>:2: person 0: frame 1 (t = 0.1 s): unknown joint name tail"), warned.err)
        XCTAssertTrue(warned.err.contains("warning: 1 x unknownJoint"), warned.err)
        assertThrows(["--events reads a file, or frames from stdin with --stream"]) { _ = try self.runPredict([Self.golden, "-", "--events"], stdin: []) }
        assertThrows(["--stream reads frames from stdin"]) { _ = try self.runPredict([Self.golden, "x.jsonl", "--stream"], stdin: []) }
        assertThrows(["background class 'other' is not among the model's classes"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--background", "other"], stdin: [])
        }
        assertThrows(["exit <= enter"]) { _ = try self.runPredict([Self.golden, "-", "--stream", "--enter", "0.3", "--exit", "0.5"], stdin: []) }
        var help = ""
        var output = Output(write: { help += $0 }, note: { _ in }, isTerminal: false)
        XCTAssertEqual(ActionTrainCLI.run(["predict", "--help"], out: &output), 0)
        XCTAssertTrue(help.contains("pose-estimator | actiontrain predict model.atm - --stream --events"), help)
    }

    func testExportWithRawPosesChecksItsParityOnRawWindows() throws {
        guard ONNXParity.isAvailable() else { throw XCTSkip("python3 with numpy and onnxruntime is not available") }
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        var out = "", err = ""
        var output = Output(write: { out += $0 }, note: { err += $0 }, isTerminal: false)
        let path = dir.appendingPathComponent("raw.onnx").path
        XCTAssertEqual(ActionTrainCLI.run(["export", Self.golden, "--raw-poses", "--out", path, "--parity-windows", "8"], out: &output), 0, err)
        XCTAssertTrue(out.contains("poses [batch, 6, 4, 3] with the preprocessing, 3 classes"), out)
        XCTAssertTrue(out.contains("over 8 random raw windows"), out)
    }
}
