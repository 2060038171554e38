import Eval
import Foundation
import PoseCore
import XCTest

/// The ECE a calibrated model would show on as many samples (`CalibratedECE`): exact small
/// cases enumerated outcome by outcome, determinism for a seed, a large-sample check against
/// the normal approximation and the coverage of a calibrated model's measured ECE, old
/// reports without it, and the reports that show it.
final class CalibratedECETests: XCTestCase {
    /// Every sample sure (confidence 1) is right in every draw: the ECE is 0 in every draw.
    func testSureSamplesGiveZeroInEveryDraw() throws {
        let c = CalibratedECE.simulate(confidences: [Double](repeating: 1, count: 37), draws: 500, seed: 1)
        XCTAssertEqual(c, CalibratedECE(median: 0, lower: 0, upper: 0, draws: 500))
        // The same through a whole evaluation: one-hot probabilities, all right.
        let rows = (0..<12).map { i -> (sequence: String, start: Int, truth: Int32, p: [Float]) in
            ("q\(i)", 0, Int32(i % 3), (0..<3).map { $0 == i % 3 ? 1 : 0 })
        }
        let r = try Fixtures.report(rows, resamples: 0)
        for m in r.levels {
            XCTAssertEqual(m.expectedCalibrationError, 0)
            XCTAssertEqual(m.calibratedECE, CalibratedECE(median: 0, lower: 0, upper: 0, draws: 1000), "\(m.level)")
        }
    }

    /// Every right/wrong outcome of samples at `confidences` (2^n of them), each with its
    /// probability (Π c_i or 1 − c_i) and its ECE as `Metrics.calibration` scores it.
    static func outcomes(_ confidences: [Double]) -> [(probability: Double, ece: Double)] {
        let n = confidences.count
        return (0..<(1 << n)).map { mask in
            var p = 1.0, truth: [Int32] = [], probabilities: [Float] = []
            for (i, c) in confidences.enumerated() {
                let right = mask & (1 << i) != 0
                p *= right ? c : 1 - c
                truth.append(right ? 0 : 1)
                probabilities += [Float(c), Float(1 - c)]
            }
            let ece = Metrics.calibration(
                truth: truth, predicted: [Int32](repeating: 0, count: n), probabilities: probabilities, classes: 2
            ).ece
            return (p, ece)
        }
    }

    /// The exact distribution of the ECE of a calibrated model (`outcomes`): the smallest value
    /// whose cumulative probability reaches q. `margin` is how far q is from either end of that
    /// value's step of the distribution.
    static func exactQuantile(_ confidences: [Double], _ q: Double) -> (value: Double, margin: Double) {
        var atoms: [Double: Double] = [:]
        for (p, ece) in outcomes(confidences) {
            // Sums in another order differ in the last bits: one atom per value to 1e-9.
            let key = (ece * 1e9).rounded() / 1e9
            atoms[key, default: 0] += p
        }
        var cdf = 0.0
        for (v, p) in atoms.sorted(by: { $0.key < $1.key }) {
            let below = cdf
            cdf += p
            if cdf >= q { return (v, min(q - below, cdf - q)) }
        }
        return (atoms.keys.max() ?? 0, 0)
    }

    func testSmallCasesMatchTheExactDistribution() {
        // Three samples at 0.5 in one bin: right k ~ Binomial(3, 1/2), ECE = |k − 1.5| / 3:
        // 1/6 with probability 3/4, 1/2 with 1/4.
        let three = CalibratedECE.simulate(confidences: [0.5, 0.5, 0.5], draws: 1000, seed: 4)
        XCTAssertEqual(three.median, 1.0 / 6, accuracy: 1e-12)
        XCTAssertEqual(three.lower, 1.0 / 6, accuracy: 1e-12)
        XCTAssertEqual(three.upper, 0.5, accuracy: 1e-12)
        XCTAssertEqual(Self.exactQuantile([0.5, 0.5, 0.5], 0.5).value, 1.0 / 6, accuracy: 1e-9)

        // Dyadic confidences (exact in Float) over several bins; the quantiles are checked
        // only where the exact distribution leaves room for 50,000 draws to find them
        // (a margin of at least 4 standard deviations of the empirical distribution).
        let cases: [[Double]] = [
            [0.9375, 0.875, 0.75, 0.625, 0.5, 0.8125, 0.6875, 0.9375],
            [0.9375, 0.9375, 0.9375, 0.75, 0.75, 0.5625],
            [0.5, 0.5, 0.5],
        ]
        let draws = 50000
        for (k, confidences) in cases.enumerated() {
            let c = CalibratedECE.simulate(confidences: confidences, draws: draws, seed: UInt64(10 + k))
            for (q, simulated) in [(0.5, c.median), (0.025, c.lower), (0.975, c.upper)] {
                let exact = Self.exactQuantile(confidences, q)
                XCTAssertGreaterThan(exact.margin, 4 * (q * (1 - q) / Double(draws)).squareRoot(), "case \(k), q \(q): too close to call")
                XCTAssertEqual(simulated, exact.value, accuracy: 1e-9, "case \(k), quantile \(q)")
            }
        }
    }

    /// A draw's ECE is `Metrics.calibration`'s on the same outcomes: the same bins, the same
    /// sum (here checked through the mean of many draws against the enumerated expectation).
    func testTheMeanOfTheDrawsIsTheExactExpectation() {
        let confidences = [0.9375, 0.875, 0.75, 0.625, 0.5, 0.8125, 0.6875, 0.9375]
        let expectation = Self.outcomes(confidences).reduce(0) { $0 + $1.probability * $1.ece }
        // With one draw per call the median is the draw itself: average 4,000 single draws.
        var sum = 0.0
        for s in 0..<4000 { sum += CalibratedECE.simulate(confidences: confidences, draws: 1, seed: UInt64(s)).median }
        XCTAssertEqual(sum / 4000, expectation, accuracy: 0.005, "expectation \(expectation)")
    }

    func testTheSameSeedGivesTheSameRangeAnotherSeedAnother() throws {
        var g = SeededGenerator(seed: 3)
        let confidences = (0..<150).map { _ in 0.4 + 0.6 * g.nextUnitDouble() }
        let a = CalibratedECE.simulate(confidences: confidences, draws: 1000, seed: 9)
        XCTAssertEqual(a, CalibratedECE.simulate(confidences: confidences, draws: 1000, seed: 9))
        XCTAssertNotEqual(a, CalibratedECE.simulate(confidences: confidences, draws: 1000, seed: 10))
        XCTAssertLessThan(a.lower, a.median)
        XCTAssertLessThan(a.median, a.upper)
        // Through a whole evaluation: the report's seed, each level's stream
        // (`SeededGenerator.derive(levelSeed, 3)`, the level's seed being the bootstrap's).
        let rows = Fixtures.sequences(60, classes: 3) { $0 % 7 != 0 }
        let r1 = try Fixtures.report(rows, resamples: 0, seed: 5), r2 = try Fixtures.report(rows, resamples: 0, seed: 5)
        XCTAssertEqual(r1.sequence?.calibratedECE, r2.sequence?.calibratedECE)
        let table = try XCTUnwrap(r1.predictions?.sequence)
        let expected = CalibratedECE.simulate(
            confidences: CalibratedECE.confidences(predicted: table.predicted, probabilities: table.probabilities, classes: 3),
            draws: 1000, seed: SeededGenerator.derive(SeededGenerator.derive(5, 2), CalibratedECE.stream))
        XCTAssertEqual(r1.sequence?.calibratedECE, expected)
        let other = try Fixtures.report(rows, resamples: 0, seed: 6)
        XCTAssertNotEqual(other.sequence?.calibratedECE, r1.sequence?.calibratedECE)
        // The JSON keeps it.
        let back = try ReportJSON.decode(try ReportJSON.encode(r1), file: "report.json")
        XCTAssertEqual(back.sequence?.calibratedECE, r1.sequence?.calibratedECE)
        XCTAssertEqual(back.window.calibratedECE, r1.window.calibratedECE)
    }

    /// Many samples: each bin's count of right answers is nearly normal, so the expected ECE
    /// is about `(1/n) Σ_b √(2/π · Σ_{i∈b} c_i(1 − c_i))` (the mean of |N(0, V_b)|); the
    /// interval holds it and the median is within 5% of it.
    func testManySamplesAgreeWithTheNormalApproximation() {
        var g = SeededGenerator(seed: 21)
        let n = 3000
        let confidences = (0..<n).map { _ in 0.4 + 0.6 * g.nextUnitDouble() }
        var variance = [Double](repeating: 0, count: Metrics.calibrationBins)
        for c in confidences {
            let b = min(14, max(0, Int((c * 15).rounded(.up)) - 1))
            variance[b] += c * (1 - c)
        }
        let approximate = variance.reduce(0) { $0 + (2 / Double.pi * $1).squareRoot() } / Double(n)
        let c = CalibratedECE.simulate(confidences: confidences, draws: CalibratedECE.draws(samples: n), seed: 2)
        XCTAssertEqual(c.draws, 1000)
        XCTAssertTrue(c.lower < approximate && approximate < c.upper, "\(c) against \(approximate)")
        XCTAssertEqual(c.median, approximate, accuracy: 0.05 * approximate, "\(c)")
    }

    /// What the range is for: the measured ECE of a model that *is* calibrated (labels drawn
    /// right with probability c_i, by another generator) falls inside the 95% range about 95%
    /// of the time, on a test set of a development set's size.
    func testACalibratedModelsECEFallsInTheRangeAboutAsOftenAsTheLevelSays() {
        var g = SeededGenerator(seed: 8)
        let n = 150
        let confidences = (0..<n).map { _ in 0.5 + 0.5 * g.nextUnitDouble() }
        let range = CalibratedECE.simulate(confidences: confidences, draws: 1000, seed: 1, confidence: 0.95)
        let probabilities = confidences.flatMap { [Float($0), Float(1 - $0)] }
        var inside = 0
        let trials = 1000
        for _ in 0..<trials {
            let truth = confidences.map { g.nextUnitDouble() < $0 ? Int32(0) : 1 }
            let ece = Metrics.calibration(
                truth: truth, predicted: [Int32](repeating: 0, count: n), probabilities: probabilities, classes: 2
            ).ece
            if range.verdict(ece) == .within { inside += 1 }
        }
        let share = Double(inside) / Double(trials)
        XCTAssertTrue(share > 0.92 && share < 0.98, "\(share) inside \(range)")
    }

    func testFewerDrawsForManySamples() {
        XCTAssertEqual(CalibratedECE.draws(samples: 0), 1000)
        XCTAssertEqual(CalibratedECE.draws(samples: 180), 1000)
        XCTAssertEqual(CalibratedECE.draws(samples: 10000), 1000)
        XCTAssertEqual(CalibratedECE.draws(samples: 20000), 500)
        XCTAssertEqual(CalibratedECE.draws(samples: 100_000), 100)
        XCTAssertEqual(CalibratedECE.draws(samples: 1_000_000), 100)
    }

    /// A report.json written before the field (an `eval --baseline` of last month) reads,
    /// without it, and its reports show no row for it.
    func testAReportWithoutItStillReads() throws {
        let r = try Fixtures.report(resamples: 0)
        let old = try Fixtures.withoutKeys(["calibratedECE"], r)
        XCTAssertNil(old.window.calibratedECE)
        XCTAssertNil(old.sequence?.calibratedECE)
        XCTAssertEqual(old.sequence?.expectedCalibrationError, r.sequence?.expectedCalibrationError)
        for text in [TextReport.render(old), MarkdownReport.render(old), HTMLReport.render(old), CSVReport.metrics(old), SVGReliability.render(old)] {
            XCTAssertFalse(text.contains("calibrated model"), text)
            XCTAssertFalse(text.contains("ECE if calibrated"), text)
            XCTAssertFalse(text.contains("ece_if_calibrated"), text)
        }
        // And a comparison of an old report with a new one still runs.
        let c = try Comparison(baseline: old, candidate: r, baselineName: "old.json", candidateName: "new.json", confidence: 0.95)
        XCTAssertTrue(Gate.evaluate(c, policy: GatePolicy()).passed)
    }

    /// The text report's row and sentence, the Markdown and HTML rows and sentences, the CSV
    /// row and the reliability diagram's line; "above" for a model surer than it is right,
    /// "within" for one as sure as it is right.
    func testTheReportsShowItAndSayWhenTheECEIsAbove() throws {
        // 100 sequences at confidence 0.9: right 90 of 100 (calibrated) or 67 (over-confident).
        let calibrated = try Fixtures.report(Fixtures.sequences(100, classes: 2) { $0 % 10 != 0 }, resamples: 0, classes: ["c0", "c1"])
        let sure = try Fixtures.report(Fixtures.sequences(100, classes: 2) { $0 % 3 != 0 }, resamples: 0, classes: ["c0", "c1"])
        for (r, verdict) in [(calibrated, CalibratedECE.Verdict.within), (sure, .above)] {
            let m = try XCTUnwrap(r.sequence)
            let c = try XCTUnwrap(m.calibratedECE)
            XCTAssertEqual(c.verdict(m.expectedCalibrationError), verdict)
            let row = "ECE if calibrated     \(String(format: "%.4f", c.median))   [\(String(format: "%.4f", c.lower)), \(String(format: "%.4f", c.upper))]\n"
            let text = TextReport.render(r)
            XCTAssertTrue(text.contains(row), text)
            let markdown = MarkdownReport.render(r), html = HTMLReport.render(r), csv = CSVReport.metrics(r)
            XCTAssertTrue(markdown.contains("| ECE if calibrated (median [95% range]) | \(String(format: "%.4f", c.median)) ["), markdown)
            XCTAssertTrue(html.contains("<td>ECE if calibrated (median [95% range])</td><td class=\"n\">\(String(format: "%.4f", c.median)) ["), html)
            XCTAssertTrue(csv.contains("sequence,ece_if_calibrated,"), csv)
            let svg = SVGReliability.render(r)
            XCTAssertTrue(svg.contains("a calibrated model: ECE \(String(format: "%.4f", c.median))"), svg)
            XCTAssertEqual(ReportFormatsTests.parseXML(svg)?.elements.first, "svg", "well-formed")
            let above = "is above the 95% range of a calibrated model's ECE on 100 sequences"
            let within = "is within the 95% range of a calibrated model's ECE on 100 sequences"
            XCTAssertEqual(text.contains(above), verdict == .above, text)
            XCTAssertEqual(text.contains(within), verdict == .within, text)
            XCTAssertEqual(markdown.contains("**ECE \(String(format: "%.4f", m.expectedCalibrationError)) " + above), verdict == .above, markdown)
            let escaped = above.replacingOccurrences(of: "'", with: "&#39;")
            XCTAssertEqual(html.contains("<b>ECE \(String(format: "%.4f", m.expectedCalibrationError)) " + escaped), verdict == .above, html)
            XCTAssertEqual(svg.contains("; measured above it"), verdict == .above)
        }
        XCTAssertTrue(TextReport.render(sure).contains("the probabilities are off by more than a sample this size explains."))
        XCTAssertTrue(TextReport.render(calibrated).contains("sampling alone gives an ECE this large."))
    }
}
