@testable import ActionRuntime
@testable import actiontrain
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Layer data as tensors (format 1.8): `standardize`'s statistics are the first tensors of the
/// table and the header holds only their channel count; files before 1.8, with the statistics
/// in the header, load as before.
extension ModelFileTests {
    /// input [2, 2] → standardize → flatten → linear (the hand-made file's weights).
    static let statistics = (mean: [Float](arrayLiteral: 0.5, -1), scale: [Float](arrayLiteral: 2, 0.25))
    static let standardizeLayersJSON =
        #"[{"channels":2,"type":"standardize"},{"type":"flatten"},{"inputs":4,"outputs":2,"type":"linear"}]"#

    /// The table of that network: the layer data, then the parameters.
    static func standardizeTensorsJSON(mean: String = #""length":8,"name":"layers.0.mean","offset":0,"shape":[2]"#) -> String {
        """
        [{"dtype":"float32","layout":"[channels]",\(mean)},\
        {"dtype":"float32","layout":"[channels]","length":8,"name":"layers.0.scale","offset":64,"shape":[2]},\
        {"dtype":"float32","layout":"[outputs, inputs]","length":32,"name":"layers.2.weight","offset":128,"shape":[2,4]},\
        {"dtype":"float32","layout":"[outputs]","length":8,"name":"layers.2.bias","offset":192,"shape":[2]}]
        """
    }

    static func withStandardize(mean: [Float] = statistics.mean) -> HandMade {
        var m = HandMade(
            header: headerJSON(layers: standardizeLayersJSON, tensors: standardizeTensorsJSON()),
            data: tensorBytes(mean) + tensorBytes(statistics.scale) + data)
        m.minor = 8
        return m
    }

    func testStandardizeStatisticsAreReadFromTheirTensors() throws {
        let bytes = Self.withStandardize().bytes
        let path = scratch.appendingPathComponent("standardize.atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let expected = LayerSpec.standardize(mean: Self.statistics.mean, scale: Self.statistics.scale)
        // x = [1, -1, 2, 0.5] → (x − mean)·scale = [1, 0, 3, 0.375] → W·x + b.
        let logits: [Float] = [0.25 + 1 + 9 + 1.5, -1 - 1 + 1.5 + 0.75]
        let loads: [(String, (header: ModelHeader, network: Network))] = [
            ("bytes", try ModelFile.load(bytes)), ("read", try ModelFile.load(contentsOf: path)),
            ("mapped", try ModelFile.load(contentsOf: path, memoryMapped: true)),
        ]
        for (way, (header, network)) in loads {
            XCTAssertEqual(header.layers, [expected, .flatten, .linear(inputs: 4, outputs: 2)], way)
            XCTAssertEqual(network.tensors.map(\.name), ["layers.2.weight", "layers.2.bias"], way)
            XCTAssertEqual(header.tensors.map(\.name), ["layers.0.mean", "layers.0.scale", "layers.2.weight", "layers.2.bias"], way)
            assertClose(network.predictLogits([1, -1, 2, 0.5], batch: 1), logits, absolute: 1e-6, relative: 0, way)
        }
    }

    /// The writer: statistics as tensors at the head of the table (a nested layer's too), the
    /// header without them, the same network when read back, the same bytes when written again.
    func testWriterKeepsStandardizeStatisticsAsTensors() throws {
        let member: [LayerSpec] = [
            .selectChannels([1, 0, 1]), .standardize(mean: [0.5, -2, 1e-3], scale: [4, 0.125, 3.5]), .globalAveragePool,
            .linear(inputs: 3, outputs: 2),
        ]
        let network = try Network(
            layers: [.averageProbabilities([[.flatten, .linear(inputs: 4, outputs: 2)], member])], input: Shape(time: 2, channels: 2))
        network.initialize(seed: 3)
        let input = try ModelFile.load(Self.good().bytes).header.input
        let bytes = try ModelFile.encode(classes: ["open", "close"], input: input, network: network, provenance: .init())
        XCTAssertEqual(Array(bytes[8..<12]), [1, 0, 8, 0])
        let h = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
        let json = String(decoding: bytes[64..<(64 + h)], as: UTF8.self)
        XCTAssertTrue(json.contains(#"{"channels":3,"type":"standardize"}"#), json)
        XCTAssertFalse(json.contains("\"mean\""), json)
        let raw = try bytes.withUnsafeBytes { try ModelFile.decode($0) }
        let table = raw.header.tensors
        XCTAssertEqual(table.prefix(2).map(\.name), ["layers.0.members.1.1.mean", "layers.0.members.1.1.scale"])
        XCTAssertEqual(table.prefix(2).map(\.shape), [[3], [3]])
        XCTAssertEqual(table.prefix(2).map(\.layout), ["[channels]", "[channels]"])
        XCTAssertEqual(ModelFile.floats(table[0], in: raw.data), [0.5, -2, 1e-3])
        XCTAssertEqual(ModelFile.floats(table[1], in: raw.data), [4, 0.125, 3.5])
        XCTAssertEqual(table.dropFirst(2).map(\.name), network.tensors.map(\.name))
        let (header, loaded) = try ModelFile.load(bytes)
        XCTAssertEqual(header.layers, network.specs)
        let x = ModelFixtures.randomInputs(count: 3, values: 4, seed: 2)
        XCTAssertEqual(loaded.predictLogits(x, batch: 3), network.predictLogits(x, batch: 3))
        XCTAssertEqual(try ModelFile.encode(classes: ["open", "close"], input: input, network: loaded, provenance: .init()), bytes)
    }

    /// A file of 1.7 (the golden model as committed before 1.8, statistics in the header) loads
    /// to the same layers, weights and logits as the golden model of 1.8, every way, and written
    /// again it is that file byte for byte.
    func testFileBeforeLayerDataLoadsAsBefore() throws {
        let old = ModelFixtures.goldenDirectory.appendingPathComponent("model-1.7.atm").path
        let new = ModelFixtures.goldenDirectory.appendingPathComponent("model.atm").path
        let oldBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: old)))
        XCTAssertEqual(Array(oldBytes[8..<12]), [1, 0, 7, 0], "the fixture is a 1.7 file")
        XCTAssertTrue(String(decoding: oldBytes.prefix(4096), as: UTF8.self).contains(#""mean":["#), "with the statistics in its header")
        let reference = try ModelFile.load(contentsOf: new)
        XCTAssertEqual(reference.header.layers, ModelFixtures.goldenLayers)
        let x = ModelFixtures.randomInputs(count: 4, values: reference.network.inputShape.count, seed: 9)
        for mapped in [false, true] {
            let (header, network) = try ModelFile.load(contentsOf: old, memoryMapped: mapped)
            XCTAssertEqual(header.layers, ModelFixtures.goldenLayers)
            XCTAssertEqual(
                Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount)),
                Array(UnsafeBufferPointer(start: reference.network.parameters, count: reference.network.parameterCount)))
            XCTAssertEqual(network.predictLogits(x, batch: 4), reference.network.predictLogits(x, batch: 4))
        }
        let (h, network) = try ModelFile.load(oldBytes)
        let again = try ModelFile.encode(
            classes: h.classes, input: h.input, network: network, provenance: h.provenance, trainingFrameRate: h.trainingFrameRate)
        XCTAssertTrue(again == [UInt8](try Data(contentsOf: URL(fileURLWithPath: new))), "1.7 written again is the 1.8 golden file")
    }

    func testStatisticsTensorOfTheWrongLengthIsRefusedNamingTheLayer() {
        var m = Self.withStandardize(mean: [0.5, -1, 3])
        m.header = Self.headerJSON(
            layers: Self.standardizeLayersJSON, tensors: Self.standardizeTensorsJSON(mean: #""length":12,"name":"layers.0.mean","offset":0,"shape":[3]"#))
        assertRejects(m.bytes, ["tensor 'layers.0.mean'", "layers[0] (standardize) keeps its mean in this tensor, [2] [channels]", "found 'layers.0.mean' [3]"]) {
            self.badTensor($0)
        }
    }

    func testStatisticsTensorsMissingOrAfterTheWeightsAreRefused() {
        // A table without them (the weights alone).
        assertRejects(header: Self.headerJSON(layers: Self.standardizeLayersJSON), ["layers[0] (standardize) keeps its mean", "found 'layers.1.weight'"]) {
            self.badTensor($0)
        }
        // The weights first.
        let swapped = Self.standardizeTensorsJSON().replacingOccurrences(of: "layers.0.mean", with: "M").replacingOccurrences(of: "layers.2.weight", with: "layers.0.mean")
        assertRejects(header: Self.headerJSON(layers: Self.standardizeLayersJSON, tensors: swapped), ["layers[0] (standardize) keeps its mean", "found 'M'"]) {
            self.badTensor($0)
        }
    }

    func testNonFiniteStatisticIsRefusedNamingTheLayer() {
        for bad in [Float.nan, .infinity] {
            assertRejects(Self.withStandardize(mean: [0.5, bad]).bytes, ["tensor 'layers.0.mean' holds 1 NaN or infinite value", "at [1]"]) {
                if case .nonFiniteValues(tensor: "layers.0.mean", count: 1, firstIndex: [1], _) = $0 { return true }
                return false
            }
        }
    }

    func testStandardizeChannelsMustMatchItsInput() {
        let layers = Self.standardizeLayersJSON.replacingOccurrences(of: #""channels":2"#, with: #""channels":3"#)
        assertRejects(header: Self.headerJSON(layers: layers, tensors: Self.standardizeTensorsJSON()), ["layers[0] (standardize): expects 3 channels"]) {
            self.badHeader($0)
        }
    }

    // MARK: - graphConv's adjacency

    /// input [2, 2] as 2 joints of 1 value → graphConv (A = [[1, 0.5], [0, 1]], weight 2, bias
    /// 0.5) → flatten → linear: as a 1.7 file (A in the header) and as 1.8 (A a data tensor).
    static func withGraphConv(inData: Bool, adjacencyShape: String = "[1,2,2]", length: Int = 16) -> HandMade {
        let layer = #""inputs":1,"joints":2,"kernel":1,"outputs":1,"partitions":1,"type":"graphConv""#
        let layers = "[{" + (inData ? "" : #""adjacency":[1,0.5,0,1],"#) + layer + #"},{"type":"flatten"},{"inputs":4,"outputs":2,"type":"linear"}]"#
        let adjacency = #"{"dtype":"float32","layout":"[partitions, joints, joints]","length":\#(length),"name":"layers.0.adjacency","offset":0,"shape":\#(adjacencyShape)},"#
        let base = inData ? 64 : 0
        let tensors =
            "[" + (inData ? adjacency : "")
            + #"{"dtype":"float32","layout":"[partitions, outputs, kernel, inputs]","length":4,"name":"layers.0.weight","offset":\#(base),"shape":[1,1,1,1]},"#
            + #"{"dtype":"float32","layout":"[outputs]","length":4,"name":"layers.0.bias","offset":\#(base + 64),"shape":[1]},"#
            + #"{"dtype":"float32","layout":"[outputs, inputs]","length":32,"name":"layers.2.weight","offset":\#(base + 128),"shape":[2,4]},"#
            + #"{"dtype":"float32","layout":"[outputs]","length":8,"name":"layers.2.bias","offset":\#(base + 192),"shape":[2]}]"#
        var m = HandMade(
            header: headerJSON(layers: layers, tensors: tensors),
            data: (inData ? tensorBytes(Array([Float](arrayLiteral: 1, 0.5, 0, 1, 7, 7).prefix(length / 4))) : []) + tensorBytes([2]) + tensorBytes([0.5]) + data)
        m.minor = inData ? 8 : 7
        return m
    }

    /// Both forms give the same layer and logits, in Swift and in the Python reader.
    func testGraphConvAdjacencyInBothForms() throws {
        let old = try ModelFile.load(Self.withGraphConv(inData: false).bytes), new = try ModelFile.load(Self.withGraphConv(inData: true).bytes)
        XCTAssertEqual(new.header.layers, old.header.layers)
        XCTAssertEqual(try XCTUnwrap(new.header.layers[0].kind as? GraphConvKind).adjacency, [1, 0.5, 0, 1])
        XCTAssertEqual(new.header.tensors.first?.name, "layers.0.adjacency")
        // x = [[1, -1], [2, 0.5]]: z = 2x + 0 (per joint), y[t, j] = 0.5 + Σ_i A[j, i] z[t, i].
        let x: [Float] = [1, -1, 2, 0.5]
        let y: [Float] = [0.5 + 2 - 1, 0.5 - 2, 0.5 + 4 + 0.5, 0.5 + 1]
        func dot(_ w: ArraySlice<Float>) -> Float { zip(w, y).reduce(Float(0)) { $0 + $1.0 * $1.1 } }
        let logits: [Float] = [Self.bias[0] + dot(Self.weights[0..<4]), Self.bias[1] + dot(Self.weights[4..<8])]
        for loaded in [old, new] { assertClose(loaded.network.predictLogits(x, batch: 1), logits, absolute: 1e-6, relative: 0) }
        guard ModelFixtures.python(has: "numpy") else { throw missingPrerequisite("python3 with numpy", fix: "pip install numpy, to run the Python reader") }
        let script = ModelFixtures.repoRoot.appendingPathComponent("tools/python/read_model.py").path
        let input = scratch.appendingPathComponent("x.f32")
        try x.withUnsafeBytes { try Data($0).write(to: input) }
        for inData in [false, true] {
            let path = scratch.appendingPathComponent("graph-\(inData).atm")
            try Data(Self.withGraphConv(inData: inData).bytes).write(to: path)
            let r = try ONNXParity.run(["python3", script, path.path, "--features", input.path, "--count", "1"])
            XCTAssertEqual(r.status, 0, r.stderr)
            let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: [[Double]]])
            assertClose(try XCTUnwrap(o["logits"]?.first).map(Float.init), logits, absolute: 1e-5, relative: 0, "read_model.py, adjacency in data: \(inData)")
        }
    }

    func testAdjacencyTensorOfTheWrongShapeIsRefusedNamingTheLayer() {
        assertRejects(
            Self.withGraphConv(inData: true, adjacencyShape: "[1,2,3]", length: 24).bytes,
            [
                "tensor 'layers.0.adjacency'", "layers[0] (graphConv) keeps its adjacency in this tensor, [1, 2, 2] [partitions, joints, joints]",
                "found 'layers.0.adjacency' [1, 2, 3]",
            ]
        ) { self.badTensor($0) }
    }
}
