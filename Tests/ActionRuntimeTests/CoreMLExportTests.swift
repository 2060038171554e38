@testable import ActionRuntime
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// The Core ML export, checked without a Mac: coremltools (pip) loads and validates each
/// `.mlmodel`, and tools/python/coreml_eval.py, a NumPy evaluator written from Apple's
/// NeuralNetwork.proto, must reproduce the Swift runtime's probabilities to 1e-5 on the golden
/// model's recorded windows and on seeded random windows of random models (every layer kind,
/// preprocessing step and channel block), through both interfaces. Needs python3 with numpy
/// and coremltools: skipped without them, failed under CI (`ACTIONTRAIN_CI=1`).
final class CoreMLExportTests: XCTestCase {
    static func requireCoreMLTools() throws -> String {
        guard CoreMLParity.isAvailable(), let script = CoreMLParity.script() else {
            throw missingPrerequisite("python3 with numpy and coremltools (and tools/python/coreml_eval.py)", fix: "pip install numpy coremltools")
        }
        return script
    }

    func golden() throws -> ActionModel {
        try ActionModel(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm").path)
    }

    /// Runs the evaluator on `mlmodel` with `inputs` (windows of the model's input); its JSON.
    func evaluate(_ mlmodel: [UInt8], inputs: [Float]? = nil, count: Int = 0) throws -> (status: Int32, json: [String: Any], stderr: String) {
        let script = try Self.requireCoreMLTools()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("m.mlmodel"), x = dir.appendingPathComponent("x.f32")
        try Data(mlmodel).write(to: model)
        var args = ["python3", script, model.path]
        if let inputs {
            try inputs.withUnsafeBufferPointer { try Data(buffer: $0).write(to: x) }
            args += ["--inputs", x.path, "--count", "\(count)"]
        }
        let r = try ONNXParity.run(args)
        let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        return (r.status, json, r.stderr)
    }

    /// A parity case: `header`'s model exported through `interface`, on seeded random windows.
    func parity(_ header: ModelHeader, _ network: Network, _ interface: CoreMLExport.Interface = .native, windows: Int = 24, seed: UInt64 = 1, _ what: String) throws -> (String, CoreMLParity.Case) {
        let bytes = try CoreMLExport.export(header: header, network: network, options: .init(interface: interface))
        return (what, try CoreMLParity.makeCase(mlmodel: bytes, header: header, network: network, interface: interface, windows: windows, seed: seed))
    }

    /// Runs the cases in one evaluator process: probabilities within 1e-5, logits within 1e-4.
    func verify(_ cases: [(String, CoreMLParity.Case)]) throws {
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: Self.requireCoreMLTools()))
        XCTAssertEqual(results.count, cases.count)
        for ((what, _), r) in zip(cases, results) {
            XCTAssertLessThan(r.maxAbsDifference, 1e-5, "\(what): probabilities")
            XCTAssertLessThan(r.maxLogitDifference, 1e-4, "\(what): logits")
        }
    }

    // MARK: - The golden model

    /// The golden model's recorded raw windows (every step but alignFacing, every block, every
    /// layer kind of a TCN) through the native interface: the evaluator's probabilities are
    /// those of `predict` (the softmax of the golden logits) to 1e-5.
    func testGoldenModelsRecordedWindowsMatchPredict() throws {
        let model = try golden()
        let bytes = try CoreMLExport.export(header: model.header, network: model.network)
        let windows =
            try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("windows.json"))) as? [String: Any])["windows"] as? [[String: Any]]
        let expected =
            try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("expected.json"))) as? [String: Any])["logits"] as? [[Double]]
        let s = model.header.input.skeleton, D = s.dimensions
        var raw: [Float] = []
        for w in try XCTUnwrap(windows) {
            let coordinates = try XCTUnwrap(w["coordinates"] as? [Double]), present = try XCTUnwrap(w["present"] as? [Int])
            let confidence = w["confidence"] as? [Double]
            for i in present.indices {
                raw += (0..<D).map { Float(coordinates[i * D + $0]) } + [present[i] != 0 ? Float(confidence?[i] ?? 1) : 0]
            }
        }
        let n = try XCTUnwrap(expected).count
        let r = try evaluate(bytes, inputs: raw, count: n)
        XCTAssertEqual(r.status, 0, r.stderr)
        let probabilities = try XCTUnwrap(r.json["probabilities"] as? [[Double]])
        var worst = 0.0
        for (p, z) in zip(probabilities, try XCTUnwrap(expected)) {
            let m = z.max()!, e = z.map { exp($0 - m) }, sum = e.reduce(0, +)
            for (a, b) in zip(p, e.map { $0 / sum }) { worst = max(worst, abs(a - b)) }
        }
        XCTAssertEqual(probabilities.count, n)
        XCTAssertLessThan(worst, 1e-5)
        XCTAssertEqual(r.json["labels"] as? [String], (try XCTUnwrap(expected)).map { model.header.classes[$0.firstIndex(of: $0.max()!)!] })
        try verify([try parity(model.header, model.network, windows: 64, "golden, random raw windows")])
    }

    /// What Xcode shows and what an app reads: the description, the metadata, the classes.
    func testTheModelDescribesItself() throws {
        let model = try golden()
        let bytes = try CoreMLExport.export(
            header: model.header, network: model.network, options: .init(author: "A. Author", license: "MIT", version: "2.1"))
        XCTAssertEqual(bytes, try CoreMLExport.export(header: model.header, network: model.network, options: .init(author: "A. Author", license: "MIT", version: "2.1")))
        let r = try evaluate(bytes)
        XCTAssertEqual(r.status, 0, r.stderr)
        let m = try XCTUnwrap(r.json["model"] as? [String: Any])
        XCTAssertEqual(m["specificationVersion"] as? Int, 4)
        XCTAssertEqual(m["type"] as? String, "neuralNetworkClassifier")
        XCTAssertEqual(m["classes"] as? [String], ["wave", "clap", "squat"])
        XCTAssertEqual(m["inputs"] as? [String: [Int]], ["poses": [6, 4, 3]])
        XCTAssertEqual(m["outputs"] as? [String: String], ["label": "stringType", "labelProbabilities": "dictionaryType"])
        XCTAssertEqual(m["author"] as? String, "A. Author")
        XCTAssertEqual(m["license"] as? String, "MIT")
        XCTAssertEqual(m["versionString"] as? String, "2.1")
        XCTAssertTrue((m["shortDescription"] as? String ?? "").contains("3 classes (wave, clap, squat) from windows of 6 frames at 30 fps"))
        let user = try XCTUnwrap(m["userDefined"] as? [String: String])
        XCTAssertEqual(user["classes"], #"["wave","clap","squat"]"#)
        XCTAssertEqual(user["windowFrames"], "6")
        XCTAssertEqual(user["skeleton"], "golden-4")
        XCTAssertEqual(user["jointOrder"], #"["head","neck","root","hand"]"#)
        XCTAssertEqual(user["toolkitVersion"], ActionRuntimeInfo.tool)
        XCTAssertEqual(user["trainingDataHash"], model.header.provenance.datasetHash ?? "unknown")
        XCTAssertTrue(user["frameRate"]?.hasPrefix("30 ") ?? false)
        let input = try JSONDecoder().decode(InputSpec.self, from: Data(try XCTUnwrap(user["actiontrain.input"]).utf8))
        XCTAssertEqual(input, model.header.input)
        // coremltools reads the same metadata.
        let ct = try XCTUnwrap(m["coremltools"] as? [String: Any])
        XCTAssertEqual((ct["userDefined"] as? [String: String])?["classes"], user["classes"])
        XCTAssertEqual(ct["author"] as? String, "A. Author")
    }

    /// Issue 37: a whole-clip (`fit` window) model's metadata names the clip in frames, frames
    /// per second and seconds, and how to sample a clip into the window, in Core ML's words and
    /// in the ONNX keys; a sliding model's says it takes consecutive frames.
    func testWholeClipModelsNameTheClipAndHowToSampleIt() throws {
        let golden = try golden().header
        var h = golden
        h.input.window.mode = .fit
        h.streaming = .init(clipFrames: 51, clipFrameRate: 20)
        let user = Dictionary(uniqueKeysWithValues: try CoreMLExport.metadata(h, interface: .native).map { ($0.key, $0.value) })
        XCTAssertTrue(user["windowMode"]?.hasPrefix("fit: each prediction takes one whole clip") ?? false, "\(user)")
        XCTAssertTrue(user["windowMode"]?.contains("not the last 6 camera frames") ?? false)
        XCTAssertTrue(user["clipFrames"]?.hasPrefix("51 (the training clips' median length") ?? false, "\(user)")
        XCTAssertTrue(user["clipFrameRate"]?.hasPrefix("20 (") ?? false, "\(user)")
        XCTAssertTrue(user["clipSeconds"]?.hasPrefix("2.5 (") ?? false, "\(user)")
        XCTAssertTrue(user["windowSampling"]?.hasPrefix("window frame i (0 ... 5) is the clip of n frames at position p = i · (n − 1) / 5") ?? false, "\(user)")
        XCTAssertTrue(user["frameRate"]?.contains("before it is resampled to the window") ?? false, "\(user)")
        XCTAssertTrue(CoreMLExport.defaultDescription(h, .native).contains("from whole clips (51 frames at 20 fps, 2.5 s) each resampled to 6 frames"))
        let onnx = Dictionary(uniqueKeysWithValues: try ONNXExport.metadata(h).map { ($0.key, $0.value) })
        XCTAssertEqual(onnx["actiontrain.windowMode"], "fit")
        XCTAssertEqual(onnx["actiontrain.clipFrames"], "51")
        XCTAssertEqual(onnx["actiontrain.clipFrameRate"], "20")
        XCTAssertEqual(onnx["actiontrain.clipSeconds"], "2.5")
        XCTAssertEqual(onnx["actiontrain.windowSampling"], user["windowSampling"])
        XCTAssertEqual(try JSONDecoder().decode(ModelHeader.Streaming.self, from: Data(try XCTUnwrap(onnx["actiontrain.streaming"]).utf8)), h.streaming)
        // A file before format 1.3 does not record the clip: said so, not guessed.
        h.streaming = nil
        let old = Dictionary(uniqueKeysWithValues: try CoreMLExport.metadata(h, interface: .native).map { ($0.key, $0.value) })
        XCTAssertTrue(old["clipFrames"]?.hasPrefix("unknown (the model file predates format 1.3") ?? false, "\(old)")
        XCTAssertNil(old["clipSeconds"])
        // The golden model slides: consecutive frames, no clip.
        let sliding = Dictionary(uniqueKeysWithValues: try CoreMLExport.metadata(golden, interface: .native).map { ($0.key, $0.value) })
        XCTAssertTrue(sliding["windowMode"]?.hasPrefix("sliding: each prediction takes 6 consecutive frames") ?? false, "\(sliding)")
        XCTAssertNil(sliding["clipFrames"])
        XCTAssertNil(sliding["windowSampling"])
    }

    // MARK: - Random models

    /// Random models (any steps, fillGaps in a third of them, alignFacing on 3D skeletons, any
    /// channel blocks, any layers of the plain families) through the native interface.
    func testRandomModelsWithEveryStepAndBlock() throws {
        _ = try Self.requireCoreMLTools()
        var steps = Set<String>(), blocks = Set<ChannelBlock>()
        var cases: [(String, CoreMLParity.Case)] = []
        for seed in UInt64(10)..<26 {
            let m = try ModelFixtures.randomModel(seed: seed)
            var input = m.input
            if seed % 3 == 0 { input.steps.insert(.fillGaps, at: 0) }  // the windows have gaps (a third of the joints absent)
            steps.formUnion(input.steps.map(\.op))
            blocks.formUnion(input.channels)
            let (header, network) = try ModelFile.load(ModelFile.encode(classes: m.classes, input: input, network: m.network, provenance: .init()))
            cases.append(try parity(header, network, windows: 16, seed: seed, "random model \(seed)"))
        }
        try verify(cases)
        XCTAssertEqual(steps, ["fillGaps", "centre", "scaleByTorso", "divide", "alignFacing"])
        XCTAssertEqual(blocks, Set(ChannelBlock.allCases))
    }

    /// Every registered layer kind's example (`LayerKindsTests`), nested kinds included.
    func testEveryLayerKindIsLoweredAndReproduced() throws {
        _ = try Self.requireCoreMLTools()
        try verify(
            LayerKinds.all.map { kind in
                let (header, network) = try ModelFile.load(try LayerKindsTests.encode(try LayerKindsTests.exampleNetwork(kind)))
                return try parity(header, network, windows: 6, kind.typeName)
            })
    }

    /// The same for the ML Program package (CoreMLProgramGraph), in Float32 (within 1e-4 of
    /// this runtime's logits) and in Float16 (within 4 times its own Float16 error).
    func testEveryLayerKindIsLoweredToTheProgramAndReproduced() throws {
        let script = try Self.requireCoreMLTools()
        var cases: [(String, CoreMLParity.Case)] = []
        for kind in LayerKinds.all {
            let (header, network) = try ModelFile.load(try LayerKindsTests.encode(try LayerKindsTests.exampleNetwork(kind)))
            for precision in CoreMLPackage.Precision.allCases {
                var c = try CoreMLParity.makeCase(mlmodel: [], header: header, network: network, interface: .native, windows: 6, seed: 1)
                c.package = try CoreMLPackage.export(header: header, network: network, precision: precision)
                cases.append(("\(kind.typeName), \(precision)", c))
            }
        }
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: script))
        for ((what, c), r) in zip(cases, results) {
            if what.hasSuffix("float32") {
                XCTAssertLessThan(r.maxLogitDifference, 1e-4, what)
                XCTAssertTrue(r.passed, "\(what): \(r.figures.summary)")
            } else {
                let f = ParityFigures.measure(export: r.logits, runtime: c.logits, float32: r.logits, float64: r.logits64, factor: ParityFigures.float16Factor)
                XCTAssertTrue(f.passed, "\(what): \(f.summary)")
            }
        }
    }

    // MARK: - The Create ML interface

    /// A model on vision-body-2d (window centring on root, torso scaling, every block) takes
    /// Create ML's `[F, 3, 18]` keypoints; the evaluator matches this runtime fed the same
    /// keypoints converted to pixels by hand, with root absent or the hips' midpoint, with an
    /// aspect ratio only, an image size, and a permuted keypoint order.
    func testCreateMLInterfaceMatchesTheRuntimeOnConvertedKeypoints() throws {
        _ = try Self.requireCoreMLTools()
        let s = Skeleton.visionBody2D
        let input = try InputSpec.standard(for: s, window: WindowSpec(frames: 5, frameRate: 30), channels: ChannelBlock.allCases)
        XCTAssertTrue(input.steps.contains(.scaleByTorso(upper: ["neck"], lower: ["root"])))
        let layers: [LayerSpec] = [
            .conv1d(inputs: input.channelsPerFrame, outputs: 6, kernel: 3, stride: 1, dilation: 1, padding: 1), .gelu, .globalMaxPool,
            .linear(inputs: 6, outputs: 4),
        ]
        let network = try ModelFixtures.network(layers, input: Shape(time: 5, channels: input.channelsPerFrame), seed: 3)
        let (header, loaded) = try ModelFile.load(ModelFile.encode(classes: ["a", "b", "c", "d"], input: input, network: network, provenance: .init()))
        var reversed = Skeleton.createMLKeypointOrder
        reversed.reverse()
        let cases: [CreateMLInput] = [
            CreateMLInput(aspectRatio: 16.0 / 9, root: .absent), CreateMLInput(aspectRatio: 9.0 / 16, root: .hips),
            CreateMLInput(aspectRatio: 4.0 / 3, imageSize: [640, 480], root: .hips), CreateMLInput(aspectRatio: 1, keypointOrder: reversed, root: .absent),
        ]
        try verify(cases.enumerated().map { i, c in try parity(header, loaded, .createML(c), windows: 24, seed: UInt64(i), "createml case \(i)") })
        // The input is Create ML's, described as Create ML describes it, the conversion recorded.
        let bytes = try CoreMLExport.export(header: header, network: loaded, options: .init(interface: .createML(cases[0])))
        let r = try evaluate(bytes)
        let m = try XCTUnwrap(r.json["model"] as? [String: Any])
        XCTAssertEqual(m["inputs"] as? [String: [Int]], ["poses": [5, 3, 18]])
        let description = try XCTUnwrap((m["inputDescriptions"] as? [String: String])?["poses"])
        XCTAssertTrue(description.contains("ordered as: nose, neck, right shoulder, right elbow, right wrist, left shoulder"), description)
        let user = try XCTUnwrap(m["userDefined"] as? [String: String])
        XCTAssertTrue(user["imageAspectRatio"]?.hasPrefix("1.77") ?? false)
        XCTAssertTrue(user["jointOrder"]?.contains("Create ML") ?? false)
        XCTAssertTrue(user["rootJoint"]?.hasPrefix("absent") ?? false)
        // Another aspect ratio is another model (x is scaled against y).
        XCTAssertNotEqual(bytes, try CoreMLExport.export(header: header, network: loaded, options: .init(interface: .createML(cases[1]))))
    }

    /// Without scaleByTorso the pixel size matters: an aspect ratio alone is refused, an image
    /// size gives a model that matches (divide by the image size, as `scaling: image` does).
    func testCreateMLNeedsTheImageSizeWithoutTorsoScaling() throws {
        let input = try InputSpec.standard(
            for: .visionBody2D, window: WindowSpec(frames: 4), scaling: .image, imageSize: [1280, 720], channels: [.coordinates, .mask])
        let network = try ModelFixtures.network([.flatten, .linear(inputs: 4 * input.channelsPerFrame, outputs: 2)], input: Shape(time: 4, channels: input.channelsPerFrame), seed: 1)
        let (header, loaded) = try ModelFile.load(ModelFile.encode(classes: ["x", "y"], input: input, network: network, provenance: .init()))
        XCTAssertThrowsError(try CoreMLExport.export(header: header, network: loaded, options: .init(interface: .createML(CreateMLInput(aspectRatio: 16.0 / 9, root: .absent))))) {
            XCTAssertEqual($0 as? CoreMLExport.ExportError, .imageSizeNeeded)
        }
        _ = try Self.requireCoreMLTools()
        try verify([try parity(header, loaded, .createML(CreateMLInput(aspectRatio: 16.0 / 9, imageSize: [1280, 720], root: .hips)), "image scaling")])
    }

    // MARK: - Hostile exports

    func testCreateMLRefusesModelsItCannotFeed() throws {
        let m = try ModelFixtures.randomModel(seed: 11)
        let (header, network) = try ModelFile.load(ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init()))
        XCTAssertThrowsError(try CoreMLExport.export(header: header, network: network, options: .init(interface: .createML(CreateMLInput(aspectRatio: 1, root: .absent))))) {
            XCTAssertTrue("\($0)".contains("the Create ML interface: Create ML's input holds one person's 2D Vision keypoints"), "\($0)")
        }
        let model = try golden()
        XCTAssertThrowsError(try CoreMLExport.export(header: model.header, network: model.network, options: .init(interface: .createML(CreateMLInput(aspectRatio: 1, root: .absent))))) {
            XCTAssertTrue("\($0)".contains("joints [\"head\", \"hand\"] of skeleton 'golden-4' are not among the 18 keypoints"), "\($0)")
        }
    }

    /// A window far longer than a phone can hold: refused with the size, before anything is
    /// allocated for it.
    func testHugeWindowsAreRefusedClearly() throws {
        let joints = (0..<1000).map { "j\($0)" }
        let skeleton = Skeleton(name: "wide", joints: joints, dimensions: 2, units: .pixels, bones: [["j0", "j1"]])
        let input = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 100_000), steps: [], channels: [.bones])
        let network = try ModelFixtures.network([.globalAveragePool, .linear(inputs: 2, outputs: 2)], input: Shape(time: 100_000, channels: 2), seed: 1)
        let (header, loaded) = try ModelFile.load(ModelFile.encode(classes: ["a", "b"], input: input, network: network, provenance: .init()))
        XCTAssertThrowsError(try CoreMLExport.export(header: header, network: loaded)) { e in
            XCTAssertEqual(
                "\(e)", "cannot export to Core ML: the input poses [100000, 1000, 3] hold 300000000 values per window, more than the 67108864 the Core ML export allows")
        }
    }

    /// An op without a lowering fails the export naming the layer and its kind (a kind added
    /// later whose ONNX form uses an op the Core ML writer does not know).
    func testAnOpWithoutALoweringNamesTheLayerKind() throws {
        struct ErfKind: FieldlessLayerKind {
            static let typeName = "erfTest"
            func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: input) }
            func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { fatalError("not built") }
            func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String { g.node("Erf", [x], name: p + "erf") }
        }
        let g = CoreMLGraph(network: try ModelFixtures.network([.linear(inputs: 2, outputs: 2)], input: Shape(time: 1, channels: 2), seed: 1))
        g.input("x", shape: [1, 1, 2])
        XCTAssertThrowsError(try g.emit([.linear(inputs: 2, outputs: 2), LayerSpec(ErfKind())], prefix: "layers.", input: "x", shape: Shape(time: 1, channels: 2))) { e in
            XCTAssertEqual(
                "\(e)",
                "cannot export layer layers.1 (erfTest) to Core ML: its op 'Erf' cannot be lowered to a NeuralNetwork layer: the op has no Core ML lowering (CoreMLGraph in Sources/ModelExport)"
            )
        }
    }

    /// The same in the ML Program's lowering.
    func testAnOpWithoutAProgramLoweringNamesTheLayerKind() throws {
        struct ErfKind: FieldlessLayerKind {
            static let typeName = "erfTest"
            func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes { LayerShapes(output: input) }
            func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer { fatalError("not built") }
            func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String { g.node("Erf", [x], name: p + "erf") }
        }
        let g = CoreMLProgramGraph(network: try ModelFixtures.network([.linear(inputs: 2, outputs: 2)], input: Shape(time: 1, channels: 2), seed: 1))
        g.input("x", shape: [1, 1, 2])
        XCTAssertThrowsError(try g.emit([.linear(inputs: 2, outputs: 2), LayerSpec(ErfKind())], prefix: "layers.", input: "x", shape: Shape(time: 1, channels: 2))) { e in
            XCTAssertEqual(
                "\(e)",
                "cannot export layer layers.1 (erfTest) to a Core ML ML Program: its op 'Erf' cannot be lowered to a MIL operation: the op has no ML Program lowering (CoreMLProgramGraph in Sources/ModelExport)"
            )
        }
    }

    /// The evaluator refuses what it does not implement (a hostile or foreign model), naming it.
    func testTheEvaluatorRefusesUnknownLayersAndBrokenGraphs() throws {
        let model = try golden()
        let bytes = try CoreMLExport.export(header: model.header, network: model.network)
        // A garbage file, and the model cut short.
        var r = try evaluate(Array("not a model".utf8))
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("coreml_eval.py"), r.stderr)
        r = try evaluate(Array(bytes.prefix(bytes.count / 2)))
        XCTAssertEqual(r.status, 1, r.stderr)
        // The last layer, softmaxND (field 950, key bytes B2 3B), retyped by rewriting its key:
        // as argMax (field 1025: the same `axis` field 1), a layer the evaluator does not
        // implement; as the legacy softmax (field 175), whose message has no field 1.
        let at = try XCTUnwrap((0..<(bytes.count - 1)).last { bytes[$0] == 0xB2 && bytes[$0 + 1] == 0x3B })
        for (key, messages) in [([UInt8(0x8A), 0x40], ["does not implement the layer type argMax"]), ([0xFA, 0x0A], ["fields unknown to the Core ML schema in ['Model.neuralNetworkClassifier.layers[", "].softmax']"])] {
            var retyped = bytes
            retyped.replaceSubrange(at..<(at + 2), with: key)
            r = try evaluate(retyped)
            XCTAssertEqual(r.status, 1)
            for m in messages { XCTAssertTrue(r.stderr.contains(m), r.stderr) }
        }
    }
}
