import XCTest

@testable import ActionRuntime
@testable import PoseCore

/// Backward with the layers' input gradients in a network-wide pool of shared buffers
/// (`GradientPool`) against the same network with a buffer per layer: the same bits.
final class GradientPoolTests: XCTestCase {
    static let input = Shape(time: 20, channels: 24)  // 8 joints in 3D

    /// Residual blocks (a projected shortcut and an identity one, so a pinned dy and a pinned
    /// body gradient), graph convolutions over partitions and over time (Winograd: the temporal
    /// Conv1d inside writes the graph layer's dx), layerNorm, dropout, GELU, pooling; and a
    /// two-member network (averageProbabilities: a convnet with a residual block and a Fourier
    /// pyramid), trained both ways (`forward` + `backward`, and member by member), alone and
    /// followed by a linear layer.
    static let networks: [(name: String, layers: [LayerSpec])] = {
        let J = 8, w = 6
        let identity = (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 1 : 0) }
        let neighbours = (0..<(J * J)).map { e -> Float in abs(e / J - e % J) == 1 ? 0.5 : 0 }
        let spatial = [identity, neighbours, neighbours.map { $0 / 2 }]
        let jointMajor = (0..<24).map { ($0 % 3) * 8 + $0 / 3 }  // [x0 y0 z0 x1 ...] from [x0 … x7 y0 …]
        func block(_ i: Int) -> [LayerSpec] {
            [
                .graphConv(joints: J, inputs: i, outputs: w, kernel: 1, adjacency: spatial), .layerNorm(channels: J * w, epsilon: 1e-5),
                .relu, .dropout(rate: 0.2), .graphConv(joints: J, inputs: w, outputs: w, kernel: 5, adjacency: [identity]),
                .layerNorm(channels: J * w, epsilon: 1e-5),
            ]
        }
        let stgcn: [LayerSpec] = [
            .selectChannels(jointMajor),
            .residual(body: block(3), shortcut: [.graphConv(joints: J, inputs: 3, outputs: w, kernel: 1, adjacency: [identity])]),
            .relu, .dropout(rate: 0.2), .residual(body: block(w), shortcut: []), .gelu, .globalAveragePool,
            .linear(inputs: J * w, outputs: 4),
        ]
        let conv: [LayerSpec] = [
            .selectChannels(Array(0..<12)), .conv1d(inputs: 12, outputs: 16, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
            .residual(
                body: [.conv1d(inputs: 16, outputs: 16, kernel: 3, stride: 1, dilation: 2, padding: 2), .gelu, .dropout(rate: 0.1)],
                shortcut: []),
            .temporalPyramidPool(levels: [1, 2]), .linear(inputs: 48, outputs: 4),
        ]
        let ftp: [LayerSpec] = [
            .fourierPyramid(levels: [1, 2], coefficients: 3),
            .standardize(mean: (0..<216).map { Float($0 % 5) * 0.1 }, scale: (0..<216).map { 0.5 + Float($0 % 3) * 0.25 }),
            .linear(inputs: 216, outputs: 4),
        ]
        return [
            ("stgcn", stgcn), ("members", [.averageProbabilities([conv, ftp])]),
            // The members' gradients all come from one dy, held in the pool (pinned).
            ("members, then linear", [.averageProbabilities([conv, ftp]), .linear(inputs: 4, outputs: 4)]),
        ]
    }()

    /// Every layer's input-gradient buffer, nested layers included.
    static func privateBuffers(_ layers: [Layer]) -> [Buffer] {
        layers.flatMap { layer -> [Buffer] in
            ((layer as? PooledInputGradient).map { [$0.dx] } ?? [])
                + ((layer as? LayerContainer).map { privateBuffers($0.sublayers) } ?? [])
        }
    }

    func testSharedInputGradientsGiveTheBitsOfPrivateOnes() throws {
        let batch = 6
        for (name, layers) in Self.networks {
            let shared = try Network(layers: layers, input: Self.input, storage: nil, sharedGradients: true)
            let own = try Network(layers: layers, input: Self.input, storage: nil, sharedGradients: false)
            XCTAssertNotNil(shared.gradientPool)
            XCTAssertNil(own.gradientPool)
            shared.initialize(seed: 5)
            own.initialize(seed: 5)
            var g = SeededGenerator(seed: 8)
            // Three steps, each with new inputs: the shared buffers hold the last step's values.
            for step in 0..<3 {
                let x = (0..<(batch * Self.input.count)).map { _ in g.nextSymmetric(1.5) }
                let members = shared.memberCount
                let dlogits = (0..<(members * batch * 4)).map { _ in g.nextSymmetric(0.3) }
                func run(_ n: Network) -> (gradients: [UInt32], dx: [UInt32]) {
                    n.zeroGradients()
                    var mode = ForwardMode.training(seed: UInt64(step))
                    var dx: [UInt32] = []
                    x.withUnsafeBufferPointer { xp in
                        dlogits.withUnsafeBufferPointer { dp in
                            if step == 1 && members > 1 {  // member by member, as the trainer does
                                _ = n.forwardMembers(xp.baseAddress!, batch: batch, mode: &mode)
                                n.backwardMembers(dp.baseAddress!, batch: batch)
                            } else {
                                _ = n.forward(xp.baseAddress!, batch: batch, mode: &mode)
                                let d = n.backward(dp.baseAddress!, batch: batch, needInputGradient: true)!
                                dx = UnsafeBufferPointer(start: d, count: batch * Self.input.count).map(\.bitPattern)
                            }
                        }
                    }
                    return (UnsafeBufferPointer(start: n.gradients, count: n.parameterCount).map(\.bitPattern), dx)
                }
                let a = run(shared), b = run(own)
                XCTAssertEqual(a.gradients, b.gradients, "\(name) step \(step): parameter gradients")
                XCTAssertEqual(a.dx, b.dx, "\(name) step \(step): input gradient")
                XCTAssertTrue(b.gradients.contains { Float(bitPattern: $0) != 0 }, "\(name): some gradient")
            }
            // Fewer buffers than pooled layers, and fewer values than the private ones hold.
            let pool = try XCTUnwrap(shared.gradientPool)
            let pooled = Self.privateBuffers(own.layers).filter { $0.capacity > 1 }
            XCTAssertLessThan(pool.buffers.count, pooled.count, name)
            XCTAssertLessThan(pool.capacity, pooled.reduce(0) { $0 + $1.capacity }, name)
        }
    }

    /// The pool hands out a buffer that holds neither the pointers given nor a pinned one, and
    /// reuses freed buffers instead of growing.
    func testPoolAvoidsLiveAndPinnedBuffers() {
        let pool = GradientPool()
        let a = pool.buffer(avoiding: nil)
        a.reserve(10)
        let b = pool.buffer(avoiding: UnsafePointer(a.pointer + 3))  // inside a
        XCTAssertFalse(a === b)
        b.reserve(10)
        pool.pin(UnsafePointer(b.pointer))
        let c = pool.buffer(avoiding: UnsafePointer(a.pointer))
        XCTAssertFalse(c === a || c === b, "a is live, b pinned")
        pool.unpin(UnsafePointer(b.pointer))
        XCTAssertTrue(pool.buffer(avoiding: UnsafePointer(a.pointer)) === b, "b free again")
        XCTAssertTrue(pool.buffer(avoiding: nil) === a)
        XCTAssertEqual(pool.buffers.count, 3)
    }
}
