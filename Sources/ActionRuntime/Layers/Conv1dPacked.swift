/// **Packed** and **frozen im2col** (a frozen network, see `Network.freeze()`, without a
/// Winograd transform): the runtime's own kernels (`PackedGEMM`, C with AVX-512 / AVX2
/// variants), the weight packed once as `[K·I, O]`. With D = 1 (or K = 1) the zero-padded
/// input is multiplied directly, without building im2col; a dilated layer without a Winograd
/// transform (S > 1 or K > 7; the others run frozen Winograd on their phases) builds im2col
/// first (docs/benchmarks.md, "Inference", has the timings). Neither calls OpenBLAS.
///
/// Threads: whole windows per part when the batch has at least as many windows as parts,
/// else the 16-channel output panels per part. Every output is `bias + Σ_r a·b` over the
/// same r in the same order whichever part, split or batch computes it, so neither the
/// thread count nor the batch changes a bit (and the packed and im2col forms, whose rows hold
/// the same values, agree bit for bit).
extension Conv1d {
    /// Parts for a frozen product of `batch · To` rows: `maxParts`, else the threads worth it.
    func frozenParts(batch: Int) -> Int {
        max(1, maxParts ?? PackedGEMM.threads(forWork: batch * outputTime * kernel * inputs * outputs))
    }

    /// `y = bias + conv(x)` with `PackedGEMM` for a frozen layer without a Winograd transform
    /// and D = 1 (or K = 1, where D changes nothing): each window's zero-padded input `[T + 2P, I]` is read as its im2col matrix
    /// (row t starts at step t·S, row stride S·I, K·I values long, so consecutive rows overlap)
    /// times the packed weight.
    func forwardPacked(_ x: UnsafePointer<Float>, batch: Int) {
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
        let aStride = P > 0 ? rows * I : T * I, lda = stride * I
        let out = y.pointer, bias = UnsafePointer(self.bias!), pk = UnsafePointer(packed!.pointer), a0 = a
        splitFrozen(batch: batch) { windows, panels in
            for b in windows {
                PackedGEMM.multiply(
                    m: To, n: O, k: KI, a: a0 + b * aStride, lda: lda, packed: pk, bias: bias, c: out + b * To * O, ldc: O,
                    panels: panels)
            }
        }
    }

    /// `y = bias + conv(x)` with `PackedGEMM` for a frozen dilated layer without a Winograd
    /// transform (S > 1 or K > 7): the im2col rows of
    /// each part's windows (in chunks) times the packed weight.
    func forwardFrozenIm2col(_ x: UnsafePointer<Float>, batch: Int) {
        let KI = kernel * inputs, O = outputs, To = outputTime
        prepareFrozen()
        let out = y.pointer, bias = UnsafePointer(self.bias!), pk = UnsafePointer(packed!.pointer)
        let parts = frozenParts(batch: batch)
        if batch >= parts {
            // Whole windows per part, in chunks whose columns stay in cache.
            while workspaces.count < parts { workspaces.append(Workspace()) }
            BLAS.parallel(parts) { p in
                let (lo, hi) = range(p, of: parts, batch: batch), w = workspaces[p]
                w.cols.reserve(min(hi - lo, chunk) * To * KI)
                for b0 in Swift.stride(from: lo, to: hi, by: chunk) {
                    let n = min(chunk, hi - b0), c = columns(x, from: b0, count: n, into: w.cols)
                    PackedGEMM.multiply(m: n * To, n: O, k: KI, a: c, lda: KI, packed: pk, bias: bias, c: out + b0 * To * O, ldc: O)
                }
            }
        } else {
            // Fewer windows than parts (a single window): the columns once, the panels split.
            workspaces[0].cols.reserve(batch * To * KI)
            let c = columns(x, from: 0, count: batch, into: workspaces[0].cols)
            splitFrozen(batch: batch) { _, panels in
                PackedGEMM.multiply(m: batch * To, n: O, k: KI, a: c, lda: KI, packed: pk, bias: bias, c: out, ldc: O, panels: panels)
            }
        }
    }

    /// Runs `body(windows, panels)` on `frozenParts(batch:)` parts: contiguous windows and
    /// every panel each when there are enough windows, else every window and contiguous panels.
    func splitFrozen(batch: Int, _ body: (Range<Int>, Range<Int>) -> Void) {
        let panels = PackedGEMM.panels(outputs), parts = frozenParts(batch: batch)
        if batch >= parts {
            BLAS.parallel(parts) { p in
                let (lo, hi) = range(p, of: parts, batch: batch)
                body(lo..<hi, 0..<panels)
            }
        } else {
            let n = min(parts, panels)
            BLAS.parallel(n) { p in body(0..<batch, (p * panels / n)..<((p + 1) * panels / n)) }
        }
    }
}
