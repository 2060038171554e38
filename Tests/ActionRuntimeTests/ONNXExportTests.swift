@testable import ActionRuntime
import Foundation
@testable import actiontrain
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

/// The ONNX export: protobuf encoding checked against hand-computed bytes, and parity with the
/// Swift runtime through onnxruntime (when `python3 -c "import onnxruntime"` works).
final class ONNXExportTests: XCTestCase {
    func testProtobufWireFormat() {
        var w = ProtobufWriter()
        w.int(1, 150)  // the protobuf docs' example: 08 96 01
        XCTAssertEqual(w.bytes, [0x08, 0x96, 0x01])
        w = ProtobufWriter()
        w.int(3, -1)  // negative int64: ten-byte varint
        XCTAssertEqual(w.bytes, [0x18] + [UInt8](repeating: 0xFF, count: 9) + [0x01])
        w = ProtobufWriter()
        w.string(2, "testing")  // 12 07 74 65 73 74 69 6e 67
        XCTAssertEqual(w.bytes, [0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6E, 0x67])
        w = ProtobufWriter()
        w.float(2, 1)  // fixed32: key 0x15, then 00 00 80 3f
        XCTAssertEqual(w.bytes, [0x15, 0x00, 0x00, 0x80, 0x3F])
        w = ProtobufWriter()
        w.message(3) { $0.int(1, 150) }  // 1a 03 08 96 01
        XCTAssertEqual(w.bytes, [0x1A, 0x03, 0x08, 0x96, 0x01])
        w = ProtobufWriter()
        w.packedInts(4, [3, 270, 86942])  // the docs' packed example: 22 06 03 8e 02 9e a7 05
        XCTAssertEqual(w.bytes, [0x22, 0x06, 0x03, 0x8E, 0x02, 0x9E, 0xA7, 0x05])
    }

    func goldenModel() throws -> ActionModel {
        try ActionModel(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm").path)
    }

    func testExportIsDeterministicAndRecordsThePreprocessing() throws {
        let model = try goldenModel()
        let a = try ONNXExport.export(header: model.header, network: model.network)
        XCTAssertEqual(a, try ONNXExport.export(header: model.header, network: model.network))
        let text = String(decoding: a, as: UTF8.self)
        let meta = try ONNXExport.metadata(model.header)
        XCTAssertEqual(
            meta.map(\.key),
            [
                "actiontrain.format", "actiontrain.classes", "actiontrain.input", "actiontrain.inputShape", "actiontrain.inputLayout",
                "actiontrain.coordinateSystem", "actiontrain.provenance", "actiontrain.trainingFrameRate", "actiontrain.windowMode",
            ])
        XCTAssertEqual(meta.last?.value, "sliding")
        for (k, v) in meta { XCTAssertTrue(text.contains(k) && text.contains(v), "metadata \(k) missing") }
        // The input description round-trips through the metadata JSON.
        let input = try JSONDecoder().decode(InputSpec.self, from: Data(meta[2].value.utf8))
        XCTAssertEqual(input, model.input)
        XCTAssertEqual(meta[1].value, #"["wave","clap","squat"]"#)
    }

    // MARK: - onnxruntime

    func requireOnnxruntime() throws {
        guard ONNXParity.isAvailable() else {
            throw missingPrerequisite("python3 with numpy and onnxruntime", fix: "pip install numpy onnxruntime")
        }
    }

    func testOnnxruntimeReproducesTheGoldenModel() throws {
        try requireOnnxruntime()
        let model = try goldenModel()
        let onnx = try ONNXExport.export(header: model.header, network: model.network)
        let r = try XCTUnwrap(try ONNXParity.check(onnx: onnx, network: model.network, windows: 16))
        XCTAssertEqual(r.windows, 16)
        XCTAssertLessThan(r.maxAbsDifference, 1e-4)
        // onnxruntime sees the metadata too.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("golden.onnx").path
        try Data(onnx).write(to: URL(fileURLWithPath: path))
        let py = try ONNXParity.run([
            ONNXParity.python, "-c",
            "import sys, onnxruntime as ort; m = ort.InferenceSession(sys.argv[1]).get_modelmeta(); "
                + "print(m.custom_metadata_map['actiontrain.classes']); print(m.producer_name)",
            path,
        ])
        XCTAssertEqual(py.status, 0, py.stderr)
        XCTAssertEqual(py.stdout, "[\"wave\",\"clap\",\"squat\"]\nactiontrain\n")
    }

    /// Nested kinds: flip averaging over a multi-stream average of small TCNs.
    func testOnnxruntimeReproducesStreamsUnderFlipAveraging() throws {
        try requireOnnxruntime()
        let input = Shape(time: 7, channels: 6)
        func member(_ channels: [Int]) -> [LayerSpec] {
            [
                .selectChannels(channels),
                .residual(
                    body: [.conv1d(inputs: channels.count, outputs: 4, kernel: 3, stride: 1, dilation: 1, padding: 1), .gelu],
                    shortcut: [.conv1d(inputs: channels.count, outputs: 4, kernel: 1, stride: 1, dilation: 1, padding: 0)]),
                .layerNorm(channels: 4, epsilon: 1e-5), .globalMaxPool, .linear(inputs: 4, outputs: 3),
            ]
        }
        let layers: [LayerSpec] = [
            .flipAverage(
                channels: [1, 0, 3, 2, 4, 5], signs: [-1, -1, 1, 1, -1, 1],
                body: [.averageProbabilities([member([0, 1, 2, 3]), member([4, 5]), member([0, 1, 2, 3])])])
        ]
        let network = try ModelFixtures.network(layers, input: input, seed: 4)
        let (header, loaded) = try ModelFile.load(
            try ModelFile.encode(
                classes: ["a", "b", "c"], input: LayerKindsTests.modelInput(channels: 6, frames: 7), network: network, provenance: .init()))
        let r = try XCTUnwrap(try ONNXParity.check(onnx: try ONNXExport.export(header: header, network: loaded), network: loaded, windows: 8))
        XCTAssertLessThan(r.maxAbsDifference, 1e-4)
    }

    func testOnnxruntimeReproducesRandomModelsWithEveryLayerType() throws {
        try requireOnnxruntime()
        var types = Set<String>()
        func collect(_ specs: [LayerSpec]) {
            for s in specs {
                types.insert(s.typeName)
                if let r = s.kind as? ResidualKind { collect(r.body + r.shortcut) }
            }
        }
        var models: [(onnx: [UInt8], network: Network)] = []
        let seeds = Array(UInt64(10)..<26)
        for seed in seeds {
            let m = try ModelFixtures.randomModel(seed: seed)
            collect(m.network.specs)
            let bytes = try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init())
            let (header, network) = try ModelFile.load(bytes)
            models.append((try ONNXExport.export(header: header, network: network), network))
        }
        let results = try XCTUnwrap(try ONNXParity.check(models, windows: 5))
        XCTAssertEqual(results.count, seeds.count)
        for (seed, r) in zip(seeds, results) {
            XCTAssertLessThan(r.maxAbsDifference, 1e-4, "seed \(seed)")
        }
        XCTAssertEqual(
            types, Set(["linear", "relu", "gelu", "dropout", "layerNorm", "conv1d", "flatten", "globalAveragePool", "globalMaxPool", "residual"]))
    }

    // MARK: - Raw poses (the preprocessing in the graph)

    func testRawPoseExportsReproduceTheRuntimesPreprocessingAndNetwork() throws {
        try requireOnnxruntime()
        // The golden model: per-frame centring, torso scaling, divide; every channel block.
        let golden = try goldenModel()
        var cases = [
            try ONNXParity.rawCase(
                onnx: ONNXExport.export(header: golden.header, network: golden.network, rawPoses: true), header: golden.header,
                network: golden.network, windows: 16, seed: 3)
        ]
        // Random models: any steps (alignFacing on 3D skeletons, fillGaps in a third of them:
        // the raw windows have a third of their joints absent) and blocks.
        var steps = Set<String>()
        for seed in UInt64(10)..<26 {
            let m = try ModelFixtures.randomModel(seed: seed)
            var input = m.input
            if seed % 3 == 0 { input.steps.insert(.fillGaps, at: 0) }
            steps.formUnion(input.steps.map(\.op))
            let (header, network) = try ModelFile.load(ModelFile.encode(classes: m.classes, input: input, network: m.network, provenance: .init()))
            cases.append(try ONNXParity.rawCase(onnx: ONNXExport.export(header: header, network: network, rawPoses: true), header: header, network: network, windows: 16, seed: seed))
        }
        XCTAssertEqual(steps, ["fillGaps", "centre", "scaleByTorso", "divide", "alignFacing"])
        let results = try XCTUnwrap(try ONNXParity.compare(cases, windows: 16))
        for (i, r) in results.enumerated() { XCTAssertLessThan(r.maxAbsDifference, 1e-4, "case \(i)") }
    }

    func testRawPoseExportDeclaresItsInput() throws {
        let model = try goldenModel()
        let onnx = try ONNXExport.export(header: model.header, network: model.network, rawPoses: true)
        let text = String(decoding: onnx, as: UTF8.self)
        XCTAssertTrue(text.contains("poses"))
        XCTAssertTrue(text.contains("actiontrain.posesLayout"))
        XCTAssertNotEqual(onnx, try ONNXExport.export(header: model.header, network: model.network))
    }
}
