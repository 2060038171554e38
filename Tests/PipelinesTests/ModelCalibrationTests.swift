import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Temperature scaling (`ModelCalibration`, `calibration temperature`): the temperature that
/// minimises the log loss, folded into the network so that every runtime reads calibrated
/// probabilities, with the predicted class unchanged; fitted by `fit` on the validation windows
/// or on out-of-fold predictions.
final class ModelCalibrationTests: XCTestCase {
    /// Logits `[n, K]` whose labels are drawn from `softmax(z / sharpness)`: the temperature
    /// that calibrates them is about `sharpness`.
    static func overconfident(n: Int, classes K: Int, sharpness: Double, seed: UInt64) -> ModelCalibration.Evidence {
        var g = SeededGenerator(seed: seed)
        var logits: [Float] = [], labels: [Int32] = []
        for _ in 0..<n {
            let u = (0..<K).map { _ in 2.5 * Double(g.nextGaussian()) }
            let e = u.map(exp), sum = e.reduce(0, +)
            var r = g.nextUnitDouble() * sum, y = K - 1
            for k in 0..<K {
                r -= e[k]
                if r < 0 {
                    y = k
                    break
                }
            }
            logits += u.map { Float(sharpness * $0) }
            labels.append(Int32(y))
        }
        return ModelCalibration.Evidence(logits: logits, labels: labels, classes: K, source: "validation")
    }

    /// The fitted temperature recovers the one the labels were drawn with, is a minimum of the
    /// log loss (finite differences on both sides), and lowers the log loss and the ECE.
    func testTheTemperatureMinimisesTheLogLossAndRecoversTheTrueOne() {
        for (sharpness, seed) in [(3.0, UInt64(1)), (0.5, 2)] {
            let e = Self.overconfident(n: 4000, classes: 5, sharpness: sharpness, seed: seed)
            let c = ModelCalibration.fit(e)
            XCTAssertEqual(c.temperature, sharpness, accuracy: 0.1 * sharpness, "sharpness \(sharpness)")
            XCTAssertEqual(c.evidence, "validation")
            XCTAssertEqual(c.windows, 4000)
            func loss(_ t: Double) -> Double { ModelCalibration.scores(e.logits, labels: e.labels, classes: 5, scale: 1 / t).logLoss }
            XCTAssertEqual(loss(c.temperature), c.logLossAfter, accuracy: 1e-12)
            XCTAssertEqual(loss(1), c.logLossBefore, accuracy: 1e-12)
            for step in [0.98, 1.02] { XCTAssertGreaterThan(loss(c.temperature * step), c.logLossAfter) }
            let slope = (loss(c.temperature * 1.0001) - loss(c.temperature / 1.0001)) / 0.0002
            XCTAssertEqual(slope, 0, accuracy: 1e-3, "a stationary point")
            XCTAssertLessThan(c.logLossAfter, c.logLossBefore - 0.05)
            XCTAssertLessThan(c.eceAfter, 0.03)
            XCTAssertGreaterThan(c.eceBefore, 0.1)
        }
    }

    /// Logits that are already calibrated keep a temperature of about 1.
    func testCalibratedLogitsKeepATemperatureOfAboutOne() {
        let c = ModelCalibration.fit(Self.overconfident(n: 4000, classes: 3, sharpness: 1, seed: 9))
        XCTAssertEqual(c.temperature, 1, accuracy: 0.08)
        XCTAssertLessThanOrEqual(c.logLossAfter, c.logLossBefore)
    }

    /// A temperature folded into a network ending in `linear` or in `averageLogProbabilities`:
    /// its logits are the original's divided by T (float rounding aside), its predicted classes
    /// the same, the original network unchanged.
    func testAScaledNetworkDividesTheLogitsAndKeepsTheArgmax() throws {
        let shape = Shape(time: 3, channels: 4)
        let linear: [LayerSpec] = [.flatten, .linear(inputs: 12, outputs: 5)]
        let members: [LayerSpec] = [.averageLogProbabilities([linear, [.flatten, .linear(inputs: 12, outputs: 8), .relu, .linear(inputs: 8, outputs: 5)]], weights: [0.5, 0.5])]
        var g = SeededGenerator(seed: 5)
        let x = (0..<(40 * shape.count)).map { _ in Float(g.nextGaussian()) }
        for layers in [linear, members] {
            let network = try Network(layers: layers, input: shape)
            // Every parameter random, biases too (initialisation leaves them 0).
            let values = (0..<network.parameterCount).map { _ in Float(g.nextGaussian()) }
            values.withUnsafeBufferPointer { network.load(parameters: $0) }
            let before = Inference.logits(network, features: x, count: 40)
            let scaled = try ModelCalibration.scaled(network, temperature: 2.5)
            XCTAssertEqual(Inference.logits(network, features: x, count: 40), before, "the original is unchanged")
            let after = Inference.logits(scaled, features: x, count: 40)
            for i in before.indices { XCTAssertEqual(after[i], before[i] / 2.5, accuracy: 1e-5 * max(1, abs(before[i]))) }
            XCTAssertEqual(Metrics.predictions(after, classes: 5), Metrics.predictions(before, classes: 5))
            XCTAssertNotEqual(after, before)
        }
        let network = try Network(layers: members, input: shape)
        XCTAssertEqual(
            (try ModelCalibration.scaled(network, temperature: 4)).specs.last,
            .averageLogProbabilities((members[0].kind as! AverageLogProbabilitiesKind).members, weights: [0.125, 0.125]))
    }

    /// A network whose last layer averages probabilities (ensembles, test-time flip) cannot take
    /// a temperature; nor is a temperature ≤ 0 or infinite accepted.
    func testUnscalableNetworksAndTemperaturesAreRefused() throws {
        let shape = Shape(time: 2, channels: 2)
        let linear: [LayerSpec] = [.flatten, .linear(inputs: 4, outputs: 3)]
        let average = try Network(layers: [.averageProbabilities([linear, linear])], input: shape)
        XCTAssertEqual(
            ModelCalibration.unscalable(average),
            "its last layer is averageProbabilities, not a linear or averageLogProbabilities layer a temperature can be folded into")
        XCTAssertThrowsError(try ModelCalibration.scaled(average, temperature: 2)) {
            XCTAssertEqual("\($0)", "cannot calibrate the model: its last layer is averageProbabilities, not a linear or averageLogProbabilities layer a temperature can be folded into")
        }
        let plain = try Network(layers: linear, input: shape)
        XCTAssertNil(ModelCalibration.unscalable(plain))
        for t in [0, -1, Double.infinity, .nan] {
            XCTAssertThrowsError(try ModelCalibration.scaled(plain, temperature: t)) { XCTAssertTrue("\($0)".contains("must be positive and finite"), "\($0)") }
        }
    }

    // MARK: - fit

    func fit(_ config: TrainingConfig, split: FitPipeline.Split? = nil) throws -> (FitRun, FitResult) {
        let dataset = try DatasetLoader.load(FitRunTests.fixture)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: dataset, config: config, folder: nil, split: split)
        XCTAssertEqual(try run.train(), .finished)
        return (run, try run.finish())
    }

    /// With validation windows the temperature is fitted on them: the model file records it,
    /// its probabilities are `softmax(z / T)` of the trained network's logits z, its predicted
    /// classes those of the network as trained (and of the same run with `calibration none`).
    func testFitCalibratesOnTheValidationWindows() throws {
        var c = FitRunTests.quick
        c.epochs = 6
        let (run, result) = try fit(c)
        let calibration = try XCTUnwrap(result.calibration)
        XCTAssertEqual(calibration.evidence, "validation")
        XCTAssertNil(calibration.folds)
        let validation = try XCTUnwrap(run.data.validation)
        XCTAssertEqual(calibration.windows, validation.count)
        let model = try ActionModel(bytes: result.modelBytes)
        XCTAssertEqual(model.header.calibration, calibration)
        let z = Inference.logits(run.training.network, features: validation.features, count: validation.count)
        let expected = ModelCalibration.probabilities(z, classes: 3, scale: 1 / calibration.temperature)
        let p = try model.probabilities(features: validation.features, count: validation.count)
        for i in p.indices { XCTAssertEqual(p[i], expected[i], accuracy: 2e-5) }
        XCTAssertEqual(ModelCalibration.fit(.init(logits: z, labels: validation.labels, classes: 3, source: "validation")), calibration)

        c.calibration = .none
        let (_, plain) = try fit(c)
        let uncalibrated = try ActionModel(bytes: plain.modelBytes)
        XCTAssertNil(uncalibrated.header.calibration)
        XCTAssertNil(plain.calibrationNote)
        let q = try uncalibrated.probabilities(features: validation.features, count: validation.count)
        XCTAssertEqual(Metrics.predictions(p, classes: 3), Metrics.predictions(q, classes: 3), "the predicted classes are unchanged")
        XCTAssertNotEqual(p, q)
    }

    /// Without validation windows the temperature is fitted on out-of-fold predictions: as many
    /// folds as `calibrationFolds` says, each window of the training split held out once.
    func testFitCalibratesOutOfFoldWithoutValidation() throws {
        var c = FitRunTests.quick
        c.validationFraction = 0
        c.calibrationFolds = 4
        var folds: [Int] = []
        let dataset = try DatasetLoader.load(FitRunTests.fixture)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: dataset, config: c, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        let result = try run.finish(onCalibrationFold: { f, k in
            XCTAssertEqual(k, 4)
            folds.append(f)
        })
        XCTAssertEqual(folds, [0, 1, 2, 3])
        let calibration = try XCTUnwrap(result.calibration)
        XCTAssertEqual(calibration.evidence, "outOfFold")
        XCTAssertEqual(calibration.folds, 4)
        XCTAssertEqual(calibration.windows, run.data.train.count, "every training window held out once (one window a sequence)")
        XCTAssertEqual(try ActionModel(bytes: result.modelBytes).header.calibration, calibration)
        let e = try XCTUnwrap(
            try ModelCalibration.outOfFold(dataset: dataset, train: run.data.trainIndices, config: c, input: run.data.input, folds: 4))
        XCTAssertEqual(ModelCalibration.fit(e), calibration, "deterministic")
        XCTAssertEqual(e.labels.sorted(), run.data.trainLabels.sorted())
        XCTAssertEqual(e.trained, 4)
        // Once enough windows are held out no further fold trains: the first fold's windows,
        // predicted by the same network as before.
        var trained: [Int] = []
        let first = try XCTUnwrap(
            try ModelCalibration.outOfFold(
                dataset: dataset, train: run.data.trainIndices, config: c, input: run.data.input, folds: 4, enough: 1,
                onFold: { f, _ in trained.append(f) }))
        XCTAssertEqual(trained, [0])
        XCTAssertEqual(first.trained, 1)
        XCTAssertEqual(first.folds, 4)
        XCTAssertEqual(first.labels.count, 6, "a quarter of the 24 windows")
        XCTAssertEqual(first.logits, Array(e.logits[..<(6 * 3)]))
    }

    /// An ensemble's probabilities are averaged: not calibrated, and `fit` says why.
    func testAnEnsembleIsNotCalibratedAndSaysWhy() throws {
        var c = FitRunTests.quick
        c.ensemble = 2
        c.epochs = 1
        let (_, result) = try fit(c)
        XCTAssertNil(result.calibration)
        XCTAssertEqual(
            result.calibrationNote,
            "not calibrated: its last layer is averageProbabilities, not a linear or averageLogProbabilities layer a temperature can be folded into")
        XCTAssertNil(try ActionModel(bytes: result.modelBytes).header.calibration)
    }
}
