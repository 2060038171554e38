import ActionRuntime
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// Issue 25 end to end: every model `fit` makes gives events (whole-clip models slide their
/// clip), several people live as offline (`predict --stream` with an interaction model equals
/// `predict --people bodies=2`), and `--people` everywhere (a converted two-body file read back
/// as it is; every error about several people names the flag).
final class PeopleEventsCLITests: XCTestCase {
    let joints = ["head", "neck", "root", "hand"]

    func run(_ args: [String]) -> (code: Int32, out: String, err: String) { runCLI(args) }

    func rows(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    /// Runs predict in process with `lines` on stdin.
    func predict(_ args: [String], stdin lines: [String]) throws -> (out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        guard let options = try ArgumentParser.parse(args, for: PredictCommand.spec) else { throw CLIError.usage("help") }
        try PredictCommand.run(options, out: &output, stdin: .lines(lines))
        return (stdout, stderr)
    }

    /// Person `p`'s pose at frame `f` on the golden skeleton, as JSON points.
    func pose(_ p: Int, _ f: Int) -> String {
        joints.enumerated().map { j, name in
            let phase = Float(f) * 0.3 + Float(p) * 1.7
            return "\"\(name)\": [\(100 + 60 * Float(p) + 10 * Float(j) + 15 * sinf(phase * Float(j + 1))), \(50 + 40 * Float(j) + 5 * cosf(phase)), 0.9]"
        }.joined(separator: ", ")
    }

    func time(_ f: Int) -> Double { Double(f) / 30 + (f % 3 == 1 ? 0.004 : 0) }

    /// A two-body model of the golden skeleton: 6-frame sliding windows at 30 fps.
    func twoBodyModel(_ dir: String) throws -> String {
        let golden = try ActionModel(contentsOf: StreamCLITests.golden)
        let skeleton = golden.input.skeleton.bodies(2)
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 6, mode: .sliding, frameRate: 30),
            steps: [.centre(joints: ["p1.root", "p2.root"], perFrame: false)], channels: [.coordinates, .mask])
        let network = try Network(
            layers: [.flatten, .linear(inputs: 6 * input.channelsPerFrame, outputs: 12), .relu, .linear(inputs: 12, outputs: 3)],
            input: Shape(time: 6, channels: input.channelsPerFrame))
        network.initialize(seed: 5)
        let path = "\(dir)/pair.atm"
        try Data(ModelFile.encode(classes: ["hug", "shake", "other"], input: input, network: network, provenance: .init())).write(to: URL(fileURLWithPath: path))
        return path
    }

    func testATwoPersonStreamGivesTheWindowsOfOfflinePredictWithTwoBodies() throws {
        let dir = try scratchFolder()
        let model = try twoBodyModel(dir)
        // "b" from the first frame, "a" (listed first in each frame) from frame 3: b is body 1.
        let frames = 30
        var lines: [String] = [], file: [String] = []
        for f in 0..<frames {
            var people: [String] = []
            if f >= 3 {
                lines.append(#"{"t": \#(time(f)), "person": "a", "pose": {\#(pose(0, f))}}"#)
                people.append(#"{"track": "a", "pose": {\#(pose(0, f))}}"#)
            }
            lines.append(#"{"t": \#(time(f)), "person": "b", "pose": {\#(pose(1, f))}}"#)
            people.append(#"{"track": "b", "pose": {\#(pose(1, f))}}"#)
            file.append(#"{"t": \#(time(f)), "people": [\#(people.joined(separator: ", "))]}"#)
        }
        let streamed = try rows(try predict([model, "-", "--stream", "--stride", "2"], stdin: lines).out).filter { $0["type"] as? String == "window" }
        XCTAssertGreaterThan(streamed.count, 8)
        XCTAssertTrue(streamed.allSatisfy { ($0["people"] as? [String]) == ["b", "a"] }, "\(streamed.first ?? [:])")
        let path = "\(dir)/pairs.jsonl"
        try (StreamCLITests.header + "\n" + #"{"id": "pair", "frames": [\#(file.joined(separator: ", "))]}"# + "\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        for people in [[], ["--people", "bodies=2"]] {
            let r = run(["predict", model, path, "--stride", "2"] + people)
            XCTAssertEqual(r.code, 0, r.err)
            let offline = try rows(r.out)
            XCTAssertEqual(offline.count, streamed.count)
            for (a, b) in zip(streamed, offline) {
                let p = try XCTUnwrap(a["probabilities"] as? [String: Double]), q = try XCTUnwrap(b["probabilities"] as? [String: Double])
                for c in ["hug", "shake", "other"] { XCTAssertEqual(p[c]!, q[c]!, accuracy: 1e-6) }
                XCTAssertEqual(try XCTUnwrap(a["start"] as? Double), time(0) + Double(try XCTUnwrap(b["start"] as? Int)) / 30, accuracy: 0.0005)
            }
        }
        // A --people that cannot give the model's two bodies is refused, naming the choice.
        let one = run(["predict", model, path, "--people", "largest"])
        XCTAssertEqual(one.code, 2)
        XCTAssertTrue(one.err.contains("the model takes 2 people per frame: --people largest reads one; give --people bodies=2"), one.err)
        // A model of one person follows each person, with string ids as given.
        let single = try rows(try predict([StreamCLITests.golden, "-", "--stream", "--stride", "2"], stdin: lines).out)
        XCTAssertEqual(Set(single.compactMap { $0["person"] as? String }), ["a", "b"])
        let refused = run(["predict", StreamCLITests.golden, path])
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("2 people appear (tracks 'b', 'a')") && refused.err.contains("a people policy (--people POLICY)"), refused.err)
    }

    /// Issue 36 item 5: a model fit on people named by role keeps the roles
    /// (`input.bodyRoles`); fit says so, and predict on a file or a stream puts "a" in body 1
    /// where "b" comes first, as the model learnt.
    func testAModelFitOnRolesKeepsThemInPredictAndStreams() throws {
        let dir = try scratchFolder()
        let data = try InteractionCLITests.twoPersonData(URL(fileURLWithPath: dir))
        let fit = run(["fit", data, "--people", "bodies=2", "--out", "\(dir)/run", "--window-frames", "10"] + InteractionCLITests.quick)
        XCTAssertEqual(fit.code, 0, fit.err)
        XCTAssertTrue(fit.out.contains("fit: people: 2 bodies a frame; tracks 'a', 'b' recur"), fit.out)
        XCTAssertTrue(fit.out.contains("→ body order 'a', 'b' (the model keeps it: input.bodyRoles)"), fit.out)
        let model = "\(dir)/run/model.atm"
        XCTAssertEqual(try ActionModel(contentsOf: model).input.bodyRoles, ["a", "b"])
        let inspected = run(["inspect", data, "--people", "bodies=2"])
        XCTAssertTrue(inspected.out.contains("body order: tracks 'a', 'b' recur (each in more than half of the 8 sequences of two or more bodies"), inspected.out)
        // The same clips with "b" listed first in every frame (both seen from frame 0).
        let lines = try String(contentsOfFile: data, encoding: .utf8).split(separator: "\n").map(String.init)
        var swapped = [lines[0]]
        for line in lines.dropFirst() {
            var clip = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let frames = try XCTUnwrap(clip["frames"] as? [[String: Any]])
            clip["frames"] = frames.map { f in ["people": Array((f["people"] as! [Any]).reversed())] }
            swapped.append(String(decoding: try JSONSerialization.data(withJSONObject: clip), as: UTF8.self))
        }
        let bFirst = "\(dir)/b-first.jsonl"
        try (swapped.joined(separator: "\n") + "\n").write(toFile: bFirst, atomically: true, encoding: .utf8)
        var o = ReadOptions()
        o.people = .bodies(2)
        o.bodyOrder = .appearance
        XCTAssertNotEqual(
            try DatasetLoader.read(bFirst, options: o).dataset.sequences, try DatasetLoader.read(data, options: o).dataset.sequences,
            "first appearance puts b in body 1 there")
        let asFitted = run(["predict", model, data]), reordered = run(["predict", model, bFirst])
        XCTAssertEqual(asFitted.code, 0, asFitted.err)
        XCTAssertEqual(reordered.code, 0, reordered.err)
        XCTAssertEqual(reordered.out, asFitted.out, "the model's roles, not first appearance")
        XCTAssertEqual(asFitted.out.split(separator: "\n").count, 8)
        // Live: "b" pushed first in every frame is still body 2.
        let pose = #""nose": [100, 100], "leftHip": [100, 200], "leftAnkle": [100, 300]"#
        let stream = (0..<20).flatMap { f in
            ["b", "a"].map { #"{"t": \#(Double(f) / 10), "person": "\#($0)", "pose": {\#(pose)}}"# }
        }
        let windows = try rows(try predict([model, "-", "--stream"], stdin: stream).out).filter { $0["type"] as? String == "window" }
        XCTAssertFalse(windows.isEmpty)
        XCTAssertTrue(windows.allSatisfy { ($0["people"] as? [String]) == ["a", "b"] }, "\(windows.first ?? [:])")
    }

    func testAModelFitWithoutAConfigMakesEventsOnFilesAndStreams() throws {
        let dir = try scratchFolder()
        let data = FitCLITests.fixture
        // No config: the recipe picks whole-clip windows for the fixture's clips. (--views same:
        // the cameras' tilts, which the recipe also adds, are not what this tests; issue 40.)
        let fit = run(["fit", data, "--out", "\(dir)/run", "--epochs", "3", "--threads", "1", "--views", "same"])
        XCTAssertEqual(fit.code, 0, fit.err)
        XCTAssertTrue(fit.out.contains("windowMode fit"), fit.out)
        let modelPath = "\(dir)/run/model.atm"
        let model = try ActionModel(contentsOf: modelPath)
        let streaming = try XCTUnwrap(model.header.streaming)
        XCTAssertEqual(streaming.clipFrames, 10, "the fixture's clips are 10 frames")
        XCTAssertEqual(streaming.enter?.count, model.classes.count)
        let events = run(["predict", modelPath, data, "--events"])
        XCTAssertEqual(events.code, 0, events.err)
        XCTAssertTrue(events.err.contains("events from"), events.err)
        // Streamed: the sequences' frames back to back as one person.
        let d = try DatasetLoader.load(data)
        var lines: [String] = []
        var t = 0.0
        for s in d.sequences.prefix(6) {
            for f in 0..<s.frameCount {
                let points = (0..<s.jointCount).map { j in
                    "\"\(d.skeleton.joints[j])\": [" + (0..<s.dimensions).map { "\(s.coordinates[(f * s.jointCount + j) * s.dimensions + $0])" }.joined(separator: ", ") + "]"
                }
                lines.append(#"{"t": \#(t), "pose": {\#(points.joined(separator: ", "))}}"#)
                t += 1 / (d.frameRate ?? 10)
            }
        }
        let streamed = try predict([modelPath, "-", "--stream"], stdin: lines)
        let windows = try rows(streamed.out).filter { $0["type"] as? String == "window" }
        // 60 frames, a clip of 10 slid every 3 (a third): starts 0, 3, ..., 48 and 50.
        XCTAssertEqual(windows.count, 18, streamed.err)
        // A model file without the clip length (before format 1.3) needs --clip-frames.
        var input = model.input
        input.window.frameRate = nil
        let old = "\(dir)/old.atm"
        try Data(ModelFile.encode(classes: model.classes, input: input, network: model.network, provenance: .init())).write(to: URL(fileURLWithPath: old))
        let refused = run(["predict", old, data, "--events"])
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("(--clip-frames N)") && refused.err.contains("predates model format 1.3"), refused.err)
        XCTAssertEqual(run(["predict", old, data, "--events", "--clip-frames", "10"]).code, 0)
        XCTAssertEqual(run(["predict", old, data, "--events", "--clip-frames", "10", "--stride", "2", "--stride-seconds", "1"]).code, 2)
    }

    func testAConvertedTwoBodyFileIsReadBackAsItIsByEveryCommand() throws {
        let dir = try scratchFolder()
        let original = try InteractionCLITests.twoPersonData(URL(fileURLWithPath: dir))
        let quick = InteractionCLITests.quick + ["--window-frames", "10"]
        // Without --people, every command that reads the file says which flag to give.
        for command in [["fit", original, "--out", "\(dir)/x"] + quick, ["inspect", original], ["tune", original, "--out", "\(dir)/t"]] {
            let r = run(command)
            XCTAssertEqual(r.code, 1, "\(command[0]): \(r.err)")
            XCTAssertTrue(r.err.contains("2 people appear") && r.err.contains("--people POLICY"), "\(command[0]): \(r.err)")
        }
        let stacked = "\(dir)/stacked.jsonl"
        let converted = run(["convert", stacked, original, "--people", "bodies=2"])
        XCTAssertEqual(converted.code, 0, converted.err)
        XCTAssertEqual(try DatasetLoader.load(stacked).skeleton.name, "coco-17x2")
        // fit with or without --people bodies=2: the file's two bodies, not stacked again.
        for people in [[], ["--people", "bodies=2"]] {
            let r = run(["fit", stacked, "--out", "\(dir)/fit\(people.count)"] + quick + people)
            XCTAssertEqual(r.code, 0, r.err)
            XCTAssertEqual(try ActionModel(contentsOf: "\(dir)/fit\(people.count)/model.atm").input.skeleton.name, "coco-17x2")
        }
        let model = "\(dir)/fit0/model.atm"
        // The model trained on the original file reads the converted one, and the other way round.
        XCTAssertEqual(run(["fit", original, "--people", "bodies=2", "--out", "\(dir)/orig"] + quick).code, 0)
        for (m, data) in [(model, stacked), ("\(dir)/orig/model.atm", stacked), (model, original)] {
            let e = run(["eval", m, data, "--bootstrap", "0"])
            XCTAssertEqual(e.code, 0, e.err)
            XCTAssertEqual(run(["predict", m, data]).code, 0)
        }
        let same = try rows(run(["predict", model, stacked]).out), again = try rows(run(["predict", model, original]).out)
        XCTAssertEqual(same.map { $0["probabilities"] as! [String: Double] }, again.map { $0["probabilities"] as! [String: Double] })
        // tune and sweep read it too (and the original with --people).
        let tune = run(["tune", stacked, "--out", "\(dir)/tune", "--minutes", "0.05", "--folds", "2"] + quick)
        XCTAssertEqual(tune.code, 0, tune.err)
        XCTAssertEqual(try ActionModel(contentsOf: "\(dir)/tune/model.atm").input.skeleton.name, "coco-17x2")
        try #"{"config": {"recipe": "none", "architecture": "mlp", "windowFrames": 10, "hidden": [8], "batchSize": 4, "threads": 1, "epochs": 1}, "grid": {"learningRate": [0.001]}, "folds": 2}"#
            .write(toFile: "\(dir)/grid.json", atomically: true, encoding: .utf8)
        let sweep = run(["sweep", "\(dir)/grid.json", original, "--people", "bodies=2", "--out", "\(dir)/sweep"])
        XCTAssertEqual(sweep.code, 0, sweep.err)
        // Another number of bodies than the file holds is refused, naming the flag.
        let three = run(["eval", "\(dir)/fit0/model.atm", stacked, "--people", "bodies=3"])
        XCTAssertEqual(three.code, 2)
        XCTAssertTrue(three.err.contains("give --people bodies=2"), three.err)
        let wrong = run(["inspect", stacked, "--people", "bodies=3"])
        XCTAssertEqual(wrong.code, 1)
        XCTAssertTrue(wrong.err.contains("already holds 2 bodies per frame") && wrong.err.contains("(--people POLICY)"), wrong.err)
    }
}
