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
    ]

    func testFastPathMatchesDirectLoops() throws {
        // Each case whole, then in chunks of 1 and 2 batch elements (as large batches run).
        for c in Self.cases {
          for chunk in [0, 1, 2] where chunk < c.batch {
            let spec = LayerSpec.conv1d(
                inputs: c.inputs, outputs: c.outputs, kernel: c.kernel, stride: c.stride, dilation: c.dilation, padding: c.padding)
            let layer = try XCTUnwrap(try makeLayer(spec, input: Shape(time: c.time, channels: c.inputs), path: "0") as? Conv1d)
            if chunk > 0 { layer.chunk = chunk }
            let label = "\(c), chunk \(layer.chunk)"
            let P = layer.parameterCount
            var params = [Float](repeating: 0, count: P), grads = [Float](repeating: 0, count: P)
            var g = SeededGenerator(seed: 11)
            // Start the gradients at known values to check that backward accumulates.
            for i in 0..<P { grads[i] = g.nextSymmetric(1) }
            let before = grads
            let x = (0..<(c.batch * c.time * c.inputs)).map { _ in g.nextSymmetric(1) }
            let dy = (0..<(c.batch * layer.outputTime * c.outputs)).map { _ in g.nextSymmetric(1) }
            try params.withUnsafeMutableBufferPointer { p in
                try grads.withUnsafeMutableBufferPointer { d in
                    layer.bind(parameters: p.baseAddress!, gradients: d.baseAddress!)
                    var initG = SeededGenerator(seed: 12)
                    layer.initialize(using: &initG)
                    try x.withUnsafeBufferPointer { xp in
                        var mode = ForwardMode.training(seed: 1)
                        let y = layer.forward(xp.baseAddress!, batch: c.batch, mode: &mode)
                        let yFast = Array(UnsafeBufferPointer(start: y, count: dy.count))
                        assertClose(yFast, layer.referenceForward(xp.baseAddress!, batch: c.batch), absolute: 1e-5, relative: 1e-5, "forward \(label)")
                        let dxFast = try dy.withUnsafeBufferPointer { dyp in
                            let dx = try XCTUnwrap(layer.backward(dyp.baseAddress!, batch: c.batch, needInputGradient: true))
                            return Array(UnsafeBufferPointer(start: dx, count: x.count))
                        }
                        let ref = dy.withUnsafeBufferPointer { layer.referenceBackward(xp.baseAddress!, $0.baseAddress!, batch: c.batch) }
                        assertClose(dxFast, ref.dx, absolute: 1e-5, relative: 1e-5, "dx \(label)")
                        let W = c.outputs * c.kernel * c.inputs
                        let dW = (0..<W).map { d[$0] - before[$0] }, db = (W..<P).map { d[$0] - before[$0] }
                        assertClose(dW, ref.dWeight, absolute: 1e-5, relative: 1e-5, "dW \(label)")
                        assertClose(db, ref.dBias, absolute: 1e-5, relative: 1e-5, "dbias \(label)")
                    }
                }
            }
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
