import ActionRuntime
import Foundation
import PoseCore

/// GFLOP/s of the runtime's own packed kernel (`PackedGEMM`, Sources/CKernels) for every
/// instruction set this CPU has, beside OpenBLAS (`BLAS.gemm`, one thread) on the same
/// product, and the AVX2 / AVX-512 FMA peaks of one core from RESULTS.md. The shapes are the
/// products a loaded reference model runs: a convolution window read straight from the padded
/// input (rows overlapping: lda < k; OpenBLAS gets a plain matrix of the same shape), Winograd's
/// per-ξ products at batch 1, and the MLP's first layer at batch 1024, 256 and 1.
enum KernelBench {
    struct Shape {
        let name: String, m: Int, n: Int, k: Int, lda: Int
        var row = false  // one row: PackedGEMM.multiplyRow against sgemv
    }

    static let shapes = [
        Shape(name: "conv1 window, direct", m: 45, n: 64, k: 285, lda: 57),
        Shape(name: "conv2 window, direct", m: 45, n: 128, k: 320, lda: 64),
        Shape(name: "conv2 window, Winograd ξ", m: 12, n: 128, k: 64, lda: 512),
        Shape(name: "MLP L1, batch 1024", m: 1024, n: 256, k: 2565, lda: 2565),
        Shape(name: "MLP L1, batch 256", m: 256, n: 256, k: 2565, lda: 2565),
        Shape(name: "MLP L1, batch 1", m: 1, n: 256, k: 2565, lda: 2565, row: true),
    ]

    static let peaks: [PackedGEMM.InstructionSet: Double] = [.avx2: 134.5, .avx512: 268.4]  // RESULTS.md fma_peak, 1 thread

    static func run(_ args: [String]) throws {
        BLAS.threads = 1
        let load = ForeignLoad()
        let sets = PackedGEMM.InstructionSet.allCases.filter { $0.rawValue <= PackedGEMM.detected.rawValue }
        print("PackedGEMM vs BLAS.gemm (OpenBLAS \(BLAS.coreName)), one thread, GFLOP/s; medians of 5 reps of >= 0.1 s")
        print("FMA peaks of one core (RESULTS.md): AVX2 134.5, AVX-512 268.4")
        var header = "shape".padding(toLength: 26, withPad: " ", startingAt: 0) + "m x n x k".padding(toLength: 19, withPad: " ", startingAt: 0)
        for s in sets { header += s.description.padding(toLength: 12, withPad: " ", startingAt: 0) }
        print(header + "OpenBLAS    best / OpenBLAS   best / peak")
        for s in shapes {
            var g = SeededGenerator(seed: 1)
            let a = (0..<((s.m - 1) * s.lda + s.k)).map { _ in g.nextSymmetric(1) }
            let plain = (0..<(s.m * s.k)).map { _ in g.nextSymmetric(1) }
            let w = (0..<(s.n * s.k)).map { _ in g.nextSymmetric(1) }, bias = [Float](repeating: 0.5, count: s.n)
            var c = [Float](repeating: 0, count: s.m * s.n)
            let packed = Buffer(capacity: PackedGEMM.packedCount(n: s.n, k: s.k))
            w.withUnsafeBufferPointer { PackedGEMM.pack(transposed: $0.baseAddress!, n: s.n, k: s.k, into: packed.pointer) }
            let flops = 2 * Double(s.m * s.n * s.k)
            var row =
                s.name.padding(toLength: 26, withPad: " ", startingAt: 0)
                + "\(s.m) x \(s.n) x \(s.k)".padding(toLength: 19, withPad: " ", startingAt: 0)
            var best = (0.0, PackedGEMM.InstructionSet.portable)
            for set in sets {
                PackedGEMM.current = set
                let t = a.withUnsafeBufferPointer { ap in
                    bias.withUnsafeBufferPointer { bp in
                        c.withUnsafeMutableBufferPointer { cp in
                            Clock.median {
                                if s.row {
                                    PackedGEMM.multiplyRow(
                                        n: s.n, k: s.k, a: ap.baseAddress!, packed: packed.pointer, bias: bp.baseAddress!, c: cp.baseAddress!)
                                } else {
                                    PackedGEMM.multiply(
                                        m: s.m, n: s.n, k: s.k, a: ap.baseAddress!, lda: s.lda, packed: packed.pointer,
                                        bias: bp.baseAddress!, c: cp.baseAddress!, ldc: s.n)
                                }
                            }
                        }
                    }
                }
                let gflops = flops / t / 1e9
                if gflops > best.0 { best = (gflops, set) }
                row += format(gflops).padding(toLength: 12, withPad: " ", startingAt: 0)
            }
            PackedGEMM.current = PackedGEMM.detected
            let tb = Clock.median { BLAS.gemm(transposeB: true, m: s.m, n: s.n, k: s.k, a: plain, lda: s.k, b: w, ldb: s.k, c: &c, ldc: s.n) }
            let blas = flops / tb / 1e9
            row += format(blas).padding(toLength: 12, withPad: " ", startingAt: 0) + format(best.0 / blas, 2).padding(toLength: 18, withPad: " ", startingAt: 0)
            row += peaks[best.1].map { format(best.0 / $0, 2) } ?? "-"
            if s.row {  // bound by reading the weights, not by the multiply-adds
                row += "   (\(format(best.0 / 2 * 4, 0)) GB/s of weights read)"
            }
            print(row)
        }
        print("foreign load \(format(100 * (load.share() ?? 0)))%")
    }
}
