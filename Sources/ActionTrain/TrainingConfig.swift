import ActionRuntime
import PoseCore

/// Every option of a training run. Saved as `config.json` in the run folder; a JSON config
/// file supplies it and CLI flags override single fields.
public struct TrainingConfig: Codable, Hashable, Sendable {
    public enum Architecture: String, Codable, Hashable, Sendable, CaseIterable {
        /// MLP over the flattened window.
        case mlp
    }

    public var architecture: Architecture = .mlp
    /// Hidden widths of the MLP.
    public var hidden: [Int] = [256, 128]
    /// Window length in frames.
    public var windowFrames: Int = 45
    /// Frames between window starts when cutting training windows.
    public var windowStride: Int = 15
    public var windowMode: WindowSpec.Mode = .sliding
    /// Resample sequences to this rate first (frames per second); nil keeps recorded frames.
    public var frameRate: Double? = nil
    public var channels: [ChannelBlock] = [.coordinates, .mask]
    public var epochs: Int = 30
    public var batchSize: Int = 64
    public var learningRate: Float = 1e-3
    public var weightDecay: Float = 0
    public var labelSmoothing: Float = 0
    /// Share of training sequences held out for validation when the data gives no split.
    public var validationFraction: Double = 0.2
    public var seed: UInt64 = 0
    /// OpenBLAS threads.
    public var threads: Int = 2

    public init() {}

    /// Checks ranges; the message says which field to fix.
    public func validate() throws {
        func bad(_ field: String, _ why: String) -> TrainingError { .invalidConfig(field: field, reason: why) }
        guard windowFrames > 0 else { throw bad("windowFrames", "must be positive") }
        guard windowStride > 0 else { throw bad("windowStride", "must be positive") }
        guard epochs > 0 else { throw bad("epochs", "must be positive") }
        guard batchSize > 0 else { throw bad("batchSize", "must be positive") }
        guard learningRate > 0 && learningRate.isFinite else { throw bad("learningRate", "must be a positive number") }
        guard hidden.allSatisfy({ $0 > 0 }) else { throw bad("hidden", "widths must be positive") }
        guard (0..<1).contains(validationFraction) else { throw bad("validationFraction", "must be in [0, 1)") }
        guard (0..<1).contains(labelSmoothing) else { throw bad("labelSmoothing", "must be in [0, 1)") }
        guard threads > 0 else { throw bad("threads", "must be positive") }
        guard !channels.isEmpty else { throw bad("channels", "needs at least one block") }
    }

    /// The layer list for an input of `inputShape` and `classes` outputs.
    public func layers(input: Shape, classes: Int) -> [LayerSpec] {
        switch architecture {
        case .mlp:
            var specs: [LayerSpec] = [.flatten]
            var width = input.count
            for h in hidden {
                specs += [.linear(inputs: width, outputs: h), .relu]
                width = h
            }
            specs.append(.linear(inputs: width, outputs: classes))
            return specs
        }
    }
}

public enum TrainingError: Error, Equatable, CustomStringConvertible {
    case invalidConfig(field: String, reason: String)
    case diverged(epoch: Int, step: Int)
    case noTrainingData(String)

    public var description: String {
        switch self {
        case .invalidConfig(let field, let reason): return "config field '\(field)' \(reason)"
        case .diverged(let epoch, let step):
            return "training diverged (loss is NaN or infinite) at epoch \(epoch), step \(step); lower the learning rate"
        case .noTrainingData(let why): return why
        }
    }
}
