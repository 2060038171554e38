import PoseCore

/// Test-time flip averaging: the body (a layer list giving `[1, K]` logits) runs on the input
/// and on its mirror image `x'[t, c] = signs[c] · x[t, channels[c]]` (for poses: left and right
/// joints swapped and x negated, built by `InputSpec.mirrorChannels`), and the two class
/// probabilities are averaged (`ProbabilityAverage`).
///
/// The body's parameters are stored once (named `body.<j>.<name>`); two copies of its layers,
/// bound to the same parameters and gradients, keep each pass's activations for backward.
/// Backward: `dx = dx_a + Pᵀ (signs ⊙ dx_b)`, `dx[t, channels[c]] += signs[c] · dx_b[t, c]`.
final class FlipAverage: LayerContainer {
    let body: [Layer], mirrored: [Layer]
    private let bodyChain: LayerChain, mirroredChain: LayerChain
    let channels: [Int], signs: [Float]
    let inputShape: Shape, outputShape: Shape
    private let average: ProbabilityAverage
    private let xm = Buffer(), dx = Buffer()  // [B, T, C] each
    var spec: LayerSpec { .flipAverage(channels: channels, signs: signs, body: body.map(\.spec)) }

    init(body: [Layer], mirrored: [Layer], channels: [Int], signs: [Float], input: Shape, output: Shape) {
        self.body = body
        self.mirrored = mirrored
        bodyChain = LayerChain(body)
        mirroredChain = LayerChain(mirrored)
        self.channels = channels
        self.signs = signs
        inputShape = input
        outputShape = output
        average = ProbabilityAverage(members: 2, classes: output.channels)
    }

    var parameterShapes: [ParameterShape] {
        body.enumerated().flatMap { j, layer in layer.parameterShapes.map { ParameterShape("body.\(j).\($0.name)", $0.shape, layout: $0.layout) } }
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        for copy in [body, mirrored] {
            var offset = 0
            for layer in copy {
                layer.bind(parameters: parameters + offset, gradients: gradients + offset)
                offset += layer.parameterCount
            }
        }
    }

    func initialize(using g: inout SeededGenerator) {
        for layer in body { layer.initialize(using: &g) }
    }

    var sublayers: [Layer] { body + mirrored }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let C = inputShape.channels, rows = batch * inputShape.time
        xm.reserve(rows * C)
        for r in 0..<rows {
            let src = x + r * C, dst = xm.pointer + r * C
            for c in 0..<C { dst[c] = signs[c] * src[channels[c]] }
        }
        let a = bodyChain.forward(x, batch: batch, mode: &mode)
        let b = mirroredChain.forward(xm.pointer, batch: batch, mode: &mode)
        return average.forward([a, b], batch: batch)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let ga = bodyChain.backward(average.backward(dy, member: 0, batch: batch), batch: batch, needInputGradient: needInputGradient)
        let gb = mirroredChain.backward(average.backward(dy, member: 1, batch: batch), batch: batch, needInputGradient: needInputGradient)
        guard needInputGradient, let ga, let gb else { return nil }
        let C = inputShape.channels, rows = batch * inputShape.time
        dx.reserve(rows * C)
        dx.pointer.update(from: ga, count: rows * C)
        for r in 0..<rows {
            let src = gb + r * C, dst = dx.pointer + r * C
            for c in 0..<C { dst[channels[c]] += signs[c] * src[c] }
        }
        return UnsafePointer(dx.pointer)
    }
}

/// `{"type": "flipAverage", "channels": [...], "signs": [...], "body": [layer]}`: the mean of
/// the body's probabilities on `x` and on `x'[t, c] = signs[c] · x[t, channels[c]]`.
public struct FlipAverageKind: LayerKind {
    public static let typeName = "flipAverage"
    public var channels: [Int], signs: [Float], body: [LayerSpec]
    public init(channels: [Int], signs: [Float], body: [LayerSpec]) {
        self.channels = channels
        self.signs = signs
        self.body = body
    }
    public init(fields f: some LayerFieldReader) throws {
        self.init(channels: try f.ints("channels"), signs: try f.floats("signs"), body: try f.layers("body"))
    }
    public var fields: [(key: String, value: LayerField)] { [("channels", .ints(channels)), ("signs", .floats(signs)), ("body", .layers(body))] }
    public var summary: String { "flipAverage over each window and its mirror image of " + AverageProbabilitiesKind.brief(body) }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        guard channels.count == input.channels, signs.count == input.channels else {
            throw check.invalid("channels (\(channels.count)) and signs (\(signs.count)) must each list the \(input.channels) input channels")
        }
        if let bad = channels.first(where: { !(0..<input.channels).contains($0) }) {
            throw check.invalid("channel \(bad) is not one of the \(input.channels) input channels")
        }
        if let bad = signs.first(where: { $0 != 1 && $0 != -1 }) { throw check.invalid("sign \(bad) must be 1 or -1") }
        return LayerShapes(output: try check.logitBranches([("body", body)], input: input))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        let a = try builder.chain(body, input: input, branch: "body"), b = try builder.chain(body, input: input, branch: "body")
        return FlipAverage(body: a.layers, mirrored: b.layers, channels: channels, signs: signs, input: input, output: shapes.output)
    }

    /// The body on the input and on Gather(channels) · signs (sharing initializers), LogSoftmax
    /// of each, then `log mean exp`.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let gathered = g.node("Gather", [x, g.int64s(p + "channels", channels)], attributes: [("axis", .int(2))], name: p + "mirror")
        let mirrored = g.node("Mul", [gathered, g.floats(p + "signs", [signs.count], signs)], name: p + "mirror")
        let a = g.logSoftmax(try g.emit(body, prefix: p + "body.", input: x, shape: shape), name: p + "logsoftmax")
        let b = g.logSoftmax(try g.emit(body, prefix: p + "body.", input: mirrored, shape: shape), name: p + "logsoftmax")
        return g.logMeanExp([a, b], name: p + "average")
    }

    public static func example(input: Shape) -> FlipAverageKind {
        let C = input.channels
        return FlipAverageKind(
            channels: (0..<C).map { C - 1 - $0 }, signs: (0..<C).map { $0 % 2 == 0 ? -1 : 1 },
            body: [.conv1d(inputs: C, outputs: 4, kernel: 2, stride: 1, dilation: 1, padding: 0), .gelu, .globalAveragePool, .linear(inputs: 4, outputs: 3)])
    }
}

extension LayerSpec {
    /// Test-time flip averaging over the body (see `FlipAverage`).
    public static func flipAverage(channels: [Int], signs: [Float], body: [LayerSpec]) -> LayerSpec {
        LayerSpec(FlipAverageKind(channels: channels, signs: signs, body: body))
    }
}
