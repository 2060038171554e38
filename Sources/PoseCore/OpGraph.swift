/// An attribute of a graph operator (the kinds of ONNX's `AttributeProto` that the exports use).
public enum GraphAttribute: Sendable {
    case int(Int), ints([Int]), float(Float)
}

/// A graph of ONNX-style operators being built (opset 17 semantics: `Gather`, `Slice`, `Sub`,
/// `ReduceSum`, ...; values are named by strings). The one op-level description that the
/// channel blocks (`ChannelBlockKind.graph`), the preprocessing and the layer kinds are written
/// against: ModelExport's ONNX writer stores the ops as they are, and any other exporter can
/// lower them. `ONNXGraph` (ActionRuntime) adds what layers need (their tensors, nested layers).
public protocol OpGraph: AnyObject {
    /// Adds a node; returns its output's name (`name` prefixes it).
    func node(_ op: String, _ inputs: [String], attributes: [(String, GraphAttribute)], name: String) -> String
    /// A float32 initializer (once per name); returns its name.
    func floats(_ name: String, _ dims: [Int], _ values: [Float]) -> String
    /// An int64 initializer `[values.count]` (once per name); returns its name.
    func int64s(_ name: String, _ values: [Int]) -> String
}

/// The small pieces the blocks and the preprocessing build from. Values are `[B, F, J, D]`-like
/// tensors; axes are ONNX axes.
extension OpGraph {
    public func node(_ op: String, _ inputs: [String], name: String) -> String {
        node(op, inputs, attributes: [], name: name)
    }

    /// A float32 scalar constant.
    public func constant(_ v: Float) -> String { floats("const.\(v)", [], [v]) }

    /// `ReduceSum` over `axes`, keeping them.
    public func sum(_ x: String, _ axes: [Int]) -> String {
        node("ReduceSum", [x, int64s("axes." + axes.map(String.init).joined(separator: "_"), axes)], attributes: [("keepdims", .int(1))], name: "pre.sum")
    }

    /// `Gather` of `indices` on `axis` (the initializer is named by its values, or their hash
    /// for long lists, so equal lists share it).
    public func gather(_ x: String, _ indices: [Int], axis: Int) -> String {
        var key = indices.map(String.init).joined(separator: "_")
        if indices.count > 16 { key = FNV1a64.text(of: Array(key.utf8)) }
        return node("Gather", [x, int64s("pre.indices." + key, indices)], attributes: [("axis", .int(axis))], name: "pre.gather")
    }

    /// `Slice` of `start ..< end` on `axis`.
    public func slice(_ x: String, axis: Int, _ start: Int, _ end: Int) -> String {
        node("Slice", [x, int64s("pre.at.\(start)", [start]), int64s("pre.at.\(end)", [end]), int64s("pre.at.\(axis)", [axis])], name: "pre.slice")
    }

    /// `Reshape` to `shape` (0 keeps a dimension, −1 infers one).
    public func reshape(_ x: String, _ shape: [Int]) -> String {
        node("Reshape", [x, int64s("shape." + shape.map(String.init).joined(separator: "_"), shape)], name: "pre.reshape")
    }

    /// `[B, F, ...]` as `[B, F, −1]`: a block's values of each frame in one row.
    public func frameRows(_ x: String) -> String { reshape(x, [0, 0, -1]) }

    /// `x > 0` (a boolean value).
    public func positive(_ x: String) -> String { node("Greater", [x, constant(0)], name: "pre.positive") }

    /// `max(x, 1)`.
    public func atLeastOne(_ x: String) -> String { node("Max", [x, constant(1)], name: "pre.max") }
}
