import Eval
import TestSupport
import XCTest

final class ClassificationReportTests: XCTestCase {
    // truth:     a a a b b c
    // predicted: a a b b c c
    let classes = ["a", "b", "c"]
    let truth = [0, 0, 0, 1, 1, 2]
    let predicted = [0, 0, 1, 1, 2, 2]

    func testConfusionMatrixCounts() throws {
        let m = try ConfusionMatrix(classes: classes, truth: truth, predicted: predicted)
        XCTAssertEqual(m.counts, [[2, 1, 0], [0, 1, 1], [0, 0, 1]])
        XCTAssertEqual(m.support, [3, 2, 1])
        XCTAssertEqual(m.predictedCounts, [2, 2, 2])
        XCTAssertEqual(m.correct, 4)
    }

    func testPerClassMetricsMatchHandComputedValues() throws {
        let r = try ClassificationReport(ConfusionMatrix(classes: classes, truth: truth, predicted: predicted))
        // a: P = 2/2, R = 2/3; b: P = 1/2, R = 1/2; c: P = 1/2, R = 1/1.
        assertClose(r.classes[0].precision, 1)
        assertClose(r.classes[0].recall, 2.0 / 3)
        assertClose(r.classes[0].f1, 0.8)
        assertClose(r.classes[1].f1, 0.5)
        assertClose(r.classes[2].f1, 2.0 / 3)
        assertClose(r.accuracy, 4.0 / 6)
        assertClose(r.macro.f1, (0.8 + 0.5 + 2.0 / 3) / 3)
        assertClose(r.weighted.f1, (0.8 * 3 + 0.5 * 2 + 2.0 / 3) / 6)
    }

    func testZeroDivisionGivesZero() throws {
        // Class c is never predicted and never true.
        let r = try ClassificationReport(ConfusionMatrix(classes: classes, truth: [0, 1], predicted: [0, 0]))
        XCTAssertEqual(r.classes[2].precision, 0)
        XCTAssertEqual(r.classes[2].recall, 0)
        XCTAssertEqual(r.classes[1].f1, 0)
    }

    func testErrors() {
        assertThrows(["empty"]) { _ = try ClassificationReport(ConfusionMatrix(classes: classes)) }
        assertThrows(["outside"]) { _ = try ConfusionMatrix(classes: classes, truth: [3], predicted: [0]) }
        assertThrows(["2 true labels but 1 predictions"]) { _ = try ConfusionMatrix(classes: classes, truth: [0, 1], predicted: [0]) }
    }
}
