@testable import ActionRuntime
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// Every registered layer kind (`LayerKinds.all`) is supported everywhere: docs/format.md's
/// table and ONNX mapping, both Python readers, the two header decoders, the writer, the
/// gradients and the ONNX export. A kind added to the registry and forgotten in one of these
/// fails here; so does a kind in format.md's table that the registry lacks.
final class LayerKindsTests: XCTestCase {
    static let input = Shape(time: 4, channels: 5)
    static let modelInput = modelInput(channels: 5, frames: 4)

    /// An input of `channels` mask channels (one per joint) over `frames` frames.
    static func modelInput(channels: Int, frames: Int) -> InputSpec {
        InputSpec(
            skeleton: Skeleton(name: "joints", joints: (0..<channels).map { "j\($0)" }, dimensions: 2, units: .pixels),
            window: WindowSpec(frames: frames), steps: [], channels: [.mask])
    }

    /// The kind's example, then a pool when it keeps time, then a linear layer to 2 classes.
    static func exampleLayers(_ kind: any LayerKind.Type) throws -> [LayerSpec] {
        let spec = LayerSpec(kind.example(input: input))
        let out = try XCTUnwrap(try ModelFile.layerOutputShapes([spec], input: input).last)
        return [spec] + (out.time > 1 ? [.globalAveragePool] : []) + [.linear(inputs: out.channels, outputs: 2)]
    }

    static func exampleNetwork(_ kind: any LayerKind.Type, seed: UInt64 = 7) throws -> Network {
        try ModelFixtures.network(exampleLayers(kind), input: input, seed: seed)
    }

    static func encode(_ network: Network) throws -> [UInt8] {
        try ModelFile.encode(classes: ["a", "b"], input: modelInput, network: network, provenance: .init(seed: 1))
    }

    func text(_ path: String) throws -> String {
        try String(contentsOf: ModelFixtures.repoRoot.appendingPathComponent(path), encoding: .utf8)
    }

    func testRegistryNamesAreDistinct() {
        let names = LayerKinds.all.map { $0.typeName }
        XCTAssertEqual(Set(names).count, names.count, "\(names)")
        for name in names { XCTAssertNotNil(LayerKinds.named(name)) }
    }

    /// format.md section 4's table lists exactly the registered kinds; section 7 maps each to
    /// ONNX; both Python readers name each.
    func testEveryKindIsDocumentedAndKnownToBothPythonReaders() throws {
        let format = try text("docs/format.md")
        let layers = try XCTUnwrap(format.range(of: "## 4. Layers")), input = try XCTUnwrap(format.range(of: "## 5. Input"))
        var tableKinds = Set<String>()
        for line in format[layers.upperBound..<input.lowerBound].split(separator: "\n") where line.hasPrefix("| `") && !line.hasPrefix("| `type`") {
            tableKinds.insert(String(line.dropFirst(3).prefix(while: { $0 != "`" })))
        }
        XCTAssertEqual(tableKinds, Set(LayerKinds.all.map { $0.typeName }), "docs/format.md section 4's table against LayerKinds.all")
        let onnx = try XCTUnwrap(format.range(of: "## 7. ONNX export")), history = try XCTUnwrap(format.range(of: "## 8."))
        let mapping = format[onnx.upperBound..<history.lowerBound]
        let readers = try ["tools/python/read_model.py", "tools/python/spec_reader.py"].map { ($0, try text($0)) }
        for kind in LayerKinds.all {
            XCTAssertTrue(mapping.contains("`\(kind.typeName)`"), "docs/format.md section 7 does not map \(kind.typeName) to ONNX")
            for (path, source) in readers {
                XCTAssertTrue(source.contains("\"\(kind.typeName)\""), "\(path) does not know \(kind.typeName)")
            }
        }
    }

    /// Write → read through both header decoders (the fast path must accept what the writer
    /// writes and agree with JSONDecoder) → the same layers (described by their data tensors),
    /// weights and logits.
    func testEveryKindRoundTripsThroughTheModelFile() throws {
        for kind in LayerKinds.all {
            let network = try Self.exampleNetwork(kind)
            let bytes = try Self.encode(network)
            let h = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
            try bytes.withUnsafeBytes { raw in
                let header = UnsafeRawBufferPointer(rebasing: raw[64..<(64 + h)])
                let fast = try XCTUnwrap(HeaderJSON.decode(header), "the header fast path declines \(kind.typeName)")
                XCTAssertEqual(fast, try ModelFile.decodeHeaderWithFoundation(header), kind.typeName)
                // The header holds the header form (format 1.8: standardize's statistics in the data).
                XCTAssertEqual(fast.layers, try ModelFile.headerForm(network.specs).layers, kind.typeName)
            }
            let (header, loaded) = try ModelFile.load(bytes)
            XCTAssertEqual(header.layers, network.specs, kind.typeName)
            let x = ModelFixtures.randomInputs(count: 3, values: Self.input.count, seed: 5)
            XCTAssertEqual(loaded.predictLogits(x, batch: 3), network.predictLogits(x, batch: 3), kind.typeName)
            XCTAssertEqual(try Self.encode(loaded), bytes, "\(kind.typeName): re-encoding changed the bytes")
        }
    }

    /// Inputs at distinct multiples of 0.05 away from 0 (more than the step 2h = 0.02 apart),
    /// so that no max or ReLU kink lies within a finite difference.
    func testEveryKindsGradientsMatchFiniteDifferences() throws {
        let n = 2 * Self.input.count
        var g = SeededGenerator(seed: 4)
        var order = Array(0..<n)
        for i in stride(from: n - 1, to: 0, by: -1) { order.swapAt(i, g.nextInt(below: i + 1)) }
        let x = order.map { (Float($0) - Float(n) / 2 + 0.5) * 0.05 }
        for kind in LayerKinds.all {
            try checkGradients(layers: try Self.exampleLayers(kind), input: Self.input, batch: 2, seed: 3, x: x, jitter: 0.3)
        }
    }

    func testPythonReadersReproduceEveryKind() throws {
        guard ModelFixtures.python(has: "numpy") else { throw XCTSkip("python3 with numpy is not available (pip install numpy)") }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for kind in LayerKinds.all {
            let network = try Self.exampleNetwork(kind)
            let model = dir.appendingPathComponent("\(kind.typeName).atm"), xURL = dir.appendingPathComponent("x.f32")
            try Data(try Self.encode(network)).write(to: model)
            let x = ModelFixtures.randomInputs(count: 3, values: Self.input.count, seed: 9)
            try x.withUnsafeBytes { try Data($0).write(to: xURL) }
            let script = ModelFixtures.repoRoot.appendingPathComponent("tools/python/read_model.py").path
            let r = try ONNXParity.run(["python3", script, model.path, "--features", xURL.path, "--count", "3"])
            XCTAssertEqual(r.status, 0, "\(kind.typeName): \(r.stderr)")
            let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: [[Double]]]
            let logits = try XCTUnwrap(o?["logits"]).flatMap { $0.map(Float.init) }
            assertClose(logits, network.predictLogits(x, batch: 3), absolute: 1e-5, relative: 1e-5, "read_model.py, \(kind.typeName)")
            let spec = ModelFixtures.repoRoot.appendingPathComponent("tools/python/spec_reader.py").path
            let check = try ONNXParity.run(["python3", spec, model.path])
            XCTAssertEqual(check.status, 0, "spec_reader.py refuses \(kind.typeName): \(check.stderr)")
        }
    }

    func testOnnxruntimeReproducesEveryKind() throws {
        guard ONNXParity.isAvailable() else { throw XCTSkip("python3 with numpy and onnxruntime is not available (pip install numpy onnxruntime)") }
        var models: [(onnx: [UInt8], network: Network)] = []
        for kind in LayerKinds.all {
            let (header, network) = try ModelFile.load(try Self.encode(try Self.exampleNetwork(kind)))
            models.append((try ONNXExport.export(header: header, network: network), network))
        }
        let results = try XCTUnwrap(try ONNXParity.check(models, windows: 5))
        for (kind, r) in zip(LayerKinds.all, results) {
            XCTAssertLessThan(r.maxAbsDifference, 1e-4, kind.typeName)
        }
    }
}
