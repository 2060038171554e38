/// **Packed** (a frozen network, see `Network.freeze()`, without a Winograd transform): the
/// runtime's own kernels (`PackedGEMM`, C with AVX-512 / AVX2 variants), the weight packed once
/// and multiplied straight from the padded input, without building im2col, for batches under
/// `winogradMinimumBatch` with D = 1 (docs/benchmarks.md, "Inference", has the timings).
extension Conv1d {
    /// `y = bias + conv(x)` with `PackedGEMM` for a frozen layer without a Winograd transform
    /// (batches under `winogradMinimumBatch`, D = 1): each window's zero-padded input
    /// `[T + 2P, I]` is read as its im2col matrix (row t
    /// starts at step t·S, row stride S·I, K·I values long, so consecutive rows overlap) times
    /// the weight packed as `[K·I, O]`. The output panels (16 channels each) are split over
    /// the threads; every output is computed by one thread with the same sum, so the thread
    /// count never changes a bit.
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
}
