import PoseCore

/// 1D convolution over time (PyTorch `nn.Conv1d` semantics on channels-last activations).
///
/// Shapes: B = batch, T = input time, I = inputs, O = outputs, K = kernel, S = stride,
/// D = dilation, P = padding, To = output time = (T + 2P − D(K − 1) − 1)/S + 1;
/// rows R = B·To, row length KI = K·I.
/// `weight [O, K, I]`, `bias [O]`, both initialised U(±1/√(I·K)) (PyTorch's default:
/// kaiming_uniform(a = √5) works out to that bound, and the bias uses the same fan-in).
///
/// Forward: `y[b, t, o] = bias[o] + Σ_k Σ_i W[o, k, i] · x[b, t·S + k·D − P, i]` (zeros outside).
/// Backward: `dW += Σ dy ⊗ x` over the same index pairs, `dbias[o] += Σ_r dy[r, o]`, and
/// `dx[b, s, i] = Σ dy[b, t, o] · W[o, k, i]` over the (t, k) with `t·S + k·D − P = s`.
///
/// Four exact formulations behind this one type, each in its own file; `formulation(batch:)`
/// below is the one place that chooses (from the geometry, the batch size and whether the
/// layer is frozen):
/// - **im2col** (`Conv1dIm2col.swift`): any geometry; an unfrozen layer's batches that Winograd
///   does not take (a pointwise convolution multiplies `x` directly);
/// - **Winograd** (`Conv1dWinograd.swift`): an unfrozen layer's batches of at least
///   `winogradMinimumBatch` when the geometry has a transform and D = 1 (S = 1, 2 ≤ K ≤ 7);
/// - **frozen Winograd** (`Conv1dFrozenWinograd.swift`): a frozen layer with a transform
///   (S = 1, 2 ≤ K ≤ 7, any D), any batch, on the runtime's own kernels (`PackedGEMM`) with
///   U[ξ] packed once; a dilated layer as D interleaved undilated ones (its phases), reading
///   the input in place;
/// - **packed** (`Conv1dPacked.swift`): a frozen layer without a transform and D = 1 (or
///   K = 1), any batch: the packed weight times the padded input, no im2col;
/// - **frozen im2col** (`Conv1dPacked.swift`): a frozen dilated layer without a transform
///   (S > 1 or K > 7), any batch: im2col times the packed weight.
/// A frozen layer never calls OpenBLAS, so neither OpenBLAS's thread count nor its kernel
/// changes a loaded model's results. The direct sums of the definition
/// (`Conv1dReference.swift`) are the tests' reference.
///
/// Threads: with `BLAS.threads` = n > 1 and enough work, the batch is split into n contiguous
/// parts that run at once (`BLAS.parallel`), each with its own buffers and one-thread GEMMs:
/// one independent GEMM stream per core, with the transforms (im2col, col2im, Winograd's) in
/// parallel too. (OpenBLAS's own two-thread split of these shapes runs at 1.5-1.9x one thread;
/// two streams reach 1.9x.) A part accumulates its weight gradient (dU for Winograd) and
/// dbias into a private buffer (part 0 its im2col dW and dbias directly); they are added in
/// part order afterwards, so a fixed thread count gives the same bits every time. Within a
/// part, elements run in chunks of at most `chunk`, whose buffers stay within 2 MB so that
/// they are still in cache when the next step reads them; backward rebuilds the columns (V)
/// of every chunk but the last, which forward left in the buffer. For the reference convnet
/// at batch 64 each part is one chunk. The chunking depends only on the shapes.
///
/// Lanes (`lanes` = L > 1, only as `GraphConv`'s per-joint temporal convolution): each window
/// holds L independent sequences side by side, `x [B, T, L·I]` with lane l's step t at channels
/// `l·I ..< (l + 1)·I`, convolved with the same weights into `y [B, To, L·O]`; only the Winograd
/// formulations take lanes (`formulation(batch:)` says which batches; the caller keeps the rest).
final class Conv1d: PooledInputGradient {
    let inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int
    let inputTime: Int, outputTime: Int
    /// Sequences per window, sharing the weights (1 for a network's conv1d layer).
    let lanes: Int
    var kind: Conv1dKind {
        Conv1dKind(inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding)
    }
    var spec: LayerSpec { LayerSpec(kind) }
    var inputShape: Shape { Shape(time: inputTime, channels: lanes * inputs) }
    var outputShape: Shape { Shape(time: outputTime, channels: lanes * outputs) }
    var parameterShapes: [ParameterShape] { kind.parameters }
    var isPointwise: Bool { kernel == 1 && stride == 1 && padding == 0 }

    /// The Winograd transform for this geometry, nil when it has none (stride ≠ 1, K = 1 or
    /// K > 7, or fewer than 2 outputs per phase). With D > 1 only the frozen path uses it, on
    /// each of the D phases (see `Conv1dFrozenWinograd.swift`); training uses im2col then.
    /// Tests may replace it to exercise other tile sizes.
    var winograd: Winograd?
    /// Batches of at least this many windows use Winograd (when `winograd` is set).
    var winogradMinimumBatch = 8
    /// Batch elements per chunk (see above); tests set it small to exercise chunking.
    var chunk: Int
    /// Most parts a batch is split into (the frozen paths: exactly, up to one per window or
    /// panel); nil: `BLAS.threads`. Tests set it to exercise splits.
    var maxParts: Int?
    /// Tiles per chunk of the frozen Winograd path; nil: V and M within about 1 MB. For tests.
    var packedChunk: Int?
    /// Smallest GEMM work (multiply-adds) worth a part of its own.
    static let minimumPartWork = 1 << 19
    /// Whether layers made from now on give a frozen dilated layer its phase Winograd
    /// transform (the default); off, such a layer takes frozen im2col, the path before it.
    /// For benchmarks comparing the two in one binary; one setting for the process.
    nonisolated(unsafe) static var dilatedPhases = true

    var weight: UnsafeMutablePointer<Float>!, bias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    var dWeight: UnsafeMutablePointer<Float>!, dBias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    var x: UnsafePointer<Float>?  // cached input [B, T, I]
    var parts = 1  // of the last forward
    var lastFormulation = Formulation.im2col  // of the last forward
    var workspaces: [Workspace] = []  // one per part
    let y = Buffer()  // [B·To, O]
    var dx = Buffer()  // [B, T, I]
    let U = Buffer()  // [α, O, I], Winograd's transformed weights of the last forward
    var frozen = false
    var packed: Buffer?  // the weight as PackedGEMM's B [K·I, O], while frozen
    var packedU: Buffer?  // Winograd's U[ξ] as PackedGEMM's B [I, O] for each ξ, while frozen
    let padded = Buffer()  // [B, T + 2P, I]: the packed path's zero-padded inputs
    var paddedBatch = 0  // windows whose padding rows in `padded` are zero

    /// What one part owns.
    final class Workspace {
        let cols = Buffer()  // im2col [n·To, KI], or Winograd's V [n·NT, α, I]
        let dcols = Buffer()  // im2col [n·To, KI], or Winograd's dV [n·NT, α, I]
        let products = Buffer()  // Winograd's M, then dM [n·NT, α, O]
        let gradients = Buffer()  // im2col: dW [O·KI] + dbias [O]; Winograd: dU [α·O·I] + dbias [O]
        var lastChunk = -1  // first batch element of the chunk whose columns (V) are in cols
    }

    init(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int, inputTime: Int, lanes: Int = 1) {
        self.lanes = lanes
        self.inputs = inputs
        self.outputs = outputs
        self.kernel = kernel
        self.stride = stride
        self.dilation = dilation
        self.padding = padding
        self.inputTime = inputTime
        let To = (inputTime + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
        outputTime = To
        // A dilated layer's transform is for its phases (To/D outputs each), frozen only.
        let phaseTime = (To + dilation - 1) / dilation
        if stride == 1, dilation == 1 || Conv1d.dilatedPhases, let m = Winograd.tileSize(kernel: kernel, outputTime: phaseTime) {
            winograd = Winograd(m: m, r: kernel)
        }
        if dilation == 1, let w = winograd {
            // M, the largest buffer, within 2^19 floats (2 MB) per chunk.
            chunk = max(1, (1 << 19) / (lanes * (To + w.m - 1) / w.m * w.alpha * max(inputs, outputs)))
        } else {
            // The im2col matrix within 2^17 floats (512 KB) per chunk.
            chunk = max(1, (1 << 17) / (To * kernel * inputs))
        }
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        weight = parameters
        bias = parameters + outputs * kernel * inputs
        dWeight = gradients
        dBias = gradients + outputs * kernel * inputs
    }

    func initialize(using g: inout SeededGenerator) {
        let bound = 1 / Float(inputs * kernel).squareRoot()
        for i in 0..<(outputs * kernel * inputs) { weight[i] = g.nextSymmetric(bound) }
        for i in 0..<outputs { bias[i] = g.nextSymmetric(bound) }
    }

    func setFrozen(_ frozen: Bool) {
        self.frozen = frozen
        packed = nil  // packed again at the next forward, from the current weights
        packedU = nil
    }

    func prepareFrozen() {
        guard frozen else { return }
        if let w = winograd {
            if packedU == nil { packedU = packWinograd(w) }
        } else if packed == nil {
            packed = PackedGEMM.packed(transposed: weight, n: outputs, k: kernel * inputs)
        }
    }

    func shareFrozen(from other: Layer) {
        guard frozen else { return }
        let o = other as! Conv1d
        (packed, packedU) = (o.packed, o.packedU)
    }

    /// Parts for a batch: one per thread, each at least `minimumPartWork` of forward GEMM.
    func partCount(batch: Int) -> Int {
        let work = batch * lanes * outputTime * kernel * inputs * outputs
        return max(1, min(maxParts ?? BLAS.threads, batch, work / Conv1d.minimumPartWork))
    }

    /// Batch elements `lo ..< hi` of part `p` of `parts`.
    @inline(__always)
    func range(_ p: Int, of parts: Int, batch: Int) -> (lo: Int, hi: Int) { (p * batch / parts, (p + 1) * batch / parts) }

    /// How a forward (and its backward) is computed; see the type's comment. (No payload: the
    /// Winograd cases use `winograd`, which copying into the enum would retain on every call.)
    enum Formulation { case im2col, winograd, frozenWinograd, packed, frozenIm2col }

    /// The one choice between the formulations, from the geometry, the batch size and
    /// whether the layer is frozen.
    func formulation(batch: Int) -> Formulation {
        if frozen && winograd != nil { return .frozenWinograd }
        // Training's Winograd takes D = 1 only.
        let trains = winograd != nil && dilation == 1 && batch >= winogradMinimumBatch
        if lanes > 1 { return trains ? .winograd : .im2col }  // im2col: not with lanes
        if frozen { return dilation == 1 || kernel == 1 ? .packed : .frozenIm2col }
        return trains ? .winograd : .im2col
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        self.x = x
        y.reserve(batch * outputTime * lanes * outputs)
        parts = partCount(batch: batch)
        while workspaces.count < parts { workspaces.append(Workspace()) }
        let f = formulation(batch: batch)
        precondition(lanes == 1 || f == .winograd || f == .frozenWinograd, "Conv1d lanes need a Winograd formulation")
        lastFormulation = f
        switch f {
        case .frozenWinograd: forwardPackedWinograd(x, batch: batch, winograd!)
        case .packed: forwardPacked(x, batch: batch)
        case .frozenIm2col: forwardFrozenIm2col(x, batch: batch)
        case .winograd: forwardWinograd(x, batch: batch, winograd!)
        case .im2col: forwardIm2col(x, batch: batch)
        }
        return UnsafePointer(y.pointer)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard let x else { preconditionFailure("Conv1d.backward before forward") }
        precondition(!frozen, "Conv1d.backward on a frozen layer (its forward kept nothing for backward)")
        guard batch > 0 else { return needInputGradient ? UnsafePointer(dx.pointer) : nil }
        if needInputGradient { dx.reserve(batch * inputTime * lanes * inputs) }
        switch lastFormulation {
        case .winograd: backwardWinograd(x, dy, batch: batch, needInputGradient: needInputGradient, winograd!)
        case .im2col: backwardIm2col(x, dy, batch: batch, needInputGradient: needInputGradient)
        case .frozenWinograd, .packed, .frozenIm2col: preconditionFailure("Conv1d.backward after a frozen forward")
        }
        return needInputGradient ? UnsafePointer(dx.pointer) : nil
    }

    // MARK: Shared by the training formulations

    /// Where part `p` accumulates its weight gradient (`count` values) and dbias: the
    /// network's gradients for part 0 of im2col, else the part's own zeroed buffer.
    func gradientTargets(_ p: Int, _ w: Workspace, count: Int, allPrivate all: Bool = false)
        -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
    {
        LayerGradients.partTargets(p, buffer: w.gradients, count: count, outputs: outputs, dWeight: dWeight, dBias: dBias, allPrivate: all)
    }
}

/// `{"type": "conv1d", "inputs": I, "outputs": O, "kernel": K, "stride": S, "dilation": D,
/// "padding": P}`: `y[t, o] = b[o] + Σ_k Σ_i W[o, k, i] · x[t·S + k·D − P, i]` (zeros outside).
public struct Conv1dKind: LayerKind {
    public static let typeName = "conv1d"
    public var inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int
    public init(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int) {
        (self.inputs, self.outputs, self.kernel) = (inputs, outputs, kernel)
        (self.stride, self.dilation, self.padding) = (stride, dilation, padding)
    }
    public init(fields f: some LayerFieldReader) throws {
        self.init(
            inputs: try f.int("inputs"), outputs: try f.int("outputs"), kernel: try f.int("kernel"), stride: try f.int("stride"),
            dilation: try f.int("dilation"), padding: try f.int("padding"))
    }
    public var fields: [(key: String, value: LayerField)] {
        [
            ("inputs", .int(inputs)), ("outputs", .int(outputs)), ("kernel", .int(kernel)), ("stride", .int(stride)),
            ("dilation", .int(dilation)), ("padding", .int(padding)),
        ]
    }
    public var summary: String { "conv1d \(inputs) -> \(outputs), kernel \(kernel), stride \(stride), dilation \(dilation), padding \(padding)" }
    var parameters: [ParameterShape] {
        [
            ParameterShape("weight", [outputs, kernel, inputs], layout: "[outputs, kernel, inputs]"),
            ParameterShape("bias", [outputs], layout: "[outputs]"),
        ]
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        let maxTime = ModelFile.Limits.inputTime
        try check.size("inputs", inputs)
        try check.size("outputs", outputs)
        for (f, v) in [("kernel", kernel), ("stride", stride), ("dilation", dilation)] { try check.size(f, v, max: maxTime) }
        try check.size("padding", padding, min: 0, max: maxTime)
        try check.channels(inputs, of: input)
        // Every factor is ≤ 2^28, so these fit in 64 bits.
        let span = dilation * (kernel - 1) + 1, padded = input.time + 2 * padding
        guard padded >= span else {
            throw check.invalid(
                "the input has \(input.time) time steps (\(padded) with padding \(padding) on each side), "
                    + "fewer than the dilated kernel span \(span) = dilation \(dilation) x (kernel \(kernel) - 1) + 1")
        }
        let time = (padded - span) / stride + 1
        let im2col = try check.product("im2col values per window", [time, kernel, inputs], max: ModelFile.Limits.totalActivationValues)
        return LayerShapes(output: Shape(time: time, channels: outputs), parameters: parameters, scratch: im2col)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        Conv1d(inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding, inputTime: input.time)
    }

    /// Transpose to `[B, C, T]`, Conv with weight `[O, I, K]` (initializer `<name>.OIK`), Transpose back.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let (O, I, K) = (outputs, inputs, kernel)
        let w = try g.tensor(p + "weight").values
        var oik = [Float](repeating: 0, count: O * I * K)  // ONNX/PyTorch [O, I, K] from our [O, K, I]
        for o in 0..<O { for k in 0..<K { for c in 0..<I { oik[(o * I + c) * K + k] = w[(o * K + k) * I + c] } } }
        let xt = g.node("Transpose", [x], attributes: [("perm", .ints([0, 2, 1]))], name: p + "to_bct")
        let y = g.node(
            "Conv", [xt, g.floats(p + "weight.OIK", [O, I, K], oik), g.floats(p + "bias", [O], try g.tensor(p + "bias").values)],
            attributes: [
                ("kernel_shape", .ints([K])), ("strides", .ints([stride])), ("dilations", .ints([dilation])), ("pads", .ints([padding, padding])),
            ], name: p + "conv")
        return g.node("Transpose", [y], attributes: [("perm", .ints([0, 2, 1]))], name: p + "to_btc")
    }

    public static func example(input: Shape) -> Conv1dKind {
        Conv1dKind(inputs: input.channels, outputs: 3, kernel: 3, stride: 2, dilation: 1, padding: 1)
    }
}

extension LayerSpec {
    /// 1D convolution over time. `weight [outputs, kernel, inputs]`, `bias [outputs]`.
    public static func conv1d(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int) -> LayerSpec {
        LayerSpec(Conv1dKind(inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding))
    }
}
