import Eval
import Foundation
import TestSupport
import XCTest

/// Calibration in the reports: the Brier score and the per-class log loss and Brier score
/// (hand-computed values), the reliability diagram in the HTML and Markdown reports and as
/// reliability.svg, old reports without the new keys still read, and the gate on calibration.
final class CalibrationReportTests: XCTestCase {
    /// Two samples, three classes, worked by hand.
    func testBrierAndPerClassScoresByHand() {
        let truth: [Int32] = [0, 2]
        let p: [Float] = [0.5, 0.25, 0.25, 0.125, 0.125, 0.75]
        // Sample 0: (0.5 − 1)² + 0.25² + 0.25² = 0.375; sample 1: 0.125² + 0.125² + 0.25² = 0.09375.
        XCTAssertEqual(Metrics.brier(truth: truth, probabilities: p, classes: 3), (0.375 + 0.09375) / 2, accuracy: 1e-12)
        let scores = Metrics.classScores(truth: truth, probabilities: p, classes: ["a", "b", "c"])
        XCTAssertEqual(scores.map(\.label), ["a", "b", "c"])
        XCTAssertEqual(scores.map(\.support), [1, 0, 1])
        XCTAssertEqual(scores[0].logLoss, -log(0.5), accuracy: 1e-12)
        XCTAssertEqual(scores[1].logLoss, 0, "no samples")
        XCTAssertEqual(scores[2].logLoss, -log(0.75), accuracy: 1e-12)
        // One-vs-rest: a (0.25 + 0.015625) / 2, b (0.0625 + 0.015625) / 2, c (0.0625 + 0.0625) / 2.
        XCTAssertEqual(scores[0].brier, 0.1328125, accuracy: 1e-12)
        XCTAssertEqual(scores[1].brier, 0.0390625, accuracy: 1e-12)
        XCTAssertEqual(scores[2].brier, 0.0625, accuracy: 1e-12)
        XCTAssertEqual(scores.map(\.brier).reduce(0, +), Metrics.brier(truth: truth, probabilities: p, classes: 3), accuracy: 1e-12)
        // The per-class log losses, weighted by support, give the log loss.
        let weighted = scores.map { $0.logLoss * Double($0.support) }.reduce(0, +) / 2
        XCTAssertEqual(weighted, Metrics.logLoss(truth: truth, probabilities: p, classes: 3), accuracy: 1e-12)
    }

    /// The fixture's levels carry them, and report.json round-trips them.
    func testLevelsCarryTheScoresAndTheJSONKeepsThem() throws {
        let r = try Fixtures.report(resamples: 0)
        let m = try XCTUnwrap(r.sequence)
        let table = try XCTUnwrap(r.predictions?.sequence)
        XCTAssertEqual(m.brierScore, Metrics.brier(truth: table.truth, probabilities: table.probabilities, classes: 3))
        XCTAssertEqual(m.classScores?.map(\.support), [2, 2, 2])
        let back = try ReportJSON.decode(try ReportJSON.encode(r), file: "report.json")
        XCTAssertEqual(back.sequence?.classScores, m.classScores)
        XCTAssertEqual(back.window.brierScore, r.window.brierScore)
    }

    /// A report.json written before the scores existed (an `eval --baseline` of last month)
    /// still reads, without them.
    func testAReportWithoutTheNewKeysStillReads() throws {
        let r = try Fixtures.report(resamples: 0)
        let old = try Fixtures.withoutKeys(["brierScore", "classScores"], r)
        XCTAssertNil(old.window.brierScore)
        XCTAssertNil(old.sequence?.classScores)
        XCTAssertEqual(old.sequence?.expectedCalibrationError, r.sequence?.expectedCalibrationError)
        XCTAssertFalse(MarkdownReport.render(old).contains("Brier"), "no Brier rows without the scores")
    }

    /// The diagram draws one accuracy bar per non-empty bin, as high as its accuracy, with its
    /// count and a dot at its mean confidence; the HTML page inlines it, report.md links it and
    /// the report folder holds it.
    func testTheReliabilityDiagramIsDrawnAndLinked() throws {
        let r = try Fixtures.report(resamples: 0)
        let m = r.headlineMetrics
        let bins = m.calibration.filter { $0.count > 0 }
        XCTAssertGreaterThan(bins.count, 1)
        let svg = SVGReliability.render(r)
        XCTAssertTrue(svg.hasPrefix("<?xml"))
        XCTAssertEqual(ReportFormatsTests.parseXML(svg)?.elements.first, "svg", "well-formed")
        XCTAssertFalse(svg.contains("<script"))
        XCTAssertTrue(svg.contains("ECE \(String(format: "%.4f", m.expectedCalibrationError))"))
        XCTAssertEqual(svg.components(separatedBy: "fill=\"#54aeff\"").count - 1, bins.count, "one accuracy bar per non-empty bin")
        XCTAssertEqual(svg.components(separatedBy: "<circle").count - 1, bins.count)
        for b in bins {
            // The plot is 300 pixels high: the bar of a bin is 300 · accuracy.
            XCTAssertTrue(svg.contains("height=\"\(String(format: "%.1f", b.accuracy * 300))\" fill=\"#54aeff\""), "bin \(b)")
            XCTAssertTrue(svg.contains(">\(b.count)</text>"))
        }
        let html = HTMLReport.render(r)
        XCTAssertEqual(html.components(separatedBy: "<title>Reliability,").count - 1, r.levels.count, "one diagram per level")
        XCTAssertFalse(html.contains("<?xml"), "inline, not a standalone file")
        let markdown = MarkdownReport.render(r)
        XCTAssertTrue(markdown.contains("![Reliability diagram: accuracy against confidence per bin](reliability.svg)"))
        XCTAssertTrue(markdown.contains("| class | log loss (its samples) | Brier (one-vs-rest) | support |"))
        let walk = try XCTUnwrap(m.classScores?.first)
        XCTAssertTrue(markdown.contains("| walk | \(String(format: "%.4f", walk.logLoss)) | \(String(format: "%.4f", walk.brier)) | 2 |"))
        XCTAssertTrue(markdown.contains("| Brier score | \(String(format: "%.4f", m.brierScore!))"))
        let files = try Reports.files(r)
        XCTAssertEqual(files.first { $0.name == "reliability.svg" }?.data, Data(svg.utf8))
    }

    /// The gate checks calibration only when asked: a rise of the ECE or log loss beyond the
    /// limit fails, within it passes; the policy file reads the keys and refuses bad values.
    func testTheGateChecksCalibrationWhenAsked() throws {
        // The same predictions, the candidate less sure of its right answers: same accuracy,
        // higher log loss.
        let sure = Fixtures.sequences(40, classes: 2) { $0 % 10 != 0 }
        let unsure = sure.map { row -> (sequence: String, start: Int, truth: Int32, p: [Float]) in
            (row.sequence, row.start, row.truth, row.p.map { $0 == 0.9 ? 0.6 : 0.4 })
        }
        let a = try Fixtures.report(sure, resamples: 0, classes: ["c0", "c1"]), b = try Fixtures.report(unsure, resamples: 0, classes: ["c0", "c1"])
        let c = try Comparison(baseline: a, candidate: b, baselineName: "old.json", candidateName: "new.json", confidence: 0.95)
        XCTAssertEqual(Gate.evaluate(c, policy: GatePolicy()).checks.map(\.name), ["accuracy", "macro F1", "recall[c0]", "recall[c1]"])
        var policy = GatePolicy()
        policy.maxLogLossRise = 0.05
        policy.maxECERise = 0.5
        let g = Gate.evaluate(c, policy: policy)
        let loss = try XCTUnwrap(g.checks.first { $0.name == "log loss" })
        XCTAssertEqual(loss.baseline, a.headlineMetrics.logLoss)
        XCTAssertEqual(loss.drop, b.headlineMetrics.logLoss - a.headlineMetrics.logLoss, accuracy: 1e-12)
        XCTAssertGreaterThan(loss.drop, 0.05)
        XCTAssertFalse(loss.passed)
        XCTAssertTrue(loss.message.contains("rises more than the allowed 0.0500"), loss.message)
        let ece = try XCTUnwrap(g.checks.first { $0.name == "ECE" })
        XCTAssertTrue(ece.passed, ece.message)
        XCTAssertFalse(g.passed)
        policy.maxLogLossRise = 1
        policy.requireSignificance = true
        XCTAssertTrue(Gate.evaluate(c, policy: policy).passed)
        policy.maxLogLossRise = 0.05
        XCTAssertFalse(Gate.evaluate(c, policy: policy).passed, "no significance test: the rise alone fails")

        let dir = try temporaryDirectory()
        func file(_ text: String) throws -> String {
            let url = dir.appendingPathComponent("\(UUID().uuidString).json")
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let p = try GatePolicy.load(try file(#"{"maxECERise": 0.01, "maxLogLossRise": 0.02}"#))
        XCTAssertEqual(p.maxECERise, 0.01)
        XCTAssertEqual(p.maxLogLossRise, 0.02)
        XCTAssertNil(try GatePolicy.load(try file("{}")).maxECERise)
        let high = try file(#"{"maxECERise": 1.5}"#)
        assertThrows([high, "maxECERise must be between 0 and 1, got 1.5"]) { _ = try GatePolicy.load(high) }
        let negative = try file(#"{"maxLogLossRise": -0.1}"#)
        assertThrows([negative, "maxLogLossRise must be a finite number ≥ 0, got -0.1"]) { _ = try GatePolicy.load(negative) }
    }
}
