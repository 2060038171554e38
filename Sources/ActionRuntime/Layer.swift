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
public struct ForwardMode: Sendable {
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

/// A layer made of layers (`residual`, `flipAverage`, `averageProbabilities`): the frozen
/// state's calls reach every layer it holds. Binding and initialisation stay each container's
/// own (a mirrored copy shares its body's parameters).
protocol LayerContainer: Layer {
    /// Every layer held, in a fixed order (the same for replicas of one spec).
    var sublayers: [Layer] { get }
    /// Lets the container's own chains share `pool`'s input-gradient buffers (see
    /// `GradientPool`); a container that does not keeps its layers' private buffers.
    func attach(_ pool: GradientPool)
}

extension LayerContainer {
    func attach(_ pool: GradientPool) {}

    func setFrozen(_ frozen: Bool) {
        for layer in sublayers { layer.setFrozen(frozen) }
    }

    func prepareFrozen() {
        for layer in sublayers { layer.prepareFrozen() }
    }

    func shareFrozen(from other: Layer) {
        for (a, b) in zip(sublayers, (other as! Self).sublayers) { a.shareFrozen(from: b) }
    }
}

/// Largest parameter arena or network input a `Network` may ask for, in values.
let maxLayerValues = 1 << 31

extension LayerSpec {
    /// The kind's shapes for `input` with the limits every kind shares: each parameter and data
    /// tensor and the output within `ModelFile.Limits` (docs/format.md 2.1).
    func checkedShapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        let shapes = try kind.shapes(input: input, check: check)
        for p in shapes.parameters + shapes.data { _ = try check.product(p.name, p.shape) }
        _ = try check.product("output", [shapes.output.time, shapes.output.channels], max: ModelFile.Limits.activationValues)
        return shapes
    }
}

/// Builds the layer for a spec, checking it against the input shape. `path` locates the layer
/// in the network for error messages: `3` at the top level, `3.body.0` inside a residual block.
func makeLayer(_ spec: LayerSpec, input: Shape, path: String) throws -> Layer {
    let name = "\(path) (\(spec.typeName))"
    do {
        let shapes = try layerShapes(spec, input: input, path: path)
        return try spec.kind.makeLayer(input: input, shapes: shapes, builder: LayerBuilder(path: path))
    } catch let e as LayerCheckError {
        throw ModelError.invalidLayer(layer: name, reason: e.reason)
    }
}

/// The checked shapes of `spec` for `input`, a branch's layers checked in turn (`makeLayer`'s errors).
private func layerShapes(_ spec: LayerSpec, input: Shape, path: String) throws -> LayerShapes {
    let check = ShapeCheck { specs, input, branch in
        var shape = input
        for (j, s) in specs.enumerated() {
            let p = "\(path).\(branch).\(j)"
            do {
                shape = try layerShapes(s, input: shape, path: p).output
            } catch let e as LayerCheckError {
                throw ModelError.invalidLayer(layer: "\(p) (\(s.typeName))", reason: e.reason)
            }
        }
        return shape
    }
    return try spec.checkedShapes(input: input, check: check)
}
