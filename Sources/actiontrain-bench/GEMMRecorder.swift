import ActionRuntime
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The GEMMs a piece of code makes, as `BLAS.gemm` hands them to OpenBLAS, so that a
/// benchmark can replay a training step's exact GEMMs alone (`LayersBench.replay`).
///
/// The runtime has no hook for this: this executable defines `cblas_sgemm` itself, which the
/// static linker binds the runtime's calls to, and forwards every call to OpenBLAS's own
/// (`dlsym(RTLD_NEXT)`), noting its shape while `record` runs. A call made inside a part of
/// `BLAS.parallel` (where `BLAS.threads` reads 1) is grouped with the calls of the other
/// parts running beside it: a run of such calls is one region, and each thread's calls in it
/// one part. Consecutive parallel regions with no GEMM outside a part between them merge into
/// one region (a replay then waits for its threads once instead of twice).
enum GEMMRecorder {
    struct Call: Sendable {
        let m: Int, n: Int, k: Int, transposeA: Bool, transposeB: Bool, beta: Float
        let lda: Int, ldb: Int, ldc: Int
        /// Calls with the same region ran in one parallel region (or alone); `part` is theirs.
        var region: Int, part: Int
    }

    typealias SGEMM =
        @convention(c) (
            Int32, Int32, Int32, Int32, Int32, Int32, Float, UnsafePointer<Float>?, Int32, UnsafePointer<Float>?, Int32, Float,
            UnsafeMutablePointer<Float>?, Int32
        ) -> Void

    /// OpenBLAS's `cblas_sgemm`, found past this executable's definition.
    static let openBLAS: SGEMM = {
        guard let f = dlsym(UnsafeMutableRawPointer(bitPattern: -1), "cblas_sgemm") else {  // RTLD_NEXT
            fatalError("cblas_sgemm not found in the libraries after actiontrain-bench")
        }
        return unsafeBitCast(f, to: SGEMM.self)
    }()

    nonisolated(unsafe) static var recording = false
    nonisolated(unsafe) static var raw: [(call: Call, thread: pthread_t, inPart: Bool)] = []
    static let lock = NSLock()

    /// The GEMM calls `body` makes, grouped into regions and parts.
    ///
    /// `BLAS.gemm` gives some products to the runtime's own kernel (`BLAS.ownKernel`), which this
    /// cannot see; `body` runs with all of them on OpenBLAS (the same shapes and splits), and a
    /// replay through `BLAS.gemm` gives each to the kernel the step used (except a product split
    /// into blocks of columns whose whole B is just over 2^17 values and a block's under it:
    /// replayed on the own kernel, run on OpenBLAS; none of the benchmarks' products is such).
    static func record(_ body: () -> Void) -> [Call] {
        _ = openBLAS
        raw = []
        let own = BLAS.ownKernelEnabled
        BLAS.ownKernelEnabled = false
        recording = true
        body()
        recording = false
        BLAS.ownKernelEnabled = own
        var calls: [Call] = []
        var region = -1, threads: [pthread_t] = [], inRegion = false
        for (call, thread, inPart) in raw {
            var c = call
            if !inPart || !inRegion {
                region += 1
                threads = []
            }
            inRegion = inPart
            if inPart {
                if !threads.contains(where: { pthread_equal($0, thread) != 0 }) { threads.append(thread) }
                c.part = threads.firstIndex { pthread_equal($0, thread) != 0 }!
            }
            c.region = region
            calls.append(c)
        }
        return calls
    }

    static func add(_ c: Call) {
        let inPart = BLAS.threads == 1
        lock.lock()
        raw.append((c, pthread_self(), inPart))
        lock.unlock()
    }
}

/// This executable's `cblas_sgemm`: notes the call while recording, then runs OpenBLAS's.
@_cdecl("cblas_sgemm")
func recordingSGEMM(
    _ order: Int32, _ transA: Int32, _ transB: Int32, _ m: Int32, _ n: Int32, _ k: Int32, _ alpha: Float,
    _ a: UnsafePointer<Float>?, _ lda: Int32, _ b: UnsafePointer<Float>?, _ ldb: Int32, _ beta: Float,
    _ c: UnsafeMutablePointer<Float>?, _ ldc: Int32
) {
    if GEMMRecorder.recording {
        let noTranspose: Int32 = 111  // CblasNoTrans (CblasTrans is 112)
        GEMMRecorder.add(
            .init(
                m: Int(m), n: Int(n), k: Int(k), transposeA: transA != noTranspose, transposeB: transB != noTranspose, beta: beta,
                lda: Int(lda), ldb: Int(ldb), ldc: Int(ldc), region: 0, part: 0))
    }
    GEMMRecorder.openBLAS(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
