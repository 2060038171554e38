@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// A frozen dilated convolution with stride 1 and a kernel of 2-7 runs frozen Winograd on its
/// D phases (the outputs t ≡ r mod D, which read only the inputs ≡ r − P mod D), reading the
/// input in place instead of building im2col: held to the direct sums of the definition and
/// to frozen im2col (the path it replaces), on every instruction set.
final class Conv1dDilatedTests: XCTestCase {
    typealias Case = Conv1dTests.Case

    override func tearDown() {
        PackedGEMM.current = PackedGEMM.detected
    }

    /// Dilations 1-4, kernels 3 and 5, odd and even lengths (phases of unequal length), batch
    /// 1 and 3, no padding, "same" padding D(K − 1)/2, padding 1 (not a multiple of D: the
    /// phases start at different offsets) and D(K − 1) (a causal convolution's, more outputs
    /// than inputs); channel counts that are not multiples of 8. Geometries shorter than the
    /// dilated span are left out (the layer refuses them).
    static var cases: [Case] {
        var cases: [Case] = []
        for dilation in 1...4 {
            for kernel in [3, 5] {
                let span = dilation * (kernel - 1) + 1
                for time in [7, 12, 21, 32] {
                    for padding in Set([0, dilation * (kernel - 1) / 2, 1, dilation * (kernel - 1)]).sorted()
                    where time + 2 * padding >= span {
                        for batch in [1, 3] {
                            cases.append(
                                Case(
                                    batch: batch, time: time, inputs: 5, outputs: 9, kernel: kernel, stride: 1, dilation: dilation,
                                    padding: padding))
                        }
                    }
                }
            }
        }
        // The default model's dilated blocks: 64 channels, kernel 5, "same" padding, 32 frames.
        for dilation in [2, 4] {
            cases.append(
                Case(batch: 1, time: 32, inputs: 64, outputs: 64, kernel: 5, stride: 1, dilation: dilation, padding: 2 * dilation))
        }
        return cases
    }

    /// `layer`'s frozen forward of `x` (twice: the second must repeat the first).
    func frozenForward(_ layer: Conv1d, _ x: [Float], batch: Int, _ label: String) -> [Float] {
        layer.setFrozen(true)
        return x.withUnsafeBufferPointer { xp -> [Float] in
            var mode = ForwardMode.inference
            let count = batch * layer.outputTime * layer.outputs
            let y = Array(UnsafeBufferPointer(start: layer.forward(xp.baseAddress!, batch: batch, mode: &mode), count: count))
            let again = Array(UnsafeBufferPointer(start: layer.forward(xp.baseAddress!, batch: batch, mode: &mode), count: count))
            XCTAssertEqual(again.map(\.bitPattern), y.map(\.bitPattern), "\(label): twice")
            return y
        }
    }

    func testFrozenDilatedWinogradMatchesDirectSumsAndIm2col() throws {
        var winogradCases = 0
        for c in Self.cases {
            let probe = try Conv1dTests.makeConv(c)
            let phaseTime = (probe.outputTime + c.dilation - 1) / c.dilation
            // Every such geometry with at least 2 outputs per phase has a transform.
            XCTAssertEqual(probe.winograd != nil, phaseTime >= 2, "\(c)")
            guard let w = probe.winograd else { continue }
            winogradCases += 1
            // Seeded weights and input, the same for every layer of this case.
            var g = SeededGenerator(seed: 21)
            let params = (0..<probe.parameterCount).map { _ in g.nextSymmetric(1) }
            let x = (0..<(c.batch * c.time * c.inputs)).map { _ in g.nextSymmetric(1) }
            func make(_ winograd: Winograd?, parts: Int) throws -> (Conv1d, Buffer) {
                let layer = try Conv1dTests.makeConv(c)
                layer.winograd = winograd
                layer.maxParts = parts
                let p = Buffer(capacity: layer.parameterCount), d = Buffer(capacity: layer.parameterCount)
                p.pointer.update(from: params, count: params.count)
                layer.bind(parameters: p.pointer, gradients: d.pointer)
                return (layer, p)
            }
            let (im2colLayer, im2colParameters) = try make(nil, parts: 1)
            let im2col = frozenForward(im2colLayer, x, batch: c.batch, "\(c) im2col")
            let expectedIm2col: Conv1d.Formulation = c.dilation == 1 ? .packed : .frozenIm2col
            XCTAssertEqual(im2colLayer.lastFormulation, expectedIm2col, "\(c)")
            let reference = x.withUnsafeBufferPointer { im2colLayer.referenceForward($0.baseAddress!, batch: c.batch) }
            withExtendedLifetime(im2colParameters) {}
            assertClose(im2col, reference, absolute: 1e-5, relative: 1e-5, "\(c) im2col vs direct sums")
            // The tile size the layer picks and every other one its kernel allows.
            let sizes = [w.m] + (2...(Winograd.maxAlpha - c.kernel + 1)).filter { $0 != w.m }
            for isa in PackedGEMMTests.available {
                PackedGEMM.current = isa
                for m in sizes {
                    var first: [Float]?
                    for parts in [1, 2, 3] {
                        let label = "\(isa) \(c) F(\(m), \(c.kernel)) parts \(parts)"
                        let (layer, parameters) = try make(Winograd(m: m, r: c.kernel), parts: parts)
                        let y = frozenForward(layer, x, batch: c.batch, label)
                        withExtendedLifetime(parameters) {}
                        XCTAssertEqual(layer.lastFormulation, .frozenWinograd, label)
                        // Winograd's transforms round a little more than the direct sum (see
                        // Conv1dTests.testWinogradMatchesDirectLoops); values here are around 1-5.
                        assertClose(y, reference, absolute: 2e-5, relative: 2e-5, label + " vs direct sums")
                        assertClose(y, im2col, absolute: 2e-5, relative: 2e-5, label + " vs frozen im2col")
                        // Every output is computed by one part with the same sums, whatever the split.
                        if let first { XCTAssertEqual(y.map(\.bitPattern), first.map(\.bitPattern), label + " vs 1 part") }
                        first = first ?? y
                    }
                }
            }
        }
        // Most of the geometries above go through the new path.
        XCTAssertGreaterThan(winogradCases, Self.cases.count * 3 / 4)
    }

    func testEachWindowOfABatchEqualsItsOwnForward() throws {
        // The last window of a batch of 3, through the phase tiles of all 3 windows, equals
        // that window alone (batch 1), bit for bit: a wrong window offset reads a neighbour.
        for dilation in [2, 3] {
            let c = Case(batch: 3, time: 21, inputs: 6, outputs: 10, kernel: 5, stride: 1, dilation: dilation, padding: 1)
            var g = SeededGenerator(seed: 5)
            let layer = try Conv1dTests.makeConv(c), one = try Conv1dTests.makeConv(c)
            let p = Buffer(capacity: layer.parameterCount), d = Buffer(capacity: layer.parameterCount)
            layer.bind(parameters: p.pointer, gradients: d.pointer)
            one.bind(parameters: p.pointer, gradients: d.pointer)
            layer.initialize(using: &g)
            let x = (0..<(c.batch * c.time * c.inputs)).map { _ in g.nextSymmetric(1) }
            let all = frozenForward(layer, x, batch: 3, "batch 3")
            let last = frozenForward(one, Array(x[(2 * c.time * c.inputs)...]), batch: 1, "batch 1")
            XCTAssertEqual(layer.lastFormulation, .frozenWinograd)
            XCTAssertEqual(all[(2 * layer.outputTime * c.outputs)...].map(\.bitPattern), last.map(\.bitPattern), "D = \(dilation)")
            let reference = x.withUnsafeBufferPointer { layer.referenceForward($0.baseAddress!, batch: 3) }
            assertClose(all, reference, absolute: 2e-5, relative: 2e-5, "D = \(dilation) vs direct sums")
        }
    }
}
