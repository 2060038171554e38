/// Means over time segments at several scales, side by side: `[time, channels] -> [1, channels · Σ levels]`.
///
/// Shapes: B = batch, T = time, C = channels, L = a level (a number of equal segments).
/// For each level L in `levels` (in order) and segment s < L, frames `t ∈ [⌊s·T/L⌋, ⌊(s+1)·T/L⌋)`:
/// `y[b, o + s·C + c] = (1/n_s) Σ_t x[b, t, c]` (summed in frame order, then times `1/n_s`)
/// with `n_s` the segment's frames and `o` the offset of the level (Σ of the earlier levels
/// times C). Every level is at most T, so no segment is empty. Level 1 is global average
/// pooling; levels 1, 2, 4 are a temporal pyramid (as the Fourier temporal pyramids of Wang et
/// al. 2012 pool their segments), which keeps coarse order in time that a global mean loses.
/// Backward spreads `dy / n_s` over each segment's frames. Large batches are split over
/// `BLAS.threads` (whole windows per part).
final class TemporalPyramidPool: PooledInputGradient {
    let shape: Shape
    let levels: [Int]
    /// Segment bounds in frames, level by level: segment k is `starts[k] ..< ends[k]`.
    private let starts: [Int], ends: [Int]
    var spec: LayerSpec { .temporalPyramidPool(levels: levels) }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.channels * starts.count) }
    private let y = Buffer()  // [B, S·C]
    var dx = Buffer()  // [B, T, C]

    init(shape: Shape, levels: [Int]) {
        self.shape = shape
        self.levels = levels
        let segments = TemporalPyramidPoolKind.segments(levels: levels, time: shape.time)
        starts = segments.map(\.start)
        ends = segments.map(\.end)
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let T = shape.time, C = shape.channels, S = starts.count
        y.reserve(batch * S * C)
        let out = y.pointer
        BLAS.parallelRanges(batch, minimum: max(1, ReLU.minimumPerPart / (T * C)), alignment: 1) { r in
            for b in r {
                let xb = x + b * T * C
                for k in 0..<S {
                    let yk = out + (b * S + k) * C
                    yk.update(from: xb + starts[k] * C, count: C)
                    for t in (starts[k] + 1)..<max(ends[k], starts[k] + 1) {
                        let xt = xb + t * C
                        for c in 0..<C { yk[c] += xt[c] }
                    }
                    let scale = 1 / Float(ends[k] - starts[k])
                    for c in 0..<C { yk[c] *= scale }
                }
            }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let T = shape.time, C = shape.channels, S = starts.count
        dx.reserve(batch * T * C)
        let out = dx.pointer
        BLAS.parallelRanges(batch, minimum: max(1, ReLU.minimumPerPart / (T * C)), alignment: 1) { r in
            for b in r {
                let dxb = out + b * T * C
                dxb.update(repeating: 0, count: T * C)
                for k in 0..<S {
                    let dyk = dy + (b * S + k) * C, scale = 1 / Float(ends[k] - starts[k])
                    for t in starts[k]..<ends[k] {
                        let dxt = dxb + t * C
                        for c in 0..<C { dxt[c] += dyk[c] * scale }
                    }
                }
            }
        }
        return UnsafePointer(out)
    }
}

/// `{"type": "temporalPyramidPool", "levels": [1, 2, 4]}`: means over 1, 2, 4, ... equal time
/// segments side by side: `[time, channels] -> [1, channels · Σ levels]`.
public struct TemporalPyramidPoolKind: LayerKind {
    public static let typeName = "temporalPyramidPool"
    /// Segments per level, each from 1 to the input's time length; at most `maxLevels` levels.
    public var levels: [Int]
    public static let maxLevels = 16
    public init(levels: [Int]) { self.levels = levels }
    public init(fields r: some LayerFieldReader) throws { levels = try r.ints("levels") }
    public var fields: [(key: String, value: LayerField)] { [("levels", .ints(levels))] }
    public var summary: String { "temporalPyramidPool \(levels.map(String.init).joined(separator: ","))" }
    public static func example(input: Shape) -> Self { Self(levels: [1, 3]) }  // uneven segments for T = 4: 0..<1, 1..<2, 2..<4

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        guard !levels.isEmpty else { throw check.invalid("levels must name at least one level") }
        guard levels.count <= Self.maxLevels else { throw check.invalid("levels may list at most \(Self.maxLevels) levels, got \(levels.count)") }
        for L in levels { try check.size("a level", L, max: input.time) }
        let segments = levels.reduce(0, +)
        return LayerShapes(output: Shape(time: 1, channels: try check.product("outputs", [input.channels, segments])))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        TemporalPyramidPool(shape: input, levels: levels)
    }

    /// Per segment a `Slice` of its frames (bounds from the input's time length) and a
    /// `ReduceMean` over time, concatenated on the channel axis in segment order.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let means = Self.segments(levels: levels, time: shape.time).map { (start, end) in
            let frames = g.node(
                "Slice", [x, g.int64s(p + "start.\(start)", [start]), g.int64s(p + "end.\(end)", [end]), g.int64s(p + "axis", [1])],
                name: p + "segment")
            return g.node("ReduceMean", [frames], attributes: [("axes", .ints([1])), ("keepdims", .int(1))], name: p + "mean")
        }
        return means.count == 1 ? means[0] : g.node("Concat", means, attributes: [("axis", .int(2))], name: p + "pyramid")
    }

    /// The segments' frames `start ..< end`, level by level: `⌊s·T/L⌋ ..< ⌊(s+1)·T/L⌋` for s < L.
    static func segments(levels: [Int], time T: Int) -> [(start: Int, end: Int)] {
        levels.flatMap { L in (0..<L).map { s in (s * T / L, (s + 1) * T / L) } }
    }
}

extension LayerSpec {
    /// Means over 1, 2, 4, ... equal time segments side by side.
    public static func temporalPyramidPool(levels: [Int]) -> LayerSpec { LayerSpec(TemporalPyramidPoolKind(levels: levels)) }
}
