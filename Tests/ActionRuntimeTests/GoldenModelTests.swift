@testable import ActionRuntime
import Foundation
@testable import actiontrain
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

/// The golden files under Tests/ActionRuntimeTests/Golden/: a small model with every layer
/// type, preprocessing step and channel block (`model.atm`), pose windows (`windows.json`),
/// and the features and logits the runtime gave when they were written (`expected.json`).
/// `scripts/regenerate-golden` rewrites them (and the fuzz corpus's model files) only when the
/// format changes on purpose (say so in the commit); otherwise the generator runs into a
/// temporary folder and must reproduce the committed model and windows byte for byte.
///
/// The Python reader (tools/python/read_model.py, written from docs/format.md alone) must
/// reproduce the same features and logits.
final class GoldenModelTests: XCTestCase {
    let dir = ModelFixtures.goldenDirectory

    /// Five random windows, then one without the neck anywhere (the torso scale falls back to
    /// the RMS spread) and one without the root anywhere (the centre falls back to the mean of
    /// all present joints).
    func goldenWindows() -> [PoseSequence] {
        var g = SeededGenerator(seed: 77)
        var windows = (0..<7).map { i in
            ModelFixtures.randomWindow(ModelFixtures.goldenSkeleton, frames: 6, confidence: i < 3, g: &g)
        }
        for (w, joint) in [(5, 1), (6, 2)] {
            for f in 0..<6 { ModelFixtures.remove(joint: joint, frame: f, from: &windows[w]) }
        }
        return windows
    }

    /// The generator. With `ACTIONTRAIN_REGENERATE_GOLDEN=1` (scripts/regenerate-golden) it
    /// rewrites the committed files; otherwise it writes into a temporary folder and the model
    /// file and windows must equal the committed ones byte for byte (the features and logits,
    /// which depend on the BLAS kernel in their last bits, are held to a tolerance below).
    func testGoldenGeneratorReproducesTheCommittedFiles() throws {
        let regenerate = ProcessInfo.processInfo.environment["ACTIONTRAIN_REGENERATE_GOLDEN"] == "1"
        let out = regenerate ? dir : try temporaryDirectory()
        let corpus = regenerate ? ModelFixtures.repoRoot.appendingPathComponent("fuzz/ModelFile/corpus") : out.appendingPathComponent("corpus")
        try writeGoldenFiles(into: out, corpus: corpus)
        guard !regenerate else { return }
        defer { try? FileManager.default.removeItem(at: out) }
        let committedCorpus = ModelFixtures.repoRoot.appendingPathComponent("fuzz/ModelFile/corpus")
        for (new, committed) in [(out, dir), (corpus, committedCorpus)] {
            for name in try FileManager.default.contentsOfDirectory(atPath: new.path) where name.hasSuffix(".atm") || name == "windows.json" {
                XCTAssertEqual(
                    try Data(contentsOf: new.appendingPathComponent(name)), try Data(contentsOf: committed.appendingPathComponent(name)),
                    "\(committed.lastPathComponent)/\(name) differs from the generator's (scripts/regenerate-golden, if the format changed on purpose)")
            }
        }
    }

    /// The golden files into `out`, and seeds for the fuzz target (fuzz/ModelFile) into `corpus`.
    func writeGoldenFiles(into out: URL, corpus: URL) throws {
        let network = try ModelFixtures.goldenNetwork()
        let bytes = try ModelFile.encode(
            classes: ModelFixtures.goldenClasses, input: ModelFixtures.goldenInput, network: network,
            provenance: ModelFixtures.goldenProvenance, trainingFrameRate: 30)
        let model = try ActionModel(bytes: bytes)
        let windows = goldenWindows()
        let features = try windows.map { try model.features(window: $0) }
        let logits = try features.map { try model.logits(features: $0, count: 1) }
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try Data(bytes).write(to: out.appendingPathComponent("model.atm"))
        let options: JSONSerialization.WritingOptions = [.sortedKeys]
        try JSONSerialization.data(withJSONObject: ["windows": ModelFixtures.windowsJSON(windows)], options: options)
            .write(to: out.appendingPathComponent("windows.json"))
        try JSONSerialization.data(
            withJSONObject: ["features": features.map { $0.map(Double.init) }, "logits": logits.map { $0.map(Double.init) }],
            options: options
        ).write(to: out.appendingPathComponent("expected.json"))
        // The fuzz seeds: the golden model, the hand-made file of ModelFileTests and three small
        // random models.
        try FileManager.default.createDirectory(at: corpus, withIntermediateDirectories: true)
        try Data(bytes).write(to: corpus.appendingPathComponent("golden.atm"))
        try Data(ModelFileTests.good().bytes).write(to: corpus.appendingPathComponent("hand-made.atm"))
        for seed in UInt64(1)...3 {
            let m = try ModelFixtures.randomModel(seed: seed)
            try Data(try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init(seed: seed)))
                .write(to: corpus.appendingPathComponent("random-\(seed).atm"))
        }
    }

    func expected() throws -> (features: [[Float]], logits: [[Float]]) {
        let data = try Data(contentsOf: dir.appendingPathComponent("expected.json"))
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: [[Double]]])
        return (try XCTUnwrap(o["features"]).map { $0.map(Float.init) }, try XCTUnwrap(o["logits"]).map { $0.map(Float.init) })
    }

    func testGoldenModelGivesTheGoldenFeaturesAndLogits() throws {
        let model = try ActionModel(contentsOf: dir.appendingPathComponent("model.atm").path)
        XCTAssertEqual(model.classes, ModelFixtures.goldenClasses)
        XCTAssertEqual(model.header.input, ModelFixtures.goldenInput)
        XCTAssertEqual(model.header.layers, ModelFixtures.goldenLayers)
        XCTAssertEqual(model.header.trainingFrameRate, 30)
        let (features, logits) = try expected()
        let windows = goldenWindows()
        XCTAssertEqual(features.count, windows.count)
        for (i, w) in windows.enumerated() {
            let f = try model.features(window: w)
            assertClose(f, features[i], absolute: 1e-6, relative: 1e-6, "features of window \(i)")
            assertClose(try model.logits(features: f, count: 1), logits[i], absolute: 1e-5, relative: 1e-5, "logits of window \(i)")
        }
        // The whole batch at once gives the same logits as one window at a time.
        let batch = try model.logits(features: features.flatMap { $0 }, count: features.count)
        assertClose(batch, logits.flatMap { $0 }, absolute: 1e-5, relative: 1e-5, "batched logits")
    }

    func testWriterReproducesTheGoldenFileByteForByte() throws {
        let url = dir.appendingPathComponent("model.atm")
        let bytes = [UInt8](try Data(contentsOf: url))
        let (h, network) = try ModelFile.load(bytes)
        let again = try ModelFile.encode(
            classes: h.classes, input: h.input, network: network, provenance: h.provenance, trainingFrameRate: h.trainingFrameRate)
        XCTAssertEqual(again.count, bytes.count)
        XCTAssertTrue(again == bytes, "re-encoding the golden model changed its bytes")
        // Mapped and read loads agree.
        let mapped = try ModelFile.load(contentsOf: url.path, memoryMapped: true)
        let read = try ModelFile.load(contentsOf: url.path, memoryMapped: false)
        XCTAssertEqual(mapped.header, read.header)
        XCTAssertEqual(
            Array(UnsafeBufferPointer(start: mapped.network.parameters, count: mapped.network.parameterCount)),
            Array(UnsafeBufferPointer(start: read.network.parameters, count: read.network.parameterCount)))
    }

    // MARK: - The independent Python reader

    func pythonReader() throws -> String {
        guard ModelFixtures.python(has: "numpy") else {
            throw missingPrerequisite("python3 with numpy", fix: "pip install numpy, to run the Python reader")
        }
        return ModelFixtures.repoRoot.appendingPathComponent("tools/python/read_model.py").path
    }

    func runPython(_ args: [String]) throws -> (features: [[Float]], logits: [[Float]]) {
        let r = try ONNXParity.run(["python3"] + args)
        guard r.status == 0 else {
            XCTFail("read_model.py failed (\(r.status)): \(r.stderr)")
            return ([], [])
        }
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: [[Double]]])
        return (try XCTUnwrap(o["features"]).map { $0.map(Float.init) }, try XCTUnwrap(o["logits"]).map { $0.map(Float.init) })
    }

    /// The golden model (standardize's statistics as tensors, format 1.8) and the same model as
    /// a 1.7 file (statistics in the header): the same features and logits.
    func testPythonReaderReproducesTheGoldenFeaturesAndLogits() throws {
        let script = try pythonReader()
        let (features, logits) = try expected()
        for file in ["model.atm", "model-1.7.atm"] {
            let py = try runPython([
                script, dir.appendingPathComponent(file).path, "--windows", dir.appendingPathComponent("windows.json").path,
            ])
            XCTAssertEqual(py.logits.count, logits.count, file)
            for i in logits.indices where i < py.logits.count {
                assertClose(py.features[i], features[i], absolute: 1e-5, relative: 1e-5, "\(file): Python features of window \(i)")
                assertClose(py.logits[i], logits[i], absolute: 1e-5, relative: 0, "\(file): Python logits of window \(i)")
            }
        }
    }

    func testPythonReaderReproducesRandomModels() throws {
        let script = try pythonReader()
        let tmp = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: tmp) }
        var worst: Float = 0
        for seed in UInt64(1)...8 {
            let m = try ModelFixtures.randomModel(seed: seed)
            let modelURL = tmp.appendingPathComponent("m\(seed).atm"), xURL = tmp.appendingPathComponent("x\(seed).f32")
            try Data(try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init()))
                .write(to: modelURL)
            let count = 3
            let x = ModelFixtures.randomInputs(count: count, values: m.network.inputShape.count, seed: seed)
            try x.withUnsafeBytes { try Data($0).write(to: xURL) }
            let swift = m.network.predictLogits(x, batch: count)
            let py = try runPython([script, modelURL.path, "--features", xURL.path, "--count", "\(count)"])
            let flat = py.logits.flatMap { $0 }
            assertClose(flat, swift, absolute: 1e-5, relative: 0, "random model \(seed): \(m.network.specs)")
            for (a, b) in zip(flat, swift) { worst = max(worst, abs(a - b)) }
            // From poses: the model's own steps and channel blocks.
            var g = SeededGenerator(seed: seed)
            let windows = (0..<2).map {
                ModelFixtures.randomWindow(m.input.skeleton, frames: m.input.window.frames, confidence: $0 == 0, g: &g)
            }
            let wURL = tmp.appendingPathComponent("w\(seed).json")
            try JSONSerialization.data(withJSONObject: ["windows": ModelFixtures.windowsJSON(windows)]).write(to: wURL)
            let fromPoses = try runPython([script, modelURL.path, "--windows", wURL.path])
            let model = try ActionModel(
                header: try ModelFile.load(
                    try ModelFile.encode(
                        classes: m.classes, input: m.input, network: m.network, provenance: .init())
                ).header, network: m.network)
            for (i, w) in windows.enumerated() where i < fromPoses.features.count {
                let f = try model.features(window: w)
                assertClose(fromPoses.features[i], f, absolute: 1e-5, relative: 1e-5, "random model \(seed) window \(i) features, steps \(m.input.steps)")
                assertClose(fromPoses.logits[i], try model.logits(features: f, count: 1), absolute: 1e-5, relative: 0, "random model \(seed) window \(i) logits")
            }
        }
        XCTAssertLessThan(worst, 1e-5)
    }
}
