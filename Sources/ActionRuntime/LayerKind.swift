import Foundation
import PoseCore

/// One layer kind, described once: its JSON fields (header coding, both readers), its shape
/// inference (model-file checks and network building), how it builds its `Layer`, and its
/// ONNX form. Adding a kind is one file (its `Layer` and its description) and one entry in
/// `LayerKinds.all`; docs/architecture.md shows the diff. `LayerKindsTests` fails when a kind
/// is missing from docs/format.md's table, either Python reader, or the ONNX export.
public protocol LayerKind: Hashable, Sendable {
    /// The `type` of the JSON form, e.g. `linear`.
    static var typeName: String { get }
    /// The fields of the JSON form besides `type`.
    var fields: [(key: String, value: LayerField)] { get }
    /// Reads the fields (the inverse of `fields`).
    init(fields: some LayerFieldReader) throws
    /// The output shape and parameter tensors for `input`, checking every size (throw with
    /// `check`'s helpers). Nested kinds infer their branches with `check.chain`.
    func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes
    /// Builds the layer; `shapes` has been checked. Nested kinds build branches with `builder`.
    func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer
    /// Appends the layer's ONNX nodes to `graph` (tensors are named `prefix + parameter`) for
    /// the value `input` of per-window shape `shape` (`[B, shape.time, shape.channels]`);
    /// returns the output value's name.
    func exportONNX(_ graph: ONNXGraph, input: String, shape: Shape, prefix: String) throws -> String
    /// A one-line account for summaries (`actiontrain inspect`).
    var summary: String { get }
    /// A valid instance for an input of `input` (at least 2 time steps and 2 channels), used
    /// by the tests that every kind is supported everywhere.
    static func example(input: Shape) -> Self
    /// The form a model file's header holds when the description has lists of numbers that a
    /// file keeps as tensors of its data section instead (format 1.8: `standardize`'s
    /// statistics, `graphConv`'s adjacency): that form, whose `shapes` declare the tensors as `LayerShapes.data`, and
    /// each tensor with its values. Nil (the default) when the header holds the whole description.
    func headerForm() -> (kind: Self, data: [(tensor: ParameterShape, values: [Float])])?
    /// The description of a header form whose data tensors (`LayerShapes.data`, by name) hold
    /// `values`: the inverse of `headerForm`. Nil (the default) when `self` is not such a form.
    func described(byData values: [String: [Float]]) -> Self?
}

extension LayerKind {
    public var summary: String { Self.typeName }
    public func headerForm() -> (kind: Self, data: [(tensor: ParameterShape, values: [Float])])? { nil }
    public func described(byData values: [String: [Float]]) -> Self? { nil }
}

/// A kind without fields (`relu`, `flatten`, ...): its JSON form is `{"type": name}` only.
public protocol FieldlessLayerKind: LayerKind {
    init()
}

extension FieldlessLayerKind {
    public init(fields: some LayerFieldReader) throws { self.init() }
    public var fields: [(key: String, value: LayerField)] { [] }
    public static func example(input: Shape) -> Self { Self() }
}

/// The registration of every layer kind: the one list the readers and writers consult.
public enum LayerKinds {
    public static let all: [any LayerKind.Type] = [
        LinearKind.self, ReLUKind.self, GELUKind.self, DropoutKind.self, LayerNormKind.self, Conv1dKind.self,
        FlattenKind.self, GlobalAveragePoolKind.self, GlobalMaxPoolKind.self, ResidualKind.self,
        SelectChannelsKind.self, AverageProbabilitiesKind.self, AverageLogProbabilitiesKind.self, FlipAverageKind.self, GraphConvKind.self,
        TemporalPyramidPoolKind.self, FourierPyramidKind.self, StandardizeKind.self,
    ]

    static let byName: [String: any LayerKind.Type] = Dictionary(uniqueKeysWithValues: all.map { ($0.typeName, $0) })

    /// The kind named `type`, or nil.
    public static func named(_ type: String) -> (any LayerKind.Type)? { byName[type] }
}

/// A field value of a layer's JSON form.
public enum LayerField: Hashable, Sendable {
    case int(Int), float(Float), ints([Int]), floats([Float]), layers([LayerSpec]), layerLists([[LayerSpec]])
}

/// Reads a layer's fields from a header (`JSONDecoder` or the header fast path). Each call
/// throws when the key is missing or of another type.
public protocol LayerFieldReader {
    /// Whether the key is there (and not null).
    func contains(_ key: String) -> Bool
    func int(_ key: String) throws -> Int
    func float(_ key: String) throws -> Float
    func ints(_ key: String) throws -> [Int]
    func floats(_ key: String) throws -> [Float]
    func layers(_ key: String) throws -> [LayerSpec]
    func layerLists(_ key: String) throws -> [[LayerSpec]]
}

/// A layer's output shape, its parameter tensors (in file order, its own: a nested kind's
/// branches account for theirs), its data tensors (a header form's lists of numbers that the
/// model file keeps in its data section, `LayerKind.headerForm`) and extra values per window it
/// keeps (conv1d's im2col rows).
public struct LayerShapes {
    public var output: Shape
    public var parameters: [ParameterShape]
    public var data: [ParameterShape]
    public var scratch: Int
    public init(output: Shape, parameters: [ParameterShape] = [], data: [ParameterShape] = [], scratch: Int = 0) {
        self.output = output
        self.parameters = parameters
        self.data = data
        self.scratch = scratch
    }
}

/// Why a layer's shape check failed: a reason, or a size beyond a limit.
public struct LayerCheckError: Error {
    public var reason: String
    public var limit: (what: String, value: Int, limit: Int)?
}

/// The helpers of a kind's shape check, and its branches' inference.
public struct ShapeCheck {
    let chainShape: ([LayerSpec], Shape, String) throws -> Shape

    public func invalid(_ reason: String) -> LayerCheckError { LayerCheckError(reason: reason) }

    /// `value` must be positive (or ≥ `min`) and at most `max`.
    public func size(_ field: String, _ value: Int, min: Int = 1, max: Int = ModelFile.Limits.tensorValues) throws {
        guard value >= min else { throw invalid("\(field) must be \(min == 1 ? "positive" : "at least \(min)"), got \(value)") }
        guard value <= max else { throw LayerCheckError(reason: "\(field) is too large", limit: (field, value, max)) }
    }

    /// The layer reads `expected` channels.
    public func channels(_ expected: Int, of input: Shape) throws {
        guard expected == input.channels else { throw invalid("expects \(expected) channels, receives \(input)") }
    }

    /// The product of `factors`, or a limit error naming `what` when it overflows or exceeds `max`.
    public func product(_ what: String, _ factors: [Int], max: Int = ModelFile.Limits.tensorValues) throws -> Int {
        var n = 1
        for f in factors {
            let (p, overflow) = n.multipliedReportingOverflow(by: f)
            guard !overflow, p <= max else {
                throw LayerCheckError(
                    reason: "\(what) \(factors.map(String.init).joined(separator: " x ")) is too large", limit: (what, overflow ? Int.max : p, max))
            }
            n = p
        }
        return n
    }

    /// The output shape of the branch `specs` for `input` (checked as the top level is).
    public func chain(_ specs: [LayerSpec], input: Shape, branch: String) throws -> Shape {
        try chainShape(specs, input, branch)
    }
}

/// Builds a nested kind's branches (each layer checked as at the top level).
public struct LayerBuilder {
    let path: String

    /// The layers of `specs` over `input`, named `<path>.<branch>.<j>` in errors, and their output.
    func chain(_ specs: [LayerSpec], input: Shape, branch: String) throws -> (layers: [Layer], output: Shape) {
        var shape = input, built: [Layer] = []
        for (j, s) in specs.enumerated() {
            let layer = try makeLayer(s, input: shape, path: "\(path).\(branch).\(j)")
            built.append(layer)
            shape = layer.outputShape
        }
        return (built, shape)
    }
}

/// The ONNX graph being written, as a kind sees it (ModelExport implements it): PoseCore's
/// operator graph (`OpGraph`: nodes and initializers, which the channel blocks also write) and
/// what layers need besides.
public protocol ONNXGraph: OpGraph {
    /// Adds a node with `outputs` outputs (TopK's values and indices); returns their names.
    func node(_ op: String, _ inputs: [String], outputs: Int, attributes: [(String, GraphAttribute)], name: String) -> [String]
    /// A parameter tensor of the network by its full name.
    func tensor(_ name: String) throws -> (shape: [Int], values: [Float])
    /// Emits a list of layers applied to `input` of per-window shape `shape`; returns the
    /// output value's name.
    func emit(_ specs: [LayerSpec], prefix: String, input: String, shape: Shape) throws -> String
}

/// An ONNX node attribute (PoseCore's `GraphAttribute`).
public typealias ONNXAttribute = GraphAttribute

extension ONNXGraph {
    /// Logits `[B, 1, K]` → log-softmax, `z − log Σ exp z` (over the last axis).
    public func logSoftmax(_ x: String, name: String) -> String {
        node("LogSoftmax", [x], attributes: [("axis", .int(-1))], name: name)
    }

    /// `log(Σ_m exp(a_m) / M)` of same-shaped values, elementwise: the log of the mean of
    /// probabilities given as log-probabilities.
    public func logMeanExp(_ values: [String], name: String) -> String {
        let stacked = node("Concat", values, attributes: [("axis", .int(1))], name: name)  // [B, M, K]
        let lse = node("ReduceLogSumExp", [stacked], attributes: [("axes", .ints([1])), ("keepdims", .int(1))], name: name)
        let logM = floats("const.log\(values.count)", [], [Float(log(Double(values.count)))])
        return node("Sub", [lse, logM], name: name)
    }
}
