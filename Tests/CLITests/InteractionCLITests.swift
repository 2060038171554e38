@testable import ActionRuntime
@testable import actiontrain
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 items 4b and 7 end to end: an interaction model trained on two bodies, honoured by
/// predict; fit's refusal of one class; padding warnings; swapped arguments; --window-seconds.
final class InteractionCLITests: XCTestCase {
    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }
    static let quick = ["--recipe", "none", "--architecture", "mlp", "--hidden", "8", "--batch-size", "4", "--seed", "1", "--threads", "1", "--epochs", "2"]

    /// 8 sequences of 10 frames, two people each; "together" when they stand close.
    static func twoPersonData(_ dir: URL, frames: Int = 10) throws -> String {
        var text = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 10, "imageSize": [640, 480], "classes": ["together", "apart"]}"# + "\n"
        for n in 0..<8 {
            let label = n % 2 == 0 ? "together" : "apart"
            let gap = n % 2 == 0 ? 40 : 300
            let people = (0..<frames).map { t in
                #"{"people": [{"track": "a", "pose": {"nose": [\#(100 + t), 100], "leftHip": [100, 200], "leftAnkle": [100, 300]}}, {"track": "b", "pose": {"nose": [\#(100 + gap), 100], "leftHip": [\#(100 + gap), 200], "leftAnkle": [\#(100 + gap), 300]}}]}"#
            }
            text += #"{"id": "s\#(n)", "label": "\#(label)", "group": "g\#(n)", "frames": [\#(people.joined(separator: ", "))]}"# + "\n"
        }
        let path = dir.appendingPathComponent("pairs.jsonl").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testInteractionModelEndToEnd() throws {
        let dir = try temporaryDirectory()
        let data = try Self.twoPersonData(dir)
        let refused = run(["fit", data, "--out", dir.appendingPathComponent("x").path] + Self.quick)
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("2 people appear"), refused.err)

        let runDir = dir.appendingPathComponent("run").path
        let fit = run(["fit", data, "--people", "bodies=2", "--out", runDir, "--window-seconds", "1", "--validation-fraction", "0.25"] + Self.quick)
        XCTAssertEqual(fit.code, 0, fit.err)
        let model = try ActionModel(contentsOf: runDir + "/model.atm")
        XCTAssertEqual(model.bodies, 2)
        XCTAssertEqual(model.input.skeleton.name, "coco-17x2")
        XCTAssertEqual(model.input.window.frames, 10, "1 s at 10 fps")
        let header = try String(contentsOfFile: runDir + "/model.atm", encoding: .isoLatin1)
        XCTAssertTrue(header.contains(#""bodies":2"#), "recorded in the model header")

        // predict reads several people as the model's two bodies without being told.
        let predicted = run(["predict", runDir + "/model.atm", data])
        XCTAssertEqual(predicted.code, 0, predicted.err)
        XCTAssertEqual(predicted.out.split(separator: "\n").count, 8, "one window per sequence")
        // A one-person file: the second body is absent (masked).
        let solo = dir.appendingPathComponent("solo.jsonl").path
        try
            (#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 10}"# + "\n"
            + #"{"id": "one", "frames": [{"pose": {"nose": [100, 100], "leftAnkle": [100, 300]}}]}"# + "\n").write(toFile: solo, atomically: true, encoding: .utf8)
        let one = run(["predict", runDir + "/model.atm", solo])
        XCTAssertEqual(one.code, 0, one.err)
        XCTAssertTrue(one.err.contains("warning: 90% of the window frames are padding (1 of 1 windows"), one.err)
        // --use-events: one window centred on each event.
        let events = dir.appendingPathComponent("events.jsonl").path
        let frames = (0..<30).map { t in #"{"pose": {"nose": [\#(100 + t), 100], "leftAnkle": [100, 300]}}"# }.joined(separator: ", ")
        try
            (#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 10}"# + "\n"
            + #"{"id": "ev", "events": [20], "frames": [\#(frames)]}"# + "\n").write(toFile: events, atomically: true, encoding: .utf8)
        let centred = run(["predict", runDir + "/model.atm", events, "--use-events"])
        XCTAssertEqual(centred.code, 0, centred.err)
        XCTAssertEqual(centred.out.split(separator: "\n").count, 1)
        XCTAssertTrue(centred.out.contains(#""start": 15, "end": 25"#), centred.out)
        XCTAssertEqual(run(["predict", runDir + "/model.atm", events]).out.split(separator: "\n").count, 8, "sliding: starts 0, 3, ..., 18, 20")
        let swapped = run(["predict", data, runDir + "/model.atm"])
        XCTAssertEqual(swapped.code, 2)
        XCTAssertTrue(swapped.err.contains("the arguments are swapped; give MODEL first, then DATA"), swapped.err)
        let asData = run(["eval", runDir + "/model.atm", runDir + "/model.atm"])
        XCTAssertEqual(asData.code, 1)
        XCTAssertTrue(asData.err.contains("is a model file, not a dataset"), asData.err)
    }

    func testFitRefusesASingleClassAndEvalWarnsAboutPadding() throws {
        let dir = try temporaryDirectory()
        let one = dir.appendingPathComponent("one.jsonl").path
        var text = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 10}"# + "\n"
        for n in 0..<4 { text += #"{"id": "s\#(n)", "label": "wave", "frames": [{"pose": {"nose": [1, 2]}}, {"pose": {"nose": [1, 3]}}]}"# + "\n" }
        try text.write(toFile: one, atomically: true, encoding: .utf8)
        let r = run(["fit", one, "--out", dir.appendingPathComponent("run").path, "--window-frames", "2"] + Self.quick)
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.hasSuffix("training sequence(s) hold only class 'wave'; a classifier needs at least two classes; add sequences of another class (e.g. an 'other' class of non-actions), or check the labels and the split\n"), r.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("run/model.atm").path))

        // Eval of 2-frame sequences with a 10-frame window: 80% padding.
        let data = try Self.twoPersonData(dir)
        let runDir = dir.appendingPathComponent("ok").path
        XCTAssertEqual(run(["fit", data, "--people", "largest", "--out", runDir, "--window-frames", "10"] + Self.quick).code, 0)
        let short = dir.appendingPathComponent("short.jsonl").path
        try
            (#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "classes": ["together", "apart"]}"# + "\n"
            + #"{"id": "q", "label": "apart", "frames": [{"pose": {"nose": [1, 2]}}, {"pose": {"nose": [1, 3]}}]}"# + "\n"
            + #"{"id": "r", "label": "together", "frames": [{"pose": {"nose": [1, 2]}}, {"pose": {"nose": [1, 3]}}]}"# + "\n").write(toFile: short, atomically: true, encoding: .utf8)
        let e = run(["eval", runDir + "/model.atm", short, "--bootstrap", "0"])
        XCTAssertEqual(e.code, 0, e.err)
        XCTAssertTrue(e.err.contains("warning: \(short): 80% of the window frames are padding (2 of 2 windows"), e.err)
        let noRate = run(["fit", one, "--out", dir.appendingPathComponent("r2").path, "--window-seconds", "0"] + Self.quick)
        XCTAssertEqual(noRate.code, 1)
        XCTAssertTrue(noRate.err.contains("the window length 0.0 s is not positive"), noRate.err)
    }
}
