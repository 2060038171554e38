import ActionRuntime
import Foundation

/// GFLOP/s of `BLAS.gemm` on the exact training shapes of ../shared/bench, printed beside the
/// C `cblas_sgemm` anchors of RESULTS.md (environment as set, Haswell kernel): the Swift
/// wrapper should add nothing.
enum GemmBench {
    struct Shape {
        let name: String, m: Int, k: Int, n: Int, ta: Bool, tb: Bool
        let anchor1: Double, anchor2: Double  // GFLOP/s, 1 and 2 threads
    }

    static let shapes = [
        Shape(name: "sq256", m: 256, k: 256, n: 256, ta: false, tb: false, anchor1: 125.2, anchor2: 235.4),
        Shape(name: "MLP L1 fwd (b64)", m: 64, k: 2565, n: 256, ta: false, tb: false, anchor1: 118.1, anchor2: 225.2),
        Shape(name: "MLP L1 dW", m: 2565, k: 64, n: 256, ta: true, tb: false, anchor1: 123.0, anchor2: 224.6),
        Shape(name: "MLP L3 fwd", m: 64, k: 128, n: 6, ta: false, tb: false, anchor1: 40.9, anchor2: 40.0),
        Shape(name: "conv1 fwd (b64)", m: 2880, k: 285, n: 64, ta: false, tb: false, anchor1: 117.6, anchor2: 229.8),
        Shape(name: "conv2 dX", m: 2880, k: 128, n: 320, ta: false, tb: true, anchor1: 121.5, anchor2: 240.1),
    ]

    static func run(_ args: [String]) throws {
        print("BLAS.gemm, OpenBLAS core \(BLAS.coreName); anchors: ../shared/bench/RESULTS.md (env as set)")
        print("shape                  threads   GFLOP/s   anchor   ratio")
        for threads in [1, 2] {
            BLAS.threads = threads
            for s in shapes {
                let a = [Float](repeating: 0.5, count: s.m * s.k), b = [Float](repeating: 0.25, count: s.k * s.n)
                var c = [Float](repeating: 0, count: s.m * s.n)
                let t = Clock.median {
                    BLAS.gemm(
                        transposeA: s.ta, transposeB: s.tb, m: s.m, n: s.n, k: s.k, a: a, lda: s.ta ? s.m : s.k,
                        b: b, ldb: s.tb ? s.k : s.n, c: &c, ldc: s.n)
                }
                let gflops = 2 * Double(s.m * s.n * s.k) / t / 1e9
                let anchor = threads == 1 ? s.anchor1 : s.anchor2
                print(
                    s.name.padding(toLength: 22, withPad: " ", startingAt: 0) + " " + String(threads).padding(toLength: 9, withPad: " ", startingAt: 0)
                        + format(gflops).padding(toLength: 10, withPad: " ", startingAt: 0)
                        + format(anchor).padding(toLength: 9, withPad: " ", startingAt: 0) + format(gflops / anchor, 2))
            }
        }
    }
}
