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

    static func allocate(_ count: Int, zeroed: Bool = true) -> UnsafeMutablePointer<Float> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count * MemoryLayout<Float>.stride, alignment: 64)
        let p = raw.bindMemory(to: Float.self, capacity: count)
        if zeroed { p.initialize(repeating: 0, count: count) }
        return p
    }
}

/// A growable Int32 buffer owned by a layer (e.g. the argmax indices of max pooling).
public final class IndexBuffer {
    public private(set) var pointer: UnsafeMutablePointer<Int32>
    public private(set) var capacity: Int

    public init() {
        capacity = 1
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: 0)
    }

    deinit { pointer.deallocate() }

    /// Ensures room for `count` values; contents are not preserved when it grows.
    @inline(__always)
    public func reserve(_ count: Int) {
        if count > capacity {
            pointer.deallocate()
            capacity = count
            pointer = .allocate(capacity: count)
            pointer.initialize(repeating: 0, count: count)
        }
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
    /// Told by `Network.freeze()` (true) and `thaw()` (false): while frozen the parameters do
    /// not change, so the layer may keep derived copies of them (`Linear` and `Conv1d` pack
    /// their weights for the runtime's own kernels) and must drop them when thawed.
    func setFrozen(_ frozen: Bool)
    /// While frozen: makes the derived copies now (instead of at the next forward), so that
    /// replicas can share them (`Network.replica()`). Not thread-safe.
    func prepareFrozen()
    /// While frozen: uses the derived copies of `other`, a frozen layer of the same spec bound to
    /// the same parameters (after its `prepareFrozen()`); they are read-only from then on.
    func shareFrozen(from other: Layer)
}

extension Layer {
    public var parameterShapes: [ParameterShape] { [] }
    public func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {}
    public func initialize(using g: inout SeededGenerator) {}
    public func setFrozen(_ frozen: Bool) {}
    public func prepareFrozen() {}
    public func shareFrozen(from other: Layer) {}
    public var parameterCount: Int { parameterShapes.reduce(0) { $0 + $1.count } }
}

/// Largest parameter tensor or per-window activation a layer may ask for, in values. It keeps
/// a hostile model header from requesting absurd allocations (matches `ModelFile`'s limit).
let maxLayerValues = 1 << 31

/// Builds the layer for a spec, checking it against the input shape. `path` locates the layer
/// in the network for error messages: `3` at the top level, `3.body.0` inside a residual block.
func makeLayer(_ spec: LayerSpec, input: Shape, path: String) throws -> Layer {
    let name = "\(path) (\(spec.typeName))"
    func invalid(_ reason: String) -> ModelError { .invalidLayer(layer: name, reason: reason) }
    func positive(_ values: [(String, Int)]) throws {
        for (field, v) in values where v <= 0 {
            throw invalid("\(field) must be positive, got \(v)")
        }
    }
    /// The product of `factors`, or a thrown error when it overflows or exceeds the limit.
    func checkedCount(_ what: String, _ factors: [Int]) throws -> Int {
        var n = 1
        for f in factors {
            let (p, overflow) = n.multipliedReportingOverflow(by: f)
            guard !overflow, p <= maxLayerValues else {
                throw invalid("\(what) \(factors.map(String.init).joined(separator: " x ")) is too large")
            }
            n = p
        }
        return n
    }
    func channels(_ expected: Int, field: String) throws {
        guard expected == input.channels else {
            throw ModelError.shapeMismatch(layer: name, expected: "[*, \(expected)] (\(field) \(expected))", got: input.description)
        }
    }
    switch spec {
    case .linear(let inputs, let outputs):
        try positive([("inputs", inputs), ("outputs", outputs)])
        try channels(inputs, field: "inputs")
        _ = try checkedCount("weight", [outputs, inputs])
        _ = try checkedCount("output", [input.time, outputs])
        return Linear(inputs: inputs, outputs: outputs, time: input.time)
    case .relu:
        return ReLU(shape: input)
    case .gelu:
        return GELU(shape: input)
    case .dropout(let rate):
        guard rate >= 0 && rate < 1 else { throw invalid("rate must be in [0, 1), got \(rate)") }
        return Dropout(rate: rate, shape: input)
    case .layerNorm(let count, let epsilon):
        try positive([("channels", count)])
        try channels(count, field: "channels")
        guard epsilon > 0 && epsilon.isFinite else { throw invalid("epsilon must be positive and finite, got \(epsilon)") }
        return LayerNorm(shape: input, epsilon: epsilon)
    case .conv1d(let inputs, let outputs, let kernel, let stride, let dilation, let padding):
        try positive([("inputs", inputs), ("outputs", outputs), ("kernel", kernel), ("stride", stride), ("dilation", dilation)])
        guard padding >= 0 else { throw invalid("padding must be zero or positive, got \(padding)") }
        try channels(inputs, field: "inputs")
        _ = try checkedCount("weight", [outputs, kernel, inputs])
        _ = try checkedCount("padding", [2, padding])
        let span = try checkedCount("dilated kernel span", [dilation, kernel - 1]) + 1
        let (padded, overflow) = input.time.addingReportingOverflow(2 * padding)
        guard !overflow else { throw invalid("padding \(padding) is too large") }
        guard padded >= span else {
            throw invalid(
                "the input has \(input.time) time steps (\(padded) with padding \(padding) on each side), "
                    + "fewer than the dilated kernel span \(span) = dilation \(dilation) x (kernel \(kernel) - 1) + 1")
        }
        let time = (padded - span) / stride + 1
        _ = try checkedCount("im2col row", [kernel, inputs])
        _ = try checkedCount("output", [time, outputs])
        return Conv1d(
            inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding,
            inputTime: input.time)
    case .flatten:
        return Flatten(shape: input)
    case .globalAveragePool:
        return GlobalAveragePool(shape: input)
    case .globalMaxPool:
        return GlobalMaxPool(shape: input)
    case .residual(let bodySpecs, let shortcutSpecs):
        func chain(_ specs: [LayerSpec], _ branch: String) throws -> (layers: [Layer], output: Shape) {
            var shape = input, built: [Layer] = []
            for (j, s) in specs.enumerated() {
                let layer = try makeLayer(s, input: shape, path: "\(path).\(branch).\(j)")
                built.append(layer)
                shape = layer.outputShape
            }
            return (built, shape)
        }
        let body = try chain(bodySpecs, "body"), shortcut = try chain(shortcutSpecs, "shortcut")
        guard body.output == shortcut.output else {
            throw invalid(
                "the body gives \(body.output) per window but the shortcut gives \(shortcut.output)"
                    + (shortcutSpecs.isEmpty ? " (the identity)" : "") + "; they are added, so they must agree")
        }
        return Residual(body: body.layers, shortcut: shortcut.layers, input: input, output: body.output)
    }
}
