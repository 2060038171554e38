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
    /// The label of window `index` (without building its features).
    func label(at index: Int) -> Int32
    /// Writes the windows `range` as they are, without augmentation, in `features [range.count,
    /// valuesPerWindow]` (what `standardize` layers are calibrated on). By default `fill`'s
    /// windows of epoch 1 (a source that does not augment).
    func plainFeatures(_ range: Range<Int>, into features: UnsafeMutablePointer<Float>)
}

extension BatchSource {
    public func plainFeatures(_ range: Range<Int>, into features: UnsafeMutablePointer<Float>) {
        var labels = [Int32](repeating: 0, count: range.count)
        labels.withUnsafeMutableBufferPointer { fill(indices: ArraySlice(range), epoch: 1, features: features, labels: $0.baseAddress!) }
    }
}

/// Training data in network-input form: `features [count, valuesPerWindow]`, `labels [count]`.
public struct TensorSet: Sendable, BatchSource {
    public var features: [Float]
    public var labels: [Int32]
    public let valuesPerWindow: Int
    public var count: Int { labels.count }

    public func label(at index: Int) -> Int32 { labels[index] }

    public func fill(
        indices: ArraySlice<Int>, epoch: Int, features: UnsafeMutablePointer<Float>, labels: UnsafeMutablePointer<Int32>
    ) {
        let V = valuesPerWindow, first = indices.startIndex
        self.features.withUnsafeBufferPointer { src in
            self.labels.withUnsafeBufferPointer { y in
                // Rows split over the threads once a part copies at least 64 KB: a batch of 64
                // reference windows (656 KB from rows scattered over the data set) copies at
                // memory speed, which one thread does not reach.
                let src = src.baseAddress!, y = y.baseAddress!
                BLAS.parallelRanges(indices.count, minimum: max(1, (1 << 14) / max(1, V)), alignment: 1) { r in
                    for k in r {
                        let i = indices[first + k]
                        (features + k * V).update(from: src + i * V, count: V)
                        labels[k] = y[i]
                    }
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
    /// Summing micro-batch gradients and exchanging them between ranks (0 for plain steps).
    public var exchange = 0.0
    public var steps = 0
    public var total: Double { gather + forward + loss + backward + optimizer + exchange }
}

/// Mini-batch training of a network with softmax cross-entropy: seeded shuffling, the
/// configured optimiser, schedule and clipping, validation after every epoch, the best epoch's
/// parameters kept, early stopping, divergence detection, and a state that can be saved and
/// restored at any batch boundary (`state()`, `restore(_:)`) to continue bit-identically.
///
/// Randomness: epoch e shuffles with `SeededGenerator(derive(seed, e))`; dropout draws from
/// `derive(seed ^ 0xD50, e)`, or with micro-batches from `derive(that, step · M + k)` for
/// part k of a step's M. Nothing else is random during training.
///
/// Gradient accumulation and data parallelism (`config.accumulate` = M, `group` of R ranks):
/// each batch of the shuffled order is cut into M consecutive parts; rank r computes parts
/// r·M/R ..< (r+1)·M/R, each with the loss normalised by the whole batch's weight, and sums
/// them in order; the ranks' sums are gathered and added in rank order on every rank, so the
/// parameters stay identical everywhere. With R = 1 or R = M the sum is the plain ordered sum
/// of the M part gradients, so `mpirun -np M` equals one process with `accumulate` M bit for
/// bit. Which windows a step sees depends on the seed only, never on R.
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
    /// The ranks this trainer shares its steps with (`SingleProcess` alone).
    public let group: Collective
    /// Parameter ranges training leaves as they are (linear heads solved before training,
    /// `LinearHeads`): their gradients are zeroed before every update, and with a weight decay
    /// their values are put back after it. When they cover every parameter, `fit` takes no
    /// step: it records one epoch of the network's scores on the training and validation
    /// windows and finishes.
    public var fixedParameters: [Range<Int>] = []

    /// `classWeights` are the resolved per-class weights (see
    /// `TrainingConfig.ClassWeights.weights(labels:classes:)`), or nil for none.
    public init(network: Network, config: TrainingConfig, classWeights: [Float]? = nil, group: Collective = SingleProcess()) {
        self.group = group
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
    /// data was given, the network is left with the parameters of the best epoch. With parts
    /// (`accumulate` > 1 or several ranks) `shouldStop` is asked during each step's exchange
    /// instead, and every rank stops after the first step in which any rank asked.
    ///
    /// Throws `TrainingError.diverged` when a batch loss is NaN or infinite, before that
    /// batch's update (the state of the last `onEpoch` is the last good one), and
    /// `CollectiveError` when an exchange between ranks fails.
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
        if fixedParameters.reduce(0, { $0 + $1.count }) >= network.parameterCount {
            return try scoreFixed(train: train, validation: hasValidation ? validation : nil, onEpoch: onEpoch)
        }
        if config.patience > 0 && !hasValidation {
            throw TrainingError.needsValidation(
                "early stopping (patience \(config.patience)) needs validation windows; set validationFraction > 0 or give a validation split")
        }
        let M = config.microBatches, R = group.size
        guard M % R == 0 else {
            throw TrainingError.invalidConfig(field: "accumulate", reason: "must be a multiple of the \(R) ranks, got \(M)")
        }
        let N = train.count, V = train.valuesPerWindow, K = network.classCount, B = config.batchSize
        let batches = (N + B - 1) / B
        let schedule = LearningRateSchedule(config, stepsPerEpoch: batches)
        var order = [Int](repeating: 0, count: N)
        var batchX = [Float](repeating: 0, count: B * V)
        var batchY = [Int32](repeating: 0, count: B)
        let members = network.memberCount  // > 1: a multi-stream network, each member trained on its own loss
        var dlogits = [Float](repeating: 0, count: members * B * K)
        let P = network.parameterCount
        let clip = config.gradientClipNorm
        let averaging = config.averageEpochs > 0 ? exp(-1 / (config.averageEpochs * Double(batches))) : 0
        // Parts: this rank's sum of gradients, then loss, correct windows and a stop request.
        let parts = M == 1 && R == 1 ? nil : Parts(parameters: P, ranks: R)
        var stopAgreed = false

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
                if parts == nil ? shouldStop() : stopAgreed {
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
                /// Forward, loss and backward of `indices` into `network.gradients` (zeroed first).
                func gradient(_ indices: ArraySlice<Int>, mode: inout ForwardMode, totalWeight: Double?) -> (loss: Float, correct: Int) {
                    let n = indices.count
                    batchX.withUnsafeMutableBufferPointer { x in
                        batchY.withUnsafeMutableBufferPointer { y in
                            train.fill(indices: indices, epoch: epoch, features: x.baseAddress!, labels: y.baseAddress!)
                        }
                    }
                    network.zeroGradients()
                    lap(\.gather)
                    var correct = 0
                    let logits = batchX.withUnsafeBufferPointer { x in
                        members > 1
                            ? network.forwardMembers(x.baseAddress!, batch: n, mode: &mode)
                            : network.forward(x.baseAddress!, batch: n, mode: &mode)
                    }
                    lap(\.forward)
                    let l = batchY.withUnsafeBufferPointer { y in
                        dlogits.withUnsafeMutableBufferPointer { d in
                            memberLosses(
                                logits, labels: y.baseAddress!, batch: n, classes: K, members: members, dlogits: d.baseAddress!,
                                totalWeight: totalWeight, correct: &correct)
                        }
                    }
                    lap(\.loss)
                    // A diverged loss skips backward; the caller throws before the update.
                    if l.isFinite {
                        dlogits.withUnsafeBufferPointer { d in
                            if members > 1 { network.backwardMembers(d.baseAddress!, batch: n) } else { _ = network.backward(d.baseAddress!, batch: n) }
                        }
                    }
                    lap(\.backward)
                    return (l, correct)
                }
                let l: Float, correct: Int
                if let parts {
                    let dropoutSeed = SeededGenerator.derive(config.seed ^ 0xD50, UInt64(epoch))
                    let totalWeight = loss.totalWeight(order[s..<(s + n)].lazy.map { train.label(at: $0) })
                    let mine = (group.rank * M / R)..<((group.rank + 1) * M / R)
                    for k in mine {
                        var part = (loss: Float(0), correct: 0)
                        let range = (s + k * n / M)..<(s + (k + 1) * n / M)
                        if range.isEmpty {
                            network.zeroGradients()  // a batch smaller than M: this part adds nothing
                        } else {
                            var partMode = ForwardMode.training(
                                seed: SeededGenerator.derive(dropoutSeed, UInt64(progress.batch * M + k)))
                            part = gradient(order[range], mode: &partMode, totalWeight: totalWeight)
                        }
                        parts.add(network.gradients, loss: part.loss, correct: part.correct, first: k == mine.lowerBound)
                        lap(\.exchange)
                    }
                    parts.stopRequested = shouldStop()
                    let summed = try parts.exchange(group, into: network.gradients)
                    l = summed.loss
                    correct = summed.correct
                    stopAgreed = summed.stop
                    lap(\.exchange)
                } else {
                    let one = gradient(order[s..<(s + n)], mode: &mode, totalWeight: nil)
                    l = one.loss
                    correct = one.correct
                }
                guard l.isFinite else { throw TrainingError.diverged(epoch: epoch, batch: progress.batch + 1, loss: l) }
                for r in fixedParameters { (network.gradients + r.lowerBound).update(repeating: 0, count: r.count) }
                if clip > 0 { GradientClipping.clip(network.gradients, count: P, maxNorm: clip, threads: config.threads) }
                optimizer.learningRate = schedule.rate(step: progress.globalStep)
                let fixed = config.weightDecay != 0 ? fixedParameters.map { Array(UnsafeBufferPointer(start: network.parameters + $0.lowerBound, count: $0.count)) } : []
                optimizer.update(parameters: network.parameters, gradients: network.gradients, count: P)
                for (r, values) in zip(fixedParameters, fixed) { (network.parameters + r.lowerBound).update(from: values, count: r.count) }
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
                guard vl.isFinite else { throw TrainingError.diverged(epoch: epoch, batch: 0, loss: Float(vl)) }
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

    /// `fit` of a network whose parameters are all fixed: one epoch record of its plain loss and
    /// accuracy on the training windows (as cut, in inference mode) and the validation ones,
    /// and the run finished.
    private func scoreFixed(train: BatchSource, validation: TensorSet?, onEpoch: (EpochRecord) throws -> Void) throws -> TrainingOutcome {
        guard !isFinished else { return .finished }
        let V = train.valuesPerWindow, N = train.count
        var features = [Float](repeating: 0, count: N * V)
        features.withUnsafeMutableBufferPointer { train.plainFeatures(0..<N, into: $0.baseAddress!) }
        let scores = Self.evaluate(network, TensorSet(features: features, labels: (0..<N).map { train.label(at: $0) }, valuesPerWindow: V))
        var record = EpochRecord(
            epoch: 1, trainLoss: scores.loss, trainAccuracy: scores.accuracy, validationLoss: nil, validationAccuracy: nil, seconds: 0,
            windowsPerSecond: 0, learningRate: nil)
        if let validation { (record.validationLoss, record.validationAccuracy) = evaluate(validation) }
        progress.records.append(record)
        progress.bestEpoch = validation == nil ? nil : 1
        progress.epoch = config.epochs + 1
        try onEpoch(record)
        return .finished
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
    /// `correct` counts the windows whose combined prediction (`Network.combineMembers`) is the
    /// label.
    func memberLosses(
        _ logits: UnsafePointer<Float>, labels: UnsafePointer<Int32>, batch n: Int, classes K: Int, members M: Int,
        dlogits: UnsafeMutablePointer<Float>, totalWeight: Double?, correct: inout Int
    ) -> Float {
        guard M > 1 else {
            for b in 0..<n where argmax(UnsafeBufferPointer(start: logits + b * K, count: K)) == Int(labels[b]) { correct += 1 }
            return loss.lossAndGradient(logits: logits, labels: labels, batch: n, classes: K, dlogits: dlogits, totalWeight: totalWeight)
        }
        var total: Float = 0
        for m in 0..<M {
            let z = logits + m * n * K, d = dlogits + m * n * K
            total += loss.lossAndGradient(logits: z, labels: labels, batch: n, classes: K, dlogits: d, totalWeight: totalWeight) / Float(M)
            for i in 0..<(n * K) { d[i] /= Float(M) }
        }
        let combined = network.combineMembers(logits, batch: n)
        for b in 0..<n where argmax(UnsafeBufferPointer(start: combined + b * K, count: K)) == Int(labels[b]) { correct += 1 }
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
            if argmax(probabilities[(i * K)..<((i + 1) * K)]) == y { correct += 1 }
        }
        return (lossSum / Double(set.count), Double(correct) / Double(set.count))
    }
}

/// One rank's share of a step cut into parts: its ordered sum of part gradients, loss and
/// correct count, exchanged with the other ranks and summed in rank order.
///
/// The exchange is a reduce-scatter followed by an all-gather, both in a fixed order: the
/// vector `[gradients P, loss, correct, stop]` is cut into one chunk per rank; an all-to-all
/// gives rank j every rank's chunk j, which it sums in rank order `((c0 + c1) + c2) + ...`;
/// an all-gather then gives everyone every summed chunk. Each element is summed in rank order,
/// so the result equals the sequential sum of one process, and each rank sends and receives
/// about 2 (N − 1)/N of the vector: the bandwidth of a ring allreduce.
final class Parts {
    let P: Int, ranks: Int
    /// Floats per chunk: `[gradients P, loss, correct, stop]` padded to `ranks · chunk`.
    let chunk: Int
    /// This rank's sum, chunked; then the gathered sums.
    private var local: [Float], summed: [Float]
    /// Every rank's copy of this rank's chunk, and their sum.
    private var received: [Float], mine: [Float]
    var stopRequested = false

    init(parameters P: Int, ranks: Int) {
        self.P = P
        self.ranks = ranks
        chunk = (P + 3 + ranks - 1) / ranks
        local = [Float](repeating: 0, count: ranks * chunk)
        summed = local
        received = ranks > 1 ? local : []
        mine = [Float](repeating: 0, count: chunk)
    }

    /// Adds one part (its gradient in `g [P]`) to this rank's sum; `first` starts the sum.
    func add(_ g: UnsafePointer<Float>, loss: Float, correct: Int, first: Bool) {
        local.withUnsafeMutableBufferPointer { a in
            if first {
                a.baseAddress!.update(from: g, count: P)
                a[P] = loss
                a[P + 1] = Float(correct)
            } else {
                for i in 0..<P { a[i] += g[i] }
                a[P] += loss
                a[P + 1] += Float(correct)
            }
        }
    }

    /// Sums every rank's sum in rank order: the step's gradient into `gradients [P]`, its loss
    /// and correct count, and whether any rank asked to stop.
    func exchange(_ group: Collective, into gradients: UnsafeMutablePointer<Float>) throws -> (loss: Float, correct: Int, stop: Bool) {
        local[P + 2] = stopRequested ? 1 : 0
        if ranks > 1 {
            let c = chunk
            try local.withUnsafeBufferPointer { l in
                try received.withUnsafeMutableBufferPointer { try group.allToAll(l.baseAddress!, count: c, into: $0.baseAddress!) }
            }
            received.withUnsafeBufferPointer { r in
                for i in 0..<c {
                    var s = r[i]
                    for k in 1..<ranks { s += r[k * c + i] }
                    mine[i] = s
                }
            }
            try mine.withUnsafeBufferPointer { m in
                try summed.withUnsafeMutableBufferPointer { try group.allGather(m.baseAddress!, count: c, into: $0.baseAddress!) }
            }
        } else {
            summed = local
        }
        summed.withUnsafeBufferPointer { gradients.update(from: $0.baseAddress!, count: P) }
        return (summed[P], Int(summed[P + 1]), summed[P + 2] != 0)
    }
}
