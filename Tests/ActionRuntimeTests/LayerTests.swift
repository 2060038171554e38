@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// Layer semantics other than gradients: validation errors, dropout masks, pooling ties,
/// residual parameter names, Linear against its reference.
final class LayerTests: XCTestCase {
    func build(_ layers: [LayerSpec], _ time: Int, _ channels: Int) throws -> Network {
        try Network(layers: layers, input: Shape(time: time, channels: channels))
    }

    func conv(_ i: Int, _ o: Int, k: Int, s: Int = 1, d: Int = 1, p: Int = 0) -> LayerSpec {
        .conv1d(inputs: i, outputs: o, kernel: k, stride: s, dilation: d, padding: p)
    }

    // MARK: Validation

    func testConvValidation() {
        assertThrows(["layer 0 (conv1d)", "4 time steps (6 with padding 1", "dilated kernel span 7", "dilation 2 x (kernel 4 - 1) + 1"]) {
            _ = try self.build([self.conv(3, 2, k: 4, d: 2, p: 1), .flatten], 4, 3)
        }
        assertThrows(["layer 1 (conv1d)", "expects 5 channels", "receives [4, 2]"]) {
            _ = try self.build([.linear(inputs: 3, outputs: 2), self.conv(5, 2, k: 1), .flatten], 4, 3)
        }
        assertThrows(["layer 0 (conv1d)", "stride must be positive, got 0"]) { _ = try self.build([self.conv(3, 2, k: 1, s: 0), .flatten], 4, 3) }
        assertThrows(["dilation must be positive, got -1"]) { _ = try self.build([self.conv(3, 2, k: 1, d: -1), .flatten], 4, 3) }
        assertThrows(["kernel must be positive, got 0"]) { _ = try self.build([self.conv(3, 2, k: 0), .flatten], 4, 3) }
        assertThrows(["padding must be at least 0, got -2"]) { _ = try self.build([self.conv(3, 2, k: 1, p: -2), .flatten], 4, 3) }
        assertThrows(["layer 0 (conv1d)", "outputs is too large"]) {
            _ = try self.build([self.conv(3, 1 << 40, k: 1 << 30), .flatten], 4, 3)
        }
        assertThrows(["layer 0 (conv1d)", "weight 16777216 x 1 x 30 is too large"]) {
            _ = try self.build([self.conv(30, 1 << 24, k: 1), .flatten], 4, 30)
        }
        assertThrows(["dilation is too large"]) { _ = try self.build([self.conv(3, 2, k: 3, d: Int.max), .flatten], 4, 3) }
        // Exactly the span fits: one output step.
        XCTAssertEqual(try build([conv(3, 2, k: 3, d: 2, p: 1)], 3, 3).outputShape, Shape(time: 1, channels: 2))
    }

    func testOtherLayerValidation() {
        assertThrows(["layer 0 (dropout)", "rate 1.0 must be in [0, 1)"]) { _ = try self.build([.dropout(rate: 1), .flatten], 2, 3) }
        assertThrows(["rate -0.1 must be in [0, 1)"]) { _ = try self.build([.dropout(rate: -0.1), .flatten], 2, 3) }
        assertThrows(["rate nan must be in [0, 1)"]) { _ = try self.build([.dropout(rate: .nan), .flatten], 2, 3) }
        assertThrows(["layer 1 (layerNorm)", "normalises 4 channels", "receives [2, 3]"]) {
            _ = try self.build([.relu, .layerNorm(channels: 4, epsilon: 1e-5), .flatten], 2, 3)
        }
        assertThrows(["layer 0 (layerNorm)", "epsilon 0.0 must be in [1e-12, 1.0]"]) {
            _ = try self.build([.layerNorm(channels: 3, epsilon: 0), .flatten], 2, 3)
        }
        assertThrows(["layer 0 (linear)", "outputs is too large"]) { _ = try self.build([.linear(inputs: 3, outputs: Int.max), .flatten], 2, 3) }
        assertThrows(["layer 0 (linear)", "weight 134217728 x 3 is too large"]) { _ = try self.build([.linear(inputs: 3, outputs: 1 << 27), .flatten], 2, 3) }
        assertThrows(["layer output", "add flatten or a pooling layer"]) { _ = try self.build([.gelu], 2, 3) }
    }

    func testResidualValidationNamesTheNestedLayer() {
        assertThrows(["layer 0 (residual)", "the body gives [2, 4] per window but the shortcut gives [2, 3] (the identity)"]) {
            _ = try self.build([.residual(body: [.linear(inputs: 3, outputs: 4)], shortcut: []), .flatten], 2, 3)
        }
        assertThrows(["layer 1 (residual)", "the body gives [3, 2] per window but the shortcut gives [5, 2]"]) {
            _ = try self.build(
                [.relu, .residual(body: [self.conv(3, 2, k: 3)], shortcut: [self.conv(3, 2, k: 1)]), .flatten], 5, 3)
        }
        assertThrows(["layer 0.body.1.shortcut.0 (conv1d)", "stride must be positive"]) {
            _ = try self.build(
                [.residual(body: [.relu, .residual(body: [], shortcut: [self.conv(3, 3, k: 1, s: 0)])], shortcut: []), .flatten], 2, 3)
        }
    }

    // MARK: Residual parameters

    func testResidualParameterNamesAndBinding() throws {
        let block = LayerSpec.residual(
            body: [conv(3, 4, k: 3, p: 1), .layerNorm(channels: 4, epsilon: 1e-5)], shortcut: [conv(3, 4, k: 1)])
        let net = try build(
            [
                .linear(inputs: 3, outputs: 3), block,
                .residual(body: [.residual(body: [.linear(inputs: 4, outputs: 4)], shortcut: [])], shortcut: []),
                .globalAveragePool, .linear(inputs: 4, outputs: 2),
            ], 5, 3)
        XCTAssertEqual(
            net.tensors.map(\.name),
            [
                "layers.0.weight", "layers.0.bias",
                "layers.1.body.0.weight", "layers.1.body.0.bias", "layers.1.body.1.gamma", "layers.1.body.1.beta",
                "layers.1.shortcut.0.weight", "layers.1.shortcut.0.bias",
                "layers.2.body.0.body.0.weight", "layers.2.body.0.body.0.bias",
                "layers.4.weight", "layers.4.bias",
            ])
        XCTAssertEqual(net.tensors.map(\.shape), [[3, 3], [3], [4, 3, 3], [4], [4], [4], [4, 1, 3], [4], [4, 4], [4], [2, 4], [2]])
        // Offsets tile the arena.
        var offset = 0
        for t in net.tensors {
            XCTAssertEqual(t.offset, offset, t.name)
            offset += t.count
        }
        XCTAssertEqual(offset, net.parameterCount)
        // Initialisation reaches the nested layers: gamma = 1, beta = 0, conv weights within ±1/√9.
        net.initialize(seed: 4)
        func values(_ name: String) -> [Float] {
            let t = net.tensors.first { $0.name == name }!
            return Array(UnsafeBufferPointer(start: net.parameters + t.offset, count: t.count))
        }
        XCTAssertEqual(values("layers.1.body.1.gamma"), [1, 1, 1, 1])
        XCTAssertEqual(values("layers.1.body.1.beta"), [0, 0, 0, 0])
        XCTAssertTrue(values("layers.1.body.0.weight").allSatisfy { abs($0) <= 1 / 3 && $0 != 0 })
        XCTAssertTrue(values("layers.2.body.0.body.0.weight").allSatisfy { abs($0) <= 0.5 && $0 != 0 })
        // Binding: with the nested linear's weight and bias at 0, block 2 is x ↦ (0 + x) + x = 2x,
        // so the network equals one without block 2 whose head weight is doubled.
        func tensor(_ n: Network, _ name: String) -> UnsafeMutableBufferPointer<Float> {
            let t = n.tensors.first { $0.name == name }!
            return UnsafeMutableBufferPointer(start: n.parameters + t.offset, count: t.count)
        }
        _ = tensor(net, "layers.2.body.0.body.0.weight").update(fromContentsOf: [Float](repeating: 0, count: 16))
        _ = tensor(net, "layers.2.body.0.body.0.bias").update(fromContentsOf: [Float](repeating: 0, count: 4))
        let direct = try build([.linear(inputs: 3, outputs: 3), block, .globalAveragePool, .linear(inputs: 4, outputs: 2)], 5, 3)
        for t in direct.tensors where !t.name.hasPrefix("layers.3.") {
            _ = tensor(direct, t.name).update(fromContentsOf: Array(tensor(net, t.name)))
        }
        _ = tensor(direct, "layers.3.weight").update(fromContentsOf: tensor(net, "layers.4.weight").map { 2 * $0 })
        _ = tensor(direct, "layers.3.bias").update(fromContentsOf: Array(tensor(net, "layers.4.bias")))
        let x = (0..<15).map { Float($0) / 7 - 1 }
        assertClose(net.predictLogits(x, batch: 1), direct.predictLogits(x, batch: 1), absolute: 1e-5, relative: 1e-5)
        XCTAssertNotEqual(net.predictLogits(x, batch: 1), [0, 0])
    }

    func testBackwardSkipsInputGradientsNobodyNeeds() throws {
        let net = try build(
            [.flatten, .linear(inputs: 6, outputs: 4), .relu, .residual(body: [.linear(inputs: 4, outputs: 4)], shortcut: []), .linear(inputs: 4, outputs: 2)],
            2, 3)
        net.initialize(seed: 1)
        let x = (0..<12).map { Float($0) / 5 - 1 }, r: [Float] = [0.5, -1, 0.25, 2]
        func gradients(_ need: Bool) -> ([Float], Bool) {
            net.zeroGradients()
            _ = net.predictLogits(x, batch: 2)
            let dx = r.withUnsafeBufferPointer { net.backward($0.baseAddress!, batch: 2, needInputGradient: need) }
            return (Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount)), dx != nil)
        }
        let (with, gotDx) = gradients(true), (without, gotNoDx) = gradients(false)
        XCTAssertTrue(gotDx)
        XCTAssertFalse(gotNoDx, "the first linear layer should not compute its input gradient")
        XCTAssertEqual(with, without)
        XCTAssertTrue(with.contains { $0 != 0 })
    }

    func testTrainingStepIsBitIdenticalForTheSameSeed() throws {
        // Every layer type in one network; two fresh instances, same seeds: same logits and
        // gradients bit for bit (nothing reads uninitialised memory or unseeded randomness).
        let layers: [LayerSpec] = [
            conv(3, 4, k: 3, s: 1, d: 2, p: 2), .gelu, .layerNorm(channels: 4, epsilon: 1e-5), .dropout(rate: 0.3),
            .residual(body: [conv(4, 4, k: 3, p: 1), .relu], shortcut: []), .globalMaxPool, .linear(inputs: 4, outputs: 3),
        ]
        func run() throws -> ([Float], [Float]) {
            let net = try build(layers, 6, 3)
            net.initialize(seed: 21)
            let x: [Float] = (0..<90).map { i in Float((i * 37) % 23) / 11 - 1 }
            let r: [Float] = (0..<15).map { i in Float(i % 4) - 1.5 }
            var mode = ForwardMode.training(seed: 5)
            return x.withUnsafeBufferPointer { xp in
                let y = Array(UnsafeBufferPointer(start: net.forward(xp.baseAddress!, batch: 5, mode: &mode), count: 15))
                r.withUnsafeBufferPointer { _ = net.backward($0.baseAddress!, batch: 5) }
                return (y, Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount)))
            }
        }
        let (y1, g1) = try run(), (y2, g2) = try run()
        XCTAssertEqual(y1.map(\.bitPattern), y2.map(\.bitPattern))
        XCTAssertEqual(g1.map(\.bitPattern), g2.map(\.bitPattern))
        XCTAssertTrue(g1.contains { $0 != 0 })
    }

    // MARK: Dropout

    func dropoutOutput(_ net: Network, _ x: [Float], seed: UInt64?) -> [Float] {
        var mode = seed.map { ForwardMode.training(seed: $0) } ?? .inference
        return x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.forward($0.baseAddress!, batch: 4, mode: &mode), count: x.count)) }
    }

    func testDropoutMaskScaleAndDeterminism() throws {
        let p: Float = 0.25
        let net = try build([.dropout(rate: p), .flatten], 50, 10)
        let x = (0..<2000).map { Float($0 % 17) + 1 }  // no zeros
        let a = dropoutOutput(net, x, seed: 9), b = dropoutOutput(net, x, seed: 9), c = dropoutOutput(net, x, seed: 10)
        XCTAssertEqual(a, b, "same seed, same mask")
        XCTAssertNotEqual(a, c, "another seed, another mask")
        let kept = x.indices.filter { a[$0] != 0 }, dropped = x.count - kept.count
        assertClose(kept.map { a[$0] }, kept.map { x[$0] / (1 - p) }, absolute: 0, relative: 1e-6, "kept values are scaled by 1/(1-p)")
        // 2000 draws with p = 0.25: 500 expected, σ ≈ 19.
        XCTAssertGreaterThan(dropped, 420)
        XCTAssertLessThan(dropped, 580)
        // The mask follows the generator: value i is dropped iff its i-th unit float is < p.
        var g = SeededGenerator(seed: 9)
        for i in 0..<20 { XCTAssertEqual(a[i] == 0, g.nextUnitFloat() < p, "index \(i)") }
        XCTAssertEqual(dropoutOutput(net, x, seed: nil), x, "identity at inference")
        // Backward uses the same mask.
        var mode = ForwardMode.training(seed: 9)
        let dy = [Float](repeating: 1, count: x.count)
        let dx = x.withUnsafeBufferPointer { xp -> [Float] in
            _ = net.forward(xp.baseAddress!, batch: 4, mode: &mode)
            return dy.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.backward($0.baseAddress!, batch: 4, needInputGradient: true)!, count: x.count)) }
        }
        assertClose(dx, a.map { $0 == 0 ? 0 : 1 / (1 - p) }, absolute: 0, relative: 1e-6, "dx = mask ⊙ dy")
    }

    /// A large activation's mask is drawn in parts on the threads, each part's generator
    /// started where the sequential stream would be: every value i is dropped iff the i-th draw
    /// of the sequence is < p, with 1 and 2 threads, and the stream ends where n draws leave it;
    /// backward multiplies each dy by the same mask value (bit for bit, n not a multiple of 4:
    /// the mask is kept as bytes).
    func testDropoutMaskInPartsIsTheSequentialStream() throws {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        let p: Float = 0.3, n = 3 * Dropout.minimumPerPart + 5
        let layer = Dropout(rate: p, shape: Shape(time: 1, channels: n))
        let x = [Float](repeating: 1, count: n)
        var g = SeededGenerator(seed: 77)
        let expected = (0..<n).map { _ in g.nextUnitFloat() < p ? Float(0) : 1 / (1 - p) }
        for threads in [1, 2] {
            BLAS.threads = threads
            var mode = ForwardMode.training(seed: 77)
            let y = x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: layer.forward($0.baseAddress!, batch: 1, mode: &mode), count: n)) }
            XCTAssertEqual(y, expected, "\(threads) threads")
            XCTAssertEqual(mode.random.state, g.state, "\(threads) threads: the stream after n draws")
            var h = SeededGenerator(seed: 5)
            let dy = (0..<n).map { _ in h.nextSymmetric(3) }
            let dx = dy.withUnsafeBufferPointer {
                Array(UnsafeBufferPointer(start: layer.backward($0.baseAddress!, batch: 1, needInputGradient: true)!, count: n))
            }
            XCTAssertEqual(dx.map(\.bitPattern), zip(dy, expected).map { ($0 * $1).bitPattern }, "\(threads) threads: dx = mask ⊙ dy")
        }
    }

    /// `ElementwiseKernels.dropout` on every instruction set: the mask and output of the
    /// generator's stream bit for bit, for a range that starts inside a vector and a tail
    /// shorter than one, two rates, and −0, NaN and −∞ inputs.
    func testDropoutKernelMatchesTheStreamOnEveryInstructionSet() {
        defer { PackedGEMM.current = PackedGEMM.detected }
        let n = 1_000 + 13, seed: UInt64 = 0xDEAD_BEEF
        var r = SeededGenerator(seed: 4)
        var x = (0..<n).map { _ in r.nextSymmetric(2) }
        (x[0], x[1], x[2]) = (-0.0, .nan, -.infinity)
        for rate: Float in [0.1, 0.5] {
            let scale = 1 / (1 - rate)
            var g = SeededGenerator(seed: seed)
            let keep = (0..<n).map { _ in !(g.nextUnitFloat() < rate) }
            let want = zip(x, keep).map { ($0 * ($1 ? scale : 0)).bitPattern }
            for isa in PackedGEMM.InstructionSet.allCases where isa.rawValue <= PackedGEMM.detected.rawValue {
                PackedGEMM.current = isa
                var y = [Float](repeating: 7, count: n), mask = [UInt8](repeating: 9, count: n)
                for range in [0..<517, 517..<n] {
                    ElementwiseKernels.dropout(x, &y, mask: &mask, range: range, state: seed, rate: rate, scale: scale)
                }
                XCTAssertEqual(mask, keep.map { $0 ? 1 : 0 }, "\(isa) rate \(rate): mask")
                XCTAssertEqual(y.map(\.bitPattern), want, "\(isa) rate \(rate): y")
            }
        }
    }

    func testDropoutRateZeroIsTheIdentityInTraining() throws {
        let net = try build([.dropout(rate: 0), .flatten], 5, 2)
        let x = (0..<40).map { Float($0) }
        XCTAssertEqual(dropoutOutput(net, x, seed: 3), x)
    }

    // MARK: Pooling

    func testPoolingValuesAndMaxTies() throws {
        // x[b=0] = [[1, 5], [3, 5], [2, 4]]: mean [2, 14/3], max [3, 5] with the tie in
        // channel 1 between t = 0 and t = 1.
        let x: [Float] = [1, 5, 3, 5, 2, 4]
        let avg = try build([.globalAveragePool], 3, 2)
        assertClose(avg.predictLogits(x, batch: 1), [2, 14 / 3])
        let maxNet = try build([.globalMaxPool], 3, 2)
        XCTAssertEqual(maxNet.predictLogits(x, batch: 1), [3, 5])
        let dx = [Float](arrayLiteral: 10, 20).withUnsafeBufferPointer {
            Array(UnsafeBufferPointer(start: maxNet.backward($0.baseAddress!, batch: 1, needInputGradient: true)!, count: 6))
        }
        XCTAssertEqual(dx, [0, 20, 10, 0, 0, 0], "the first maximum gets the gradient")
        let dxAvg = [Float](arrayLiteral: 3, 6).withUnsafeBufferPointer { p -> [Float] in
            _ = avg.predictLogits(x, batch: 1)
            return Array(UnsafeBufferPointer(start: avg.backward(p.baseAddress!, batch: 1, needInputGradient: true)!, count: 6))
        }
        XCTAssertEqual(dxAvg, [1, 2, 1, 2, 1, 2])
    }

    // MARK: Linear fast path

    func testLinearMatchesReferenceOnAwkwardShapes() throws {
        for (batch, time, inputs, outputs) in [(1, 1, 1, 1), (1, 3, 17, 5), (3, 2, 9, 33), (5, 1, 130, 7)] {
            let net = try build([.linear(inputs: inputs, outputs: outputs), .flatten], time, inputs)
            net.initialize(seed: 2)
            var g = SeededGenerator(seed: 3)
            let x = (0..<(batch * time * inputs)).map { _ in g.nextSymmetric(1) }
            let W = Array(UnsafeBufferPointer(start: net.parameters, count: outputs * inputs))
            let b = Array(UnsafeBufferPointer(start: net.parameters + outputs * inputs, count: outputs))
            var expected = [Float](repeating: 0, count: batch * time * outputs)
            for r in 0..<(batch * time) {
                for o in 0..<outputs {
                    var s = Double(b[o])
                    for i in 0..<inputs { s += Double(W[o * inputs + i]) * Double(x[r * inputs + i]) }
                    expected[r * outputs + o] = Float(s)
                }
            }
            assertClose(net.predictLogits(x, batch: batch), expected, absolute: 1e-5, relative: 1e-5, "\(batch)x\(time)x\(inputs)->\(outputs)")
        }
    }
}

/// `layerNorm`'s rows 8 at a time and its threads against the plain row-by-row loops of its
/// definition (the code before the rows went into SIMD lanes): the same bits, forward and
/// backward, for row counts around 8 and 1 or 2 threads.
final class LayerNormTests: XCTestCase {

    /// The per-row loops: sums in channel order, one row at a time; dγ, dβ summed in row order.
    static func reference(x: [Float], dy: [Float], gamma: [Float], beta: [Float], rows R: Int, epsilon: Float)
        -> (y: [Float], dx: [Float], dGamma: [Float], dBeta: [Float])
    {
        let C = gamma.count, invC = 1 / Float(C)
        var y = [Float](repeating: 0, count: R * C), dx = y, mean = [Float](repeating: 0, count: R), rstd = mean
        var dGamma = [Float](repeating: 0, count: C), dBeta = dGamma
        for r in 0..<R {
            var s: Float = 0
            for c in 0..<C { s += x[r * C + c] }
            let m = s * invC
            var v: Float = 0
            for c in 0..<C {
                let d = x[r * C + c] - m
                v += d * d
            }
            let inv = 1 / (v * invC + epsilon).squareRoot()
            for c in 0..<C { y[r * C + c] = (x[r * C + c] - m) * inv * gamma[c] + beta[c] }
            (mean[r], rstd[r]) = (m, inv)
        }
        for r in 0..<R {
            for c in 0..<C {
                dBeta[c] += dy[r * C + c]
                dGamma[c] += dy[r * C + c] * (x[r * C + c] - mean[r]) * rstd[r]
            }
        }
        for r in 0..<R {
            let m = mean[r], inv = rstd[r]
            var sumG: Float = 0, sumGX: Float = 0
            for c in 0..<C {
                let gc = gamma[c] * dy[r * C + c]
                sumG += gc
                sumGX += gc * (x[r * C + c] - m) * inv
            }
            let meanG = sumG * invC, meanGX = sumGX * invC
            for c in 0..<C {
                let xhat = (x[r * C + c] - m) * inv
                dx[r * C + c] = inv * (gamma[c] * dy[r * C + c] - meanG - xhat * meanGX)
            }
        }
        return (y, dx, dGamma, dBeta)
    }

    func testRowsInLanesAndThreadsGiveTheBitsOfThePlainLoops() throws {
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        var g = SeededGenerator(seed: 21)
        for (rows, C) in [(1, 5), (7, 33), (8, 64), (9, 16), (23, 512), (300, 64)] {
            for threads in [1, 2] {
                BLAS.threads = threads
                let net = try Network(layers: [.layerNorm(channels: C, epsilon: 1e-5), .flatten], input: Shape(time: rows, channels: C))
                for i in 0..<(2 * C) { net.parameters[i] = g.nextSymmetric(2) }
                let x = (0..<(rows * C)).map { _ in g.nextSymmetric(3) + 1 }, dy = (0..<(rows * C)).map { _ in g.nextSymmetric(1) }
                let gamma = Array(UnsafeBufferPointer(start: net.parameters, count: C))
                let beta = Array(UnsafeBufferPointer(start: net.parameters + C, count: C))
                let want = Self.reference(x: x, dy: dy, gamma: gamma, beta: beta, rows: rows, epsilon: 1e-5)
                net.zeroGradients()
                var mode = ForwardMode.training(seed: 1)
                let y = x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.forward($0.baseAddress!, batch: 1, mode: &mode), count: rows * C)) }
                let dx = dy.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.backward($0.baseAddress!, batch: 1, needInputGradient: true)!, count: rows * C)) }
                let name = "\(rows) rows x \(C), \(threads) threads"
                XCTAssertEqual(y.map(\.bitPattern), want.y.map(\.bitPattern), name)
                XCTAssertEqual(dx.map(\.bitPattern), want.dx.map(\.bitPattern), name)
                XCTAssertEqual(Array(UnsafeBufferPointer(start: net.gradients, count: C)).map(\.bitPattern), want.dGamma.map(\.bitPattern), name)
                XCTAssertEqual(Array(UnsafeBufferPointer(start: net.gradients + C, count: C)).map(\.bitPattern), want.dBeta.map(\.bitPattern), name)
            }
        }
    }
}
