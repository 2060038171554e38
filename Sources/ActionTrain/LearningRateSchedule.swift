import Foundation

/// The learning rate of every optimiser step, from the config's `schedule`, optional linear
/// warm-up, and the run's length. Evaluated per step (batch), in closed form, so a resumed
/// run gets exactly the rates of an uninterrupted one.
///
/// Let `s` be the 0-based index of the step about to be taken, `S` the steps per epoch,
/// `W = warmupEpochs·S` the warm-up steps, `T = epochs·S − W` the steps after warm-up,
/// `t = s − W`, and `lr₀` the base rate:
///
///     warm-up (s < W):  lr = lr₀ · (s + 1) / W
///     constant:         lr = lr₀
///     step:             lr = lr₀ · γ^⌊t / (stepEpochs·S)⌋
///     cosine:           lr = lr_min + (lr₀ − lr_min) · (1 + cos(π·t/T)) / 2
///
/// These are the closed forms of PyTorch's `LinearLR(start_factor=1/W, total_iters=W−1)`,
/// `StepLR(step_size=stepEpochs·S, gamma=γ)` and `CosineAnnealingLR(T_max=T, eta_min=lr_min)`
/// (Loshchilov & Hutter, 2017, "SGDR: Stochastic Gradient Descent with Warm Restarts", without
/// restarts) chained by `SequentialLR(milestones=[W])` and stepped after every batch. Warm-up
/// as in Goyal et al., 2017, "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour".
public struct LearningRateSchedule: Equatable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        case constant, step, cosine
    }

    public var kind: Kind
    public var base: Double
    public var warmupSteps: Int
    public var totalSteps: Int
    public var stepSize: Int
    public var gamma: Double
    public var minimum: Double

    public init(
        kind: Kind, base: Double, warmupSteps: Int = 0, totalSteps: Int, stepSize: Int = 1, gamma: Double = 0.1,
        minimum: Double = 0
    ) {
        self.kind = kind
        self.base = base
        self.warmupSteps = warmupSteps
        self.totalSteps = totalSteps
        self.stepSize = max(1, stepSize)
        self.gamma = gamma
        self.minimum = minimum
    }

    /// The schedule of `config` for a run of `stepsPerEpoch` batches per epoch.
    public init(_ config: TrainingConfig, stepsPerEpoch S: Int) {
        self.init(
            kind: config.schedule, base: config.learningRate, warmupSteps: config.warmupEpochs * S,
            totalSteps: config.epochs * S, stepSize: config.stepEpochs * S, gamma: config.gamma,
            minimum: config.minLearningRate)
    }

    /// The learning rate of step `s` (0-based).
    public func rate(step s: Int) -> Double {
        let W = warmupSteps
        if s < W { return base * Double(s + 1) / Double(W) }
        let t = s - W
        switch kind {
        case .constant:
            return base
        case .step:
            return base * pow(gamma, Double(t / stepSize))
        case .cosine:
            let T = max(1, totalSteps - W)
            let progress = Double(min(t, T)) / Double(T)
            return minimum + (base - minimum) * (1 + cos(Double.pi * progress)) / 2
        }
    }
}
