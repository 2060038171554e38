@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// Finite-difference checks of every layer's parameter and input gradients (see
/// `GradientChecker` for the objective and the tolerances). Shapes are tiny: each check runs
/// two forwards per parameter and per input value in a debug build.
final class GradientCheckTests: XCTestCase {
    func testCheckerCatchesAGradientOffByOnePercent() throws {
        let net = try Network(layers: [.flatten, .linear(inputs: 6, outputs: 3)], input: Shape(time: 2, channels: 3))
        net.initialize(seed: 5)
        let x: [Float] = (0..<12).map { Float($0) / 6 - 1 }, r: [Float] = [1, -0.5, 0.75, 0.25, -1, 0.5]
        let checker = GradientChecker()
        let right = checker.mismatches(net: net, x: x, batch: 2, r: r, trainingSeed: nil)
        XCTAssertTrue(right.mismatches.isEmpty, "\(right.mismatches)")
        let wrong = checker.mismatches(net: net, x: x, batch: 2, r: r, trainingSeed: nil, backwardScale: 1.01)
        XCTAssertFalse(wrong.mismatches.isEmpty, "a 1% error in every gradient went unnoticed")
    }

    func testLinearOverTime() throws {
        // Linear applied at each of 3 time steps, then flatten and a classifier.
        try checkGradients(
            layers: [.linear(inputs: 4, outputs: 5), .flatten, .linear(inputs: 15, outputs: 3)],
            input: Shape(time: 3, channels: 4), batch: 2)
    }

    func testMLPWithReLU() throws {
        // ReLU kinks: with this seed no pre-activation lies within h of 0.
        try checkGradients(
            layers: [.flatten, .linear(inputs: 6, outputs: 7), .relu, .linear(inputs: 7, outputs: 2)],
            input: Shape(time: 2, channels: 3), batch: 3)
    }

    func testGELU() throws {
        // Inputs up to ±3 cover the tails where tanh saturates.
        try checkGradients(
            layers: [.linear(inputs: 3, outputs: 4), .gelu, .flatten, .linear(inputs: 8, outputs: 3)],
            input: Shape(time: 2, channels: 3), batch: 2, inputScale: 3)
    }

    func testLayerNormWithNonTrivialGammaAndBeta() throws {
        try checkGradients(
            layers: [.linear(inputs: 3, outputs: 5), .layerNorm(channels: 5, epsilon: 1e-5), .flatten, .linear(inputs: 10, outputs: 3)],
            input: Shape(time: 2, channels: 3), batch: 2, jitter: 0.5)
    }

    func testLayerNormOnInputWithLargeEpsilon() throws {
        // ε comparable to the variance makes an ε misplaced in backward visible.
        try checkGradients(
            layers: [.layerNorm(channels: 4, epsilon: 0.5), .flatten, .linear(inputs: 12, outputs: 2)],
            input: Shape(time: 3, channels: 4), batch: 2, jitter: 0.5)
    }

    /// Multi-stream members over their own channels, flip averaging around them, dropout in
    /// training mode: the body's shared parameters get the gradients of both passes.
    func testFlipAverageOverStreamsInTrainingMode() throws {
        let member: (Int) -> [LayerSpec] = { c in
            [
                .conv1d(inputs: c, outputs: 3, kernel: 3, stride: 1, dilation: 1, padding: 1), .layerNorm(channels: 3, epsilon: 1e-5), .gelu,
                .dropout(rate: 0.3), .globalAveragePool, .linear(inputs: 3, outputs: 3),
            ]
        }
        let streams: LayerSpec = .averageProbabilities([
            [.selectChannels([0, 1, 2])] + member(3), [.selectChannels([3, 1])] + member(2), [.selectChannels([0, 1, 2])] + member(3),
        ])
        try checkGradients(
            layers: [.flipAverage(channels: [1, 0, 3, 2], signs: [-1, 1, 1, -1], body: [streams])], input: Shape(time: 3, channels: 4),
            batch: 2, jitter: 0.3, trainingSeed: 11)
    }

    func testDropoutInTrainingMode() throws {
        // The same seed gives the same mask in every forward, so the objective is smooth.
        try checkGradients(
            layers: [.linear(inputs: 3, outputs: 6), .dropout(rate: 0.4), .flatten, .linear(inputs: 12, outputs: 2)],
            input: Shape(time: 2, channels: 3), batch: 3, trainingSeed: 42)
    }

    func testDropoutAtInference() throws {
        try checkGradients(
            layers: [.dropout(rate: 0.4), .flatten, .linear(inputs: 6, outputs: 2)],
            input: Shape(time: 2, channels: 3), batch: 2)
    }

    // MARK: Conv1d: parameters and inputs for every geometry

    func conv(_ i: Int, _ o: Int, k: Int, s: Int = 1, d: Int = 1, p: Int = 0) -> LayerSpec {
        .conv1d(inputs: i, outputs: o, kernel: k, stride: s, dilation: d, padding: p)
    }

    func testConvPaddedSameLength() throws {
        try checkGradients(layers: [conv(3, 4, k: 3, p: 1), .flatten], input: Shape(time: 5, channels: 3), batch: 2)
    }

    func testConvStrideTwoNoPadding() throws {
        try checkGradients(layers: [conv(2, 3, k: 3, s: 2), .flatten], input: Shape(time: 7, channels: 2), batch: 2)
    }

    func testConvDilationTwo() throws {
        try checkGradients(layers: [conv(3, 2, k: 2, d: 2), .flatten], input: Shape(time: 6, channels: 3), batch: 2)
    }

    func testConvStrideDilationAndPaddingOnASequenceShorterThanTheKernel() throws {
        // Span D(K−1)+1 = 5 > T = 4; padding 2 makes room. Output time (4 + 4 − 5)/2 + 1 = 2.
        try checkGradients(layers: [conv(2, 3, k: 3, s: 2, d: 2, p: 2), .flatten], input: Shape(time: 4, channels: 2), batch: 2)
    }

    func testConvPointwise() throws {
        try checkGradients(layers: [conv(3, 2, k: 1), .flatten], input: Shape(time: 3, channels: 3), batch: 2)
    }

    func testConvStackLikeTheReferenceNet() throws {
        // Conv(k5, pad 2) → GELU → Conv(k5, pad 2) → mean over time → Linear: the reference
        // convnet's structure with a smooth activation.
        try checkGradients(
            layers: [
                conv(3, 4, k: 5, p: 2), .gelu, conv(4, 5, k: 5, p: 2), .globalAveragePool, .linear(inputs: 5, outputs: 3),
            ],
            input: Shape(time: 4, channels: 3), batch: 2)
    }

    // MARK: Pooling

    func testGlobalAveragePool() throws {
        try checkGradients(
            layers: [.linear(inputs: 3, outputs: 4), .globalAveragePool, .linear(inputs: 4, outputs: 2)],
            input: Shape(time: 5, channels: 3), batch: 2)
    }

    /// Uneven segments (T = 7: levels 1, 2, 3 give 0..<7, 0..<3, 3..<7, 0..<2, 2..<4, 4..<7),
    /// after a layer with parameters so that the pooling's input gradient is checked too.
    func testTemporalPyramidPool() throws {
        try checkGradients(
            layers: [.linear(inputs: 3, outputs: 4), .temporalPyramidPool(levels: [1, 2, 3]), .linear(inputs: 24, outputs: 2)],
            input: Shape(time: 7, channels: 3), batch: 3)
    }

    /// A magnitude `y = √(a² + b²)` bends by about `1/y`, so a step of 1e-2 misses by up to
    /// `h²/y` where a frequency is weak; the Fourier pyramid's checks step by 1e-3 (float32's
    /// rounding over 2h is still below 1e-4 here).
    static let magnitudeChecker = GradientChecker(h: 1e-3)

    /// Uneven segments (T = 7: levels 1, 2, 3 give 7, 3, 4, 2, 2, 3 frames) and 3 frequencies
    /// (the 2-frame segments have 2, their second one real, the 3-frame ones 2 as well), after a
    /// layer with parameters so that the pyramid's input gradient is checked; several seeds.
    func testFourierPyramid() throws {
        for seed in [1, 2, 3] as [UInt64] {
            try checkGradients(
                layers: [
                    .linear(inputs: 3, outputs: 4), .fourierPyramid(levels: [1, 2, 3], coefficients: 3),
                    .linear(inputs: 4 * 6 * 3, outputs: 2),
                ],
                input: Shape(time: 7, channels: 3), batch: 3, seed: seed, checker: Self.magnitudeChecker)
        }
    }

    /// The FTP member's chain: pyramid, standardize (negative and large scales), linear.
    func testStandardizeAfterTheFourierPyramid() throws {
        let C = 2 * 3 * 2
        try checkGradients(
            layers: [
                .linear(inputs: 2, outputs: 2), .fourierPyramid(levels: [1, 2], coefficients: 2),
                .standardize(mean: (0..<C).map { Float($0) * 0.1 - 0.4 }, scale: (0..<C).map { Float($0 % 5) * 0.75 - 1.25 }),
                .linear(inputs: C, outputs: 2),
            ],
            input: Shape(time: 5, channels: 2), batch: 2, checker: Self.magnitudeChecker)
    }

    func testGlobalMaxPool() throws {
        // Distinct inputs at least 0.05 apart, so ±h (0.01) never changes which time step is the max.
        let T = 4, C = 3, B = 2
        var g = SeededGenerator(seed: 8)
        var values = (0..<(B * T * C)).map { Float($0) * 0.05 - 0.6 }
        values.seededShuffle(using: &g)
        try checkGradients(
            layers: [.globalMaxPool, .linear(inputs: C, outputs: 2)], input: Shape(time: T, channels: C), batch: B, x: values)
    }

    // MARK: Residual blocks

    func testResidualWithIdentityShortcut() throws {
        try checkGradients(
            layers: [
                .residual(body: [.linear(inputs: 3, outputs: 4), .gelu, .linear(inputs: 4, outputs: 3)], shortcut: []),
                .flatten, .linear(inputs: 6, outputs: 2),
            ],
            input: Shape(time: 2, channels: 3), batch: 2)
    }

    func testResidualWithStridedConvAndProjectionShortcut() throws {
        try checkGradients(
            layers: [
                .residual(
                    body: [conv(2, 3, k: 3, s: 2, p: 1), .layerNorm(channels: 3, epsilon: 1e-5), .gelu],
                    shortcut: [conv(2, 3, k: 1, s: 2)]),
                .globalAveragePool, .linear(inputs: 3, outputs: 2),
            ],
            input: Shape(time: 5, channels: 2), batch: 2, jitter: 0.3)
    }

    func testNestedResidualBlocks() throws {
        let inner = LayerSpec.residual(body: [conv(3, 3, k: 3, d: 2, p: 2), .gelu], shortcut: [])
        try checkGradients(
            layers: [
                .residual(body: [inner, .linear(inputs: 3, outputs: 3)], shortcut: [.linear(inputs: 3, outputs: 3)]),
                .residual(body: [inner], shortcut: []),
                .flatten, .linear(inputs: 12, outputs: 2),
            ],
            input: Shape(time: 4, channels: 3), batch: 2)
    }

    func testGemmMatchesReference() {
        var g = SeededGenerator(seed: 3)
        for (m, n, k) in [(1, 1, 1), (1, 7, 13), (1, 300, 5), (3, 5, 7), (17, 9, 33)] {
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

    /// With 2 threads a large product is cut into blocks of C's columns (m ≤ n) or rows, each
    /// computed by one thread: every block, with strides wider than the matrices, must land in
    /// its place, and the padding between rows stay untouched.
    func testGemmSplitOverThreadsMatchesReference() {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        BLAS.threads = 2
        var g = SeededGenerator(seed: 4)
        for (m, n, k) in [(40, 333, 100), (333, 40, 100), (64, 70, 2565)] {
            XCTAssertEqual(BLAS.gemmParts(m: m, n: n, k: k), 2, "m \(m) n \(n) k \(k) must be split")
            for ta in [false, true] {
                for tb in [false, true] {
                    let lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3
                    let a = (0..<((ta ? k : m) * lda)).map { _ in g.nextSymmetric(1) }
                    let b = (0..<((tb ? n : k) * ldb)).map { _ in g.nextSymmetric(1) }
                    var c1 = (0..<(m * ldc)).map { _ in g.nextSymmetric(1) }, c2 = c1
                    BLAS.gemm(transposeA: ta, transposeB: tb, m: m, n: n, k: k, alpha: 0.7, a: a, lda: lda, b: b, ldb: ldb, beta: 0.3, c: &c1, ldc: ldc)
                    BLAS.gemmReference(transposeA: ta, transposeB: tb, m: m, n: n, k: k, alpha: 0.7, a: a, lda: lda, b: b, ldb: ldb, beta: 0.3, c: &c2, ldc: ldc)
                    assertClose(c1, c2, absolute: 1e-4, relative: 1e-4, "m \(m) n \(n) k \(k) ta \(ta) tb \(tb)")
                    for i in 0..<m {
                        for j in n..<ldc { XCTAssertEqual(c1[i * ldc + j], c2[i * ldc + j], "padding of row \(i) changed") }
                    }
                }
            }
        }
        XCTAssertEqual(BLAS.gemmParts(m: 8, n: 8, k: 8), 1, "a small product stays whole")
    }
}
