@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// `BLAS.gemm`'s products on the runtime's own kernel (`BLAS.ownKernel`, `atk_sgemm`): which
/// products it takes, and that each output is exactly one chain of fused multiply-adds from 0
/// (β = 0) or from C's own value (β = 1), whatever the instruction set and the thread split.
final class OwnKernelGEMMTests: XCTestCase {
    override func tearDown() {
        PackedGEMM.current = PackedGEMM.detected
        BLAS.ownKernelEnabled = true
    }

    struct Case {
        let m, n, k: Int
        let transposeB: Bool
        let beta: Float
        let pad: Int  // added to every row stride, so that rows are not contiguous
        var lda: Int { k + pad }
        var ldb: Int { (transposeB ? k : n) + pad }
        var ldc: Int { n + pad }
    }

    /// `BLAS.gemm` on `c` (a copy), α = 1.
    func product(_ s: Case, a: [Float], b: [Float], c: [Float]) -> [Float] {
        var out = c
        BLAS.gemm(
            transposeB: s.transposeB, m: s.m, n: s.n, k: s.k, a: a, lda: s.lda, b: b, ldb: s.ldb, beta: s.beta, c: &out, ldc: s.ldc)
        return out
    }

    func operands(_ s: Case, _ g: inout SeededGenerator) -> (a: [Float], b: [Float], c: [Float]) {
        (
            (0..<(s.m * s.lda)).map { _ in g.nextSymmetric(1) }, (0..<((s.transposeB ? s.n : s.k) * s.ldb)).map { _ in g.nextSymmetric(1) },
            (0..<(s.m * s.ldc)).map { _ in g.nextSymmetric(1) }
        )
    }

    /// Partial panels (n not a multiple of 16), partial tiles (m not a multiple of 6 or 12), sums
    /// longer than one block of 256 steps (k = 300, 513), few rows (m = 3), both layouts of B, β 0 and 1, strides
    /// wider than the rows, on one thread and split over two (333 x 40 x 100 is cut into blocks of
    /// rows, 40 x 333 x 30 into blocks of columns).
    static let cases = [
        Case(m: 45, n: 64, k: 57, transposeB: true, beta: 0, pad: 0),  // a Winograd product
        Case(m: 3, n: 50, k: 40, transposeB: false, beta: 1, pad: 1),
        Case(m: 97, n: 20, k: 300, transposeB: true, beta: 1, pad: 3),
        Case(m: 32, n: 17, k: 513, transposeB: false, beta: 0, pad: 1),
        Case(m: 333, n: 40, k: 100, transposeB: false, beta: 1, pad: 2),
        Case(m: 333, n: 40, k: 100, transposeB: true, beta: 0, pad: 0),
        Case(m: 40, n: 333, k: 30, transposeB: true, beta: 1, pad: 5),
    ]

    func testEveryOutputIsOneFusedChainFromZeroOrItsOwnValue() throws {
        let isas = PackedGEMM.InstructionSet.allCases.filter { $0 != .portable && $0.rawValue <= PackedGEMM.detected.rawValue }
        guard !isas.isEmpty else { throw XCTSkip("this CPU has no AVX2 (\(PackedGEMM.detected)): every product stays on OpenBLAS") }
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        var g = SeededGenerator(seed: 11)
        for s in Self.cases {
            let (a, b, c) = operands(s, &g)
            let lda = s.lda, ldb = s.ldb, ldc = s.ldc
            var expected = c
            for i in 0..<s.m {
                for j in 0..<s.n {
                    var e = s.beta == 1 ? c[i * ldc + j] : 0  // e + a·b rounded once: a fused multiply-add
                    for r in 0..<s.k { e = e.addingProduct(a[i * lda + r], s.transposeB ? b[j * ldb + r] : b[r * ldb + j]) }
                    expected[i * ldc + j] = e
                }
            }
            for isa in isas {
                PackedGEMM.current = isa
                XCTAssertTrue(BLAS.ownKernel(transposeA: false, n: s.n, k: s.k, alpha: 1, beta: s.beta), "\(s)")
                for threads in [1, 2] {
                    BLAS.threads = threads
                    if threads == 2 && s.m * s.n * s.k >= 1 << 20 { XCTAssertEqual(BLAS.gemmParts(m: s.m, n: s.n, k: s.k), 2, "\(s)") }
                    // The padding between rows is C's own values, so the comparison also shows
                    // that nothing past a row is written.
                    let got = product(s, a: a, b: b, c: c)
                    let wrong = got.indices.filter { got[$0].bitPattern != expected[$0].bitPattern }
                    let differ = wrong.count, first = wrong.first
                    XCTAssertEqual(differ, 0, "\(isa) \(threads) threads \(s): first at \(first.map { "\($0): \(got[$0]) vs \(expected[$0])" } ?? "-")")
                }
            }
        }
    }

    /// The own kernel and OpenBLAS compute the same products (within rounding: OpenBLAS sums in
    /// its own order).
    func testAgreesWithOpenBLAS() {
        var g = SeededGenerator(seed: 12)
        for s in Self.cases {
            let (a, b, c) = operands(s, &g)
            BLAS.ownKernelEnabled = true
            let own = product(s, a: a, b: b, c: c)
            BLAS.ownKernelEnabled = false
            let openBLAS = product(s, a: a, b: b, c: c)
            assertClose(own, openBLAS, absolute: 1e-4, relative: 1e-4, "\(s)")
        }
    }

    /// What stays on OpenBLAS: a transposed A (weight gradients), α ≠ 1 or β other than 0 and 1,
    /// a B of more than 2^17 values (the MLP's first layer), the portable instruction set (its
    /// kernel is slower than OpenBLAS), and everything when turned off.
    func testTakesOnlyTheProductsItIsFasterFor() {
        let plain = (n: 64, k: 57)
        func own(transposeA: Bool = false, n: Int = plain.n, k: Int = plain.k, alpha: Float = 1, beta: Float = 0) -> Bool {
            BLAS.ownKernel(transposeA: transposeA, n: n, k: k, alpha: alpha, beta: beta)
        }
        PackedGEMM.current = .portable
        XCTAssertFalse(own())
        guard PackedGEMM.detected != .portable else { return }
        PackedGEMM.current = PackedGEMM.detected
        XCTAssertTrue(own())
        XCTAssertTrue(own(beta: 1))
        XCTAssertTrue(own(n: 256, k: 512))
        XCTAssertFalse(own(transposeA: true))
        XCTAssertFalse(own(alpha: 0.5))
        XCTAssertFalse(own(beta: 0.3))
        XCTAssertFalse(own(n: 256, k: 2565))
        XCTAssertFalse(own(n: 256, k: 513))
        BLAS.ownKernelEnabled = false
        XCTAssertFalse(own())
    }
}
