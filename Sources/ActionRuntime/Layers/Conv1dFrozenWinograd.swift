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
    ///
    /// Dilation D: the outputs of phase r (times t = r + D·u) read only the inputs
    /// `x[r − P + D·(u + k)]`, an undilated convolution of every D-th input step, so each phase
    /// is tiled on its own (`tiles` F(m, K) tiles per phase, the last ones of the shorter phases
    /// cut short), the input transform reading every D-th step of `x` in place and the output
    /// transform writing every D-th step of `y`. Every tile of every phase and window goes
    /// through the same GEMM per ξ; D = 1 is the single phase r = 0.
    func forwardPackedWinograd(_ x: UnsafePointer<Float>, batch: Int, _ w: Winograd) {
        let T = inputTime, I = inputs, O = outputs, To = outputTime, a = w.alpha, m = w.m, L = lanes, D = dilation
        let NT = ((To + D - 1) / D + m - 1) / m  // tiles per phase (phase 0 has the most outputs)
        let per = PackedGEMM.packedCount(n: O, k: I)  // a multiple of 16: each U[ξ] stays 64-byte aligned
        prepareFrozen()
        // Tiles g = ((b·L + l)·D + r)·NT + j of all windows, lanes and phases.
        let total = batch * L * D * NT, chunk = packedChunk ?? max(1, (1 << 17) / (a * max(I, O)))
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
                        // V[g, ξ, :] = Σ_q Bᵀ[ξ, q]·x[b, s0 + D·q, :] with s0 = r − P + D·j·m, steps
                        // outside [0, T) being zeros: q from qlo (the first s0 + D·q ≥ 0) to qhi.
                        for g in c0..<c1 {
                            let bl = g / (D * NT), r = g / NT % D, s0 = r - P + D * (g % NT) * m
                            let qlo = s0 >= 0 ? 0 : (D - 1 - s0) / D, qhi = min(a, T > s0 ? (T - s0 + D - 1) / D : 0)
                            let v = V + (g - c0) * a * I
                            if qlo >= qhi {
                                v.update(repeating: 0, count: a * I)
                            } else {
                                PackedGEMM.transform(
                                    rows: a, cols: qhi - qlo, m: bt.baseAddress! + qlo, ldm: a,
                                    src: x + ((bl / L * T + s0 + D * qlo) * L + bl % L) * I, srcStride: D * L * I, start: nil, dst: v,
                                    dstStride: I, channels: I)
                            }
                        }
                        for xi in 0..<a {
                            PackedGEMM.multiply(
                                m: c1 - c0, n: O, k: I, a: V + xi * I, lda: a * I, packed: pu + xi * per, bias: nil, c: M + xi * O,
                                ldc: a * O)
                        }
                        // y[b, r + D·(j·m + p), :] = bias + Σ_ξ Aᵀ[p, ξ]·M[g, ξ, :] for the phase's outputs.
                        for g in c0..<c1 {
                            let bl = g / (D * NT), t0 = g / NT % D + D * (g % NT) * m, rows = min(m, (To - t0 + D - 1) / D)
                            guard rows > 0 else { continue }
                            PackedGEMM.transform(
                                rows: rows, cols: a, m: at.baseAddress!, ldm: a, src: M + (g - c0) * a * O, srcStride: O,
                                start: bias, dst: out + ((bl / L * To + t0) * L + bl % L) * O, dstStride: D * L * O, channels: O)
                        }
                    }
                }
            }
        }
    }
}
