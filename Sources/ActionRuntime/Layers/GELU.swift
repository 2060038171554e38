import Foundation

/// GELU, tanh approximation (as PyTorch's `approximate="tanh"`), elementwise.
///
/// Shapes: N = B·T·C values.
/// Forward  `y = ½ x (1 + tanh u)`, `u = √(2/π) (x + 0.044715 x³)`.
/// Backward `dx = dy · (½ (1 + tanh u) + ½ x (1 − tanh² u) · √(2/π) (1 + 3 · 0.044715 x²))`.
final class GELU: PooledInputGradient {
    let shape: Shape
    var spec: LayerSpec { .gelu }
    var inputShape: Shape { shape }
    var outputShape: Shape { shape }
    private var x: UnsafePointer<Float>?  // cached input [N]
    private let y = Buffer()
    var dx = Buffer()  // [N] each

    static let c0: Float = (2 / Float.pi).squareRoot()  // √(2/π)
    static let c1: Float = 0.044715

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let n = batch * shape.count
        self.x = x
        y.reserve(n)
        let out = y.pointer, c0 = GELU.c0, c1 = GELU.c1
        for i in 0..<n {
            let v = x[i]
            out[i] = 0.5 * v * (1 + tanhf(c0 * (v + c1 * v * v * v)))
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        guard let x else { preconditionFailure("GELU.backward before forward") }
        let n = batch * shape.count
        dx.reserve(n)
        let g = dx.pointer, c0 = GELU.c0, c1 = GELU.c1
        for i in 0..<n {
            let v = x[i]
            let th = tanhf(c0 * (v + c1 * v * v * v))
            let du = c0 * (1 + 3 * c1 * v * v)  // du/dx
            g[i] = dy[i] * (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * du)
        }
        return UnsafePointer(g)
    }
}

/// `{"type": "gelu"}`: GELU, tanh approximation: `0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))`.
public struct GELUKind: FieldlessLayerKind {
    public static let typeName = "gelu"
    public init() {}
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: input) }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { GELU(shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        // y = 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
        let c0 = g.floats("const.sqrt_2_over_pi", [], [(2 / Float.pi).squareRoot()])
        let c1 = g.floats("const.0.044715", [], [0.044715])
        let one = g.floats("const.1", [], [1]), half = g.floats("const.0.5", [], [0.5])
        let n = p + "gelu"
        let x3 = g.node("Mul", [g.node("Mul", [x, x], name: n), x], name: n)
        let u = g.node("Add", [x, g.node("Mul", [x3, c1], name: n)], name: n)
        let t = g.node("Tanh", [g.node("Mul", [u, c0], name: n)], name: n)
        return g.node("Mul", [g.node("Mul", [x, half], name: n), g.node("Add", [t, one], name: n)], name: n)
    }
}

extension LayerSpec {
    /// GELU, tanh approximation: `0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))`.
    public static let gelu = LayerSpec(GELUKind())
}
