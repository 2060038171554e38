/// Stochastic gradient descent with optional momentum (Polyak, 1964, "Some methods of
/// speeding up the convergence of iteration methods"), Nesterov momentum (Sutskever, Martens,
/// Dahl & Hinton, 2013, "On the importance of initialization and momentum in deep learning")
/// and L2 weight decay.
///
/// The update of `torch.optim.SGD` (dampening 0), elementwise:
///
///     g ← g + λ·θ                          (weight decay λ, when λ ≠ 0)
///     b ← μ·b + g                          (momentum μ, when μ ≠ 0; b starts at 0, so the
///                                           first step gives b = g as in PyTorch)
///     g ← g + μ·b   (Nesterov)   or   g ← b
///     θ ← θ − lr·g
public final class SGD: Optimizer {
    public var name: String { "sgd" }
    public var learningRate: Double
    public let momentum: Double
    public let nesterov: Bool
    public let weightDecay: Double
    /// Threads for the elementwise update.
    public var threads: Int
    public private(set) var step = 0
    /// Momentum buffer `[parameterCount]` (empty without momentum).
    public private(set) var velocity: [Float]
    let count: Int

    public init(
        parameterCount: Int, learningRate: Double, momentum: Double = 0, nesterov: Bool = false, weightDecay: Double = 0,
        threads: Int = 1
    ) {
        self.learningRate = learningRate
        self.momentum = momentum
        self.nesterov = nesterov
        self.weightDecay = weightDecay
        self.threads = threads
        count = parameterCount
        velocity = momentum != 0 ? [Float](repeating: 0, count: parameterCount) : []
    }

    public func update(parameters p: UnsafeMutablePointer<Float>, gradients g: UnsafePointer<Float>, count n: Int) {
        precondition(n == count, "parameter count changed")
        step += 1
        // The hyperparameters rounded to Float once, as PyTorch's kernels do with Python floats.
        let lr = Float(learningRate), wd = Float(weightDecay), mu = Float(momentum), nesterov = nesterov
        // One loop per case, without branches inside, so that each vectorises. A momentum below
        // the least normal float is stored as 0 (as in Adam: it cannot change θ, and subnormal
        // arithmetic is slow).
        let tiny = Float.leastNormalMagnitude
        if mu == 0 {
            Parallel.chunks(n, threads: threads) { r in
                if wd == 0 {
                    for i in r { p[i] = p[i] - lr * g[i] }
                } else {
                    for i in r { p[i] = p[i] - lr * (g[i] + wd * p[i]) }
                }
            }
            return
        }
        velocity.withUnsafeMutableBufferPointer { vb in
            let b = vb.baseAddress!
            Parallel.chunks(n, threads: threads) { r in
                switch (wd == 0, nesterov) {
                case (true, false):
                    for i in r {
                        var bi = mu * b[i] + g[i]
                        bi = bi.magnitude < tiny ? 0 : bi
                        b[i] = bi
                        p[i] = p[i] - lr * bi
                    }
                case (true, true):
                    for i in r {
                        let gi = g[i]
                        var bi = mu * b[i] + gi
                        bi = bi.magnitude < tiny ? 0 : bi
                        b[i] = bi
                        p[i] = p[i] - lr * (gi + mu * bi)
                    }
                case (false, false):
                    for i in r {
                        var bi = mu * b[i] + (g[i] + wd * p[i])
                        bi = bi.magnitude < tiny ? 0 : bi
                        b[i] = bi
                        p[i] = p[i] - lr * bi
                    }
                case (false, true):
                    for i in r {
                        let gi = g[i] + wd * p[i]
                        var bi = mu * b[i] + gi
                        bi = bi.magnitude < tiny ? 0 : bi
                        b[i] = bi
                        p[i] = p[i] - lr * (gi + mu * bi)
                    }
                }
            }
        }
    }

    public func state() -> OptimizerState {
        OptimizerState(name: name, step: step, buffers: momentum != 0 ? [("momentum", velocity)] : [])
    }

    public func restore(_ s: OptimizerState) throws {
        try s.check(name: name, buffers: momentum != 0 ? ["momentum"] : [], count: count)
        step = s.step
        if momentum != 0 { velocity = s.buffers[0].values }
    }
}
