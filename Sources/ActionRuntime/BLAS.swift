import CBLAS
import CKernels
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The only place that calls into OpenBLAS. Matrices are row-major. A single-row product
/// (m = 1) goes to `cblas_sgemv`; a product of a plain A by a small B (at most 2^17 values) to
/// the runtime's own kernel on AVX2 and AVX-512 (`ownKernel(…)`: the Winograd products and most
/// convolutions of training), the rest to `cblas_sgemm`.
///
/// `c[m, n] = alpha * op(a)[m, k] * op(b)[k, n] + beta * c[m, n]`, where `op` transposes
/// when asked. `lda`, `ldb`, `ldc` are the row strides of the matrices as stored.
public enum BLAS {
    public static func gemm(
        transposeA: Bool = false, transposeB: Bool = false,
        m: Int, n: Int, k: Int, alpha: Float = 1,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float = 0,
        c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        guard m > 0 && n > 0 else { return }
        _ = ThreadCount.shared  // sets OpenBLAS to one thread before its first call
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
        let ta = transposeA ? CblasTrans : CblasNoTrans, tb = transposeB ? CblasTrans : CblasNoTrans
        // The whole product's choice, so that neither the split nor m changes a bit.
        let own = ownKernel(transposeA: transposeA, n: n, k: k, alpha: alpha, beta: beta)
        // The rows `r` and columns `j` of C, one OpenBLAS (or own kernel's) call on this thread.
        func block(rows r: Range<Int>, columns j: Range<Int>) {
            if own {
                let status = atk_sgemm(
                    transposeB ? 1 : 0, Int32(r.count), Int32(j.count), Int32(k), a + r.lowerBound * lda, Int32(lda),
                    b + (transposeB ? j.lowerBound * ldb : j.lowerBound), Int32(ldb), beta == 1 ? 1 : 0,
                    c + r.lowerBound * ldc + j.lowerBound, Int32(ldc))
                if status == 0 { return }  // else out of memory for the packed B: OpenBLAS packs its own
            }
            cblas_sgemm(
                CblasRowMajor, ta, tb, Int32(r.count), Int32(j.count), Int32(k), alpha, a + (transposeA ? r.lowerBound : r.lowerBound * lda),
                Int32(lda), b + (transposeB ? j.lowerBound * ldb : j.lowerBound), Int32(ldb), beta, c + r.lowerBound * ldc + j.lowerBound,
                Int32(ldc))
        }
        let parts = gemmParts(m: m, n: n, k: k)
        guard parts > 1 else { return block(rows: 0..<m, columns: 0..<n) }
        // Each part one block of C, on one thread: a block of columns when A is the smaller
        // operand (each part packs all of A and its share of B), else a block of rows.
        let columns = m <= n, extent = columns ? n : m
        let step = ((extent + parts - 1) / parts + 15) / 16 * 16
        parallel(parts) { p in
            let lo = min(extent, p * step), hi = min(extent, lo + step)
            guard lo < hi else { return }
            if columns { block(rows: 0..<m, columns: lo..<hi) } else { block(rows: lo..<hi, columns: 0..<n) }
        }
    }

    /// Whether `gemm` gives products to the runtime's own kernel (`atk_sgemm`: B packed into a
    /// per-thread scratch on each call, then PackedGEMM's 6 x 16 AVX2 or 12 x 32 AVX-512 tiles)
    /// where it is faster than OpenBLAS: on by default where `PackedGEMM.current` is AVX2 or
    /// AVX-512; tests and benchmarks turn it off to compare. One setting for the process.
    nonisolated(unsafe) public static var ownKernelEnabled = true

    /// The products the own kernel takes: a plain A (`transposeA` false), `alpha` 1, `beta` 0 or
    /// 1, and a B of at most 2^17 values (512 KB: packing it stays in the L2, and costs about
    /// what OpenBLAS's own packing of B does). Measured on the Winograd products of training
    /// (m 264-1,020 rows, n·k of 3,648-8,192), where OpenBLAS's Haswell kernel reaches about 100
    /// GFLOP/s on a core and this one 110 (docs/benchmarks.md, "AVX2 (issue 28)"). The MLP's
    /// first layer (B of 656 K values) and the weight gradients (A transposed) stay on OpenBLAS.
    /// The choice does not depend on m, and each output is summed in order from 0 or its own
    /// value (`beta` 1) with one fused multiply-add a term, so a row's bits depend neither on
    /// the other rows (the batch size) nor on how the product is split over threads.
    public static func ownKernel(transposeA: Bool, n: Int, k: Int, alpha: Float, beta: Float) -> Bool {
        ownKernelEnabled && !transposeA && alpha == 1 && (beta == 0 || beta == 1) && n * k <= 1 << 17
            && PackedGEMM.current != .portable
    }

    /// Smallest multiply-add count per part worth splitting one GEMM over threads for: a part
    /// of 2^18 takes about 2 µs on a core, some ten times the hand-off to a spinning helper.
    public static let minimumGEMMPartWork = 1 << 18

    /// Parts one GEMM of `m x n x k` is split into: `threads` (1 inside a part), fewer so that
    /// every part has `minimumGEMMPartWork` multiply-adds and 16 rows or columns.
    static func gemmParts(m: Int, n: Int, k: Int) -> Int {
        let t = threads
        guard t > 1 else { return 1 }
        return max(1, min(t, m * n * k / minimumGEMMPartWork, max(m, n) / 16))
    }

    /// The most threads one call splits its work over: a GEMM (`gemm`, in blocks of C) and the
    /// layers' own loops (`parallel`). Inside a part of `parallel` it reads 1 (so parts do not
    /// split again).
    public static var threads: Int {
        get { ThreadCount.shared.threads }
        set { ThreadCount.shared.configure(max(1, newValue)) }
    }

    /// Runs `body(part)` for every `part` in `0..<parts`, concurrently on up to `parts` threads:
    /// independent single-threaded GEMM streams and loops, one per core. Each part must write
    /// only its own outputs. Which thread runs a part never changes its result, so a fixed
    /// `parts` gives the same bits every time. The threads are `WorkerTeam`'s (Dispatch's
    /// before macOS 15).
    ///
    /// OpenBLAS itself always runs on one thread, in the calling thread: every thread this
    /// process computes on is one of the team's (or a caller's), never OpenBLAS's own pool,
    /// whose workers would spin for tens of milliseconds after each call beside the team's.
    /// OpenBLAS 0.3.21's pthread build runs a one-thread call entirely in the calling thread
    /// (its buffer allocator is locked), so concurrent one-thread calls are safe (the tests and
    /// `actiontrain-bench layers` compare them with serial ones), and no call changes a setting
    /// another thread's call depends on: a GEMM's bits depend on `threads` and its operands only,
    /// whatever other threads (contexts of a shared model in a service) are doing. Nested calls
    /// run their parts one after another (`threads` reads 1 inside).
    public static func parallel(_ parts: Int, _ body: (Int) -> Void) {
        guard parts > 1 else {
            if parts == 1 { body(0) }
            return
        }
        let count = ThreadCount.shared
        func part(_ p: Int) {
            let outer = count.insidePart
            count.insidePart = true
            body(p)
            count.insidePart = outer
        }
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            WorkerTeam.shared.run(parts, part)
        } else {
            concurrentlyPerform(iterations: parts, part)
        }
    }

    /// The configured thread count and whether the current thread is running a part
    /// (thread-local). `@unchecked Sendable`: `configured` is only touched with `lock` held, and
    /// `insidePart` is thread-local. The count starts at OpenBLAS's own (`OPENBLAS_NUM_THREADS`,
    /// else the cores), and OpenBLAS is set to one thread for good.
    private final class ThreadCount: @unchecked Sendable {
        static let shared = ThreadCount()
        private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var configured: Int  // guarded by lock
        private var key = pthread_key_t()

        private init() {
            pthread_mutex_init(lock, nil)
            pthread_key_create(&key, nil)
            configured = max(1, Int(openblas_get_num_threads()))
            openblas_set_num_threads(1)
        }

        var insidePart: Bool {
            get { pthread_getspecific(key) != nil }
            set { pthread_setspecific(key, newValue ? UnsafeRawPointer(bitPattern: 1) : nil) }
        }

        var threads: Int {
            if insidePart { return 1 }
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return configured
        }

        func configure(_ n: Int) {
            pthread_mutex_lock(lock)
            configured = n
            pthread_mutex_unlock(lock)
        }
    }

    /// Splits `0..<count` into up to `threads` contiguous ranges of at least `minimum` items
    /// each, with boundaries on multiples of `alignment` (16 floats: parts never share a cache
    /// line of a 64-byte-aligned buffer), and runs `body` on them with `parallel`. For
    /// elementwise loops over large activations.
    public static func parallelRanges(_ count: Int, minimum: Int, alignment: Int = 16, _ body: (Range<Int>) -> Void) {
        let parts = max(1, min(threads, count / max(1, minimum)))
        guard parts > 1 else {
            body(0..<count)
            return
        }
        let step = ((count + parts - 1) / parts + alignment - 1) / alignment * alignment
        parallel(parts) { p in
            let lo = min(count, p * step), hi = min(count, lo + step)
            if lo < hi { body(lo..<hi) }
        }
    }

    /// OpenBLAS's own thread count: always 1 (`ThreadCount`), whatever `threads` is.
    static var openBLASThreads: Int { Int(openblas_get_num_threads()) }

    /// The OpenBLAS kernel in use (e.g. `Haswell`).
    public static var coreName: String {
        guard let p = openblas_get_corename() else { return "unknown" }
        return String(cString: p)
    }

    /// Pivoted Cholesky factorisation of a symmetric positive semi-definite `a [n, n]`
    /// (LAPACK's `dpstrf`, which OpenBLAS carries): `Pᵀ·A·P = L·Lᵀ`, stopped at the rank r where
    /// the largest pivot left is at most `tolerance`. Returns the pivots (0-based: row k of L
    /// belongs to row `pivots[k]` of A), r, and L's first r columns `[n, r]` row-major; nil when
    /// LAPACK reports an argument error. O(n³/3); runs on the calling thread.
    public static func pivotedCholesky(_ a: [Double], n: Int, tolerance: Double) -> (pivots: [Int], rank: Int, factor: [Double])? {
        precondition(a.count == n * n && n > 0)
        _ = ThreadCount.shared
        var m = a  // symmetric: its row-major layout is the column-major one
        var piv = [Int32](repeating: 0, count: n), rank: Int32 = 0, info: Int32 = 0
        var work = [Double](repeating: 0, count: 2 * n)
        var size = Int32(n), tol = tolerance
        "L".withCString { uplo in dpstrf_(uplo, &size, &m, &size, &piv, &rank, &tol, &work, &info, 1) }
        guard info >= 0 else { return nil }  // info 1: rank deficient, which is what it is for
        let r = Int(rank)
        var factor = [Double](repeating: 0, count: n * r)
        for i in 0..<n {
            for j in 0..<min(i + 1, r) { factor[i * r + j] = m[i + j * n] }  // L(i, j), column-major
        }
        return (piv.map { Int($0) - 1 }, r, factor)
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
