import Eval
import TestSupport
import XCTest

/// The 8-sample, 3-class example of scripts/eval_reference.py. Hand computation:
/// predictions 0 0 1 1 1 0 2 1 against truth 0 0 0 1 1 1 2 2, confusion [[2,1,0],[1,2,0],[0,1,1]];
/// p_o = 5/8, p_e = (3·3 + 3·4 + 2·1)/64 = 23/64, κ = (40/64 − 23/64)/(41/64) = 17/41;
/// recalls 2/3, 2/3, 1/2 → balanced accuracy 11/18; top-2 misses only sample 2 → 7/8;
/// ECE bins (15): {0.70 ✓}, {0.50 ✓}, {0.45 ✗, 0.41 ✓, 0.42 ✗}, {0.85 ✓, 0.82 ✓}, {0.55 ✗}
/// → (0.30 + 0.50 + 3·|1/3 − 0.4267| + 2·0.165 + 0.55)/8 = 0.245.
final class MetricsTests: XCTestCase {
    let truth: [Int32] = [0, 0, 0, 1, 1, 1, 2, 2]
    let probabilities: [Float] = [
        0.70, 0.20, 0.10,
        0.50, 0.30, 0.20,
        0.25, 0.45, 0.30,
        0.10, 0.85, 0.05,
        0.34, 0.41, 0.25,
        0.55, 0.35, 0.10,
        0.05, 0.13, 0.82,
        0.20, 0.42, 0.38,
    ]
    let classes = ["a", "b", "c"]

    var matrix: ConfusionMatrix {
        get throws {
            try ConfusionMatrix(
                classes: classes, truth: truth.map(Int.init), predicted: Metrics.predictions(probabilities, classes: 3).map(Int.init))
        }
    }

    func testConfusionAndAgreementMetrics() throws {
        let m = try matrix
        XCTAssertEqual(m.counts, [[2, 1, 0], [1, 2, 0], [0, 1, 1]])
        assertClose(Metrics.cohenKappa(m), 17.0 / 41)
        assertClose(Metrics.cohenKappa(m), 0.4146341463414634)  // scripts/eval_reference.py
        assertClose(Metrics.balancedAccuracy(m), 11.0 / 18)
        let r = try ClassificationReport(m)
        assertClose(r.accuracy, 0.625)
        // F1: 2/3, 4/7, 2/3.
        assertClose(r.macro.f1, (2.0 / 3 + 4.0 / 7 + 2.0 / 3) / 3)
    }

    func testLogLossECEAndTopK() {
        let predicted = Metrics.predictions(probabilities, classes: 3)
        XCTAssertEqual(predicted, [0, 0, 1, 1, 1, 0, 2, 1])
        // Reference values from scripts/eval_reference.py (float32 inputs as here).
        assertClose(Metrics.logLoss(truth: truth, probabilities: probabilities, classes: 3), 0.7132613324860637, relative: 1e-9)
        let cal = Metrics.calibration(truth: truth, predicted: predicted, probabilities: probabilities, classes: 3)
        assertClose(cal.ece, 0.24499999731779099, relative: 1e-9)
        assertClose(cal.ece, 0.245, absolute: 1e-6)
        XCTAssertEqual(cal.bins.count, 15)
        XCTAssertEqual(cal.bins.map(\.count), [0, 0, 0, 0, 0, 0, 3, 1, 1, 0, 1, 0, 2, 0, 0])
        assertClose(cal.bins[6].accuracy, 1.0 / 3)
        assertClose(cal.bins[6].confidence, Double((Float(0.45) + Float(0.41) + Float(0.42))) / 3, relative: 1e-6)
        assertClose(cal.bins[6].lower, 6.0 / 15)
        assertClose(Metrics.topK(1, truth: truth, probabilities: probabilities, classes: 3), 0.625)
        assertClose(Metrics.topK(2, truth: truth, probabilities: probabilities, classes: 3), 0.875)
        assertClose(Metrics.topK(3, truth: truth, probabilities: probabilities, classes: 3), 1)
    }

    func testTiesAreRankedLikeArgmax() {
        // Row [0.4, 0.4, 0.2]: argmax picks class 0, so class 1 is second: wrong at k=1, right at k=2.
        let p: [Float] = [0.4, 0.4, 0.2]
        XCTAssertEqual(Metrics.predictions(p, classes: 3), [0])
        XCTAssertEqual(Metrics.topK(1, truth: [1], probabilities: p, classes: 3), 0)
        XCTAssertEqual(Metrics.topK(2, truth: [1], probabilities: p, classes: 3), 1)
        XCTAssertEqual(Metrics.topK(1, truth: [0], probabilities: p, classes: 3), 1)
    }

    func testLogLossClipsZeroProbability() {
        // p_true = 0 is clipped to 1e-15: −ln(1e-15) = 34.538776...
        assertClose(Metrics.logLoss(truth: [1], probabilities: [1, 0], classes: 2), -log(1e-15))
    }

    func testNormalisedConfusion() throws {
        let m = try matrix
        let t = m.normalized(.overTrue), p = m.normalized(.overPredicted), a = m.normalized(.overAll)
        assertClose(t[2][1], 0.5)
        assertClose(t[0][0], 2.0 / 3)
        assertClose(p[1][1], 2.0 / 4)  // column 1 holds 1 + 2 + 1
        assertClose(p[0][0], 2.0 / 3)
        assertClose(a[1][1], 2.0 / 8)
        for row in t { assertClose(row.reduce(0, +), 1) }
        assertClose(a.flatMap { $0 }.reduce(0, +), 1)
        // A class never predicted has an all-zero column, not NaN.
        let z = try ConfusionMatrix(classes: ["x", "y"], truth: [0, 1], predicted: [0, 0]).normalized(.overPredicted)
        XCTAssertEqual(z, [[0.5, 0], [0.5, 0]])
    }

    func testKappaOfPerfectAndChanceAgreement() throws {
        let perfect = try ConfusionMatrix(classes: ["x", "y"], truth: [0, 1, 0, 1], predicted: [0, 1, 0, 1])
        assertClose(Metrics.cohenKappa(perfect), 1)
        // Always predicting x: p_o = 1/2, p_e = (2·4 + 2·0)/16 = 1/2 → κ = 0.
        let constant = try ConfusionMatrix(classes: ["x", "y"], truth: [0, 1, 0, 1], predicted: [0, 0, 0, 0])
        assertClose(Metrics.cohenKappa(constant), 0)
        // Everything one class on both sides: p_e = 1, defined as 0.
        let degenerate = try ConfusionMatrix(classes: ["x", "y"], truth: [0, 0], predicted: [0, 0])
        XCTAssertEqual(Metrics.cohenKappa(degenerate), 0)
    }

    func testBadProbabilitiesAreRefused() {
        assertThrows(["sample 1", "sums to 0.500000"]) {
            _ = try PredictionTable(sequence: ["a", "a"], start: [0, 1], truth: [0, 0], probabilities: [1, 0, 0.25, 0.25], classes: 2)
        }
        assertThrows(["sample 0", "nan"]) {
            _ = try PredictionTable(sequence: ["a"], start: [0], truth: [0], probabilities: [.nan, 1], classes: 2)
        }
        assertThrows(["negative"]) {
            _ = try PredictionTable(sequence: ["a"], start: [0], truth: [0], probabilities: [-0.5, 1.5], classes: 2)
        }
        assertThrows(["class index 2 is outside the 2 classes"]) {
            _ = try PredictionTable(sequence: ["a"], start: [0], truth: [2], probabilities: [0.5, 0.5], classes: 2)
        }
    }
}
