import PoseCore

/// A residual block: `y = body(x) + shortcut(x)`, where body and shortcut are layer lists
/// over the same input and an empty list is the identity. Both must give the same shape
/// (checked by `makeLayer`).
///
/// Shapes: B = batch, N = values per window of the output.
/// Backward: `dy` flows through both branches; `dx = dx_body + dx_shortcut`.
/// Parameters are the body's then the shortcut's, named `body.<j>.<name>` and
/// `shortcut.<j>.<name>` (the network prefixes `layers.<i>.`).
final class Residual: LayerContainer {
    let body: [Layer], shortcut: [Layer]
    private var bodyChain: LayerChain, shortcutChain: LayerChain
    private var pool: GradientPool?
    let inputShape: Shape, outputShape: Shape
    var spec: LayerSpec { .residual(body: body.map(\.spec), shortcut: shortcut.map(\.spec)) }
    private let y = Buffer(), dx = Buffer()  // [B, N], [B, inputShape]

    init(body: [Layer], shortcut: [Layer], input: Shape, output: Shape) {
        self.body = body
        self.shortcut = shortcut
        bodyChain = LayerChain(body)
        shortcutChain = LayerChain(shortcut)
        self.inputShape = input
        self.outputShape = output
    }

    var parameterShapes: [ParameterShape] {
        var shapes: [ParameterShape] = []
        for (branch, layers) in [("body", body), ("shortcut", shortcut)] {
            for (j, layer) in layers.enumerated() {
                for p in layer.parameterShapes { shapes.append(ParameterShape("\(branch).\(j).\(p.name)", p.shape, layout: p.layout)) }
            }
        }
        return shapes
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        var offset = 0
        for layer in body + shortcut {
            layer.bind(parameters: parameters + offset, gradients: gradients + offset)
            offset += layer.parameterCount
        }
    }

    func initialize(using g: inout SeededGenerator) {
        for layer in body + shortcut { layer.initialize(using: &g) }
    }

    var sublayers: [Layer] { body + shortcut }

    func attach(_ pool: GradientPool) {
        self.pool = pool
        bodyChain.attach(pool)
        shortcutChain.attach(pool)
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let a = bodyChain.forward(x, batch: batch, mode: &mode)
        let s = shortcutChain.forward(x, batch: batch, mode: &mode)
        let n = batch * outputShape.count
        y.reserve(n)
        let out = y.pointer
        for i in 0..<n { out[i] = a[i] + s[i] }
        return UnsafePointer(out)
    }

    /// With a pool, `dy` stays pinned while the body runs (the shortcut reads it next), and the
    /// body's gradient while the shortcut runs; the sum goes to a pool buffer holding neither.
    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        pool?.pin(dy)
        let gBody = bodyChain.backward(dy, batch: batch, needInputGradient: needInputGradient)
        pool?.pin(gBody)
        let gShortcut = shortcutChain.backward(dy, batch: batch, needInputGradient: needInputGradient)
        pool?.unpin(gBody)
        pool?.unpin(dy)
        guard needInputGradient, let gBody, let gShortcut else { return nil }
        let n = batch * inputShape.count
        let target = pool?.buffer(avoiding: dy, gBody, gShortcut) ?? dx
        target.reserve(n)
        let out = target.pointer
        for i in 0..<n { out[i] = gBody[i] + gShortcut[i] }
        return UnsafePointer(out)
    }
}

/// `{"type": "residual", "body": [layer], "shortcut": [layer]}`: `y = body(x) + shortcut(x)`.
public struct ResidualKind: LayerKind {
    public static let typeName = "residual"
    public var body: [LayerSpec], shortcut: [LayerSpec]
    public init(body: [LayerSpec], shortcut: [LayerSpec]) {
        self.body = body
        self.shortcut = shortcut
    }
    public init(fields f: some LayerFieldReader) throws { self.init(body: try f.layers("body"), shortcut: try f.layers("shortcut")) }
    public var fields: [(key: String, value: LayerField)] { [("body", .layers(body)), ("shortcut", .layers(shortcut))] }
    public var summary: String {
        let s = shortcut.isEmpty ? "x" : shortcut.map(\.kind.summary).joined(separator: ", ")
        return "residual [\(body.map(\.kind.summary).joined(separator: ", "))] + [\(s)]"
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        let b = try check.chain(body, input: input, branch: "body"), s = try check.chain(shortcut, input: input, branch: "shortcut")
        guard b == s else {
            throw check.invalid(
                "the body gives \(b) per window but the shortcut gives \(s)" + (shortcut.isEmpty ? " (the identity)" : "")
                    + "; they are added, so they must agree")
        }
        return LayerShapes(output: b)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        let b = try builder.chain(body, input: input, branch: "body"), s = try builder.chain(shortcut, input: input, branch: "shortcut")
        return Residual(body: b.layers, shortcut: s.layers, input: input, output: shapes.output)
    }

    /// Add of both branches.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let b = try g.emit(body, prefix: p + "body.", input: x, shape: shape), s = try g.emit(shortcut, prefix: p + "shortcut.", input: x, shape: shape)
        return g.node("Add", [b, s], name: p + "residual")
    }

    public static func example(input: Shape) -> ResidualKind {
        ResidualKind(body: [.linear(inputs: input.channels, outputs: input.channels), .relu], shortcut: [])
    }
}

extension LayerSpec {
    /// `y = body(x) + shortcut(x)`; an empty shortcut is the identity.
    public static func residual(body: [LayerSpec], shortcut: [LayerSpec]) -> LayerSpec { LayerSpec(ResidualKind(body: body, shortcut: shortcut)) }
}
