@testable import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// `fourierPyramid` against direct double-precision sums, `standardize` and its calibration
/// (`StandardizeCalibration`): the values, the places it reaches, its determinism, its errors.
final class FourierPyramidTests: XCTestCase {
    /// `|Σ_t x_t e^{−2πi f t/n}|` over each segment, in double, laid out `(k·K + f)·C + c`.
    static func reference(_ x: [Float], batch B: Int, shape: Shape, levels: [Int], coefficients K: Int) -> [Double] {
        let T = shape.time, C = shape.channels
        let segments = levels.flatMap { L in (0..<L).map { s in (s * T / L, (s + 1) * T / L) } }
        var out: [Double] = []
        for b in 0..<B {
            for (start, end) in segments {
                let n = end - start
                for f in 0..<K {
                    for c in 0..<C {
                        guard f <= n / 2 else {
                            out.append(0)
                            continue
                        }
                        var a = 0.0, s = 0.0
                        for t in 0..<n {
                            let v = Double(x[(b * T + start + t) * C + c]), angle = 2 * Double.pi * Double(f * t) / Double(n)
                            a += v * cos(angle)
                            s += v * sin(angle)
                        }
                        out.append((a * a + s * s).squareRoot())
                    }
                }
            }
        }
        return out
    }

    func forward(_ specs: [LayerSpec], _ x: [Float], batch: Int, shape: Shape) throws -> [Float] {
        var layers: [Layer] = [], s = shape
        for (i, spec) in specs.enumerated() {
            let layer = try makeLayer(spec, input: s, path: "\(i)")
            layers.append(layer)
            s = layer.outputShape
        }
        var mode = ForwardMode.inference
        return x.withUnsafeBufferPointer { p in
            var y = p.baseAddress!
            for layer in layers { y = layer.forward(y, batch: batch, mode: &mode) }
            return Array(UnsafeBufferPointer(start: y, count: batch * s.count))
        }
    }

    /// T = 9 with levels 1, 2, 4 (segments of 9, 4, 5, 2, 2, 2, 3 frames) and K = 4: the short
    /// segments have 2 frequencies (the rest are 0), the 4-frame ones 3; batch 3 and one window
    /// alone give the same values.
    func testForwardIsTheMagnitudeOfEachSegmentsLowestFrequencies() throws {
        let shape = Shape(time: 9, channels: 5), B = 3
        var g = SeededGenerator(seed: 12)
        let x = (0..<(B * shape.count)).map { _ in g.nextSymmetric(2) }
        let spec = LayerSpec.fourierPyramid(levels: [1, 2, 4], coefficients: 4)
        let y = try forward([spec], x, batch: B, shape: shape)
        XCTAssertEqual(y.count, B * 5 * 7 * 4)
        let expected = Self.reference(x, batch: B, shape: shape, levels: [1, 2, 4], coefficients: 4)
        for i in y.indices { XCTAssertEqual(Double(y[i]), expected[i], accuracy: 2e-5 * max(1, expected[i]), "output \(i)") }
        // Segment 3 (frames 0..<2 of level 4): frequencies 2 and 3 do not exist.
        let segment3 = (3 * 4 * 5)..<(4 * 4 * 5)
        XCTAssertEqual(Array(y[segment3].suffix(2 * 5)), [Float](repeating: 0, count: 10))
        let one = try forward([spec], Array(x[(2 * shape.count)...]), batch: 1, shape: shape)
        assertClose(one, Array(y[(2 * 5 * 28)...]), absolute: 1e-6, relative: 1e-6)
    }

    /// Frozen (a loaded model: the runtime's own kernel, never OpenBLAS): the reference values
    /// to rounding; the same bits whatever the parts the windows are split into and the
    /// OpenBLAS thread count, and for a window alone as in its batch; thawed, the training
    /// path again.
    func testFrozenForwardMatchesAndGivesTheSameBitsWhateverTheSplit() throws {
        let shape = Shape(time: 9, channels: 13), B = 5
        var g = SeededGenerator(seed: 21)
        let x = (0..<(B * shape.count)).map { _ in g.nextSymmetric(2) }
        let net = try Network(layers: [.fourierPyramid(levels: [1, 2, 4], coefficients: 4)], input: shape)
        let layer = try XCTUnwrap(net.layers[0] as? FourierPyramid)
        let plain = net.predictLogits(x, batch: B)
        let expected = Self.reference(x, batch: B, shape: shape, levels: [1, 2, 4], coefficients: 4)
        net.freeze()
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        var first: [UInt32]?
        for (parts, threads) in [(1, 1), (2, 2), (3, 1), (7, 2), (nil, 2)] as [(Int?, Int)] {
            (layer.maxParts, BLAS.threads) = (parts, threads)
            let y = net.predictLogits(x, batch: B)
            for i in y.indices { XCTAssertEqual(Double(y[i]), expected[i], accuracy: 2e-5 * max(1, expected[i]), "frozen output \(i)") }
            XCTAssertEqual(y.map(\.bitPattern), first ?? y.map(\.bitPattern), "parts \(String(describing: parts)), \(threads) threads")
            first = first ?? y.map(\.bitPattern)
            let n = net.classCount
            for b in 0..<B {
                let one = net.predictLogits(Array(x[(b * shape.count)..<((b + 1) * shape.count)]), batch: 1)
                XCTAssertEqual(one.map(\.bitPattern), Array(y[(b * n)..<((b + 1) * n)]).map(\.bitPattern), "window \(b) alone")
            }
        }
        net.thaw()
        XCTAssertEqual(net.predictLogits(x, batch: B), plain)
    }

    /// The frozen kernel (`atk_fourier_magnitudes`) gives the same bits with every instruction
    /// set this CPU has, the portable loop included: 21 channels (a partial block of 8 and of
    /// 16), 6 frequencies (a block of 4 and one of 2), segments of 20, 10 and 5 frames (the last
    /// with 3 frequencies, the others 0), each matching the double-precision sums.
    func testFrozenKernelGivesTheSameBitsOnEveryInstructionSet() throws {
        let shape = Shape(time: 20, channels: 21), B = 3, levels = [1, 2, 4]
        var g = SeededGenerator(seed: 5)
        let x = (0..<(B * shape.count)).map { _ in g.nextSymmetric(3) }
        let net = try Network(layers: [.fourierPyramid(levels: levels, coefficients: 6)], input: shape)
        net.freeze()
        defer { PackedGEMM.current = PackedGEMM.detected }
        let expected = Self.reference(x, batch: B, shape: shape, levels: levels, coefficients: 6)
        var first: [UInt32]?
        for isa in PackedGEMM.InstructionSet.allCases where isa.rawValue <= PackedGEMM.detected.rawValue {
            PackedGEMM.current = isa
            let y = net.predictLogits(x, batch: B)
            for i in y.indices { XCTAssertEqual(Double(y[i]), expected[i], accuracy: 2e-5 * max(1, expected[i]), "\(isa): output \(i)") }
            XCTAssertEqual(y.map(\.bitPattern), first ?? y.map(\.bitPattern), "\(isa)")
            first = first ?? y.map(\.bitPattern)
        }
    }

    /// The DC term is |Σ x| and a constant signal has nothing at the other frequencies.
    func testConstantSignalHasOnlyTheDCTerm() throws {
        let shape = Shape(time: 8, channels: 1)
        let y = try forward([.fourierPyramid(levels: [1, 2], coefficients: 3)], [Float](repeating: -0.5, count: 8), batch: 1, shape: shape)
        // Segments of 8, 4, 4 frames: DC 4, 2, 2 (magnitudes), the rest 0 up to rounding.
        assertClose(y, [4, 0, 0, 2, 0, 0, 2, 0, 0], absolute: 1e-6)
    }

    func testStandardizeSubtractsTheMeanAndMultipliesByTheScale() throws {
        let y = try forward(
            [.standardize(mean: [1, -2], scale: [0.5, 4])], [3, 0, -1, -2.5], batch: 1, shape: Shape(time: 2, channels: 2))
        XCTAssertEqual(y, [1, 8, -1, -2])
    }

    /// A model file cannot hold an uncalibrated or mis-sized standardize, nor non-finite values.
    func testStandardizeChecksItsStatistics() throws {
        let input = Shape(time: 2, channels: 3)
        func refused(_ spec: LayerSpec, _ reason: String) {
            assertThrows([reason]) { _ = try Network(layers: [spec, .globalAveragePool], input: input) }
        }
        refused(.standardize(), "was never calibrated")
        refused(.standardize(mean: [0, 0], scale: [1, 1]), "mean has 2 values and scale 2; the input has 3 channels")
        refused(.standardize(mean: [0, 0, .nan], scale: [1, 1, 1]), "mean[2] is not finite")
        refused(.standardize(mean: [0, 0, 0], scale: [1, .infinity, 1]), "scale[1] is not finite")
        refused(.fourierPyramid(levels: [1, 3], coefficients: 2), "a level is too large")
        refused(.fourierPyramid(levels: [1], coefficients: 0), "coefficients must be positive")
        refused(.fourierPyramid(levels: [1], coefficients: 65), "coefficients is too large")
    }

    // MARK: - Calibration

    /// Windows `[N, T, C]` of a seeded generator; channel 2 is constant.
    static func windows(_ n: Int, shape: Shape, seed: UInt64 = 3) -> [Float] {
        var g = SeededGenerator(seed: seed)
        return (0..<(n * shape.count)).map { i in i % shape.channels == 2 ? 1.5 : g.nextSymmetric(3) + Float(i % shape.channels) }
    }

    func calibrate(_ specs: [LayerSpec], _ data: [Float], shape: Shape) throws -> [LayerSpec] {
        let n = data.count / shape.count
        return try StandardizeCalibration.calibrate(specs, input: shape, windows: n) { range, out in
            data.withUnsafeBufferPointer { out.update(from: $0.baseAddress! + range.lowerBound * shape.count, count: range.count * shape.count) }
        }
    }

    /// Mean and 1/std of each channel over windows and time, computed in double here; a constant
    /// channel gets scale 1; more windows than one chunk.
    func testCalibrationGivesEachChannelsMeanAndInverseStandardDeviation() throws {
        let shape = Shape(time: 3, channels: 4), n = StandardizeCalibration.chunk + 44
        let data = Self.windows(n, shape: shape)
        let calibrated = try calibrate([.selectChannels([3, 2, 0]), .standardize(), .globalAveragePool], data, shape: shape)
        let kind = try XCTUnwrap(calibrated[1].kind as? StandardizeKind)
        for (k, c) in [3, 2, 0].enumerated() {
            let v = stride(from: c, to: data.count, by: 4).map { Double(data[$0]) }
            let mean = v.reduce(0, +) / Double(v.count)
            let std = (v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(v.count)).squareRoot()
            XCTAssertEqual(Double(kind.mean[k]), mean, accuracy: 1e-6, "mean of channel \(c)")
            XCTAssertEqual(Double(kind.scale[k]), std == 0 ? 1 : 1 / std, accuracy: 1e-6, "scale of channel \(c)")
        }
        XCTAssertEqual(kind.mean[1], 1.5)
        XCTAssertEqual(kind.scale[1], 1)
        XCTAssertEqual(calibrated[0], .selectChannels([3, 2, 0]))
        XCTAssertEqual(calibrated[2], .globalAveragePool)
        // The calibrated layer's output over the windows has mean 0 and variance 1.
        let y = try forward(Array(calibrated.prefix(2)), data, batch: n, shape: shape)
        for k in [0, 2] {
            let v = stride(from: k, to: y.count, by: 3).map { Double(y[$0]) }
            let mean = v.reduce(0, +) / Double(v.count)
            XCTAssertEqual(mean, 0, accuracy: 1e-5)
            XCTAssertEqual(v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(v.count), 1, accuracy: 1e-4)
        }
    }

    /// Each member of averageProbabilities is calibrated on its own path; the values do not
    /// depend on BLAS.threads; a calibrated list is left as it is.
    func testMembersCalibrateOnTheirOwnPathsWhateverTheThreadCount() throws {
        let shape = Shape(time: 8, channels: 4)
        let data = Self.windows(300, shape: shape, seed: 9)
        let specs: [LayerSpec] = [
            .averageProbabilities([
                [.selectChannels([0, 1]), .fourierPyramid(levels: [1, 2], coefficients: 2), .standardize(), .linear(inputs: 12, outputs: 2)],
                [.standardize(), .globalAveragePool, .linear(inputs: 4, outputs: 2)],
            ])
        ]
        let saved = BLAS.threads
        defer { BLAS.threads = saved }
        BLAS.threads = 1
        let one = try calibrate(specs, data, shape: shape)
        BLAS.threads = 2
        let two = try calibrate(specs, data, shape: shape)
        XCTAssertEqual(one, two)
        XCTAssertEqual(BLAS.threads, 2, "calibration restores the thread count")
        XCTAssertFalse(StandardizeCalibration.isNeeded(one))
        let members = try XCTUnwrap(one[0].kind as? AverageProbabilitiesKind).members
        let pyramid = try XCTUnwrap(members[0][2].kind as? StandardizeKind), plain = try XCTUnwrap(members[1][0].kind as? StandardizeKind)
        XCTAssertEqual(pyramid.mean.count, 12)
        XCTAssertEqual(plain.mean.count, 4)
        // Member 0's statistics are those of its pyramid's outputs.
        let features = try forward(Array(members[0].prefix(2)), data, batch: 300, shape: shape)
        let v = stride(from: 5, to: features.count, by: 12).map { Double(features[$0]) }
        XCTAssertEqual(Double(pyramid.mean[5]), v.reduce(0, +) / 300, accuracy: 1e-5)
        XCTAssertEqual(try calibrate(one, data, shape: shape), one)
        // The network built from the calibrated list runs.
        XCTAssertEqual(try Network(layers: one, input: shape).outputShape, Shape(time: 1, channels: 2))
    }

    /// Layers with parameters before it, a place inside another kind, or no windows: a clear error.
    func testCalibrationRefusesWhatItCannotCalibrate() throws {
        let shape = Shape(time: 2, channels: 3)
        let data = Self.windows(4, shape: shape)
        assertThrows(["1 (standardize)", "must have no parameters; linear has"]) {
            _ = try self.calibrate([.linear(inputs: 3, outputs: 3), .standardize(), .globalAveragePool], data, shape: shape)
        }
        assertThrows(["0 (residual)", "calibrated only in a layer list or an averageProbabilities member"]) {
            _ = try self.calibrate([.residual(body: [.standardize()], shortcut: []), .globalAveragePool], data, shape: shape)
        }
        assertThrows(["no training windows"]) {
            _ = try StandardizeCalibration.calibrate([.standardize(), .globalAveragePool], input: shape, windows: 0) { _, _ in }
        }
    }
}
