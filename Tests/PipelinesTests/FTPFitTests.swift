import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Fits with the `ftp` architecture and mixed `members` on the tiny fixture: the standardize
/// layers are calibrated on the training windows as cut (not augmented), a stopped run resumes
/// to the uninterrupted run's model, and the model file holds the calibrated values.
final class FTPFitTests: XCTestCase {
    /// A TCN over coordinates and mask and an FTP over relative positions, gaps filled,
    /// augmented (so that calibrating on augmented windows would give other values).
    static var mixed: TrainingConfig {
        var c = FitRunTests.quick
        c.members = [.init(architecture: .tcn, channels: [.coordinates, .mask]), .init(architecture: .ftp, channels: [.relativePositions])]
        c.widths = [6]
        c.kernel = 3
        c.fillGaps = true
        c.augmentation = Recipe.standardAugmentation
        c.epochs = 4
        return c
    }

    /// The dataset with some joints absent (so that fillGaps has gaps to fill).
    func dataset() throws -> Dataset {
        var d = try DatasetLoader.load(FitRunTests.fixture)
        for s in d.sequences.indices {
            let J = d.sequences[s].jointCount, D = d.sequences[s].dimensions
            for f in 0..<d.sequences[s].frameCount where (f + s) % 3 == 1 {
                let j = (f * 5 + s) % J
                d.sequences[s].present[f * J + j] = 0
                for k in 0..<D { d.sequences[s].coordinates[(f * J + j) * D + k] = 0 }
            }
        }
        return d
    }

    func fit(_ config: TrainingConfig, dataset: Dataset) throws -> (FitRun, FitResult) {
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: dataset, config: config, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        return (run, try run.finish())
    }

    /// The FTP member's standardize holds the mean and 1/std of its pyramid over the training
    /// windows without augmentation (computed here in double from `TrainingData.tensors`).
    func testTheFTPMemberIsCalibratedOnTheTrainingWindowsAsCut() throws {
        let d = try dataset()
        let (run, result) = try fit(Self.mixed, dataset: d)
        let model = try ActionModel(bytes: result.modelBytes)
        XCTAssertEqual(model.header.input.steps.first, .fillGaps)
        XCTAssertEqual(model.header.input.channels, [.coordinates, .mask, .relativePositions])
        let members = try XCTUnwrap(model.header.layers.first?.kind as? any MemberCombinationKind).members
        XCTAssertEqual(members.count, 2)
        let ftp = members[1]
        let standardize = try XCTUnwrap(ftp[2].kind as? StandardizeKind)
        let input = model.header.input
        let plain = try TrainingData.tensors(d, run.data.trainIndices, input: input, stride: Self.mixed.windowStride, useEvents: false)
        let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
        let pyramid = try Network(layers: Array(ftp.prefix(2)), input: shape)
        let y = plain.features.withUnsafeBufferPointer { p in
            var mode = ForwardMode.inference
            let out = pyramid.forward(p.baseAddress!, batch: plain.count, mode: &mode)
            return Array(UnsafeBufferPointer(start: out, count: plain.count * pyramid.outputShape.channels))
        }
        let C = pyramid.outputShape.channels
        XCTAssertEqual(standardize.mean.count, C)
        var checked = 0
        for c in stride(from: 0, to: C, by: 7) {
            let v = stride(from: c, to: y.count, by: C).map { Double(y[$0]) }
            let mean = v.reduce(0, +) / Double(v.count)
            let std = (v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(v.count)).squareRoot()
            assertClose(Double(standardize.mean[c]), mean, absolute: 1e-5, relative: 1e-5, "mean of channel \(c)")
            assertClose(Double(standardize.scale[c]), 1 / std, absolute: 1e-5, relative: 1e-4, "scale of channel \(c)")
            checked += 1
        }
        XCTAssertGreaterThan(checked, 10)
        // The TCN member has no standardize; the model runs on the validation windows.
        XCTAssertFalse(members[0].contains { $0.kind is StandardizeKind })
        let validation = try XCTUnwrap(run.data.validation)
        XCTAssertTrue(try model.probabilities(features: validation.features, count: validation.count).allSatisfy(\.isFinite))
    }

    /// A run stopped mid-way resumes (recalibrating the same values) to the same model bytes; a
    /// second, identical run too (the calibration depends on the data alone).
    func testAStoppedRunResumesToTheSameModel() throws {
        let d = try DatasetLoader.load(FitRunTests.fixture)  // as read again on resume
        let (_, straight) = try fit(Self.mixed, dataset: d)
        let root = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
        let dir = root.path + "/run"
        do {  // (the stopped run, which holds the folder's lock, ends here)
            let run = try FitRun.start(
                dataPath: FitRunTests.fixture, dataset: d, config: Self.mixed, folder: try RunFolder.create(dir, replacing: false))
            var batches = 0
            _ = try run.train(shouldStop: { batches == 5 }, onBatch: { _ in batches += 1 })
        }
        let resumed = try FitRun.resume(folder: RunFolder(existing: dir))
        XCTAssertEqual(try resumed.train(), .finished)
        XCTAssertEqual(try resumed.finish().modelBytes, straight.modelBytes)
    }

    /// One member alone is that architecture over its blocks: the same model as the plain config.
    func testOneMemberIsThePlainArchitecture() throws {
        let d = try dataset()
        var one = FitRunTests.quick
        one.members = [.init(architecture: .ftp, channels: [.relativePositions])]
        var plain = FitRunTests.quick
        plain.architecture = .ftp
        plain.channels = [.relativePositions]
        let a = try ActionModel(bytes: try fit(one, dataset: d).1.modelBytes), b = try ActionModel(bytes: try fit(plain, dataset: d).1.modelBytes)
        XCTAssertEqual(a.header.layers, b.header.layers)
        XCTAssertEqual(a.header.input, b.header.input)
        let x = [Float](repeating: 0.1, count: a.header.input.valuesPerWindow)
        XCTAssertEqual(try a.probabilities(features: x, count: 1), try b.probabilities(features: x, count: 1))
    }
}
