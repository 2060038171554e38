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
/// Two exact formulations; which one runs depends only on the geometry and the batch size:
///
/// **im2col** (any geometry; batches under `winogradMinimumBatch`):
/// - `cols[b·To + t, k·I + i] = x[b, t·S + k·D − P, i]`, so each (row, k) slice is a contiguous
///   copy of one input time step (or zeros), and when D = 1 a whole interior row is one
///   contiguous copy of K time steps; a pointwise convolution (K = 1, S = 1, P = 0) uses `x`;
/// - `y[R, O] = cols[R, KI] · W[O, KI]ᵀ + bias` (bias pre-filled, GEMM with β = 1);
/// - `dW[O, KI] += dyᵀ[O, R] · cols[R, KI]`; `dcols[R, KI] = dy[R, O] · W[O, KI]`, then col2im
///   scatter-adds `dcols` back onto `dx`.
///
/// **Winograd F(m, K)** (S = 1, D = 1, 2 ≤ K ≤ 7; see `Winograd`): the output time is cut into
/// tiles of m steps (NT = ⌈To/m⌉ per window, the last one partly unused), each computed from
/// the α = m + K − 1 input steps starting at `j·m − P`:
/// - `U[ξ, o, i] = Σ_k G[ξ, k]·W[o, k, i]` (once per forward), `V[tile, ξ, i] = Σ_q Bᵀ[ξ, q]·
///   x[b, j·m − P + q, i]`;
/// - α GEMMs `M[:, ξ, :] = V[:, ξ, :] · U[ξ]ᵀ` (rows = tiles, K = I), then
///   `y[b, j·m + p, o] = bias[o] + Σ_ξ Aᵀ[p, ξ]·M[tile, ξ, o]`;
/// - backward: `dM[tile, ξ, o] = Σ_p A[ξ, p]·dy[b, j·m + p, o]`, α GEMMs
///   `dU[ξ] = dM[:, ξ, :]ᵀ · V[:, ξ, :]` and `dV[:, ξ, :] = dM[:, ξ, :] · U[ξ]`, then
///   `dW[o, k, i] += Σ_ξ Gᵀ[k, ξ]·dU[ξ, o, i]` and `dx[b, j·m − P + q, i] += Σ_ξ B[q, ξ]·
///   dV[tile, ξ, i]`.
/// For the reference convnet (K = 5, To = 45: F(4, 5), α = 8, 12 tiles) that is 96 products per
/// window and channel pair instead of 225: 0.43 of im2col's multiply-adds, with float32
/// results within about 2× the rounding error of the direct sum. The weight transform costs
/// α·K·O·I multiply-adds per forward, which small batches (batch-1 inference) do not repay.
///
/// **Packed** (a frozen network, see `Network.freeze()`): the same two formulations with the
/// runtime's own kernels (`PackedGEMM`, C with AVX-512 / AVX2 variants) and the weights packed
/// once: Winograd on U[ξ] at every batch size when the geometry has a transform, else, for
/// batches under `winogradMinimumBatch` with D = 1, the weight multiplied straight from the
/// padded input without building im2col. One reference-convnet window: 15 µs instead of 57 µs.
///
/// Threads: with `BLAS.threads` = n > 1 and enough work, the batch is split into n contiguous
/// parts that run at once (`BLAS.parallel`), each with its own buffers and one-thread GEMMs:
/// one independent GEMM stream per core, with the transforms (im2col, col2im, Winograd's) in
/// parallel too. (OpenBLAS's own two-thread split of these shapes runs at 1.5-1.9x one thread;
/// two streams reach 1.9x.) A part accumulates its weight gradient (dU for Winograd) and
/// dbias into a private buffer (part 0 its im2col dW and dbias directly); they are added in
/// part order afterwards, so a fixed thread count gives the same bits every time. Within a
/// part, elements run in chunks of at most `chunk`, whose buffers stay within a few MB so that
/// they are still in cache when the next step reads them; backward rebuilds the columns (V)
/// of every chunk but the last, which forward left in the buffer. For the reference convnet
/// at batch 64 each part is one chunk. The chunking depends only on the shapes.
final class Conv1d: Layer {
    let inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int
    let inputTime: Int, outputTime: Int
    var kind: Conv1dKind {
        Conv1dKind(inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding)
    }
    var spec: LayerSpec { LayerSpec(kind) }
    var inputShape: Shape { Shape(time: inputTime, channels: inputs) }
    var outputShape: Shape { Shape(time: outputTime, channels: outputs) }
    var parameterShapes: [ParameterShape] { kind.parameters }
    var isPointwise: Bool { kernel == 1 && stride == 1 && padding == 0 }

    /// The Winograd transform for this geometry, nil when it has none (stride or dilation ≠ 1,
    /// K = 1 or K > 7). Tests may replace it to exercise other tile sizes.
    var winograd: Winograd?
    /// Batches of at least this many windows use Winograd (when `winograd` is set).
    var winogradMinimumBatch = 8
    /// Batch elements per chunk (see above); tests set it small to exercise chunking.
    var chunk: Int
    /// Most parts a batch is split into (the packed path: exactly, up to one per panel);
    /// nil: `BLAS.threads`. Tests set it to exercise splits.
    var maxParts: Int?
    /// Tiles per chunk of the frozen Winograd path; nil: V and M within about 1 MB. For tests.
    var packedChunk: Int?
    /// Smallest GEMM work (multiply-adds) worth a part of its own.
    static let minimumPartWork = 1 << 19

    private var weight: UnsafeMutablePointer<Float>!, bias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    private var dWeight: UnsafeMutablePointer<Float>!, dBias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    private var x: UnsafePointer<Float>?  // cached input [B, T, I]
    private var parts = 1  // of the last forward
    private var usedWinograd = false  // by the last forward
    private var workspaces: [Workspace] = []  // one per part
    private let y = Buffer()  // [B·To, O]
    private let dx = Buffer()  // [B, T, I]
    private let U = Buffer()  // [α, O, I], Winograd's transformed weights of the last forward
    private var frozen = false
    private var packed: Buffer?  // the weight as PackedGEMM's B [K·I, O], while frozen
    private var packedU: Buffer?  // Winograd's U[ξ] as PackedGEMM's B [I, O] for each ξ, while frozen
    private let padded = Buffer()  // [B, T + 2P, I]: the packed path's zero-padded inputs
    private var paddedBatch = 0  // windows whose padding rows in `padded` are zero

    /// What one part owns.
    final class Workspace {
        let cols = Buffer()  // im2col [n·To, KI], or Winograd's V [n·NT, α, I]
        let dcols = Buffer()  // im2col [n·To, KI], or Winograd's dV [n·NT, α, I]
        let products = Buffer()  // Winograd's M, then dM [n·NT, α, O]
        let gradients = Buffer()  // im2col: dW [O·KI] + dbias [O]; Winograd: dU [α·O·I] + dbias [O]
        var lastChunk = -1  // first batch element of the chunk whose columns (V) are in cols
    }

    init(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int, inputTime: Int) {
        self.inputs = inputs
        self.outputs = outputs
        self.kernel = kernel
        self.stride = stride
        self.dilation = dilation
        self.padding = padding
        self.inputTime = inputTime
        let To = (inputTime + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
        outputTime = To
        if stride == 1 && dilation == 1, let m = Winograd.tileSize(kernel: kernel, outputTime: To) {
            let w = Winograd(m: m, r: kernel)
            winograd = w
            // M, the largest buffer, within 2^19 floats (2 MB) per chunk.
            chunk = max(1, (1 << 19) / ((To + m - 1) / m * w.alpha * max(inputs, outputs)))
        } else {
            // The im2col matrix within 2^20 floats (4 MB) per chunk.
            chunk = max(1, (1 << 20) / (To * kernel * inputs))
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
        } else if dilation == 1 && packed == nil {
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
        let work = batch * outputTime * kernel * inputs * outputs
        return max(1, min(maxParts ?? BLAS.threads, batch, work / Conv1d.minimumPartWork))
    }

    /// Batch elements `lo ..< hi` of part `p` of `parts`.
    @inline(__always)
    func range(_ p: Int, of parts: Int, batch: Int) -> (lo: Int, hi: Int) { (p * batch / parts, (p + 1) * batch / parts) }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        self.x = x
        y.reserve(batch * outputTime * outputs)
        parts = partCount(batch: batch)
        while workspaces.count < parts { workspaces.append(Workspace()) }
        if frozen, let w = winograd {
            usedWinograd = false
            forwardPackedWinograd(x, batch: batch, w)
        } else if frozen && dilation == 1 && batch < winogradMinimumBatch {
            usedWinograd = false
            forwardPacked(x, batch: batch)
        } else if let w = winograd, batch >= winogradMinimumBatch {
            usedWinograd = true
            forwardWinograd(x, batch: batch, w)
        } else {
            usedWinograd = false
            forwardIm2col(x, batch: batch)
        }
        return UnsafePointer(y.pointer)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard let x else { preconditionFailure("Conv1d.backward before forward") }
        precondition(!frozen, "Conv1d.backward on a frozen layer (its forward kept nothing for backward)")
        guard batch > 0 else { return needInputGradient ? UnsafePointer(dx.pointer) : nil }
        if needInputGradient { dx.reserve(batch * inputTime * inputs) }
        if usedWinograd, let w = winograd {
            backwardWinograd(x, dy, batch: batch, needInputGradient: needInputGradient, w)
        } else {
            backwardIm2col(x, dy, batch: batch, needInputGradient: needInputGradient)
        }
        return needInputGradient ? UnsafePointer(dx.pointer) : nil
    }

    // MARK: Packed (frozen weights)

    /// `y = bias + conv(x)` with `PackedGEMM` for a frozen layer without a Winograd transform
    /// (batches under `winogradMinimumBatch`, D = 1): each window's zero-padded input
    /// `[T + 2P, I]` is read as its im2col matrix (row t
    /// starts at step t·S, row stride S·I, K·I values long, so consecutive rows overlap) times
    /// the weight packed as `[K·I, O]`. The output panels (16 channels each) are split over
    /// the threads; every output is computed by one thread with the same sum, so the thread
    /// count never changes a bit.
    private func forwardPacked(_ x: UnsafePointer<Float>, batch: Int) {
        let T = inputTime, I = inputs, KI = kernel * inputs, O = outputs, To = outputTime, P = padding
        prepareFrozen()
        let rows = T + 2 * P
        var a = x
        if P > 0 {
            if paddedBatch < batch {  // grow, with zero padding rows
                padded.reserve(batch * rows * I)
                padded.pointer.update(repeating: 0, count: batch * rows * I)
                paddedBatch = batch
            }
            for b in 0..<batch { (padded.pointer + (b * rows + P) * I).update(from: x + b * T * I, count: T * I) }
            a = UnsafePointer(padded.pointer)
        }
        let aStride = P > 0 ? rows * I : T * I
        let panels = PackedGEMM.panels(O), work = batch * To * KI * O
        let parts = max(1, min(panels, maxParts ?? PackedGEMM.threads(forWork: work)))
        let out = y.pointer, bias = UnsafePointer(self.bias!), pk = UnsafePointer(packed!.pointer), a0 = a
        BLAS.parallel(parts) { p in
            let range = (p * panels / parts)..<((p + 1) * panels / parts)
            for b in 0..<batch {
                PackedGEMM.multiply(
                    m: To, n: O, k: KI, a: a0 + b * aStride, lda: stride * I, packed: pk, bias: bias, c: out + b * To * O,
                    ldc: O, panels: range)
            }
        }
    }

    /// A frozen layer with a Winograd transform, any batch: the transformed weights packed once
    /// (`U[ξ]` as B `[I, O]` for each ξ), then for every tile its input transform
    /// `V[tile, ξ, :]`, for each ξ `M[:, ξ, :] = V[:, ξ, :] · U[ξ]ᵀ` (`PackedGEMM`, rows =
    /// tiles, row stride α·I) and the output transform, all with `CKernels`' kernels. The tiles
    /// (of all windows) are split over the threads, each part doing all three steps for its own,
    /// in chunks whose V and M stay within about 1 MB: no barrier between the steps, and every
    /// output computed by one part with the same sums, whatever the split or the batch.
    /// Winograd's U[ξ] packed as PackedGEMM's B `[I, O]` for each ξ, `PackedGEMM.packedCount(n: O, k: I)` apart.
    private func packWinograd(_ w: Winograd) -> Buffer {
        let I = inputs, O = outputs, per = PackedGEMM.packedCount(n: O, k: I)
        _ = transformWeights(w, parts: 1)
        let b = Buffer(capacity: w.alpha * per)
        for xi in 0..<w.alpha { PackedGEMM.pack(transposed: U.pointer + xi * O * I, n: O, k: I, into: b.pointer + xi * per) }
        return b
    }

    private func forwardPackedWinograd(_ x: UnsafePointer<Float>, batch: Int, _ w: Winograd) {
        let T = inputTime, I = inputs, O = outputs, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w)
        let per = PackedGEMM.packedCount(n: O, k: I)  // a multiple of 16: each U[ξ] stays 64-byte aligned
        prepareFrozen()
        let total = batch * NT, chunk = packedChunk ?? max(1, (1 << 17) / (a * max(I, O)))
        let parts = max(1, min(total, maxParts ?? PackedGEMM.threads(forWork: total * a * I * O)))
        while workspaces.count < parts { workspaces.append(Workspace()) }
        let pu = UnsafePointer(packedU!.pointer), out = y.pointer, bias = UnsafePointer(self.bias!), P = padding
        w.BT.dense.withUnsafeBufferPointer { bt in
            w.AT.dense.withUnsafeBufferPointer { at in
                BLAS.parallel(parts) { p in
                    let g0 = p * total / parts, g1 = (p + 1) * total / parts, ws = workspaces[p]
                    guard g0 < g1 else { return }
                    ws.cols.reserve(min(chunk, g1 - g0) * a * I)
                    ws.products.reserve(min(chunk, g1 - g0) * a * O)
                    let V = ws.cols.pointer, M = ws.products.pointer
                    for c0 in Swift.stride(from: g0, to: g1, by: chunk) {
                        let c1 = min(c0 + chunk, g1)
                        // V[g, ξ, :] = Σ_q Bᵀ[ξ, q]·x[b, j·m − P + q, :], steps outside [0, T) being zeros.
                        for g in c0..<c1 {
                            let b = g / NT, s0 = (g % NT) * m - P, qlo = max(0, -s0), qhi = min(a, T - s0)
                            let v = V + (g - c0) * a * I
                            if qlo >= qhi {
                                v.update(repeating: 0, count: a * I)
                            } else {
                                PackedGEMM.transform(
                                    rows: a, cols: qhi - qlo, m: bt.baseAddress! + qlo, ldm: a, src: x + (b * T + s0 + qlo) * I,
                                    srcStride: I, start: nil, dst: v, dstStride: I, channels: I)
                            }
                        }
                        for xi in 0..<a {
                            PackedGEMM.multiply(
                                m: c1 - c0, n: O, k: I, a: V + xi * I, lda: a * I, packed: pu + xi * per, bias: nil, c: M + xi * O,
                                ldc: a * O)
                        }
                        // y[b, j·m + p, :] = bias + Σ_ξ Aᵀ[p, ξ]·M[g, ξ, :]
                        for g in c0..<c1 {
                            let t0 = (g % NT) * m
                            PackedGEMM.transform(
                                rows: min(m, To - t0), cols: a, m: at.baseAddress!, ldm: a, src: M + (g - c0) * a * O, srcStride: O,
                                start: bias, dst: out + ((g / NT) * To + t0) * O, dstStride: O, channels: O)
                        }
                    }
                }
            }
        }
    }

    // MARK: im2col

    private func forwardIm2col(_ x: UnsafePointer<Float>, batch: Int) {
        let KI = kernel * inputs, O = outputs, To = outputTime
        // One window (batch-1 inference): the GEMM runs on rows padded with zero rows to a
        // multiple of 16, whose outputs land past the window in `y` and are never read.
        // OpenBLAS's two-thread split runs the reference convnet's 45 rows at 51 µs, 48 at 36.
        let paddedRows = batch == 1 && !isPointwise ? (To + 15) / 16 * 16 : To
        if paddedRows > To {
            y.reserve(paddedRows * O)
            workspaces[0].cols.reserve(paddedRows * KI)
            (workspaces[0].cols.pointer + To * KI).update(repeating: 0, count: (paddedRows - To) * KI)
        }
        let parts = self.parts, out = y.pointer, bias = self.bias!, weight = self.weight!
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), w = workspaces[p]
            w.cols.reserve(min(hi - lo, chunk) * To * KI)
            for b0 in Swift.stride(from: lo, to: hi, by: chunk) {
                let n = min(chunk, hi - b0), R = n == 1 ? paddedRows : n * To
                let c = columns(x, from: b0, count: n, into: w.cols)
                let o = out + b0 * To * O
                for r in 0..<R { (o + r * O).update(from: bias, count: O) }
                BLAS.gemm(transposeB: true, m: R, n: O, k: KI, a: c, lda: KI, b: weight, ldb: KI, beta: 1, c: o, ldc: O)
            }
            w.lastChunk = hi > lo ? lo + (hi - lo - 1) / chunk * chunk : -1
        }
    }

    private func backwardIm2col(_ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) {
        let T = inputTime, I = inputs, KI = kernel * inputs, O = outputs, To = outputTime
        let parts = self.parts, dxp = dx.pointer, weight = self.weight!
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), w = workspaces[p]
            guard hi > lo else { return }
            if needInputGradient && !isPointwise { w.dcols.reserve(min(hi - lo, chunk) * To * KI) }
            // Part 0 accumulates into the network's gradients, the others into their own.
            let (dW, db) = gradientTargets(p, w, count: O * KI)
            // Chunks in reverse order: the last one's columns are still in the buffer from forward.
            for b0 in Swift.stride(from: lo + (hi - lo - 1) / chunk * chunk, through: lo, by: -chunk) {
                let n = min(chunk, hi - b0), R = n * To
                let c = b0 == w.lastChunk ? columnsOfLastForward(x, from: b0, in: w.cols) : columns(x, from: b0, count: n, into: w.cols)
                w.lastChunk = -1
                let g = dy + b0 * To * O
                // dW[O, KI] += dyᵀ[O, R] · cols[R, KI]
                BLAS.gemm(transposeA: true, m: O, n: KI, k: R, a: g, lda: O, b: c, ldb: KI, beta: 1, c: dW, ldc: KI)
                addRows(g, rows: R, into: db)
                guard needInputGradient else { continue }
                let d = dxp + b0 * T * I
                if isPointwise {
                    // dx[R, I] = dy[R, O] · W[O, I]
                    BLAS.gemm(m: R, n: I, k: O, a: g, lda: O, b: weight, ldb: I, c: d, ldc: I)
                } else {
                    // dcols[R, KI] = dy[R, O] · W[O, KI], then scatter-add onto dx
                    BLAS.gemm(m: R, n: KI, k: O, a: g, lda: O, b: weight, ldb: KI, c: w.dcols.pointer, ldc: KI)
                    col2im(w.dcols.pointer, d, count: n)
                }
            }
        }
        // The other parts' gradients, added in part order.
        let n = O * KI + O, dst = dWeight!
        for p in 1..<parts {
            let src = workspaces[p].gradients.pointer
            for i in 0..<n { dst[i] += src[i] }
        }
    }

    /// Where part `p` accumulates its weight gradient (`count` values) and dbias: the
    /// network's gradients for part 0 of im2col, else the part's own zeroed buffer.
    private func gradientTargets(_ p: Int, _ w: Workspace, count: Int, allPrivate all: Bool = false)
        -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
    {
        if p == 0 && !all { return (dWeight, dBias) }
        w.gradients.reserve(count + outputs)
        w.gradients.pointer.update(repeating: 0, count: count + outputs)
        return (w.gradients.pointer, p == 0 ? dBias : w.gradients.pointer + count)
    }

    /// `db[o] += Σ_r g[r, o]` over `rows` rows of `outputs` values.
    @inline(__always)
    private func addRows(_ g: UnsafePointer<Float>, rows: Int, into db: UnsafeMutablePointer<Float>) {
        let O = outputs
        for r in 0..<rows {
            let row = g + r * O
            for o in 0..<O { db[o] += row[o] }
        }
    }

    // MARK: Winograd

    /// Tiles per window.
    private func tiles(_ w: Winograd) -> Int { (outputTime + w.m - 1) / w.m }

    private func forwardWinograd(_ x: UnsafePointer<Float>, batch: Int, _ w: Winograd) {
        let I = inputs, O = outputs, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w)
        let parts = self.parts, out = y.pointer, bias = self.bias!
        let u = transformWeights(w, parts: parts)
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), ws = workspaces[p]
            let n0 = min(hi - lo, chunk)
            ws.cols.reserve(n0 * NT * a * I)
            ws.products.reserve(n0 * NT * a * O)
            let V = ws.cols.pointer, M = ws.products.pointer
            for b0 in Swift.stride(from: lo, to: hi, by: chunk) {
                let n = min(chunk, hi - b0)
                transformInput(x, from: b0, count: n, into: V, w)
                // M[:, ξ, :] = V[:, ξ, :] · U[ξ]ᵀ
                for xi in 0..<a {
                    BLAS.gemm(
                        transposeB: true, m: n * NT, n: O, k: I, a: V + xi * I, lda: a * I, b: u + xi * O * I, ldb: I,
                        c: M + xi * O, ldc: a * O)
                }
                // y[b, j·m + p, :] = bias + Σ_ξ Aᵀ[p, ξ]·M[tile, ξ, :]
                for b in 0..<n {
                    for j in 0..<NT {
                        let t0 = j * m, tile = b * NT + j
                        Winograd.apply(
                            w.AT, rows: 0..<min(m, To - t0), columns: 0..<a, src: M + tile * a * O, srcStride: O,
                            dst: out + ((b0 + b) * To + t0) * O, dstStride: O, channels: O, mode: .start(bias))
                    }
                }
            }
            ws.lastChunk = hi > lo ? lo + (hi - lo - 1) / chunk * chunk : -1
        }
    }

    /// `U[ξ, o, :] = Σ_k G[ξ, k]·W[o, k, :]` into `U` (`[α, O, I]`), split over o into `parts`.
    private func transformWeights(_ w: Winograd, parts: Int) -> UnsafeMutablePointer<Float> {
        let I = inputs, O = outputs, K = kernel, a = w.alpha, weight = self.weight!
        U.reserve(a * O * I)
        let u = U.pointer
        BLAS.parallel(parts) { p in
            for o in range(p, of: parts, batch: O).lo..<range(p, of: parts, batch: O).hi {
                Winograd.apply(
                    w.G, rows: 0..<a, columns: 0..<K, src: weight + o * K * I, srcStride: I, dst: u + o * I, dstStride: O * I,
                    channels: I, mode: .assign)
            }
        }
        return u
    }

    /// `V[tile, ξ, :] = Σ_q Bᵀ[ξ, q]·x[b, j·m − P + q, :]` for the tiles of batch elements
    /// `b0 ..< b0 + count` (tile = (b − b0)·NT + j), input steps outside `[0, T)` being zeros.
    private func transformInput(_ x: UnsafePointer<Float>, from b0: Int, count: Int, into V: UnsafeMutablePointer<Float>, _ w: Winograd) {
        let T = inputTime, I = inputs, a = w.alpha, m = w.m, NT = tiles(w)
        for b in 0..<count {
            let xb = x + (b0 + b) * T * I
            for j in 0..<NT {
                let s0 = j * m - padding, qlo = max(0, -s0), qhi = min(a, T - s0)
                let dst = V + (b * NT + j) * a * I
                if qlo >= qhi {
                    dst.update(repeating: 0, count: a * I)
                } else {
                    Winograd.apply(
                        w.BT, rows: 0..<a, columns: qlo..<qhi, src: xb + (s0 + qlo) * I, srcStride: I, dst: dst, dstStride: I,
                        channels: I, mode: .assign)
                }
            }
        }
    }

    private func backwardWinograd(
        _ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool, _ w: Winograd
    ) {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w)
        let parts = self.parts, dxp = dx.pointer, u = U.pointer
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), ws = workspaces[p]
            guard hi > lo else { return }
            let n0 = min(hi - lo, chunk)
            if needInputGradient { ws.dcols.reserve(n0 * NT * a * I) }
            let (dU, db) = gradientTargets(p, ws, count: a * O * I, allPrivate: true)
            let V = ws.cols.pointer, dM = ws.products.pointer, dV = ws.dcols.pointer
            var first = true
            // Chunks in reverse order: the last one's V is still in the buffer from forward.
            for b0 in Swift.stride(from: lo + (hi - lo - 1) / chunk * chunk, through: lo, by: -chunk) {
                let n = min(chunk, hi - b0)
                if b0 != ws.lastChunk { transformInput(x, from: b0, count: n, into: V, w) }
                ws.lastChunk = -1
                // dM[tile, ξ, :] = Σ_p A[ξ, p]·dy[b, j·m + p, :]
                for b in 0..<n {
                    for j in 0..<NT {
                        let t0 = j * m, tile = b * NT + j
                        Winograd.apply(
                            w.A, rows: 0..<a, columns: 0..<min(m, To - t0), src: dy + ((b0 + b) * To + t0) * O, srcStride: O,
                            dst: dM + tile * a * O, dstStride: O, channels: O, mode: .assign)
                    }
                }
                addRows(dy + b0 * To * O, rows: n * To, into: db)
                // dU[ξ] (+)= dM[:, ξ, :]ᵀ · V[:, ξ, :]
                for xi in 0..<a {
                    BLAS.gemm(
                        transposeA: true, m: O, n: I, k: n * NT, a: dM + xi * O, lda: a * O, b: V + xi * I, ldb: a * I,
                        beta: first ? 0 : 1, c: dU + xi * O * I, ldc: I)
                }
                first = false
                guard needInputGradient else { continue }
                // dV[:, ξ, :] = dM[:, ξ, :] · U[ξ], then dx[b, j·m − P + q, :] += Σ_ξ B[q, ξ]·dV[tile, ξ, :]
                for xi in 0..<a {
                    BLAS.gemm(
                        m: n * NT, n: I, k: O, a: dM + xi * O, lda: a * O, b: u + xi * O * I, ldb: I, c: dV + xi * I, ldc: a * I)
                }
                for b in 0..<n {
                    let dxb = dxp + (b0 + b) * T * I
                    dxb.update(repeating: 0, count: T * I)
                    for j in 0..<NT {
                        let s0 = j * m - padding, qlo = max(0, -s0), qhi = min(a, T - s0)
                        guard qlo < qhi else { continue }
                        Winograd.apply(
                            w.B, rows: qlo..<qhi, columns: 0..<a, src: dV + (b * NT + j) * a * I, srcStride: I,
                            dst: dxb + (s0 + qlo) * I, dstStride: I, channels: I, mode: .accumulate)
                    }
                }
            }
        }
        // dU summed over the parts in part order, then dW[o, k, :] += Σ_ξ Gᵀ[k, ξ]·dU[ξ, o, :];
        // split over o.
        let dU0 = workspaces[0].gradients.pointer, dW = dWeight!
        BLAS.parallel(parts) { p in
            let (olo, ohi) = range(p, of: parts, batch: O)
            guard olo < ohi else { return }
            for q in 1..<parts {
                let src = workspaces[q].gradients.pointer
                for xi in 0..<a {
                    let d = dU0 + (xi * O + olo) * I, s = src + (xi * O + olo) * I
                    for i in 0..<((ohi - olo) * I) { d[i] += s[i] }
                }
            }
            for o in olo..<ohi {
                Winograd.apply(
                    w.GT, rows: 0..<K, columns: 0..<a, src: dU0 + o * I, srcStride: O * I, dst: dW + o * K * I, dstStride: I,
                    channels: I, mode: .accumulate)
            }
        }
        let db = dBias!
        for q in 1..<parts {
            let src = workspaces[q].gradients.pointer + a * O * I
            for o in 0..<O { db[o] += src[o] }
        }
    }

    /// The im2col matrix `[count·To, KI]` of batch elements `from ..< from + count`: `x` itself
    /// for a pointwise convolution, else written into `buffer`.
    private func columns(_ x: UnsafePointer<Float>, from b0: Int, count: Int, into buffer: Buffer) -> UnsafePointer<Float> {
        let xb = x + b0 * inputTime * inputs
        if isPointwise { return xb }
        im2col(xb, buffer.pointer, count: count)
        return UnsafePointer(buffer.pointer)
    }

    private func columnsOfLastForward(_ x: UnsafePointer<Float>, from b0: Int, in buffer: Buffer) -> UnsafePointer<Float> {
        isPointwise ? x + b0 * inputTime * inputs : UnsafePointer(buffer.pointer)
    }

    /// `cols[b·To + t, k·I + i] = x[b, t·S + k·D − P, i]` for `b < count`, zeros outside `[0, T)`.
    func im2col(_ x: UnsafePointer<Float>, _ cols: UnsafeMutablePointer<Float>, count: Int) {
        let T = inputTime, I = inputs, K = kernel, S = stride, D = dilation, P = padding, To = outputTime
        let KI = K * I
        for b in 0..<count {
            let xb = x + b * T * I
            for t in 0..<To {
                let row = cols + (b * To + t) * KI
                let start = t * S - P  // input time of tap 0
                if D == 1 && start >= 0 && start + K <= T {
                    row.update(from: xb + start * I, count: KI)  // K consecutive time steps
                    continue
                }
                for k in 0..<K {
                    let src = start + k * D
                    if src >= 0 && src < T {
                        (row + k * I).update(from: xb + src * I, count: I)
                    } else {
                        (row + k * I).update(repeating: 0, count: I)
                    }
                }
            }
        }
    }

    /// The adjoint of `im2col`: `dx[b, t·S + k·D − P, i] = Σ dcols[b·To + t, k·I + i]` over all
    /// (t, k) in range, for `b < count`, summed in a fixed (t, k) order.
    func col2im(_ dcols: UnsafePointer<Float>, _ dx: UnsafeMutablePointer<Float>, count: Int) {
        let T = inputTime, I = inputs, K = kernel, S = stride, D = dilation, P = padding, To = outputTime
        let KI = K * I
        for b in 0..<count {
            let dxb = dx + b * T * I
            dxb.update(repeating: 0, count: T * I)
            for t in 0..<To {
                let row = dcols + (b * To + t) * KI
                let start = t * S - P
                if D == 1 && start >= 0 && start + K <= T {
                    let dst = dxb + start * I
                    for j in 0..<KI { dst[j] += row[j] }
                    continue
                }
                for k in 0..<K {
                    let src = start + k * D
                    guard src >= 0 && src < T else { continue }
                    let dst = dxb + src * I, part = row + k * I
                    for i in 0..<I { dst[i] += part[i] }
                }
            }
        }
    }

    // MARK: Direct-loop reference (tests only)

    /// `y [B, To, O]` by the defining sum, accumulated in Double.
    func referenceForward(_ x: UnsafePointer<Float>, batch: Int) -> [Float] {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime
        var out = [Float](repeating: 0, count: batch * To * O)
        for b in 0..<batch {
            for t in 0..<To {
                for o in 0..<O {
                    var s = Double(bias[o])
                    for k in 0..<K {
                        let src = t * stride + k * dilation - padding
                        guard src >= 0 && src < T else { continue }
                        for i in 0..<I { s += Double(weight[(o * K + k) * I + i]) * Double(x[(b * T + src) * I + i]) }
                    }
                    out[(b * To + t) * O + o] = Float(s)
                }
            }
        }
        return out
    }

    /// `(dW [O, K, I], dbias [O], dx [B, T, I])` for `dy [B, To, O]` by the defining sums,
    /// accumulated in Double (not accumulated into the network's gradients).
    func referenceBackward(_ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int)
        -> (dWeight: [Float], dBias: [Float], dx: [Float])
    {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime
        var dW = [Double](repeating: 0, count: O * K * I), db = [Double](repeating: 0, count: O)
        var dX = [Double](repeating: 0, count: batch * T * I)
        for b in 0..<batch {
            for t in 0..<To {
                for o in 0..<O {
                    let g = Double(dy[(b * To + t) * O + o])
                    db[o] += g
                    for k in 0..<K {
                        let src = t * stride + k * dilation - padding
                        guard src >= 0 && src < T else { continue }
                        for i in 0..<I {
                            dW[(o * K + k) * I + i] += g * Double(x[(b * T + src) * I + i])
                            dX[(b * T + src) * I + i] += g * Double(weight[(o * K + k) * I + i])
                        }
                    }
                }
            }
        }
        return (dW.map { Float($0) }, db.map { Float($0) }, dX.map { Float($0) })
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
    public func exportONNX(_ g: ONNXGraph, input x: String, prefix p: String) throws -> String {
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
