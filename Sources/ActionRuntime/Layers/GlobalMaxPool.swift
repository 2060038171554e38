/// Max over time: `[time, channels] -> [1, channels]`.
///
/// Shapes: B = batch, T = time, C = channels.
/// Forward `y[b, c] = max_t x[b, t, c]`, remembering the arg-max `a[b, c]` (the first index
/// on ties); backward `dx[b, t, c] = dy[b, c]` where `t == a[b, c]`, else 0.
final class GlobalMaxPool: PooledInputGradient {
    let shape: Shape
    var spec: LayerSpec { .globalMaxPool }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.channels) }
    private let y = Buffer()  // [B, C]
    private let argmax = IndexBuffer()  // [B, C]
    var dx = Buffer()  // [B, T, C]

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let T = shape.time, C = shape.channels
        y.reserve(batch * C)
        argmax.reserve(batch * C)
        for b in 0..<batch {
            let yb = y.pointer + b * C, ab = argmax.pointer + b * C, xb = x + b * T * C
            yb.update(from: xb, count: C)
            ab.update(repeating: 0, count: C)
            for t in 1..<max(T, 1) {
                let xt = xb + t * C, index = Int32(t)
                for c in 0..<C where xt[c] > yb[c] {  // strictly greater: the first maximum wins
                    yb[c] = xt[c]
                    ab[c] = index
                }
            }
        }
        return UnsafePointer(y.pointer)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let T = shape.time, C = shape.channels
        dx.reserve(batch * T * C)
        dx.pointer.update(repeating: 0, count: batch * T * C)
        for b in 0..<batch {
            let dyb = dy + b * C, ab = argmax.pointer + b * C, dxb = dx.pointer + b * T * C
            for c in 0..<C { dxb[Int(ab[c]) * C + c] = dyb[c] }
        }
        return UnsafePointer(dx.pointer)
    }
}

/// `{"type": "globalMaxPool"}`: Max over time: `[time, channels] -> [1, channels]`.
public struct GlobalMaxPoolKind: FieldlessLayerKind {
    public static let typeName = "globalMaxPool"
    public init() {}
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: Shape(time: 1, channels: input.channels)) }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { GlobalMaxPool(shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        return g.node("ReduceMax", [x], attributes: [("axes", .ints([1])), ("keepdims", .int(1))], name: p + "max")
    }
}

extension LayerSpec {
    /// Max over time: `[time, channels] -> [1, channels]`.
    public static let globalMaxPool = LayerSpec(GlobalMaxPoolKind())
}
