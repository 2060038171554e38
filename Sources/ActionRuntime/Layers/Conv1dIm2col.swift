/// **im2col** (any geometry; batches under `winogradMinimumBatch`):
/// - `cols[b·To + t, k·I + i] = x[b, t·S + k·D − P, i]`, so each (row, k) slice is a contiguous
///   copy of one input time step (or zeros), and when D = 1 a whole interior row is one
///   contiguous copy of K time steps; a pointwise convolution (K = 1, S = 1, P = 0) uses `x`;
/// - `y[R, O] = cols[R, KI] · W[O, KI]ᵀ + bias` (bias pre-filled, GEMM with β = 1);
/// - `dW[O, KI] += dyᵀ[O, R] · cols[R, KI]`; `dcols[R, KI] = dy[R, O] · W[O, KI]`, then col2im
///   scatter-adds `dcols` back onto `dx`.
extension Conv1d {
    func forwardIm2col(_ x: UnsafePointer<Float>, batch: Int) {
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

    func backwardIm2col(_ x: UnsafePointer<Float>, _ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) {
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
                LayerGradients.addColumnSums(g, count: R, width: O, into: db)
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
        // The other parts' gradients (dW, then db), added in part order.
        LayerGradients.addParts(parts, count: O * KI + O, into: dWeight) { UnsafePointer(workspaces[$0].gradients.pointer) }
    }

    /// The im2col matrix `[count·To, KI]` of batch elements `from ..< from + count`: `x` itself
    /// for a pointwise convolution, else written into `buffer`.
    func columns(_ x: UnsafePointer<Float>, from b0: Int, count: Int, into buffer: Buffer) -> UnsafePointer<Float> {
        let xb = x + b0 * inputTime * inputs
        if isPointwise { return xb }
        im2col(xb, buffer.pointer, count: count)
        return UnsafePointer(buffer.pointer)
    }

    func columnsOfLastForward(_ x: UnsafePointer<Float>, from b0: Int, in buffer: Buffer) -> UnsafePointer<Float> {
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
}
