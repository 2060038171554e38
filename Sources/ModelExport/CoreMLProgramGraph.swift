import ActionRuntime
import Foundation

/// The third implementation of `ONNXGraph`: each ONNX op a layer kind or the preprocessing
/// emits is lowered at once to Core ML ML Program (MIL) operations of opset `CoreML6` (iOS 16,
/// macOS 13; the messages of Apple's MIL.proto, the ops of coremltools' MIL op reference), with
/// every value's static shape and data type tracked (the batch is always 1).
///
/// Unlike a NeuralNetwork, a MIL program is typed: comparisons give `bool`, indices are
/// `int32`, floats are `fp32` or `fp16`. `precision` is the float type the ops compute in while
/// they are emitted; a float operand of another type is cast once (`cast`), a constant is
/// written once per type. The export computes the input conversion and the preprocessing in
/// fp32 (pixel coordinates and their squares exceed Float16's range) and, for a Float16 model,
/// the network in fp16 (its weights stored as fp16; the layer kinds of `float32Kinds` in fp32),
/// then casts the logits back to fp32.
///
/// The lowering (docs/coreml.md lists it): `Add Sub Mul Div Max` → `add sub mul real_div
/// maximum`; `Greater` → `greater`; `And` → `logical_and`; `Where` → `select`; `Cast` → `cast`
/// (or nothing between floats); `Sqrt Floor Tanh Relu` → their ops; `Reshape` → `reshape` (0 and
/// −1 resolved); `Transpose Concat Gather GatherElements Slice` → `transpose concat gather
/// gather_along_axis slice_by_index`; `ReduceSum/Mean/Max/LogSumExp` → the `reduce_*` ops;
/// `Softmax` → `softmax`; `LogSoftmax` → x − `reduce_log_sum_exp`; `LayerNormalization` →
/// `layer_norm`; `MatMul` → `matmul`; `Conv` → `conv` (1D or 2D, explicit padding); `TopK` →
/// `topk`. Constants become `const` ops (values of 10 or more in weights/weight.bin). Any other
/// op fails the export with an error naming the layer (`ExportError.unsupportedInProgram`).
final class CoreMLProgramGraph: CoreMLLowering {
    typealias Attribute = ONNXAttribute

    /// MIL.proto's `DataType` codes of the types used here.
    enum DType: Int {
        case bool = 1, string = 2, fp16 = 10, fp32 = 11, int32 = 23
        /// The name `cast` takes.
        var castName: String {
            switch self {
            case .bool: return "bool"
            case .string: return "string"
            case .fp16: return "fp16"
            case .fp32: return "fp32"
            case .int32: return "int32"
            }
        }
        var isFloat: Bool { self == .fp16 || self == .fp32 }
    }

    /// A value of the graph: shape, type and, for a constant, its values; `variable` is its MIL
    /// name once an op makes it (nil for a constant no op has read yet).
    struct Value {
        var shape: [Int]
        var type: DType
        var floats: [Float]? = nil
        var ints: [Int]? = nil
        var variable: String? = nil
        var count: Int { shape.reduce(1, *) }
    }

    let network: Network
    /// The float type the ops being emitted compute in.
    var precision: DType = .fp32
    /// The float type of the network's layers (`network`): fp16 for a Float16 program.
    var networkPrecision: DType = .fp32
    /// The serialised `Operation` messages of the main block, in order.
    private(set) var operations: [[UInt8]] = []
    /// weights/weight.bin.
    private(set) var weights = CoreMLBlobFile()
    private(set) var failure: CoreMLExport.ExportError?
    private var values: [String: Value] = [:]
    /// MIL variables by ONNX value and type (constants written and casts made once).
    private var typed: [String: String] = [:]
    private var types: [String: (DType, [Int])] = [:]
    private var counter = 0
    private var context: [String] = []

    /// A float constant with this many values or more goes to weight.bin, smaller ones into the
    /// program (as coremltools does).
    static let blobThreshold = 10

    init(network: Network) { self.network = network }

    /// Declares the function's fp32 input.
    func input(_ name: String, shape: [Int]) {
        values[name] = Value(shape: shape, type: .fp32, variable: name)
        types[name] = (.fp32, shape)
    }

    func shape(of name: String) -> [Int]? { values[name]?.shape }

    func network<T>(_ body: () throws -> T) rethrows -> T {
        let saved = precision
        precision = networkPrecision
        defer { precision = saved }
        return try body()
    }

    /// The MIL variable holding `name` (after the ops that make it).
    func variable(_ name: String) -> String? { values[name]?.variable }

    func within<T>(_ what: String, _ body: () throws -> T) rethrows -> T {
        context.append(what)
        defer { context.removeLast() }
        return try body()
    }

    // MARK: - ONNXGraph

    func node(_ op: String, _ inputs: [String], attributes: [(String, Attribute)], name: String) -> String {
        node(op, inputs, attributes: attributes, name: name, output: nil)
    }

    func node(_ op: String, _ inputs: [String], attributes: [(String, Attribute)] = [], name: String, output: String?) -> String {
        counter += 1
        let out = output ?? "\(name)_\(counter)"
        lower(op, inputs, [out], attributes)
        return out
    }

    func node(_ op: String, _ inputs: [String], outputs: Int, attributes: [(String, Attribute)], name: String) -> [String] {
        counter += 1
        let outs = (0..<outputs).map { "\(name)_\(counter)_\($0)" }
        lower(op, inputs, outs, attributes)
        return outs
    }

    func floats(_ name: String, _ dims: [Int], _ values: [Float]) -> String {
        if self.values[name] == nil { self.values[name] = Value(shape: dims, type: .fp32, floats: values) }
        return name
    }

    func int64s(_ name: String, _ values: [Int]) -> String {
        if self.values[name] == nil { self.values[name] = Value(shape: [values.count], type: .int32, ints: values) }
        return name
    }

    func tensor(_ name: String) throws -> (shape: [Int], values: [Float]) { try network.exportTensor(name) }

    func emit(_ specs: [LayerSpec], prefix: String, input: String, shape: Shape) throws -> String {
        var x = input
        let shapes = try ModelFile.layerOutputShapes(specs, input: shape)
        for (i, spec) in specs.enumerated() {
            let saved = precision
            if Self.float32Kinds.contains(spec.typeName) { precision = .fp32 }
            defer { precision = saved }
            x = try within("layer \(prefix)\(i) (\(spec.typeName))") {
                try spec.kind.exportONNX(self, input: x, shape: i == 0 ? shape : shapes[i - 1], prefix: "\(prefix)\(i).")
            }
            if let failure { throw failure }
        }
        return x
    }

    /// Layer kinds that compute in fp32 in a Float16 network: the Fourier pyramid's magnitudes
    /// square coefficients that reach hundreds on real windows, beyond Float16's ±65504 (a
    /// fixed transform, cheap beside the network).
    static let float32Kinds: Set<String> = ["fourierPyramid"]

    // MARK: - Writing operations

    private typealias Refusal = CoreMLLoweringRefusal

    /// An argument of an operation: a variable, or a list of them (a tuple: `concat`'s values),
    /// or a literal value written into the binding (`classify`'s classes).
    enum Argument {
        case variable(String)
        case variables([String])
        case literal((inout ProtobufWriter) -> Void)
    }

    /// A fresh MIL name for `base` (letters, digits and `_`; unique).
    private func fresh(_ base: String) -> String {
        var s = String(base.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "_" })
        if s.isEmpty || s.first!.isNumber { s = "v_" + s }
        var name = s, k = 1
        while types[name] != nil {
            k += 1
            name = "\(s)_\(k)"
        }
        return name
    }

    /// Appends an operation; returns its outputs' MIL names.
    @discardableResult
    func operation(_ type: String, _ inputs: [(String, Argument)], outputs: [(base: String, type: DType, shape: [Int])]) -> [String] {
        let names = outputs.map { o -> String in
            let n = fresh(o.base)
            types[n] = (o.type, o.shape)
            return n
        }
        var w = ProtobufWriter()
        w.string(1, type)
        for (key, argument) in inputs {
            w.message(2) { e in
                e.string(1, key)
                e.message(2) { a in
                    switch argument {
                    case .variable(let v): a.message(1) { $0.string(1, v) }
                    case .variables(let vs): for v in vs { a.message(1) { $0.string(1, v) } }
                    case .literal(let body): a.message(1) { $0.message(2, body) }
                    }
                }
            }
        }
        for (n, o) in zip(names, outputs) {
            w.message(3) { t in
                t.string(1, n)
                t.message(2) { Self.tensorType(&$0, o.type, o.shape) }
            }
        }
        w.message(5) { e in
            e.string(1, "name")
            e.message(2) { Self.stringValue(&$0, names[0]) }
        }
        operations.append(w.bytes)
        return names
    }

    /// A `ValueType` holding a `TensorType`.
    static func tensorType(_ w: inout ProtobufWriter, _ type: DType, _ shape: [Int]) {
        w.message(1) { t in
            t.int(1, type.rawValue)
            if !shape.isEmpty { t.int(2, shape.count) }
            for d in shape { t.message(3) { $0.message(1) { $0.int(1, d) } } }
        }
    }

    /// A `Value` holding one string.
    static func stringValue(_ w: inout ProtobufWriter, _ s: String) {
        w.message(2) { tensorType(&$0, .string, []) }
        w.message(3) { $0.message(1) { $0.message(4) { $0.string(1, s) } } }
    }

    /// A `const` op of `type` and `shape`; float values of `blobThreshold` or more go to
    /// weight.bin.
    private func constant(_ base: String, _ type: DType, _ shape: [Int], floats: [Float] = [], ints: [Int] = [], bools: [Bool] = []) throws -> String {
        if type == .fp16, let bad = floats.first(where: { $0.isFinite && abs($0) > HalfPrecision.greatestFiniteMagnitude }) {
            throw CoreMLExport.ExportError.float16Range("\(place) has a constant \(bad) beyond Float16's range (±65504)")
        }
        let name = fresh(base)
        types[name] = (type, shape)
        var w = ProtobufWriter()
        w.string(1, "const")
        w.message(3) { t in
            t.string(1, name)
            t.message(2) { Self.tensorType(&$0, type, shape) }
        }
        w.message(5) { e in
            e.string(1, "name")
            e.message(2) { Self.stringValue(&$0, name) }
        }
        var offset: Int? = nil
        if type.isFloat && floats.count >= Self.blobThreshold {
            offset = type == .fp16 ? weights.append(float16: floats) : weights.append(float32: floats)
        }
        w.message(5) { e in
            e.string(1, "val")
            e.message(2) { v in
                v.message(2) { Self.tensorType(&$0, type, shape) }
                if let offset {
                    v.message(5) {
                        $0.string(1, "@model_path/weights/weight.bin")
                        $0.int(2, offset)
                    }
                } else {
                    v.message(3) {
                        $0.message(1) { t in
                            switch type {
                            case .fp32: t.message(1) { $0.packedFloats(1, floats) }
                            case .fp16:
                                var bytes: [UInt8] = []
                                for f in floats { withUnsafeBytes(of: HalfPrecision.bits(f).littleEndian) { bytes += $0 } }
                                t.message(7) { $0.data(1, bytes) }
                            case .int32: t.message(2) { $0.packedInts(1, ints) }
                            case .bool: t.message(3) { $0.packedBools(1, bools) }
                            case .string: break
                            }
                        }
                    }
                }
            }
        }
        operations.append(w.bytes)
        return name
    }

    /// An int32 parameter: a list (rank 1) or, with `scalar`, one value (rank 0).
    private func ints(_ base: String, _ v: [Int]) throws -> String { try constant(base, .int32, [v.count], ints: v) }
    private func int(_ base: String, _ v: Int) throws -> String { try constant(base, .int32, [], ints: [v]) }
    private func bool(_ base: String, _ v: Bool) throws -> String { try constant(base, .bool, [], bools: [v]) }
    private func scalar(_ base: String, _ v: Float) throws -> String { try constant(base, precision, [], floats: [v]) }

    // MARK: - Reading values

    private var place: String { context.last ?? "the input and preprocessing" }

    private func value(_ name: String) throws -> Value {
        guard let v = values[name] else { throw Refusal(reason: "it reads '\(name)', which no earlier op made") }
        return v
    }

    /// `name` as a MIL variable of `type`: a constant written, or a variable cast, once.
    private func read(_ name: String, as type: DType) throws -> String {
        let v = try value(name)
        if let variable = v.variable, v.type == type { return variable }
        let key = "\(name)#\(type.rawValue)"
        if let t = typed[key] { return t }
        let made: String
        if let variable = v.variable {
            made = operation("cast", [("x", .variable(variable)), ("dtype", .variable(try constant(variable + "_to_" + type.castName, .string, [], strings: type.castName)))], outputs: [(variable + "_" + type.castName, type, v.shape)])[0]
        } else if let f = v.floats {
            switch type {
            case .int32: made = try constant(name, type, v.shape, ints: f.map { Int($0) })
            case .bool: made = try constant(name, type, v.shape, bools: f.map { $0 != 0 })
            default: made = try constant(name, type, v.shape, floats: f)
            }
        } else if let i = v.ints {
            switch type {
            case .int32: made = try constant(name, type, v.shape, ints: i)
            case .bool: made = try constant(name, type, v.shape, bools: i.map { $0 != 0 })
            default: made = try constant(name, type, v.shape, floats: i.map(Float.init))
            }
        } else {
            throw Refusal(reason: "'\(name)' has no value")
        }
        typed[key] = made
        return made
    }

    private func constant(_ base: String, _ type: DType, _ shape: [Int], strings: String) throws -> String {
        let name = fresh(base)
        types[name] = (type, shape)
        var w = ProtobufWriter()
        w.string(1, "const")
        w.message(3) { t in
            t.string(1, name)
            t.message(2) { Self.tensorType(&$0, .string, []) }
        }
        w.message(5) { e in
            e.string(1, "name")
            e.message(2) { Self.stringValue(&$0, name) }
        }
        w.message(5) { e in
            e.string(1, "val")
            e.message(2) { Self.stringValue(&$0, strings) }
        }
        operations.append(w.bytes)
        return name
    }

    private func float(_ name: String) throws -> String { try read(name, as: precision) }

    private func define(_ name: String, _ variable: String, _ type: DType, _ shape: [Int]) {
        values[name] = Value(shape: shape, type: type, variable: variable)
    }

    /// One op of one output of `type` and `shape`, defining `out`.
    private func op(_ type: String, _ inputs: [(String, Argument)], _ out: String, _ t: DType, _ shape: [Int]) {
        let v = operation(type, inputs, outputs: [(out, t, shape)])[0]
        define(out, v, t, shape)
    }

    private func constantInts(_ name: String, _ what: String) throws -> [Int] {
        let v = try value(name)
        if let ints = v.ints { return ints }
        if let f = v.floats { return f.map { Int($0) } }
        throw Refusal(reason: "its \(what) must be a constant")
    }

    // MARK: - Lowering

    private func lower(_ op: String, _ inputs: [String], _ outs: [String], _ attributes: [(String, Attribute)]) {
        guard failure == nil else { return }
        do {
            try lowerOp(op, inputs, outs, Dictionary(attributes, uniquingKeysWith: { a, _ in a }))
            for o in outs {
                let v = try value(o)
                guard v.count <= CoreMLExport.Limits.tensorValues else {
                    throw CoreMLExport.ExportError.tooLarge(
                        "\(place) makes a tensor of shape \(v.shape) (\(v.count) values), more than the \(CoreMLExport.Limits.tensorValues) the Core ML export allows")
                }
            }
        } catch let e as CoreMLExport.ExportError {
            failure = e
        } catch let r as Refusal {
            failure = .unsupportedInProgram(op: op, in: place, reason: r.reason)
        } catch {
            failure = .unsupportedInProgram(op: op, in: place, reason: "\(error)")
        }
    }

    private func lowerOp(_ op: String, _ inputs: [String], _ outs: [String], _ a: [String: Attribute]) throws {
        let out = outs[0]
        func arity(_ n: ClosedRange<Int>) throws {
            guard n.contains(inputs.count) else { throw Refusal(reason: "it has \(inputs.count) inputs, expected \(n)") }
        }
        switch op {
        case "Add", "Sub", "Mul", "Div", "Max", "Greater":
            try arity(2...2)
            let type = ["Add": "add", "Sub": "sub", "Mul": "mul", "Div": "real_div", "Max": "maximum", "Greater": "greater"][op]!
            let shape = try CoreMLShapes.broadcast([try value(inputs[0]).shape, try value(inputs[1]).shape])
            self.op(type, [("x", .variable(try float(inputs[0]))), ("y", .variable(try float(inputs[1])))], out, op == "Greater" ? .bool : precision, shape)
        case "And":
            try arity(2...2)
            let shape = try CoreMLShapes.broadcast([try value(inputs[0]).shape, try value(inputs[1]).shape])
            self.op("logical_and", [("x", .variable(try read(inputs[0], as: .bool))), ("y", .variable(try read(inputs[1], as: .bool)))], out, .bool, shape)
        case "Where":
            try arity(3...3)
            let shape = try CoreMLShapes.broadcast(try inputs.map { try value($0).shape })
            self.op(
                "select", [("cond", .variable(try read(inputs[0], as: .bool))), ("a", .variable(try float(inputs[1]))), ("b", .variable(try float(inputs[2])))], out, precision,
                shape)
        case "Cast":
            try arity(1...1)
            let x = try value(inputs[0])
            let to = a.int("to", default: 1)
            let type: DType
            switch to {
            case 1, 10: type = x.type.isFloat ? x.type : precision  // float: a float stays as it is
            case 6, 7: type = .int32
            case 9: type = .bool
            default: throw Refusal(reason: "a cast to ONNX type \(to) is not lowered")
            }
            if type == x.type || x.variable == nil {
                values[out] = x
            } else {
                define(out, try read(inputs[0], as: type), type, x.shape)
            }
        case "Sqrt", "Floor", "Tanh", "Relu":
            try arity(1...1)
            self.op(op.lowercased(), [("x", .variable(try float(inputs[0])))], out, precision, try value(inputs[0]).shape)
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
            if target == x.shape && x.variable != nil && x.type == precision {
                values[out] = x
            } else {
                self.op("reshape", [("x", .variable(try float(inputs[0]))), ("shape", .variable(try ints(out + "_shape", target)))], out, precision, target)
            }
        case "Transpose":
            try arity(1...1)
            let x = try value(inputs[0])
            let perm = a.ints("perm") ?? Array((0..<x.shape.count).reversed())
            guard perm.sorted() == Array(0..<x.shape.count) else { throw Refusal(reason: "perm \(perm) does not permute \(x.shape)") }
            self.op("transpose", [("x", .variable(try float(inputs[0]))), ("perm", .variable(try ints(out + "_perm", perm)))], out, precision, perm.map { x.shape[$0] })
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
                define(out, try float(inputs[0]), precision, shape)
            } else {
                self.op(
                    "concat",
                    [("values", .variables(try inputs.map(float))), ("axis", .variable(try int(out + "_axis", ax))), ("interleave", .variable(try bool(out + "_interleave", false)))],
                    out, precision, shape)
            }
        case "Gather":
            try arity(2...2)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: 0), rank: x.shape.count)
            let indices = try constantInts(inputs[1], "indices")
            guard try value(inputs[1]).shape.count == 1, indices.allSatisfy({ (-x.shape[ax]..<x.shape[ax]).contains($0) }) else {
                throw Refusal(reason: "its indices must be a list of positions in \(x.shape[ax])")
            }
            var shape = x.shape
            shape[ax] = indices.count
            self.op(
                "gather", [("x", .variable(try float(inputs[0]))), ("indices", .variable(try read(inputs[1], as: .int32))), ("axis", .variable(try int(out + "_axis", ax)))], out,
                precision, shape)
        case "GatherElements":
            try arity(2...2)
            let x = try value(inputs[0]), i = try value(inputs[1])
            let ax = try CoreMLShapes.axis(a.int("axis", default: 0), rank: x.shape.count)
            guard i.shape.count == x.shape.count else { throw Refusal(reason: "indices \(i.shape) and data \(x.shape) differ in rank") }
            self.op(
                "gather_along_axis",
                [("x", .variable(try float(inputs[0]))), ("indices", .variable(try read(inputs[1], as: .int32))), ("axis", .variable(try int(out + "_axis", ax)))], out,
                precision, i.shape)
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
            self.op(
                "slice_by_index", [("x", .variable(try float(inputs[0]))), ("begin", .variable(try ints(out + "_begin", begin))), ("end", .variable(try ints(out + "_end", end)))],
                out, precision, zip(begin, end).map { $1 - $0 })
        case "ReduceSum", "ReduceMean", "ReduceMax", "ReduceLogSumExp":
            try arity(1...2)
            let x = try value(inputs[0])
            let raw = inputs.count == 2 ? try constantInts(inputs[1], "axes") : (a.ints("axes") ?? Array(0..<x.shape.count))
            let axes = try Set(raw.map { try CoreMLShapes.axis($0, rank: x.shape.count) }).sorted()
            let keep = a.int("keepdims", default: 1) != 0
            var shape: [Int] = []
            for (i, d) in x.shape.enumerated() {
                if !axes.contains(i) { shape.append(d) } else if keep { shape.append(1) }
            }
            guard !shape.isEmpty else { throw Refusal(reason: "it reduces every axis away") }
            let type = ["ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max", "ReduceLogSumExp": "reduce_log_sum_exp"][op]!
            self.op(
                type, [("x", .variable(try float(inputs[0]))), ("axes", .variable(try ints(out + "_axes", axes))), ("keep_dims", .variable(try bool(out + "_keep_dims", keep)))],
                out, precision, shape)
        case "Softmax":
            try arity(1...1)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            self.op("softmax", [("x", .variable(try float(inputs[0]))), ("axis", .variable(try int(out + "_axis", ax)))], out, precision, x.shape)
        case "LogSoftmax":
            // log softmax(x) = x − log Σ exp x, the sum over `axis`.
            try arity(1...1)
            let x = try value(inputs[0])
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            var s = x.shape
            s[ax] = 1
            let xv = try float(inputs[0])
            let lse = operation(
                "reduce_log_sum_exp", [("x", .variable(xv)), ("axes", .variable(try ints(out + "_axes", [ax]))), ("keep_dims", .variable(try bool(out + "_keep_dims", true)))],
                outputs: [(out + "_logsumexp", precision, s)])[0]
            self.op("sub", [("x", .variable(xv)), ("y", .variable(lse))], out, precision, x.shape)
        case "LayerNormalization":
            try arity(3...3)
            let x = try value(inputs[0])
            guard try value(inputs[1]).floats != nil, try value(inputs[2]).floats != nil,
                try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count) == x.shape.count - 1,
                try value(inputs[1]).count == x.shape.last, try value(inputs[2]).count == x.shape.last
            else { throw Refusal(reason: "only a normalisation over the last axis with constant gamma and beta is lowered") }
            self.op(
                "layer_norm",
                [
                    ("x", .variable(try float(inputs[0]))), ("axes", .variable(try ints(out + "_axes", [x.shape.count - 1]))),
                    ("gamma", .variable(try float(inputs[1]))), ("beta", .variable(try float(inputs[2]))),
                    ("epsilon", .variable(try scalar(out + "_epsilon", a.float("epsilon", default: 1e-5)))),
                ], out, precision, x.shape)
        case "MatMul":
            try arity(2...2)
            let x = try value(inputs[0]), m = try value(inputs[1])
            guard x.shape.count >= 2, m.shape.count >= 2, x.shape.last == m.shape[m.shape.count - 2] else {
                throw Refusal(reason: "cannot multiply \(x.shape) by \(m.shape)")
            }
            let batch = try CoreMLShapes.broadcast([Array(x.shape.dropLast(2)), Array(m.shape.dropLast(2))])
            self.op(
                "matmul",
                [
                    ("x", .variable(try float(inputs[0]))), ("y", .variable(try float(inputs[1]))),
                    ("transpose_x", .variable(try bool(out + "_transpose_x", false))), ("transpose_y", .variable(try bool(out + "_transpose_y", false))),
                ], out, precision, batch + [x.shape[x.shape.count - 2], m.shape.last!])
        case "Conv":
            try lowerConv(inputs, out, a)
        case "TopK":
            try arity(2...2)
            let x = try value(inputs[0])
            let k = try constantInts(inputs[1], "K")
            let ax = try CoreMLShapes.axis(a.int("axis", default: -1), rank: x.shape.count)
            guard k.count == 1, (1...x.shape[ax]).contains(k[0]), a.int("sorted", default: 1) == 1, outs.count == 2 else {
                throw Refusal(reason: "only a sorted TopK with a constant K in 1...\(x.shape[ax]) and two outputs is lowered")
            }
            var shape = x.shape
            shape[ax] = k[0]
            let ascending = a.int("largest", default: 1) == 0
            let made = operation(
                "topk",
                [
                    ("x", .variable(try float(inputs[0]))), ("k", .variable(try int(out + "_k", k[0]))), ("axis", .variable(try int(out + "_axis", ax))),
                    ("ascending", .variable(try bool(out + "_ascending", ascending))),
                ], outputs: [(outs[0], precision, shape), (outs[1], .int32, shape)])
            define(outs[0], made[0], precision, shape)
            define(outs[1], made[1], .int32, shape)
        default:
            throw Refusal(reason: "the op has no ML Program lowering (CoreMLProgramGraph in Sources/ModelExport)")
        }
    }

    /// `Conv` with constant weights `[O, I, K…]` and optional bias, no groups: MIL's `conv` on
    /// `[N, C, T]` or `[N, C, H, W]` with explicit padding (MIL's pad lists each axis' begin
    /// and end; ONNX's all begins, then all ends).
    private func lowerConv(_ inputs: [String], _ out: String, _ a: [String: Attribute]) throws {
        guard inputs.count == 2 || inputs.count == 3 else { throw Refusal(reason: "it has \(inputs.count) inputs, expected 2 or 3") }
        let x = try value(inputs[0]), wv = try value(inputs[1])
        guard wv.floats != nil else { throw Refusal(reason: "its weights must be a constant") }
        let bias = inputs.count == 3 ? try value(inputs[2]).floats : []
        guard bias != nil else { throw Refusal(reason: "its bias must be a constant") }
        guard a.int("group", default: 1) == 1 else { throw Refusal(reason: "grouped convolution is not lowered") }
        let spatial = x.shape.count - 2
        guard spatial == 1 || spatial == 2, wv.shape.count == x.shape.count, wv.shape[1] == x.shape[1] else {
            throw Refusal(reason: "input \(x.shape) and weights \(wv.shape) do not form a 1D or 2D convolution")
        }
        let O = wv.shape[0]
        let kernel = Array(wv.shape.dropFirst(2))
        let strides = a.ints("strides") ?? [Int](repeating: 1, count: spatial)
        let dilations = a.ints("dilations") ?? [Int](repeating: 1, count: spatial)
        let pads = a.ints("pads") ?? [Int](repeating: 0, count: 2 * spatial)
        guard strides.count == spatial, dilations.count == spatial, pads.count == 2 * spatial else { throw Refusal(reason: "strides, dilations or pads do not match the kernel") }
        var shape = [x.shape[0], O]
        for d in 0..<spatial {
            let reach = x.shape[2 + d] + pads[d] + pads[spatial + d] - (dilations[d] * (kernel[d] - 1) + 1)
            guard reach >= 0, strides[d] >= 1 else { throw Refusal(reason: "the kernel does not fit the padded input \(x.shape)") }
            shape.append(reach / strides[d] + 1)
        }
        var arguments: [(String, Argument)] = [
            ("x", .variable(try float(inputs[0]))), ("weight", .variable(try float(inputs[1]))),
        ]
        if inputs.count == 3 { arguments.append(("bias", .variable(try float(inputs[2])))) }
        arguments += [
            ("strides", .variable(try ints(out + "_strides", strides))),
            ("pad_type", .variable(try constant(out + "_pad_type", .string, [], strings: "custom"))),
            ("pad", .variable(try ints(out + "_pad", (0..<spatial).flatMap { [pads[$0], pads[spatial + $0]] }))),
            ("dilations", .variable(try ints(out + "_dilations", dilations))),
            ("groups", .variable(try int(out + "_groups", 1))),
        ]
        self.op("conv", arguments, out, precision, shape)
    }
}

/// Core ML's weight file (`weights/weight.bin`, the format of coremltools' MIL blob storage,
/// version 2): a 64-byte header (`UInt32` count of blobs, `UInt32` version 2, zeros), then per
/// blob a 64-byte record at a 64-byte boundary (`UInt32` sentinel 0xDEADBEEF, `UInt32` data type:
/// 1 Float16, 2 Float32; `UInt64` size in bytes; `UInt64` offset of the data; zeros) followed by
/// the data (little-endian), also at a 64-byte boundary. A const's `BlobFileValue.offset` is
/// its record's offset.
struct CoreMLBlobFile {
    private(set) var bytes: [UInt8] = [UInt8](repeating: 0, count: 64)
    private(set) var count = 0

    static let alignment = 64, sentinel: UInt32 = 0xDEAD_BEEF

    init() { write32(2, at: 4) }

    private mutating func write32(_ v: UInt32, at i: Int) { withUnsafeBytes(of: v.littleEndian) { bytes.replaceSubrange(i..<i + 4, with: $0) } }
    private mutating func write64(_ v: UInt64, at i: Int) { withUnsafeBytes(of: v.littleEndian) { bytes.replaceSubrange(i..<i + 8, with: $0) } }

    private mutating func pad() {
        while bytes.count % Self.alignment != 0 { bytes.append(0) }
    }

    /// Appends a blob of `data` (type code `type`); returns its record's offset.
    private mutating func append(type: UInt32, data: [UInt8]) -> Int {
        pad()
        let record = bytes.count
        bytes += [UInt8](repeating: 0, count: Self.alignment)
        write32(Self.sentinel, at: record)
        write32(type, at: record + 4)
        write64(UInt64(data.count), at: record + 8)
        write64(UInt64(record + Self.alignment), at: record + 16)
        bytes += data
        count += 1
        write32(UInt32(count), at: 0)
        return record
    }

    mutating func append(float32 v: [Float]) -> Int {
        var data: [UInt8] = []
        data.reserveCapacity(4 * v.count)
        for f in v { withUnsafeBytes(of: f.bitPattern.littleEndian) { data += $0 } }
        return append(type: 2, data: data)
    }

    mutating func append(float16 v: [Float]) -> Int {
        var data: [UInt8] = []
        data.reserveCapacity(2 * v.count)
        for f in v { withUnsafeBytes(of: HalfPrecision.bits(f).littleEndian) { data += $0 } }
        return append(type: 1, data: data)
    }
}
