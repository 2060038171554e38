import ActionRuntime
import Foundation
import PoseCore

/// Exports a loaded model as an ONNX graph (opset 17, IR version 8), protobuf written by hand
/// from the public schema (onnx/onnx.proto).
///
/// Graph contract:
/// - input `input`, float32 `[batch, frames, channels]`: the same network input as the
///   runtime's (docs/format.md section 5 builds it from poses); or, with `rawPoses`, `poses`
///   float32 `[batch, frames, joints, dimensions + 1]` and the preprocessing in the graph
///   (docs/format.md 7.1);
/// - outputs `logits` and `probabilities` (softmax), float32 `[batch, classes]`;
/// - `metadata_props` carries what the graph cannot: the classes and the whole input
///   description (skeleton, window, preprocessing steps, channel blocks) as JSON, under keys
///   `actiontrain.*` listed in docs/format.md section 7.
///
/// Layer mapping (activations stay `[B, T, C]`): each kind's `LayerKind.exportONNX`, listed in
/// docs/format.md section 7.
public enum ONNXExport {
    public static let opset = 17
    public static let irVersion = 8

    public enum ExportError: Error, CustomStringConvertible {
        case missingTensor(String)
        public var description: String {
            switch self {
            case .missingTensor(let name): return "cannot export: the network has no tensor '\(name)'"
            }
        }
    }

    /// The metadata keys and values recorded in the ONNX model.
    public static func metadata(_ h: ModelHeader) throws -> [(key: String, value: String)] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func json<T: Encodable>(_ v: T) throws -> String { String(decoding: try encoder.encode(v), as: UTF8.self) }
        var out: [(String, String)] = [
            ("actiontrain.format", "\(ModelFile.formatName) \(ModelFile.majorVersion).\(ModelFile.minorVersion)"),
            ("actiontrain.classes", try json(h.classes)),
            ("actiontrain.input", try json(h.input)),
            ("actiontrain.inputShape", try json(h.inputShape)),
            ("actiontrain.inputLayout", "[batch, frames, channels]; channels of a frame are the blocks of actiontrain.input.channels in order (docs/format.md section 5)"),
            ("actiontrain.coordinateSystem", try json(h.coordinateSystem)),
            ("actiontrain.provenance", try json(h.provenance)),
        ]
        if let r = h.trainingFrameRate { out.append(("actiontrain.trainingFrameRate", "\(r)")) }
        if let m = h.input.bodies { out.append(("actiontrain.bodies", "\(m)")) }
        out.append(("actiontrain.windowMode", h.input.window.mode.rawValue))
        if h.input.window.mode == .fit { out += WindowText.clipKeys(h).map { ("actiontrain." + $0.key, $0.value) } }
        if let st = h.streaming { out.append(("actiontrain.streaming", try json(st))) }
        return out
    }

    /// The ONNX model bytes for `header` and its loaded `network`. Deterministic. With
    /// `rawPoses`, the graph takes raw poses `poses [batch, frames, joints, dimensions + 1]`
    /// (coordinates, then a confidence above 0 for present joints and 0 for absent ones) and
    /// includes the preprocessing (`GraphBuilder.preprocessing`, docs/format.md section 7).
    public static func export(header: ModelHeader, network: Network, rawPoses: Bool = false) throws -> [UInt8] {
        let g = GraphBuilder(network: network)
        var x = "input"
        if rawPoses { x = try g.preprocessing(header.input, poses: "poses") }
        x = try g.emit(header.layers, prefix: "layers.", input: x, shape: header.inputShape)
        let logits = g.node("Reshape", [x, g.int64s("shape.batch_classes", [0, -1])], name: "logits", output: "logits")
        _ = g.node("Softmax", [logits], attributes: [("axis", .int(-1))], name: "probabilities", output: "probabilities")

        let K = header.classes.count, T = header.inputShape.time, C = header.inputShape.channels
        var model = ProtobufWriter()
        model.int(1, irVersion)
        model.string(2, "actiontrain")
        model.string(3, ActionRuntimeInfo.version)
        let inputText = rawPoses ? "poses [batch, \(T), joints, dimensions + 1] raw windows" : "input [batch, \(T), \(C)] network inputs"
        model.string(6, "actiontrain action classifier: \(inputText), outputs logits and probabilities over \(header.classes)")
        model.message(7) { graph in
            for n in g.nodes { graph.message(1) { n.write(&$0) } }
            graph.string(2, "actiontrain")
            for t in g.initializers { graph.message(5) { t.write(&$0) } }
            let skeleton = header.input.skeleton
            if rawPoses {
                graph.message(11) { valueInfo(&$0, "poses", dims: [nil, T, skeleton.jointCount, skeleton.dimensions + 1]) }
            } else {
                graph.message(11) { valueInfo(&$0, "input", dims: [nil, T, C]) }
            }
            graph.message(12) { valueInfo(&$0, "logits", dims: [nil, K]) }
            graph.message(12) { valueInfo(&$0, "probabilities", dims: [nil, K]) }
        }
        model.message(8) {
            $0.string(1, "")  // the default ai.onnx domain
            $0.int(2, opset)
        }
        var properties = try metadata(header)
        if rawPoses {
            properties.append(
                (
                    "actiontrain.posesLayout",
                    "poses [batch, frames, joints, dimensions + 1]: joints in actiontrain.input.skeleton.joints order, their coordinates in its units, then a confidence above 0 for present joints (1 without one) and 0 for absent joints; windows cut and resampled as docs/format.md section 5.2-5.5 says, the preprocessing is in the graph"
                ))
        }
        for (k, v) in properties {
            model.message(14) {
                $0.string(1, k)
                $0.string(2, v)
            }
        }
        return model.bytes
    }

    /// ValueInfoProto: a float tensor whose `nil` dimensions are the symbolic `batch`.
    static func valueInfo(_ w: inout ProtobufWriter, _ name: String, dims: [Int?]) {
        w.string(1, name)
        w.message(2) { type in
            type.message(1) { tensor in
                tensor.int(1, 1)  // FLOAT
                tensor.message(2) { shape in
                    for d in dims {
                        shape.message(1) { dim in
                            if let d { dim.int(1, d) } else { dim.string(2, "batch") }
                        }
                    }
                }
            }
        }
    }
}

/// Nodes and initializers of the graph being built.
final class GraphBuilder: ONNXGraph {
    typealias Attribute = ONNXAttribute

    struct Node {
        var op: String, inputs: [String], outputs: [String], name: String
        var attributes: [(String, Attribute)]

        func write(_ w: inout ProtobufWriter) {
            for i in inputs { w.string(1, i) }
            for o in outputs { w.string(2, o) }
            w.string(3, name)
            w.string(4, op)
            for (key, value) in attributes {
                w.message(5) { a in
                    a.string(1, key)
                    switch value {
                    case .float(let f):
                        a.float(2, f)
                        a.int(20, 1)  // FLOAT
                    case .int(let i):
                        a.int(3, i)
                        a.int(20, 2)  // INT
                    case .ints(let xs):
                        for x in xs { a.int(8, x) }
                        a.int(20, 7)  // INTS
                    }
                }
            }
        }
    }

    struct Initializer {
        var name: String, dims: [Int], dataType: Int, raw: [UInt8]

        func write(_ w: inout ProtobufWriter) {
            for d in dims { w.int(1, d) }
            w.int(2, dataType)
            w.string(8, name)
            w.data(9, raw)
        }
    }

    let network: Network
    var nodes: [Node] = []
    var initializers: [Initializer] = []
    private var names = Set<String>()
    private var counter = 0

    init(network: Network) { self.network = network }

    /// Adds a node; returns its (first) output's name.
    @discardableResult
    func node(_ op: String, _ inputs: [String], attributes: [(String, Attribute)], name: String) -> String {
        node(op, inputs, attributes: attributes, name: name, output: nil)
    }

    func node(
        _ op: String, _ inputs: [String], attributes: [(String, Attribute)] = [], name: String? = nil, output: String?
    ) -> String {
        counter += 1
        let out = output ?? "\(name ?? op.lowercased())_\(counter)"
        nodes.append(Node(op: op, inputs: inputs, outputs: [out], name: "\(name ?? op)_\(counter)", attributes: attributes))
        return out
    }

    /// Adds a node with `outputs` outputs; returns their names.
    func node(_ op: String, _ inputs: [String], outputs: Int, attributes: [(String, Attribute)] = [], name: String) -> [String] {
        counter += 1
        let names = (0..<outputs).map { "\(name)_\(counter)_\($0)" }
        nodes.append(Node(op: op, inputs: inputs, outputs: names, name: "\(name)_\(counter)", attributes: attributes))
        return names
    }

    /// A float32 initializer (once per name).
    func floats(_ name: String, _ dims: [Int], _ values: [Float]) -> String {
        if names.insert(name).inserted {
            var raw: [UInt8] = []
            raw.reserveCapacity(values.count * 4)
            for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { raw += $0 } }
            initializers.append(Initializer(name: name, dims: dims, dataType: 1, raw: raw))
        }
        return name
    }

    /// An int64 initializer (once per name).
    func int64s(_ name: String, _ values: [Int]) -> String {
        if names.insert(name).inserted {
            var raw: [UInt8] = []
            for v in values { withUnsafeBytes(of: Int64(v).littleEndian) { raw += $0 } }
            initializers.append(Initializer(name: name, dims: [values.count], dataType: 7, raw: raw))
        }
        return name
    }

    func tensor(_ name: String) throws -> (shape: [Int], values: [Float]) { try network.exportTensor(name) }

    /// Emits `specs` applied to the value `input` of per-window shape `shape` (each kind's own
    /// ONNX form, given its input's shape); returns the output value's name.
    func emit(_ specs: [LayerSpec], prefix: String, input: String, shape: Shape) throws -> String {
        var x = input
        let shapes = try ModelFile.layerOutputShapes(specs, input: shape)
        for (i, spec) in specs.enumerated() {
            x = try spec.kind.exportONNX(self, input: x, shape: i == 0 ? shape : shapes[i - 1], prefix: "\(prefix)\(i).")
        }
        return x
    }
}
