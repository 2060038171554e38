@testable import ActionTrain
import Foundation
import TestSupport
import XCTest

/// The checks around a run (issue 16): validation windows before training, chance-level
/// accuracy after it, and a model moved aside when the run fails after writing it.
final class RunChecksTests: XCTestCase {
    func folder() throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }

    // MARK: - Validation windows

    func testValidationSequencesWithoutWindowsAreRefused() {
        assertThrows(["toy: the 2 validation sequences give no windows of 45 frames", "validationFraction 0"]) {
            try RunChecks.checkValidationWindows(dataset: "toy", sequences: 2, windows: 0, windowFrames: 45)
        }
        assertThrows(["the 1 validation sequence give"]) {
            try RunChecks.checkValidationWindows(dataset: "toy", sequences: 1, windows: 0, windowFrames: 3)
        }
        XCTAssertThrowsError(try RunChecks.checkValidationWindows(dataset: "toy", sequences: 1, windows: 0, windowFrames: 3)) { e in
            guard case .needsValidation = e as? TrainingError else { return XCTFail("\(e)") }
        }
        XCTAssertNoThrow(try RunChecks.checkValidationWindows(dataset: "toy", sequences: 0, windows: 0, windowFrames: 45))  // no validation
        XCTAssertNoThrow(try RunChecks.checkValidationWindows(dataset: "toy", sequences: 3, windows: 1, windowFrames: 45))
    }

    func testADataFrameRateAModelFileCannotHoldIsRefused() {
        for rate in [20_000, 0.001, 1e300] {
            assertThrows(["toy: the data's frame rate \(rate) fps is outside 0.01 to 10000, the range a model file holds"]) {
                try RunChecks.checkDataFrameRate(rate, dataset: "toy")
            }
        }
        for rate in [nil, 0.01, 29.97, 10_000] { XCTAssertNoThrow(try RunChecks.checkDataFrameRate(rate, dataset: "toy")) }
    }

    // MARK: - Chance level

    func record(_ epoch: Int, loss: Double, accuracy: Double) -> EpochRecord {
        EpochRecord(
            epoch: epoch, trainLoss: loss, trainAccuracy: accuracy, validationLoss: nil, validationAccuracy: nil, seconds: 1,
            windowsPerSecond: 1, learningRate: 0.1)
    }

    func testChanceAccuracyIsTheMostFrequentLabelsShare() {
        XCTAssertEqual(RunChecks.chanceAccuracy(labels: [0, 1, 1, 2], classes: 3), 0.5)
        XCTAssertEqual(RunChecks.chanceAccuracy(labels: [2, 2, 2], classes: 3), 1)
        XCTAssertEqual(RunChecks.chanceAccuracy(labels: [], classes: 3), 0)
    }

    func testChanceLevelWarningNamesTheLikelyCause() throws {
        // 100 windows of 4 balanced classes: chance 0.25, threshold 0.25 + 2·√(0.25·0.75/100) = 0.3366.
        let labels = (0..<100).map { $0 % 4 }
        let diverged = [record(1, loss: 1.4, accuracy: 0.3), record(2, loss: 9e12, accuracy: 0.25)]
        let text = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.25, set: "validation", labels: labels, classes: 4, records: diverged, learningRate: 1e6))
        XCTAssertEqual(
            text,
            "the final validation accuracy 0.250 is not above chance level (always answering the most frequent label scores 0.250 on these "
                + "100 windows): the last training loss 9e+12 is more than twice that of answering every class with probability 1/4 (1.386), "
                + "so the network diverged or saturated. The learning rate 1e+06 is likely too high; try it 10 times lower, or set gradientClipNorm")
        // A loss that fell from a diverged first epoch but is still worse than a uniform guess: too high.
        let plateau = [record(1, loss: 4e9, accuracy: 0.3), record(2, loss: 80, accuracy: 0.25)]
        let high = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.25, set: "validation", labels: labels, classes: 4, records: plateau, learningRate: 1e6))
        XCTAssertTrue(high.contains("the last training loss 80 is more than twice that of answering every class with probability 1/4"), high)
        // Below 2 ln K but not falling (a loss a little above ln K early in training is not divergence).
        let early = [record(1, loss: 1.38, accuracy: 0.3), record(2, loss: 1.45, accuracy: 0.3)]
        let notHigh = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.25, set: "validation", labels: labels, classes: 4, records: early, learningRate: 0.01))
        XCTAssertTrue(notHigh.contains("the training loss did not fall (epoch 1: 1.38, epoch 2: 1.45)"), notHigh)
        let flat = [record(1, loss: 1.2, accuracy: 0.3), record(2, loss: 1.25, accuracy: 0.3)]
        let stuck = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.25, set: "validation", labels: labels, classes: 4, records: flat, learningRate: 0.5))
        XCTAssertTrue(stuck.contains("the training loss did not fall (epoch 1: 1.2, epoch 2: 1.25). The learning rate 0.5 is likely too high or too low"), stuck)
        XCTAssertNotNil(RunChecks.chanceLevelWarning(accuracy: 0.336, set: "validation", labels: labels, classes: 4, records: diverged, learningRate: 1))
        XCTAssertNil(RunChecks.chanceLevelWarning(accuracy: 0.337, set: "validation", labels: labels, classes: 4, records: diverged, learningRate: 1))

        let overfit = [record(1, loss: 1.3, accuracy: 0.4), record(2, loss: 0.1, accuracy: 0.98)]
        let generalise = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.3, set: "validation", labels: labels, classes: 4, records: overfit, learningRate: 1e-3))
        XCTAssertTrue(generalise.contains("the training accuracy reached 0.980, so the model does not generalise"), generalise)

        let slow = [record(1, loss: 1.39, accuracy: 0.26), record(2, loss: 1.38, accuracy: 0.27)]
        let little = try XCTUnwrap(
            RunChecks.chanceLevelWarning(
                accuracy: 0.27, set: "training", labels: labels, classes: 4, records: slow, learningRate: 1e-5))
        XCTAssertTrue(little.hasPrefix("the final training accuracy 0.270 is not above chance level"), little)
        XCTAssertTrue(little.contains("train for more epochs or with a higher learning rate than 1e-05"), little)

        // An imbalanced set: answering the majority class (80%) is chance, 0.85 of 1000 is above it.
        let skewed = (0..<1000).map { $0 < 800 ? 0 : 1 }
        XCTAssertNotNil(RunChecks.chanceLevelWarning(accuracy: 0.8, set: "validation", labels: skewed, classes: 2, records: slow, learningRate: 1))
        XCTAssertNil(RunChecks.chanceLevelWarning(accuracy: 0.85, set: "validation", labels: skewed, classes: 2, records: slow, learningRate: 1))
        XCTAssertNil(RunChecks.chanceLevelWarning(accuracy: 0.1, set: "validation", labels: [], classes: 2, records: slow, learningRate: 1))
    }

    // MARK: - A failure after the model is written

    func testAFailureAfterTheModelIsWrittenMovesItAside() throws {
        let dir = try folder()
        let model = "\(dir)/model.atm"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: model))
        XCTAssertEqual(try RunChecks.afterWritingModel(at: model) { 7 }, 7)
        XCTAssertTrue(FileManager.default.fileExists(atPath: model))

        struct ReportFailed: Error, CustomStringConvertible { var description: String { "probabilities are not a distribution" } }
        XCTAssertThrowsError(try RunChecks.afterWritingModel(at: model) { throw ReportFailed() }) { e in
            let failure = e as? RunChecks.FailedAfterModel
            XCTAssertEqual(failure?.movedTo, "\(dir)/model.failed.atm")
            XCTAssertEqual(
                "\(e)",
                "probabilities are not a distribution. The run failed after writing its model: the model file was moved to "
                    + "\(dir)/model.failed.atm so that nothing takes it for a finished run's; check it before any use")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: model))
        XCTAssertEqual(FileManager.default.contents(atPath: "\(dir)/model.failed.atm"), Data([1, 2, 3]))

        // When it cannot be moved, the error says the file is still there.
        XCTAssertThrowsError(try RunChecks.afterWritingModel(at: "\(dir)/gone.atm") { throw ReportFailed() }) { e in
            XCTAssertEqual(
                "\(e)", "probabilities are not a distribution. The run failed after writing its model, and \(dir)/gone.atm exists: do not use it before checking it")
        }
        XCTAssertEqual(RunChecks.failedModelPath(for: "/r/model.atm"), "/r/model.failed.atm")
        XCTAssertEqual(RunChecks.failedModelPath(for: "/r/model"), "/r/model.failed")
    }
}
