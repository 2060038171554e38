import PoseCore

/// Spatio-temporal graph convolution (ST-GCN's unit, Yan et al. 2018): a temporal convolution
/// over each joint's features with weights shared across joints, per partition of the graph,
/// then a sum over each joint's neighbours weighted by the partition's adjacency matrix.
///
/// Shapes: B = batch, T = time, J = joints, I = inputs per joint, O = outputs per joint,
/// K = kernel (odd), P = partitions, h = (K − 1)/2; rows R = B·T·J (one per joint and time
/// step), KI = K·I, PO = P·O. Activations are joint-major: input channel `j·I + c` is joint
/// j's feature c, output channel `j·O + o` joint j's output o.
/// `weight [P, O, K, I]`, `bias [O]`, both U(±1/√(K·I)) (PyTorch's Conv2d default over I
/// input channels and a (K, 1) kernel). The adjacency `A [P, J, J]` is part of the layer's
/// description (the header), not a parameter: it is never trained.
///
/// Forward: `y[b, t, j, o] = bias[o] + Σ_p Σ_i A[p, j, i] · Σ_k Σ_c x[b, t + k − h, i, c] · W[p, o, k, c]`
/// (x = 0 outside `[0, T)`), computed as
/// - im2col over time, per joint: `cols[(b, t, i), k·I + c] = x[b, t + k − h, i, c]` (x itself when K = 1);
/// - one GEMM for every partition: `Z[R, PO] = cols[R, KI] · W[PO, KI]ᵀ`;
/// - the aggregation over A's nonzeros only (a skeleton's graph is sparse):
///   `y[b, t, j, :] = bias + Σ_{(p, i): A[p, j, i] ≠ 0} A[p, j, i] · Z[(b, t, i), p·O ..< (p + 1)·O]`.
/// Backward: `dZ[(b, t, i), p, :] = Σ_j A[p, j, i] · dy[b, t, j, :]`, `dW[PO, KI] += dZᵀ · cols`,
/// `dbias[o] += Σ_r dy[r, o]`, `dcols = dZ · W`, then col2im scatter-adds `dcols` onto `dx`.
/// A spatial layer whose inputs are fewer than its outputs (K = 1, I < O: ST-GCN's first layer
/// on a few coordinates per joint) aggregates first, on the narrower rows (`aggregatesFirst`):
/// `X'[(b, t, j), p·I + c] = Σ_i A[p, j, i] · x[b, t, i, c]`, then
/// `y = bias + Σ_p X'[:, p·I ..< (p + 1)·I] · W[p]ᵀ` (P GEMMs into y), so that the `[R, P·O]`
/// products are never written; backward `dW[p] += dyᵀ · X'_p`, `dX'_p = dy · W[p]` and
/// `dx[b, t, i, c] = Σ_j A[p, j, i] · dX'[(b, t, j), p·I + c]`.
/// With P = 1 and A = identity (ST-GCN's temporal layer) Z is y without the bias: the GEMM
/// writes y directly and dZ is dy. When that layer's kernel has a Winograd transform (2 ≤ K ≤ 7)
/// it is `Conv1d`'s Winograd formulation instead, with one lane per joint (`temporal`, bound to
/// the same weight and bias, whose layouts `[1, O, K, I]` and `[O]` are conv1d's): for a
/// training batch of at least 8 and for a frozen layer, the same batches as `Conv1d` (for K = 5,
/// 0.43 of im2col's multiply-adds; the results within about 2x im2col's rounding error).
///
/// Threads: as `Conv1d`'s im2col, the batch is split into up to `BLAS.threads` contiguous parts
/// (`BLAS.parallel`), each with its own buffers, one-thread GEMMs and private dW/dbias (part 0
/// the network's), added in part order, so a fixed thread count gives the same bits. Within a
/// part, batch elements run in chunks of at most `chunk` (Z within about 2 MB); backward
/// rebuilds each chunk's columns.
///
/// Frozen (`Network.freeze()`, a loaded model): the weight packed once as `[K·I, P·O]` for the
/// runtime's own kernels (`PackedGEMM`) instead of OpenBLAS, whole windows per part, or for
/// fewer windows than parts the output panels of Z (then the time steps of the aggregation);
/// every output has the same sums whatever the split, so the thread count never changes a bit.
final class GraphConv: PooledInputGradient {
    let kind: GraphConvKind
    let time: Int
    let joints: Int, inputs: Int, outputs: Int, kernel: Int, partitions: Int
    var spec: LayerSpec { LayerSpec(kind) }
    var inputShape: Shape { Shape(time: time, channels: joints * inputs) }
    var outputShape: Shape { Shape(time: time, channels: joints * outputs) }
    var parameterShapes: [ParameterShape] { kind.parameters }

    /// A nonzero `A[p, j, i]`: where joint j's outputs start in a time step's y rows (`j·O`),
    /// where joint i's partition-p block starts in its Z rows (`i·PO + p·O`), and the value.
    struct Edge {
        let target: Int, source: Int, weight: Float
    }
    /// A's nonzeros, by target joint (then partition, then source joint).
    let edges: [Edge]
    /// The same nonzeros for aggregating inputs: `target` = `j·P·I + p·I` (joint j's partition-p
    /// block in X' rows), `source` = `i·I` (joint i in x rows).
    let inputEdges: [Edge]
    /// K = 1, not the identity, and fewer inputs than outputs: aggregate x before the GEMM.
    let aggregatesFirst: Bool
    /// P = 1 and A = identity (a per-joint temporal convolution): Z is y without the bias, so
    /// the GEMM writes y directly (bias pre-filled) and dZ is dy.
    let isIdentity: Bool
    /// The per-joint temporal convolution on Conv1d's Winograd formulations (P = 1, identity,
    /// a kernel with a transform); nil otherwise.
    let temporal: Conv1d?
    /// The last forward ran on `temporal`.
    var usedTemporal = false
    /// Batch elements per chunk; tests set it small to exercise chunking.
    var chunk: Int
    /// Parts a batch is split into (at most one per element); nil: up to `BLAS.threads`, each
    /// at least `minimumPartWork` multiply-adds of forward GEMM. Tests set it to exercise splits.
    var maxParts: Int?
    static let minimumPartWork = 1 << 19

    var weight: UnsafeMutablePointer<Float>!, bias: UnsafeMutablePointer<Float>!  // [P·O, K·I], [O]
    var dWeight: UnsafeMutablePointer<Float>!, dBias: UnsafeMutablePointer<Float>!
    var x: UnsafePointer<Float>?  // cached input [B, T, J·I]
    var parts = 1  // of the last forward
    var workspaces: [Workspace] = []  // one per part
    let y = Buffer()  // [B, T, J·O]
    /// [B, T, J·I]; the temporal convolution, when it runs backward, writes it too.
    var dx = Buffer() { didSet { temporal?.dx = dx } }
    var frozen = false
    var packed: Buffer?  // the weight as PackedGEMM's B [K·I, P·O], while frozen

    /// What one part owns.
    final class Workspace {
        let cols = Buffer()  // [n·T·J, KI]
        let z = Buffer()  // Z, then dZ [n·T·J, PO]
        let dcols = Buffer()  // [n·T·J, KI]
        let gradients = Buffer()  // dW [PO·KI] + dbias [O], parts after the first
    }

    init(_ kind: GraphConvKind, time: Int) {
        self.kind = kind
        self.time = time
        (joints, inputs, outputs, kernel, partitions) = (kind.joints, kind.inputs, kind.outputs, kind.kernel, kind.partitions)
        let J = kind.joints, O = kind.outputs, PO = kind.partitions * kind.outputs
        var edges: [Edge] = [], inputEdges: [Edge] = []
        let I = kind.inputs, PI = kind.partitions * kind.inputs
        for j in 0..<J {
            for p in 0..<kind.partitions {
                for i in 0..<J where kind.adjacency[(p * J + j) * J + i] != 0 {
                    let a = kind.adjacency[(p * J + j) * J + i]
                    edges.append(Edge(target: j * O, source: i * PO + p * O, weight: a))
                    inputEdges.append(Edge(target: j * PI + p * I, source: i * I, weight: a))
                }
            }
        }
        self.edges = edges
        self.inputEdges = inputEdges
        isIdentity = kind.partitions == 1 && edges.count == J && edges.allSatisfy { $0.target == $0.source && $0.weight == 1 }
        aggregatesFirst = kind.kernel == 1 && !isIdentity && kind.inputs < kind.outputs
        chunk = max(1, (1 << 19) / (time * J * max(PO, kind.kernel * kind.inputs)))
        let conv =
            isIdentity && kind.kernel > 1
            ? Conv1d(
                inputs: kind.inputs, outputs: O, kernel: kind.kernel, stride: 1, dilation: 1, padding: (kind.kernel - 1) / 2, inputTime: time,
                lanes: J) : nil
        temporal = conv?.winograd == nil ? nil : conv
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        let n = partitions * outputs * kernel * inputs
        (weight, bias) = (parameters, parameters + n)
        (dWeight, dBias) = (gradients, gradients + n)
        temporal?.bind(parameters: parameters, gradients: gradients)
    }

    func initialize(using g: inout SeededGenerator) {
        let bound = 1 / Float(kernel * inputs).squareRoot()
        for i in 0..<(partitions * outputs * kernel * inputs) { weight[i] = g.nextSymmetric(bound) }
        for i in 0..<outputs { bias[i] = g.nextSymmetric(bound) }
    }

    func setFrozen(_ frozen: Bool) {
        self.frozen = frozen
        packed = nil  // packed again at the next forward, from the current weights
        temporal?.setFrozen(frozen)
    }

    /// With a Winograd temporal layer, that layer holds the frozen form (it serves every frozen batch).
    func prepareFrozen() {
        if let temporal { return temporal.prepareFrozen() }
        if frozen && packed == nil { packed = PackedGEMM.packed(transposed: weight, n: partitions * outputs, k: kernel * inputs) }
    }

    func shareFrozen(from other: Layer) {
        let other = other as! GraphConv
        if let temporal, let theirs = other.temporal { return temporal.shareFrozen(from: theirs) }
        if frozen { packed = other.packed }
    }

    func partCount(batch: Int) -> Int {
        if let maxParts { return max(1, min(maxParts, batch)) }
        let work = batch * time * joints * kernel * inputs * partitions * outputs
        return max(1, min(BLAS.threads, batch, work / GraphConv.minimumPartWork))
    }

    /// The chunks `(first, count)` of part `p` of `parts`.
    func chunks(_ p: Int, of parts: Int, batch: Int) -> [(Int, Int)] {
        let lo = p * batch / parts, hi = (p + 1) * batch / parts
        return Swift.stride(from: lo, to: hi, by: chunk).map { ($0, min(chunk, hi - $0)) }
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        self.x = x
        if let temporal, temporal.formulation(batch: batch) != .im2col {
            usedTemporal = true
            temporal.maxParts = maxParts
            return temporal.forward(x, batch: batch, mode: &mode)
        }
        usedTemporal = false
        let TJ = time * joints, KI = kernel * inputs, PO = partitions * outputs, O = outputs
        y.reserve(batch * TJ * O)
        parts = partCount(batch: batch)
        while workspaces.count < parts { workspaces.append(Workspace()) }
        if frozen {
            forwardFrozen(x, batch: batch)
            return UnsafePointer(y.pointer)
        }
        if aggregatesFirst {
            forwardAggregatingFirst(x, batch: batch)
            return UnsafePointer(y.pointer)
        }
        let weight = self.weight!, bias = self.bias!, beta: Float = isIdentity ? 1 : 0
        forwardParts(x, batch: batch, parts: parts) { c, rows, z in
            if isIdentity { for r in 0..<rows { (z + r * O).update(from: bias, count: O) } }
            BLAS.gemm(transposeB: true, m: rows, n: PO, k: KI, a: c, lda: KI, b: weight, ldb: KI, beta: beta, c: z, ldc: PO)
        }
        return UnsafePointer(y.pointer)
    }

    /// Runs the batch in `parts` parts of whole windows, in chunks: `product(cols, rows, z)`
    /// writes the chunk's `Z [rows, P·O]` (y itself, bias included, for the identity graph),
    /// which is then summed over the adjacency into y.
    func forwardParts(
        _ x: UnsafePointer<Float>, batch: Int, parts: Int,
        _ product: (UnsafePointer<Float>, Int, UnsafeMutablePointer<Float>) -> Void
    ) {
        let TJ = time * joints, KI = kernel * inputs, PO = partitions * outputs, O = outputs
        let out = y.pointer, bias = UnsafePointer(self.bias!)
        BLAS.parallel(parts) { p in
            let w = workspaces[p]
            w.cols.reserve(chunk * TJ * KI)
            if !isIdentity { w.z.reserve(chunk * TJ * PO) }
            for (b0, n) in chunks(p, of: parts, batch: batch) {
                let c = columns(x, from: b0, count: n, into: w.cols), o = out + b0 * TJ * O
                product(c, n * TJ, isIdentity ? o : w.z.pointer)
                if !isIdentity { aggregate(w.z.pointer, into: o, steps: n * time, bias: bias) }
            }
        }
    }

    /// The frozen forward: `Z = cols · W` (P·O wide; y itself, bias included, for the identity)
    /// on `PackedGEMM`, then the aggregation over A's nonzeros.
    func forwardFrozen(_ x: UnsafePointer<Float>, batch: Int) {
        let TJ = time * joints, KI = kernel * inputs, PO = partitions * outputs, O = outputs
        prepareFrozen()
        let out = y.pointer, bias = UnsafePointer(self.bias!), pk = UnsafePointer(packed!.pointer)
        let work = batch * TJ * KI * PO, parts = max(1, maxParts ?? PackedGEMM.threads(forWork: work))
        while workspaces.count < min(parts, batch) { workspaces.append(Workspace()) }
        if batch >= parts {
            forwardParts(x, batch: batch, parts: parts) { c, rows, z in
                PackedGEMM.multiply(m: rows, n: PO, k: KI, a: c, lda: KI, packed: pk, bias: isIdentity ? bias : nil, c: z, ldc: PO)
            }
            return
        }
        // Fewer windows than parts (a single window): the columns and Z once, Z's panels split,
        // then the aggregation's time steps.
        let w = workspaces[0]
        w.cols.reserve(batch * TJ * KI)
        if !isIdentity { w.z.reserve(batch * TJ * PO) }
        let c = columns(x, from: 0, count: batch, into: w.cols), z = isIdentity ? out : w.z.pointer
        let panels = PackedGEMM.panels(isIdentity ? O : PO), n = min(parts, panels)
        BLAS.parallel(n) { p in
            PackedGEMM.multiply(
                m: batch * TJ, n: isIdentity ? O : PO, k: KI, a: c, lda: KI, packed: pk, bias: isIdentity ? bias : nil, c: z,
                ldc: isIdentity ? O : PO, panels: (p * panels / n)..<((p + 1) * panels / n))
        }
        guard !isIdentity else { return }
        let steps = batch * time, zp = UnsafePointer(z), m = min(parts, steps)
        BLAS.parallel(m) { p in
            let s0 = p * steps / m, s1 = (p + 1) * steps / m
            aggregate(zp + s0 * joints * PO, into: out + s0 * joints * O, steps: s1 - s0, bias: bias)
        }
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard let x else { preconditionFailure("GraphConv.backward before forward") }
        precondition(!frozen, "GraphConv.backward on a frozen layer: thaw the network first")
        if usedTemporal, let temporal { return temporal.backward(dy, batch: batch, needInputGradient: needInputGradient) }
        let TJ = time * joints, KI = kernel * inputs, PO = partitions * outputs, O = outputs, I = inputs
        if needInputGradient { dx.reserve(batch * TJ * I) }
        let parts = self.parts, dxp = dx.pointer, weight = self.weight!
        if aggregatesFirst {
            backwardAggregatingFirst(x, dy, batch: batch, needInputGradient: needInputGradient)
            return needInputGradient ? UnsafePointer(dxp) : nil
        }
        BLAS.parallel(parts) { p in
            let w = workspaces[p]
            let (dW, db) = gradientTargets(p, w)
            if needInputGradient && kernel > 1 { w.dcols.reserve(chunk * TJ * KI) }
            for (b0, n) in chunks(p, of: parts, batch: batch) {
                let R = n * TJ, g = dy + b0 * TJ * O
                let c = columns(x, from: b0, count: n, into: w.cols)
                let dz = isIdentity ? g : spread(g, into: w.z.pointer, steps: n * time)
                // dW[PO, KI] += dZᵀ[PO, R] · cols[R, KI]
                BLAS.gemm(transposeA: true, m: PO, n: KI, k: R, a: dz, lda: PO, b: c, ldb: KI, beta: 1, c: dW, ldc: KI)
                LayerGradients.addColumnSums(g, count: R, width: O, into: db)
                guard needInputGradient else { continue }
                let d = dxp + b0 * TJ * I
                if kernel == 1 {
                    BLAS.gemm(m: R, n: I, k: PO, a: dz, lda: PO, b: weight, ldb: I, c: d, ldc: I)
                } else {
                    // dcols[R, KI] = dZ[R, PO] · W[PO, KI], then scatter-add onto dx
                    BLAS.gemm(m: R, n: KI, k: PO, a: dz, lda: PO, b: weight, ldb: KI, c: w.dcols.pointer, ldc: KI)
                    col2im(w.dcols.pointer, d, count: n)
                }
            }
        }
        // The other parts' gradients (dW, then db), added in part order.
        LayerGradients.addParts(parts, count: PO * KI + O, into: dWeight) { UnsafePointer(workspaces[$0].gradients.pointer) }
        return needInputGradient ? UnsafePointer(dxp) : nil
    }

    /// `aggregatesFirst`'s forward: per chunk X' (in the part's `z`), then y = bias + Σ_p X'_p·W[p]ᵀ.
    func forwardAggregatingFirst(_ x: UnsafePointer<Float>, batch: Int) {
        let TJ = time * joints, I = inputs, O = outputs, P = partitions, PI = partitions * inputs
        let parts = self.parts, out = y.pointer, weight = self.weight!, bias = self.bias!
        BLAS.parallel(parts) { p in
            let w = workspaces[p]
            w.z.reserve(chunk * TJ * PI)
            for (b0, n) in chunks(p, of: parts, batch: batch) {
                let xa = aggregateInputs(x + b0 * TJ * I, into: w.z.pointer, steps: n * time), o = out + b0 * TJ * O
                for r in 0..<(n * TJ) { (o + r * O).update(from: bias, count: O) }
                for q in 0..<P {
                    BLAS.gemm(
                        transposeB: true, m: n * TJ, n: O, k: I, a: xa + q * I, lda: PI, b: weight + q * O * I, ldb: I, beta: 1, c: o,
                        ldc: O)
                }
            }
        }
    }

    /// `aggregatesFirst`'s backward: per chunk X' again, `dW[p] += dyᵀ·X'_p`, dbias, and for dx
    /// `dX'_p = dy·W[p]` (in the part's `dcols`) spread back through Aᵀ.
    func backwardAggregatingFirst(_ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) {
        let TJ = time * joints, I = inputs, O = outputs, P = partitions, PI = partitions * inputs
        let parts = self.parts, dxp = dx.pointer, weight = self.weight!
        BLAS.parallel(parts) { p in
            let w = workspaces[p]
            let (dW, db) = gradientTargets(p, w)
            if needInputGradient { w.dcols.reserve(chunk * TJ * PI) }
            for (b0, n) in chunks(p, of: parts, batch: batch) {
                let R = n * TJ, g = dy + b0 * TJ * O
                let xa = aggregateInputs(x + b0 * TJ * I, into: w.z.pointer, steps: n * time)
                for q in 0..<P {
                    // dW[p][O, I] += dyᵀ[O, R] · X'_p[R, I]
                    BLAS.gemm(
                        transposeA: true, m: O, n: I, k: R, a: g, lda: O, b: xa + q * I, ldb: PI, beta: 1, c: dW + q * O * I, ldc: I)
                }
                LayerGradients.addColumnSums(g, count: R, width: O, into: db)
                guard needInputGradient else { continue }
                for q in 0..<P {
                    BLAS.gemm(m: R, n: I, k: O, a: g, lda: O, b: weight + q * O * I, ldb: I, c: w.dcols.pointer + q * I, ldc: PI)
                }
                spreadInputs(w.dcols.pointer, into: dxp + b0 * TJ * I, steps: n * time)
            }
        }
        LayerGradients.addParts(parts, count: partitions * outputs * inputs + O, into: dWeight) {
            UnsafePointer(workspaces[$0].gradients.pointer)
        }
    }

    /// `X'[s, j, p·I + c] = Σ_i A[p, j, i] · x[s, i, c]` for `steps` rows s = (b, t) of x
    /// `[steps, J, I]` into `xa` `[steps, J, P·I]`; returns `xa`.
    func aggregateInputs(_ x: UnsafePointer<Float>, into xa: UnsafeMutablePointer<Float>, steps: Int) -> UnsafePointer<Float> {
        let J = joints, I = inputs, PI = partitions * inputs
        xa.update(repeating: 0, count: steps * J * PI)
        Self.accumulate(inputEdges, adjoint: false, from: x, row: J * I, into: xa, row: J * PI, width: I, steps: steps)
        return UnsafePointer(xa)
    }

    /// The adjoint of `aggregateInputs`: `dx[s, i, c] = Σ A[p, j, i] · dX'[s, j, p·I + c]`.
    func spreadInputs(_ dxa: UnsafePointer<Float>, into dx: UnsafeMutablePointer<Float>, steps: Int) {
        let J = joints, I = inputs, PI = partitions * inputs
        dx.update(repeating: 0, count: steps * J * I)
        Self.accumulate(inputEdges, adjoint: true, from: dxa, row: J * PI, into: dx, row: J * I, width: I, steps: steps)
    }

    /// For each of `steps` rows (`from` rows of `fromRow` values, `into` rows of `intoRow`), over
    /// the edges in order: `into[e.target ..< e.target + width] += e.weight · from[e.source ...]`,
    /// or with `adjoint` the transpose (`into[e.source ...] += e.weight · from[e.target ...]`).
    /// The scatter behind `aggregate`, `aggregateInputs` and their adjoints.
    @inline(__always)
    static func accumulate(
        _ edges: [Edge], adjoint: Bool, from: UnsafePointer<Float>, row fromRow: Int, into: UnsafeMutablePointer<Float>, row intoRow: Int,
        width: Int, steps: Int
    ) {
        edges.withUnsafeBufferPointer { edges in
            for s in 0..<steps {
                let src = from + s * fromRow, dst = into + s * intoRow
                for e in edges {
                    let d = dst + (adjoint ? e.source : e.target), x = src + (adjoint ? e.target : e.source), a = e.weight
                    for c in 0..<width { d[c] += a * x[c] }
                }
            }
        }
    }

    /// Where part `p` accumulates dW and dbias: the network's gradients for part 0, else the
    /// part's own zeroed buffer.
    func gradientTargets(_ p: Int, _ w: Workspace) -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) {
        LayerGradients.partTargets(
            p, buffer: w.gradients, count: partitions * outputs * kernel * inputs, outputs: outputs, dWeight: dWeight, dBias: dBias)
    }

    /// `y[s, j, :] = bias + Σ A[p, j, i] · Z[s, i, p, :]` over A's nonzeros, for `steps` rows
    /// s = (b, t) of Z `[steps, J, PO]` and y `[steps, J, O]`.
    func aggregate(_ z: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, steps: Int, bias: UnsafePointer<Float>) {
        let J = joints, O = outputs, PO = partitions * outputs
        for r in 0..<steps * J { (y + r * O).update(from: bias, count: O) }
        Self.accumulate(edges, adjoint: false, from: z, row: J * PO, into: y, row: J * O, width: O, steps: steps)
    }

    /// The adjoint of `aggregate` without the bias: `dZ[s, i, p, :] = Σ_j A[p, j, i] · dy[s, j, :]`; returns `dz`.
    func spread(_ dy: UnsafePointer<Float>, into dz: UnsafeMutablePointer<Float>, steps: Int) -> UnsafePointer<Float> {
        let J = joints, O = outputs, PO = partitions * outputs
        dz.update(repeating: 0, count: steps * J * PO)
        Self.accumulate(edges, adjoint: true, from: dy, row: J * O, into: dz, row: J * PO, width: O, steps: steps)
        return UnsafePointer(dz)
    }

    /// The im2col matrix `[count·T·J, KI]` of batch elements `from ..< from + count`: `x`
    /// itself when K = 1, else written into `buffer`.
    func columns(_ x: UnsafePointer<Float>, from b0: Int, count: Int, into buffer: Buffer) -> UnsafePointer<Float> {
        let xb = x + b0 * time * joints * inputs
        if kernel == 1 { return xb }
        im2col(xb, buffer.pointer, count: count)
        return UnsafePointer(buffer.pointer)
    }

    /// `cols[(b, t, j), k·I + c] = x[b, t + k − h, j, c]` for `b < count`, zeros outside `[0, T)`.
    func im2col(_ x: UnsafePointer<Float>, _ cols: UnsafeMutablePointer<Float>, count: Int) {
        let T = time, J = joints, I = inputs, K = kernel, h = (kernel - 1) / 2, KI = K * I
        for b in 0..<count {
            for t in 0..<T {
                let rows = cols + (b * T + t) * J * KI
                for k in 0..<K {
                    let s = t + k - h
                    if s >= 0 && s < T {
                        let src = x + (b * T + s) * J * I
                        for j in 0..<J { (rows + j * KI + k * I).update(from: src + j * I, count: I) }
                    } else {
                        for j in 0..<J { (rows + j * KI + k * I).update(repeating: 0, count: I) }
                    }
                }
            }
        }
    }

    /// The adjoint of `im2col`: `dx[b, t + k − h, j, c] = Σ dcols[(b, t, j), k·I + c]`, in a fixed order.
    func col2im(_ dcols: UnsafePointer<Float>, _ dx: UnsafeMutablePointer<Float>, count: Int) {
        let T = time, J = joints, I = inputs, K = kernel, h = (kernel - 1) / 2, KI = K * I
        dx.update(repeating: 0, count: count * T * J * I)
        for b in 0..<count {
            for t in 0..<T {
                let rows = dcols + (b * T + t) * J * KI
                for k in 0..<K {
                    let s = t + k - h
                    guard s >= 0 && s < T else { continue }
                    let dst = dx + (b * T + s) * J * I
                    for j in 0..<J {
                        let d = dst + j * I, src = rows + j * KI + k * I
                        for c in 0..<I { d[c] += src[c] }
                    }
                }
            }
        }
    }
}

/// `{"type": "graphConv", "joints": J, "inputs": I, "outputs": O, "kernel": K, "partitions": P,
/// "adjacency": [P·J·J numbers]}` on joint-major activations (channel `j·I + c` is joint j's
/// feature c): `y[t, j, o] = bias[o] + Σ_p Σ_i A[p, j, i] · Σ_k Σ_c x[t + k − (K−1)/2, i, c] · W[p, o, k, c]`,
/// x = 0 outside `[0, T)` ("same" padding, stride 1, K odd). `A [P, J, J]` is `adjacency`,
/// row-major (`A[p, j, i]` is how much joint i feeds joint j in partition p); it is data, not a
/// parameter. With P = 1 and A = identity it is a per-joint temporal convolution (weights shared
/// across joints); with K = 1 a spatial graph convolution. ST-GCN's unit is graphConv(K = 1,
/// P = 3) → norm → relu → graphConv(K = 9, P = 1, identity).
///
/// A model file of format 1.8 keeps `A` as the layer's data tensor `adjacency [P, J, J]` and its
/// header the object without `adjacency` (`headerForm`: P·J² numbers, most of them 0, were half
/// of an ST-GCN model's load); the reader puts it back (`described(byData:)`). Files before 1.8
/// hold the list in the header, and are read as they were.
public struct GraphConvKind: LayerKind {
    public static let typeName = "graphConv"
    public var joints: Int, inputs: Int, outputs: Int, kernel: Int, partitions: Int
    /// `A [partitions, joints, joints]`, row-major; empty in the header form.
    public var adjacency: [Float]
    /// Only in the header form (format 1.8): `A` is the layer's data tensor `adjacency`.
    public var adjacencyInData = false

    public init(joints: Int, inputs: Int, outputs: Int, kernel: Int, partitions: Int, adjacency: [Float]) {
        (self.joints, self.inputs, self.outputs, self.kernel, self.partitions) = (joints, inputs, outputs, kernel, partitions)
        self.adjacency = adjacency
    }
    public init(fields f: some LayerFieldReader) throws {
        let inData = !f.contains("adjacency")
        self.init(
            joints: try f.int("joints"), inputs: try f.int("inputs"), outputs: try f.int("outputs"), kernel: try f.int("kernel"),
            partitions: try f.int("partitions"), adjacency: inData ? [] : try f.floats("adjacency"))
        adjacencyInData = inData
    }
    public var fields: [(key: String, value: LayerField)] {
        [
            ("joints", .int(joints)), ("inputs", .int(inputs)), ("outputs", .int(outputs)), ("kernel", .int(kernel)),
            ("partitions", .int(partitions)),
        ] + (adjacencyInData ? [] : [("adjacency", .floats(adjacency))])
    }
    public var summary: String {
        "graphConv \(joints) joints x \(inputs) -> \(outputs), kernel \(kernel), \(partitions) partition\(partitions == 1 ? "" : "s"), "
            + (adjacencyInData ? "adjacency in the data section" : "\(adjacency.filter { $0 != 0 }.count) adjacency nonzeros")
    }
    /// The data tensor of the header form.
    var adjacencyShape: ParameterShape {
        ParameterShape("adjacency", [partitions, joints, joints], layout: "[partitions, joints, joints]")
    }

    public func headerForm() -> (kind: Self, data: [(tensor: ParameterShape, values: [Float])])? {
        guard !adjacencyInData else { return nil }
        var form = self
        form.adjacency = []
        form.adjacencyInData = true
        return (form, [(adjacencyShape, adjacency)])
    }

    public func described(byData values: [String: [Float]]) -> Self? {
        guard adjacencyInData, let adjacency = values["adjacency"] else { return nil }
        var kind = self
        kind.adjacency = adjacency
        kind.adjacencyInData = false
        return kind
    }
    var parameters: [ParameterShape] {
        [
            ParameterShape("weight", [partitions, outputs, kernel, inputs], layout: "[partitions, outputs, kernel, inputs]"),
            ParameterShape("bias", [outputs], layout: "[outputs]"),
        ]
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        try check.size("joints", joints, max: ModelFile.Limits.joints)
        try check.size("inputs", inputs)
        try check.size("outputs", outputs)
        try check.size("partitions", partitions, max: ModelFile.Limits.inputChannels)
        try check.size("kernel", kernel, max: ModelFile.Limits.inputTime)
        guard kernel % 2 == 1 else { throw check.invalid("kernel must be odd (\"same\" padding), got \(kernel)") }
        let channels = try check.product("joints x inputs", [joints, inputs])
        guard channels == input.channels else {
            throw check.invalid("joints x inputs = \(joints) x \(inputs) = \(channels) channels expected, receives \(input)")
        }
        let count = try check.product("adjacency", [partitions, joints, joints])
        let output = Shape(time: input.time, channels: try check.product("joints x outputs", [joints, outputs]))
        let limit = ModelFile.Limits.totalActivationValues
        let cols = try check.product("im2col values per window", [input.time, joints, kernel, inputs], max: limit)
        let z = try check.product("partition products per window", [input.time, joints, partitions, outputs], max: limit)
        if adjacencyInData { return LayerShapes(output: output, parameters: parameters, data: [adjacencyShape], scratch: cols + z) }
        guard adjacency.count == count else {
            throw check.invalid(
                "adjacency has \(adjacency.count) values, expected partitions x joints x joints = \(partitions) x \(joints) x \(joints) = \(count)")
        }
        if let bad = adjacency.firstIndex(where: { !$0.isFinite }) { throw check.invalid("adjacency[\(bad)] is not finite (\(adjacency[bad]))") }
        return LayerShapes(output: output, parameters: parameters, scratch: cols + z)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        guard !adjacencyInData else { throw LayerCheckError(reason: "its adjacency is in the model file's data section and was not read") }
        return GraphConv(self, time: input.time)
    }

    /// Reshape to `[B, T, J, I]`, Transpose to `[B, I, T, J]`, Conv with weight `[P·O, I, K, 1]`
    /// (initializer `<name>weight.OIK1`, pads (K−1)/2 in time), Reshape to `[B, P, O·T, J]`,
    /// MatMul with `Aᵀ [P, J, J]` (initializer `<name>adjacency.T`), ReduceSum over P, Reshape
    /// to `[B, O, T, J]`, Transpose to `[B, T, J, O]`, Add bias, Reshape to `[B, T, J·O]`.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let (J, I, O, K, P) = (joints, inputs, outputs, kernel, partitions)
        let w = try g.tensor(p + "weight").values
        var oik = [Float](repeating: 0, count: P * O * I * K)  // [PO, I, K, 1] from our [PO, K, I]
        for po in 0..<(P * O) { for k in 0..<K { for c in 0..<I { oik[(po * I + c) * K + k] = w[(po * K + k) * I + c] } } }
        var at = [Float](repeating: 0, count: P * J * J)  // Aᵀ[p, i, j] = A[p, j, i]
        for q in 0..<P { for j in 0..<J { for i in 0..<J { at[(q * J + i) * J + j] = adjacency[(q * J + j) * J + i] } } }
        let x4 = g.node("Reshape", [x, g.int64s(p + "shape.btji", [0, 0, J, I])], name: p + "joints")
        let xt = g.node("Transpose", [x4], attributes: [("perm", .ints([0, 3, 1, 2]))], name: p + "to_bitj")
        let z = g.node(
            "Conv", [xt, g.floats(p + "weight.OIK1", [P * O, I, K, 1], oik)],
            attributes: [("kernel_shape", .ints([K, 1])), ("pads", .ints([(K - 1) / 2, 0, (K - 1) / 2, 0]))], name: p + "conv")
        let zp = g.node("Reshape", [z, g.int64s(p + "shape.bpsj", [0, P, -1, J])], name: p + "partitions")
        let m = g.node("MatMul", [zp, g.floats(p + "adjacency.T", [P, J, J], at)], name: p + "graph")
        let s = g.node("ReduceSum", [m, g.int64s("const.axes1", [1])], attributes: [("keepdims", .int(0))], name: p + "sum")
        let s4 = g.node("Reshape", [s, g.int64s(p + "shape.botj", [0, O, -1, J])], name: p + "outputs")
        let yt = g.node("Transpose", [s4], attributes: [("perm", .ints([0, 2, 3, 1]))], name: p + "to_btjo")
        let yb = g.node("Add", [yt, g.floats(p + "bias", [O], try g.tensor(p + "bias").values)], name: p + "bias")
        return g.node("Reshape", [yb, g.int64s("shape.btc", [0, 0, -1])], name: p + "channels")
    }

    /// Joints as channels (I = 1), two partitions of a non-symmetric graph, kernel 3.
    public static func example(input: Shape) -> GraphConvKind {
        let J = input.channels
        var a = [Float](repeating: 0, count: 2 * J * J)
        for j in 0..<J {
            a[j * J + j] = 1
            a[j * J + (j + 1) % J] = 0.5  // partition 0: itself and its successor
            a[(J + j) * J + (j + J - 1) % J] = -0.75  // partition 1: its predecessor
        }
        return GraphConvKind(joints: J, inputs: 1, outputs: 2, kernel: 3, partitions: 2, adjacency: a)
    }
}

extension LayerSpec {
    /// Spatio-temporal graph convolution over `joints` joints of `inputs` features each
    /// (joint-major channels): `adjacency` holds P matrices `A[p]` of `joints x joints` values,
    /// row-major (`A[p][j·joints + i]`: joint i into joint j). `weight [P, outputs, kernel, inputs]`,
    /// `bias [outputs]`; `kernel` odd, "same" padding.
    public static func graphConv(joints: Int, inputs: Int, outputs: Int, kernel: Int, adjacency: [[Float]]) -> LayerSpec {
        LayerSpec(
            GraphConvKind(
                joints: joints, inputs: inputs, outputs: outputs, kernel: kernel, partitions: adjacency.count,
                adjacency: adjacency.flatMap { $0 }))
    }
}
