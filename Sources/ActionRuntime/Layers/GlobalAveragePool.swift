/// Mean over time: `[time, channels] -> [1, channels]`.
///
/// Shapes: B = batch, T = time, C = channels.
/// Forward `y[b, c] = (1/T) Σ_t x[b, t, c]`; backward `dx[b, t, c] = dy[b, c] / T`.
final class GlobalAveragePool: Layer {
    let shape: Shape
    var spec: LayerSpec { .globalAveragePool }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.channels) }
    private let y = Buffer()  // [B, C]
    private let dx = Buffer()  // [B, T, C]

    init(shape: Shape) { self.shape = shape }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let T = shape.time, C = shape.channels, scale = 1 / Float(T)
        y.reserve(batch * C)
        for b in 0..<batch {
            let yb = y.pointer + b * C, xb = x + b * T * C
            yb.update(from: xb, count: C)
            for t in 1..<max(T, 1) {
                let xt = xb + t * C
                for c in 0..<C { yb[c] += xt[c] }
            }
            for c in 0..<C { yb[c] *= scale }
        }
        return UnsafePointer(y.pointer)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let T = shape.time, C = shape.channels, scale = 1 / Float(T)
        dx.reserve(batch * T * C)
        for b in 0..<batch {
            let dyb = dy + b * C, dxb = dx.pointer + b * T * C
            for c in 0..<C { dxb[c] = dyb[c] * scale }
            for t in 1..<max(T, 1) { (dxb + t * C).update(from: dxb, count: C) }
        }
        return UnsafePointer(dx.pointer)
    }
}
