import PoseCore

/// A growable, 64-byte-aligned Float buffer owned by a layer (its output or input gradient).
public final class Buffer {
    public private(set) var pointer: UnsafeMutablePointer<Float>
    public private(set) var capacity: Int

    public init(capacity: Int = 0) {
        self.capacity = max(capacity, 1)
        pointer = Buffer.allocate(self.capacity)
    }

    deinit { pointer.deallocate() }

    /// Ensures room for `count` values; contents are not preserved when it grows.
    @inline(__always)
    public func reserve(_ count: Int) {
        if count > capacity {
            pointer.deallocate()
            capacity = count
            pointer = Buffer.allocate(count)
        }
    }

    static func allocate(_ count: Int) -> UnsafeMutablePointer<Float> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count * MemoryLayout<Float>.stride, alignment: 64)
        let p = raw.bindMemory(to: Float.self, capacity: count)
        p.initialize(repeating: 0, count: count)
        return p
    }
}

/// A parameter tensor of a layer: its name (e.g. `weight`), shape and axis names
/// (e.g. `[outputs, inputs]`), as written in the model file.
public struct ParameterShape: Hashable, Sendable {
    public var name: String
    public var shape: [Int]
    public var layout: String
    public init(_ name: String, _ shape: [Int], layout: String) {
        self.name = name
        self.shape = shape
        self.layout = layout
    }
    public var count: Int { shape.reduce(1, *) }
}

/// Per-call state of a forward pass.
public struct ForwardMode {
    /// Training enables dropout and keeps what backward needs.
    public var training: Bool
    /// Random stream for dropout masks.
    public var random: SeededGenerator

    public static let inference = ForwardMode(training: false, random: SeededGenerator(seed: 0))
    public static func training(seed: UInt64) -> ForwardMode { ForwardMode(training: true, random: SeededGenerator(seed: seed)) }
}

/// A layer: forward and backward side by side.
///
/// Conventions (shared by all layers):
/// - input `x` and output `y` are `[batch, time, channels]`, row-major;
/// - `forward` returns a pointer into a buffer the layer owns, valid until its next forward;
///   the layer may keep a pointer to `x` for backward, so callers keep `x` alive until then;
/// - `backward` *accumulates* (`+=`) into the parameter gradients and returns `dx`
///   (or nil when `needInputGradient` is false).
public protocol Layer: AnyObject {
    var spec: LayerSpec { get }
    var inputShape: Shape { get }
    var outputShape: Shape { get }
    /// Parameter tensors, in file order.
    var parameterShapes: [ParameterShape] { get }
    /// Points the layer at its parameters and gradients inside the network's arenas
    /// (laid out in `parameterShapes` order).
    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>)
    /// PyTorch's default initialisation for the layer type.
    func initialize(using g: inout SeededGenerator)
    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float>
    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>?
}

extension Layer {
    public var parameterShapes: [ParameterShape] { [] }
    public func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {}
    public func initialize(using g: inout SeededGenerator) {}
    public var parameterCount: Int { parameterShapes.reduce(0) { $0 + $1.count } }
}

/// Builds the layer for a spec, checking it against the input shape.
func makeLayer(_ spec: LayerSpec, input: Shape, name: String) throws -> Layer {
    func positive(_ values: [(String, Int)]) throws {
        for (field, v) in values where v <= 0 {
            throw ModelError.invalidLayer(layer: name, reason: "\(field) must be positive, got \(v)")
        }
    }
    switch spec {
    case .linear(let inputs, let outputs):
        try positive([("inputs", inputs), ("outputs", outputs)])
        guard inputs == input.channels else {
            throw ModelError.shapeMismatch(layer: name, expected: "[*, \(inputs)]", got: input.description)
        }
        return Linear(inputs: inputs, outputs: outputs, time: input.time)
    case .relu:
        return ReLU(shape: input)
    case .flatten:
        return Flatten(shape: input)
    default:
        throw ModelError.invalidLayer(layer: name, reason: "layer type '\(spec.typeName)' is not implemented yet")
    }
}
