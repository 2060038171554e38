import ActionRuntime

/// Adam (Kingma & Ba, 2015, "Adam: A Method for Stochastic Optimization") with L2 weight
/// decay, or with decoupled weight decay when `decoupled` (AdamW; Loshchilov & Hutter, 2019,
/// "Decoupled Weight Decay Regularization").
///
/// The update of `torch.optim.Adam` / `torch.optim.AdamW` (amsgrad off), step t ≥ 1,
/// elementwise, in PyTorch's order of operations:
///
///     θ ← θ·(1 − lr·λ)                     (AdamW, when λ ≠ 0)
///     g ← g + λ·θ                          (Adam, when λ ≠ 0)
///     m ← m + (1 − β1)·(g − m)             (torch's lerp_)
///     v ← β2·v + (1 − β2)·g·g
///     θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
///
/// The hyperparameters are Double (Python floats); every constant derived from them (1 − β1,
/// the bias corrections, lr/(1 − β1ᵗ), 1 − lr·λ) is computed in Double, as Python does, and
/// rounded to Float once, as PyTorch's kernels do.
/// Moments below the least normal float are stored as 0 (see `kernel`: it never changes θ and
/// avoids slow subnormal arithmetic).
/// The update is split across `threads` threads in fixed chunks; it is elementwise, so the
/// result does not depend on the thread count.
public final class Adam: Optimizer {
    public var name: String { decoupled ? "adamw" : "adam" }
    public var learningRate: Double
    public let beta1: Double, beta2: Double, epsilon: Double
    public let weightDecay: Double
    public let decoupled: Bool
    public var threads: Int
    public private(set) var step = 0
    /// First and second moments `[parameterCount]`.
    public private(set) var m: [Float], v: [Float]

    public init(
        parameterCount: Int, learningRate: Double = 1e-3, beta1: Double = 0.9, beta2: Double = 0.999,
        epsilon: Double = 1e-8, weightDecay: Double = 0, decoupled: Bool = false, threads: Int = 1
    ) {
        self.learningRate = learningRate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.decoupled = decoupled
        self.threads = threads
        m = [Float](repeating: 0, count: parameterCount)
        v = [Float](repeating: 0, count: parameterCount)
    }

    public func update(parameters p: UnsafeMutablePointer<Float>, gradients g: UnsafePointer<Float>, count n: Int) {
        precondition(n == m.count, "parameter count changed")
        step += 1
        let t = Double(step)
        let bc1 = 1 - pow(beta1, t), bc2 = 1 - pow(beta2, t)
        let stepSize = Float(learningRate / bc1), bc2Sqrt = Float(bc2.squareRoot())
        let w1 = Float(1 - beta1), b2 = Float(beta2), w2 = Float(1 - beta2), eps = Float(epsilon)
        let decay: Float = decoupled && weightDecay != 0 ? Float(1 - learningRate * weightDecay) : 1
        let l2: Float = decoupled ? 0 : Float(weightDecay)
        let constants = ElementwiseKernels.AdamConstants(
            decay: decay, l2: l2, w1: w1, b2: b2, w2: w2, bc2Sqrt: bc2Sqrt, eps: eps, stepSize: stepSize)
        m.withUnsafeMutableBufferPointer { mb in
            v.withUnsafeMutableBufferPointer { vb in
                let m = mb.baseAddress!, v = vb.baseAddress!
                Parallel.chunks(n, threads: threads) { r in
                    ElementwiseKernels.adam(parameters: p, gradients: g, m: m, v: v, range: r, constants)
                }
            }
        }
    }

    /// The elementwise update over `range`: the reference that `ElementwiseKernels.adam` (C,
    /// 8 or 16 lanes, what `update` runs) matches bit for bit (tested), written so that the
    /// compiler vectorises it:
    /// - `v` is never negative, and saying so (`v ≥ 0 ? v : 0`) lets the square root compile to
    ///   a packed instruction instead of a libm call that may set errno;
    /// - moments smaller than the least normal float (1.2e-38) are stored as 0 (NaN stays NaN).
    ///   For a parameter whose gradient has become 0 (a dead ReLU unit), m decays by β1 every
    ///   step and turns subnormal after about 800 steps; arithmetic on subnormal numbers is many
    ///   times slower on x86, and it made a third of the MLP's state subnormal by epoch 4. Such
    ///   a moment changes θ by less than 1e-30·lr — below half an ulp of any parameter not
    ///   itself that small — so the parameters are the same as without the flush.
    /// Each element gets exactly the scalar operations above, in the same order, so any vector
    /// width or partition gives the same bits.
    @inline(__always)
    static func kernel(
        p: UnsafeMutablePointer<Float>, g: UnsafePointer<Float>, m: UnsafeMutablePointer<Float>,
        v: UnsafeMutablePointer<Float>, range: Range<Int>, decay: Float, l2: Float, w1: Float, b2: Float, w2: Float,
        bc2Sqrt: Float, eps: Float, stepSize: Float
    ) {
        let tiny = Float.leastNormalMagnitude
        if decay == 1 && l2 == 0 {
            for i in range {
                let gi = g[i]
                var mi = m[i] + w1 * (gi - m[i])
                var vi = b2 * v[i] + w2 * gi * gi
                mi = mi.magnitude < tiny ? 0 : mi
                vi = vi < tiny ? 0 : vi
                m[i] = mi
                v[i] = vi
                let root = (vi >= 0 ? vi : 0).squareRoot()
                p[i] = p[i] - stepSize * (mi / (root / bc2Sqrt + eps))
            }
        } else {
            for i in range {
                let pi = p[i] * decay
                let gi = g[i] + l2 * pi
                var mi = m[i] + w1 * (gi - m[i])
                var vi = b2 * v[i] + w2 * gi * gi
                mi = mi.magnitude < tiny ? 0 : mi
                vi = vi < tiny ? 0 : vi
                m[i] = mi
                v[i] = vi
                let root = (vi >= 0 ? vi : 0).squareRoot()
                p[i] = pi - stepSize * (mi / (root / bc2Sqrt + eps))
            }
        }
    }

    public func state() -> OptimizerState {
        OptimizerState(name: name, step: step, buffers: [("m", m), ("v", v)])
    }

    public func restore(_ s: OptimizerState) throws {
        try s.check(name: name, buffers: ["m", "v"], count: m.count)
        step = s.step
        m = s.buffers[0].values
        v = s.buffers[1].values
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
