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
    /// A native file's header line for the golden model's skeleton.
    static let header =
        #"{"actiontrain": "poses", "version": 1, "skeleton": {"bones":[["neck","head"],["root","neck"],["neck","hand"]],"centre":["root"],"dimensions":2,"joints":["head","neck","root","hand"],"mirrorPairs":[],"name":"golden-4","torsoLower":["root"],"torsoUpper":["neck"],"units":"pixels"}}"#

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

    /// Runs predict in process with `lines` on stdin; `seen[k]` is how many lines stdout held
    /// before the k-th read of stdin (one line per read).
    func runPredict(_ args: [String], stdin lines: [String], unterminated: Bool = false, onRead: @escaping (Int) -> Void = { _ in }) throws -> (
        out: String, err: String, seen: [Int]
    ) {
        var stdout = "", stderr = "", seen: [Int] = []
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        guard let options = try ArgumentParser.parse(args, for: PredictCommand.spec) else { throw CLIError.usage("help") }
        let input = StandardInput.lines(lines, unterminated: unterminated) { k in
            seen.append(stdout.split(separator: "\n").count)
            onRead(k)
        }
        try PredictCommand.run(options, out: &output, stdin: input)
        return (stdout, stderr, seen)
    }

    /// As `runPredict`, for a run that must fail: what it wrote, and the error.
    func runFailing(_ args: [String], stdin lines: [String], onRead: @escaping (Int) -> Void = { _ in }) throws -> (out: String, err: String, error: CLIError) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        guard let options = try ArgumentParser.parse(args, for: PredictCommand.spec) else { throw CLIError.usage("help") }
        do {
            try PredictCommand.run(options, out: &output, stdin: .lines(lines, onRead: onRead))
        } catch let e as CLIError {
            return (stdout, stderr, e)
        }
        XCTFail("predict \(args) succeeded")
        return (stdout, stderr, .failure(""))
    }

    func rows(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testStreamWritesEachPersonsWindowsAsTheyComeEqualToOfflinePredict() throws {
        try assertStreamIsOfflinePredict(Self.golden)
    }

    /// Streams persons 1 and 4 (30 frames each, interleaved) through `model` and checks that
    /// each person's windows are written as they come, with offline predict's probabilities.
    func assertStreamIsOfflinePredict(_ path: String, file: StaticString = #filePath, line testLine: UInt = #line) throws {
        let frames = 30
        var lines: [String] = []
        for f in 0..<frames { lines += [line(1, f), line(4, f)] }
        let r = try runPredict([path, "-", "--stream", "--stride", "2"], stdin: lines)
        let out = try rows(r.out)
        XCTAssertGreaterThan(r.seen[40], 0, "windows are written before the input ends", file: file, line: testLine)
        let model = try ActionModel(contentsOf: path)
        for person in [1, 4] {
            let mine = out.filter { $0["person"] as? Int == person && $0["type"] as? String == "window" }
            let sequence = try PoseSequence(
                id: "p", label: nil, poses: (0..<frames).map { Pose(points: pose(person, $0), time: time($0)) }, skeleton: model.input.skeleton)
            let offline = try model.predict(sequence: sequence, stride: 2, sourceFrameRate: nil)
            XCTAssertEqual(mine.count, offline.count, "person \(person)", file: file, line: testLine)
            XCTAssertGreaterThan(mine.count, 0, file: file, line: testLine)
            for (row, w) in zip(mine, offline) {
                XCTAssertEqual(try XCTUnwrap(row["start"] as? Double), time(0) + Double(w.start) / 30, accuracy: 0.0005, file: file, line: testLine)
                let p = try XCTUnwrap(row["probabilities"] as? [String: Double])
                assertClose(model.classes.map { Float(p[$0]!) }, w.probabilities, absolute: 1e-6, relative: 1e-6, file: file, line: testLine)
                XCTAssertEqual(row["label"] as? String, model.classes[w.classIndex], file: file, line: testLine)
            }
        }
        let windows = out.filter { $0["type"] as? String == "window" }.count
        XCTAssertTrue(r.err.hasPrefix("predict: 60 frames from 60 lines, \(windows) windows, \(out.count - windows) events\n"), r.err, file: file, line: testLine)
    }

    /// A model `fit` writes with mixed members (a TCN over coordinates and mask, an FTP over the
    /// relative positions of every joint pair) and filled gaps, trained on poses whose hand is
    /// often absent: its live stream gives offline predict's probabilities, and its raw-poses
    /// ONNX export (onnxruntime) and Core ML export (coreml_eval.py) pass their parity checks.
    func testAFittedMixedModelWithFilledGapsStreamsAndExports() throws {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        var data = [String(Self.header.dropLast()) + #", "frameRate": 30}"#]
        for i in 0..<12 {
            let frames = (0..<30).map { f in
                let points = pose(i % 2 == 0 ? 0 : 3, f + i).map { "\"\($0.key)\": [\($0.value.x), \($0.value.y), \($0.value.confidence!)]" }
                return "{\"pose\": {\(points.joined(separator: ", "))}}"
            }
            data.append(#"{"id": "s\#(i)", "label": "\#(i % 2 == 0 ? "turn" : "sway")", "frames": [\#(frames.joined(separator: ", "))]}"#)
        }
        let dataPath = dir.appendingPathComponent("gaps.jsonl").path
        try (data.joined(separator: "\n") + "\n").write(toFile: dataPath, atomically: true, encoding: .utf8)
        func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
            var out = "", err = ""
            var output = Output(write: { out += $0 }, note: { err += $0 }, isTerminal: false)
            return (ActionTrainCLI.run(args, out: &output), out, err)
        }
        let fit = run([
            "fit", dataPath, "--recipe", "none", "--members", "tcn:coordinates+mask,ftp:relativePositions", "--fill-gaps", "true", "--widths", "4",
            "--kernel", "3", "--window-frames", "10", "--frame-rate", "30", "--epochs", "2", "--batch-size", "4", "--seed", "3", "--threads", "1", "--out",
            dir.appendingPathComponent("run").path,
        ])
        XCTAssertEqual(fit.code, 0, fit.err)
        let model = dir.appendingPathComponent("run/model.atm").path
        let loaded = try ActionModel(contentsOf: model)
        XCTAssertEqual(loaded.input.steps.first, .fillGaps)
        XCTAssertEqual(loaded.input.channels, [.coordinates, .mask, .relativePositions])
        // The training windows' poses (format 1.4): the hand, absent in a fifth of the frames,
        // every point at confidence 0.9, the centre between the joints' x (100 to 130).
        let stats = try XCTUnwrap(loaded.header.poseStatistics)
        XCTAssertEqual(stats.present[0...2], [1, 1, 1])
        XCTAssertEqual(stats.present[3], 0.8, accuracy: 0.05)
        for c in stats.confidence { XCTAssertEqual(c, 0.9, accuracy: 1e-3) }
        XCTAssertTrue((100...130).contains(stats.centreMean[0]), "\(stats.centreMean)")
        XCTAssertEqual(stats.offsetMean.count, 8)
        XCTAssertGreaterThan(stats.motion[3], stats.motion[1], "the hand moves more than the neck")
        try assertStreamIsOfflinePredict(model)
        if ONNXParity.isAvailable() {
            let onnx = run(["export", model, "--raw-poses", "--out", dir.appendingPathComponent("m.onnx").path, "--parity-windows", "16"])
            XCTAssertEqual(onnx.code, 0, onnx.out + onnx.err)
            XCTAssertTrue(onnx.out.contains("parity: max |logit difference| vs the Swift runtime over 16 windows made from the model's pose statistics: "), onnx.out)
        } else {
            throw missingPrerequisite("python3 with numpy and onnxruntime", fix: "pip install numpy onnxruntime")
        }
        if CoreMLParity.isAvailable() {
            let coreml = run(["export", model, "--format", "coreml", "--out", dir.appendingPathComponent("m.mlmodel").path, "--parity-windows", "16"])
            XCTAssertEqual(coreml.code, 0, coreml.out + coreml.err)
            XCTAssertTrue(coreml.out.contains("loads and validates it; max |logit difference| of tools/python/coreml_eval.py vs the Swift runtime over 16 windows made from the model's pose statistics: "), coreml.out)
        } else {
            throw missingPrerequisite("python3 with numpy and coremltools", fix: "pip install numpy coremltools")
        }
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
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rec.jsonl").path
        try (Self.header + "\n" + #"{"id": "clip", "frames": [\#(frameJSON.joined(separator: ", "))]}"#).write(toFile: file, atomically: true, encoding: .utf8)
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

    func testBadLinesAreCountedWarningsNamingTheLineAndTheStreamGoesOn() throws {
        // Two people; hostile lines between the good ones change nothing the good lines give:
        // bad JSON, a bare NaN as Python writes it, booleans as coordinates, a stray {"t": 1e12},
        // a coordinate at 1e30, a person too many, a line over the length limit, a frame far
        // behind the stream's clock, and the input closing in the middle of a last line.
        let frames = 40
        var clean: [String] = []
        for f in 0..<frames { clean += [line(0, f), line(1, f)] }
        let hostile: [(at: Int, line: String)] = [
            (10, #"{"t": 0.4, "pose": {"head": [1, 2]"#), (14, #"{"t": NaN, "person": 0, "pose": {}}"#),
            (20, #"{"t": 0.7, "person": 1, "pose": {"head": [true, false]}}"#), (30, #"{"t": 1e12, "person": 0, "pose": {}}"#),
            (34, #"{"t": 0.6, "person": 1, "pose": {"head": [1e30, 3], "neck": [100, 120]}}"#),
            (40, #"{"t": 0.7, "person": 2, "pose": {}}"#), (50, #"{"t": 0.8, "pose": {"x": ""# + String(repeating: "y", count: 1 << 20) + #""}}"#),
            (60, #"{"t": -5, "person": 0, "pose": {}}"#),
        ]
        var lines = clean
        for h in hostile.reversed() { lines.insert(h.line, at: h.at) }
        let args = [Self.golden, "-", "--stream", "--events", "--smoothing", "1", "--enter", "0.34", "--exit", "0.2", "--max-tracks", "2"]
        let good = try runPredict(args, stdin: clean)
        XCTAssertFalse(good.out.isEmpty)
        let r = try runPredict(args, stdin: lines)
        XCTAssertEqual(r.out, good.out, "the good lines' events, all of them")
        let windows = try runPredict(args.filter { $0 != "--events" }, stdin: lines)
        XCTAssertEqual(windows.out, try runPredict(args.filter { $0 != "--events" }, stdin: clean).out)
        // Line numbers of the hostile lines once inserted: 11, 16, 23, 34, 39, 46, 57, 68.
        for expected in [
            "warning: <stdin>:11: column 35: expected ',' or '}' in the pose; expected {\"t\": 1.033", "(line skipped)\n",
            "warning: <stdin>:16: person 0: frame 14 (t = nan s): timestamp nan after the stream's 0.2 s",
            "warning: <stdin>:34: person 0: frame 31 (t = 1000000000000.0 s): the timestamp jumps",
            "warning: <stdin>:39: person 1: frame 17 (t = 0.6 s): joint head at (1e+30, 3.0) is beyond ±1000000 (frame ignored)",
            "warning: 2 x badLine; first: <stdin>:11: column 35:", "warning: 1 x timeJump; first: frame 31",
            "warning: 2 x timeBackwards", "warning: 1 x outOfRange",
            "warning: 1 x tooManyTracks; first: <stdin>:46: track 2 is one more than the 2 tracks",
            "warning: 1 x longLine; first: <stdin>:57: the line is \(hostile[6].line.utf8.count) bytes, more than the 1048576 a frame may take",
            "predict: 84 frames from 88 lines, ",
        ] {
            XCTAssertTrue(r.err.contains(expected), "\(expected)\n\(r.err)")
        }
        // The input closing in the middle of a line: the line is a warning, every person is
        // finished and their events written (before: exit 1, no event).
        let cut = try runPredict(args, stdin: clean + [#"{"t": 9, "person": 0, "pose": {"hea"#], unterminated: true)
        XCTAssertEqual(cut.out, good.out)
        XCTAssertTrue(
            cut.err.contains("warning: <stdin>:81: column 36: expected a closing '\"' before the end of the line (the input ended in the middle of this line)"),
            cut.err)
    }

    func testStrictStopsAtTheFirstProblemAfterFinishingEveryPerson() throws {
        var lines: [String] = []
        for f in 0..<30 { lines += [line(0, f), line(3, f)] }
        let args = [Self.golden, "-", "--stream", "--smoothing", "1", "--enter", "0.34", "--exit", "0.2"]
        let before = try runPredict(args, stdin: Array(lines[..<40]))
        for (bad, message) in [
            (#"{"pose": {}}"#, "<stdin>:41: column 1: no time \"t\" in seconds"),
            (#"{"t": 1, "pose": {"hand": [1]}}"#, "<stdin>:41: column 27: joint 'hand' must be [x, y] or [x, y, confidence]"),
            (#"{"t": 0.7, "pose": {"tail": [1, 2]}}"#, "<stdin>:41: rejected frame 20 (t = 0.7 s): unknown joint name tail"),
            (#"{"t": 0.7, "person": 9, "pose": {}}"#, "<stdin>:41: track 9 is one more than the 2 tracks"),
        ] {
            var input = lines
            input.insert(bad, at: 40)
            let extra = bad.contains("person\": 9") ? ["--max-tracks", "2"] : []
            let r = try runFailing(args + ["--strict"] + extra, stdin: input)
            XCTAssertTrue(r.error.description.contains(message), "\(r.error)")
            XCTAssertEqual(r.error.exitCode, 1)
            XCTAssertEqual(r.out, before.out, "the windows of the 40 lines before it, every person finished")
            XCTAssertTrue(r.err.hasPrefix("predict: 4"), r.err)
            XCTAssertTrue(r.err.contains(" frames from 41 lines, "), r.err)
        }
        // Without --strict the same lines are warnings.
        let warned = try runPredict([Self.golden, "-", "--stream"], stdin: [line(0, 0), "{\"t\": 0.1, \"pose\": {\"tail\": [1, 2]}}"])
        XCTAssertTrue(warned.err.contains("warning: <stdin>:2: person 0: frame 1 (t = 0.1 s): unknown joint name tail"), warned.err)
        XCTAssertTrue(warned.err.contains("warning: 1 x unknownJoint"), warned.err)
    }

    func testASignalEndsTheStreamAfterFinishingEveryPerson() throws {
        // SIGTERM (or Ctrl-C's SIGINT) while reading: the lines read so far, every person's
        // last windows and events, then exit 130.
        var lines: [String] = []
        for f in 0..<30 { lines += [line(0, f), line(5, f)] }
        let args = [Self.golden, "-", "--stream", "--events", "--smoothing", "1", "--enter", "0.34", "--exit", "0.2"]
        // Issue 38 finding 8: SIGHUP ended the stream without its last events (exit 129), and
        // SIGQUIT printed "Program crashed" while the stream went on.
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] {
            let r = try runFailing(args, stdin: lines) { if $0 == 35 { raise(signal) } }
            guard case .interrupted(let message) = r.error else { return XCTFail("\(r.error)") }
            XCTAssertTrue(message.contains("stopped by a signal after line 36"), message)
            XCTAssertEqual(r.error.exitCode, 130)
            let expected = try runPredict(args, stdin: Array(lines[...35]))
            XCTAssertFalse(expected.out.isEmpty)
            XCTAssertEqual(r.out, expected.out)
        }
    }

    /// An ST-GCN-like model whose graph adjacency holds 3e38 (finite, so the file loads): every
    /// output overflows float32. Written to `path` (for the refusals of predict, export, inspect).
    static func writeOverflowingModel(to path: String) throws {
        let skeleton = try ActionModel(contentsOf: golden).input.skeleton
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 6), steps: [.centre(joints: ["root"], perFrame: false)], channels: [.coordinates])
        let J = 4, huge = (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 3e38 : 0) }
        let network = try Network(
            layers: [.graphConv(joints: J, inputs: 2, outputs: 4, kernel: 1, adjacency: [huge]), .relu, .globalAveragePool, .linear(inputs: J * 4, outputs: 3)],
            input: Shape(time: 6, channels: input.channelsPerFrame))
        network.initialize(seed: 3)
        try Data(try ModelFile.encode(classes: ["wave", "clap", "squat"], input: input, network: network, provenance: .init(seed: 3)))
            .write(to: URL(fileURLWithPath: path))
    }

    func testNonFiniteOutputsAreRefusedNamingTheModel() throws {
        // An ST-GCN-like model whose graph adjacency holds 3e38 (finite, so the file loads):
        // every output overflows. predict (batch, --stream, --events) refuses it as eval does,
        // before any output (the outputs on a plain pose are checked at load).
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("huge.atm").path
        try Self.writeOverflowingModel(to: path)
        let lines = (0..<20).map { line(0, $0) }
        for extra in [["--stream"], ["--stream", "--events"]] {
            let r = try runFailing([path, "-"] + extra, stdin: lines)
            XCTAssertTrue(r.error.description.hasPrefix("\(path): the network's output for class"), "\(r.error)")
            XCTAssertTrue(r.error.description.contains("not a finite number, on a plain pose: its weights overflow float32"), "\(r.error)")
            XCTAssertEqual(r.out, "")
        }
        let data = dir.appendingPathComponent("rec.jsonl").path
        let frameJSON = (0..<20).map { f in
            "{\"t\": \(time(f)), \"pose\": {" + pose(0, f).map { "\"\($0.key)\": [\($0.value.x), \($0.value.y)]" }.joined(separator: ", ") + "}}"
        }
        try (Self.header + "\n" + #"{"id": "clip", "frames": [\#(frameJSON.joined(separator: ", "))]}"#)
            .write(toFile: data, atomically: true, encoding: .utf8)
        for extra in [[], ["--events"]] {
            let r = runCLI(["predict", path, data] + extra)
            XCTAssertEqual(r.code, 1, r.out)
            XCTAssertTrue(r.err.hasPrefix("error: \(path): the network's output for class"), r.err)
            XCTAssertTrue(r.err.contains("not a finite number, on a plain pose"), r.err)
            XCTAssertEqual(r.out, "")
        }
    }

    func testStreamOptionsAreChecked() throws {
        assertThrows(["--events reads a file, or frames from stdin with --stream"]) { _ = try self.runPredict([Self.golden, "-", "--events"], stdin: []) }
        assertThrows(["--stream reads frames from stdin"]) { _ = try self.runPredict([Self.golden, "x.jsonl", "--stream"], stdin: []) }
        assertThrows(["background class 'other' is not among the model's classes"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--background", "other"], stdin: [])
        }
        assertThrows(["exit <= enter"]) { _ = try self.runPredict([Self.golden, "-", "--stream", "--enter", "0.3", "--exit", "0.5"], stdin: []) }
        assertThrows(["--max-jump must be a positive number of seconds"]) { _ = try self.runPredict([Self.golden, "-", "--stream", "--max-jump", "0"], stdin: []) }
        assertThrows(["--switch-evidence is for events from frames, which this model file does not record (format 1.5); fit it again"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--events", "--switch-evidence", "0.2"], stdin: [])
        }
        assertThrows(["--switch-evidence is for events from frames; leave out --window-events"]) {
            _ = try self.runPredict([Self.golden, "-", "--stream", "--events", "--window-events", "--switch-evidence", "0.2"], stdin: [])
        }
        var help = ""
        var output = Output(write: { help += $0 }, note: { _ in }, isTerminal: false)
        XCTAssertEqual(ActionTrainCLI.run(["predict", "--help"], out: &output), 0)
        XCTAssertTrue(help.contains("pose-estimator | actiontrain predict model.atm - --stream --events"), help)
        XCTAssertTrue(help.contains("--max-jump <SECONDS>"), help)
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
        XCTAssertTrue(out.contains("over 8 random windows: "), out)  // the golden file keeps no pose statistics
    }

    /// A stream of which no line is a frame (a dataset piped in, 2D points for a 3D model):
    /// before, exit 0 and "0 windows" after the warnings, as for a live stream with a few bad
    /// lines, which still ends well.
    func testAStreamWhoseEveryLineIsSkippedFails() throws {
        let dataset = [Self.header, #"{"id": "s1", "label": "a", "frames": [{"pose": {"head": [1, 2]}}]}"#]
        let r = try runFailing([Self.golden, "-", "--stream"], stdin: dataset)
        XCTAssertEqual(r.error.exitCode, 1)
        XCTAssertEqual(
            r.error.description, "predict: all 2 lines were skipped (the warnings above say why), so no frame reached the model and nothing was predicted")
        XCTAssertTrue(r.err.contains("predict: 0 frames from 2 lines, 0 windows, 0 events\nwarning: 2 x badLine; first: <stdin>:1: "), r.err)
        XCTAssertEqual(try runFailing([Self.golden, "-", "--stream"], stdin: ["hello"]).error.description.prefix(34), "predict: the only line was skipped")
        // One frame among them, or no line at all, ends well.
        XCTAssertTrue(try runPredict([Self.golden, "-", "--stream"], stdin: dataset + [line(0, 0)]).err.contains("predict: 1 frames from 3 lines"))
        XCTAssertTrue(try runPredict([Self.golden, "-", "--stream"], stdin: []).err.contains("predict: 0 frames from 0 lines"))
    }
}
