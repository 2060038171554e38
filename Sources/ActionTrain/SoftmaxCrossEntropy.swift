import Foundation

/// Softmax cross-entropy over logits `[B, K]` with optional label smoothing ε and class
/// weights w.
///
/// Target distribution `q = (1 − ε)·onehot(y) + ε/K`. Per-sample loss
/// `ℓ_b = −Σ_k q_k log softmax(z_b)_k`. The batch loss is the weighted mean
/// `L = Σ_b w[y_b] ℓ_b / Σ_b w[y_b]` (PyTorch's convention for weighted cross-entropy),
/// and `∂L/∂z_b = w[y_b] (softmax(z_b) − q) / Σ_b w[y_b]`.
public struct SoftmaxCrossEntropy {
    public var labelSmoothing: Float
    /// Per-class weights `[K]`, or nil for 1.
    public var classWeights: [Float]?

    public init(labelSmoothing: Float = 0, classWeights: [Float]? = nil) {
        self.labelSmoothing = labelSmoothing
        self.classWeights = classWeights
    }

    /// Returns the loss and writes `∂L/∂logits` into `dlogits [B, K]`.
    public func lossAndGradient(
        logits: UnsafePointer<Float>, labels: UnsafePointer<Int32>, batch B: Int, classes K: Int,
        dlogits: UnsafeMutablePointer<Float>
    ) -> Float {
        var totalWeight: Double = 0
        for b in 0..<B { totalWeight += Double(classWeights?[Int(labels[b])] ?? 1) }
        let invTotal = totalWeight > 0 ? 1 / totalWeight : 0
        let eps = labelSmoothing, off = eps / Float(K), on = 1 - eps + off
        var loss: Double = 0
        for b in 0..<B {
            let z = logits + b * K, g = dlogits + b * K
            let y = Int(labels[b])
            var m = -Float.infinity
            for k in 0..<K { m = max(m, z[k]) }
            var sum: Double = 0
            for k in 0..<K { sum += Double(expf(z[k] - m)) }
            let logSum = Double(m) + log(sum)
            let w = Double(classWeights?[y] ?? 1)
            var sampleLoss: Double = 0
            for k in 0..<K {
                let logp = Double(z[k]) - logSum
                let q = Double(k == y ? on : off)
                sampleLoss -= q * logp
                g[k] = Float(w * invTotal * (exp(logp) - q))
            }
            loss += w * sampleLoss
        }
        return Float(loss * invTotal)
    }
}
