/// `y = max(x, 0)`; `dx = dy · [x > 0]` (the gradient at exactly 0 is 0). Large activations
/// are split over `BLAS.threads` (`BLAS.parallelRanges`).
final class ReLU: PooledInputGradient {
    let shape: Shape
    var spec: LayerSpec { .relu }
    var inputShape: Shape { shape }
    var outputShape: Shape { shape }
    private let y = Buffer()
    var dx = Buffer()  // [B, T, C] each
    /// Below this many values per part a second thread costs more than it saves.
    static let minimumPerPart = 1 << 15

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let n = batch * shape.count
        y.reserve(n)
        let out = y.pointer
        BLAS.parallelRanges(n, minimum: ReLU.minimumPerPart) { r in
            for i in r { out[i] = max(x[i], 0) }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let n = batch * shape.count
        dx.reserve(n)
        let out = y.pointer, g = dx.pointer
        // y > 0 exactly where x > 0, so the cached output serves as the mask. Both loads are
        // unconditional so that the select vectorises (a conditional load would not).
        BLAS.parallelRanges(n, minimum: ReLU.minimumPerPart) { r in
            for i in r {
                let d = dy[i]
                g[i] = out[i] > 0 ? d : 0
            }
        }
        return UnsafePointer(g)
    }
}

/// `{"type": "relu"}`: `y = max(x, 0)`.
public struct ReLUKind: FieldlessLayerKind {
    public static let typeName = "relu"
    public init() {}
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: input) }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { ReLU(shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        return g.node("Relu", [x], name: p + "relu")
    }
}

extension LayerSpec {
    /// `y = max(x, 0)`.
    public static let relu = LayerSpec(ReLUKind())
}
