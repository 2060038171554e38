import Eval
import Foundation
import TestSupport
import XCTest

final class EvalReportTests: XCTestCase {
    func testWindowAndSequenceLevels() throws {
        let r = try Fixtures.report()
        XCTAssertEqual(r.headline, .sequence)
        XCTAssertEqual(r.window.samples, 12)
        XCTAssertEqual(r.window.sequences, 6)
        // Window predictions: s1 ✓✓, s2 ✗✓ (0.5 > 0.4), s3 ✓✓, s4 ✗✓, s5 ✓✓, s6 ✓✓ ([0.3, 0.3, 0.4] → jump).
        XCTAssertEqual(r.window.confusion, [[3, 1, 0], [0, 3, 1], [0, 0, 4]])
        assertClose(r.window.accuracy, 10.0 / 12)
        // Sequence means: s2 [0.4, 0.5, 0.1] → run, s4 [0.15, 0.4, 0.45] → jump.
        let s = try XCTUnwrap(r.sequence)
        XCTAssertEqual(s.samples, 6)
        XCTAssertEqual(s.confusion, [[1, 1, 0], [0, 1, 1], [0, 0, 2]])
        assertClose(s.accuracy, 4.0 / 6)
        let seq = try XCTUnwrap(r.predictions?.sequence)
        XCTAssertEqual(seq.sequence, ["s1", "s2", "s3", "s4", "s5", "s6"])
        XCTAssertEqual(seq.windows, [2, 2, 2, 2, 2, 2])
        assertClose(Array(seq.probabilities[3..<6]), [0.4, 0.5, 0.1])
        XCTAssertEqual(r.headlineMetrics.level, .sequence)
        XCTAssertEqual(r.levels.map(\.level), [.sequence, .window])
    }

    func testSequencesWithSeveralLabelsMakeWindowsTheHeadline() throws {
        var rows = Fixtures.windowRows
        rows[1].truth = 1  // s1 now holds a walk and a run window
        rows[1].p = [0.1, 0.8, 0.1]
        let r = try Fixtures.report(rows)
        XCTAssertEqual(r.headline, .window)
        XCTAssertNil(r.sequence)
        XCTAssertNil(r.predictions?.sequence)
        XCTAssertTrue(r.headlineReason.contains("several labels"), r.headlineReason)
    }

    func testEmptyAndSingleClassAreClearErrors() {
        assertThrows(["the evaluation set is empty"]) { _ = try Fixtures.report([]) }
        let oneClass = Fixtures.windowRows.filter { $0.truth == 2 }
        assertThrows(["only class 'jump' (4 samples)", "at least two classes"]) { _ = try Fixtures.report(oneClass) }
        assertThrows(["class 'run' appears twice"]) { _ = try Fixtures.report(classes: ["walk", "run", "run"]) }
    }

    func testZeroDivisionPolicyForAClassAbsentFromTheSet() throws {
        // Four classes; "swim" is never true and never predicted: listed with zeros and support 0,
        // left out of the macro average (scikit-learn's default label set).
        let rows = Fixtures.windowRows.map { ($0.sequence, $0.start, $0.truth, $0.p + [0]) }
        let r = try EvalReport.evaluate(
            classes: Fixtures.classes + ["swim"], windows: try Fixtures.table(rows, classes: 4), model: Fixtures.model,
            data: Fixtures.data, settings: EvalSettings(bootstrapResamples: 0), tool: "t")
        let swim = r.window.classes[3]
        XCTAssertEqual([swim.precision, swim.recall, swim.f1], [0, 0, 0])
        XCTAssertEqual(swim.support, 0)
        let three = try Fixtures.report(resamples: 0)
        assertClose(r.window.macro.f1, three.window.macro.f1)
        assertClose(r.window.balancedAccuracy, three.window.balancedAccuracy)
        XCTAssertNil(r.window.accuracyCI)
    }

    func testJSONRoundTripKeepsEverything() throws {
        let r = try Fixtures.report()
        let data = try ReportJSON.encode(r)
        let back = try ReportJSON.decode(data, file: "r.json")
        XCTAssertEqual(back, r)
        // The hand-written predictions equal Foundation's encoding of the same report.
        let viaFoundation = try JSONDecoder().decode(EvalReport.self, from: JSONEncoder().encode(r))
        XCTAssertEqual(viaFoundation, r)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(object["schema"] as? String, "actiontrain.eval")
        XCTAssertEqual(object["schemaVersion"] as? Int, 1)
        let predictions = try XCTUnwrap(object["predictions"] as? [String: Any])
        let windows = try XCTUnwrap(predictions["window"] as? [[String: Any]])
        XCTAssertEqual(windows.count, 12)
        XCTAssertEqual(windows[2]["sequence"] as? String, "s2")
        XCTAssertEqual(windows[3]["start"] as? Int, 10)
        XCTAssertEqual(windows[2]["true"] as? String, "walk")
        XCTAssertEqual(windows[2]["predicted"] as? String, "run")
        XCTAssertEqual((windows[2]["probabilities"] as? [Double])?.count, 3)
        let sequences = try XCTUnwrap(predictions["sequence"] as? [[String: Any]])
        XCTAssertEqual(sequences[3]["predicted"] as? String, "jump")
        XCTAssertEqual(sequences[3]["windows"] as? Int, 2)
        let window = try XCTUnwrap(object["window"] as? [String: Any])
        for key in [
            "accuracy", "accuracyCI", "macroF1", "macroF1CI", "balancedAccuracy", "cohenKappa", "logLoss",
            "expectedCalibrationError", "topK", "calibration", "classes", "macro", "weighted", "confusion", "confusionNormalized",
            "samples", "sequences", "level",
        ] {
            XCTAssertNotNil(window[key], "window.\(key) missing from the JSON")
        }
    }

    func testReadingFilesThatAreNotReports() throws {
        let dir = try temporaryDirectory()
        func write(_ text: String) throws -> String {
            let url = dir.appendingPathComponent("\(UUID().uuidString).json")
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let notJSON = try write("accuracy 0.9")
        assertThrows([notJSON, "is not valid JSON (line 1, column 1: expected a value (an object, list, string, number, true, false or null)); pass a report.json"]) { _ = try ReportJSON.read(notJSON) }
        // Before, each of these was "is not a JSON object (invalid data at the top level)".
        let full = String(decoding: try ReportJSON.encode(try Fixtures.report()), as: UTF8.self)
        let cut = try write(String(full.prefix(full.count / 2)))
        let cutLine = full.prefix(full.count / 2).split(separator: "\n", omittingEmptySubsequences: false).count
        assertThrows(["\(cut): ends in the middle of its JSON (line \(cutLine), column", "the file is cut short; copy it again"]) { _ = try ReportJSON.read(cut) }
        let empty = try write("\n")
        assertThrows(["\(empty): is empty; pass a report.json written by 'actiontrain eval'"]) { _ = try ReportJSON.read(empty) }
        let model = dir.appendingPathComponent("model.atm")
        try Data([0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 56)).write(to: model)
        assertThrows(["\(model.path): is an actiontrain model file, not a report"]) { _ = try ReportJSON.read(model.path) }
        let dataset = try write("{\"actiontrain\": \"poses\", \"version\": 1, \"skeleton\": \"natops-8\"}\n{\"id\": \"a\", \"frames\": []}\n")
        assertThrows(["\(dataset): is a dataset (JSON Lines), not a report"]) { _ = try ReportJSON.read(dataset) }
        assertThrows(["\(dir.path): is a folder; pass the report.json in it"]) { _ = try ReportJSON.read(dir.path) }
        let other = try write("{\"hello\": 1}")
        assertThrows([other, "not an actiontrain evaluation report"]) { _ = try ReportJSON.read(other) }
        let legacy = try write(
            String(
                decoding: try JSONEncoder().encode(
                    ClassificationReport(
                        ConfusionMatrix(classes: ["a", "b"], truth: [0, 1], predicted: [0, 1]))), as: UTF8.self))
        assertThrows(["old classification report without per-sample predictions"]) { _ = try ReportJSON.read(legacy) }
        let future = try write("{\"schema\": \"actiontrain.eval\", \"schemaVersion\": 2}")
        assertThrows(["schema version 2 is newer than this reader (1); upgrade actiontrain"]) { _ = try ReportJSON.read(future) }
        var text = String(decoding: try ReportJSON.encode(try Fixtures.report()), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"headline\" :", with: "\"headlin\" :")
        let broken = try write(text)
        assertThrows([broken, "does not match schema actiontrain.eval 1", "missing key 'headline'"]) { _ = try ReportJSON.read(broken) }
        assertThrows(["/nonexistent/r.json: no such file; check the path"]) { _ = try ReportJSON.read("/nonexistent/r.json") }
        // Hand-edited files that decode but do not hold together are refused, not rendered.
        var report = try Fixtures.report()
        report.window.confusion.removeLast()
        let shape = try write(String(decoding: try ReportJSON.encode(report), as: UTF8.self))
        assertThrows([shape, "window.confusion is not 3x3"]) { _ = try ReportJSON.read(shape) }
        report = try Fixtures.report()
        report.sequence = nil
        let headless = try write(String(decoding: try ReportJSON.encode(report), as: UTF8.self))
        assertThrows([headless, "the headline level 'sequence' has no metrics"]) { _ = try ReportJSON.read(headless) }
    }
}
