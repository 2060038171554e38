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
/// With lanes (L > 1) every window holds L sequences: the tiles of window b are lane-major
/// (tile (b, l, j) is row `(b·L + l)·NT + j`), lane l's time step t is at channel offset
/// `(t·L + l)·C` of its window, and everything else is as above.
extension Conv1d {
    /// Tiles per sequence (per window and lane).
    func tiles(_ w: Winograd) -> Int { (outputTime + w.m - 1) / w.m }

    func forwardWinograd(_ x: UnsafePointer<Float>, batch: Int, _ w: Winograd) {
        let I = inputs, O = outputs, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w), L = lanes
        let parts = self.parts, out = y.pointer, bias = self.bias!
        let u = transformWeights(w, parts: parts)
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), ws = workspaces[p]
            let n0 = min(hi - lo, chunk)
            ws.cols.reserve(n0 * L * NT * a * I)
            ws.products.reserve(n0 * L * NT * a * O)
            let V = ws.cols.pointer, M = ws.products.pointer
            for b0 in Swift.stride(from: lo, to: hi, by: chunk) {
                let n = min(chunk, hi - b0)
                transformInput(x, from: b0, count: n, into: V, w)
                // M[:, ξ, :] = V[:, ξ, :] · U[ξ]ᵀ
                for xi in 0..<a {
                    BLAS.gemm(
                        transposeB: true, m: n * L * NT, n: O, k: I, a: V + xi * I, lda: a * I, b: u + xi * O * I, ldb: I,
                        c: M + xi * O, ldc: a * O)
                }
                // y[b, j·m + p, :] = bias + Σ_ξ Aᵀ[p, ξ]·M[tile, ξ, :]
                for b in 0..<n {
                    for l in 0..<L {
                        for j in 0..<NT {
                            let t0 = j * m, tile = (b * L + l) * NT + j
                            Winograd.apply(
                                w.AT, rows: 0..<min(m, To - t0), columns: 0..<a, src: M + tile * a * O, srcStride: O,
                                dst: out + (((b0 + b) * To + t0) * L + l) * O, dstStride: L * O, channels: O, mode: .start(bias))
                        }
                    }
                }
            }
            ws.lastChunk = hi > lo ? lo + (hi - lo - 1) / chunk * chunk : -1
        }
    }

    /// `U[ξ, o, :] = Σ_k G[ξ, k]·W[o, k, :]` into `U` (`[α, O, I]`), split over o into `parts`.
    func transformWeights(_ w: Winograd, parts: Int) -> UnsafeMutablePointer<Float> {
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
    func transformInput(_ x: UnsafePointer<Float>, from b0: Int, count: Int, into V: UnsafeMutablePointer<Float>, _ w: Winograd) {
        let T = inputTime, I = inputs, a = w.alpha, m = w.m, NT = tiles(w), L = lanes
        for b in 0..<count {
            for l in 0..<L {
                let xb = x + (b0 + b) * T * L * I + l * I
                for j in 0..<NT {
                    let s0 = j * m - padding, qlo = max(0, -s0), qhi = min(a, T - s0)
                    let dst = V + ((b * L + l) * NT + j) * a * I
                    if qlo >= qhi {
                        dst.update(repeating: 0, count: a * I)
                    } else {
                        Winograd.apply(
                            w.BT, rows: 0..<a, columns: qlo..<qhi, src: xb + (s0 + qlo) * L * I, srcStride: L * I, dst: dst,
                            dstStride: I, channels: I, mode: .assign)
                    }
                }
            }
        }
    }

    func backwardWinograd(
        _ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool, _ w: Winograd
    ) {
        let T = inputTime, I = inputs, O = outputs, K = kernel, To = outputTime, a = w.alpha, m = w.m, NT = tiles(w), L = lanes
        let parts = self.parts, dxp = dx.pointer, u = U.pointer
        BLAS.parallel(parts) { p in
            let (lo, hi) = range(p, of: parts, batch: batch), ws = workspaces[p]
            guard hi > lo else { return }
            let n0 = min(hi - lo, chunk)
            if needInputGradient { ws.dcols.reserve(n0 * L * NT * a * I) }
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
                    for l in 0..<L {
                        for j in 0..<NT {
                            let t0 = j * m, tile = (b * L + l) * NT + j
                            Winograd.apply(
                                w.A, rows: 0..<a, columns: 0..<min(m, To - t0), src: dy + (((b0 + b) * To + t0) * L + l) * O,
                                srcStride: L * O, dst: dM + tile * a * O, dstStride: O, channels: O, mode: .assign)
                        }
                    }
                }
                LayerGradients.addColumnSums(dy + b0 * To * L * O, count: n * To * L, width: O, into: db)
                // dU[ξ] (+)= dM[:, ξ, :]ᵀ · V[:, ξ, :]
                for xi in 0..<a {
                    BLAS.gemm(
                        transposeA: true, m: O, n: I, k: n * L * NT, a: dM + xi * O, lda: a * O, b: V + xi * I, ldb: a * I,
                        beta: first ? 0 : 1, c: dU + xi * O * I, ldc: I)
                }
                first = false
                guard needInputGradient else { continue }
                // dV[:, ξ, :] = dM[:, ξ, :] · U[ξ], then dx[b, j·m − P + q, :] += Σ_ξ B[q, ξ]·dV[tile, ξ, :]
                for xi in 0..<a {
                    BLAS.gemm(
                        m: n * L * NT, n: I, k: O, a: dM + xi * O, lda: a * O, b: u + xi * O * I, ldb: I, c: dV + xi * I,
                        ldc: a * I)
                }
                for b in 0..<n {
                    let dxb = dxp + (b0 + b) * T * L * I
                    dxb.update(repeating: 0, count: T * L * I)
                    for l in 0..<L {
                        for j in 0..<NT {
                            let s0 = j * m - padding, qlo = max(0, -s0), qhi = min(a, T - s0)
                            guard qlo < qhi else { continue }
                            Winograd.apply(
                                w.B, rows: qlo..<qhi, columns: 0..<a, src: dV + ((b * L + l) * NT + j) * a * I, srcStride: I,
                                dst: dxb + ((s0 + qlo) * L + l) * I, dstStride: L * I, channels: I, mode: .accumulate)
                        }
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
        LayerGradients.addParts(parts, count: O, into: dBias) { UnsafePointer(workspaces[$0].gradients.pointer + a * O * I) }
    }
}
