import CBLAS
import PoseCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// Threads OpenBLAS uses for one GEMM, and the most threads a layer splits its own work
    /// over (`parallel`). Inside a part of `parallel` it reads 1 (so parts do not split again).
    public static var threads: Int {
        get { ThreadCount.shared.threads }
        set { ThreadCount.shared.configure(max(1, newValue)) }
    }

    /// Runs `body(part)` for every `part` in `0..<parts`, concurrently on up to `parts` threads,
    /// with OpenBLAS limited to one thread per call meanwhile (restored afterwards): independent
    /// single-threaded GEMM streams, one per core. Each part must write only its own outputs.
    /// Which thread runs a part never changes its result, so a fixed `parts` gives the same
    /// bits every time. The threads are `WorkerTeam`'s (Dispatch's before macOS 15).
    ///
    /// OpenBLAS 0.3.21's pthread build runs a one-thread call entirely in the calling thread
    /// (its buffer allocator is locked), so concurrent one-thread calls are safe (the tests
    /// and `actiontrain-bench layers` compare them with serial ones); calls that use its own
    /// worker threads would be serialised by a lock. Nested calls run their parts one after
    /// another (`threads` reads 1 inside).
    ///
    /// Several threads may run regions at once (contexts of a shared model on several threads in a service). OpenBLAS's
    /// thread count is one setting for the process, so it is 1 while any region runs anywhere
    /// and back to `threads` when the last one ends; meanwhile other threads' GEMMs run on one
    /// thread, which for large GEMMs can change the last bits, as a different `threads` does.
    /// (Only training's: a frozen network, a loaded model's, never calls OpenBLAS.)
    public static func parallel(_ parts: Int, _ body: (Int) -> Void) {
        guard parts > 1 else {
            if parts == 1 { body(0) }
            return
        }
        let count = ThreadCount.shared
        count.enterRegion()
        defer { count.leaveRegion() }
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

    /// The configured thread count, the parallel regions running (process-wide) and whether
    /// the current thread is running a part (thread-local). `@unchecked Sendable`: `configured`
    /// and `regions` are only touched with `lock` held, and `insidePart` is thread-local.
    private final class ThreadCount: @unchecked Sendable {
        static let shared = ThreadCount()
        private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var configured: Int  // guarded by lock
        private var regions = 0  // guarded by lock
        private var key = pthread_key_t()

        private init() {
            pthread_mutex_init(lock, nil)
            pthread_key_create(&key, nil)
            configured = Int(openblas_get_num_threads())
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
            if regions == 0 { openblas_set_num_threads(Int32(n)) }
            pthread_mutex_unlock(lock)
        }

        func enterRegion() {
            pthread_mutex_lock(lock)
            if regions == 0 { openblas_set_num_threads(1) }
            regions += 1
            pthread_mutex_unlock(lock)
        }

        func leaveRegion() {
            pthread_mutex_lock(lock)
            regions -= 1
            if regions == 0 { openblas_set_num_threads(Int32(configured)) }
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

    /// OpenBLAS's own setting (`threads` reads 1 inside `parallel`; this reads the library).
    static var openBLASThreads: Int { Int(openblas_get_num_threads()) }

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
