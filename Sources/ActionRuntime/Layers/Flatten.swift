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
