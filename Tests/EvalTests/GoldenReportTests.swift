import Eval
import Foundation
import TestSupport
import XCTest

/// The whole terminal report of the fixture, character for character.
final class GoldenReportTests: XCTestCase {
    func testTerminalReport() throws {
        let text = TextReport.render(try Fixtures.report())
        if text != Self.golden {
            // Print the actual report so a deliberate change can be reviewed and pasted.
            print("---- actual report ----\n" + text + "---- end ----")
        }
        XCTAssertEqual(text, Self.golden)
    }

    static let golden = """
        actiontrain evaluation report (actiontrain.eval 1)
        model             model.atm
        trained by        actiontrain 0.1.0
        classes           3: walk, run, jump
        input             skeleton tiny (2 joints, 3D, metres); window 4 frames, sliding, padding empty
        training data     fnv1a64:0000000000000001
        training config   fnv1a64:00000000000000c0
        training seed     3
        training metrics  validationAccuracy 0.875
        notes             dataset toy
        data              toy, split test, 6 sequences, 12 windows of 4 frames (stride 10)
        data file         toy.jsonl
        data hash         fnv1a64:00000000000000da
        evaluated by      actiontrain test, report schema actiontrain.eval 1
        headline          sequence level: each sequence holds one label (published accuracies are per sequence); a sequence's prediction is the most probable class of the mean of its window probabilities

        == sequence level (headline): 6 sequences (mean of window probabilities) ==

                     precision    recall  f1-score   support

                walk     1.000     0.500     0.667         2
                 run     0.500     0.500     0.500         2
                jump     0.667     1.000     0.800         2

            accuracy                         0.667         6
           macro avg     0.722     0.667     0.656         6
        weighted avg     0.722     0.667     0.656         6

                               value   95% CI
        accuracy               0.667   [0.333, 1.000]
        macro F1               0.656   [0.167, 1.000]
        balanced accuracy      0.667
        Cohen's kappa          0.500
        log loss              0.5574
        ECE (15 bins)         0.3667
        ECE if calibrated     0.3833   [0.3333, 0.5500]
        top-2 accuracy         1.000
        ECE if calibrated: median and 95% range of the ECE over 1000 draws of the 6 sequences, each right with the probability of its predicted class (a calibrated model with these confidences).
        ECE 0.3667 is within the 95% range of a calibrated model's ECE on 6 sequences [0.3333, 0.5500]: sampling alone gives an ECE this large.

        confusion matrix (rows = true, columns = predicted)
                   [0]   [1]   [2]
        [0] walk     1     1     0
        [1] run      0     1     1
        [2] jump     0     0     2

        confusion matrix normalised over true labels (each row sums to 1; the diagonal is the recall)
                   [0]   [1]   [2]
        [0] walk  0.50  0.50  0.00
        [1] run   0.00  0.50  0.50
        [2] jump  0.00  0.00  1.00

        == window level: 12 windows from 6 sequences ==

                     precision    recall  f1-score   support

                walk     1.000     0.750     0.857         4
                 run     0.750     0.750     0.750         4
                jump     0.800     1.000     0.889         4

            accuracy                         0.833        12
           macro avg     0.850     0.833     0.832        12
        weighted avg     0.850     0.833     0.832        12

                               value   95% CI
        accuracy               0.833   [0.667, 1.000]
        macro F1               0.832   [0.555, 1.000]
        balanced accuracy      0.833
        Cohen's kappa          0.750
        log loss              0.5818
        ECE (15 bins)         0.2583
        ECE if calibrated     0.2417   [0.1083, 0.4083]
        top-2 accuracy         1.000
        ECE if calibrated: median and 95% range of the ECE over 1000 draws of the 12 windows, each right with the probability of its predicted class (a calibrated model with these confidences; windows drawn independently, though a sequence's are not, so the range is too narrow).
        ECE 0.2583 is within the 95% range of a calibrated model's ECE on 12 windows [0.1083, 0.4083]: sampling alone gives an ECE this large.

        confusion matrix (rows = true, columns = predicted)
                   [0]   [1]   [2]
        [0] walk     3     1     0
        [1] run      0     3     1
        [2] jump     0     0     4

        confusion matrix normalised over true labels (each row sums to 1; the diagonal is the recall)
                   [0]   [1]   [2]
        [0] walk  0.75  0.25  0.00
        [1] run   0.00  0.75  0.25
        [2] jump  0.00  0.00  1.00

        95% CI: percentile bootstrap, 200 resamples of whole sequences, seed 7. Precision, recall or F1 with a zero denominator count as 0.

        """

    /// Beyond `TextReport.maxMatrixClasses` classes the text says the matrices are left out:
    /// 10,000 classes made 4 matrices of 10⁸ cells, 2.4 GB of text, printed by `fit`.
    func testTheTextLeavesOutTheMatricesOfManyClasses() throws {
        let K = TextReport.maxMatrixClasses + 1
        let r = try Fixtures.report(Fixtures.sequences(K, classes: K) { _ in true }, resamples: 0, classes: (0..<K).map { "c\($0)" })
        let text = TextReport.render(r)
        XCTAssertEqual(text.components(separatedBy: "\nconfusion matrix: 201 classes, more than the 200 a text report prints (report.json holds it)\n").count, 3, text)
        XCTAssertFalse(text.contains("rows = true"))
        let fewer = try Fixtures.report(Fixtures.sequences(K - 1, classes: K - 1) { _ in true }, resamples: 0, classes: (0..<(K - 1)).map { "c\($0)" })
        XCTAssertTrue(TextReport.render(fewer).contains("\nconfusion matrix (rows = true, columns = predicted)\n"))
    }
}
