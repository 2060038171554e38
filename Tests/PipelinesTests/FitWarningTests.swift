import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Warnings a fit gives before training (data that does not suit the config) and after it
/// (a final epoch worse than the best one), each naming the key that fixes it.
final class FitWarningTests: XCTestCase {
    func start(_ config: TrainingConfig, _ d: Dataset? = nil, split: FitPipeline.Split? = nil) throws -> FitRun {
        try FitRun.start(
            dataPath: FitRunTests.fixture, dataset: d ?? DatasetLoader.load(FitRunTests.fixture), config: config, folder: nil, split: split)
    }

    func codes(_ run: FitRun) -> [String] {
        run.warnings.map(\.description).compactMap { w in
            w.hasPrefix("[") ? w.dropFirst().split(separator: "]").first.map(String.init) : nil
        }
    }

    /// The fixture's sequences have 10 frames: a 40-frame sliding window is 75% padding.
    func testSlidingWindowsMostlyPaddingSayWhatToSet() throws {
        var c = FitRunTests.quick
        c.windowFrames = 40
        c.validationFraction = 0
        let run = try start(c)
        XCTAssertEqual(run.data.paddedShare, 0.75, accuracy: 1e-12)
        let w = run.warnings.map(\.description).first { $0.hasPrefix("[mostly-padding]") }
        XCTAssertEqual(
            w,
            "[mostly-padding] 75% of the training windows' frames are padding: most sequences are shorter than the 40-frame window; set the config's windowMode to fit (each sequence resampled to one window) or a smaller windowFrames")
        c.windowMode = .fit
        let fit = try start(c)
        XCTAssertEqual(fit.data.paddedShare, 0)
        XCTAssertFalse(codes(fit).contains("mostly-padding"))
        XCTAssertFalse(codes(fit).contains("shorter-than-window"), "fit windows resample short sequences, they are not padded")
        XCTAssertTrue(codes(run).contains("shorter-than-window"))
    }

    /// A convolution over time whose kernel spans more frames than the window reads mostly
    /// padding: said before training, for the tcn and the ST-GCN, not for an MLP.
    func testAKernelLongerThanTheWindowIsSaid() throws {
        var c = FitRunTests.quick
        c.architecture = .tcn
        c.windowMode = .fit
        c.windowFrames = 8
        c.kernel = 11
        XCTAssertEqual(
            try start(c).warnings.map(\.description).first { $0.hasPrefix("[kernel-longer-than-window]") },
            "[kernel-longer-than-window] the kernel spans 11 frames and the window 8: each convolution over time reads mostly padding; set the config's kernel below windowFrames (e.g. 5, the default)")
        c.kernel = 7
        XCTAssertFalse(codes(try start(c)).contains("kernel-longer-than-window"))
        c.kernel = 11
        c.architecture = .mlp
        XCTAssertFalse(codes(try start(c)).contains("kernel-longer-than-window"), "an MLP has no kernel over time")
    }

    func testTinyClassesAndASmallValidationSplit() throws {
        var c = FitRunTests.quick
        c.validationFraction = 0
        // raise-0...7 are 0..<8, lower 8..<16, wave 16..<24: train on 2 of "raise", all of the others.
        let run = try start(c, split: .init(train: [0, 1] + Array(8..<24), validation: []))
        XCTAssertTrue(run.warnings.map(\.description).contains { $0.hasPrefix("[tiny-classes] raise (2) training sequences") }, "\(run.warnings)")
        c.validationFraction = 0.2
        let small = try start(c)
        let w = try XCTUnwrap(small.warnings.map(\.description).first { $0.hasPrefix("[small-validation]") })
        XCTAssertTrue(w.contains("the validation split has \(small.data.validationIndices.count) sequences of 3 classes"), w)
        XCTAssertTrue(w.contains("validationFraction to 0"), w)
    }

    func testAFinalLossWellAboveItsMinimumIsNamedWithItsEpoch() {
        func records(_ losses: [Double]) -> [EpochRecord] {
            losses.enumerated().map {
                let line = #"{"epoch": \#($0.offset + 1), "trainLoss": \#($0.element), "trainAccuracy": 0, "seconds": 1, "windowsPerSecond": 1}"#
                return try! JSONDecoder().decode(EpochRecord.self, from: Data(line.utf8))
            }
        }
        XCTAssertEqual(FitRun.lossWarning(records([1.2, 0.6, 0.7, 0.95])), .lossAboveMinimum(final: 0.95, minimum: 0.6, epoch: 2))
        XCTAssertNil(FitRun.lossWarning(records([1.2, 0.6, 0.7, 0.85])), "not 1.5 times the minimum")
        XCTAssertNil(FitRun.lossWarning(records([0.05, 0.02, 0.06])), "within 0.05 of the minimum")
        XCTAssertTrue(FitRun.lossWarning(records([1, 0.5, 0.9]))!.description.contains("schedule cosine"))
    }
}
