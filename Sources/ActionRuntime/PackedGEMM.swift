import CKernels

/// The runtime's own matrix product, which a frozen network's linear and convolution layers use
/// (`Network.freeze()`; a loaded model is frozen): `C[m, n] = bias + A[m, k] · B[k, n]` with B
/// (the weights) packed once, ahead of time, in panels of 16 columns, and the rows of A allowed
/// to overlap (a padded input read as its im2col matrix, row stride `stride·inputs`, without
/// building it); plus the small Winograd transforms (`Sources/CKernels`). It reaches 0.9 of a
/// core's FMA peak where OpenBLAS is weakest (one window: 45 rows) and where the environment
/// holds OpenBLAS to AVX2 (docs/benchmarks.md, `actiontrain-bench kernels`).
///
/// The kernel is chosen at run time from the CPU: AVX-512 (tiles of 12 rows x 32 columns in
/// registers), AVX2 + FMA (6 x 16), or a portable loop elsewhere (arm64, old x86).
/// `ACTIONTRAIN_KERNEL=portable|avx2|avx512` lowers the choice (benchmarks, tests). Each output
/// is `bias + Σ_r a·b` summed over r in order, one fused multiply-add per term on AVX2 and
/// AVX-512, so those two give identical bits, whatever the panel split across threads.
public enum PackedGEMM {
    public enum InstructionSet: Int, CaseIterable, Sendable, CustomStringConvertible {
        case portable = 0, avx2 = 1, avx512 = 2
        public var description: String { ["portable", "AVX2+FMA", "AVX-512"][rawValue] }
    }

    /// The best kernel this CPU runs (after `ACTIONTRAIN_KERNEL`).
    public static var detected: InstructionSet { InstructionSet(rawValue: Int(atk_detected_isa()))! }

    /// The kernel in use. Setting it (tests, benchmarks) is clamped to `detected`; it is one
    /// setting for the process, not to be changed while products run.
    public static var current: InstructionSet {
        get { InstructionSet(rawValue: Int(atk_isa()))! }
        set { _ = atk_set_isa(Int32(newValue.rawValue)) }
    }

    /// Smallest multiply-add count per thread worth splitting a product for (at 2^17 both
    /// reference convolutions split on two threads, which is faster per window than unsplit:
    /// docs/benchmarks.md, "Inference").
    public static let minimumPartWork = 1 << 17

    /// Threads worth using for `work` multiply-adds: `BLAS.threads`, fewer for small products.
    static func threads(forWork work: Int) -> Int { min(BLAS.threads, work / minimumPartWork) }

    /// Columns per panel.
    public static let panel = Int(ATK_PANEL)

    /// Panels of a matrix with `n` columns.
    public static func panels(_ n: Int) -> Int { (n + panel - 1) / panel }

    /// Floats of the packed form of B with `n` columns and `k` rows.
    public static func packedCount(n: Int, k: Int) -> Int { Int(atk_packed_count(Int32(n), Int32(k))) }

    /// Packs `bt [n, k]` (B transposed, as weights are stored: one row per output) into
    /// `packed` (64-byte aligned, `packedCount(n:k:)` floats).
    public static func pack(transposed bt: UnsafePointer<Float>, n: Int, k: Int, into packed: UnsafeMutablePointer<Float>) {
        precondition(Int(bitPattern: packed) % 64 == 0, "packed must be 64-byte aligned")
        atk_pack_transposed(bt, Int32(n), Int32(k), packed)
    }

    /// `bt [n, k]` packed into a new buffer (see `pack(transposed:n:k:into:)`).
    static func packed(transposed bt: UnsafePointer<Float>, n: Int, k: Int) -> Buffer {
        let b = Buffer(capacity: packedCount(n: n, k: k))
        pack(transposed: bt, n: n, k: k, into: b.pointer)
        return b
    }

    /// `c[i·ldc + j] = bias[j] + Σ_r a[i·lda + r] · B[r, j]` for `i < m` and the columns of
    /// panels `panels` (all by default).
    public static func multiply(
        m: Int, n: Int, k: Int, a: UnsafePointer<Float>, lda: Int, packed: UnsafePointer<Float>,
        bias: UnsafePointer<Float>?, c: UnsafeMutablePointer<Float>, ldc: Int, panels range: Range<Int>? = nil
    ) {
        let r = range ?? 0..<panels(n)
        precondition(r.lowerBound >= 0 && r.upperBound <= panels(n), "panel range")
        atk_gemm_packed(
            Int32(m), Int32(n), Int32(k), a, Int32(lda), packed, bias, c, Int32(ldc), Int32(r.lowerBound), Int32(r.upperBound))
    }

    /// One row against `n` weight rows `w [n, k]` (not packed): `c[o] = bias[o] + Σ_r a[r]·w[o·k + r]`,
    /// the sum in four chains of 8 lanes combined in a fixed order (`atk_dot_rows`): the same
    /// bits on every instruction set. For a batch-1 linear layer with few outputs (a classifier
    /// head), whose packed panels of 16 columns would be mostly zeros.
    static func dotRows(
        n: Int, k: Int, a: UnsafePointer<Float>, w: UnsafePointer<Float>, bias: UnsafePointer<Float>?, c: UnsafeMutablePointer<Float>
    ) {
        atk_dot_rows(Int32(n), Int32(k), a, w, bias, c)
    }

    /// One row: `c[j] = bias[j] + Σ_r a[r]·B[r, j]` for the columns of panels `panels` (all by
    /// default), the sum split into four chains (term r in chain r mod 4) so that its
    /// multiply-adds overlap: a batch-1 linear layer. Its last bits differ from `multiply`'s.
    public static func multiplyRow(
        n: Int, k: Int, a: UnsafePointer<Float>, packed: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
        c: UnsafeMutablePointer<Float>, panels range: Range<Int>? = nil
    ) {
        let r = range ?? 0..<panels(n)
        precondition(r.lowerBound >= 0 && r.upperBound <= panels(n), "panel range")
        atk_gemv_packed(Int32(n), Int32(k), a, packed, bias, c, Int32(r.lowerBound), Int32(r.upperBound))
    }

    /// A small matrix `m [rows, ≥ cols]` (row stride `ldm`, at most 8 columns used) applied
    /// across channels as training's Winograd transforms need it (`Winograd.apply`;
    /// `atk_transform_exact`): `dst[i·dstStride + c] = s + Σ_{j: m[i·ldm + j] ≠ 0} m[i·ldm + j]·
    /// src[j·srcStride + c]` in j order, each product and sum rounded on its own (no fused
    /// multiply-add), s = 0 (`mode` 0), the destination's value (1) or `start[c]` (2). The same
    /// bits on every instruction set.
    static func exactTransform(
        rows: Int, cols: Int, m: UnsafePointer<Float>, ldm: Int, src: UnsafePointer<Float>, srcStride: Int, mode: Int32,
        start: UnsafePointer<Float>?, dst: UnsafeMutablePointer<Float>, dstStride: Int, channels: Int
    ) {
        precondition(cols <= 8, "at most 8 columns")
        atk_transform_exact(Int32(rows), Int32(cols), m, Int32(ldm), src, srcStride, mode, start, dst, dstStride, Int32(channels))
    }

    /// One segment of a Fourier pyramid across channels (`atk_fourier_magnitudes`): for
    /// f < `frequencies`, `dst[f·dstStride + c] = √(a² + b²)`, a and b the sums over t < `length`
    /// of `basis[f·length + t]` and `basis[(frequencies + f)·length + t]` times
    /// `src[t·srcStride + c]`, in t order with one fused multiply-add per term. The same bits on
    /// every instruction set.
    static func fourierMagnitudes(
        frequencies: Int, length: Int, basis: UnsafePointer<Float>, src: UnsafePointer<Float>, srcStride: Int,
        dst: UnsafeMutablePointer<Float>, dstStride: Int, channels: Int
    ) {
        atk_fourier_magnitudes(Int32(frequencies), Int32(length), basis, src, srcStride, dst, dstStride, Int32(channels))
    }

    /// A small matrix `m [rows, ≥ cols]` (row stride `ldm`, at most 8 columns used) applied
    /// across channels: `dst[i·dstStride + c] = s + Σ_j m[i·ldm + j]·src[j·srcStride + c]`,
    /// s = `start[c]` or 0. A Winograd transform of one tile.
    public static func transform(
        rows: Int, cols: Int, m: UnsafePointer<Float>, ldm: Int, src: UnsafePointer<Float>, srcStride: Int,
        start: UnsafePointer<Float>?, dst: UnsafeMutablePointer<Float>, dstStride: Int, channels: Int
    ) {
        precondition(cols <= 8, "at most 8 columns")
        atk_transform(
            Int32(rows), Int32(cols), m, Int32(ldm), src, Int32(srcStride), start, dst, Int32(dstStride), Int32(channels))
    }
}
