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
final class LayerNorm: Layer {
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
    private let y = Buffer(), dx = Buffer()  // [R, C] each

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

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let R = batch * shape.time, C = shape.channels
        self.x = x
        y.reserve(R * C)
        mean.reserve(R)
        rstd.reserve(R)
        let out = y.pointer, mu = mean.pointer, rs = rstd.pointer, invC = 1 / Float(C)
        let gamma = gamma!, beta = beta!  // local copies, so that the loops vectorise
        for r in 0..<R {
            let xr = x + r * C, yr = out + r * C
            var s: Float = 0
            for c in 0..<C { s += xr[c] }
            let m = s * invC
            var v: Float = 0
            for c in 0..<C {
                let d = xr[c] - m
                v += d * d
            }
            let inv = 1 / (v * invC + epsilon).squareRoot()
            for c in 0..<C { yr[c] = (xr[c] - m) * inv * gamma[c] + beta[c] }
            mu[r] = m
            rs[r] = inv
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let R = batch * shape.time, C = shape.channels
        guard let x else { preconditionFailure("LayerNorm.backward before forward") }
        let mu = mean.pointer, rs = rstd.pointer, invC = 1 / Float(C)
        let gamma = gamma!, dGamma = dGamma!, dBeta = dBeta!  // local copies, so that the loops vectorise
        for r in 0..<R {
            let xr = x + r * C, dyr = dy + r * C, m = mu[r], inv = rs[r]
            for c in 0..<C {
                dBeta[c] += dyr[c]
                dGamma[c] += dyr[c] * (xr[c] - m) * inv
            }
        }
        guard needInputGradient else { return nil }
        dx.reserve(R * C)
        let g = dx.pointer
        for r in 0..<R {
            let xr = x + r * C, dyr = dy + r * C, dxr = g + r * C, m = mu[r], inv = rs[r]
            var sumG: Float = 0, sumGX: Float = 0  // Σ g, Σ g ⊙ x̂
            for c in 0..<C {
                let gc = gamma[c] * dyr[c]
                sumG += gc
                sumGX += gc * (xr[c] - m) * inv
            }
            let meanG = sumG * invC, meanGX = sumGX * invC
            for c in 0..<C {
                let xhat = (xr[c] - m) * inv
                dxr[c] = inv * (gamma[c] * dyr[c] - meanG - xhat * meanGX)
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
