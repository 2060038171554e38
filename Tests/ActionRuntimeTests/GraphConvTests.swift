@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

/// `graphConv`: finite-difference gradients, the identity graph against `conv1d` per joint,
/// chunks and parts against one pass, and the shape checks' errors. (Its golden forward is in
/// `GoldenTests`; `LayerKindsTests` covers the readers, the model file and the ONNX export.)
final class GraphConvTests: XCTestCase {
    /// `P` non-symmetric `J x J` matrices with about a third of the entries zero.
    static func adjacency(partitions P: Int, joints J: Int, seed: UInt64) -> [[Float]] {
        var g = SeededGenerator(seed: seed)
        return (0..<P).map { _ in (0..<(J * J)).map { _ in g.nextInt(below: 3) == 0 ? 0 : g.nextSymmetric(1) } }
    }

    static func identity(_ J: Int) -> [Float] { (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 1 : 0) } }

    static func spec(_ J: Int, _ I: Int, _ O: Int, kernel K: Int, partitions P: Int, seed: UInt64 = 1) -> LayerSpec {
        .graphConv(joints: J, inputs: I, outputs: O, kernel: K, adjacency: adjacency(partitions: P, joints: J, seed: seed))
    }

    // MARK: Gradients (weight, bias and input)

    func testGradientsWithThreePartitionsAndKernelThree() throws {
        let a = Self.adjacency(partitions: 3, joints: 4, seed: 3)
        XCTAssertNotEqual(a[0][1], a[0][4], "the test graph should not be symmetric")
        try checkGradients(
            layers: [.graphConv(joints: 4, inputs: 2, outputs: 3, kernel: 3, adjacency: a), .flatten], input: Shape(time: 4, channels: 8),
            batch: 2, jitter: 0.2)
    }

    func testGradientsOfTheIdentityGraph() throws {
        try checkGradients(
            layers: [.graphConv(joints: 3, inputs: 2, outputs: 3, kernel: 3, adjacency: [Self.identity(3)]), .flatten],
            input: Shape(time: 4, channels: 6), batch: 2)
    }

    func testGradientsWithKernelOne() throws {
        try checkGradients(layers: [Self.spec(5, 3, 2, kernel: 1, partitions: 2), .flatten], input: Shape(time: 3, channels: 15), batch: 2)
    }

    func testGradientsOfOneWindowOfOneStepWithAKernelLongerThanTheWindow() throws {
        try checkGradients(layers: [Self.spec(3, 2, 2, kernel: 5, partitions: 1), .flatten], input: Shape(time: 1, channels: 6), batch: 1)
    }

    func testGradientsInAStack() throws {
        // ST-GCN's unit: spatial (K = 1, 3 partitions) → layerNorm → GELU → temporal (K = 3, identity).
        let J = 3, identity = [Self.identity(J)]
        try checkGradients(
            layers: [
                Self.spec(J, 2, 4, kernel: 1, partitions: 3), .layerNorm(channels: J * 4, epsilon: 1e-5), .gelu,
                .graphConv(joints: J, inputs: 4, outputs: 2, kernel: 3, adjacency: identity), .globalAveragePool,
                .linear(inputs: J * 2, outputs: 3),
            ], input: Shape(time: 3, channels: J * 2), batch: 2, jitter: 0.2)
    }

    // MARK: Against conv1d

    /// One partition with A = identity is `conv1d` (padding (K − 1)/2) applied to each joint's
    /// channels with the same weights; `weight [1, O, K, I]` is conv1d's `[O, K, I]`.
    func testIdentityGraphIsAConv1dPerJoint() throws {
        let (J, I, O, K, T, B) = (4, 3, 5, 3, 6, 2)
        let identity = Self.identity(J)
        let graph = try ModelFixtures.network(
            [.graphConv(joints: J, inputs: I, outputs: O, kernel: K, adjacency: [identity]), .flatten], input: Shape(time: T, channels: J * I),
            seed: 2)
        let conv = try Network(
            layers: [.conv1d(inputs: I, outputs: O, kernel: K, stride: 1, dilation: 1, padding: 1), .flatten], input: Shape(time: T, channels: I))
        conv.load(parameters: UnsafeBufferPointer(start: graph.parameters, count: graph.parameterCount))
        let x = ModelFixtures.randomInputs(count: B, values: T * J * I, seed: 4)
        let y = graph.predictLogits(x, batch: B)
        for j in 0..<J {
            var xj: [Float] = [], mine: [Float] = []
            for r in 0..<(B * T) {
                let xs: Int = (r * J + j) * I, ys: Int = (r * J + j) * O
                xj += x[xs..<(xs + I)]
                mine += y[ys..<(ys + O)]
            }
            let yj = conv.predictLogits(xj, batch: B)
            assertClose(mine, yj, absolute: 1e-6, relative: 1e-5, "joint \(j)")
        }
    }

    /// From a batch of 8 (and frozen, at any batch) the identity graph with a kernel Winograd
    /// takes (K = 3, 5) runs on `Conv1d`'s Winograd formulation, one lane per joint: the same
    /// values as conv1d on each joint within Winograd's rounding, its gradients against finite
    /// differences, and several parts and chunks against one pass.
    func testIdentityGraphOnWinogradLanesIsAConv1dPerJoint() throws {
        for K in [3, 5] {
            let (J, I, O, T, B) = (4, 3, 5, 9, 9)
            let graph = try ModelFixtures.network(
                [.graphConv(joints: J, inputs: I, outputs: O, kernel: K, adjacency: [Self.identity(J)]), .flatten],
                input: Shape(time: T, channels: J * I), seed: 2)
            let layer = try XCTUnwrap(graph.layers[0] as? GraphConv)
            XCTAssertNotNil(layer.temporal)
            let conv = try Network(
                layers: [.conv1d(inputs: I, outputs: O, kernel: K, stride: 1, dilation: 1, padding: (K - 1) / 2), .flatten],
                input: Shape(time: T, channels: I))
            conv.load(parameters: UnsafeBufferPointer(start: graph.parameters, count: graph.parameterCount))
            let x = ModelFixtures.randomInputs(count: B, values: T * J * I, seed: 4)
            var yj: [[Float]] = []
            for j in 0..<J {
                var xj: [Float] = []
                for r in 0..<(B * T) { xj += x[((r * J + j) * I)..<((r * J + j) * I + I)] }
                yj.append(conv.predictLogits(xj, batch: B))  // batch 9: conv1d's own Winograd, lanes 1
            }
            func check(_ n: Int, _ name: String) {
                let y = graph.predictLogits(Array(x[..<(n * T * J * I)]), batch: n)
                for j in 0..<J {
                    var mine: [Float] = []
                    for r in 0..<(n * T) { mine += y[((r * J + j) * O)..<((r * J + j) * O + O)] }
                    assertClose(mine, Array(yj[j][..<(n * T * O)]), absolute: 1e-5, relative: 1e-4, "K \(K) \(name) joint \(j)")
                }
            }
            check(B, "training")
            XCTAssertTrue(layer.usedTemporal)
            graph.freeze()
            check(B, "frozen")
            check(1, "frozen batch 1")
            XCTAssertTrue(layer.usedTemporal)
            graph.thaw()
            _ = graph.predictLogits(Array(x[..<(2 * T * J * I)]), batch: 2)
            XCTAssertFalse(layer.usedTemporal, "a training batch under 8 stays on im2col")
            try checkGradients(
                layers: [.graphConv(joints: J, inputs: I, outputs: O, kernel: K, adjacency: [Self.identity(J)]), .flatten],
                input: Shape(time: T, channels: J * I), batch: 8)
        }
        // Winograd's dU is summed chunk by chunk, then transformed: more rounding in between.
        try checkChunksAndParts(
            .graphConv(joints: 5, inputs: 2, outputs: 4, kernel: 3, adjacency: [Self.identity(5)]), batch: 9, absolute: 1e-5, relative: 1e-4)
    }

    // MARK: Chunks and parts

    /// Chunks of 1 and 2 batch elements and splits into 2 and 3 parts give the results of one
    /// pass (dW and dbias are summed in another order, so within rounding), with and without
    /// the input gradient, for a general graph, the identity (the GEMM writes y directly) and a
    /// spatial layer that aggregates its inputs first (K = 1, I < O).
    func testChunksAndPartsMatchOnePass() throws {
        let aggregating = Self.spec(5, 2, 4, kernel: 1, partitions: 3)
        for spec in [
            Self.spec(5, 2, 4, kernel: 3, partitions: 3), .graphConv(joints: 5, inputs: 2, outputs: 4, kernel: 3, adjacency: [Self.identity(5)]),
            aggregating,
        ] {
            try checkChunksAndParts(spec)
        }
        XCTAssertTrue(try XCTUnwrap(ModelFixtures.network([aggregating, .flatten], input: Shape(time: 3, channels: 10), seed: 1).layers[0] as? GraphConv).aggregatesFirst)
    }

    /// Aggregating first (K = 1, I < O) gives the values of aggregating after the GEMM (the
    /// direct sum), and its gradients match finite differences.
    func testAggregatingFirstMatchesTheDirectSum() throws {
        let (J, I, O, T, B) = (5, 2, 6, 3, 2)
        let a = Self.adjacency(partitions: 3, joints: J, seed: 7)
        let spec = LayerSpec.graphConv(joints: J, inputs: I, outputs: O, kernel: 1, adjacency: a)
        let net = try ModelFixtures.network([spec, .flatten], input: Shape(time: T, channels: J * I), seed: 3)
        XCTAssertTrue(try XCTUnwrap(net.layers[0] as? GraphConv).aggregatesFirst)
        let x = ModelFixtures.randomInputs(count: B, values: T * J * I, seed: 5)
        let y = net.predictLogits(x, batch: B)
        let w = Array(UnsafeBufferPointer(start: net.parameters, count: 3 * O * I)), bias = Array(UnsafeBufferPointer(start: net.parameters + 3 * O * I, count: O))
        var expected: [Float] = []
        for s in 0..<(B * T) {
            for j in 0..<J {
                for o in 0..<O {
                    var e = Double(bias[o])
                    for p in 0..<3 {
                        for i in 0..<J {
                            for c in 0..<I { e += Double(a[p][j * J + i]) * Double(w[(p * O + o) * I + c]) * Double(x[(s * J + i) * I + c]) }
                        }
                    }
                    expected.append(Float(e))
                }
            }
        }
        assertClose(y, expected, absolute: 1e-5, relative: 1e-5)
        try checkGradients(layers: [spec, .flatten], input: Shape(time: T, channels: J * I), batch: B, jitter: 0.2)
    }

    func checkChunksAndParts(_ spec: LayerSpec, batch B: Int = 5, absolute: Float = 1e-6, relative: Float = 1e-5) throws {
        let input = Shape(time: 3, channels: 10)
        func run(chunk: Int, parts: Int, needInputGradient: Bool) throws -> [Float] {
            let net = try ModelFixtures.network([spec, .flatten], input: input, seed: 6)
            let layer = try XCTUnwrap(net.layers[0] as? GraphConv)
            XCTAssertEqual(layer.isIdentity, (spec.kind as? GraphConvKind)?.partitions == 1)
            if chunk > 0 {
                layer.chunk = chunk
                layer.temporal?.chunk = chunk
            }
            layer.maxParts = parts
            XCTAssertEqual(layer.partCount(batch: B), parts)
            let x = ModelFixtures.randomInputs(count: B, values: input.count, seed: 8)
            let r = ModelFixtures.randomInputs(count: B, values: net.classCount, seed: 9)
            net.zeroGradients()
            var mode = ForwardMode.training(seed: 1)
            let y = x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.forward($0.baseAddress!, batch: B, mode: &mode), count: r.count)) }
            let dx: [Float] = r.withUnsafeBufferPointer { rp in
                guard let d = net.backward(rp.baseAddress!, batch: B, needInputGradient: needInputGradient) else { return [] }
                return Array(UnsafeBufferPointer(start: d, count: x.count))
            }
            return y + dx + Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount))
        }
        let reference = try run(chunk: 0, parts: 1, needInputGradient: true)
        let withoutDx = try run(chunk: 0, parts: 1, needInputGradient: false)
        let n = B * 3 * 20, x = B * 3 * 10
        XCTAssertEqual(withoutDx, Array(reference[..<n]) + Array(reference[(n + x)...]))
        for (chunk, parts) in [(1, 1), (2, 1), (1, 2), (2, 3)] {
            let other = try run(chunk: chunk, parts: parts, needInputGradient: true)
            assertClose(other, reference, absolute: absolute, relative: relative, "chunk \(chunk), parts \(parts)")
        }
    }

    /// Frozen (a loaded model): the packed weight on the runtime's own kernels gives the
    /// unfrozen layer's outputs to rounding, and the same bits whatever the chunks and parts
    /// (whole windows, or for one window Z's panels and the aggregation's steps), and for a
    /// window alone as in a batch; thawed, it follows changed weights again.
    func testFrozenLayerMatchesOpenBLASAndSplitsGiveTheSameBits() throws {
        let input = Shape(time: 4, channels: 15), B = 5
        for spec in [Self.spec(5, 3, 20, kernel: 3, partitions: 3), .graphConv(joints: 5, inputs: 3, outputs: 20, kernel: 1, adjacency: [Self.identity(5)])] {
            let net = try ModelFixtures.network([spec, .flatten], input: input, seed: 6)
            let layer = try XCTUnwrap(net.layers[0] as? GraphConv)
            let x = ModelFixtures.randomInputs(count: B, values: input.count, seed: 8)
            let plain = net.predictLogits(x, batch: B)
            net.freeze()
            var first: [UInt32]?
            for (chunk, parts) in [(100, 1), (1, 1), (2, 2), (100, 3), (1, 7)] {
                (layer.chunk, layer.maxParts) = (chunk, parts)
                let y = net.predictLogits(x, batch: B)
                assertClose(y, plain, absolute: 1e-5, relative: 1e-5, "\(spec.kind.summary): frozen, chunk \(chunk), parts \(parts)")
                XCTAssertEqual(y.map(\.bitPattern), first ?? y.map(\.bitPattern), "\(spec.kind.summary): chunk \(chunk), parts \(parts)")
                first = first ?? y.map(\.bitPattern)
                for parts in [1, 2, 3] {  // the second window alone: Z's panels split over the parts
                    layer.maxParts = parts
                    let one = net.predictLogits(Array(x[input.count..<(2 * input.count)]), batch: 1)
                    XCTAssertEqual(one.map(\.bitPattern), Array(y[net.classCount..<(2 * net.classCount)]).map(\.bitPattern), "one window, \(parts) parts")
                }
            }
            net.thaw()
            net.parameters[0] += 1
            XCTAssertNotEqual(net.predictLogits(x, batch: B), plain, "thawed: the changed weight is used")
        }
    }

    // MARK: The header

    /// Adjacency values that need care (a degree-normalised 1/3, the smallest normal and a
    /// subnormal, −0, the largest float) read back bit for bit: from the layer's data tensor
    /// (format 1.8), and from the header list of files before 1.8 through both header decoders.
    func testAwkwardAdjacencyValuesRoundTrip() throws {
        let values: [Float] = [1 / 3, .leastNormalMagnitude, .leastNonzeroMagnitude, -0.0, .greatestFiniteMagnitude, -1e-7, 0.1, 2, 1]
        let spec = LayerSpec.graphConv(joints: 3, inputs: 1, outputs: 2, kernel: 1, adjacency: [values])
        let net = try ModelFixtures.network([spec, .globalAveragePool, .linear(inputs: 6, outputs: 2)], input: Shape(time: 2, channels: 3), seed: 1)
        let bytes = try ModelFile.encode(
            classes: ["a", "b"], input: LayerKindsTests.modelInput(channels: 3, frames: 2), network: net, provenance: .init(seed: 1))
        let header = try XCTUnwrap(ModelFileLoadTests.foundation(ModelFileLoadTests.headerBytes(bytes)))
        XCTAssertEqual(header.tensors.first?.name, "layers.0.adjacency")
        XCTAssertEqual(header.tensors.first?.shape, [1, 3, 3])
        let loaded = try ModelFile.load(bytes).header.layers
        XCTAssertEqual(loaded, net.specs)
        XCTAssertEqual(try XCTUnwrap(loaded[0].kind as? GraphConvKind).adjacency.map(\.bitPattern), values.map(\.bitPattern))
        // The list of files before 1.8 (LayerSpec's JSON form).
        let json = [UInt8](try JSONEncoder().encode(spec))
        let reference = try JSONDecoder().decode(LayerSpec.self, from: Data(json))
        XCTAssertEqual(try XCTUnwrap(reference.kind as? GraphConvKind).adjacency.map(\.bitPattern), values.map(\.bitPattern))
        let fast = json.withUnsafeBytes { raw in
            var parser = HeaderJSON.Parser(bytes: raw)
            return try? HeaderJSON.layer(try parser.document())
        }
        if let fast { XCTAssertEqual(fast, reference) }  // the fast path may decline subnormals
    }

    // MARK: Shape checks

    func assertRejected(_ spec: LayerSpec, input: Shape, naming words: [String], line: UInt = #line) {
        XCTAssertThrowsError(try Network(layers: [spec], input: input), line: line) { e in
            let text = "\(e)"
            for w in words { XCTAssertTrue(text.contains(w), "\(text) should name \(w)", line: line) }
        }
    }

    func testShapeErrorsNameTheField() {
        let a = Self.adjacency(partitions: 2, joints: 3, seed: 1)
        assertRejected(
            .graphConv(joints: 3, inputs: 2, outputs: 4, kernel: 3, adjacency: a), input: Shape(time: 4, channels: 7),
            naming: ["graphConv", "joints x inputs = 3 x 2 = 6", "[4, 7]"])
        assertRejected(.graphConv(joints: 3, inputs: 2, outputs: 4, kernel: 4, adjacency: a), input: Shape(time: 4, channels: 6), naming: ["kernel must be odd", "4"])
        assertRejected(
            .graphConv(joints: 3, inputs: 2, outputs: 4, kernel: 3, adjacency: [a[0], Array(a[1].dropLast())]), input: Shape(time: 4, channels: 6),
            naming: ["adjacency has 17 values", "2 x 3 x 3 = 18"])
        var nan = a
        nan[1][4] = .nan
        assertRejected(.graphConv(joints: 3, inputs: 2, outputs: 4, kernel: 3, adjacency: nan), input: Shape(time: 4, channels: 6), naming: ["adjacency[13] is not finite"])
        assertRejected(.graphConv(joints: 3, inputs: 2, outputs: 4, kernel: 3, adjacency: []), input: Shape(time: 4, channels: 6), naming: ["partitions must be positive"])
        assertRejected(.graphConv(joints: 3, inputs: 2, outputs: 0, kernel: 3, adjacency: a), input: Shape(time: 4, channels: 6), naming: ["outputs must be positive"])
    }

    /// The model file's shape pass (what its readers run) refuses a wrong adjacency, naming the layer.
    func testModelFileShapePassRejectsAWrongAdjacency() {
        let spec = LayerSpec.graphConv(joints: 3, inputs: 1, outputs: 2, kernel: 1, adjacency: [[1, 0, 0, 0, 1, 0, 0, 0]])
        XCTAssertThrowsError(try ModelFile.layerOutputShapes([.relu, spec], input: Shape(time: 2, channels: 3))) { e in
            XCTAssertTrue("\(e)".contains("layers[1]") && "\(e)".contains("adjacency has 8 values"), "\(e)")
        }
    }
}
