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

/// One layer of a network as written in the model file header: its type and hyperparameters.
/// Parameters (weights) are described separately as tensors.
///
/// JSON form: an object with `"type"` and the fields of that type, e.g.
/// `{"type": "linear", "inputs": 2565, "outputs": 256}`.
public indirect enum LayerSpec: Hashable, Sendable {
    /// `y = x W^T + b` applied at each time step. `weight [outputs, inputs]`, `bias [outputs]`.
    case linear(inputs: Int, outputs: Int)
    case relu
    /// GELU, tanh approximation: `0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))`.
    case gelu
    /// Inverted dropout during training; the identity at inference.
    case dropout(rate: Float)
    /// Layer normalisation over channels at each time step. `gamma [channels]`, `beta [channels]`.
    case layerNorm(channels: Int, epsilon: Float)
    /// 1D convolution over time. `weight [outputs, kernel, inputs]`, `bias [outputs]`;
    /// `out_t = b + Σ_k W[:, k, :] x[t·stride + k·dilation − padding]` (zeros outside).
    case conv1d(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int)
    /// `[time, channels] -> [1, time·channels]`, time-major.
    case flatten
    /// Mean over time: `[time, channels] -> [1, channels]`.
    case globalAveragePool
    /// Max over time: `[time, channels] -> [1, channels]`.
    case globalMaxPool
    /// `y = body(x) + shortcut(x)`; an empty shortcut is the identity.
    case residual(body: [LayerSpec], shortcut: [LayerSpec])

    public var typeName: String {
        switch self {
        case .linear: return "linear"
        case .relu: return "relu"
        case .gelu: return "gelu"
        case .dropout: return "dropout"
        case .layerNorm: return "layerNorm"
        case .conv1d: return "conv1d"
        case .flatten: return "flatten"
        case .globalAveragePool: return "globalAveragePool"
        case .globalMaxPool: return "globalMaxPool"
        case .residual: return "residual"
        }
    }
}

extension LayerSpec: Codable {
    private enum Key: String, CodingKey {
        case type, inputs, outputs, rate, channels, epsilon, kernel, stride, dilation, padding, body, shortcut
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "linear":
            self = .linear(inputs: try c.decode(Int.self, forKey: .inputs), outputs: try c.decode(Int.self, forKey: .outputs))
        case "relu": self = .relu
        case "gelu": self = .gelu
        case "dropout": self = .dropout(rate: try c.decode(Float.self, forKey: .rate))
        case "layerNorm":
            self = .layerNorm(
                channels: try c.decode(Int.self, forKey: .channels), epsilon: try c.decode(Float.self, forKey: .epsilon))
        case "conv1d":
            self = .conv1d(
                inputs: try c.decode(Int.self, forKey: .inputs), outputs: try c.decode(Int.self, forKey: .outputs),
                kernel: try c.decode(Int.self, forKey: .kernel), stride: try c.decode(Int.self, forKey: .stride),
                dilation: try c.decode(Int.self, forKey: .dilation), padding: try c.decode(Int.self, forKey: .padding))
        case "flatten": self = .flatten
        case "globalAveragePool": self = .globalAveragePool
        case "globalMaxPool": self = .globalMaxPool
        case "residual":
            self = .residual(
                body: try c.decode([LayerSpec].self, forKey: .body),
                shortcut: try c.decode([LayerSpec].self, forKey: .shortcut))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: c, debugDescription: "unknown layer type '\(type)'")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(typeName, forKey: .type)
        switch self {
        case .linear(let i, let o):
            try c.encode(i, forKey: .inputs)
            try c.encode(o, forKey: .outputs)
        case .relu, .gelu, .flatten, .globalAveragePool, .globalMaxPool: break
        case .dropout(let r): try c.encode(r, forKey: .rate)
        case .layerNorm(let ch, let eps):
            try c.encode(ch, forKey: .channels)
            try c.encode(eps, forKey: .epsilon)
        case .conv1d(let i, let o, let k, let s, let d, let p):
            try c.encode(i, forKey: .inputs)
            try c.encode(o, forKey: .outputs)
            try c.encode(k, forKey: .kernel)
            try c.encode(s, forKey: .stride)
            try c.encode(d, forKey: .dilation)
            try c.encode(p, forKey: .padding)
        case .residual(let body, let shortcut):
            try c.encode(body, forKey: .body)
            try c.encode(shortcut, forKey: .shortcut)
        }
    }
}

/// Errors from building or running a network.
public enum ModelError: Error, Equatable, CustomStringConvertible {
    case shapeMismatch(layer: String, expected: String, got: String)
    case invalidLayer(layer: String, reason: String)
    case inputSize(expected: Int, got: Int)

    public var description: String {
        switch self {
        case .shapeMismatch(let layer, let expected, let got):
            return "layer \(layer) expects input \(expected) but receives \(got)"
        case .invalidLayer(let layer, let reason):
            return "layer \(layer) is invalid: \(reason)"
        case .inputSize(let expected, let got):
            return "the model expects \(expected) input values per window, got \(got)"
        }
    }
}
