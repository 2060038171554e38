/// Per-sample activation shape. Every activation is `[batch, time, channels]`, row-major,
/// time-major with channels last. An MLP works on `time == 1` after `flatten`.
public struct Shape: Codable, Hashable, Sendable, CustomStringConvertible {
    public var time: Int
    public var channels: Int
    public init(time: Int, channels: Int) {
        self.time = time
        self.channels = channels
    }
    public var count: Int { time * channels }
    public var description: String { "[\(time), \(channels)]" }
}

/// One layer of a network as written in the model file header: its kind and hyperparameters
/// (a `LayerKind`; `LayerKinds.all` lists them). Parameters (weights) are described separately
/// as tensors.
///
/// JSON form: an object with `"type"` and the fields of that kind, e.g.
/// `{"type": "linear", "inputs": 2565, "outputs": 256}`. Each kind's file adds its
/// constructor (`.linear(inputs:outputs:)`, `.relu`, ...).
public struct LayerSpec: Hashable, Sendable {
    public let kind: any LayerKind

    public init(_ kind: some LayerKind) { self.kind = kind }

    public var typeName: String { type(of: kind).typeName }

    public static func == (a: LayerSpec, b: LayerSpec) -> Bool { AnyHashable(a.kind) == AnyHashable(b.kind) }
    public func hash(into h: inout Hasher) { AnyHashable(kind).hash(into: &h) }

    /// The spec of kind `type` read from `fields`, or nil when no kind has that name.
    static func decode(type: String, fields: some LayerFieldReader) throws -> LayerSpec? {
        guard let kind = LayerKinds.named(type) else { return nil }
        return LayerSpec(try kind.init(fields: fields))
    }
}

extension LayerSpec: Codable {
    struct FieldKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// `LayerFieldReader` over a decoding container (the Codable path).
    struct ContainerReader: LayerFieldReader {
        let c: KeyedDecodingContainer<FieldKey>
        func contains(_ key: String) -> Bool { c.contains(FieldKey(key)) && !((try? c.decodeNil(forKey: FieldKey(key))) ?? true) }
        func int(_ key: String) throws -> Int { try c.decode(Int.self, forKey: FieldKey(key)) }
        func float(_ key: String) throws -> Float { try c.decode(Float.self, forKey: FieldKey(key)) }
        func ints(_ key: String) throws -> [Int] { try c.decode([Int].self, forKey: FieldKey(key)) }
        func floats(_ key: String) throws -> [Float] { try c.decode([Float].self, forKey: FieldKey(key)) }
        func layers(_ key: String) throws -> [LayerSpec] { try c.decode([LayerSpec].self, forKey: FieldKey(key)) }
        func layerLists(_ key: String) throws -> [[LayerSpec]] { try c.decode([[LayerSpec]].self, forKey: FieldKey(key)) }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: FieldKey.self)
        let type = try c.decode(String.self, forKey: FieldKey("type"))
        guard let spec = try LayerSpec.decode(type: type, fields: ContainerReader(c: c)) else {
            throw DecodingError.dataCorruptedError(forKey: FieldKey("type"), in: c, debugDescription: "unknown layer type '\(type)'")
        }
        self = spec
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: FieldKey.self)
        try c.encode(typeName, forKey: FieldKey("type"))
        for (key, value) in kind.fields {
            let k = FieldKey(key)
            switch value {
            case .int(let v): try c.encode(v, forKey: k)
            case .float(let v): try c.encode(v, forKey: k)
            case .ints(let v): try c.encode(v, forKey: k)
            case .floats(let v): try c.encode(v, forKey: k)
            case .layers(let v): try c.encode(v, forKey: k)
            case .layerLists(let v): try c.encode(v, forKey: k)
            }
        }
    }
}

/// Errors from building or running a network.
public enum ModelError: Error, Equatable, CustomStringConvertible {
    case shapeMismatch(layer: String, expected: String, got: String)
    case invalidLayer(layer: String, reason: String)
    case inputSize(expected: Int, got: Int)
    /// The network's output for a window is NaN or infinite (`window` counts from 0): the
    /// weights or this input overflow float32 in the sums.
    case nonFiniteOutput(window: Int, classIndex: Int, value: Float)
    /// The output is not finite even on plain input (`ActionModel.checkOutputs`): weights that
    /// are finite but overflow float32 (an edited or damaged model file).
    case nonFiniteOnPlainInput(classIndex: Int, value: Float)

    public var description: String {
        switch self {
        case .shapeMismatch(let layer, let expected, let got):
            return "layer \(layer) expects input \(expected) but receives \(got)"
        case .invalidLayer(let layer, let reason):
            return "layer \(layer) is invalid: \(reason)"
        case .inputSize(let expected, let got):
            return "the model expects \(expected) input values per window, got \(got)"
        case .nonFiniteOutput(let w, let k, let v):
            return "window \(w): the network's output for class \(k) is \(v), not a finite number: the weights or this input "
                + "(an extreme or degenerate pose?) overflow float32"
        case .nonFiniteOnPlainInput(let k, let v):
            return "the network's output for class \(k) is \(v), not a finite number, on a plain pose: its weights overflow float32 "
                + "(an edited or damaged model file); no prediction of this model can be trusted: retrain or re-export it"
        }
    }
}
