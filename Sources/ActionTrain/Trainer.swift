import ActionRuntime
import Foundation
import PoseCore

/// A source of training batches. `TensorSet` copies fixed features; an augmenting source
/// builds fresh features for every epoch from raw pose windows.
public protocol BatchSource {
    var count: Int { get }
    var valuesPerWindow: Int { get }
    /// Writes the windows at `indices` for `epoch` (1-based): `features [indices.count,
    /// valuesPerWindow]` and `labels [indices.count]`. Must be deterministic given its inputs.
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
            for (k, i) in indices.enumerated() {
                (features + k * V).update(from: src.baseAddress! + i * V, count: V)
                labels[k] = self.labels[i]
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

/// One line of the per-epoch log.
public struct EpochRecord: Codable, Hashable, Sendable {
    public var epoch: Int
    public var trainLoss: Double
    public var trainAccuracy: Double
    public var validationLoss: Double?
    public var validationAccuracy: Double?
    public var seconds: Double
    public var windowsPerSecond: Double
}

/// Mini-batch training of a network with Adam and softmax cross-entropy, keeping the
/// parameters of the epoch with the best validation accuracy.
public final class Trainer {
    public let network: Network
    public let config: TrainingConfig
    let optimizer: Adam
    let loss: SoftmaxCrossEntropy

    public init(network: Network, config: TrainingConfig) {
        self.network = network
        self.config = config
        optimizer = Adam(
            parameterCount: network.parameterCount, learningRate: config.learningRate,
            weightDecay: config.weightDecay, decoupled: true)
        loss = SoftmaxCrossEntropy(labelSmoothing: config.labelSmoothing)
    }

    /// Trains for `config.epochs` epochs. Calls `onEpoch` after each. When `validation` is
    /// given, the network ends with the parameters of the best validation epoch.
    @discardableResult
    public func fit(train: BatchSource, validation: TensorSet?, onEpoch: (EpochRecord) -> Void = { _ in }) throws
        -> [EpochRecord]
    {
        guard train.count > 0 else { throw TrainingError.noTrainingData("no training windows") }
        let V = train.valuesPerWindow, K = network.classCount, B = config.batchSize
        var order = Array(0..<train.count)
        var batchX = [Float](repeating: 0, count: B * V)
        var batchY = [Int32](repeating: 0, count: B)
        var dlogits = [Float](repeating: 0, count: B * K)
        var best: (accuracy: Double, parameters: [Float])? = nil
        var records: [EpochRecord] = []
        for epoch in 1...config.epochs {
            let start = DispatchTime.now().uptimeNanoseconds
            var g = SeededGenerator(seed: SeededGenerator.derive(config.seed, UInt64(epoch)))
            order.seededShuffle(using: &g)
            var lossSum = 0.0, correct = 0, step = 0
            var mode = ForwardMode.training(seed: SeededGenerator.derive(config.seed ^ 0xD50, UInt64(epoch)))
            for s in stride(from: 0, to: train.count, by: B) {
                let n = min(B, train.count - s)
                batchX.withUnsafeMutableBufferPointer { x in
                    batchY.withUnsafeMutableBufferPointer { y in
                        train.fill(indices: order[s..<(s + n)], epoch: epoch, features: x.baseAddress!, labels: y.baseAddress!)
                    }
                }
                network.zeroGradients()
                let l = batchX.withUnsafeBufferPointer { x in
                    let logits = network.forward(x.baseAddress!, batch: n, mode: &mode)
                    for b in 0..<n where argmax(logits + b * K, K) == Int(batchY[b]) { correct += 1 }
                    return batchY.withUnsafeBufferPointer { y in
                        dlogits.withUnsafeMutableBufferPointer { d in
                            loss.lossAndGradient(
                                logits: logits, labels: y.baseAddress!, batch: n, classes: K, dlogits: d.baseAddress!)
                        }
                    }
                }
                guard l.isFinite else { throw TrainingError.diverged(epoch: epoch, step: step) }
                dlogits.withUnsafeBufferPointer { network.backward($0.baseAddress!, batch: n) }
                optimizer.update(parameters: network.parameters, gradients: network.gradients, count: network.parameterCount)
                lossSum += Double(l) * Double(n)
                step += 1
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            var record = EpochRecord(
                epoch: epoch, trainLoss: lossSum / Double(train.count),
                trainAccuracy: Double(correct) / Double(train.count), validationLoss: nil, validationAccuracy: nil,
                seconds: seconds, windowsPerSecond: Double(train.count) / seconds)
            if let validation, validation.count > 0 {
                let (vl, va) = evaluate(validation)
                record.validationLoss = vl
                record.validationAccuracy = va
                if best == nil || va > best!.accuracy {
                    best = (va, Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount)))
                }
            }
            records.append(record)
            onEpoch(record)
        }
        if let best {
            best.parameters.withUnsafeBufferPointer { network.load(parameters: $0) }
        }
        return records
    }

    /// Mean loss and accuracy over a set, in inference mode.
    public func evaluate(_ set: TensorSet) -> (loss: Double, accuracy: Double) {
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
