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

    /// Evidence whose windows are all right has no best temperature: its log loss falls for ever
    /// as the logits sharpen. Before, the fit went to its bound, T = 10⁻³ (the tiny fixture's
    /// default model: logits of 10⁵ and more, past Float16's range); now it stops where the
    /// widest gap between two logits of a window is 87.3 (`SoftmaxRegression.largestLogitGap`),
    /// for one set of logits and for branches whose probabilities are averaged alike, and never
    /// sharpens logits already that wide.
    func testAllRightEvidenceIsSharpenedOnlyToTheWidestGapFloat32Holds() {
        var g = SeededGenerator(seed: 5)
        let n = 60, K = 3
        var logits: [Float] = [], labels: [Int32] = []
        for i in 0..<n {
            var row = (0..<K).map { _ in Float(g.nextSymmetric(1)) }
            row[i % K] = row.max()! + 0.5 + Float(g.nextUnitDouble())
            logits += row
            labels.append(Int32(i % K))
        }
        let gap = Double((0..<n).map { r in logits[(r * K)..<((r + 1) * K)].max()! - logits[(r * K)..<((r + 1) * K)].min()! }.max()!)
        let c = ModelCalibration.fit(ModelCalibration.Evidence(logits: logits, labels: labels, classes: K, source: "outOfFold"))
        XCTAssertEqual(SoftmaxRegression.largestLogitGap, 87.336, accuracy: 1e-3)
        XCTAssertEqual(c.temperature, gap / SoftmaxRegression.largestLogitGap, accuracy: 1e-9 * c.temperature)
        XCTAssertLessThan(c.logLossAfter, c.logLossBefore)
        let branches = ModelCalibration.fit(ModelCalibration.Evidence(logits: logits, labels: labels, classes: K, source: "outOfFold", branches: [logits, logits]))
        // (The golden-section search stops a little short of the bound, where the mean
        // probabilities already round to 0 and 1 in float32 and the loss is flat.)
        XCTAssertGreaterThanOrEqual(branches.temperature, gap / SoftmaxRegression.largestLogitGap * (1 - 1e-9))
        XCTAssertLessThan(branches.temperature, 1.01 * gap / SoftmaxRegression.largestLogitGap)
        let wide = logits.map { $0 * Float(200 / gap) }
        XCTAssertEqual(ModelCalibration.fit(ModelCalibration.Evidence(logits: wide, labels: labels, classes: K, source: "outOfFold")).temperature, 1)
    }

    /// One window wrong by 1,500 logits (its log loss beyond the reports' clip at any sensible
    /// temperature) does not decide the temperature: the fit is that of the other windows, where
    /// over the unclipped loss it flattened the model to near uniform.
    func testAWindowWrongByAThousandLogitsDoesNotFlattenTheModel() {
        let e = Self.overconfident(n: 600, classes: 3, sharpness: 2, seed: 4)
        let clean = ModelCalibration.fit(e)
        XCTAssertEqual(clean.temperature, 2, accuracy: 0.25, "the labels were drawn at sharpness 1")
        XCTAssertEqual(ModelCalibration.clippedScale(e.logits, labels: e.labels, classes: 3), SoftmaxRegression.logitScale(e.logits, labels: e.labels, weights: .init(repeating: 1, count: 600), classes: 3), "no outlier: the plain fit")
        var bad = e
        bad.logits += [1500, 0, 0]
        bad.labels.append(2)
        let unclipped = 1 / SoftmaxRegression.logitScale(bad.logits, labels: bad.labels, weights: .init(repeating: 1, count: 601), classes: 3)
        XCTAssertGreaterThan(unclipped, 5, "over the unclipped loss the one window flattens the model")
        let c = ModelCalibration.fit(bad)
        XCTAssertEqual(c.temperature, clean.temperature, accuracy: 1e-9)
        XCTAssertLessThan(c.logLossAfter, c.logLossBefore)
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

    /// Each member's log-probabilities (`memberLogProbabilities`) are those of the member's
    /// layers run alone on its own parameters (members hold theirs in member order), and a
    /// network with other member weights (`weighted`) computes `Σ_m w_m ℓ_m` of them.
    func testMemberLogProbabilitiesAreEachMembersOwnAndWeightsCombineThem() throws {
        let shape = Shape(time: 3, channels: 4)
        let first: [LayerSpec] = [.flatten, .linear(inputs: 12, outputs: 5)]
        let second: [LayerSpec] = [.flatten, .linear(inputs: 12, outputs: 8), .relu, .linear(inputs: 8, outputs: 5)]
        let network = try Network(layers: [.averageLogProbabilities([first, second], weights: [0.5, 0.5])], input: shape)
        var g = SeededGenerator(seed: 11)
        let values = (0..<network.parameterCount).map { _ in Float(g.nextGaussian()) }
        values.withUnsafeBufferPointer { network.load(parameters: $0) }
        let x = (0..<(30 * shape.count)).map { _ in Float(g.nextGaussian()) }
        let members = try ModelCalibration.memberLogProbabilities(network, features: x, count: 30)
        XCTAssertEqual(members.count, 2)
        var offset = 0
        for (m, layers) in [first, second].enumerated() {
            let alone = try Network(layers: layers, input: shape)
            Array(values[offset..<(offset + alone.parameterCount)]).withUnsafeBufferPointer { alone.load(parameters: $0) }
            offset += alone.parameterCount
            let z = Inference.logits(alone, features: x, count: 30)
            for r in 0..<30 {
                let row = z[(r * 5)..<((r + 1) * 5)].map(Double.init)
                let lse = log(row.map { exp($0 - row.max()!) }.reduce(0, +)) + row.max()!
                for k in 0..<5 { XCTAssertEqual(Double(members[m][r * 5 + k]), row[k] - lse, accuracy: 1e-4, "member \(m)") }
            }
        }
        let combined = Inference.logits(try ModelCalibration.weighted(network, weights: [0.8, 0.3]), features: x, count: 30)
        for j in combined.indices { XCTAssertEqual(combined[j], 0.8 * members[0][j] + 0.3 * members[1][j], accuracy: 1e-4) }
        XCTAssertEqual(try ModelCalibration.memberLogProbabilities(try Network(layers: first, input: shape), features: x, count: 30), [])
        XCTAssertThrowsError(try ModelCalibration.weighted(network, weights: [1, 0])) { XCTAssertTrue("\($0)".contains("positive and finite"), "\($0)") }
    }

    /// Member weights fitted on evidence: an informative member gets the weight that calibrates
    /// it and a member of noise a weight near the range's floor; the fit is a minimum of the log
    /// loss (finite differences); two identical members share the one temperature's scale.
    func testMemberWeightsMinimiseTheLogLossAndTrustTheInformativeMember() throws {
        let K = 4, n = 3000
        let drawn = Self.overconfident(n: n, classes: K, sharpness: 2, seed: 21)
        var g = SeededGenerator(seed: 22)
        func logSoftmax(_ z: [Float]) -> [Float] {
            (0..<n).flatMap { r -> [Float] in
                let row = z[(r * K)..<((r + 1) * K)].map(Double.init), top = row.max()!
                let lse = log(row.map { exp($0 - top) }.reduce(0, +)) + top
                return row.map { Float($0 - lse) }
            }
        }
        let informative = logSoftmax(drawn.logits), noise = logSoftmax((0..<(n * K)).map { _ in Float(2 * g.nextGaussian()) })
        let e = ModelCalibration.Evidence(logits: drawn.logits, labels: drawn.labels, classes: K, source: "validation", members: [informative, noise])
        let w = try XCTUnwrap(ModelCalibration.memberWeights(e))
        XCTAssertEqual(w[0], 0.5, accuracy: 0.05, "logits twice as sharp as the labels: weight 1/2")
        XCTAssertLessThan(w[1], 0.02, "noise is not trusted")
        func loss(_ w: [Double]) -> Double {
            let z = (0..<(n * K)).map { Float(w[0]) * informative[$0] + Float(w[1]) * noise[$0] }
            return ModelCalibration.scores(z, labels: e.labels, classes: K, scale: 1).logLoss
        }
        let best = loss(w)
        for (m, step) in [(0, 0.02), (0, -0.02), (1, 0.02)] {
            var moved = w
            moved[m] += step
            XCTAssertGreaterThan(loss(moved), best, "member \(m) moved by \(step)")
        }
        if w[1] > ModelCalibration.weightRange.lowerBound + 0.01 {
            var moved = w
            moved[1] -= 0.01
            XCTAssertGreaterThan(loss(moved), best)
        }
        let twins = ModelCalibration.Evidence(logits: drawn.logits, labels: drawn.labels, classes: K, source: "validation", members: [informative, informative])
        let shared = try XCTUnwrap(ModelCalibration.memberWeights(twins))
        let scale = 1 / ModelCalibration.fit(ModelCalibration.Evidence(logits: informative, labels: drawn.labels, classes: K, source: "validation")).temperature
        XCTAssertEqual(shared[0] + shared[1], scale, accuracy: 1e-3 * scale)
        XCTAssertNil(ModelCalibration.memberWeights(drawn), "no members: nothing to weigh")
        // calibration.json keeps the members' evidence: read back, the same numbers.
        let back = try ModelCalibration.evidence(fromJSON: try ModelCalibration.evidenceJSON(e, calibration: ModelCalibration.fit(e)))
        XCTAssertEqual(back.logits, e.logits)
        XCTAssertEqual(back.labels, e.labels)
        XCTAssertEqual(back.classes, K)
        XCTAssertEqual(back.members, e.members)
        XCTAssertEqual(ModelCalibration.memberWeights(back), w)
    }

    /// A network that averages probabilities (an ensemble, a test-time flip) takes the
    /// temperature in each branch: its probabilities are `mean_b softmax(z_b / T)` of the
    /// branches' logits (`branchLogits`: each member's, the body's on the window and on its
    /// mirror image), and the fitted scale minimises that mean's log loss.
    func testNetworksThatAverageProbabilitiesDivideEachBranch() throws {
        let shape = Shape(time: 2, channels: 3)
        let first: [LayerSpec] = [.flatten, .linear(inputs: 6, outputs: 4)]
        let second: [LayerSpec] = [.averageLogProbabilities([first, [.flatten, .linear(inputs: 6, outputs: 5), .relu, .linear(inputs: 5, outputs: 4)]], weights: [0.5, 0.5])]
        var g = SeededGenerator(seed: 31)
        let x = (0..<(50 * shape.count)).map { _ in Float(g.nextGaussian()) }
        let networks = [
            try Network(layers: [.averageProbabilities([first, second])], input: shape),
            try Network(layers: [.flipAverage(channels: [1, 0, 2], signs: [1, 1, -1], body: second)], input: shape),
        ]
        for network in networks {
            let values = (0..<network.parameterCount).map { _ in Float(2 * g.nextGaussian()) }
            values.withUnsafeBufferPointer { network.load(parameters: $0) }
            let branches = try ModelCalibration.branchLogits(network, features: x, count: 50)
            XCTAssertEqual(branches.count, 2)
            // The branches reproduce the network; the scaled network divides each of them.
            let p = Inference.probabilities(network, features: x, count: 50)
            let mean = ModelCalibration.branchProbabilities(branches, classes: 4, scale: 1)
            for j in p.indices { XCTAssertEqual(p[j], mean[j], accuracy: 1e-5) }
            let scaled = try ModelCalibration.scaled(network, temperature: 2.5)
            let q = Inference.probabilities(scaled, features: x, count: 50)
            let expected = ModelCalibration.branchProbabilities(branches, classes: 4, scale: 1 / 2.5)
            for j in q.indices { XCTAssertEqual(q[j], expected[j], accuracy: 1e-5) }
            XCTAssertNotEqual(q, p)
            XCTAssertEqual(Inference.probabilities(network, features: x, count: 50), p, "the original is unchanged")
            // A fit on labels drawn from the branches at T = 2 recovers about 2, at the minimum.
            let truth = ModelCalibration.branchProbabilities(branches, classes: 4, scale: 0.5)
            let labels = (0..<50).map { r -> Int32 in
                var u = Float(g.nextUnitDouble())
                for k in 0..<4 {
                    u -= truth[r * 4 + k]
                    if u < 0 { return Int32(k) }
                }
                return 3
            }
            let e = ModelCalibration.Evidence(
                logits: Inference.logits(network, features: x, count: 50), labels: labels, classes: 4, source: "validation", branches: branches)
            let c = ModelCalibration.fit(e)
            func loss(_ t: Double) -> Double { ModelCalibration.scores(e, scale: 1 / t).logLoss }
            XCTAssertEqual(loss(c.temperature), c.logLossAfter, accuracy: 1e-12)
            for step in [0.97, 1.03] { XCTAssertGreaterThan(loss(c.temperature * step), c.logLossAfter) }
            XCTAssertLessThanOrEqual(c.logLossAfter, c.logLossBefore)
        }
        XCTAssertEqual(try ModelCalibration.branchLogits(try Network(layers: first, input: shape), features: x, count: 50), [])
    }

    /// A network ending in another layer cannot take a temperature, nor an averaging layer after
    /// other layers; nor is a temperature ≤ 0 or infinite accepted.
    func testUnscalableNetworksAndTemperaturesAreRefused() throws {
        let shape = Shape(time: 2, channels: 2)
        let linear: [LayerSpec] = [.flatten, .linear(inputs: 4, outputs: 3)]
        let relu = try Network(layers: linear + [.relu], input: shape)
        let refusal = "its last layer is relu, not a linear or averageLogProbabilities layer a temperature can be folded into (or a lone averageProbabilities or flipAverage of such branches)"
        XCTAssertEqual(ModelCalibration.unscalable(relu), refusal)
        XCTAssertThrowsError(try ModelCalibration.scaled(relu, temperature: 2)) { XCTAssertEqual("\($0)", "cannot calibrate the model: " + refusal) }
        let nested = try Network(layers: [.averageProbabilities([linear, linear + [.relu]])], input: shape)
        XCTAssertEqual(ModelCalibration.unscalable(nested), refusal, "every branch must take it")
        let after = try Network(layers: [.relu, .averageProbabilities([linear, linear])], input: shape)
        XCTAssertTrue(ModelCalibration.unscalable(after)?.hasPrefix("its last layer is averageProbabilities after other layers") == true)
        XCTAssertNil(ModelCalibration.unscalable(try Network(layers: [.averageProbabilities([linear, linear])], input: shape)))
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

    /// An ensemble is calibrated too: each member's logits divided by the temperature fitted on
    /// the validation windows, before their probabilities are averaged.
    func testAnEnsembleIsCalibratedInEachMember() throws {
        var c = FitRunTests.quick
        c.ensemble = 2
        c.epochs = 2
        let (run, result) = try fit(c)
        let calibration = try XCTUnwrap(result.calibration, result.calibrationNote ?? "")
        XCTAssertEqual(calibration.evidence, "validation")
        let validation = try XCTUnwrap(run.data.validation)
        let model = try ActionModel(bytes: result.modelBytes)
        XCTAssertEqual(model.header.calibration, calibration)
        XCTAssertEqual(run.members.count, 2)
        let z = run.members.map { Inference.logits($0.network, features: validation.features, count: validation.count) }
        let expected = ModelCalibration.branchProbabilities(z, classes: 3, scale: 1 / calibration.temperature)
        let p = try model.probabilities(features: validation.features, count: validation.count)
        for i in p.indices { XCTAssertEqual(p[i], expected[i], accuracy: 2e-5) }
        XCTAssertNotEqual(calibration.temperature, 1)
    }
}
