import XCTest

@testable import ActionRuntime
@testable import PoseCore

/// layerNorm's per-row sums in C (`atk_layernorm_stats8`, `atk_layernorm_sums8`: 8 rows in the
/// lanes, channels transposed 8 at a time) against the Swift loops they replace, bit for bit,
/// on every instruction set this CPU has.
final class LayerNormKernelTests: XCTestCase {
    func bits(_ v: SIMD8<Float>) -> [UInt32] { (0..<8).map { v[$0].bitPattern } }

    func testRowSumsMatchTheSwiftLoopsOnEveryInstructionSet() {
        defer { PackedGEMM.current = PackedGEMM.detected }
        let isas = PackedGEMM.InstructionSet.allCases.filter { $0.rawValue <= PackedGEMM.detected.rawValue }
        var g = SeededGenerator(seed: 21)
        for C in [1, 5, 8, 13, 16, 64, 67] {
            // Rows of different scales and offsets, so that the order of the sums shows in the bits.
            let x = (0..<(8 * C)).map { i in g.nextSymmetric(1) * Float(1 + i / C * 3) + Float(i / C) * 0.37 }
            let dy = (0..<(8 * C)).map { _ in g.nextSymmetric(0.1) }
            let gamma = (0..<C).map { _ in 1 + g.nextSymmetric(0.5) }
            var mean = [Float](repeating: 0, count: 8), rstd = mean, mean0 = mean, rstd0 = mean
            LayerNorm.statistics8Reference(x, channels: C, epsilon: 1e-5, mean: &mean0, rstd: &rstd0)
            let expected = LayerNorm.sums8Reference(x, dy, gamma: gamma, channels: C, mean: mean0, rstd: rstd0)
            if C > 1 { XCTAssertNotEqual(expected.sumGX, .zero, "C \(C): x̂ is not all zero") }
            for isa in isas {
                PackedGEMM.current = isa
                ElementwiseKernels.layerNormStatistics8(x, channels: C, epsilon: 1e-5, mean: &mean, rstd: &rstd)
                XCTAssertEqual(mean.map(\.bitPattern), mean0.map(\.bitPattern), "\(isa) C \(C): mean")
                XCTAssertEqual(rstd.map(\.bitPattern), rstd0.map(\.bitPattern), "\(isa) C \(C): 1/σ")
                let got = ElementwiseKernels.layerNormSums8(x, dy, gamma: gamma, channels: C, mean: mean0, rstd: rstd0)
                XCTAssertEqual(bits(got.sumG), bits(expected.sumG), "\(isa) C \(C): Σ γ·dy")
                XCTAssertEqual(bits(got.sumGX), bits(expected.sumGX), "\(isa) C \(C): Σ γ·dy·x̂")
            }
        }
    }

    /// Forward's two groups of 8 rows in flight together (`atk_layernorm_stats16`) give the bits
    /// of the reference on each group, and the output (`atk_layernorm_normalize`) the bits of
    /// `((x − μ)·r)·γ + β` computed in Swift, on every instruction set (C = 67: a partial block of 8).
    func testForwardKernelsMatchTheSwiftLoopsOnEveryInstructionSet() {
        defer { PackedGEMM.current = PackedGEMM.detected }
        let isas = PackedGEMM.InstructionSet.allCases.filter { $0.rawValue <= PackedGEMM.detected.rawValue }
        var g = SeededGenerator(seed: 22)
        for C in [3, 8, 64, 67] {
            let x = (0..<(16 * C)).map { i in g.nextSymmetric(1) * Float(1 + i / C) + Float(i / C) * 0.29 }
            let gamma = (0..<C).map { _ in 1 + g.nextSymmetric(0.5) }, beta = (0..<C).map { _ in g.nextSymmetric(0.5) }
            var mean0 = [Float](repeating: 0, count: 16), rstd0 = mean0
            mean0.withUnsafeMutableBufferPointer { m in
                rstd0.withUnsafeMutableBufferPointer { r in
                    for h in 0..<2 {
                        LayerNorm.statistics8Reference(
                            Array(x[(h * 8 * C)...]), channels: C, epsilon: 1e-5, mean: m.baseAddress! + 8 * h, rstd: r.baseAddress! + 8 * h)
                    }
                }
            }
            var expected = [Float](repeating: 0, count: 16 * C)
            for r in 0..<16 {
                for c in 0..<C { expected[r * C + c] = (x[r * C + c] - mean0[r]) * rstd0[r] * gamma[c] + beta[c] }
            }
            for isa in isas {
                PackedGEMM.current = isa
                var mean = [Float](repeating: 0, count: 16), rstd = mean, y = [Float](repeating: 0, count: 16 * C)
                ElementwiseKernels.layerNormStatistics16(x, channels: C, epsilon: 1e-5, mean: &mean, rstd: &rstd)
                XCTAssertEqual(mean.map(\.bitPattern), mean0.map(\.bitPattern), "\(isa) C \(C): mean")
                XCTAssertEqual(rstd.map(\.bitPattern), rstd0.map(\.bitPattern), "\(isa) C \(C): 1/σ")
                ElementwiseKernels.layerNormNormalize(x, rows: 16, channels: C, mean: mean0, rstd: rstd0, gamma: gamma, beta: beta, into: &y)
                XCTAssertEqual(y.map(\.bitPattern), expected.map(\.bitPattern), "\(isa) C \(C): output")
            }
        }
    }
}
