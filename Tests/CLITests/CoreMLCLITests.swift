@testable import ActionRuntime
@testable import ActionTrain
import Foundation
import ModelExport
import Pipelines
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// `actiontrain export --format coreml` and the model families `fit` writes: an MLP, a TCN,
/// ST-GCN, FTP, multi-stream (`averageProbabilities`), mixed members (a TCN and an FTP, gaps
/// filled), test-time flips (`flipAverage`) and ensembles, on Vision's 2D skeleton, through
/// both interfaces; coremltools loads and validates each model and tools/python/coreml_eval.py
/// reproduces this runtime's probabilities to 1e-5. Needs python3 with numpy and coremltools
/// (skipped without them, failed under CI).
final class CoreMLCLITests: XCTestCase {
    func requireCoreMLTools() throws -> String {
        guard CoreMLParity.isAvailable(), let script = CoreMLParity.script() else {
            throw missingPrerequisite("python3 with numpy and coremltools (and tools/python/coreml_eval.py)", fix: "pip install numpy coremltools")
        }
        return script
    }

    /// A model as `fit` builds it for `config` on vision-body-2d, random weights, 3 classes.
    static func model(_ config: TrainingConfig, seed: UInt64) throws -> (ModelHeader, Network) {
        let input = try config.inputSpec(for: .visionBody2D, imageSize: nil)
        let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
        // An ftp network's standardize, calibrated as training does, on seeded random windows.
        var g = SeededGenerator(seed: seed)
        let windows = (0..<(16 * shape.count)).map { _ in g.nextSymmetric(1.5) }
        let layers = try StandardizeCalibration.calibrate(try config.layers(for: input, classes: 3), input: shape, windows: 16) { range, out in
            windows.withUnsafeBufferPointer { out.update(from: $0.baseAddress! + range.lowerBound * shape.count, count: range.count * shape.count) }
        }
        let members = try (0..<config.ensemble).map { m -> Network in
            let n = try Network(layers: layers, input: shape)
            n.initialize(seed: Ensemble.seed(seed, member: m))
            var g = SeededGenerator(seed: seed &+ UInt64(m))
            for i in 0..<n.parameterCount { n.parameters[i] += g.nextSymmetric(0.2) }  // biases and norms away from 0 and 1
            return n
        }
        let trained = try Ensemble.network(members)
        let network = try Network(layers: try config.flipped(trained.specs, input: input), input: shape)
        UnsafeBufferPointer(start: trained.parameters, count: trained.parameterCount).withMemoryRebound(to: Float.self) { network.load(parameters: $0) }
        let bytes = try ModelFile.encode(classes: ["jump", "squat", "wave"], input: input, network: network, provenance: .init(datasetHash: "fnv1a64:0123456789abcdef"))
        return try ModelFile.load(bytes)
    }

    /// Small models of every family and combination the Core ML exports must lower, by name
    /// (the .mlmodel's and the .mlpackage's tests).
    static func familyConfigs() -> [(String, TrainingConfig)] {
        var base = TrainingConfig()
        base.windowFrames = 6
        base.frameRate = 30
        base.hidden = [12]
        base.widths = [8, 6]
        base.kernel = 3
        base.channels = [.coordinates, .mask, .bones, .motion]
        var configs: [(String, TrainingConfig)] = []
        for (name, edit) in [
            ("mlp", { (c: inout TrainingConfig) in c.architecture = .mlp }),
            ("tcn", { (c: inout TrainingConfig) in c.architecture = .tcn }),
            ("stgcn", { (c: inout TrainingConfig) in c.architecture = .stgcn }),
            ("streams", { (c: inout TrainingConfig) in c.streams = [[.coordinates, .mask], [.bones], [.motion]] }),
            ("ftp", { (c: inout TrainingConfig) in (c.architecture, c.channels) = (.ftp, [.relativePositions]) }),
            (
                "members tcn + ftp, gaps filled",
                { (c: inout TrainingConfig) in
                    c.members = [.init(architecture: .tcn, channels: [.coordinates, .mask, .bones]), .init(architecture: .ftp, channels: [.relativePositions])]
                    c.fillGaps = true
                }
            ),
            (
                "members tcn + ftp, ensemble + flip",
                { (c: inout TrainingConfig) in
                    c.members = [.init(architecture: .tcn, channels: [.coordinates, .mask]), .init(architecture: .ftp, channels: [.relativePositions])]
                    (c.fillGaps, c.ensemble, c.testTimeFlip) = (true, 2, true)
                }
            ),
            ("flipAverage", { (c: inout TrainingConfig) in c.testTimeFlip = true }),
            ("ensemble + flip", { (c: inout TrainingConfig) in (c.ensemble, c.testTimeFlip) = (2, true) }),
        ] {
            var c = base
            edit(&c)
            configs.append((name, c))
        }
        return configs
    }

    func testEveryArchitectureExportsAndMatchesTheRuntime() throws {
        let script = try requireCoreMLTools()
        let configs = Self.familyConfigs()
        var cases: [(String, CoreMLParity.Case)] = []
        var kinds = Set<String>()
        for (i, (name, config)) in configs.enumerated() {
            let (header, network) = try Self.model(config, seed: UInt64(20 + i))
            func collect(_ specs: [LayerSpec]) {
                for spec in specs {
                    kinds.insert(spec.typeName)
                    for (_, field) in spec.kind.fields {
                        if case .layers(let inner) = field { collect(inner) }
                        if case .layerLists(let lists) = field { lists.forEach(collect) }
                    }
                }
            }
            collect(header.layers)
            for interface in [CoreMLExport.Interface.native, .createML(CreateMLInput(aspectRatio: 16.0 / 9, root: .hips))] {
                let bytes = try CoreMLExport.export(header: header, network: network, options: .init(interface: interface))
                cases.append(("\(name), \(interface == .native ? "native" : "createml")", try CoreMLParity.makeCase(mlmodel: bytes, header: header, network: network, interface: interface, windows: 12, seed: UInt64(i))))
            }
        }
        XCTAssertTrue(kinds.isSuperset(of: ["flatten", "conv1d", "graphConv", "averageProbabilities", "flipAverage", "fourierPyramid", "standardize"]), "\(kinds)")
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: script))
        for ((what, _), r) in zip(cases, results) {
            XCTAssertLessThan(r.maxAbsDifference, 1e-5, what)
            XCTAssertLessThan(r.maxLogitDifference, 1e-4, what)
        }
    }

    // MARK: - The command

    func writeModel(_ dir: URL) throws -> String {
        var c = TrainingConfig()
        (c.windowFrames, c.frameRate, c.architecture, c.widths, c.kernel) = (5, 30, .tcn, [6], 3)
        let (header, network) = try Self.model(c, seed: 3)
        let path = dir.appendingPathComponent("model.atm").path
        try Data(try ModelFile.encode(classes: header.classes, input: header.input, network: network, provenance: header.provenance)).write(to: URL(fileURLWithPath: path))
        return path
    }

    func testExportCoreMLWritesAndChecksADropInForCreateML() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = try writeModel(dir)
        let out = dir.appendingPathComponent("Classifier.mlmodel").path
        let args = [
            "export", model, "--format", "coreml", "--interface", "createml", "--aspect-ratio", "9:16", "--root", "absent", "--out", out,
            "--author", "Test", "--license", "CC0", "--parity-windows", "8",
        ]
        var r = runCLI(args)
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("input poses [5, 3, 18] of Create ML's keypoints, 3 classes"), r.out)
        if CoreMLParity.isAvailable() {
            XCTAssertTrue(r.out.contains("loads and validates it; max |logit difference| of tools/python/coreml_eval.py vs the Swift runtime over 8 random windows: "), r.out)
        } else {
            _ = try requireCoreMLTools()
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: out))
        XCTAssertGreaterThan(written.count, 1000)
        // Not overwritten without --force.
        r = runCLI(args)
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.contains("exists; pass --force"), r.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out)), written)
    }

    func testExportCoreMLUsageErrorsSayWhatToDo() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = try writeModel(dir)
        let cases: [([String], String)] = [
            (["--format", "coreml", "--interface", "createml", "--root", "hips"], "needs the aspect ratio of the app's camera frames"),
            (["--format", "coreml", "--interface", "createml", "--aspect-ratio", "16:9"], "--root absent (trained on Create ML keypoints"),
            (["--format", "coreml", "--interface", "createml", "--aspect-ratio", "wide", "--root", "hips"], "--aspect-ratio expects the frames' width:height"),
            (["--format", "coreml", "--interface", "createml", "--aspect-ratio", "16:9", "--image-size", "1080x1920", "--root", "hips"], "disagree"),
            (["--format", "coreml", "--interface", "createml", "--aspect-ratio", "1", "--root", "hips", "--keypoint-order", "nose,neck"], "--keypoint-order expects the 18"),
            (["--format", "coreml", "--aspect-ratio", "16:9"], "--aspect-ratio describes Create ML's input: add --interface createml"),
            (["--format", "coreml", "--raw-poses"], "a Core ML model always takes raw poses"),
            (["--author", "X"], "--author is a Core ML option: add --format coreml"),
        ]
        for (extra, message) in cases {
            let r = runCLI(["export", model, "--parity-windows", "0", "--out", dir.appendingPathComponent("x.mlmodel").path] + extra)
            XCTAssertEqual(r.code, 2, "\(extra): \(r.err)")
            XCTAssertTrue(r.err.contains(message), "\(extra): \(r.err)")
        }
        // Issue 37: an output name of another format is refused, never written under it (a
        // package is written with --format coreml only: CoreMLPackageTests).
        for (name, extra, message) in [
            ("x.mlpackage", [], "an ML Program package is a Core ML model: add --format coreml"),
            ("x.onnx", ["--format", "coreml"], "--format coreml writes a .mlmodel"),
            ("x.mlmodel", [], "this writes ONNX (the default format); add --format coreml"),
        ] {
            let out = dir.appendingPathComponent(name).path
            let r = runCLI(["export", model, "--parity-windows", "0", "--out", out] + extra)
            XCTAssertEqual(r.code, 2, "\(name): \(r.err)")
            XCTAssertTrue(r.err.contains(message), "\(name): \(r.err)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: out), name)
        }
    }
}
