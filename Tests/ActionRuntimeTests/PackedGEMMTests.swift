@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// The runtime's own kernel (`PackedGEMM`, C in Sources/CKernels) against the Double
/// reference on awkward shapes, for every instruction set this CPU has; and the frozen
/// convolution path that uses it.
final class PackedGEMMTests: XCTestCase {
    /// The kernels this machine can run, the best last.
    static var available: [PackedGEMM.InstructionSet] {
        PackedGEMM.InstructionSet.allCases.filter { $0.rawValue <= PackedGEMM.detected.rawValue }
    }

    override func tearDown() {
        PackedGEMM.current = PackedGEMM.detected
    }

    /// `bias + A·B` with A's rows `lda` apart (overlapping when lda < k), B = btᵀ, in Double.
    func reference(m: Int, n: Int, k: Int, a: [Float], lda: Int, bt: [Float], bias: [Float]?) -> [Float] {
        var c = [Float](repeating: 0, count: m * n)
        for i in 0..<m {
            for j in 0..<n {
                var s = Double(bias?[j] ?? 0)
                for r in 0..<k { s += Double(a[i * lda + r]) * Double(bt[j * k + r]) }
                c[i * n + j] = Float(s)
            }
        }
        return c
    }

    /// Runs the kernel on columns of `panels` into a C prefilled with a sentinel, with C's row
    /// stride one wider than n (so that a store past the row would show).
    func run(
        m: Int, n: Int, k: Int, a: [Float], lda: Int, bt: [Float], bias: [Float]?, panels: Range<Int>? = nil
    ) -> [Float] {
        let ldc = n + 1, sentinel: Float = -7777
        let packed = bt.withUnsafeBufferPointer { PackedGEMM.packed(transposed: $0.baseAddress!, n: n, k: k) }
        var c = [Float](repeating: sentinel, count: m * ldc)
        a.withUnsafeBufferPointer { ap in
            c.withUnsafeMutableBufferPointer { cp in
                (bias ?? []).withUnsafeBufferPointer { bp in
                    PackedGEMM.multiply(
                        m: m, n: n, k: k, a: ap.baseAddress!, lda: lda, packed: packed.pointer, bias: bias == nil ? nil : bp.baseAddress,
                        c: cp.baseAddress!, ldc: ldc, panels: panels)
                }
            }
        }
        return c
    }

    func testMatchesReferenceOnAwkwardShapes() {
        var g = SeededGenerator(seed: 5)
        // m around the tile heights (6, 12), n around the panel width (16) and the two-panel
        // tile (32), k from 1; lda = k (plain), lda < k (overlapping rows, a convolution), lda > k.
        let shapes: [(m: Int, n: Int, k: Int, lda: Int)] = [
            (1, 1, 1, 1), (5, 15, 7, 7), (6, 16, 9, 9), (7, 17, 3, 1), (12, 32, 20, 4), (13, 33, 11, 11),
            (25, 48, 30, 6), (45, 64, 25, 5), (2, 70, 5, 8), (19, 100, 64, 64),
        ]
        for isa in Self.available {
            PackedGEMM.current = isa
            XCTAssertEqual(PackedGEMM.current, isa)
            for s in shapes {
                let a = (0..<((s.m - 1) * s.lda + s.k)).map { _ in g.nextSymmetric(2) }
                let bt = (0..<(s.n * s.k)).map { _ in g.nextSymmetric(1) }
                for withBias in [false, true] {
                    let bias = withBias ? (0..<s.n).map { _ in g.nextSymmetric(3) } : nil
                    let c = run(m: s.m, n: s.n, k: s.k, a: a, lda: s.lda, bt: bt, bias: bias)
                    let expected = reference(m: s.m, n: s.n, k: s.k, a: a, lda: s.lda, bt: bt, bias: bias)
                    let got = (0..<s.m).flatMap { i in c[(i * (s.n + 1))..<(i * (s.n + 1) + s.n)] }
                    assertClose(got, expected, absolute: 1e-5, relative: 1e-5, "\(isa) \(s) bias \(withBias)")
                    // The column past each row (C's stride is n + 1) is never written.
                    for i in 0..<s.m { XCTAssertEqual(c[i * (s.n + 1) + s.n], -7777, "\(isa) \(s) row \(i) overran") }
                }
            }
        }
    }

    /// Long sums and many rows run in blocks (256 steps of the sum, 96 rows); every output is
    /// still one chain of fused multiply-adds `bias + a₀b₀ + a₁b₁ + ...` in order, so AVX2 and
    /// AVX-512 give exactly the bits of that chain computed one value at a time, on shapes that
    /// cross the block boundaries (k = 255-257, 600 and 2565, rows 95-97 and 200), partial panels
    /// and rows that overlap.
    func testBlockedSumsAreOneFusedChainPerOutput() {
        var g = SeededGenerator(seed: 8)
        let shapes: [(m: Int, n: Int, k: Int, lda: Int)] = [
            (97, 20, 257, 257), (96, 33, 256, 256), (95, 16, 255, 255), (200, 40, 600, 7), (13, 50, 2565, 2565), (1, 17, 300, 300),
        ]
        for isa in Self.available where isa != .portable {
            PackedGEMM.current = isa
            for s in shapes {
                let a = (0..<((s.m - 1) * s.lda + s.k)).map { _ in g.nextSymmetric(1) }
                let bt = (0..<(s.n * s.k)).map { _ in g.nextSymmetric(1) }
                let bias = (0..<s.n).map { _ in g.nextSymmetric(1) }
                let c = run(m: s.m, n: s.n, k: s.k, a: a, lda: s.lda, bt: bt, bias: bias)
                for i in 0..<s.m {
                    for j in 0..<s.n {
                        var e = bias[j]  // e + a·b rounded once: a fused multiply-add
                        for r in 0..<s.k { e = e.addingProduct(a[i * s.lda + r], bt[j * s.k + r]) }
                        XCTAssertEqual(c[i * (s.n + 1) + j].bitPattern, e.bitPattern, "\(isa) \(s) (\(i), \(j))")
                    }
                }
            }
        }
    }

    func testPanelRangesWriteOnlyTheirColumns() {
        // n = 50: panels 0-15, 16-31, 32-47, 48-49. Panels 1..<3 write columns 16..<48 only,
        // and the union of disjoint ranges equals the whole product, bit for bit.
        var g = SeededGenerator(seed: 6)
        let m = 14, n = 50, k = 13, lda = 3
        let a = (0..<((m - 1) * lda + k)).map { _ in g.nextSymmetric(1) }, bt = (0..<(n * k)).map { _ in g.nextSymmetric(1) }
        let bias = (0..<n).map { _ in g.nextSymmetric(1) }
        for isa in Self.available {
            PackedGEMM.current = isa
            let whole = run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias)
            let middle = run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias, panels: 1..<3)
            let ends = [
                run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias, panels: 0..<1),
                run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias, panels: 3..<4),
            ]
            for i in 0..<m {
                for j in 0..<n {
                    let at = i * (n + 1) + j
                    if (16..<48).contains(j) {
                        XCTAssertEqual(middle[at].bitPattern, whole[at].bitPattern, "\(isa) (\(i), \(j))")
                        XCTAssertEqual(ends[0][at], -7777)
                        XCTAssertEqual(ends[1][at], -7777)
                    } else {
                        XCTAssertEqual(middle[at], -7777, "\(isa) (\(i), \(j)) written outside panels 1..<3")
                        XCTAssertEqual((j < 16 ? ends[0] : ends[1])[at].bitPattern, whole[at].bitPattern, "\(isa) (\(i), \(j))")
                    }
                }
            }
        }
    }

    func testAVX2AndAVX512GiveTheSameBits() throws {
        // Both sum bias + Σ_r a·b in r order with one fused multiply-add per term.
        guard PackedGEMM.detected == .avx512 else { throw XCTSkip("this CPU has no AVX-512 (\(PackedGEMM.detected))") }
        var g = SeededGenerator(seed: 7)
        let m = 45, n = 40, k = 35, lda = 7
        let a = (0..<((m - 1) * lda + k)).map { _ in g.nextSymmetric(1) }, bt = (0..<(n * k)).map { _ in g.nextSymmetric(1) }
        let bias = (0..<n).map { _ in g.nextSymmetric(1) }
        // And one row in four chains (multiplyRow), k = 35 leaving a tail of 3.
        let packed = bt.withUnsafeBufferPointer { PackedGEMM.packed(transposed: $0.baseAddress!, n: n, k: k) }
        func row() -> [Float] {
            var c = [Float](repeating: 0, count: n)
            c.withUnsafeMutableBufferPointer { cp in
                a.withUnsafeBufferPointer { ap in
                    bias.withUnsafeBufferPointer {
                        PackedGEMM.multiplyRow(
                            n: n, k: k, a: ap.baseAddress!, packed: packed.pointer, bias: $0.baseAddress!, c: cp.baseAddress!)
                    }
                }
            }
            return c
        }
        PackedGEMM.current = .avx2
        let avx2 = run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias), row2 = row()
        PackedGEMM.current = .avx512
        let avx512 = run(m: m, n: n, k: k, a: a, lda: lda, bt: bt, bias: bias), row512 = row()
        XCTAssertEqual(avx2.map(\.bitPattern), avx512.map(\.bitPattern))
        XCTAssertEqual(row2.map(\.bitPattern), row512.map(\.bitPattern))
        let expected = reference(m: 1, n: n, k: k, a: a, lda: k, bt: bt, bias: bias)
        assertClose(row512, expected, absolute: 1e-5, relative: 1e-5, "multiplyRow")
    }

    /// A batch-1 row against a few weight rows (`dotRows`, a classifier head): the same bits on
    /// every instruction set, the portable loop included, and the double-precision sums to
    /// rounding; k from a tail alone to several blocks of 32 with a tail.
    func testDotRowsGiveTheSameBitsOnEveryInstructionSet() {
        defer { PackedGEMM.current = PackedGEMM.detected }
        var g = SeededGenerator(seed: 8)
        for (n, k) in [(1, 3), (6, 8), (6, 37), (8, 100), (3, 2352)] {
            let a = (0..<k).map { _ in g.nextSymmetric(1) }, w = (0..<(n * k)).map { _ in g.nextSymmetric(1) }
            let bias = (0..<n).map { _ in g.nextSymmetric(1) }
            let expected = (0..<n).map { o in Double(bias[o]) + (0..<k).reduce(0.0) { $0 + Double(a[$1]) * Double(w[o * k + $1]) } }
            var first: [UInt32]?
            for isa in PackedGEMM.InstructionSet.allCases where isa.rawValue <= PackedGEMM.detected.rawValue {
                PackedGEMM.current = isa
                var c = [Float](repeating: -7777, count: n + 1)
                PackedGEMM.dotRows(n: n, k: k, a: a, w: w, bias: bias, c: &c)
                XCTAssertEqual(c[n], -7777, "\(isa) n \(n) k \(k): written past n")
                for o in 0..<n { XCTAssertEqual(Double(c[o]), expected[o], accuracy: 1e-5 * Double(k).squareRoot(), "\(isa) n \(n) k \(k)") }
                XCTAssertEqual(c.map(\.bitPattern), first ?? c.map(\.bitPattern), "\(isa) n \(n) k \(k)")
                first = first ?? c.map(\.bitPattern)
            }
        }
    }

    func testPackLayout() {
        // packed[(p·k + r)·16 + j] = bt[(16p + j)·k + r], zeros past n.
        let n = 18, k = 3
        let bt = (0..<(n * k)).map { Float($0 + 1) }
        let packed = Buffer(capacity: PackedGEMM.packedCount(n: n, k: k))
        XCTAssertEqual(PackedGEMM.packedCount(n: n, k: k), 2 * k * 16)
        bt.withUnsafeBufferPointer { PackedGEMM.pack(transposed: $0.baseAddress!, n: n, k: k, into: packed.pointer) }
        XCTAssertEqual(packed.pointer[0], 1)  // column 0, row 0
        XCTAssertEqual(packed.pointer[1], Float(k + 1))  // column 1, row 0
        XCTAssertEqual(packed.pointer[16 + 2], Float(2 * k + 2))  // column 2, row 1
        XCTAssertEqual(packed.pointer[(1 * k + 2) * 16 + 1], Float(17 * k + 3))  // column 17, row 2
        XCTAssertEqual(packed.pointer[(1 * k + 2) * 16 + 2], 0)  // column 18 does not exist
    }

    func testTransformMatchesReference() {
        // Every column count 1-8, rows 1-8, channel counts around the vector widths (8, 16),
        // with and without a start row; AVX2 and AVX-512 give the same bits.
        var results: [PackedGEMM.InstructionSet: [Float]] = [:]
        for isa in Self.available {
            PackedGEMM.current = isa
            var g = SeededGenerator(seed: 9)  // the same data for every kernel
            var all: [Float] = []
            for cols in 1...8 {
                for (rows, channels) in [(1, 1), (8, 7), (4, 16), (8, 57), (3, 33)] {
                    let ldm = cols + 2, srcStride = channels + 3, dstStride = channels + 1
                    var mat = (0..<(rows * ldm)).map { _ in g.nextSymmetric(2) }
                    mat[0] = 0  // a zero coefficient
                    let src = (0..<(cols * srcStride)).map { _ in g.nextSymmetric(1) }
                    let start = (0..<channels).map { _ in g.nextSymmetric(1) }
                    for withStart in [false, true] {
                        var dst = [Float](repeating: -7777, count: rows * dstStride)
                        mat.withUnsafeBufferPointer { mp in
                            src.withUnsafeBufferPointer { sp in
                                start.withUnsafeBufferPointer { st in
                                    dst.withUnsafeMutableBufferPointer { dp in
                                        PackedGEMM.transform(
                                            rows: rows, cols: cols, m: mp.baseAddress!, ldm: ldm, src: sp.baseAddress!,
                                            srcStride: srcStride, start: withStart ? st.baseAddress! : nil, dst: dp.baseAddress!,
                                            dstStride: dstStride, channels: channels)
                                    }
                                }
                            }
                        }
                        for i in 0..<rows {
                            for c in 0..<channels {
                                var e = withStart ? Double(start[c]) : 0
                                for j in 0..<cols { e += Double(mat[i * ldm + j]) * Double(src[j * srcStride + c]) }
                                XCTAssertEqual(Double(dst[i * dstStride + c]), e, accuracy: 1e-5, "\(isa) cols \(cols) (\(i), \(c))")
                            }
                            XCTAssertEqual(dst[i * dstStride + channels], -7777, "\(isa) row \(i) overran")
                        }
                        all += dst
                    }
                }
            }
            results[isa] = all
        }
        if let a = results[.avx2], let b = results[.avx512] { XCTAssertEqual(a.map(\.bitPattern), b.map(\.bitPattern)) }
    }

    // MARK: - The frozen convolution

    func testFrozenConvolutionMatchesDirectLoops() throws {
        // A frozen layer takes a packed path: Winograd with packed U for stride 1 and kernels
        // 2-7 (any batch, in chunks of tiles), otherwise the direct product (dilation 1) or
        // im2col (dilated), both times the packed weight. Every kernel, 1-3 parts (whole
        // windows or panels); the parts give identical bits.
        typealias Case = Conv1dTests.Case
        let cases =
            Conv1dTests.cases + Conv1dTests.winogradCases + [
                Case(batch: 9, time: 13, inputs: 7, outputs: 19, kernel: 5, stride: 1, dilation: 1, padding: 2),  // Winograd, batch ≥ 8
                Case(batch: 7, time: 12, inputs: 5, outputs: 40, kernel: 3, stride: 2, dilation: 1, padding: 1),
                Case(batch: 2, time: 45, inputs: 64, outputs: 128, kernel: 5, stride: 1, dilation: 1, padding: 2),  // conv2
            ]
        for isa in Self.available {
            PackedGEMM.current = isa
            for c in cases {
                var first: [Float]?
                for parts in [1, 2, 3] {
                    let layer = try Conv1dTests.makeConv(c)
                    layer.maxParts = parts
                    if c.batch == 9 { layer.packedChunk = 5 }  // chunks of 5 tiles: 36 tiles per part, or 12
                    var g = SeededGenerator(seed: 8)
                    let params = Buffer(capacity: layer.parameterCount), grads = Buffer(capacity: layer.parameterCount)
                    layer.bind(parameters: params.pointer, gradients: grads.pointer)
                    layer.initialize(using: &g)
                    layer.setFrozen(true)
                    let x = (0..<(c.batch * c.time * c.inputs)).map { _ in g.nextSymmetric(1) }
                    let y = x.withUnsafeBufferPointer { xp -> [Float] in
                        var mode = ForwardMode.inference
                        let out = layer.forward(xp.baseAddress!, batch: c.batch, mode: &mode)
                        let y = Array(UnsafeBufferPointer(start: out, count: c.batch * layer.outputTime * c.outputs))
                        // Twice: the padded buffer is reused.
                        let again = layer.forward(xp.baseAddress!, batch: c.batch, mode: &mode)
                        XCTAssertEqual(Array(UnsafeBufferPointer(start: again, count: y.count)), y, "\(c) twice")
                        assertClose(y, layer.referenceForward(xp.baseAddress!, batch: c.batch), absolute: 1e-5, relative: 1e-5, "\(isa) \(c) parts \(parts)")
                        return y
                    }
                    if let first { XCTAssertEqual(y.map(\.bitPattern), first.map(\.bitPattern), "\(isa) \(c): \(parts) parts vs 1") }
                    first = first ?? y
                }
            }
        }
    }

    func testFrozenLinearMatchesReference() throws {
        // Rows 1 (panels split), 13 and 40 (rows split in blocks of 12), outputs around the
        // panel width; 1-3 parts give the same bits.
        for isa in Self.available {
            PackedGEMM.current = isa
            for (rows, inputs, outputs) in [(1, 9, 40), (13, 33, 17), (40, 5, 6), (3, 1, 1)] {
                var first: [Float]?
                for parts in [1, 2, 3] {
                    let layer = try XCTUnwrap(
                        try makeLayer(.linear(inputs: inputs, outputs: outputs), input: Shape(time: 1, channels: inputs), path: "0")
                            as? Linear)
                    layer.maxParts = parts
                    var g = SeededGenerator(seed: 10)
                    let params = Buffer(capacity: layer.parameterCount), grads = Buffer(capacity: layer.parameterCount)
                    layer.bind(parameters: params.pointer, gradients: grads.pointer)
                    layer.initialize(using: &g)
                    let x = (0..<(rows * inputs)).map { _ in g.nextSymmetric(2) }
                    var mode = ForwardMode.inference
                    let plain = x.withUnsafeBufferPointer {
                        Array(UnsafeBufferPointer(start: layer.forward($0.baseAddress!, batch: rows, mode: &mode), count: rows * outputs))
                    }
                    layer.setFrozen(true)
                    let y = x.withUnsafeBufferPointer {
                        Array(UnsafeBufferPointer(start: layer.forward($0.baseAddress!, batch: rows, mode: &mode), count: rows * outputs))
                    }
                    let W = params.pointer, b = params.pointer + outputs * inputs
                    let expected = (0..<(rows * outputs)).map { e -> Float in
                        let r = e / outputs, o = e % outputs
                        return Float((0..<inputs).reduce(Double(b[o])) { $0 + Double(W[o * inputs + $1]) * Double(x[r * inputs + $1]) })
                    }
                    let label = "\(isa) \(rows)x\(inputs)->\(outputs) parts \(parts)"
                    assertClose(y, expected, absolute: 1e-5, relative: 1e-5, label)
                    assertClose(y, plain, absolute: 1e-5, relative: 1e-5, label + " vs OpenBLAS")
                    if let first { XCTAssertEqual(y.map(\.bitPattern), first.map(\.bitPattern), label) }
                    first = first ?? y
                }
            }
        }
    }

    func testFrozenNetworkFollowsItsParameters() throws {
        // The packed weight is a copy: load(parameters:) and initialize refresh it; thaw drops
        // it (im2col again). Batch 1 and 3 (packed) agree with batch 8 (Winograd) to rounding.
        let net = try Network(
            layers: [
                .conv1d(inputs: 6, outputs: 20, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu, .globalAveragePool,
                .linear(inputs: 20, outputs: 3),
            ],
            input: Shape(time: 11, channels: 6))
        net.initialize(seed: 1)
        var g = SeededGenerator(seed: 2)
        let x = (0..<(8 * 11 * 6)).map { _ in g.nextSymmetric(1) }
        let window = Array(x[0..<66])
        let before = net.predictLogits(window, batch: 1)
        net.freeze()
        XCTAssertTrue(net.isFrozen)
        assertClose(net.predictLogits(window, batch: 1), before, absolute: 1e-6, relative: 1e-5, "frozen vs im2col")
        let eight = net.predictLogits(x, batch: 8)
        assertClose(net.predictLogits(Array(x[0..<198]), batch: 3), Array(eight[0..<9]), absolute: 1e-5, relative: 1e-5, "3 vs 8")
        // New parameters through load(parameters:): the frozen network follows.
        let other = try Network(layers: net.specs, input: net.inputShape)
        other.initialize(seed: 9)
        let expected = other.predictLogits(window, batch: 1)
        UnsafeBufferPointer(start: other.parameters, count: other.parameterCount).withMemoryRebound(to: Float.self) { net.load(parameters: $0) }
        assertClose(net.predictLogits(window, batch: 1), expected, absolute: 1e-6, relative: 1e-5, "after load")
        XCTAssertNotEqual(expected, before)
        net.initialize(seed: 1)
        assertClose(net.predictLogits(window, batch: 1), before, absolute: 1e-6, relative: 1e-5, "after initialize")
        // Thawed, then changed directly: im2col sees the change at once.
        net.thaw()
        XCTAssertFalse(net.isFrozen)
        net.parameters[net.parameterCount - 1] += 1  // the last class's bias
        let changed = net.predictLogits(window, batch: 1)
        XCTAssertEqual(changed[2], before[2] + 1, accuracy: 1e-5)
    }

    func testLoadedModelsAreFrozen() throws {
        let net = try ModelFixtures.goldenNetwork()
        let bytes = try ModelFile.encode(
            classes: ModelFixtures.goldenClasses, input: ModelFixtures.goldenInput, network: net,
            provenance: ModelFixtures.goldenProvenance)
        XCTAssertFalse(net.isFrozen)
        XCTAssertTrue(try ActionModel(bytes: bytes).network.isFrozen)
    }
}
