/// Mean over time: `[time, channels] -> [1, channels]`.
///
/// Shapes: B = batch, T = time, C = channels.
/// Forward `y[b, c] = (1/T) Σ_t x[b, t, c]`; backward `dx[b, t, c] = dy[b, c] / T`. Large
/// batches are split over `BLAS.threads` (whole windows per part).
final class GlobalAveragePool: PooledInputGradient {
    let shape: Shape
    var spec: LayerSpec { .globalAveragePool }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.channels) }
    private let y = Buffer()  // [B, C]
    var dx = Buffer()  // [B, T, C]

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let T = shape.time, C = shape.channels, scale = 1 / Float(T)
        y.reserve(batch * C)
        let out = y.pointer
        BLAS.parallelRanges(batch, minimum: max(1, ReLU.minimumPerPart / (T * C)), alignment: 1) { r in
            for b in r {
                let yb = out + b * C, xb = x + b * T * C
                yb.update(from: xb, count: C)
                for t in 1..<max(T, 1) {
                    let xt = xb + t * C
                    for c in 0..<C { yb[c] += xt[c] }
                }
                for c in 0..<C { yb[c] *= scale }
            }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let T = shape.time, C = shape.channels, scale = 1 / Float(T)
        dx.reserve(batch * T * C)
        let out = dx.pointer
        BLAS.parallelRanges(batch, minimum: max(1, ReLU.minimumPerPart / (T * C)), alignment: 1) { r in
            for b in r {
                let dyb = dy + b * C, dxb = out + b * T * C
                for c in 0..<C { dxb[c] = dyb[c] * scale }
                for t in 1..<max(T, 1) { (dxb + t * C).update(from: dxb, count: C) }
            }
        }
        return UnsafePointer(out)
    }
}

/// `{"type": "globalAveragePool"}`: Mean over time: `[time, channels] -> [1, channels]`.
public struct GlobalAveragePoolKind: FieldlessLayerKind {
    public static let typeName = "globalAveragePool"
    public init() {}
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: Shape(time: 1, channels: input.channels)) }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { GlobalAveragePool(shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        return g.node("ReduceMean", [x], attributes: [("axes", .ints([1])), ("keepdims", .int(1))], name: p + "mean")
    }
}

extension LayerSpec {
    /// Mean over time: `[time, channels] -> [1, channels]`.
    public static let globalAveragePool = LayerSpec(GlobalAveragePoolKind())
}
