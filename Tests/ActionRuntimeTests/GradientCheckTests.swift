@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// Finite-difference checks of every parameter and input gradient of a network, against the
/// scalar objective `L = Σ r ⊙ logits` with fixed random `r` (so `dL/dlogits = r`).
/// Central differences are evaluated in Double from Float forwards with h = 1e-2 on inputs
/// of order 1, which keeps the truncation error below the tolerance for smooth layers.
func checkGradients(
    layers: [LayerSpec], input: Shape, batch: Int, seed: UInt64 = 1,
    tolerance: Double = 2e-2, file: StaticString = #filePath, line: UInt = #line
) throws {
    let net = try Network(layers: layers, input: input)
    net.initialize(seed: seed)
    var g = SeededGenerator(seed: seed &+ 99)
    var x = (0..<(batch * input.count)).map { _ in g.nextSymmetric(1) }
    let r = (0..<(batch * net.classCount)).map { _ in g.nextSymmetric(1) }
    func objective() -> Double {
        let y = net.predictLogits(x, batch: batch)
        return zip(y, r).reduce(0) { $0 + Double($1.0) * Double($1.1) }
    }
    net.zeroGradients()
    var mode = ForwardMode.inference
    _ = x.withUnsafeBufferPointer { net.forward($0.baseAddress!, batch: batch, mode: &mode) }
    let dx = r.withUnsafeBufferPointer { p -> [Float] in
        let d = net.backward(p.baseAddress!, batch: batch, needInputGradient: true)!
        return Array(UnsafeBufferPointer(start: d, count: batch * input.count))
    }
    let analytic = Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount))
    let h: Float = 1e-2
    func compare(_ name: String, _ i: Int, _ a: Float, _ numeric: Double) {
        let err = abs(Double(a) - numeric) / max(1, abs(numeric))
        if err > tolerance {
            XCTFail("\(name)[\(i)]: analytic \(a), numeric \(numeric)", file: file, line: line)
        }
    }
    for i in 0..<net.parameterCount {
        let old = net.parameters[i]
        net.parameters[i] = old + h
        let up = objective()
        net.parameters[i] = old - h
        let down = objective()
        net.parameters[i] = old
        compare("parameter", i, analytic[i], (up - down) / (2 * Double(h)))
    }
    for i in x.indices {
        let old = x[i]
        x[i] = old + h
        let up = objective()
        x[i] = old - h
        let down = objective()
        x[i] = old
        compare("input", i, dx[i], (up - down) / (2 * Double(h)))
    }
}

final class GradientCheckTests: XCTestCase {
    func testLinearOverTime() throws {
        // Linear applied at each of 3 time steps, then flatten and a classifier.
        try checkGradients(
            layers: [.linear(inputs: 4, outputs: 5), .flatten, .linear(inputs: 15, outputs: 3)],
            input: Shape(time: 3, channels: 4), batch: 2)
    }

    func testMLPWithReLU() throws {
        try checkGradients(
            layers: [.flatten, .linear(inputs: 6, outputs: 7), .relu, .linear(inputs: 7, outputs: 2)],
            input: Shape(time: 2, channels: 3), batch: 3)
    }

    func testGemmMatchesReference() {
        var g = SeededGenerator(seed: 3)
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 9, 33)] {
            for ta in [false, true] {
                for tb in [false, true] {
                    let a = (0..<(m * k)).map { _ in g.nextSymmetric(1) }
                    let b = (0..<(k * n)).map { _ in g.nextSymmetric(1) }
                    var c1 = [Float](repeating: 0.5, count: m * n), c2 = c1
                    BLAS.gemm(transposeA: ta, transposeB: tb, m: m, n: n, k: k, alpha: 0.7, a: a, lda: ta ? m : k, b: b, ldb: tb ? k : n, beta: 0.3, c: &c1, ldc: n)
                    BLAS.gemmReference(transposeA: ta, transposeB: tb, m: m, n: n, k: k, alpha: 0.7, a: a, lda: ta ? m : k, b: b, ldb: tb ? k : n, beta: 0.3, c: &c2, ldc: n)
                    assertClose(c1, c2, absolute: 1e-5, relative: 1e-5, "m \(m) n \(n) k \(k) ta \(ta) tb \(tb)")
                }
            }
        }
    }
}
