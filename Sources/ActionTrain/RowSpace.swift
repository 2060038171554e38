import ActionRuntime

/// The rows of a matrix `X [n, d]` in an orthonormal basis of their span: `X = C·Q` with
/// `Q [r, d]`, `Q·Qᵀ = I`, r the rank. From the Gram matrix `X·Xᵀ` by pivoted Cholesky
/// (`BLAS.pivotedCholesky`): `Pᵀ·X·Xᵀ·P = L·Lᵀ`, so `C = P·L` (row i of C is the row of L that
/// belongs to row i of X) and `Q = L₁₁⁻¹·X_p`, X_p the first r pivoted rows and L₁₁ their r×r
/// block of L.
///
/// What it is for: an L2-regularised linear model `z = W·x + b` (`SoftmaxRegression`) has its
/// optimum W in the span of the training rows (every gradient is a combination of them), and
/// `‖W‖ = ‖W'‖` for `W = W'·Q`. So the problem over the r ≤ n coordinates C is the same problem,
/// and much smaller when there are fewer windows than features (100 UTKinect clips, 15,960
/// pyramid features: r ≤ 100). `lift` maps its solution back.
///
/// Directions whose squared length is below `relativeTolerance` times the longest row's are
/// dropped (the Gram matrix is summed in float32 blocks, so they are rounding).
public struct RowSpace {
    public let rows: Int, features: Int, rank: Int
    /// C `[n, r]`.
    public let coordinates: [Float]
    private let pivots: [Int]
    private let factor: [Double]  // L [n, r], rows in pivoted order

    public static let relativeTolerance = 1e-6

    /// Nil when the factorisation fails (LAPACK reports an error) or X has no nonzero row.
    public init?(x: UnsafePointer<Float>, rows n: Int, features d: Int) {
        rows = n
        features = d
        // G = X·Xᵀ, summed over blocks of 256 features in float32 and across them in Double.
        var gram = [Double](repeating: 0, count: n * n)
        let block = 256
        var part = [Float](repeating: 0, count: n * n)
        for start in stride(from: 0, to: d, by: block) {
            let width = min(block, d - start)
            part.withUnsafeMutableBufferPointer {
                BLAS.gemm(transposeB: true, m: n, n: n, k: width, a: x + start, lda: d, b: x + start, ldb: d, c: $0.baseAddress!, ldc: n)
            }
            for i in 0..<(n * n) { gram[i] += Double(part[i]) }
        }
        let longest = (0..<n).map { gram[$0 * n + $0] }.max() ?? 0
        guard longest > 0, let (pivots, r, factor) = BLAS.pivotedCholesky(gram, n: n, tolerance: Self.relativeTolerance * longest),
            r > 0
        else { return nil }
        rank = r
        self.pivots = pivots
        self.factor = factor
        var c = [Float](repeating: 0, count: n * r)
        for k in 0..<n {
            for j in 0..<r { c[pivots[k] * r + j] = Float(factor[k * r + j]) }
        }
        coordinates = c
    }

    /// `W = W'·Q [K, d]` for `w [K, r]` (row-major), Q from the rows of `x`, the matrix this
    /// basis was made from: `M = W'·L₁₁⁻¹` by substitution, then `W = M·X_p`.
    public func lift(_ w: [Double], classes K: Int, x: UnsafePointer<Float>) -> [Double] {
        let r = rank, d = features
        var out = [Double](repeating: 0, count: K * d)
        for c in 0..<K {
            // m·L₁₁ = w_c: L₁₁ is lower triangular, so solve from the last column back.
            var m = [Double](repeating: 0, count: r)
            for j in stride(from: r - 1, through: 0, by: -1) {
                var v = w[c * r + j]
                for i in (j + 1)..<r { v -= m[i] * factor[i * r + j] }
                m[j] = v / factor[j * r + j]
            }
            out.withUnsafeMutableBufferPointer { o in
                let row = o.baseAddress! + c * d
                for k in 0..<r where m[k] != 0 {
                    let xk = x + pivots[k] * d
                    for f in 0..<d { row[f] += m[k] * Double(xk[f]) }
                }
            }
        }
        return out
    }
}
