import CBLAS

/// The only place that calls into OpenBLAS. Matrices are row-major. A single-row product
/// (m = 1) goes to `cblas_sgemv`, the rest to `cblas_sgemm`.
///
/// `c[m, n] = alpha * op(a)[m, k] * op(b)[k, n] + beta * c[m, n]`, where `op` transposes
/// when asked. `lda`, `ldb`, `ldc` are the row strides of the matrices as stored.
public enum BLAS {
    @inline(__always)
    public static func gemm(
        transposeA: Bool = false, transposeB: Bool = false,
        m: Int, n: Int, k: Int, alpha: Float = 1,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float = 0,
        c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        guard m > 0 && n > 0 else { return }
        if k == 0 {
            // BLAS leaves C untouched for k == 0 only when beta == 1; be explicit.
            for i in 0..<m { for j in 0..<n { c[i * ldc + j] *= beta } }
            return
        }
        if m == 1 {
            // One row (batch-1 inference): c[1, n] = op(b)ᵀ[n, k] · a[k]. sgemm would pack all
            // of b first (the 2.6 MB first-layer weight of the reference MLP), gemv streams it once.
            cblas_sgemv(
                CblasRowMajor, transposeB ? CblasNoTrans : CblasTrans, Int32(transposeB ? n : k), Int32(transposeB ? k : n),
                alpha, b, Int32(ldb), a, Int32(transposeA ? lda : 1), beta, c, 1)
            return
        }
        cblas_sgemm(
            CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
            Int32(m), Int32(n), Int32(k), alpha, a, Int32(lda), b, Int32(ldb), beta, c, Int32(ldc))
    }

    /// Threads OpenBLAS uses for one GEMM.
    public static var threads: Int {
        get { Int(openblas_get_num_threads()) }
        set { openblas_set_num_threads(Int32(max(1, newValue))) }
    }

    /// The OpenBLAS kernel in use (e.g. `Haswell`).
    public static var coreName: String {
        guard let p = openblas_get_corename() else { return "unknown" }
        return String(cString: p)
    }

    /// Triple-loop reference of `gemm`, in Double accumulation, for tests.
    public static func gemmReference(
        transposeA: Bool = false, transposeB: Bool = false,
        m: Int, n: Int, k: Int, alpha: Float = 1,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float = 0,
        c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        for i in 0..<m {
            for j in 0..<n {
                var s = 0.0
                for p in 0..<k {
                    let av = transposeA ? a[p * lda + i] : a[i * lda + p]
                    let bv = transposeB ? b[j * ldb + p] : b[p * ldb + j]
                    s += Double(av) * Double(bv)
                }
                c[i * ldc + j] = Float(Double(alpha) * s + (beta == 0 ? 0 : Double(beta) * Double(c[i * ldc + j])))
            }
        }
    }
}
