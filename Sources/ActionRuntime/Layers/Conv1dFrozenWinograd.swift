/// **Frozen Winograd** (a frozen network, see `Network.freeze()`): Winograd F(m, K) (see
/// `Conv1dWinograd.swift`) at every batch size, with U[ξ] packed once for the runtime's own
/// kernels (`PackedGEMM`, C with AVX-512 / AVX2 variants).
extension Conv1d {
    /// Winograd's U[ξ] packed as PackedGEMM's B `[I, O]` for each ξ, `PackedGEMM.packedCount(n: O, k: I)` apart.
    func packWinograd(_ w: Winograd) -> Buffer {
        let I = inputs, O = outputs, per = PackedGEMM.packedCount(n: O, k: I)
        _ = transformWeights(w, parts: 1)
        let b = Buffer(capacity: w.alpha * per)
        for xi in 0..<w.alpha { PackedGEMM.pack(transposed: U.pointer + xi * O * I, n: O, k: I, into: b.pointer + xi * per) }
        return b
    }

    /// A frozen layer with a Winograd transform, any batch: the transformed weights packed once
    /// (`U[ξ]` as B `[I, O]` for each ξ), then for every tile its input transform
    /// `V[tile, ξ, :]`, for each ξ `M[:, ξ, :] = V[:, ξ, :] · U[ξ]ᵀ` (`PackedGEMM`, rows =
    /// tiles, row stride α·I) and the output transform, all with `CKernels`' kernels. The tiles
    /// (of all windows) are split over the threads, each part doing all three steps for its own,
    /// in chunks whose V and M stay within about 1 MB: no barrier between the steps, and every
    /// output computed by one part with the same sums, whatever the split or the batch.
    func forwardPackedWinograd(_ x: UnsafePointer<Float>, batch: Int, _ w: Winograd) {
        let T = inputTime, I = inputs, O = outputs, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w), L = lanes
        let per = PackedGEMM.packedCount(n: O, k: I)  // a multiple of 16: each U[ξ] stays 64-byte aligned
        prepareFrozen()
        // Tiles g = (b·L + l)·NT + j of all windows and lanes.
        let total = batch * L * NT, chunk = packedChunk ?? max(1, (1 << 17) / (a * max(I, O)))
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
                            let bl = g / NT, s0 = (g % NT) * m - P, qlo = max(0, -s0), qhi = min(a, T - s0)
                            let v = V + (g - c0) * a * I
                            if qlo >= qhi {
                                v.update(repeating: 0, count: a * I)
                            } else {
                                PackedGEMM.transform(
                                    rows: a, cols: qhi - qlo, m: bt.baseAddress! + qlo, ldm: a,
                                    src: x + ((bl / L * T + s0 + qlo) * L + bl % L) * I, srcStride: L * I, start: nil, dst: v,
                                    dstStride: I, channels: I)
                            }
                        }
                        for xi in 0..<a {
                            PackedGEMM.multiply(
                                m: c1 - c0, n: O, k: I, a: V + xi * I, lda: a * I, packed: pu + xi * per, bias: nil, c: M + xi * O,
                                ldc: a * O)
                        }
                        // y[b, j·m + p, :] = bias + Σ_ξ Aᵀ[p, ξ]·M[g, ξ, :]
                        for g in c0..<c1 {
                            let bl = g / NT, t0 = (g % NT) * m
                            PackedGEMM.transform(
                                rows: min(m, To - t0), cols: a, m: at.baseAddress!, ldm: a, src: M + (g - c0) * a * O, srcStride: O,
                                start: bias, dst: out + ((bl / L * To + t0) * L + bl % L) * O, dstStride: L * O, channels: O)
                        }
                    }
                }
            }
        }
    }
}
