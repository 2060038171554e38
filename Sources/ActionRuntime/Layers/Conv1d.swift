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
    private var cols: UnsafePointer<Float>?  // the im2col matrix of the last forward [R, KI]
    private let colsBuffer = Buffer()  // [R, KI]
    private let y = Buffer()  // [R, O]
    private let dcols = Buffer()  // [R, KI]
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
        let R = batch * outputTime, KI = kernel * inputs, O = outputs
        let c: UnsafePointer<Float>
        if isPointwise {
            c = x
        } else {
            colsBuffer.reserve(R * KI)
            im2col(x, colsBuffer.pointer, batches: 0..<batch)
            c = UnsafePointer(colsBuffer.pointer)
        }
        cols = c
        y.reserve(R * O)
        let out = y.pointer
        for r in 0..<R { (out + r * O).update(from: bias, count: O) }
        BLAS.gemm(transposeB: true, m: R, n: O, k: KI, a: c, lda: KI, b: weight, ldb: KI, beta: 1, c: out, ldc: O)
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let R = batch * outputTime, KI = kernel * inputs, O = outputs
        guard let cols else { preconditionFailure("Conv1d.backward before forward") }
        // dW[O, KI] += dyᵀ[O, R] · cols[R, KI]
        BLAS.gemm(transposeA: true, m: O, n: KI, k: R, a: dy, lda: O, b: cols, ldb: KI, beta: 1, c: dWeight, ldc: KI)
        // dbias[O] += Σ_r dy[r, :]
        for r in 0..<R {
            let row = dy + r * O
            for o in 0..<O { dBias[o] += row[o] }
        }
        guard needInputGradient else { return nil }
        dx.reserve(batch * inputTime * inputs)
        if isPointwise {
            // dx[R, I] = dy[R, O] · W[O, I]
            BLAS.gemm(m: R, n: inputs, k: O, a: dy, lda: O, b: weight, ldb: inputs, c: dx.pointer, ldc: inputs)
        } else {
            // dcols[R, KI] = dy[R, O] · W[O, KI], then scatter-add onto dx
            dcols.reserve(R * KI)
            BLAS.gemm(m: R, n: KI, k: O, a: dy, lda: O, b: weight, ldb: KI, c: dcols.pointer, ldc: KI)
            col2im(dcols.pointer, dx.pointer, batches: 0..<batch)
        }
        return UnsafePointer(dx.pointer)
    }

    /// `cols[b·To + t, k·I + i] = x[b, t·S + k·D − P, i]`, zeros outside `[0, T)`.
    func im2col(_ x: UnsafePointer<Float>, _ cols: UnsafeMutablePointer<Float>, batches: Range<Int>) {
        let T = inputTime, I = inputs, K = kernel, S = stride, D = dilation, P = padding, To = outputTime
        let KI = K * I
        for b in batches {
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

    /// The adjoint of `im2col`: `dx[b, t·S + k·D − P, i] += dcols[b·To + t, k·I + i]` over all
    /// (t, k) in range, after zeroing `dx[b]`. Each batch element only touches its own slice,
    /// summed in a fixed (t, k) order.
    func col2im(_ dcols: UnsafePointer<Float>, _ dx: UnsafeMutablePointer<Float>, batches: Range<Int>) {
        let T = inputTime, I = inputs, K = kernel, S = stride, D = dilation, P = padding, To = outputTime
        let KI = K * I
        for b in batches {
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
