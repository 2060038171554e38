import PoseCore

/// 1D convolution over time (PyTorch `nn.Conv1d` semantics on channels-last activations),
/// computed as im2col + one GEMM.
///
/// Shapes: B = batch, T = input time, I = inputs, O = outputs, K = kernel, S = stride,
/// D = dilation, P = padding, To = output time = (T + 2P − D(K − 1) − 1)/S + 1;
/// rows R = B·To, row length KI = K·I.
/// `weight [O, K, I]`, `bias [O]`, both initialised U(±1/√(I·K)) (PyTorch's default:
/// kaiming_uniform(a = √5) works out to that bound, and the bias uses the same fan-in).
///
/// Forward: `y[b, t, o] = bias[o] + Σ_k Σ_i W[o, k, i] · x[b, t·S + k·D − P, i]` (zeros outside).
/// - im2col: `cols[b·To + t, k·I + i] = x[b, t·S + k·D − P, i]`, so each (row, k) slice is a
///   contiguous copy of one input time step (or zeros), and when D = 1 a whole interior row is
///   one contiguous copy of K time steps;
/// - `y[R, O] = cols[R, KI] · W[O, KI]ᵀ + bias` (bias pre-filled, GEMM with β = 1).
/// Backward:
/// - `dW[O, KI] += dyᵀ[O, R] · cols[R, KI]`, `dbias[o] += Σ_r dy[r, o]`;
/// - `dcols[R, KI] = dy[R, O] · W[O, KI]`, then col2im scatter-adds `dcols` back onto `dx`.
/// A pointwise convolution (K = 1, S = 1, P = 0) uses `x` itself as `cols`.
/// Batches larger than `chunk` run chunk by chunk (one im2col buffer of at most 2^20 floats,
/// reused); backward then rebuilds the columns of every chunk but the last, which forward
/// left in the buffer. For the reference convnet at batch 64 that is a single chunk.
final class Conv1d: Layer {
    let inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int
    let inputTime: Int, outputTime: Int
    var spec: LayerSpec {
        .conv1d(inputs: inputs, outputs: outputs, kernel: kernel, stride: stride, dilation: dilation, padding: padding)
    }
    var inputShape: Shape { Shape(time: inputTime, channels: inputs) }
    var outputShape: Shape { Shape(time: outputTime, channels: outputs) }
    var parameterShapes: [ParameterShape] {
        [
            ParameterShape("weight", [outputs, kernel, inputs], layout: "[outputs, kernel, inputs]"),
            ParameterShape("bias", [outputs], layout: "[outputs]"),
        ]
    }
    var isPointwise: Bool { kernel == 1 && stride == 1 && padding == 0 }

    private var weight: UnsafeMutablePointer<Float>!, bias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    private var dWeight: UnsafeMutablePointer<Float>!, dBias: UnsafeMutablePointer<Float>!  // [O, K, I], [O]
    /// Batch elements per GEMM: the im2col matrix of one chunk stays within about 4 MB, so
    /// that it is still in cache when the GEMM reads it (large batches are processed in
    /// several chunks; the chunking depends only on the shapes, never on the thread count).
    /// Tests set it small to exercise the chunked path.
    var chunk: Int
    private var x: UnsafePointer<Float>?  // cached input [B, T, I]
    private var lastChunk = -1  // first batch element of the chunk whose columns are in colsBuffer
    private let colsBuffer = Buffer()  // [min(B, chunk)·To, KI]
    private let y = Buffer()  // [B·To, O]
    private let dcols = Buffer()  // [min(B, chunk)·To, KI]
    private let dx = Buffer()  // [B, T, I]

    init(inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int, inputTime: Int) {
        self.inputs = inputs
        self.outputs = outputs
        self.kernel = kernel
        self.stride = stride
        self.dilation = dilation
        self.padding = padding
        self.inputTime = inputTime
        outputTime = (inputTime + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
        chunk = max(1, (1 << 20) / (outputTime * kernel * inputs))
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

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let KI = kernel * inputs, O = outputs, To = outputTime
        self.x = x
        y.reserve(batch * To * O)
        colsBuffer.reserve(min(batch, chunk) * To * KI)
        for b0 in Swift.stride(from: 0, to: batch, by: chunk) {
            let n = min(chunk, batch - b0), R = n * To
            let c = columns(x, from: b0, count: n)
            let out = y.pointer + b0 * To * O
            for r in 0..<R { (out + r * O).update(from: bias, count: O) }
            BLAS.gemm(transposeB: true, m: R, n: O, k: KI, a: c, lda: KI, b: weight, ldb: KI, beta: 1, c: out, ldc: O)
        }
        lastChunk = (batch - 1) / chunk * chunk
        return UnsafePointer(y.pointer)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let T = inputTime, I = inputs, KI = kernel * inputs, O = outputs, To = outputTime
        guard let x else { preconditionFailure("Conv1d.backward before forward") }
        guard batch > 0 else { return needInputGradient ? UnsafePointer(dx.pointer) : nil }
        if needInputGradient {
            dx.reserve(batch * T * I)
            dcols.reserve(min(batch, chunk) * To * KI)
        }
        // Chunks in reverse order: the last one's columns are still in the buffer from forward.
        for b0 in Swift.stride(from: (batch - 1) / chunk * chunk, through: 0, by: -chunk) {
            let n = min(chunk, batch - b0), R = n * To
            let c = b0 == lastChunk ? columnsOfLastForward(x, from: b0) : columns(x, from: b0, count: n)
            lastChunk = -1
            let g = dy + b0 * To * O
            // dW[O, KI] += dyᵀ[O, R] · cols[R, KI]
            BLAS.gemm(transposeA: true, m: O, n: KI, k: R, a: g, lda: O, b: c, ldb: KI, beta: 1, c: dWeight, ldc: KI)
            // dbias[O] += Σ_r dy[r, :]
            let db = dBias!  // a local copy, so that the loop vectorises
            for r in 0..<R {
                let row = g + r * O
                for o in 0..<O { db[o] += row[o] }
            }
            guard needInputGradient else { continue }
            let d = dx.pointer + b0 * T * I
            if isPointwise {
                // dx[R, I] = dy[R, O] · W[O, I]
                BLAS.gemm(m: R, n: I, k: O, a: g, lda: O, b: weight, ldb: I, c: d, ldc: I)
            } else {
                // dcols[R, KI] = dy[R, O] · W[O, KI], then scatter-add onto dx
                BLAS.gemm(m: R, n: KI, k: O, a: g, lda: O, b: weight, ldb: KI, c: dcols.pointer, ldc: KI)
                col2im(dcols.pointer, d, count: n)
            }
        }
        return needInputGradient ? UnsafePointer(dx.pointer) : nil
    }

    /// The im2col matrix `[count·To, KI]` of batch elements `from ..< from + count`: `x` itself
    /// for a pointwise convolution, else written into `colsBuffer`.
    private func columns(_ x: UnsafePointer<Float>, from b0: Int, count: Int) -> UnsafePointer<Float> {
        let xb = x + b0 * inputTime * inputs
        if isPointwise { return xb }
        im2col(xb, colsBuffer.pointer, count: count)
        return UnsafePointer(colsBuffer.pointer)
    }

    private func columnsOfLastForward(_ x: UnsafePointer<Float>, from b0: Int) -> UnsafePointer<Float> {
        isPointwise ? x + b0 * inputTime * inputs : UnsafePointer(colsBuffer.pointer)
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
