import CKernels
import PoseCore

/// Elementwise training kernels in C (Sources/CKernels), on the instruction set
/// `PackedGEMM.current` names (AVX-512, AVX2 or the portable loop). Each computes exactly the
/// scalar operations its doc comment lists, every one rounded on its own, so all instruction
/// sets and every split of the range give the same bits as the Swift reference loops the tests
/// hold them to.
public enum ElementwiseKernels {
    /// The constants of one Adam step, each rounded to Float once (see `Adam`).
    public struct AdamConstants: Sendable {
        public var decay: Float, l2: Float, w1: Float, b2: Float, w2: Float, bc2Sqrt: Float, eps: Float, stepSize: Float
        public init(decay: Float, l2: Float, w1: Float, b2: Float, w2: Float, bc2Sqrt: Float, eps: Float, stepSize: Float) {
            (self.decay, self.l2, self.w1, self.b2, self.w2) = (decay, l2, w1, b2, w2)
            (self.bc2Sqrt, self.eps, self.stepSize) = (bc2Sqrt, eps, stepSize)
        }
    }

    /// One Adam step over `range` of the vectors, elementwise:
    ///
    ///     θ ← θ·decay;  g ← g + l2·θ                   (only when decay ≠ 1 or l2 ≠ 0)
    ///     m ← m + w1·(g − m);  v ← b2·v + (w2·g)·g
    ///     m ← 0 when |m| < Float.leastNormalMagnitude;  v ← 0 when v < that  (NaN stays)
    ///     θ ← θ − stepSize·(m / (√(v ≥ 0 ? v : 0) / bc2Sqrt + eps))
    ///
    /// (`atk_adam`). The two divisions and the square root bound it: 8 or 16 lanes instead of
    /// the 4 of Swift's baseline x86-64 build.
    public static func adam(
        parameters p: UnsafeMutablePointer<Float>, gradients g: UnsafePointer<Float>, m: UnsafeMutablePointer<Float>,
        v: UnsafeMutablePointer<Float>, range: Range<Int>, _ c: AdamConstants
    ) {
        guard !range.isEmpty else { return }
        var h = atk_adam_params(
            decay: c.decay, l2: c.l2, w1: c.w1, b2: c.b2, w2: c.w2, bc2_sqrt: c.bc2Sqrt, eps: c.eps, step_size: c.stepSize)
        let lo = range.lowerBound
        atk_adam(p + lo, g + lo, m + lo, v + lo, range.count, &h)
    }

    /// layerNorm's mean and `1/√(σ² + ε)` of 8 consecutive rows of `x` (row stride `C`)
    /// (`atk_layernorm_stats8`): the bits of `LayerNorm.statistics8Reference`.
    public static func layerNormStatistics8(
        _ x: UnsafePointer<Float>, channels C: Int, epsilon: Float, mean: UnsafeMutablePointer<Float>, rstd: UnsafeMutablePointer<Float>
    ) {
        atk_layernorm_stats8(x, Int32(C), 1 / Float(C), epsilon, mean, rstd)
    }

    /// `layerNormStatistics8` of 16 consecutive rows, two groups of 8 in flight together
    /// (`atk_layernorm_stats16`): the same bits as two calls.
    public static func layerNormStatistics16(
        _ x: UnsafePointer<Float>, channels C: Int, epsilon: Float, mean: UnsafeMutablePointer<Float>, rstd: UnsafeMutablePointer<Float>
    ) {
        atk_layernorm_stats16(x, Int32(C), 1 / Float(C), epsilon, mean, rstd)
    }

    /// layerNorm's output `y = ((x − mean)·rstd)·γ + β` for `rows` consecutive rows, each
    /// operation rounded on its own (`atk_layernorm_normalize`: 8 channels at a time with AVX2,
    /// where a Swift loop vectorises to 4).
    public static func layerNormNormalize(
        _ x: UnsafePointer<Float>, rows: Int, channels C: Int, mean: UnsafePointer<Float>, rstd: UnsafePointer<Float>,
        gamma: UnsafePointer<Float>, beta: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>
    ) {
        atk_layernorm_normalize(x, rows, Int32(C), mean, rstd, gamma, beta, y)
    }

    /// layerNorm backward's `Σ_c γ·dy` and `Σ_c γ·dy·x̂` of 8 consecutive rows, one per lane
    /// (`atk_layernorm_sums8`): the bits of `LayerNorm.sums8Reference`.
    public static func layerNormSums8(
        _ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, gamma: UnsafePointer<Float>, channels C: Int, mean: UnsafePointer<Float>,
        rstd: UnsafePointer<Float>
    ) -> (sumG: SIMD8<Float>, sumGX: SIMD8<Float>) {
        var a = SIMD8<Float>(), b = SIMD8<Float>()
        withUnsafeMutableBytes(of: &a) { pa in
            withUnsafeMutableBytes(of: &b) { pb in
                atk_layernorm_sums8(
                    x, dy, gamma, Int32(C), mean, rstd, pa.baseAddress!.assumingMemoryBound(to: Float.self),
                    pb.baseAddress!.assumingMemoryBound(to: Float.self))
            }
        }
        return (a, b)
    }

    /// Inverted dropout's forward over values `range` of `x`, `y` and the byte `mask`
    /// (`atk_dropout`): value i is kept unless the i-th draw of `SeededGenerator(seed: state)`'s
    /// stream, as `nextUnitFloat()`, is `< rate`; `mask[i]` = 1 (kept) or 0, `y[i] = x[i]·(kept ?
    /// scale : 0)`. The bits of that loop on every instruction set and for every split.
    public static func dropout(
        _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, mask: UnsafeMutablePointer<UInt8>, range: Range<Int>,
        state: UInt64, rate: Float, scale: Float
    ) {
        guard !range.isEmpty else { return }
        let lo = range.lowerBound
        atk_dropout(x + lo, y + lo, mask + lo, range.count, state &+ UInt64(lo) &* SeededGenerator.increment, rate, scale)
    }
}
