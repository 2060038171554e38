import ActionRuntime
import Foundation

/// The second implementation of `ONNXGraph`: each ONNX op a layer kind or the preprocessing
/// emits is lowered at once to Core ML NeuralNetwork layers (specification version 4: iOS 13,
/// macOS 10.15; the fields of Apple's NeuralNetwork.proto), with every value's static shape
/// tracked (the batch is always 1: a Core ML model takes one window). So every layer kind and
/// channel block is described once, as ops, and reaches both formats.
///
/// The lowering (docs/coreml.md lists it): elementwise `Add Sub Mul Div Max` → the
/// `*Broadcastable` layers; `Greater` → `greaterThan` (with `alpha` for a scalar constant);
/// `And` → `logicalAnd`; `Where` → `whereBroadcastable`; `Cast` → nothing (Core ML values are
/// floats; comparisons give 1 or 0); `Sqrt` → `unary` SQRT; `Floor`, `Tanh` → their layers;
/// `Relu` → `activation` ReLU; `Reshape` → `reshapeStatic` (0 and −1 resolved); `Transpose`,
/// `Concat`, `Gather`, `GatherElements`, `Slice` → `transpose`, `concatND`, `gather`,
/// `gatherAlongAxis`, `sliceStatic`; `ReduceSum/Mean/Max/LogSumExp` → the `reduce*` layers;
/// `Softmax` → `softmaxND`; `LogSoftmax` → x − `reduceLogSumExp`; `LayerNormalization` →
/// `layerNormalization`; `MatMul` by a constant matrix → `batchedMatmul` with its weights, else
/// with two inputs; `Conv` → `convolution` (1D as 2D with height 1: `expandDims`, `squeeze`);
/// `TopK` → `topK`. Constants that a layer takes as an input become `loadConstantND` layers,
/// once each. Any other op, or an op on inputs it does not support, fails the export with an
/// error naming the layer (`ExportError.unsupported`).
final class CoreMLGraph: CoreMLLowering {
    typealias Attribute = ONNXAttribute

    /// A value of the graph: its shape and, for a constant, its values (float or int64), and the
    /// Core ML blob that holds it (nil for a constant no layer has read yet).
    struct Value {
        var shape: [Int]
        var floats: [Float]? = nil
        var ints: [Int]? = nil
        var blob: String? = nil
        var count: Int { shape.reduce(1, *) }
    }

    let network: Network
    /// The serialised `NeuralNetworkLayer` messages, in order.
    private(set) var layers: [[UInt8]] = []
    /// The bytes of weights written so far (4 per float).
    private(set) var weightBytes = 0
    /// The first error; later ops are skipped.
    private(set) var failure: CoreMLExport.ExportError?
    private var values: [String: Value] = [:]
    private var counter = 0
    /// The layer being emitted (`layer layers.3 (graphConv)`), for errors.
    private var context: [String] = []

    init(network: Network) { self.network = network }

    /// Declares a model input of `shape`.
    func input(_ name: String, shape: [Int]) {
        values[name] = Value(shape: shape, blob: name)
    }

    func shape(of name: String) -> [Int]? { values[name]?.shape }

    func network<T>(_ body: () throws -> T) rethrows -> T { try body() }

    /// Sets what errors name while `body` emits ops.
    func within<T>(_ what: String, _ body: () throws -> T) rethrows -> T {
        context.append(what)
        defer { context.removeLast() }
        return try body()
    }

    // MARK: - ONNXGraph

    func node(_ op: String, _ inputs: [String], attributes: [(String, Attribute)], name: String) -> String {
        node(op, inputs, attributes: attributes, name: name, output: nil)
    }

    /// A node whose (single) output is named `output` (default: `<name>_<counter>`).
    func node(_ op: String, _ inputs: [String], attributes: [(String, Attribute)] = [], name: String, output: String?) -> String {
        counter += 1
        let out = output ?? "\(name)_\(counter)"
        lower(op, inputs, [out], attributes, layerName: "\(name)_\(counter)")
        return out
    }

    func node(_ op: String, _ inputs: [String], outputs: Int, attributes: [(String, Attribute)], name: String) -> [String] {
        counter += 1
        let outs = (0..<outputs).map { "\(name)_\(counter)_\($0)" }
        lower(op, inputs, outs, attributes, layerName: "\(name)_\(counter)")
        return outs
    }

    func floats(_ name: String, _ dims: [Int], _ values: [Float]) -> String {
        if self.values[name] == nil { self.values[name] = Value(shape: dims, floats: values) }
        return name
    }

    func int64s(_ name: String, _ values: [Int]) -> String {
        if self.values[name] == nil { self.values[name] = Value(shape: [values.count], ints: values) }
        return name
    }

    func tensor(_ name: String) throws -> (shape: [Int], values: [Float]) { try network.exportTensor(name) }

    func emit(_ specs: [LayerSpec], prefix: String, input: String, shape: Shape) throws -> String {
        var x = input
        let shapes = try ModelFile.layerOutputShapes(specs, input: shape)
        for (i, spec) in specs.enumerated() {
            x = try within("layer \(prefix)\(i) (\(spec.typeName))") {
                try spec.kind.exportONNX(self, input: x, shape: i == 0 ? shape : shapes[i - 1], prefix: "\(prefix)\(i).")
            }
            if let failure { throw failure }
        }
        return x
    }

    // MARK: - Lowering

    /// Why an op cannot be lowered (wrapped with the context by `lower`).
    private typealias Refusal = CoreMLLoweringRefusal

    private func lower(_ op: String, _ inputs: [String], _ outs: [String], _ attributes: [(String, Attribute)], layerName: String) {
        guard failure == nil else { return }
        do {
            try lowerOp(op, inputs, outs, Dictionary(attributes, uniquingKeysWith: { a, _ in a }), layerName)
            for o in outs {
                let v = try value(o)
                guard v.count <= CoreMLExport.Limits.tensorValues else {
                    throw CoreMLExport.ExportError.tooLarge(
                        "\(place) makes a tensor of shape \(v.shape) (\(v.count) values), more than the \(CoreMLExport.Limits.tensorValues) the Core ML export allows")
                }
            }
            guard weightBytes <= CoreMLExport.Limits.weightBytes else {
                throw CoreMLExport.ExportError.tooLarge(
                    "the weights take more than \(CoreMLExport.Limits.weightBytes >> 20) MiB by \(place); a .mlmodel is one protobuf message, at most 2 GiB")
            }
        } catch let e as CoreMLExport.ExportError {
            failure = e
        } catch let r as Refusal {
            failure = .unsupported(op: op, in: place, reason: r.reason)
        } catch {
            failure = .unsupported(op: op, in: place, reason: "\(error)")
        }
    }

    private var place: String { context.last ?? "the input and preprocessing" }

    private func value(_ name: String) throws -> Value {
        guard let v = values[name] else { throw Refusal(reason: "it reads '\(name)', which no earlier op made") }
        return v
    }

    private func constantInts(_ name: String, _ what: String) throws -> [Int] {
        let v = try value(name)
        if let ints = v.ints { return ints }
        if let f = v.floats { return f.map { Int($0) } }
        throw Refusal(reason: "its \(what) must be a constant")
    }

    /// The blob holding `name`, loading a constant (`loadConstantND`, rank at least 1) once.
    private func blob(_ name: String) throws -> String {
        var v = try value(name)
        if let b = v.blob { return b }
        let data = v.floats ?? (v.ints ?? []).map(Float.init)
        let shape = v.shape.isEmpty ? [1] : v.shape
        layer("load." + name, inputs: [], outputs: [name], field: 1070) { w in
            w.packedInts(1, shape)
            self.weights(&w, 2, data)
        }
        v.blob = name
        values[name] = v
        return name
    }

    private func define(_ name: String, _ shape: [Int]) { values[name] = Value(shape: shape, blob: name) }

    /// Appends a `NeuralNetworkLayer`: name, inputs, outputs and the parameters message `field`
    /// of its `layer` oneof.
    private func layer(_ name: String, inputs: [String], outputs: [String], field: Int, _ body: (inout ProtobufWriter) -> Void = { _ in }) {
        var w = ProtobufWriter()
        w.string(1, name)
        for i in inputs { w.string(2, i) }
        for o in outputs { w.string(3, o) }
        w.message(field, body)
        layers.append(w.bytes)
    }

    /// A `WeightParams` message (`floatValue`) in field `field`.
    private func weights(_ w: inout ProtobufWriter, _ field: Int, _ v: [Float]) {
        w.message(field) { $0.packedFloats(1, v) }
        weightBytes += 4 * v.count
    }

    /// The field numbers of NeuralNetworkLayer's `layer` oneof used here.
    private enum Field {
        static let convolution = 100, activation = 130, unary = 220, floor = 670, tanh = 760
        static let greaterThan = 830, logicalAnd = 855, maxBroadcastable = 875, addBroadcastable = 880
        static let divideBroadcastable = 890, multiplyBroadcastable = 900, subtractBroadcastable = 905
        static let gather = 930, softmaxND = 950, gatherAlongAxis = 952, concatND = 980, transpose = 985
        static let sliceStatic = 995, topK = 1015, batchedMatmul = 1045, squeeze = 1120, expandDims = 1125
        static let reshapeStatic = 1140, reduceMax = 1260, reduceSum = 1270, reduceMean = 1280, reduceLogSumExp = 1295
        static let whereBroadcastable = 1330, layerNormalization = 1350
    }

    private func lowerOp(_ op: String, _ inputs: [String], _ outs: [String], _ a: [String: Attribute], _ name: String) throws {
        let out = outs[0]
        func arity(_ n: ClosedRange<Int>) throws {
            guard n.contains(inputs.count) else { throw Refusal(reason: "it has \(inputs.count) inputs, expected \(n)") }
        }
        switch op {
        case "Add", "Sub", "Mul", "Div", "Max":
            try arity(2...2)
            let field = [
                "Add": Field.addBroadcastable, "Sub": Field.subtractBroadcastable, "Mul": Field.multiplyBroadcastable,
                "Div": Field.divideBroadcastable, "Max": Field.maxBroadcastable,
            ][op]!
            let shape = try CoreMLShapes.broadcast([try value(inputs[0]).shape, try value(inputs[1]).shape])
            layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: field)
            define(out, shape)
        case "Greater":
            try arity(2...2)
            let x = try value(inputs[0]), y = try value(inputs[1])
            let shape = try CoreMLShapes.broadcast([x.shape, y.shape])
            if let alpha = y.floats, alpha.count == 1, x.floats == nil {
                layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.greaterThan) { $0.float(2, alpha[0]) }
            } else {
                layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: Field.greaterThan)
            }
            define(out, shape)
        case "And":
            try arity(2...2)
            let shape = try CoreMLShapes.broadcast([try value(inputs[0]).shape, try value(inputs[1]).shape])
            layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: Field.logicalAnd)
            define(out, shape)
        case "Where":
            try arity(3...3)
            let shape = try CoreMLShapes.broadcast(try inputs.map { try value($0).shape })
            layer(name, inputs: try inputs.map(blob), outputs: [out], field: Field.whereBroadcastable)
            define(out, shape)
        case "Cast":
            try arity(1...1)
            values[out] = try value(inputs[0])  // 1.0 / 0.0 floats already; indices are whole floats
        case "Sqrt", "Floor", "Tanh", "Relu":
            try arity(1...1)
            let shape = try value(inputs[0]).shape
            let x = try blob(inputs[0])
            switch op {
            case "Sqrt": layer(name, inputs: [x], outputs: [out], field: Field.unary) { $0.int(1, 0) }  // SQRT
            case "Floor": layer(name, inputs: [x], outputs: [out], field: Field.floor)
            case "Tanh": layer(name, inputs: [x], outputs: [out], field: Field.tanh)
            default: layer(name, inputs: [x], outputs: [out], field: Field.activation) { $0.message(10) { _ in } }  // ReLU
            }
            define(out, shape)
        case "Reshape":
            try arity(2...2)
            let x = try value(inputs[0])
            var target = try constantInts(inputs[1], "shape")
            for (i, d) in target.enumerated() where d == 0 {
                guard i < x.shape.count else { throw Refusal(reason: "shape \(target) copies a dimension \(x.shape) lacks") }
                target[i] = x.shape[i]
            }
            if let free = target.firstIndex(of: -1) {
                let known = target.enumerated().filter { $0.offset != free }.reduce(1) { $0 * $1.element }
                guard known > 0, x.count % known == 0 else { throw Refusal(reason: "cannot reshape \(x.shape) to \(target)") }
                target[free] = x.count / known
            }
            guard target.allSatisfy({ $0 >= 1 }), target.reduce(1, *) == x.count else {
                throw Refusal(reason: "cannot reshape \(x.shape) to \(target)")
            }
            if target == x.shape {
                values[out] = x
            } else {
                layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.reshapeStatic) { $0.packedInts(1, target) }
                define(out, target)
            }
        case "Transpose":
            try arity(1...1)
            let x = try value(inputs[0])
            let perm = a.ints("perm") ?? Array((0..<x.shape.count).reversed())
            guard perm.sorted() == Array(0..<x.shape.count) else { throw Refusal(reason: "perm \(perm) does not permute \(x.shape)") }
            layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.transpose) { $0.packedInts(1, perm) }
            define(out, perm.map { x.shape[$0] })
        case "Concat":
            try arity(1...Int.max)
            let shapes = try inputs.map { try value($0).shape }
            let ax = try CoreMLShapes.axis(a.int("axis", default: 0), rank: shapes[0].count)
            var shape = shapes[0]
            for s in shapes.dropFirst() {
                guard s.count == shape.count, zip(s, shape).enumerated().allSatisfy({ $0.offset == ax || $0.element.0 == $0.element.1 }) else {
                    throw Refusal(reason: "cannot concatenate \(shapes) on axis \(ax)")
                }
                shape[ax] += s[ax]
            }
            if inputs.count == 1 {
                values[out] = try value(inputs[0])
            } else {
                layer(name, inputs: try inputs.map(blob), outputs: [out], field: Field.concatND) { $0.int(1, ax) }
                define(out, shape)
            }
        case "Gather":
            try arity(2...2)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: 0), rank: x.shape.count)
            let indices = try constantInts(inputs[1], "indices")
            guard try value(inputs[1]).shape.count == 1, indices.allSatisfy({ (-x.shape[ax]..<x.shape[ax]).contains($0) }) else {
                throw Refusal(reason: "its indices must be a list of positions in \(x.shape[ax])")
            }
            layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: Field.gather) { $0.int(1, ax) }
            var shape = x.shape
            shape[ax] = indices.count
            define(out, shape)
        case "GatherElements":
            try arity(2...2)
            let x = try value(inputs[0]), i = try value(inputs[1])
            let ax = try CoreMLShapes.axis(a.int("axis", default: 0), rank: x.shape.count)
            guard i.shape.count == x.shape.count else { throw Refusal(reason: "indices \(i.shape) and data \(x.shape) differ in rank") }
            layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: Field.gatherAlongAxis) { $0.int(1, ax) }
            define(out, i.shape)
        case "Slice":
            try arity(3...4)
            let x = try value(inputs[0])
            let starts = try constantInts(inputs[1], "starts"), ends = try constantInts(inputs[2], "ends")
            let axes = inputs.count > 3 ? try constantInts(inputs[3], "axes") : Array(0..<starts.count)
            var begin = [Int](repeating: 0, count: x.shape.count), end = x.shape
            for (k, ax0) in axes.enumerated() {
                let ax = try CoreMLShapes.axis(ax0, rank: x.shape.count), n = x.shape[ax]
                func clamp(_ i: Int) -> Int { min(max(i < 0 ? i + n : i, 0), n) }
                begin[ax] = clamp(starts[k])
                end[ax] = clamp(ends[k])
                guard end[ax] > begin[ax] else { throw Refusal(reason: "the slice \(starts[k])..<\(ends[k]) of \(n) is empty") }
            }
            let none = [Bool](repeating: false, count: x.shape.count)
            layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.sliceStatic) {
                $0.packedInts(1, begin)
                $0.packedBools(2, none)
                $0.packedInts(3, end)
                $0.packedBools(4, none)
                $0.packedInts(5, [Int](repeating: 1, count: x.shape.count))
            }
            define(out, zip(begin, end).map { $1 - $0 })
        case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceLogSumExp":
            try arity(1...2)
            let x = try value(inputs[0])
            let raw = inputs.count == 2 ? try constantInts(inputs[1], "axes") : (a.ints("axes") ?? Array(0..<x.shape.count))
            let axes = try Set(raw.map { try CoreMLShapes.axis($0, rank: x.shape.count) }).sorted()
            let keep = a.int("keepdims", default: 1) != 0
            let field = ["ReduceSum": Field.reduceSum, "ReduceMean": Field.reduceMean, "ReduceMax": Field.reduceMax, "ReduceLogSumExp": Field.reduceLogSumExp][op]!
            layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: field) {
                $0.packedInts(1, axes)
                if keep { $0.int(2, 1) }
            }
            var shape: [Int] = []
            for (i, d) in x.shape.enumerated() {
                if !axes.contains(i) { shape.append(d) } else if keep { shape.append(1) }
            }
            guard !shape.isEmpty else { throw Refusal(reason: "it reduces every axis away") }
            define(out, shape)
        case "Softmax":
            try arity(1...1)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.softmaxND) { $0.int(1, ax) }
            define(out, x.shape)
        case "LogSoftmax":
            // log softmax(x) = x − log Σ exp x, the sum over `axis`.
            try arity(1...1)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            let lse = out + ".logsumexp"
            layer(name + ".logsumexp", inputs: [try blob(inputs[0])], outputs: [lse], field: Field.reduceLogSumExp) {
                $0.packedInts(1, [ax])
                $0.int(2, 1)
            }
            layer(name, inputs: [try blob(inputs[0]), lse], outputs: [out], field: Field.subtractBroadcastable)
            var s = x.shape
            s[ax] = 1
            define(lse, s)
            define(out, x.shape)
        case "LayerNormalization":
            try arity(3...3)
            let x = try value(inputs[0])
            guard let gamma = try value(inputs[1]).floats, let beta = try value(inputs[2]).floats,
                try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count) == x.shape.count - 1,
                gamma.count == x.shape.last, beta.count == x.shape.last
            else { throw Refusal(reason: "only a normalisation over the last axis with constant gamma and beta is lowered") }
            layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.layerNormalization) {
                $0.packedInts(1, [x.shape.last!])
                $0.float(2, a.float("epsilon", default: 1e-5))
                self.weights(&$0, 3, gamma)
                self.weights(&$0, 4, beta)
            }
            define(out, x.shape)
        case "MatMul":
            try arity(2...2)
            let x = try value(inputs[0]), m = try value(inputs[1])
            guard x.shape.count >= 2, m.shape.count >= 2, x.shape.last == m.shape[m.shape.count - 2] else {
                throw Refusal(reason: "cannot multiply \(x.shape) by \(m.shape)")
            }
            if let w = m.floats, m.shape.count == 2, x.floats == nil {
                // One input and the weight matrix [X1, X2], stored column-major (= Wᵀ row-major).
                let (I, O) = (m.shape[0], m.shape[1])
                var columns = [Float](repeating: 0, count: I * O)
                for i in 0..<I { for o in 0..<O { columns[o * I + i] = w[i * O + o] } }
                layer(name, inputs: [try blob(inputs[0])], outputs: [out], field: Field.batchedMatmul) {
                    $0.int(5, I)
                    $0.int(6, O)
                    self.weights(&$0, 8, columns)
                }
                define(out, Array(x.shape.dropLast()) + [O])
            } else {
                let batch = try CoreMLShapes.broadcast([Array(x.shape.dropLast(2)), Array(m.shape.dropLast(2))])
                layer(name, inputs: [try blob(inputs[0]), try blob(inputs[1])], outputs: [out], field: Field.batchedMatmul)
                define(out, batch + [x.shape[x.shape.count - 2], m.shape.last!])
            }
        case "Conv":
            try lowerConv(inputs, out, a, name)
        case "TopK":
            try arity(2...2)
            let x = try value(inputs[0])
            let k = try constantInts(inputs[1], "K")
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            guard k.count == 1, (1...x.shape[ax]).contains(k[0]), a.int("sorted", default: 1) == 1, outs.count == 2 else {
                throw Refusal(reason: "only a sorted TopK with a constant K in 1...\(x.shape[ax]) and two outputs is lowered")
            }
            let bottom = a.int("largest", default: 1) == 0
            layer(name, inputs: [try blob(inputs[0])], outputs: outs, field: Field.topK) {
                $0.int(1, ax)
                $0.int(2, k[0])
                if bottom { $0.int(3, 1) }
            }
            var shape = x.shape
            shape[ax] = k[0]
            define(outs[0], shape)
            define(outs[1], shape)
        default:
            throw Refusal(reason: "the op has no Core ML lowering (CoreMLGraph in Sources/ModelExport)")
        }
    }

    /// `Conv` with constant weights `[O, I, K…]` and optional bias, no groups: Core ML's
    /// convolution on rank-4 `[N, C, H, W]`; a 1D input `[N, C, T]` runs as `[N, C, 1, T]`.
    private func lowerConv(_ inputs: [String], _ out: String, _ a: [String: Attribute], _ name: String) throws {
        guard inputs.count == 2 || inputs.count == 3 else { throw Refusal(reason: "it has \(inputs.count) inputs, expected 2 or 3") }
        let x = try value(inputs[0]), wv = try value(inputs[1])
        guard let w = wv.floats else { throw Refusal(reason: "its weights must be a constant") }
        let bias = inputs.count == 3 ? try value(inputs[2]).floats : nil
        guard inputs.count == 2 || bias != nil else { throw Refusal(reason: "its bias must be a constant") }
        guard a.int("group", default: 1) == 1 else { throw Refusal(reason: "grouped convolution is not lowered") }
        let spatial = x.shape.count - 2
        guard spatial == 1 || spatial == 2, wv.shape.count == x.shape.count, wv.shape[1] == x.shape[1] else {
            throw Refusal(reason: "input \(x.shape) and weights \(wv.shape) do not form a 1D or 2D convolution")
        }
        let O = wv.shape[0], I = wv.shape[1]
        var kernel = Array(wv.shape.dropFirst(2))
        var strides = a.ints("strides") ?? [Int](repeating: 1, count: spatial)
        var dilations = a.ints("dilations") ?? [Int](repeating: 1, count: spatial)
        var pads = a.ints("pads") ?? [Int](repeating: 0, count: 2 * spatial)  // begins, then ends
        var inner = x.shape, input = try blob(inputs[0])
        if spatial == 1 {
            kernel = [1] + kernel
            strides = [1] + strides
            dilations = [1] + dilations
            pads = [0, pads[0], 0, pads[1]]
            inner = [x.shape[0], x.shape[1], 1, x.shape[2]]
            let expanded = out + ".nchw"
            layer(name + ".nchw", inputs: [input], outputs: [expanded], field: Field.expandDims) { $0.packedInts(1, [2]) }
            define(expanded, inner)
            input = expanded
        }
        var outShape = [inner[0], O]
        for d in 0..<2 {
            let reach = inner[2 + d] + pads[d] + pads[2 + d] - (dilations[d] * (kernel[d] - 1) + 1)
            guard reach >= 0, strides[d] >= 1 else { throw Refusal(reason: "the kernel does not fit the padded input \(x.shape)") }
            outShape.append(reach / strides[d] + 1)
        }
        let convOut = spatial == 1 ? out + ".conv" : out
        layer(name, inputs: [input], outputs: [convOut], field: Field.convolution) {
            $0.int(1, O)
            $0.int(2, I)
            $0.int(10, 1)
            $0.packedInts(20, kernel)
            $0.packedInts(30, strides)
            $0.packedInts(40, dilations)
            $0.message(50) {  // valid padding with explicit amounts
                $0.message(1) {
                    for d in 0..<2 {
                        $0.message(10) {
                            $0.int(1, pads[d])
                            $0.int(2, pads[2 + d])
                        }
                    }
                }
            }
            if bias != nil { $0.int(70, 1) }
            self.weights(&$0, 90, w)
            if let bias { self.weights(&$0, 91, bias) }
        }
        define(convOut, outShape)
        if spatial == 1 {
            layer(name + ".nct", inputs: [convOut], outputs: [out], field: Field.squeeze) { $0.packedInts(1, [2]) }
            define(out, [outShape[0], O, outShape[3]])
        }
    }
}

extension Network {
    /// A parameter tensor by its full name, for the exports.
    func exportTensor(_ name: String) throws -> (shape: [Int], values: [Float]) {
        guard let t = tensors.first(where: { $0.name == name }) else { throw ONNXExport.ExportError.missingTensor(name) }
        return (t.shape, Array(UnsafeBufferPointer(start: parameters + t.offset, count: t.count)))
    }
}
