import PoseCore

/// Fully connected layer applied at every time step.
///
/// Shapes: B = batch, T = time, I = inputs, O = outputs; rows R = B·T.
/// `weight [O, I]`, `bias [O]`, initialised U(±√(1/I)) as PyTorch's `nn.Linear`.
/// Forward `y[R, O] = x[R, I] · Wᵀ + b`: OpenBLAS's sgemm (sgemv for one row), or, once the
/// network is frozen (`Network.freeze()`), the runtime's own kernel on the weight packed at the
/// first forward (`PackedGEMM`: at batch 1024 of the reference MLP 248 GFLOP/s per core with
/// AVX-512 against OpenBLAS Haswell's 119), the rows (or, for fewer than 12 rows per thread,
/// the 16-output panels) split over the threads; a single row (batch-1 MLP) with its sum in
/// four chains (`PackedGEMM.multiplyRow`), or, with at most 8 outputs, against the weight rows
/// unpacked (`PackedGEMM.dotRows`).
final class Linear: PooledInputGradient {
    let inputs: Int, outputs: Int, time: Int
    var spec: LayerSpec { .linear(inputs: inputs, outputs: outputs) }
    var inputShape: Shape { Shape(time: time, channels: inputs) }
    var outputShape: Shape { Shape(time: time, channels: outputs) }
    var parameterShapes: [ParameterShape] { LinearKind(inputs: inputs, outputs: outputs).parameters }

    private var weight: UnsafeMutablePointer<Float>!, bias: UnsafeMutablePointer<Float>!  // [O, I], [O]
    private var dWeight: UnsafeMutablePointer<Float>!, dBias: UnsafeMutablePointer<Float>!
    private var x: UnsafePointer<Float>?  // cached input [R, I]
    private let y = Buffer()
    var dx = Buffer()
    private var frozen = false
    private var packed: Buffer?  // the weight as PackedGEMM's B [I, O], while frozen
    /// Most parts a frozen forward is split into; nil: `BLAS.threads`. For tests.
    var maxParts: Int?
    /// A frozen batch-1 row with at most this many outputs (a classifier head) is summed
    /// against the weight rows as they are (`PackedGEMM.dotRows`), not the packed panels of
    /// 16 outputs, which would be mostly zeros: the default model's pyramid head (2,352 inputs,
    /// 6 outputs) reads 56 KB instead of 150 KB.
    static let maxDotOutputs = 8

    init(inputs: Int, outputs: Int, time: Int) {
        self.inputs = inputs
        self.outputs = outputs
        self.time = time
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        weight = parameters
        bias = parameters + outputs * inputs
        dWeight = gradients
        dBias = gradients + outputs * inputs
    }

    func initialize(using g: inout SeededGenerator) {
        let bound = (1 / Float(inputs)).squareRoot()
        for i in 0..<(outputs * inputs) { weight[i] = g.nextSymmetric(bound) }
        for i in 0..<outputs { bias[i] = g.nextSymmetric(bound) }
    }

    func setFrozen(_ frozen: Bool) {
        self.frozen = frozen
        packed = nil  // packed again at the next forward, from the current weights
    }

    func prepareFrozen() {
        if frozen && packed == nil { packed = PackedGEMM.packed(transposed: weight, n: outputs, k: inputs) }
    }

    func shareFrozen(from other: Layer) {
        if frozen { packed = (other as! Linear).packed }
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let R = batch * time, I = inputs, O = outputs
        self.x = x
        y.reserve(R * O)
        let out = y.pointer
        if frozen {
            forwardPacked(x, rows: R, into: out)
            return UnsafePointer(out)
        }
        for r in 0..<R { (out + r * O).update(from: bias, count: O) }
        BLAS.gemm(transposeB: true, m: R, n: O, k: I, a: x, lda: I, b: weight, ldb: I, beta: 1, c: out, ldc: O)
        return UnsafePointer(out)
    }

    private func forwardPacked(_ x: UnsafePointer<Float>, rows R: Int, into out: UnsafeMutablePointer<Float>) {
        let I = inputs, O = outputs
        if R == 1 && O <= Linear.maxDotOutputs {
            PackedGEMM.dotRows(n: O, k: I, a: x, w: weight, bias: bias, c: out)
            return
        }
        prepareFrozen()
        let pk = UnsafePointer(packed!.pointer), bias = UnsafePointer(self.bias!)
        let panels = PackedGEMM.panels(O), blocks = (R + 11) / 12  // 12 rows: a whole AVX-512 tile
        var parts = max(1, maxParts ?? PackedGEMM.threads(forWork: R * I * O))
        if R > 1 && blocks >= parts {
            BLAS.parallel(parts) { p in
                let lo = min(R, p * blocks / parts * 12), hi = min(R, (p + 1) * blocks / parts * 12)
                guard lo < hi else { return }
                PackedGEMM.multiply(
                    m: hi - lo, n: O, k: I, a: x + lo * I, lda: I, packed: pk, bias: bias, c: out + lo * O, ldc: O)
            }
        } else {
            parts = min(parts, panels)
            BLAS.parallel(parts) { p in
                let range = (p * panels / parts)..<((p + 1) * panels / parts)
                if R == 1 {
                    PackedGEMM.multiplyRow(n: O, k: I, a: x, packed: pk, bias: bias, c: out, panels: range)
                } else {
                    PackedGEMM.multiply(m: R, n: O, k: I, a: x, lda: I, packed: pk, bias: bias, c: out, ldc: O, panels: range)
                }
            }
        }
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        let R = batch * time, I = inputs, O = outputs
        guard let x else { preconditionFailure("Linear.backward before forward") }
        precondition(!frozen, "Linear.backward on a frozen layer: thaw the network first")
        // dW[O, I] += dyᵀ[O, R] · x[R, I]
        BLAS.gemm(transposeA: true, m: O, n: I, k: R, a: dy, lda: O, b: x, ldb: I, beta: 1, c: dWeight, ldc: I)
        // db[O] += Σ_r dy[r, :]
        LayerGradients.addColumnSums(dy, count: R, width: O, into: dBias)
        guard needInputGradient else { return nil }
        // dx[R, I] = dy[R, O] · W[O, I]
        dx.reserve(R * I)
        BLAS.gemm(m: R, n: I, k: O, a: dy, lda: O, b: weight, ldb: I, c: dx.pointer, ldc: I)
        return UnsafePointer(dx.pointer)
    }
}

/// `{"type": "linear", "inputs": I, "outputs": O}`: `y[t, o] = b[o] + Σ_i W[o, i] · x[t, i]`.
public struct LinearKind: LayerKind {
    public static let typeName = "linear"
    public var inputs: Int, outputs: Int
    public init(inputs: Int, outputs: Int) {
        self.inputs = inputs
        self.outputs = outputs
    }
    public init(fields f: some LayerFieldReader) throws { self.init(inputs: try f.int("inputs"), outputs: try f.int("outputs")) }
    public var fields: [(key: String, value: LayerField)] { [("inputs", .int(inputs)), ("outputs", .int(outputs))] }
    public var summary: String { "linear \(inputs) -> \(outputs)" }
    var parameters: [ParameterShape] {
        [ParameterShape("weight", [outputs, inputs], layout: "[outputs, inputs]"), ParameterShape("bias", [outputs], layout: "[outputs]")]
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        try check.size("inputs", inputs)
        try check.size("outputs", outputs)
        try check.channels(inputs, of: input)
        return LayerShapes(output: Shape(time: input.time, channels: outputs), parameters: parameters)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        Linear(inputs: inputs, outputs: outputs, time: input.time)
    }

    /// MatMul with `Wᵀ` (initializer `<name>.T`, `[I, O]`), then Add.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let w = try g.tensor(p + "weight").values
        var wt = [Float](repeating: 0, count: inputs * outputs)  // [I, O] = Wᵀ
        for o in 0..<outputs { for k in 0..<inputs { wt[k * outputs + o] = w[o * inputs + k] } }
        let y = g.node("MatMul", [x, g.floats(p + "weight.T", [inputs, outputs], wt)], name: p + "matmul")
        return g.node("Add", [y, g.floats(p + "bias", [outputs], try g.tensor(p + "bias").values)], name: p + "bias")
    }

    public static func example(input: Shape) -> LinearKind { LinearKind(inputs: input.channels, outputs: 3) }
}

extension LayerSpec {
    /// `y = x Wᵀ + b` at each time step. `weight [outputs, inputs]`, `bias [outputs]`.
    public static func linear(inputs: Int, outputs: Int) -> LayerSpec { LayerSpec(LinearKind(inputs: inputs, outputs: outputs)) }
}
