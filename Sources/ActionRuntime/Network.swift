import PoseCore

/// A named parameter tensor inside the network's parameter arena.
public struct TensorInfo: Hashable, Sendable {
    public var name: String
    public var shape: [Int]
    public var layout: String
    /// Offset in values (not bytes) inside the arena.
    public var offset: Int
    public var count: Int { shape.reduce(1, *) }
}

/// A feed-forward network: an ordered list of layers over `[batch, time, channels]`
/// activations ending in `[batch, 1, classes]` logits.
///
/// All parameters live in one contiguous, 64-byte aligned arena (and gradients in a twin),
/// so that optimisers, checkpoints and the model file treat them as one vector.
/// A `Network` is not thread-safe: its layers own their activation buffers.
public final class Network {
    public let specs: [LayerSpec]
    public let inputShape: Shape
    public let outputShape: Shape
    let layers: [Layer]
    let chain: LayerChain
    /// The layers before the last (those `forwardMembers` runs before the members).
    let memberPrefix: LayerChain
    /// The input-gradient buffers the layers share during backward (nil: each its own).
    let gradientPool: GradientPool?
    public let tensors: [TensorInfo]
    public let parameterCount: Int
    /// Activation values per window: every layer's output, nested layers included, plus the
    /// scratch of graphConv and conv1d (`ModelFile`'s shape pass; the top-level outputs for a
    /// network beyond the model file's limits). What a batch's buffers grow with.
    public let activationValuesPerWindow: Int
    /// All parameters `[parameterCount]`.
    public let parameters: UnsafeMutablePointer<Float>
    /// All gradients `[parameterCount]`, accumulated by `backward`.
    public let gradients: UnsafeMutablePointer<Float>

    /// Where the parameters live when the network does not own them (see `ParameterStorage`).
    let parameterStorage: ParameterStorage?

    public convenience init(layers specs: [LayerSpec], input: Shape) throws {
        try self.init(layers: specs, input: input, storage: nil)
    }

    /// With `storage`, the layers are bound to its values (which must hold at least
    /// `parameterCount`, 64-byte aligned, laid out as `tensors` says) instead of a new arena.
    /// `sharedGradients`: the layers' input gradients live in a few buffers shared by all
    /// (`GradientPool`; the same bits as private buffers, tested); false gives every layer its own.
    init(layers specs: [LayerSpec], input: Shape, storage: ParameterStorage?, sharedGradients: Bool = true) throws {
        guard input.time > 0 && input.channels > 0 else {
            throw ModelError.invalidLayer(layer: "input", reason: "input shape \(input) must be positive")
        }
        let (inputCount, inputOverflow) = input.time.multipliedReportingOverflow(by: input.channels)
        guard !inputOverflow, inputCount <= maxLayerValues else {
            throw ModelError.invalidLayer(layer: "input", reason: "input shape \(input) is too large")
        }
        var shape = input
        var built: [Layer] = []
        for (i, spec) in specs.enumerated() {
            let layer = try makeLayer(spec, input: shape, path: "\(i)")
            built.append(layer)
            shape = layer.outputShape
        }
        guard shape.time == 1 else {
            throw ModelError.invalidLayer(
                layer: "output", reason: "the last layer gives \(shape) per window; add flatten or a pooling layer")
        }
        self.specs = specs
        self.inputShape = input
        self.outputShape = shape
        self.layers = built
        var chain = LayerChain(built), prefix = LayerChain(Array(built.dropLast()))
        if sharedGradients {
            let pool = GradientPool()
            chain.attach(pool)
            prefix.attach(pool)
            gradientPool = pool
        } else {
            gradientPool = nil
        }
        self.chain = chain
        memberPrefix = prefix
        // Tensor names are `layers.<i>.<name>`; a residual block's own names carry the path
        // inside it (`layers.3.body.0.weight`, `layers.3.shortcut.0.bias`). Each layer's
        // tensors are contiguous, in `parameterShapes` order, which is the order `bind` expects.
        var infos: [TensorInfo] = []
        var offset = 0
        for (i, layer) in built.enumerated() {
            for p in layer.parameterShapes {
                let info = TensorInfo(name: "layers.\(i).\(p.name)", shape: p.shape, layout: p.layout, offset: offset)
                infos.append(info)
                offset += info.count
                guard offset <= maxLayerValues else {
                    throw ModelError.invalidLayer(
                        layer: "\(i) (\(specs[i].typeName))", reason: "the network has more than \(maxLayerValues) parameters")
                }
            }
        }
        tensors = infos
        parameterCount = offset
        activationValuesPerWindow =
            ModelFile.activationValues(specs, input: input) ?? built.reduce(input.count) { $0 + $1.outputShape.count }
        if let storage {
            guard storage.count >= offset else {
                throw ModelError.invalidLayer(layer: "parameters", reason: "the storage holds \(storage.count) values, the layers need \(offset)")
            }
            parameters = storage.values
        } else {
            parameters = Buffer.allocate(max(offset, 1))
        }
        parameterStorage = storage
        // Not touched until the first backward: an inference-only network (a loaded model)
        // never pays for the gradient arena's pages.
        gradients = Buffer.allocate(max(offset, 1), zeroed: false)
        var layerOffset = 0
        for layer in built {
            layer.bind(parameters: parameters + layerOffset, gradients: gradients + layerOffset)
            layerOffset += layer.parameterCount
        }
    }

    deinit {
        if parameterStorage == nil { parameters.deallocate() }
        gradients.deallocate()
    }

    public var classCount: Int { outputShape.channels }

    /// Initialises every layer from a seed (PyTorch's default scheme per layer type).
    public func initialize(seed: UInt64) {
        var g = SeededGenerator(seed: seed)
        for layer in layers { layer.initialize(using: &g) }
        refreeze()
    }

    /// Copies parameters from a flat array (e.g. a model file's data).
    public func load(parameters values: UnsafeBufferPointer<Float>) {
        precondition(values.count == parameterCount, "parameter count")
        if let base = values.baseAddress { parameters.update(from: base, count: parameterCount) }
        refreeze()
    }

    // MARK: - Frozen parameters

    /// True between `freeze()` and `thaw()`.
    public private(set) var isFrozen = false

    /// Promises that `parameters` no longer change (a loaded model; `ActionModel` freezes its
    /// network), so that layers may keep derived copies of their weights: linear and
    /// convolution layers pack theirs at their next forward for the runtime's own kernels
    /// (`PackedGEMM`; docs/architecture.md says which batches use them). Writing `parameters`
    /// directly while frozen leaves those copies stale: call `thaw()` first (and `freeze()`
    /// again after).
    /// `load(parameters:)` and `initialize(seed:)` refresh the copies themselves.
    public func freeze() {
        isFrozen = true
        for layer in layers { layer.setFrozen(true) }
    }

    /// Ends `freeze()`: the layers drop their derived copies; training may change parameters.
    public func thaw() {
        isFrozen = false
        for layer in layers { layer.setFrozen(false) }
    }

    /// A network of the same layers bound to the same parameters, sharing their packed copies,
    /// with activation buffers of its own: what `ActionModel` gives each thread and session.
    /// The network must be frozen (its parameters no longer change), and stays alive as long
    /// as a replica does. Packs the weights first if no forward has yet; not thread-safe
    /// itself (`ActionModel` calls it under a lock), the replicas are independent of each
    /// other and of this network from then on. Changing this network's parameters afterwards
    /// (even through `load` or `initialize`) leaves the replicas' packed copies stale: a
    /// loaded model never does.
    public func replica() -> Network {
        precondition(isFrozen, "replica of a network that is not frozen")
        for layer in layers { layer.prepareFrozen() }
        // The same layers over the same input built before, so this cannot throw.
        let copy = try! Network(layers: specs, input: inputShape, storage: SharedParameters(self))
        copy.freeze()
        for (mine, theirs) in zip(copy.layers, layers) { mine.shareFrozen(from: theirs) }
        return copy
    }

    private func refreeze() {
        if isFrozen { freeze() }
    }

    /// True once the gradient arena holds defined values (after `zeroGradients`).
    private var gradientsDefined = false

    public func zeroGradients() {
        // Split over the threads from 2^16 values (256 KB) up: the MLP's 690,566 take 28 µs
        // on one thread of the reference machine, half that on two.
        let g = gradients
        BLAS.parallelRanges(parameterCount, minimum: 1 << 16) { r in (g + r.lowerBound).update(repeating: 0, count: r.count) }
        gradientsDefined = true
    }

    /// Logits `[batch, classes]` for inputs `[batch, inputShape]`. The result stays valid
    /// until the next forward.
    public func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        chain.forward(x, batch: batch, mode: &mode)
    }

    /// Inference forward (dropout off).
    public func forward(_ x: UnsafePointer<Float>, batch: Int) -> UnsafePointer<Float> {
        var mode = ForwardMode.inference
        return forward(x, batch: batch, mode: &mode)
    }

    /// Back-propagates `dlogits [batch, classes]` through the last forward, accumulating
    /// into `gradients`. Returns the input gradient when asked (for tests).
    @discardableResult
    public func backward(_ dlogits: UnsafePointer<Float>, batch: Int, needInputGradient: Bool = false)
        -> UnsafePointer<Float>?
    {
        precondition(!isFrozen, "backward on a frozen network: thaw() it before training")
        if !gradientsDefined { zeroGradients() }
        return chain.backward(dlogits, batch: batch, needInputGradient: needInputGradient)
    }

    // MARK: - Multi-stream training

    /// M when the network ends in `averageProbabilities` over M members (a multi-stream
    /// model), else 1.
    public var memberCount: Int { (layers.last as? AverageProbabilities)?.members.count ?? 1 }

    /// Training a multi-stream network member by member (each on its own loss, as separately
    /// trained streams are): each member's logits, member-major `[M, batch, classes]`, where
    /// `forward` gives the log of their mean probabilities. Needs `memberCount > 1`.
    public func forwardMembers(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        guard let last = layers.last as? AverageProbabilities else { preconditionFailure("forwardMembers: not a multi-stream network") }
        return last.forwardMembers(memberPrefix.forward(x, batch: batch, mode: &mode), batch: batch, mode: &mode)
    }

    /// The network's logits `[batch, classes]` from its members' `[M, batch, classes]` (as
    /// `forwardMembers` gives them): their combination, as `forward` makes it.
    public func combineMembers(_ logits: UnsafePointer<Float>, batch: Int) -> UnsafePointer<Float> {
        guard let last = layers.last as? AverageProbabilities else { preconditionFailure("combineMembers: not a multi-stream network") }
        return last.combine(logits, batch: batch)
    }

    /// Back-propagates the members' logit gradients `[M, batch, classes]` of the last
    /// `forwardMembers`, accumulating into `gradients`.
    public func backwardMembers(_ dz: UnsafePointer<Float>, batch: Int) {
        precondition(!isFrozen, "backward on a frozen network: thaw() it before training")
        guard let last = layers.last as? AverageProbabilities else { preconditionFailure("backwardMembers: not a multi-stream network") }
        if !gradientsDefined { zeroGradients() }
        let prefixNeedsGradient = memberPrefix.layers.contains { $0.parameterCount > 0 }
        if let g = last.backwardMembers(dz, batch: batch, needInputGradient: prefixNeedsGradient) {
            _ = memberPrefix.backward(g, batch: batch, needInputGradient: false)
        }
    }

    /// Convenience for tests and small callers: logits for inputs given as an array.
    public func predictLogits(_ x: [Float], batch: Int) -> [Float] {
        precondition(x.count == batch * inputShape.count, "input size")
        return x.withUnsafeBufferPointer { p in
            Array(UnsafeBufferPointer(start: forward(p.baseAddress!, batch: batch), count: batch * classCount))
        }
    }
}

/// Memory that holds a network's parameters for it, e.g. a model file mapped in place
/// (`ModelFile.load(contentsOf:memoryMapped: true)`). The network keeps it alive and never frees
/// `values` itself; the storage releases them when the last network using it goes.
protocol ParameterStorage: AnyObject {
    /// At least `count` writable values, 64-byte aligned.
    var values: UnsafeMutablePointer<Float> { get }
    var count: Int { get }
}

/// Another network's parameters, kept alive with it (`Network.replica()`).
private final class SharedParameters: ParameterStorage {
    let owner: Network
    init(_ owner: Network) { self.owner = owner }
    var values: UnsafeMutablePointer<Float> { owner.parameters }
    var count: Int { owner.parameterCount }
}

/// An ordered list of layers (a network's, or a branch of a residual block) with what its
/// backward walk needs precomputed, so that backward allocates nothing.
struct LayerChain {
    let layers: [Layer]
    /// `parametersBefore[j]`: some layer before `j` has parameters.
    let parametersBefore: [Bool]
    /// The layers whose input-gradient buffer a pool may replace (nil for the others).
    private let pooled: [PooledInputGradient?]
    /// Where backward takes the pooled layers' input-gradient buffers from; nil: their own.
    private(set) var pool: GradientPool?

    init(_ layers: [Layer]) {
        self.layers = layers
        var seen = false, flags: [Bool] = []
        for layer in layers {
            flags.append(seen)
            seen = seen || layer.parameterCount > 0
        }
        parametersBefore = flags
        pooled = layers.map { $0 as? PooledInputGradient }
    }

    /// Shares `pool`'s buffers among this chain's layers and those of the containers in it.
    mutating func attach(_ pool: GradientPool) {
        self.pool = pool
        for layer in layers { (layer as? LayerContainer)?.attach(pool) }
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        var a = x
        for layer in layers { a = layer.forward(a, batch: batch, mode: &mode) }
        return a
    }

    /// Back-propagates `dy` in reverse. A layer computes its input gradient only when a layer
    /// before it has parameters or the caller needs `dx`; once no earlier layer needs a
    /// gradient the walk stops (so an MLP's first linear layer never computes its
    /// 2565-wide input gradient). Returns `dx`, or nil when not needed.
    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        var g = dy
        for j in stride(from: layers.count - 1, through: 0, by: -1) {
            let need = needInputGradient || parametersBefore[j]
            // A buffer that holds neither g (what layer j reads) nor a pinned gradient.
            if need, let pool, let layer = pooled[j] { layer.dx = pool.buffer(avoiding: g) }
            guard let next = layers[j].backward(g, batch: batch, needInputGradient: need) else { return nil }
            g = next
        }
        return g
    }
}
