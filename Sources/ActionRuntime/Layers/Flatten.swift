/// `[time, channels] -> [1, time·channels]`. Memory is already in that order, so forward and
/// backward pass pointers through unchanged.
final class Flatten: Layer {
    let shape: Shape
    var spec: LayerSpec { .flatten }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.count) }

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> { x }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        needInputGradient ? dy : nil
    }
}

/// `{"type": "flatten"}`: `[time, channels] -> [1, time·channels]`, time-major.
public struct FlattenKind: FieldlessLayerKind {
    public static let typeName = "flatten"
    public init() {}
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: Shape(time: 1, channels: input.count)) }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { Flatten(shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        return g.node("Reshape", [x, g.int64s("shape.flatten", [0, 1, -1])], name: p + "flatten")
    }
}

extension LayerSpec {
    /// `[time, channels] -> [1, time·channels]`, time-major.
    public static let flatten = LayerSpec(FlattenKind())
}
