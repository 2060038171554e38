import PoseCore

/// Layer normalisation over the channels of each time step (PyTorch `nn.LayerNorm(C)` on
/// `[batch, time, C]`).
///
/// Shapes: B = batch, T = time, C = channels; rows R = B·T.
/// `gamma [C]` initialised to 1, `beta [C]` to 0.
/// Forward, per row: `μ = mean(x)`, `σ² = mean((x − μ)²)` (biased), `r = 1/√(σ² + ε)`,
/// `x̂ = (x − μ) r`, `y = γ ⊙ x̂ + β`.
/// Backward, per row: `dβ += dy`, `dγ += dy ⊙ x̂`, `g = γ ⊙ dy`,
/// `dx = r (g − mean(g) − x̂ · mean(g ⊙ x̂))`.
/// Every sum over the channels runs in channel order and every sum over the rows in row order;
/// the rows' sums are computed 8 rows at a time (one per SIMD lane, so 8 chains of additions
/// in flight; forward, two such groups together) and the rows, or for dγ and dβ the channels,
/// split over `BLAS.threads`: neither changes a bit.
final class LayerNorm: PooledInputGradient {
    let shape: Shape
    let epsilon: Float
    var spec: LayerSpec { .layerNorm(channels: shape.channels, epsilon: epsilon) }
    var inputShape: Shape { shape }
    var outputShape: Shape { shape }
    var parameterShapes: [ParameterShape] { LayerNormKind.parameters(shape.channels) }

    private var gamma: UnsafeMutablePointer<Float>!, beta: UnsafeMutablePointer<Float>!  // [C], [C]
    private var dGamma: UnsafeMutablePointer<Float>!, dBeta: UnsafeMutablePointer<Float>!  // [C], [C]
    private var x: UnsafePointer<Float>?  // cached input [R, C]
    private let mean = Buffer(), rstd = Buffer()  // [R] each
    private let y = Buffer()
    var dx = Buffer()  // [R, C] each

    init(shape: Shape, epsilon: Float) {
        self.shape = shape
        self.epsilon = epsilon
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        gamma = parameters
        beta = parameters + shape.channels
        dGamma = gradients
        dBeta = gradients + shape.channels
    }

    func initialize(using g: inout SeededGenerator) {
        gamma.update(repeating: 1, count: shape.channels)
        beta.update(repeating: 0, count: shape.channels)
    }

    /// Below this many values per part a second thread costs more than it saves.
    static let minimumPerPart = 1 << 14

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let R = batch * shape.time, C = shape.channels
        self.x = x
        y.reserve(R * C)
        mean.reserve(R)
        rstd.reserve(R)
        let out = y.pointer, mu = mean.pointer, rs = rstd.pointer, eps = epsilon
        let gamma = gamma!, beta = beta!
        // Rows are independent: split them over the threads (whole groups of 8).
        BLAS.parallelRanges(R, minimum: max(8, LayerNorm.minimumPerPart / C), alignment: 8) { rows in
            var r = rows.lowerBound
            while r + 16 <= rows.upperBound {
                ElementwiseKernels.layerNormStatistics16(x + r * C, channels: C, epsilon: eps, mean: mu + r, rstd: rs + r)
                r += 16
            }
            while r + 8 <= rows.upperBound {
                ElementwiseKernels.layerNormStatistics8(x + r * C, channels: C, epsilon: eps, mean: mu + r, rstd: rs + r)
                r += 8
            }
            while r < rows.upperBound {
                LayerNorm.statistics1(x + r * C, channels: C, epsilon: eps, mean: mu + r, rstd: rs + r)
                r += 1
            }
            let lo = rows.lowerBound
            ElementwiseKernels.layerNormNormalize(
                x + lo * C, rows: rows.count, channels: C, mean: mu + lo, rstd: rs + lo, gamma: gamma, beta: beta, into: out + lo * C)
        }
        return UnsafePointer(out)
    }

    /// One row's mean and `1/√(σ² + ε)`: `s = Σ x` in channel order, `m = s/C`, `v = Σ (x − m)²` in
    /// channel order, `1 / √(v/C + ε)` (with 1/C as a Float factor).
    @inline(__always)
    static func statistics1(
        _ xr: UnsafePointer<Float>, channels C: Int, epsilon: Float, mean: UnsafeMutablePointer<Float>, rstd: UnsafeMutablePointer<Float>
    ) {
        let invC = 1 / Float(C)
        var s: Float = 0
        for c in 0..<C { s += xr[c] }
        let m = s * invC
        var v: Float = 0
        for c in 0..<C {
            let d = xr[c] - m
            v += d * d
        }
        mean.pointee = m
        rstd.pointee = 1 / (v * invC + epsilon).squareRoot()
    }

    /// `statistics1` of 8 consecutive rows at once, one row per lane: the same operations in
    /// the same order for each row (so the same bits), with 8 independent sums in flight
    /// instead of one chain of dependent additions. The reference that forward's
    /// `ElementwiseKernels.layerNormStatistics8` (C: 8 channels of the 8 rows transposed at a time)
    /// is tested against.
    static func statistics8Reference(
        _ x: UnsafePointer<Float>, channels C: Int, epsilon: Float, mean: UnsafeMutablePointer<Float>, rstd: UnsafeMutablePointer<Float>
    ) {
        let invC = 1 / Float(C)
        var s = SIMD8<Float>()
        for c in 0..<C { s += lanes(x + c, stride: C) }
        let m = s * invC
        var v = SIMD8<Float>()
        for c in 0..<C {
            let d = lanes(x + c, stride: C) - m
            v += d * d
        }
        let inv = 1 / (v * invC + epsilon).squareRoot()
        for k in 0..<8 {
            mean[k] = m[k]
            rstd[k] = inv[k]
        }
    }

    /// Backward's `Σ_c γ·dy` and `Σ_c γ·dy·x̂` of 8 consecutive rows, one row per lane, in
    /// channel order: the reference that backward's `ElementwiseKernels.layerNormSums8` is
    /// tested against.
    static func sums8Reference(
        _ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, gamma: UnsafePointer<Float>, channels C: Int, mean: UnsafePointer<Float>,
        rstd: UnsafePointer<Float>
    ) -> (sumG: SIMD8<Float>, sumGX: SIMD8<Float>) {
        var sumG = SIMD8<Float>(), sumGX = SIMD8<Float>()
        let m = lanes(mean, stride: 1), inv = lanes(rstd, stride: 1)
        for c in 0..<C {
            let xs = lanes(x + c, stride: C), ds = lanes(dy + c, stride: C)
            let gc = gamma[c] * ds
            sumG += gc
            sumGX += gc * (xs - m) * inv
        }
        return (sumG, sumGX)
    }

    /// `p[0], p[stride], …, p[7·stride]`: one value of 8 consecutive rows.
    @inline(__always)
    static func lanes(_ p: UnsafePointer<Float>, stride: Int) -> SIMD8<Float> {
        SIMD8(p[0], p[stride], p[2 * stride], p[3 * stride], p[4 * stride], p[5 * stride], p[6 * stride], p[7 * stride])
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let R = batch * shape.time, C = shape.channels
        guard let x else { preconditionFailure("LayerNorm.backward before forward") }
        let mu = mean.pointer, rs = rstd.pointer, invC = 1 / Float(C)
        let gamma = gamma!, dGamma = dGamma!, dBeta = dBeta!  // local copies, so that the loops vectorise
        // dβ and dγ sum over the rows in row order: split over the channels instead (each
        // channel's sum stays in one part, in the same order).
        BLAS.parallelRanges(C, minimum: max(16, LayerNorm.minimumPerPart / max(1, R))) { channels in
            for r in 0..<R {
                let xr = x + r * C, dyr = dy + r * C, m = mu[r], inv = rs[r]
                for c in channels {
                    dBeta[c] += dyr[c]
                    dGamma[c] += dyr[c] * (xr[c] - m) * inv
                }
            }
        }
        guard needInputGradient else { return nil }
        dx.reserve(R * C)
        let g = dx.pointer
        BLAS.parallelRanges(R, minimum: max(8, LayerNorm.minimumPerPart / C), alignment: 8) { rows in
            var r = rows.lowerBound
            while r < rows.upperBound {
                let n = min(8, rows.upperBound - r)
                // Σ γ·dy and Σ γ·dy·x̂ per row, in channel order: 8 rows in the lanes, or one.
                var sumG = SIMD8<Float>(), sumGX = SIMD8<Float>()
                if n == 8 {
                    (sumG, sumGX) = ElementwiseKernels.layerNormSums8(x + r * C, dy + r * C, gamma: gamma, channels: C, mean: mu + r, rstd: rs + r)
                } else {
                    for k in 0..<n {
                        let xr = x + (r + k) * C, dyr = dy + (r + k) * C, m = mu[r + k], inv = rs[r + k]
                        var a: Float = 0, b: Float = 0
                        for c in 0..<C {
                            let gc = gamma[c] * dyr[c]
                            a += gc
                            b += gc * (xr[c] - m) * inv
                        }
                        sumG[k] = a
                        sumGX[k] = b
                    }
                }
                for k in 0..<n {
                    let xr = x + (r + k) * C, dyr = dy + (r + k) * C, dxr = g + (r + k) * C, m = mu[r + k], inv = rs[r + k]
                    let meanG = sumG[k] * invC, meanGX = sumGX[k] * invC
                    for c in 0..<C {
                        let xhat = (xr[c] - m) * inv
                        dxr[c] = inv * (gamma[c] * dyr[c] - meanG - xhat * meanGX)
                    }
                }
                r += n
            }
        }
        return UnsafePointer(g)
    }
}

/// `{"type": "layerNorm", "channels": C, "epsilon": ε}`: normalisation over channels at each
/// time step, `γ (x − μ) / √(σ² + ε) + β`.
public struct LayerNormKind: LayerKind {
    public static let typeName = "layerNorm"
    public var channels: Int, epsilon: Float
    public init(channels: Int, epsilon: Float) {
        self.channels = channels
        self.epsilon = epsilon
    }
    public init(fields f: some LayerFieldReader) throws { self.init(channels: try f.int("channels"), epsilon: try f.float("epsilon")) }
    public var fields: [(key: String, value: LayerField)] { [("channels", .int(channels)), ("epsilon", .float(epsilon))] }
    public var summary: String { "layerNorm \(channels), epsilon \(epsilon)" }
    static func parameters(_ channels: Int) -> [ParameterShape] {
        [ParameterShape("gamma", [channels], layout: "[channels]"), ParameterShape("beta", [channels], layout: "[channels]")]
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        try check.size("channels", channels)
        guard channels == input.channels else { throw check.invalid("normalises \(channels) channels, receives \(input)") }
        let range = ModelFile.Limits.layerNormEpsilon
        guard range.contains(epsilon) else { throw check.invalid("epsilon \(epsilon) must be in [\(range.lowerBound), \(range.upperBound)]") }
        return LayerShapes(output: input, parameters: Self.parameters(channels))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        LayerNorm(shape: input, epsilon: epsilon)
    }

    /// LayerNormalization over the last axis.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let gamma = g.floats(p + "gamma", [channels], try g.tensor(p + "gamma").values)
        let beta = g.floats(p + "beta", [channels], try g.tensor(p + "beta").values)
        return g.node("LayerNormalization", [x, gamma, beta], attributes: [("axis", .int(-1)), ("epsilon", .float(epsilon))], name: p + "layernorm")
    }

    public static func example(input: Shape) -> LayerNormKind { LayerNormKind(channels: input.channels, epsilon: 1e-5) }
}

extension LayerSpec {
    /// Layer normalisation over channels at each time step. `gamma [channels]`, `beta [channels]`.
    public static func layerNorm(channels: Int, epsilon: Float) -> LayerSpec { LayerSpec(LayerNormKind(channels: channels, epsilon: epsilon)) }
}
