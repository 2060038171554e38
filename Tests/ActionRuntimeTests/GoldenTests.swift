@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// Forwards checked against values computed by Tests/golden/make_golden.py (NumPy in float64,
/// cross-checked against PyTorch). Tolerance: 2e-6 absolute + 1e-5 relative, a few float32
/// ulps of outputs of order 1; a wrong tap, offset or epsilon moves outputs by 1e-2 or more.
final class GoldenTests: XCTestCase {
    func run(_ layers: [LayerSpec], input: Shape, batch: Int, parameters: [Float], x: [Float]) throws -> [Float] {
        let net = try Network(layers: layers + [.flatten], input: input)
        XCTAssertEqual(net.parameterCount, parameters.count)
        parameters.withUnsafeBufferPointer { net.load(parameters: $0) }
        return net.predictLogits(x, batch: batch)
    }

    func testConvForward() throws {
        for c in Golden.conv {
            let spec = LayerSpec.conv1d(
                inputs: c.inputs, outputs: c.outputs, kernel: c.kernel, stride: c.stride, dilation: c.dilation, padding: c.padding)
            let y = try run([spec], input: Shape(time: c.time, channels: c.inputs), batch: c.batch, parameters: c.weight + c.bias, x: c.x)
            assertClose(y, c.y, absolute: 2e-6, relative: 1e-5, "\(spec)")
        }
    }

    func testLayerNormForward() throws {
        for c in Golden.layerNorm {
            let spec = LayerSpec.layerNorm(channels: c.channels, epsilon: c.epsilon)
            let y = try run([spec], input: Shape(time: c.time, channels: c.channels), batch: c.batch, parameters: c.gamma + c.beta, x: c.x)
            assertClose(y, c.y, absolute: 2e-6, relative: 1e-5, "\(spec)")
            // The constant first row normalises to 0, leaving beta.
            assertClose(Array(y[0..<c.channels]), c.beta, absolute: 1e-6, relative: 0)
        }
    }

    func testGELUForward() throws {
        let y = try run([.gelu], input: Shape(time: 1, channels: Golden.geluX.count), batch: 1, parameters: [], x: Golden.geluX)
        assertClose(y, Golden.geluY, absolute: 2e-6, relative: 1e-5)
    }

    func testGraphConvForward() throws {
        for c in Golden.graphConv {
            let J = c.joints
            let matrices = (0..<c.partitions).map { Array(c.adjacency[($0 * J * J)..<(($0 + 1) * J * J)]) }
            let spec = LayerSpec.graphConv(joints: J, inputs: c.inputs, outputs: c.outputs, kernel: c.kernel, adjacency: matrices)
            let y = try run(
                [spec], input: Shape(time: c.time, channels: J * c.inputs), batch: c.batch, parameters: c.weight + c.bias, x: c.x)
            assertClose(y, c.y, absolute: 2e-6, relative: 1e-5, "\(spec)")
        }
    }

    func testTemporalPyramidPoolForward() throws {
        for c in Golden.pyramid {
            let spec = LayerSpec.temporalPyramidPool(levels: c.levels)
            let y = try run([spec], input: Shape(time: c.time, channels: c.channels), batch: c.batch, parameters: [], x: c.x)
            assertClose(y, c.y, absolute: 2e-6, relative: 1e-5, "\(spec)")
        }
    }

    func testFourierPyramidForward() throws {
        for c in Golden.fourier {
            let spec = LayerSpec.fourierPyramid(levels: c.levels, coefficients: c.coefficients)
            let y = try run([spec], input: Shape(time: c.time, channels: c.channels), batch: c.batch, parameters: [], x: c.x)
            assertClose(y, c.y, absolute: 2e-6, relative: 1e-5, "\(spec)")
        }
    }

    func testStandardizeForward() throws {
        let spec = LayerSpec.standardize(mean: Golden.standardizeMean, scale: Golden.standardizeScale)
        let y = try run([spec], input: Shape(time: 3, channels: 4), batch: 2, parameters: [], x: Golden.standardizeX)
        assertClose(y, Golden.standardizeY, absolute: 1e-6, relative: 1e-6, "\(spec)")
    }
}
