import PoseCore

/// Picks channels: `y[t, j] = x[t, channels[j]]` (a channel may be picked more than once).
/// A multi-stream model's members start with it to read their own channel blocks.
///
/// Shapes: B = batch, T = time, C = input channels, J = picked channels.
/// Backward: `dx[t, channels[j]] += dy[t, j]` (zero elsewhere).
/// Fast: the picks are kept as runs of consecutive channels (a member's block is usually one
/// run), each copied as one block per row instead of a value at a time.
final class SelectChannels: PooledInputGradient {
    let channels: [Int]
    let inputShape: Shape
    /// `channels` as runs: `y[t, to ..< to + count] = x[t, from ..< from + count]`.
    private let runs: [(from: Int, to: Int, count: Int)]
    var outputShape: Shape { Shape(time: inputShape.time, channels: channels.count) }
    var spec: LayerSpec { .selectChannels(channels) }
    private let y = Buffer()
    var dx = Buffer()  // [B, T, J], [B, T, C]

    init(channels: [Int], input: Shape) {
        self.channels = channels
        self.inputShape = input
        var runs: [(from: Int, to: Int, count: Int)] = []
        for (j, c) in channels.enumerated() {
            if let last = runs.last, last.from + last.count == c {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((c, j, 1))
            }
        }
        self.runs = runs
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let C = inputShape.channels, J = channels.count, rows = batch * inputShape.time
        y.reserve(rows * J)
        let out = y.pointer
        runs.withUnsafeBufferPointer { runs in
            for r in 0..<rows {
                let src = x + r * C, dst = out + r * J
                for run in runs { (dst + run.to).update(from: src + run.from, count: run.count) }
            }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let C = inputShape.channels, J = channels.count, rows = batch * inputShape.time
        dx.reserve(rows * C)
        let out = dx.pointer
        out.update(repeating: 0, count: rows * C)
        for r in 0..<rows {
            let src = dy + r * J, dst = out + r * C
            for j in 0..<J { dst[channels[j]] += src[j] }
        }
        return UnsafePointer(out)
    }
}

/// `{"type": "selectChannels", "channels": [j0, j1, ...]}`: `y[t, k] = x[t, channels[k]]`.
public struct SelectChannelsKind: LayerKind {
    public static let typeName = "selectChannels"
    public var channels: [Int]
    public init(channels: [Int]) { self.channels = channels }
    public init(fields f: some LayerFieldReader) throws { self.init(channels: try f.ints("channels")) }
    public var fields: [(key: String, value: LayerField)] { [("channels", .ints(channels))] }
    public var summary: String { "selectChannels \(channels.count) of the input channels" }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        try check.size("the number of channels", channels.count, max: ModelFile.Limits.inputChannels)
        if let bad = channels.first(where: { !(0..<input.channels).contains($0) }) {
            throw check.invalid("channel \(bad) is not one of the \(input.channels) input channels")
        }
        return LayerShapes(output: Shape(time: input.time, channels: channels.count))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        SelectChannels(channels: channels, input: input)
    }

    /// Gather on the channel axis.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        g.node("Gather", [x, g.int64s(p + "channels", channels)], attributes: [("axis", .int(2))], name: p + "select")
    }

    public static func example(input: Shape) -> SelectChannelsKind { SelectChannelsKind(channels: [input.channels - 1, 0, 0]) }
}

extension LayerSpec {
    /// `y[t, k] = x[t, channels[k]]`.
    public static func selectChannels(_ channels: [Int]) -> LayerSpec { LayerSpec(SelectChannelsKind(channels: channels)) }
}
