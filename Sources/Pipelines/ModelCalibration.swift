import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

/// Temperature scaling of a trained model (`calibration temperature`; Guo et al. 2017): one
/// temperature T divides the model's logits, `p = softmax(z / T)`, T chosen to minimise the log
/// loss of predictions the model did not train on (`Evidence`): the run's validation windows, or
/// without them out-of-fold predictions of the training split (`outOfFold`). Dividing every
/// logit of a window by the same T > 0 keeps their order, so the predicted class, hence the
/// accuracy, is unchanged (up to float rounding of exact ties).
///
/// The temperature is folded into the network (`scaled`): the last `linear` layer's weight and
/// bias, or the weights of a last `averageLogProbabilities`, divided by T. Everything that runs
/// the network (the runtime, streams and events, the Swift library, ONNX and Core ML exports)
/// reads calibrated probabilities with no change; the model file records what was done
/// (`ModelHeader.Calibration`, docs/format.md 3.6).
public enum ModelCalibration {
    /// Logits `[n, classes]` of windows a network did not train on, and their labels.
    public struct Evidence: Sendable {
        public var logits: [Float]
        public var labels: [Int32]
        public var classes: Int
        /// `validation` or `outOfFold` (docs/format.md 3.6).
        public var source: String
        public var folds: Int?
        /// Out of fold: how many of the `folds` were trained and predicted (fewer once
        /// `enoughWindows` were held out).
        public var trained: Int?

        public init(logits: [Float], labels: [Int32], classes: Int, source: String, folds: Int? = nil, trained: Int? = nil) {
            precondition(logits.count == labels.count * classes, "logits shape")
            self.logits = logits
            self.labels = labels
            self.classes = classes
            self.source = source
            self.folds = folds
            self.trained = trained
        }
    }

    /// The temperature that minimises the evidence's mean log loss (`SoftmaxRegression.logitScale`:
    /// bisection on the convex loss, T in [10⁻³, 10³]), with the evidence's log loss and
    /// expected calibration error (`Metrics.calibrationBins` bins) before and after it.
    public static func fit(_ e: Evidence) -> ModelHeader.Calibration {
        let ones = [Double](repeating: 1, count: e.labels.count)
        let scale = SoftmaxRegression.logitScale(e.logits, labels: e.labels, weights: ones, classes: e.classes)
        let before = scores(e.logits, labels: e.labels, classes: e.classes, scale: 1)
        let after = scores(e.logits, labels: e.labels, classes: e.classes, scale: scale)
        return ModelHeader.Calibration(
            temperature: 1 / scale, evidence: e.source, folds: e.folds, windows: e.labels.count, logLossBefore: before.logLoss,
            logLossAfter: after.logLoss, eceBefore: before.ece, eceAfter: after.ece)
    }

    /// The mean log loss and expected calibration error of `softmax(scale · logits)`.
    public static func scores(_ logits: [Float], labels: [Int32], classes K: Int, scale: Double) -> (logLoss: Double, ece: Double) {
        let p = probabilities(logits, classes: K, scale: scale)
        let ece = Metrics.calibration(truth: labels, predicted: Metrics.predictions(p, classes: K), probabilities: p, classes: K).ece
        return (Metrics.logLoss(truth: labels, probabilities: p, classes: K), ece)
    }

    /// `softmax(scale · z)` of each row of `logits [n, K]`, in double precision.
    public static func probabilities(_ logits: [Float], classes K: Int, scale: Double) -> [Float] {
        var out = [Float](repeating: 0, count: logits.count)
        for r in 0..<(K == 0 ? 0 : logits.count / K) {
            let z = (0..<K).map { scale * Double(logits[r * K + $0]) }
            let top = z.max()!
            let e = z.map { exp($0 - top) }, sum = e.reduce(0, +)
            for k in 0..<K { out[r * K + k] = Float(e[k] / sum) }
        }
        return out
    }

    /// Why `network` cannot take a temperature folded into it, or nil when it can: its last
    /// layer must be a `linear` or an `averageLogProbabilities` (a mean of probabilities, as
    /// in `ensemble` and `testTimeFlip` models, is not a function of scaled logits).
    public static func unscalable(_ network: Network) -> String? {
        guard let last = network.specs.last else { return "the network has no layers" }
        if last.kind is LinearKind || last.kind is AverageLogProbabilitiesKind { return nil }
        return "its last layer is \(last.typeName), not a linear or averageLogProbabilities layer a temperature can be folded into"
    }

    /// `network` with its logits divided by `temperature`: the weights of its last
    /// `averageLogProbabilities`, or its last `linear` layer's weight and bias, divided by it
    /// (a new network; `network` is unchanged). Throws when `unscalable` says why not.
    public static func scaled(_ network: Network, temperature: Double) throws -> Network {
        guard temperature > 0 && temperature.isFinite else {
            throw FitError.cannotCalibrate(reason: "the temperature must be positive and finite, got \(temperature)")
        }
        if let why = unscalable(network) { throw FitError.cannotCalibrate(reason: why) }
        var specs = network.specs
        var values = Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount))
        let last = specs.count - 1
        if let average = specs[last].kind as? AverageLogProbabilitiesKind {
            specs[last] = .averageLogProbabilities(average.members, weights: average.weights.map { Float(Double($0) / temperature) })
        } else {
            let prefix = "layers.\(last)."
            for t in network.tensors where t.name.hasPrefix(prefix) {
                for i in t.offset..<(t.offset + t.count) { values[i] = Float(Double(values[i]) / temperature) }
            }
        }
        let out = try Network(layers: specs, input: network.inputShape)
        values.withUnsafeBufferPointer { out.load(parameters: $0) }
        return out
    }

    /// Held-out windows that are enough evidence for one temperature: out of fold, no further
    /// fold is trained once this many are predicted (a large training split costs one fold's
    /// training, not k).
    public static let enoughWindows = 400

    /// Out-of-fold evidence for `config` on the `train` sequences of `dataset`: `folds`
    /// group-aware stratified folds (`Splits.kFold`, seeded by the config's seed; fewer when
    /// the sequences are fewer groups), for each in turn a network trained as the config says
    /// (no validation split, no calibration) on the other folds, and its logits on the fold's
    /// windows (the network as written: `FitPipeline.networkToWrite`), until `enough` windows
    /// are predicted. Nil when the sequences are fewer than 2 groups. `onFold(f, k)` is called
    /// before fold f (0-based) of k trains.
    public static func outOfFold(
        dataset: Dataset, train: [Int], config: TrainingConfig, input: InputSpec, folds: Int, enough: Int = enoughWindows,
        onFold: (Int, Int) -> Void = { _, _ in }
    ) throws -> Evidence? {
        let groups = Set(train.map { dataset.sequences[$0].group ?? "#\($0)" }).count
        let k = min(folds, groups)
        guard k >= 2 else { return nil }
        var c = config
        c.calibration = .none
        c.validationFraction = 0
        let parts = try Splits.kFold(dataset, indices: train, k: k, seed: config.seed).folds
        var logits: [Float] = [], labels: [Int32] = []
        var trained = 0
        for (f, part) in parts.enumerated() where labels.count < enough {
            onFold(f, k)
            trained += 1
            let data = try TrainingData(dataset: dataset, train: part.train, validation: [], config: c, input: input)
            let training = try Training(config: c, data: data)
            try training.run()
            let network = try FitPipeline.networkToWrite(training.network, config: c, input: input)
            let held = try TrainingData.tensors(dataset, part.test, input: input, stride: c.windowStride, useEvents: c.useEvents)
            logits += Inference.logits(network, features: held.features, count: held.count)
            labels += held.labels
        }
        return Evidence(logits: logits, labels: labels, classes: dataset.classes.count, source: "outOfFold", folds: k, trained: trained)
    }

    /// calibration.json of a run folder: the calibration as the model file records it, the
    /// class names' order aside, and its evidence (`labels [n]`, uncalibrated `logits [n][K]`),
    /// so that another calibration can be measured on the same predictions.
    public static func evidenceJSON(_ e: Evidence, calibration: ModelHeader.Calibration) throws -> Data {
        struct File: Encodable {
            var calibration: ModelHeader.Calibration
            var labels: [Int32]
            var logits: [[Float]]
        }
        let rows = (0..<e.labels.count).map { Array(e.logits[($0 * e.classes)..<(($0 + 1) * e.classes)]) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(File(calibration: calibration, labels: e.labels, logits: rows))
    }
}
