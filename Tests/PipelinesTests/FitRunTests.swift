import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Fit runs through the library, on the tiny fixture (24 sequences of 10 frames, 3 classes):
/// determinism, cancellation and resume, folds, and run folders.
final class FitRunTests: XCTestCase {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tiny-natops.jsonl").path

    /// Small, fast settings for the fixture (those of the CLI tests).
    static var quick: TrainingConfig {
        var c = TrainingConfig()
        c.architecture = .mlp
        c.windowFrames = 10
        c.hidden = [16]
        c.batchSize = 4
        c.seed = 3
        c.threads = 1
        c.epochs = 3
        return c
    }

    func dataset() throws -> Dataset { try DatasetLoader.load(Self.fixture) }

    func folder() throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }

    func parameters(_ t: Training) -> [Float] {
        Array(UnsafeBufferPointer(start: t.network.parameters, count: t.network.parameterCount))
    }

    /// A whole run in memory: start, train, finish.
    func fit(_ config: TrainingConfig, dataset: Dataset, split: FitPipeline.Split? = nil) throws -> (FitRun, FitResult) {
        let run = try FitRun.start(dataPath: Self.fixture, dataset: dataset, config: config, folder: nil, split: split)
        XCTAssertEqual(try run.train(), .finished)
        return (run, try run.finish())
    }

    /// `streams` and `testTimeFlip` from a config: one model file holding flip averaging over a
    /// 3-member average, whose probabilities are the mean over (window, mirror image) of the
    /// mean over members of each member's softmax, each member a network of its own, its logits
    /// divided by the calibration's temperature.
    func testStreamsAndTestTimeFlipWriteOneModelThatAveragesProbabilities() throws {
        var c = Self.quick
        c.architecture = .tcn
        c.widths = [6]
        c.kernel = 3
        c.streams = [[.coordinates], [.motion, .mask], [.coordinates]]
        c.testTimeFlip = true
        c.centring = .mean
        c.memberAverage = .probabilities
        let (run, result) = try fit(c, dataset: try dataset())
        let model = try ActionModel(bytes: result.modelBytes)
        XCTAssertEqual(model.input.channels, [.coordinates, .motion, .mask])
        let flip = try XCTUnwrap(model.header.layers.first?.kind as? FlipAverageKind)
        XCTAssertEqual(model.header.layers.count, 1)
        let streams = try XCTUnwrap(flip.body.first?.kind as? AverageProbabilitiesKind)
        XCTAssertEqual(streams.members.count, 3)
        XCTAssertEqual(streams.members[0], streams.members[2])
        XCTAssertEqual(streams.members[1].first, .selectChannels(Array(24..<56)))  // motion (8 x 3) and mask (8) after coordinates

        let trained = run.training.network, shape = trained.inputShape
        func members(_ m: Int) throws -> Network {
            let tensors = trained.tensors.filter { $0.name.hasPrefix("layers.0.members.\(m).") }
            let net = try Network(layers: streams.members[m], input: shape)
            net.load(parameters: UnsafeBufferPointer(start: trained.parameters + tensors[0].offset, count: net.parameterCount))
            return net
        }
        let nets = try (0..<3).map(members)
        XCTAssertNotEqual(
            nets[0].predictLogits(Array(repeating: 0.1, count: shape.count), batch: 1),
            nets[2].predictLogits(Array(repeating: 0.1, count: shape.count), batch: 1), "members 0 and 2 start alike")
        let validation = try XCTUnwrap(run.data.validation)
        let n = min(validation.count, 6), C = shape.channels, K = model.classes.count
        let x = Array(validation.features[0..<(n * shape.count)])
        let mirror = try model.input.mirrorImage()
        var xm = x
        for r in 0..<(n * shape.time) { for c in 0..<C { xm[r * C + c] = mirror.signs[c] * x[r * C + mirror.channels[c]] } }
        // Calibrated: each member's logits, on the window and on its mirror image, divided by T.
        let t = try XCTUnwrap(model.header.calibration?.temperature)
        var expected = [Float](repeating: 0, count: n * K)
        for features in [x, xm] {
            for net in nets {
                let p = ModelCalibration.probabilities(Inference.logits(net, features: features, count: n), classes: K, scale: 1 / t)
                for i in expected.indices { expected[i] += p[i] / 6 }
            }
        }
        assertClose(try model.probabilities(features: x, count: n), expected, absolute: 1e-5, relative: 1e-4)
    }

    /// By default members are combined by their log-probabilities: the model's probabilities are
    /// the normalised geometric mean of the members' (each a network of its own), not their mean.
    func testMembersAreCombinedByTheGeometricMeanOfTheirProbabilities() throws {
        var c = Self.quick
        c.architecture = .tcn
        c.widths = [6]
        c.kernel = 3
        c.streams = [[.coordinates], [.motion, .mask]]
        c.centring = .mean
        c.calibration = .none  // equal weights, as trained (a temperature divides them: ModelCalibrationTests)
        let (run, result) = try fit(c, dataset: try dataset())
        let model = try ActionModel(bytes: result.modelBytes)
        let streams = try XCTUnwrap(model.header.layers.first?.kind as? AverageLogProbabilitiesKind)
        XCTAssertEqual(streams.weights, [0.5, 0.5])
        let trained = run.training.network, shape = trained.inputShape
        let nets = try (0..<2).map { m -> Network in
            let tensors = trained.tensors.filter { $0.name.hasPrefix("layers.0.members.\(m).") }
            let net = try Network(layers: streams.members[m], input: shape)
            net.load(parameters: UnsafeBufferPointer(start: trained.parameters + tensors[0].offset, count: net.parameterCount))
            return net
        }
        let validation = try XCTUnwrap(run.data.validation)
        let n = min(validation.count, 6), K = model.classes.count
        let x = Array(validation.features[0..<(n * shape.count)])
        let p = nets.map { Inference.probabilities($0, features: x, count: n) }
        var geometric = [Float](repeating: 0, count: n * K), arithmetic = geometric
        for i in 0..<n {
            let g = (0..<K).map { k in (p[0][i * K + k] * p[1][i * K + k]).squareRoot() }, total = g.reduce(0, +)
            for k in 0..<K {
                geometric[i * K + k] = g[k] / total
                arithmetic[i * K + k] = (p[0][i * K + k] + p[1][i * K + k]) / 2
            }
        }
        let got = try model.probabilities(features: x, count: n)
        assertClose(got, geometric, absolute: 1e-5, relative: 1e-4)
        XCTAssertGreaterThan(zip(got, arithmetic).map { abs($0 - $1) }.max()!, 1e-4, "not the mean of the probabilities")
    }

    /// `stgcn` end to end on the fixture (natops-8: two arms, not connected): training lowers the
    /// loss, the model file holds the graph convolutions over the skeleton's bones, and the loaded
    /// model gives the trained network's probabilities.
    func testAnSTGCNTrainsAndWritesItsGraphIntoTheModel() throws {
        var c = Self.quick
        c.architecture = .stgcn
        c.widths = [6]
        c.kernel = 3
        c.epochs = 6
        c.learningRate = 3e-3
        c.calibration = .none  // the model gives the trained network's probabilities
        let (run, result) = try fit(c, dataset: try dataset())
        let losses = run.progress.records.map(\.trainLoss)
        XCTAssertLessThan(losses.last!, losses.first! * 0.9, "\(losses)")
        let model = try ActionModel(bytes: result.modelBytes)
        let graph = try SkeletonGraph(skeleton: model.input.skeleton, edges: [])
        XCTAssertEqual(graph.edges.count, 6)
        let block = try XCTUnwrap(model.header.layers.dropFirst().first?.kind as? ResidualKind)
        XCTAssertEqual(block.body.first, .graphConv(joints: 8, inputs: 4, outputs: 6, kernel: 1, adjacency: graph.partitions))
        let validation = try XCTUnwrap(run.data.validation)
        let n = min(validation.count, 4), x = Array(validation.features[0..<(n * run.training.network.inputShape.count)])
        assertClose(
            try model.probabilities(features: x, count: n), Inference.probabilities(run.training.network, features: x, count: n),
            absolute: 1e-6)
    }

    func testTheSameSeedGivesIdenticalModelBytesAndTheFolderHoldsThem() throws {
        let d = try dataset()
        let (run, a) = try fit(Self.quick, dataset: d)
        XCTAssertEqual(run.data.trainIndices.count + run.data.validationIndices.count, 24)
        XCTAssertEqual(run.progress.records.count, 3)
        XCTAssertNil(a.modelPath)
        let (_, b) = try fit(Self.quick, dataset: d)
        XCTAssertEqual(a.modelBytes, b.modelBytes)
        var other = Self.quick
        other.seed = 4
        XCTAssertNotEqual(try fit(other, dataset: d).1.modelBytes, a.modelBytes)

        // With a run folder: the same model, the config as resolved, and every file of the run.
        let dir = try folder() + "/run"
        try checkRunFolder(dir, dataset: d, model: a.modelBytes)
        XCTAssertThrowsError(try RunFolder.create(dir, replacing: false)) { XCTAssertEqual($0 as? FitError, .runFolderNotEmpty(dir)) }
    }

    /// A fit of `quick` into `dir`: the model `model`, the config as resolved, and every file of the run.
    func checkRunFolder(_ dir: String, dataset d: Dataset, model: [UInt8]) throws {
        let kept = try FitRun.start(dataPath: Self.fixture, dataset: d, config: Self.quick, folder: try RunFolder.create(dir, replacing: false))
        var epochs: [Int] = [], batches = 0
        XCTAssertEqual(try kept.train(onBatch: { _ in batches += 1 }, onEpoch: { epochs.append($0.epoch) }), .finished)
        XCTAssertEqual(epochs, [1, 2, 3])
        XCTAssertEqual(batches, 3 * ((kept.data.train.count + 3) / 4))
        let result = try kept.finish()
        XCTAssertEqual(result.modelBytes, model)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/model.atm")), Data(model))
        let saved = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/config.json")))
        XCTAssertEqual(saved, Self.quick)
        XCTAssertEqual(try String(contentsOfFile: "\(dir)/log.jsonl", encoding: .utf8).split(separator: "\n").count, 3)
        for name in ["curves.svg", "checkpoint.atc", "report.txt", "report.json"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/\(name)"), name)
        }
        let report = try XCTUnwrap(result.validationReport)
        XCTAssertEqual(report.data.split, "validation")
        XCTAssertEqual(report.sequence?.samples, kept.data.validationIndices.count)
        XCTAssertEqual(try ReportJSON.read("\(dir)/report.json").sequence?.samples, report.sequence?.samples)
        // Issue 26 item 2: while the run lives, its folder is its own.
        for second in [{ _ = try RunFolder.create(dir, replacing: true) }, { _ = try FitRun.resume(folder: RunFolder(existing: dir)) }] {
            XCTAssertThrowsError(try second()) {
                guard case .runFolderInUse(dir, let holder) = $0 as? FitError else { return XCTFail("\($0)") }
                XCTAssertTrue(holder.hasPrefix("pid \(getpid()) on ") && holder.contains("actiontrain fit"), holder)
            }
        }
        withExtendedLifetime(kept) {}
    }

    /// Issue 37: without validation sequences, fit still writes report.txt and report.json, on
    /// the training sequences, labelled as such.
    func testWithoutValidationTheReportScoresTheTrainingSequencesLabelledSo() throws {
        let d = try dataset()
        var config = Self.quick
        config.validationFraction = 0
        let dir = try folder() + "/run"
        let run = try FitRun.start(dataPath: Self.fixture, dataset: d, config: config, folder: try RunFolder.create(dir, replacing: false))
        XCTAssertEqual(try run.train(), .finished)
        let result = try run.finish()
        XCTAssertEqual(run.data.trainIndices.count, 24)
        XCTAssertNil(result.validationReport)
        let report = try XCTUnwrap(result.trainingReport)
        XCTAssertEqual(report.data.split, "training")
        XCTAssertEqual(report.sequence?.samples, 24)
        XCTAssertEqual(try ReportJSON.read("\(dir)/report.json").data.split, "training")
        let text = try String(contentsOfFile: "\(dir)/report.txt", encoding: .utf8)
        XCTAssertTrue(text.hasPrefix(FitRun.trainingReportNote + "\n\nactiontrain evaluation report"), text)
        XCTAssertTrue(text.contains("not how it does on new data"))
    }

    func testACancelledRunStopsSavesItsStateAndResumesToTheSameModel() throws {
        let d = try dataset()
        let (_, straight) = try fit(Self.quick, dataset: d)
        let dir = try folder() + "/run"
        do {  // (the stopped run, which holds the folder's lock, ends here)
            let run = try FitRun.start(dataPath: Self.fixture, dataset: d, config: Self.quick, folder: try RunFolder.create(dir, replacing: false))
            var batches = 0
            let outcome = try run.train(shouldStop: { batches == 7 }, onBatch: { _ in batches += 1 })
            let perEpoch = (run.data.train.count + 3) / 4
            XCTAssertEqual(outcome, .interrupted(epoch: 7 / perEpoch + 1, batch: 7 % perEpoch))
            XCTAssertEqual(batches, 7)
            XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/model.atm"))
            XCTAssertEqual(try Checkpoint.read("\(dir)/checkpoint.atc").state.progress.batch, 7 % perEpoch)
        }
        do {
            let resumed = try FitRun.resume(folder: RunFolder(existing: dir))
            XCTAssertFalse(resumed.isFinished)
            XCTAssertEqual(try resumed.train(), .finished)
            XCTAssertEqual(try resumed.finish().modelBytes, straight.modelBytes)
        }
        XCTAssertTrue(try FitRun.resume(folder: RunFolder(existing: dir)).isFinished)
    }

    /// A run folder written before the `pairs`, `pyramid`, `members`, `ftpCoefficients` and
    /// `fillGaps` keys existed: its checkpoint's config lacks them, resumes (with their
    /// defaults, which is what the run did) and ends in the model of the uninterrupted run.
    func testARunFolderFromBeforeNewConfigKeysResumes() throws {
        let d = try dataset()
        let (_, straight) = try fit(Self.quick, dataset: d)
        let dir = try folder() + "/run"
        do {  // (the stopped run, which holds the folder's lock, ends here)
            let run = try FitRun.start(dataPath: Self.fixture, dataset: d, config: Self.quick, folder: try RunFolder.create(dir, replacing: false))
            var batches = 0
            _ = try run.train(shouldStop: { batches == 5 }, onBatch: { _ in batches += 1 })
        }
        // The checkpoint as an older build wrote it: the same bytes without the two keys.
        let path = "\(dir)/checkpoint.atc"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let H = (0..<8).reduce(0) { $0 | Int(bytes[16 + $1]) << (8 * $1) }
        var header = String(decoding: bytes[24..<(24 + H)], as: UTF8.self)
        for key in [#""pairs":[],"#, #""pyramid":[],"#, #""members":[],"#, #""ftpCoefficients":4,"#, #""fillGaps":false,"#] {
            XCTAssertTrue(header.contains(key), key)
            header = header.replacingOccurrences(of: key, with: "")
        }
        var old = Array(bytes[0..<12]) + [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: header.utf8.count >> (8 * $0)) }
        old += Array(header.utf8) + bytes[(24 + H)...]
        let crc = CRC32.checksum(Array(old[24...]))
        for k in 0..<4 { old[12 + k] = UInt8(truncatingIfNeeded: crc >> (8 * k)) }
        try Data(old).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try Checkpoint.read(path).config, Self.quick)

        let resumed = try FitRun.resume(folder: RunFolder(existing: dir))
        XCTAssertEqual(try resumed.train(), .finished)
        XCTAssertEqual(try resumed.finish().modelBytes, straight.modelBytes)
    }

    func testAFoldTrainsOnlyOnItsIndicesAndRunsRepeatInMemory() throws {
        let d = try dataset()
        let fold = stride(from: 0, to: 24, by: 2).map { $0 }
        var config = Self.quick
        config.validationFraction = 0.5  // ignored: the fold is the split
        let (run, _) = try fit(config, dataset: d, split: .init(train: fold, validation: []))
        XCTAssertEqual(run.data.trainIndices, fold)
        XCTAssertNil(run.data.validation)
        let windows = try WindowSet(dataset: d, indices: fold, spec: run.data.input, stride: config.windowStride, classes: d.classes)
        XCTAssertEqual(run.data.train.count, windows.count)
        // Sequences outside the fold do not matter: scrambling them leaves the weights as they were.
        var scrambled = d
        for i in 0..<24 where !fold.contains(i) {
            scrambled.sequences[i].coordinates = scrambled.sequences[i].coordinates.map { $0 * 3 + 1 }
            scrambled.sequences[i].label = d.classes[(d.classes.firstIndex(of: d.sequences[i].label!)! + 1) % 3]
        }
        let (again, _) = try fit(config, dataset: scrambled, split: .init(train: fold, validation: []))
        XCTAssertEqual(parameters(again.training), parameters(run.training))
        // ... while scrambling a sequence inside it changes them.
        scrambled.sequences[0].coordinates = scrambled.sequences[0].coordinates.map { $0 * 3 + 1 }
        let (changed, _) = try fit(config, dataset: scrambled, split: .init(train: fold, validation: []))
        XCTAssertNotEqual(parameters(changed.training), parameters(run.training))
    }

    func testTheStepsComposeWithoutARun() throws {
        let d = try dataset()
        let resolved = try FitPipeline.resolve(Self.quick, for: d)
        XCTAssertEqual(resolved.config, Self.quick)
        XCTAssertEqual(resolved.input.window.frames, 10)
        let split = try FitPipeline.split(d, config: resolved.config)
        XCTAssertEqual(Set(split.train).union(split.validation), Set(0..<24))
        XCTAssertTrue(Set(split.train).isDisjoint(with: split.validation))
        let data = try TrainingData(dataset: d, train: split.train, validation: split.validation, config: resolved.config, input: resolved.input)
        let training = try Training(config: resolved.config, data: data)
        XCTAssertEqual(try training.run(), .finished)
        // The same steps as FitRun.start: the same weights.
        let (run, _) = try fit(Self.quick, dataset: d)
        XCTAssertEqual(parameters(training), parameters(run.training))
        XCTAssertEqual(training.records.map(\.trainLoss), run.progress.records.map(\.trainLoss))
    }
}
