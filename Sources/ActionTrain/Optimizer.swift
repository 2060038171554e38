/// Adam (Kingma & Ba, 2015, "Adam: A Method for Stochastic Optimization"), with decoupled
/// weight decay when `decoupled` (AdamW; Loshchilov & Hutter, 2019).
///
/// `m ← β1 m + (1 − β1) g`, `v ← β2 v + (1 − β2) g²`,
/// `θ ← θ − lr · m̂ / (√v̂ + ε)` with `m̂ = m / (1 − β1ᵗ)`, `v̂ = v / (1 − β2ᵗ)`.
public final class Adam {
    public var learningRate: Float
    public let beta1: Float, beta2: Float, epsilon: Float
    public var weightDecay: Float
    public let decoupled: Bool
    public private(set) var step = 0
    /// First and second moments `[parameterCount]`.
    public private(set) var m: [Float], v: [Float]

    public init(
        parameterCount: Int, learningRate: Float = 1e-3, beta1: Float = 0.9, beta2: Float = 0.999,
        epsilon: Float = 1e-8, weightDecay: Float = 0, decoupled: Bool = false
    ) {
        self.learningRate = learningRate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.decoupled = decoupled
        m = [Float](repeating: 0, count: parameterCount)
        v = [Float](repeating: 0, count: parameterCount)
    }

    public func update(parameters p: UnsafeMutablePointer<Float>, gradients g: UnsafePointer<Float>, count n: Int) {
        precondition(n == m.count, "parameter count changed")
        step += 1
        let b1 = beta1, b2 = beta2, eps = epsilon, lr = learningRate, wd = weightDecay
        let c1 = 1 - powf(b1, Float(step)), c2 = 1 - powf(b2, Float(step))
        let stepSize = lr / c1, invSqrtC2 = 1 / c2.squareRoot()
        let decay: Float = decoupled ? 1 - lr * wd : 1
        let l2: Float = decoupled ? 0 : wd
        m.withUnsafeMutableBufferPointer { mp in
            v.withUnsafeMutableBufferPointer { vp in
                let m = mp.baseAddress!, v = vp.baseAddress!
                for i in 0..<n {
                    let gi = g[i] + l2 * p[i]
                    m[i] = b1 * m[i] + (1 - b1) * gi
                    v[i] = b2 * v[i] + (1 - b2) * gi * gi
                    p[i] = p[i] * decay - stepSize * m[i] / (v[i].squareRoot() * invSqrtC2 + eps)
                }
            }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
