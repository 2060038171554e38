import ActionRuntime
import Datasets
import Eval
import Foundation
import Pipelines
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// `eval --events` end to end: a model `fit` wrote (with its frame-level numbers) scored on a
/// labelled stream made of the tiny fixture's clips, and the same frames piped live through
/// `predict --stream --events` giving the report's events.
final class EventsCLITests: XCTestCase {
    static let fixture = LibraryExamplesTests.fixture

    func testEvalEventsScoresALabelledStreamAndPredictStreamGivesItsEvents() throws {
        let dir = try scratchFolder()
        // --views same: the events and their switch evidence are what is tested, not the recipe's
        // camera tilts, which made the two fits 10 times slower (issue 40).
        let fitArguments = ["fit", Self.fixture, "--epochs", "3", "--window-mode", "sliding", "--window-frames", "6", "--views", "same"]
        let fit = runCLI(fitArguments + ["--out", dir + "/run"])
        XCTAssertEqual(fit.code, 0, fit.err)
        let model = dir + "/run/model.atm"
        XCTAssertNotNil(try ActionModel(contentsOf: model).header.streaming?.frames, "fit writes the frame-level numbers")

        // One stream: the fixture's clips in order, a still body (the next clip's first pose
        // held 1.5 s) before every other clip, each clip a segment.
        let d = try DatasetLoader.read(Self.fixture).dataset
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        var coordinates: [Float] = [], present: [UInt8] = [], segments: [LabeledSegment] = []
        for (k, s) in d.sequences.enumerated() {
            if k % 2 == 0 {
                for _ in 0..<15 {
                    coordinates += s.coordinates[0..<(J * D)]
                    present += s.present[0..<J]
                }
            }
            let first = present.count / J
            coordinates += s.coordinates
            present += s.present
            segments.append(LabeledSegment(label: s.label!, start: first, end: present.count / J - 1))
        }
        var stream = PoseSequence(
            id: "person-1", label: nil, jointCount: J, dimensions: D, frameCount: present.count / J, coordinates: coordinates, present: present)
        stream.segments = segments
        let path = dir + "/stream.jsonl"
        try NativeFormat.write(Dataset(name: "stream", skeleton: d.skeleton, sequences: [stream], classes: d.classes, frameRate: d.frameRate), to: path)

        let eval = runCLI(["eval", model, path, "--events", "--json", dir + "/report.json", "--bootstrap", "0"])
        XCTAssertEqual(eval.code, 0, eval.err)
        XCTAssertTrue(eval.out.contains("== events: "), eval.out)
        XCTAssertTrue(eval.out.contains("events F1 "), eval.out)
        let report = try ReportJSON.read(dir + "/report.json")
        let events = try XCTUnwrap(report.events)
        XCTAssertEqual(events.segments, d.sequences.count)
        XCTAssertEqual(events.truth.first?.start, 1.5, "the first clip starts after 15 still frames at 10 fps")
        XCTAssertEqual(report.headline, .window, "a stream holds several labels")
        XCTAssertGreaterThan(events.events, 0, "the test needs events")
        for e in events.found { XCTAssertGreaterThanOrEqual(e.emitted ?? -1, e.end - 1e-9) }

        // Live: the same frames, one line each.
        var lines: [String] = []
        for f in 0..<stream.frameCount {
            let pose = stream.pose(at: f, skeleton: d.skeleton).points.map { "\"\($0.key)\": [\($0.value.x), \($0.value.y), \($0.value.z)]" }
            lines.append("{\"t\": \(Double(f) / d.frameRate!), \"pose\": {\(pose.joined(separator: ", "))}}")
        }
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        var options = PredictCommand.Options()
        (options.model, options.data, options.stream, options.events) = (model, "-", true, true)
        XCTAssertNoThrow(try PredictCommand.run(options, out: &output, stdin: .lines(lines)), stderr)
        let live = stdout.split(separator: "\n").map { line -> String in
            let o = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return "\(o["label"]!) \(String(format: "%.3f", o["start"] as! Double)) \(String(format: "%.3f", o["end"] as! Double))"
        }
        XCTAssertEqual(live, events.found.map { "\($0.label) \(String(format: "%.3f", $0.start)) \(String(format: "%.3f", $0.end))" })

        // --switch-evidence: checked, used (0 splits at once where 10 never splits), and the same
        // events offline and live with it.
        let far = runCLI(["eval", model, path, "--events", "--switch-evidence", "5000"])
        XCTAssertEqual(far.code, 2)
        XCTAssertTrue(far.err.contains("--switch-evidence must be 0 to 3600 score-seconds, got 5000.0"), far.err)
        var byEvidence: [Double: [String]] = [:]
        for evidence in [0.0, 10] {
            let name = dir + "/switch-\(evidence).json"
            let r = runCLI(["eval", model, path, "--events", "--switch-evidence", "\(evidence)", "--json", name, "--bootstrap", "0"])
            XCTAssertEqual(r.code, 0, r.err)
            let found = try XCTUnwrap(try ReportJSON.read(name).events).found
            byEvidence[evidence] = found.map { "\($0.label) \(String(format: "%.3f", $0.start)) \(String(format: "%.3f", $0.end))" }
            stdout = ""
            options.eventing.switchEvidence = evidence
            XCTAssertNoThrow(try PredictCommand.run(options, out: &output, stdin: .lines(lines)), stderr)
            let live = stdout.split(separator: "\n").map { line -> String in
                let o = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
                return "\(o["label"]!) \(String(format: "%.3f", o["start"] as! Double)) \(String(format: "%.3f", o["end"] as! Double))"
            }
            XCTAssertEqual(live, byEvidence[evidence], "offline = live with --switch-evidence \(evidence)")
        }
        XCTAssertGreaterThanOrEqual(byEvidence[0]!.count, byEvidence[10]!.count)

        // fit --switch-evidence writes the value into the model (the same network: the key
        // changes no training), and eval reads it from there without the flag. Without it fit
        // writes the value it fits on its calibration folds' held-out stream.
        let recorded = runCLI(fitArguments + ["--switch-evidence", "10", "--out", dir + "/run10"])
        XCTAssertEqual(recorded.code, 0, recorded.err)
        let model10 = try ActionModel(contentsOf: dir + "/run10/model.atm")
        XCTAssertEqual(model10.header.streaming?.frames?.switchEvidence, 10)
        let fitted = try XCTUnwrap(try ActionModel(contentsOf: model).header.streaming?.frames?.switchEvidence, "fitted when not given")
        XCTAssertTrue(StreamCalibration.switchEvidenceGrid.contains(fitted), "\(fitted)")
        func found(_ arguments: [String]) throws -> [String] {
            let name = dir + "/switch-file.json"
            XCTAssertEqual(runCLI(["eval"] + arguments + [path, "--events", "--json", name, "--bootstrap", "0", "--force"]).code, 0)
            return try XCTUnwrap(try ReportJSON.read(name).events).found.map { "\($0.label) \(String(format: "%.3f", $0.start)) \(String(format: "%.3f", $0.end))" }
        }
        XCTAssertEqual(try found([dir + "/run10/model.atm"]), try found([dir + "/run10/model.atm", "--switch-evidence", "10"]))
        XCTAssertEqual(try found([model]), try found([model, "--switch-evidence", "\(fitted)"]))
        let outOfRange = runCLI(fitArguments + ["--switch-evidence", "5000", "--out", dir + "/run5000"])
        XCTAssertNotEqual(outOfRange.code, 0)
        XCTAssertTrue(outOfRange.err.contains("switchEvidence") && outOfRange.err.contains("must be 0 to 3600 score-seconds, got 5000"), outOfRange.err)

        // Data without segments cannot be scored as events.
        let plain = runCLI(["eval", model, Self.fixture, "--events"])
        XCTAssertEqual(plain.code, 1)
        XCTAssertTrue(plain.err.contains("no sequence has labelled segments"), plain.err)
        XCTAssertEqual(runCLI(["eval", model, path, "--events", "--use-events"]).code, 2)
    }
}
