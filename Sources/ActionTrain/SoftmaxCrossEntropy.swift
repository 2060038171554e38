#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation

/// Softmax cross-entropy over logits `[B, K]` with label smoothing ε and class weights w,
/// exactly as PyTorch's `F.cross_entropy(z, y, weight=w, label_smoothing=ε)` (mean reduction).
///
/// With `p = softmax(z_b)` and `W = Σ_k w_k`, the loss of window b is
///
///     ℓ_b = (1 − ε)·w[y_b]·(−log p_{y_b}) + (ε/K)·Σ_k w_k·(−log p_k)
///
/// (PyTorch weights the smoothing term by each class's own weight), and the batch loss is
/// `L = Σ_b ℓ_b / Σ_b w[y_b]`. Its gradient:
///
///     ∂L/∂z_{b,j} = [(1 − ε)·w[y_b]·(p_j − [j = y_b]) + (ε/K)·(W·p_j − w_j)] / Σ_b w[y_b]
///
/// Without weights (w = 1) this is the usual `(p − q)/B` with `q = (1 − ε)·onehot(y) + ε/K`.
/// Sums are accumulated in Double.
public struct SoftmaxCrossEntropy {
    public var labelSmoothing: Float
    /// Per-class weights `[K]`, or nil for 1.
    public var classWeights: [Float]?

    public init(labelSmoothing: Float = 0, classWeights: [Float]? = nil) {
        self.labelSmoothing = labelSmoothing
        self.classWeights = classWeights
    }

    /// `Σ_b w[y_b]` over `labels`, the denominator of the batch loss.
    public func totalWeight<Labels: Sequence<Int32>>(_ labels: Labels) -> Double {
        var total: Double = 0
        for y in labels { total += Double(classWeights?[Int(y)] ?? 1) }
        return total
    }

    /// Returns the loss and writes `∂L/∂logits` into `dlogits [B, K]`. `totalWeight` replaces
    /// the denominator `Σ_b w[y_b]` by that of a larger batch these B windows are one part of
    /// (gradient accumulation): the parts' losses and gradients then add up to the batch's.
    public func lossAndGradient(
        logits: UnsafePointer<Float>, labels: UnsafePointer<Int32>, batch B: Int, classes K: Int,
        dlogits: UnsafeMutablePointer<Float>, totalWeight: Double? = nil
    ) -> Float {
        func w(_ k: Int) -> Double { Double(classWeights?[k] ?? 1) }
        let totalWeight = totalWeight ?? self.totalWeight(UnsafeBufferPointer(start: labels, count: B))
        var W: Double = 0
        for k in 0..<K { W += w(k) }
        let invTotal = totalWeight > 0 ? 1 / totalWeight : 0
        let eps = Double(labelSmoothing), smooth = eps / Double(K)
        var loss: Double = 0
        for b in 0..<B {
            let z = logits + b * K, g = dlogits + b * K
            let y = Int(labels[b])
            var m = -Float.infinity
            for k in 0..<K { m = max(m, z[k]) }
            var sum: Double = 0
            for k in 0..<K { sum += Double(expf(z[k] - m)) }
            let logSum = Double(m) + log(sum)
            let wy = w(y)
            for k in 0..<K {
                let logp = Double(z[k]) - logSum, p = exp(logp)
                loss -= (k == y ? (1 - eps) * wy * logp : 0) + smooth * w(k) * logp
                g[k] = Float(((1 - eps) * wy * (p - (k == y ? 1 : 0)) + smooth * (W * p - w(k))) * invTotal)
            }
        }
        return Float(loss * invTotal)
    }
}
