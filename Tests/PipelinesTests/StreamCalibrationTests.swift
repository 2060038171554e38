import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// What `fit` records for streams: the clip length of whole-clip models and event thresholds
/// calibrated on a stream of the sequences back to back (docs/format.md 3.4).
final class StreamCalibrationTests: XCTestCase {
    func testThresholdsMaximiseTheF1OfEachClassOnSmoothedWindows() {
        // Six windows of class 0 (p0 0.72), then six of class 1 (p0 0.1). Smoothed over three
        // windows p0 is 0.72 x 6, 0.513, 0.307, then 0.1: class 0's F1 is 1 for thresholds in
        // (0.513, 0.72], i.e. 0.55 ... 0.70 on the grid, whose middle is 0.65.
        var p: [Float] = [], truth: [Int32] = []
        for n in 0..<12 {
            let first = n < 6
            p += first ? [0.72, 0.18, 0.1] : [0.1, 0.85, 0.05]
            truth.append(first ? 0 : 1)
        }
        let t = StreamCalibration.thresholds(probabilities: p, truth: truth, classes: 3)
        XCTAssertEqual(t.enter[0], 0.65)
        XCTAssertEqual(t.exit[0], 0.433)
        // Class 1: smoothed p1 is 0.18 x 6, 0.403, 0.627, then 0.85: F1 1 in (0.18, 0.403]
        // (0.2 ... 0.4, middle 0.3).
        XCTAssertEqual(t.enter[1], 0.3)
        XCTAssertEqual(t.exit[1], 0.2)
        // Class 2 has no window: the defaults.
        XCTAssertEqual(t.enter[2], 0.6)
        XCTAssertEqual(t.exit[2], 0.4)
    }

    /// Clips of `lengths` frames at 10 fps, labels alternating a/b.
    func clips(_ lengths: [Int], timestamps: Bool = false) -> Dataset {
        let skeleton = Skeleton(name: "two", joints: ["a", "b"], dimensions: 2, units: .pixels)
        var sequences: [PoseSequence] = []
        for (i, n) in lengths.enumerated() {
            var s = PoseSequence(
                id: "c\(i)", label: i % 2 == 0 ? "a" : "b", jointCount: 2, dimensions: 2, frameCount: n,
                coordinates: (0..<(n * 4)).map { Float($0 % 7) * 10 + Float(i) }, present: [UInt8](repeating: 1, count: n * 2), confidence: nil)
            if timestamps { s.timestamps = (0..<n).map { Double($0) * 0.05 } }  // 20 fps
            sequences.append(s)
        }
        return Dataset(name: "clips", skeleton: skeleton, sequences: sequences, classes: ["a", "b"], frameRate: timestamps ? nil : 10)
    }

    func testTheClipIsTheMedianTrainingLengthAtTheClipRate() throws {
        var input = InputSpec(skeleton: clips([1]).skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let d = clips([5, 9, 12, 30, 7])
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frames, 9)
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frameRate, 10)
        XCTAssertEqual(StreamCalibration.clip(d, indices: [3, 4], input: input)?.frames, 30)
        // At the window's own rate (20 fps): 9 frames at 10 fps span 0.8 s, 17 frames at 20.
        input.window.frameRate = 20
        XCTAssertEqual(StreamCalibration.clip(d, indices: Array(0..<5), input: input)?.frames, 17)
        // From timestamps (20 fps): as recorded.
        input.window.frameRate = nil
        let stamped = clips([5, 9, 12], timestamps: true)
        XCTAssertEqual(StreamCalibration.clip(stamped, indices: [0, 1, 2], input: input)?.frames, 9)
        XCTAssertEqual(try XCTUnwrap(StreamCalibration.clip(stamped, indices: [0, 1, 2], input: input)?.frameRate), 20, accuracy: 1e-9)
        // Sliding windows slide their own window.
        input.window.mode = .sliding
        XCTAssertNil(StreamCalibration.clip(d, indices: [0], input: input))
    }

    func testTheCalibrationWindowsAreASessionsOnTheClipsBackToBack() throws {
        let d = clips([20, 24, 16, 30])
        let input = InputSpec(skeleton: d.skeleton, window: WindowSpec(frames: 8, mode: .fit), steps: [], channels: [.coordinates])
        let clip = try XCTUnwrap(StreamCalibration.clip(d, indices: [0, 1, 2, 3], input: input))
        XCTAssertEqual(clip.frames, 24)
        let w = try XCTUnwrap(StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5))
        // 90 frames at 10 fps, a window of 24 frames every 8: starts 0, 8, ..., 64 and 66.
        XCTAssertEqual(w.count, 10)
        // Each window's truth is the clip at its middle; the clips' order is seeded.
        XCTAssertEqual(Set(w.labels), [0, 1])
        let again = try XCTUnwrap(StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 5))
        XCTAssertEqual(again.features, w.features)
        XCTAssertEqual(again.labels, w.labels)
        XCTAssertNotEqual(try StreamCalibration.windows(d, indices: [0, 1, 2, 3], input: input, clip: clip, seed: 6)?.features, w.features)
    }

    func testFitRecordsTheClipAndTheThresholdsAndPredictUsesThem() throws {
        // The tiny fixture's clips, whole-clip windows, no validation split: calibrated on training.
        var c = FitRunTests.quick
        c.windowMode = .fit
        c.validationFraction = 0
        let d = try DatasetLoader.load(FitRunTests.fixture)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: c, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        let model = try ActionModel(bytes: try run.finish().modelBytes)
        let streaming = try XCTUnwrap(model.header.streaming)
        let lengths = run.data.trainIndices.map { d.sequences[$0].frameCount }.sorted()
        XCTAssertEqual(streaming.clipFrames, lengths[lengths.count / 2])
        XCTAssertEqual(streaming.clipFrameRate, d.frameRate)
        XCTAssertEqual(streaming.calibration, "training")
        XCTAssertEqual(streaming.enter?.count, model.classes.count)
        XCTAssertEqual(try model.streamWindow().frames, lengths[lengths.count / 2])
        let options = EventOptions.standard(for: model)
        for (k, name) in model.classes.enumerated() {
            XCTAssertEqual(options.thresholds(of: name).enter, Float(streaming.enter![k]))
            XCTAssertEqual(options.thresholds(of: name).exit, Float(streaming.exit![k]))
        }
        // With validation sequences the stream is theirs.
        c.validationFraction = 0.3
        let validated = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: c, folder: nil)
        XCTAssertEqual(try validated.train(), .finished)
        XCTAssertEqual(try ActionModel(bytes: try validated.finish().modelBytes).header.streaming?.calibration, "validation")
    }
}
