import Eval
import TestSupport
import XCTest

final class McNemarTests: XCTestCase {
    /// (b, c, p, exact?) printed by scripts/eval_reference.py (math.comb / math.erfc by hand,
    /// cross-checked there against scipy.stats.binomtest and chi2.sf).
    let reference: [(Int, Int, Double, Bool)] = [
        (0, 0, 1.0, true),
        (1, 0, 1.0, true),
        (3, 1, 0.625, true),
        (5, 0, 0.0625, true),
        (2, 10, 0.03857421875, true),
        (8, 16, 0.15158963203430176, true),
        (12, 12, 1.0, true),
        (0, 24, 1.1920928955078125e-07, true),
        (12, 13, 1.0, false),
        (15, 30, 0.03688842570704985, false),
        (40, 60, 0.05743311963200359, false),
        (70, 100, 0.0261350941138681, false),
        (0, 30, 1.1924366854416816e-07, false),
        (200, 150, 0.008814654904213298, false),
    ]

    func testPValuesMatchTheReferenceScript() {
        for (b, c, p, exact) in reference {
            let t = McNemar(baselineOnly: b, candidateOnly: c)
            XCTAssertEqual(t.method, exact ? .exactBinomial : .chiSquareCorrected, "(\(b), \(c))")
            assertClose(t.pValue, p, absolute: 1e-15, relative: 1e-9, "(\(b), \(c))")
            // The test is two-sided: swapping the roles gives the same p.
            assertClose(McNemar(baselineOnly: c, candidateOnly: b).pValue, p, absolute: 1e-15, relative: 1e-9)
        }
    }

    func testExactBelow25DiscordantPairsChiSquareFrom25() {
        XCTAssertEqual(McNemar(baselineOnly: 20, candidateOnly: 4).method, .exactBinomial)
        XCTAssertNil(McNemar(baselineOnly: 20, candidateOnly: 4).statistic)
        let t = McNemar(baselineOnly: 20, candidateOnly: 5)
        XCTAssertEqual(t.method, .chiSquareCorrected)
        assertClose(t.statistic!, 14.0 * 14.0 / 25)  // (|20 − 5| − 1)² / 25
    }

    func testCountsDiscordantPairsFromPredictions() {
        let truth: [Int32] = [0, 1, 0, 1, 0, 1]
        let a: [Int32] = [0, 1, 0, 0, 1, 1]  // right on 0, 1, 2, 5
        let b: [Int32] = [0, 0, 1, 1, 0, 1]  // right on 0, 3, 4, 5
        let t = McNemar(truth: truth, baseline: a, candidate: b)
        XCTAssertEqual(t.baselineOnly, 2)  // samples 1, 2
        XCTAssertEqual(t.candidateOnly, 2)  // samples 3, 4
        assertClose(t.pValue, 1)
    }
}
