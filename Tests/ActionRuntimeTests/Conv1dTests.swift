@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// The im2col + GEMM convolution against its direct-loop reference on awkward shapes:
/// forward, weight, bias and input gradients.
final class Conv1dTests: XCTestCase {
    struct Case {
        var batch: Int, time: Int, inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int
    }

    static let cases: [Case] = [
        Case(batch: 1, time: 1, inputs: 1, outputs: 1, kernel: 1, stride: 1, dilation: 1, padding: 0),  // 1x1, pointwise
        Case(batch: 1, time: 1, inputs: 3, outputs: 5, kernel: 3, stride: 1, dilation: 1, padding: 1),  // T < K, padded
        Case(batch: 1, time: 3, inputs: 6, outputs: 11, kernel: 3, stride: 1, dilation: 2, padding: 2),  // T < dilated span
        Case(batch: 2, time: 4, inputs: 7, outputs: 9, kernel: 5, stride: 1, dilation: 1, padding: 2),  // the reference geometry
        Case(batch: 3, time: 9, inputs: 17, outputs: 13, kernel: 3, stride: 2, dilation: 2, padding: 1),
        Case(batch: 2, time: 10, inputs: 5, outputs: 3, kernel: 4, stride: 3, dilation: 1, padding: 0),
        Case(batch: 2, time: 8, inputs: 19, outputs: 6, kernel: 1, stride: 2, dilation: 1, padding: 0),  // K = 1, strided
        Case(batch: 2, time: 6, inputs: 9, outputs: 33, kernel: 1, stride: 1, dilation: 1, padding: 0),  // pointwise, B > 1
        Case(batch: 2, time: 5, inputs: 3, outputs: 4, kernel: 2, stride: 2, dilation: 3, padding: 3),  // padding > span/2
        Case(batch: 3, time: 45, inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2),  // reference conv1
        Case(batch: 1, time: 45, inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2),  // one window: 45 rows padded to 48
    ]

    /// Runs one forward and backward of `layer` on seeded data and compares output, dx, dW and
    /// dbias with the direct loops (backward must accumulate onto gradients that start at
    /// known values). Returns output and gradients for bit comparisons.
    @discardableResult
    func checkAgainstDirectLoops(
        _ layer: Conv1d, batch: Int, _ label: String, tolerance: Float = 1e-5, weightTolerance: Float = 1e-5
    ) throws -> [Float] {
        let P = layer.parameterCount
        var params = [Float](repeating: 0, count: P), grads = [Float](repeating: 0, count: P)
        var g = SeededGenerator(seed: 11)
        for i in 0..<P { grads[i] = g.nextSymmetric(1) }
        let before = grads
        let x = (0..<(batch * layer.inputTime * layer.inputs)).map { _ in g.nextSymmetric(1) }
        let dy = (0..<(batch * layer.outputTime * layer.outputs)).map { _ in g.nextSymmetric(1) }
        var result: [Float] = []
        try params.withUnsafeMutableBufferPointer { p in
            try grads.withUnsafeMutableBufferPointer { d in
                layer.bind(parameters: p.baseAddress!, gradients: d.baseAddress!)
                var initG = SeededGenerator(seed: 12)
                layer.initialize(using: &initG)
                try x.withUnsafeBufferPointer { xp in
                    var mode = ForwardMode.training(seed: 1)
                    let y = layer.forward(xp.baseAddress!, batch: batch, mode: &mode)
                    let yFast = Array(UnsafeBufferPointer(start: y, count: dy.count))
                    let t = tolerance
                    assertClose(yFast, layer.referenceForward(xp.baseAddress!, batch: batch), absolute: t, relative: t, "forward \(label)")
                    let dxFast = try dy.withUnsafeBufferPointer { dyp in
                        let dx = try XCTUnwrap(layer.backward(dyp.baseAddress!, batch: batch, needInputGradient: true))
                        return Array(UnsafeBufferPointer(start: dx, count: x.count))
                    }
                    let ref = dy.withUnsafeBufferPointer { layer.referenceBackward(xp.baseAddress!, $0.baseAddress!, batch: batch) }
                    assertClose(dxFast, ref.dx, absolute: t, relative: t, "dx \(label)")
                    let W = layer.outputs * layer.kernel * layer.inputs
                    let dW = (0..<W).map { d[$0] - before[$0] }, db = (W..<P).map { d[$0] - before[$0] }
                    assertClose(dW, ref.dWeight, absolute: weightTolerance, relative: t, "dW \(label)")
                    assertClose(db, ref.dBias, absolute: t, relative: t, "dbias \(label)")
                    result = yFast + dxFast + Array(d)
                }
            }
        }
        return result
    }

    static func makeConv(_ c: Case) throws -> Conv1d {
        let spec = LayerSpec.conv1d(
            inputs: c.inputs, outputs: c.outputs, kernel: c.kernel, stride: c.stride, dilation: c.dilation, padding: c.padding)
        return try XCTUnwrap(try makeLayer(spec, input: Shape(time: c.time, channels: c.inputs), path: "0") as? Conv1d)
    }

    func testIm2colMatchesDirectLoops() throws {
        // Each case whole, then in chunks of 1 and 2 batch elements (as large batches run), in
        // one part and split into 2 and 3 parts (as with 2 and 3 threads).
        for c in Self.cases {
            for chunk in [0, 1, 2] where chunk < c.batch {
                for parts in [1, 2, 3] {
                    let layer = try Self.makeConv(c)
                    layer.winogradMinimumBatch = .max
                    if chunk > 0 { layer.chunk = chunk }
                    layer.maxParts = parts
                    try checkAgainstDirectLoops(layer, batch: c.batch, "\(c), chunk \(layer.chunk), parts \(parts)")
                }
            }
        }
    }

    /// Stride-1 undilated geometries for Winograd: every kernel size it takes (2-7), output
    /// times that are not multiples of the tile, T < K, no/odd/large padding, channel counts
    /// below and not multiples of 8 (the transforms' vector width).
    static let winogradCases: [Case] = [
        Case(batch: 2, time: 7, inputs: 3, outputs: 4, kernel: 2, stride: 1, dilation: 1, padding: 0),
        Case(batch: 3, time: 11, inputs: 9, outputs: 5, kernel: 3, stride: 1, dilation: 1, padding: 1),
        Case(batch: 2, time: 9, inputs: 17, outputs: 10, kernel: 4, stride: 1, dilation: 1, padding: 3),
        Case(batch: 3, time: 13, inputs: 7, outputs: 19, kernel: 5, stride: 1, dilation: 1, padding: 2),  // reference geometry
        Case(batch: 2, time: 3, inputs: 8, outputs: 8, kernel: 5, stride: 1, dilation: 1, padding: 2),  // T < K
        Case(batch: 2, time: 10, inputs: 5, outputs: 6, kernel: 6, stride: 1, dilation: 1, padding: 0),
        Case(batch: 2, time: 12, inputs: 11, outputs: 3, kernel: 7, stride: 1, dilation: 1, padding: 4),  // P > K/2
        Case(batch: 3, time: 45, inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2),  // reference conv1
    ]

    func testWinogradMatchesDirectLoops() throws {
        for c in Self.winogradCases {
            let probe = try Self.makeConv(c)
            let w = try XCTUnwrap(probe.winograd, "\(c) should have a Winograd transform")
            // The tile size the layer picks, and every other one its kernel allows.
            let sizes = [w.m] + (2...(Winograd.maxAlpha - c.kernel + 1)).filter { $0 != w.m }
            for m in sizes {
                for (chunk, parts) in [(0, 1), (1, 1), (0, 2), (1, 3), (2, 2)] where chunk < c.batch {
                    let layer = try Self.makeConv(c)
                    layer.winograd = Winograd(m: m, r: c.kernel)
                    layer.winogradMinimumBatch = 1
                    if chunk > 0 { layer.chunk = chunk }
                    layer.maxParts = parts
                    // dW sums B·To products; Winograd's transforms (coefficients up to 16 for
                    // K = 5) make its rounding error a few times the direct sum's: 2.3e-5 vs
                    // 5.7e-6 at most for the reference conv1 case (values around 3, absolute
                    // sums around 30). The bound grows with the number of summed products.
                    let dWTolerance = max(1e-5, 3e-7 * Float(c.batch * layer.outputTime))
                    try checkAgainstDirectLoops(
                        layer, batch: c.batch, "\(c), F(\(m), \(c.kernel)), chunk \(chunk), parts \(parts)",
                        weightTolerance: dWTolerance)
                }
            }
        }
    }

    func testFormulationChoice() throws {
        // The reference layers: Winograd F(4, 5) (α = 8: 12 tiles of 4 outputs for To = 45)
        // from batch 8, im2col below; strided and 1-tap layers have no transform.
        let conv2 = try Self.makeConv(Case(batch: 1, time: 45, inputs: 64, outputs: 128, kernel: 5, stride: 1, dilation: 1, padding: 2))
        XCTAssertEqual(conv2.winograd?.m, 4)
        XCTAssertEqual(conv2.winograd?.alpha, 8)
        XCTAssertEqual(conv2.winogradMinimumBatch, 8)
        for c in Self.cases where c.stride != 1 || c.kernel == 1 {
            XCTAssertNil(try Self.makeConv(c).winograd, "\(c)")
        }
        // A dilated stride-1 layer's transform is sized for its phases (To/D outputs each):
        // the default model's D = 4 block (To = 32) has 8 per phase, F(4, 5) in 2 tiles each.
        let dilated = try Self.makeConv(Case(batch: 1, time: 32, inputs: 64, outputs: 64, kernel: 5, stride: 1, dilation: 4, padding: 8))
        XCTAssertEqual(dilated.winograd?.m, 4)
        // Fewer than 2 outputs in phase 0: no transform (To = 3, D = 2 has 2 and 1; To = 1 none).
        XCTAssertNotNil(try Self.makeConv(Case(batch: 1, time: 3, inputs: 6, outputs: 11, kernel: 3, stride: 1, dilation: 2, padding: 2)).winograd)
        XCTAssertNil(try Self.makeConv(Case(batch: 1, time: 5, inputs: 6, outputs: 11, kernel: 3, stride: 1, dilation: 3, padding: 1)).winograd)
        // A frozen layer (a loaded model) never takes an OpenBLAS formulation.
        for c in Self.cases + Self.winogradCases {
            let layer = try Self.makeConv(c)
            layer.setFrozen(true)
            let expected: Conv1d.Formulation =
                layer.winograd != nil ? .frozenWinograd : c.dilation == 1 || c.kernel == 1 ? .packed : .frozenIm2col
            for batch in [1, 7, 8, 64] { XCTAssertEqual(layer.formulation(batch: batch), expected, "\(c), batch \(batch)") }
        }
        XCTAssertEqual(Winograd.tileSize(kernel: 3, outputTime: 45), 5)  // 7·9 = 63 < 8·8 = 64
        XCTAssertEqual(Winograd.tileSize(kernel: 7, outputTime: 20), 2)  // only α = 8 fits
        XCTAssertNil(Winograd.tileSize(kernel: 8, outputTime: 20))
        XCTAssertNil(Winograd.tileSize(kernel: 3, outputTime: 1))
    }

    func testDilatedLayersTrainWithIm2col() throws {
        // The transform of a dilated layer is for its frozen phases only: an unfrozen layer
        // trains with im2col at every batch (its backward has no phase form), and its
        // gradients match the direct sums.
        let c = Case(batch: 9, time: 21, inputs: 5, outputs: 7, kernel: 5, stride: 1, dilation: 2, padding: 4)
        let layer = try Self.makeConv(c)
        XCTAssertNotNil(layer.winograd)
        for batch in [1, 8, 64] { XCTAssertEqual(layer.formulation(batch: batch), .im2col, "batch \(batch)") }
        try checkAgainstDirectLoops(layer, batch: c.batch, "unfrozen dilated")
        XCTAssertEqual(layer.lastFormulation, .im2col)
    }

    func testWinogradTransformsComputeTheCorrelation() throws {
        // y = Aᵀ((G·g) ⊙ (Bᵀ·d)) against y[p] = Σ_k g[k]·d[p + k], for every F(m, r) with α ≤ 8.
        var rng = SeededGenerator(seed: 3)
        for r in 1...7 {
            for m in 1...(Winograd.maxAlpha - r + 1) {
                let w = Winograd(m: m, r: r), a = w.alpha
                let d = (0..<a).map { _ in Double(rng.nextSymmetric(1)) }, g = (0..<r).map { _ in Double(rng.nextSymmetric(1)) }
                let Gg = (0..<a).map { i in (0..<r).reduce(0.0) { $0 + Double(w.G[i, $1]) * g[$1] } }
                let Bd = (0..<a).map { i in (0..<a).reduce(0.0) { $0 + Double(w.BT[i, $1]) * d[$1] } }
                for p in 0..<m {
                    let y = (0..<a).reduce(0.0) { $0 + Double(w.AT[p, $1]) * Gg[$1] * Bd[$1] }
                    let direct = (0..<r).reduce(0.0) { $0 + g[$1] * d[p + $1] }
                    XCTAssertEqual(y, direct, accuracy: 1e-5, "F(\(m), \(r)) output \(p)")
                }
                // The adjoints are the transposes.
                for i in 0..<a {
                    for j in 0..<a { XCTAssertEqual(w.B[j, i], w.BT[i, j]) }
                    for j in 0..<m { XCTAssertEqual(w.A[i, j], w.AT[j, i]) }
                    for j in 0..<r { XCTAssertEqual(w.GT[j, i], w.G[i, j]) }
                }
            }
        }
    }

    /// Training's transforms (`Winograd.apply`, C: AVX-512, AVX2 and portable) give the bits of
    /// the Swift reference `applyReference` on every instruction set this CPU has: every matrix
    /// of F(4, 5) and F(2, 3), column ranges that cut terms off, channel counts around the vector
    /// widths, and all three modes.
    func testWinogradApplyMatchesTheReferenceOnEveryInstructionSet() {
        defer { PackedGEMM.current = PackedGEMM.detected }
        var rng = SeededGenerator(seed: 12)
        let isas = PackedGEMM.InstructionSet.allCases.filter { $0.rawValue <= PackedGEMM.detected.rawValue }
        for w in [Winograd(m: 4, r: 5), Winograd(m: 2, r: 3)] {
            for M in [w.AT, w.A, w.G, w.GT, w.BT, w.B] {
                for (columns, channels) in [(0..<M.columns, 1), (0..<M.columns, 37), (1..<M.columns, 64), (0..<(M.columns - 1), 8), (0..<M.columns, 16)] {
                    let srcStride = channels + 3, dstStride = channels + 1
                    let src = (0..<(M.columns * srcStride)).map { _ in rng.nextSymmetric(1) }
                    let start = (0..<channels).map { _ in rng.nextSymmetric(1) }
                    let initial = (0..<(M.rows * dstStride)).map { _ in rng.nextSymmetric(1) }
                    for mode in 0..<3 {
                        func run(_ body: (UnsafeMutablePointer<Float>, Winograd.Mode) -> Void) -> [Float] {
                            var dst = initial
                            start.withUnsafeBufferPointer { st in
                                let m: Winograd.Mode = mode == 0 ? .assign : mode == 1 ? .accumulate : .start(st.baseAddress!)
                                dst.withUnsafeMutableBufferPointer { body($0.baseAddress!, m) }
                            }
                            return dst
                        }
                        let expected = run { dst, m in
                            Winograd.applyReference(
                                M, rows: 0..<M.rows, columns: columns, src: src, srcStride: srcStride, dst: dst, dstStride: dstStride,
                                channels: channels, mode: m)
                        }
                        for isa in isas {
                            PackedGEMM.current = isa
                            let got = run { dst, m in
                                Winograd.apply(
                                    M, rows: 0..<M.rows, columns: columns, src: src, srcStride: srcStride, dst: dst, dstStride: dstStride,
                                    channels: channels, mode: m)
                            }
                            XCTAssertEqual(got.map(\.bitPattern), expected.map(\.bitPattern), "\(isa) \(M.rows)x\(M.columns) \(columns) \(channels) mode \(mode)")
                        }
                        XCTAssertNotEqual(expected, initial)
                    }
                }
            }
        }
    }

    func testSplitsAreDeterministicAndAgree() throws {
        // The same split twice gives the same bits; 1, 2 and 3 parts agree to rounding.
        let c = Case(batch: 9, time: 20, inputs: 12, outputs: 16, kernel: 5, stride: 1, dilation: 1, padding: 2)
        for winograd in [false, true] {
            var runs: [Int: [Float]] = [:]
            for parts in [1, 2, 3, 2] {
                let layer = try Self.makeConv(c)
                layer.winogradMinimumBatch = winograd ? 1 : .max
                layer.maxParts = parts
                let out = try checkAgainstDirectLoops(layer, batch: c.batch, "parts \(parts), winograd \(winograd)")
                if let earlier = runs[parts] {
                    XCTAssertEqual(out.map(\.bitPattern), earlier.map(\.bitPattern), "parts \(parts) twice")
                }
                if let one = runs[1] { assertClose(out, one, absolute: 1e-5, relative: 1e-5, "parts \(parts) vs 1") }
                runs[parts] = out
            }
        }
    }

    func testOutputLengthAndInitialisationBound() throws {
        // (T + 2P − D(K − 1) − 1)/S + 1 = (10 + 2 − 6 − 1)/2 + 1 = 3.
        let net = try Network(
            layers: [.conv1d(inputs: 4, outputs: 6, kernel: 4, stride: 2, dilation: 2, padding: 1), .flatten],
            input: Shape(time: 10, channels: 4))
        XCTAssertEqual(net.outputShape, Shape(time: 1, channels: 18))
        XCTAssertEqual(net.tensors.map(\.shape), [[6, 4, 4], [6]])
        net.initialize(seed: 3)
        let values = Array(UnsafeBufferPointer(start: net.parameters, count: net.parameterCount))
        let bound: Float = 1 / (4 * 4 as Float).squareRoot()  // 1/√(inputs·kernel) = 0.25
        XCTAssertLessThanOrEqual(values.map(abs).max()!, bound)
        XCTAssertGreaterThan(values.map(abs).max()!, 0.8 * bound, "the values should fill U(±0.25)")
    }
}
