@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// The default inference batch (`Inference.batchSize(for:)`): 256 windows, fewer when a
/// window's activations are large, at least 8; and batched logits that do not depend on it.
final class InferenceBatchTests: XCTestCase {
    func testActivationCountAndDefaultBatch() throws {
        // relu [1024, 256] + globalAveragePool 256 + linear 2 values per window.
        let wide = try Network(
            layers: [.relu, .globalAveragePool, .linear(inputs: 256, outputs: 2)], input: Shape(time: 1024, channels: 256))
        XCTAssertEqual(wide.activationValuesPerWindow, 262_144 + 256 + 2)
        XCTAssertEqual(Inference.batchSize(for: wide), (1 << 25) / 262_402)
        XCTAssertEqual(Inference.batchSize(for: wide), 127)
        let small = try Network(layers: [.flatten, .linear(inputs: 6, outputs: 2)], input: Shape(time: 2, channels: 3))
        XCTAssertEqual(small.activationValuesPerWindow, 8)
        XCTAssertEqual(Inference.batchSize(for: small), 256)
        // 2^24 values per window: the floor of 8.
        let huge = try Network(
            layers: [.relu, .globalAveragePool, .linear(inputs: 4096, outputs: 2)], input: Shape(time: 4096, channels: 4096))
        XCTAssertEqual(Inference.batchSize(for: huge), 8)
        // graphConv counts its output, its columns and its partition products (scratch):
        // T·J·O + T·J·K·I + T·J·P·O = 45·8·(64 + 5·4 + 2·64), then pool 512, linear 3.
        let a = [Float](repeating: 0.5, count: 64)
        let graph = try Network(
            layers: [
                .graphConv(joints: 8, inputs: 4, outputs: 64, kernel: 5, adjacency: [a, a]), .globalAveragePool,
                .linear(inputs: 512, outputs: 3),
            ], input: Shape(time: 45, channels: 32))
        XCTAssertEqual(graph.activationValuesPerWindow, 45 * 8 * (64 + 5 * 4 + 2 * 64) + 512 + 3)
    }

    /// A ST-GCN-like network (spatial graph, Winograd temporal layer with a lane per joint,
    /// layerNorm, pooling): its logits in batches of 8, 12, 16 and 48 are the same bits, trained
    /// (not frozen) and frozen, so the default batch is only a memory choice.
    func testLogitsDoNotDependOnTheBatchSize() throws {
        let J = 5, T = 12, count = 48
        var g = SeededGenerator(seed: 11)
        let spatial = (0..<2).map { _ in (0..<(J * J)).map { _ in g.nextSymmetric(1) } }
        let identity = (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 1 : 0) }
        let net = try Network(
            layers: [
                .graphConv(joints: J, inputs: 3, outputs: 8, kernel: 1, adjacency: spatial), .layerNorm(channels: J * 8, epsilon: 1e-5), .relu,
                .graphConv(joints: J, inputs: 8, outputs: 8, kernel: 5, adjacency: [identity]), .globalAveragePool,
                .linear(inputs: J * 8, outputs: 4),
            ], input: Shape(time: T, channels: J * 3))
        net.initialize(seed: 3)
        let x = (0..<(count * T * J * 3)).map { _ in g.nextSymmetric(1) }
        for frozen in [false, true] {
            if frozen { net.freeze() }
            let whole = Inference.logits(net, features: x, count: count, batchSize: count)
            for b in [8, 12, 16] {
                XCTAssertEqual(
                    Inference.logits(net, features: x, count: count, batchSize: b).map(\.bitPattern), whole.map(\.bitPattern),
                    "batch \(b), frozen \(frozen)")
            }
        }
    }
}
