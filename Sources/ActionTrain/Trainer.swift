import ActionRuntime
import Foundation
import PoseCore

/// A source of training batches. `TensorSet` copies fixed features; an augmenting source
/// builds fresh features for every epoch from raw pose windows.
public protocol BatchSource {
    var count: Int { get }
    var valuesPerWindow: Int { get }
    /// Writes the windows at `indices` for `epoch` (1-based): `features [indices.count,
    /// valuesPerWindow]` and `labels [indices.count]`. Must be deterministic given its inputs
    /// (a resumed run refills the same batches).
    func fill(
        indices: ArraySlice<Int>, epoch: Int, features: UnsafeMutablePointer<Float>, labels: UnsafeMutablePointer<Int32>)
}

/// Training data in network-input form: `features [count, valuesPerWindow]`, `labels [count]`.
public struct TensorSet: Sendable, BatchSource {
    public var features: [Float]
    public var labels: [Int32]
    public let valuesPerWindow: Int
    public var count: Int { labels.count }

    public func fill(
        indices: ArraySlice<Int>, epoch: Int, features: UnsafeMutablePointer<Float>, labels: UnsafeMutablePointer<Int32>
    ) {
        let V = valuesPerWindow
        self.features.withUnsafeBufferPointer { src in
            self.labels.withUnsafeBufferPointer { y in
                for (k, i) in indices.enumerated() {
                    (features + k * V).update(from: src.baseAddress! + i * V, count: V)
                    labels[k] = y[i]
                }
            }
        }
    }

    public init(features: [Float], labels: [Int32], valuesPerWindow: Int) {
        precondition(features.count == labels.count * valuesPerWindow, "features shape")
        self.features = features
        self.labels = labels
        self.valuesPerWindow = valuesPerWindow
    }
}

/// One line of the per-epoch log (`log.jsonl`).
public struct EpochRecord: Codable, Hashable, Sendable {
    public var epoch: Int
    /// Mean training loss over the epoch's batches (smoothed and class-weighted as configured).
    public var trainLoss: Double
    /// Share of training windows classified correctly during the epoch (before each update).
    public var trainAccuracy: Double
    /// Plain mean cross-entropy and accuracy on the validation windows, after the epoch.
    public var validationLoss: Double?
    public var validationAccuracy: Double?
    /// Wall-clock seconds of the epoch's training steps (validation excluded).
    public var seconds: Double
    public var windowsPerSecond: Double
    /// Learning rate of the epoch's last step.
    public var learningRate: Double?
}

/// Where the current epoch stands, for progress displays.
public struct BatchProgress: Sendable {
    public var epoch: Int, epochs: Int
    /// Batches done in this epoch, of `batches`.
    public var batch: Int, batches: Int
    /// Windows done in this epoch, of `windows`.
    public var seen: Int, windows: Int
    /// Seconds spent in this epoch so far.
    public var seconds: Double
    /// Running mean loss and accuracy of this epoch.
    public var loss: Double, accuracy: Double
}

/// How `fit` ended.
public enum TrainingOutcome: Equatable, Sendable {
    /// All epochs ran.
    case finished
    /// `monitor` did not improve for `patience` epochs; training stopped after `epoch`.
    case stoppedEarly(epoch: Int)
    /// `shouldStop` returned true; `state()` continues before batch `batch` (0-based) of `epoch`.
    case interrupted(epoch: Int, batch: Int)
}

/// Seconds spent in each phase of the training steps, summed over the run (for the benchmark).
public struct PhaseTimings: Sendable {
    public var gather = 0.0, forward = 0.0, loss = 0.0, backward = 0.0, optimizer = 0.0
    public var steps = 0
    public var total: Double { gather + forward + loss + backward + optimizer }
}

/// Mini-batch training of a network with softmax cross-entropy: seeded shuffling, the
/// configured optimiser, schedule and clipping, validation after every epoch, the best epoch's
/// parameters kept, early stopping, divergence detection, and a state that can be saved and
/// restored at any batch boundary (`state()`, `restore(_:)`) to continue bit-identically.
///
/// Randomness: epoch e shuffles with `SeededGenerator(derive(seed, e))`; dropout draws from
/// `derive(seed ^ 0xD50, e)`. Nothing else is random during training.
public final class Trainer {
    public let network: Network
    public let config: TrainingConfig
    public let optimizer: Optimizer
    public let loss: SoftmaxCrossEntropy
    public private(set) var progress = TrainingProgress()
    public private(set) var bestParameters: [Float]?
    /// The exponential moving average of the parameters (`config.averageEpochs > 0`), updated
    /// after every step; nil before the first step or when averaging is off.
    public private(set) var averagedParameters: [Float]?
    public private(set) var timings = PhaseTimings()

    /// `classWeights` are the resolved per-class weights (see
    /// `TrainingConfig.ClassWeights.weights(labels:classes:)`), or nil for none.
    public init(network: Network, config: TrainingConfig, classWeights: [Float]? = nil) {
        self.network = network
        self.config = config
        optimizer = config.makeOptimizer(parameterCount: network.parameterCount)
        loss = SoftmaxCrossEntropy(labelSmoothing: config.labelSmoothing, classWeights: classWeights)
    }

    /// True when every epoch has run or early stopping ended the run.
    public var isFinished: Bool { progress.stoppedEarly || progress.epoch > config.epochs }

    /// A snapshot of everything needed to continue: parameters, optimiser state, position.
    public func state() -> TrainerState {
        TrainerState(
            progress: progress,
            parameters: Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount)),
            optimizer: optimizer.state(), bestParameters: bestParameters, averagedParameters: averagedParameters)
    }

    /// Continues from `state` (taken from a trainer with the same network and optimiser).
    public func restore(_ state: TrainerState) throws {
        let n = network.parameterCount
        guard state.parameters.count == n else {
            throw TrainingError.incompatibleState("\(state.parameters.count) parameters stored, the network has \(n)")
        }
        if let best = state.bestParameters, best.count != n {
            throw TrainingError.incompatibleState("\(best.count) best parameters stored, the network has \(n)")
        }
        if let average = state.averagedParameters, average.count != n {
            throw TrainingError.incompatibleState("\(average.count) averaged parameters stored, the network has \(n)")
        }
        guard state.progress.epoch >= 1, state.progress.batch >= 0 else {
            throw TrainingError.incompatibleState("invalid position epoch \(state.progress.epoch), batch \(state.progress.batch)")
        }
        try optimizer.restore(state.optimizer)
        state.parameters.withUnsafeBufferPointer { network.load(parameters: $0) }
        progress = state.progress
        bestParameters = state.bestParameters
        averagedParameters = state.averagedParameters
        // The early-stopping decision is re-evaluated with this trainer's config, so that a
        // resumed run given a larger patience (or none) continues.
        if progress.stoppedEarly && (config.patience == 0 || progress.epochsWithoutImprovement < config.patience) {
            progress.stoppedEarly = false
        }
    }

    /// Trains until `config.epochs` epochs are done, early stopping ends the run, or
    /// `shouldStop()` (checked before every batch) returns true. Calls `onBatch` after each
    /// step and `onEpoch` after each epoch's validation and bookkeeping (so `state()` there is
    /// an epoch-boundary checkpoint). When the run ends (not when interrupted) and validation
    /// data was given, the network is left with the parameters of the best epoch.
    ///
    /// Throws `TrainingError.diverged` when a batch loss is NaN or infinite, before that
    /// batch's update (the state of the last `onEpoch` is the last good one).
    @discardableResult
    public func fit(
        train: BatchSource, validation: TensorSet?, shouldStop: () -> Bool = { false },
        onBatch: (BatchProgress) -> Void = { _ in }, onEpoch: (EpochRecord) throws -> Void = { _ in }
    ) throws -> TrainingOutcome {
        guard train.count > 0 else { throw TrainingError.noTrainingData("no training windows") }
        guard train.valuesPerWindow == network.inputShape.count else {
            throw TrainingError.noTrainingData(
                "the training windows have \(train.valuesPerWindow) values, the network takes \(network.inputShape.count)")
        }
        let hasValidation = (validation?.count ?? 0) > 0
        if config.patience > 0 && !hasValidation {
            throw TrainingError.needsValidation(
                "early stopping (patience \(config.patience)) needs validation windows; set validationFraction > 0 or give a validation split")
        }
        let N = train.count, V = train.valuesPerWindow, K = network.classCount, B = config.batchSize
        let batches = (N + B - 1) / B
        let schedule = LearningRateSchedule(config, stepsPerEpoch: batches)
        var order = [Int](repeating: 0, count: N)
        var batchX = [Float](repeating: 0, count: B * V)
        var batchY = [Int32](repeating: 0, count: B)
        let M = network.memberCount  // > 1: a multi-stream network, each member trained on its own loss
        var dlogits = [Float](repeating: 0, count: M * B * K)
        let P = network.parameterCount
        let clip = config.gradientClipNorm
        let averaging = config.averageEpochs > 0 ? exp(-1 / (config.averageEpochs * Double(batches))) : 0

        while progress.epoch <= config.epochs && !progress.stoppedEarly {
            let epoch = progress.epoch
            for i in 0..<N { order[i] = i }
            var g = SeededGenerator(seed: SeededGenerator.derive(config.seed, UInt64(epoch)))
            order.seededShuffle(using: &g)
            var mode = ForwardMode.training(
                seed: progress.dropoutState ?? SeededGenerator.derive(config.seed ^ 0xD50, UInt64(epoch)))
            let start = DispatchTime.now().uptimeNanoseconds
            let secondsBefore = progress.seconds
            func elapsed() -> Double { secondsBefore + Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

            while progress.batch < batches {
                if shouldStop() {
                    progress.seconds = elapsed()
                    progress.dropoutState = mode.random.state
                    return .interrupted(epoch: epoch, batch: progress.batch)
                }
                let s = progress.batch * B, n = min(B, N - s)
                var t0 = DispatchTime.now().uptimeNanoseconds
                func lap(_ phase: WritableKeyPath<PhaseTimings, Double>) {
                    let t = DispatchTime.now().uptimeNanoseconds
                    timings[keyPath: phase] += Double(t - t0) / 1e9
                    t0 = t
                }
                batchX.withUnsafeMutableBufferPointer { x in
                    batchY.withUnsafeMutableBufferPointer { y in
                        train.fill(indices: order[s..<(s + n)], epoch: epoch, features: x.baseAddress!, labels: y.baseAddress!)
                    }
                }
                network.zeroGradients()
                lap(\.gather)
                var correct = 0
                let logits = batchX.withUnsafeBufferPointer { x in
                    M > 1 ? network.forwardMembers(x.baseAddress!, batch: n, mode: &mode) : network.forward(x.baseAddress!, batch: n, mode: &mode)
                }
                lap(\.forward)
                let l = batchY.withUnsafeBufferPointer { y in
                    dlogits.withUnsafeMutableBufferPointer { d in
                        memberLosses(logits, labels: y.baseAddress!, batch: n, classes: K, members: M, dlogits: d.baseAddress!, correct: &correct)
                    }
                }
                guard l.isFinite else { throw TrainingError.diverged(epoch: epoch, batch: progress.batch + 1, loss: l) }
                lap(\.loss)
                dlogits.withUnsafeBufferPointer { d in
                    if M > 1 { network.backwardMembers(d.baseAddress!, batch: n) } else { network.backward(d.baseAddress!, batch: n) }
                }
                lap(\.backward)
                if clip > 0 { GradientClipping.clip(network.gradients, count: P, maxNorm: clip, threads: config.threads) }
                optimizer.learningRate = schedule.rate(step: progress.globalStep)
                optimizer.update(parameters: network.parameters, gradients: network.gradients, count: P)
                if averaging > 0 { updateAverage(decay: averaging) }
                lap(\.optimizer)
                timings.steps += 1

                progress.batch += 1
                progress.globalStep += 1
                progress.lossSum += Double(l) * Double(n)
                progress.correct += correct
                progress.seen += n
                onBatch(
                    BatchProgress(
                        epoch: epoch, epochs: config.epochs, batch: progress.batch, batches: batches, seen: progress.seen,
                        windows: N, seconds: elapsed(), loss: progress.lossSum / Double(progress.seen),
                        accuracy: Double(progress.correct) / Double(progress.seen)))
            }

            let seconds = elapsed()
            var record = EpochRecord(
                epoch: epoch, trainLoss: progress.lossSum / Double(N), trainAccuracy: Double(progress.correct) / Double(N),
                validationLoss: nil, validationAccuracy: nil, seconds: seconds, windowsPerSecond: Double(N) / seconds,
                learningRate: schedule.rate(step: max(0, progress.globalStep - 1)))
            if let validation, hasValidation {
                let (vl, va) = withAveragedParameters { evaluate(validation) }
                record.validationLoss = vl
                record.validationAccuracy = va
                let value = config.monitor == .validationLoss ? vl : va
                let improved: Bool
                if let best = progress.bestMetric {
                    improved = config.monitor == .validationLoss ? value < best - config.minDelta : value > best + config.minDelta
                } else {
                    improved = true
                }
                if improved {
                    progress.bestMetric = value
                    progress.bestEpoch = epoch
                    progress.epochsWithoutImprovement = 0
                    bestParameters = averagedParameters ?? Array(UnsafeBufferPointer(start: network.parameters, count: P))
                } else {
                    progress.epochsWithoutImprovement += 1
                    if config.patience > 0 && progress.epochsWithoutImprovement >= config.patience {
                        progress.stoppedEarly = true
                    }
                }
            }
            progress.records.append(record)
            progress.epoch += 1
            progress.batch = 0
            progress.lossSum = 0
            progress.correct = 0
            progress.seen = 0
            progress.seconds = 0
            progress.dropoutState = nil
            try onEpoch(record)
        }
        if let kept = bestParameters ?? averagedParameters {
            kept.withUnsafeBufferPointer { network.load(parameters: $0) }
        }
        return progress.stoppedEarly ? .stoppedEarly(epoch: progress.epoch - 1) : .finished
    }

    /// `avg ← avg + (1 − β)(θ − avg)`, elementwise over the parameter arena; the first step
    /// starts the average at θ.
    private func updateAverage(decay beta: Double) {
        let P = network.parameterCount, theta = network.parameters
        guard averagedParameters != nil else {
            averagedParameters = Array(UnsafeBufferPointer(start: theta, count: P))
            return
        }
        let w = Float(1 - beta)
        averagedParameters!.withUnsafeMutableBufferPointer { avg in
            for i in 0..<P { avg[i] += w * (theta[i] - avg[i]) }
        }
    }

    /// Runs `body` with the averaged parameters loaded (when there are any), then puts the
    /// training parameters back.
    private func withAveragedParameters<T>(_ body: () -> T) -> T {
        guard let average = averagedParameters else { return body() }
        let P = network.parameterCount
        let current = Array(UnsafeBufferPointer(start: network.parameters, count: P))
        average.withUnsafeBufferPointer { network.load(parameters: $0) }
        defer { current.withUnsafeBufferPointer { network.load(parameters: $0) } }
        return body()
    }

    /// Mean plain cross-entropy (no smoothing, no class weights) and accuracy over a set,
    /// in inference mode.
    /// The loss of a batch's logits `[M, B, K]` (M = 1: a plain network): the mean over the
    /// members of each member's loss, its gradient in `dlogits` (each member's own, over M);
    /// `correct` counts the windows whose mean member probability peaks at the label.
    func memberLosses(
        _ logits: UnsafePointer<Float>, labels: UnsafePointer<Int32>, batch n: Int, classes K: Int, members M: Int,
        dlogits: UnsafeMutablePointer<Float>, correct: inout Int
    ) -> Float {
        guard M > 1 else {
            for b in 0..<n where argmax(logits + b * K, K) == Int(labels[b]) { correct += 1 }
            return loss.lossAndGradient(logits: logits, labels: labels, batch: n, classes: K, dlogits: dlogits)
        }
        var total: Float = 0, mean = [Float](repeating: 0, count: n * K)
        for m in 0..<M {
            let z = logits + m * n * K, d = dlogits + m * n * K
            total += loss.lossAndGradient(logits: z, labels: labels, batch: n, classes: K, dlogits: d) / Float(M)
            for i in 0..<(n * K) { d[i] /= Float(M) }
            var p = Array(UnsafeBufferPointer(start: z, count: n * K))
            p.withUnsafeMutableBufferPointer { Inference.softmax($0.baseAddress!, rows: n, classes: K) }
            for i in 0..<(n * K) { mean[i] += p[i] }
        }
        mean.withUnsafeBufferPointer { p in for b in 0..<n where argmax(p.baseAddress! + b * K, K) == Int(labels[b]) { correct += 1 } }
        return total
    }

    public func evaluate(_ set: TensorSet) -> (loss: Double, accuracy: Double) { Self.evaluate(network, set) }

    /// Mean cross-entropy and accuracy of `network` on `set`.
    public static func evaluate(_ network: Network, _ set: TensorSet) -> (loss: Double, accuracy: Double) {
        let probabilities = Inference.probabilities(network, features: set.features, count: set.count)
        let K = network.classCount
        var lossSum = 0.0, correct = 0
        for i in 0..<set.count {
            let y = Int(set.labels[i])
            lossSum -= log(max(Double(probabilities[i * K + y]), 1e-12))
            var best = 0
            for k in 1..<K where probabilities[i * K + k] > probabilities[i * K + best] { best = k }
            if best == y { correct += 1 }
        }
        return (lossSum / Double(set.count), Double(correct) / Double(set.count))
    }
}

@inline(__always)
func argmax(_ p: UnsafePointer<Float>, _ n: Int) -> Int {
    var best = 0
    for k in 1..<n where p[k] > p[best] { best = k }
    return best
}
