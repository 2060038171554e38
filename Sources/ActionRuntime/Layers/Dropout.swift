import PoseCore

/// Inverted dropout. Training: each value is kept with probability `1 − p` and scaled by
/// `1/(1 − p)`, else zeroed, so the expectation is unchanged; inference: the identity.
///
/// Shapes: N = B·T·C values. The mask is drawn from `mode.random` in index order, one
/// `nextUnitFloat()` per value (`u < p` drops; `ElementwiseKernels.dropout`, 8 draws at a time
/// with AVX2), so it is the same for the same seed
/// whatever the thread count. (Large activations split over `BLAS.threads`: SplitMix64's state
/// before value i is the start plus i steps, so each part starts its own generator there.)
/// Forward `y = m ⊙ x`, backward `dx = m ⊙ dy`, with `m ∈ {0, 1/(1 − p)}`; the mask is kept as
/// one byte per value (1: kept), a quarter of a float mask (ST-GCN's activations are
/// 1.47 M values per layer at batch 64).
final class Dropout: PooledInputGradient {
    let rate: Float
    let shape: Shape
    var spec: LayerSpec { .dropout(rate: rate) }
    var inputShape: Shape { shape }
    var outputShape: Shape { shape }
    private let y = Buffer()
    var dx = Buffer()  // [N] each
    private let mask = Buffer()  // N bytes (1: kept, 0: dropped) in ⌈N/4⌉ floats' room
    /// Whether the last forward applied a mask (training with p > 0); if not, backward is
    /// the identity too.
    private var masked = false
    /// Below this many values per part a second thread costs more than it saves.
    static let minimumPerPart = 1 << 15

    init(rate: Float, shape: Shape) {
        self.rate = rate
        self.shape = shape
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        masked = mode.training && rate > 0
        guard masked else { return x }
        let n = batch * shape.count
        mask.reserve((n + 3) / 4)
        y.reserve(n)
        let m = UnsafeMutableRawPointer(mask.pointer).bindMemory(to: UInt8.self, capacity: n)
        let out = y.pointer, p = rate, scale = 1 / (1 - rate), start = mode.random.state
        BLAS.parallelRanges(n, minimum: Dropout.minimumPerPart) { r in
            ElementwiseKernels.dropout(x, out, mask: m, range: r, state: start, rate: p, scale: scale)
        }
        mode.random.state = start &+ UInt64(n) &* SeededGenerator.increment  // as n draws leave it
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        guard masked else { return dy }
        let n = batch * shape.count
        dx.reserve(n)
        let m = UnsafeRawPointer(mask.pointer).bindMemory(to: UInt8.self, capacity: n), g = dx.pointer, scale = 1 / (1 - rate)
        BLAS.parallelRanges(n, minimum: Dropout.minimumPerPart) { r in
            for i in r { g[i] = dy[i] * (m[i] != 0 ? scale : 0) }
        }
        return UnsafePointer(g)
    }
}

/// `{"type": "dropout", "rate": p}`: inverted dropout in training, the identity at inference.
public struct DropoutKind: LayerKind {
    public static let typeName = "dropout"
    public var rate: Float
    public init(rate: Float) { self.rate = rate }
    public init(fields f: some LayerFieldReader) throws { self.init(rate: try f.float("rate")) }
    public var fields: [(key: String, value: LayerField)] { [("rate", .float(rate))] }
    public var summary: String { "dropout \(rate) (identity at inference)" }
    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        guard rate >= 0 && rate < 1 else { throw check.invalid("rate \(rate) must be in [0, 1)") }
        return LayerShapes(output: input)
    }
    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { Dropout(rate: rate, shape: input) }
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String { x }  // the identity
    public static func example(input: Shape) -> DropoutKind { DropoutKind(rate: 0.25) }
}

extension LayerSpec {
    /// Inverted dropout during training; the identity at inference.
    public static func dropout(rate: Float) -> LayerSpec { LayerSpec(DropoutKind(rate: rate)) }
}
