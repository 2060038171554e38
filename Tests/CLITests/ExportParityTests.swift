@testable import ActionRuntime
@testable import ActionTrain
import Datasets
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// The export check (docs/format.md 7.3): the tolerance comes from the model's own float32
/// error, so a correct export of a model whose inputs amplify rounding passes while a real
/// mistake in the file (a swapped pair of weights, a weight written untransposed, a sign in the
/// Create ML conversion) fails; a failed check writes nothing; the windows come from --data or
/// from the pose statistics a fit keeps in the model file.
final class ExportParityTests: XCTestCase {
    // MARK: - The verdict

    func testTheToleranceIsAMultipleOfTheModelsOwnFloat32Error() {
        // The evaluator's float32 run is 1e-5 from its float64 run: the tolerance is 32 × 1e-5.
        var f = ParityFigures.measure(export: [1.0002, -3], runtime: [1, -3], float32: [1.00001, -3], float64: [1, -3])
        XCTAssertEqual(f.rounding, 1e-5, accuracy: 1e-12)
        XCTAssertEqual(f.tolerance, 32e-5, accuracy: 1e-12)
        XCTAssertEqual(f.difference, 2e-4, accuracy: 1e-9)
        XCTAssertEqual(f.runtimeError, 0)
        XCTAssertTrue(f.passed)
        f = ParityFigures.measure(export: [1.0004, -3], runtime: [1, -3], float32: [1.00001, -3], float64: [1, -3])
        XCTAssertFalse(f.passed, "4e-4 is more than 32 × 1e-5")
        // No rounding at all: the floor, 16 float32 epsilons of the largest logit.
        f = ParityFigures.measure(export: [10.00001, 2], runtime: [10, 2], float32: [10, 2], float64: [10, 2])
        XCTAssertEqual(f.tolerance, 16 * 10 * Double(Float.ulpOfOne), accuracy: 1e-15)
        XCTAssertTrue(f.passed)
        XCTAssertTrue(f.summary.contains("the floor for logits up to 10"), f.summary)
        // A non-finite logit fails whatever the rounding.
        f = ParityFigures.measure(export: [.nan, 2], runtime: [1, 2], float32: [1, 2], float64: [1, 2])
        XCTAssertFalse(f.passed)
        f = ParityFigures.measure(export: [1, 2], runtime: [1, 2], float32: [.infinity, 2], float64: [1, 2])
        XCTAssertFalse(f.passed)
    }

    // MARK: - Mutations

    /// A model as `fit` makes it with no config on Vision's 2D skeleton in pixels: a TCN over
    /// coordinates, mask and bones and an FTP over the relative positions of every joint pair,
    /// averaged, gaps filled.
    static func defaultLikeModel() throws -> (ModelHeader, Network) {
        var c = TrainingConfig()
        (c.windowFrames, c.frameRate, c.widths, c.kernel, c.fillGaps) = (8, 30, [8, 6], 3, true)
        c.members = [.init(architecture: .tcn, channels: [.coordinates, .mask, .bones]), .init(architecture: .ftp, channels: [.relativePositions])]
        return try CoreMLCLITests.model(c, seed: 5)
    }

    /// `bytes` with the one occurrence of `from`'s float32 values replaced by `to`'s.
    func replacing(_ from: [Float], with to: [Float], in bytes: [UInt8], _ what: String) throws -> [UInt8] {
        func raw(_ v: [Float]) -> [UInt8] { v.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) } }
        let a = raw(from), b = raw(to)
        XCTAssertEqual(a.count, b.count)
        var found: [Int] = []
        var i = 0
        while i + a.count <= bytes.count, found.count < 2 {
            if bytes[i] == a[0] && Array(bytes[i..<(i + a.count)]) == a { found.append(i) }
            i += 1
        }
        guard found.count == 1 else { throw XCTSkip("\(what): the values occur \(found.count) times in the export") }
        var out = bytes
        out.replaceSubrange(found[0]..<(found[0] + a.count), with: b)
        return out
    }

    /// The mistakes, each in the exported bytes: the first conv1d's weight with two of its
    /// values swapped, the same weight written in the runtime's `[O, K, I]` order instead of
    /// ONNX's `[O, I, K]` (a forgotten transpose), and the FTP member's linear weight written
    /// untransposed.
    func mutations(_ bytes: [UInt8], network: Network, linear: (stored: [Float], other: [Float])) throws -> [(String, [UInt8])] {
        let conv = try XCTUnwrap(network.tensors.first { $0.layout == "[outputs, kernel, inputs]" && $0.shape[1] > 1 && $0.shape[2] > 1 })
        let (O, K, I) = (conv.shape[0], conv.shape[1], conv.shape[2])
        let oki = try network.exportTensor(conv.name).values
        var oik = [Float](repeating: 0, count: oki.count)
        for o in 0..<O { for k in 0..<K { for i in 0..<I { oik[(o * I + i) * K + k] = oki[(o * K + k) * I + i] } } }
        var swapped = oik
        let j = try XCTUnwrap(swapped.indices.max { abs(swapped[$0] - swapped[0]) < abs(swapped[$1] - swapped[0]) })  // the most different
        swapped.swapAt(0, j)
        return [
            ("a swapped pair of conv1d weights", try replacing(oik, with: swapped, in: bytes, "conv1d weight")),
            ("a conv1d weight not transposed", try replacing(oik, with: oki, in: bytes, "conv1d weight")),
            ("a linear weight not transposed", try replacing(linear.stored, with: linear.other, in: bytes, "linear weight")),
        ]
    }

    /// The linear weight of the FTP member as the export stores it (ONNX: `Wᵀ [I, O]`; Core ML:
    /// whichever of `W` and `Wᵀ` its bytes hold), and the other order.
    func linearWeight(_ network: Network, in bytes: [UInt8]) throws -> (stored: [Float], other: [Float]) {
        let t = try XCTUnwrap(network.tensors.last { $0.layout == "[outputs, inputs]" && $0.shape[0] > 1 && $0.shape[1] > 1 })
        let (O, I) = (t.shape[0], t.shape[1])
        let w = try network.exportTensor(t.name).values
        let wt = (0..<(I * O)).map { w[($0 % O) * I + $0 / O] }
        let text = Data(bytes)
        let hasTransposed = text.range(of: Data(wt.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) })) != nil
        return hasTransposed ? (wt, w) : (w, wt)
    }

    func testMutatedONNXExportsFailWhereTheRightOnesPass() throws {
        guard ONNXParity.isAvailable() else {
            throw missingPrerequisite("python3 with numpy and onnxruntime (and tools/python/onnx_eval.py)", fix: "pip install numpy onnxruntime")
        }
        let (header, network) = try Self.defaultLikeModel()
        let poses = PoseWindows.random(input: header.input, count: 16, seed: 3)
        var cases: [(String, ONNXParity.Case)] = []
        for raw in [false, true] {
            let bytes = try ONNXExport.export(header: header, network: network, rawPoses: raw)
            let linear = try linearWeight(network, in: bytes)
            let kind = raw ? "--raw-poses" : "default"
            for (what, b) in [("right", bytes)] + (try mutations(bytes, network: network, linear: linear)) {
                var c = try ONNXParity.rawCase(onnx: b, header: header, network: network, poses: poses)
                if !raw { (c.input, c.name, c.dims) = (try poses.features(header.input), "input", [16, network.inputShape.time, network.inputShape.channels]) }
                cases.append(("\(kind), \(what)", c))
            }
        }
        let results = try XCTUnwrap(try ONNXParity.compare(cases.map(\.1), windows: 16))
        for ((what, _), r) in zip(cases, results) {
            if what.hasSuffix("right") {
                XCTAssertTrue(r.passed, "\(what): \(r.figures.summary)")
                // Pixels' relative positions: a rounding error far above a fixed 1e-5 ...
                XCTAssertGreaterThan(r.figures.rounding, 1e-6, what)
                // ... and onnxruntime and the NumPy evaluator read the graph alike.
                XCTAssertLessThan(r.evaluatorDifference, 4 * r.figures.rounding + 1e-6, what)
            } else {
                XCTAssertFalse(r.passed, "\(what): \(r.figures.summary)")
                XCTAssertGreaterThan(r.figures.difference, 10 * r.figures.tolerance, "\(what) is not a close call: \(r.figures.summary)")
            }
        }
    }

    func testMutatedCoreMLExportsFailWhereTheRightOnesPass() throws {
        guard CoreMLParity.isAvailable(), let script = CoreMLParity.script() else {
            throw missingPrerequisite("python3 with numpy and coremltools (and tools/python/coreml_eval.py)", fix: "pip install numpy coremltools")
        }
        let (header, network) = try Self.defaultLikeModel()
        let poses = PoseWindows.random(input: header.input, count: 12, seed: 4)
        var cases: [(String, CoreMLParity.Case)] = []
        let createML = CreateMLInput(aspectRatio: 16.0 / 9, root: .hips)
        for interface in [CoreMLExport.Interface.native, .createML(createML)] {
            let bytes = try CoreMLExport.export(header: header, network: network, options: .init(interface: interface))
            var mutated = try mutations(bytes, network: network, linear: try linearWeight(network, in: bytes))
            if interface != .native {
                // The conversion to pixels with y not flipped: [W, −H, 1] written as [W, H, 1].
                let (W, H) = createML.units
                mutated.append(("y not flipped", try replacing([Float(W), Float(-H), 1], with: [Float(W), Float(H), 1], in: bytes, "createml.scale")))
            }
            let kind = interface == .native ? "native" : "createml"
            for (what, b) in [("right", bytes)] + mutated {
                cases.append(("\(kind), \(what)", try CoreMLParity.makeCase(mlmodel: b, header: header, network: network, interface: interface, poses: poses)))
            }
        }
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: script))
        for ((what, _), r) in zip(cases, results) {
            if what.hasSuffix("right") {
                XCTAssertTrue(r.passed, "\(what): \(r.figures.summary)")
                XCTAssertGreaterThan(r.figures.rounding, 1e-7, what)
            } else {
                XCTAssertFalse(r.passed, "\(what): \(r.figures.summary)")
                XCTAssertGreaterThan(r.figures.difference, 10 * r.figures.tolerance, "\(what) is not a close call: \(r.figures.summary)")
            }
        }
    }

    // MARK: - The command

    /// A model file of `defaultLikeModel` with pose statistics of a standing person in pixels.
    func writeModel(_ dir: String, name: String = "model.atm", statistics: Bool = true) throws -> String {
        let (header, network) = try Self.defaultLikeModel()
        let J = header.input.skeleton.jointCount
        // Joint j sits at (9 (j mod 7) − 27, 30 (j mod 5) − 60) pixels from the centre.
        var offsets: [Double] = []
        for j in 0..<J {
            let x = 9 * (j % 7) - 27, y = 30 * (j % 5) - 60
            offsets += [Double(x), Double(y)]
        }
        let present: [Double] = (0..<J).map { j -> Double in j < 5 ? 0.3 : 0.97 }
        let stats = ModelHeader.PoseStatistics(
            windows: 10, centreMean: [640, 360], centreSpread: [40, 10], offsetMean: offsets, offsetSpread: Array(repeating: 6, count: 2 * J),
            present: present, confidence: Array(repeating: 0.8, count: J), motion: Array(repeating: 2, count: J))
        let path = dir + "/" + name
        try Data(
            try ModelFile.encode(
                classes: header.classes, input: header.input, network: network, provenance: header.provenance, poseStatistics: statistics ? stats : nil)
        ).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `ACTIONTRAIN_PYTHON` set to a python3 that adds 1 to onnxruntime's first logit: an
    /// export whose check fails.
    func withWrongOnnxruntime<T>(_ dir: String, _ body: () throws -> T) throws -> T {
        let wrapper = dir + "/python"
        try """
        #!/bin/sh
        python3 "$@" || exit $?
        if [ "$#" -ge 8 ]; then python3 -c 'import sys, numpy as np; z = np.fromfile(sys.argv[1], "<f4"); z[0] += 1; z.tofile(sys.argv[1])' "$8"; fi
        """.write(toFile: wrapper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper)
        setenv("ACTIONTRAIN_PYTHON", wrapper, 1)
        defer { unsetenv("ACTIONTRAIN_PYTHON") }
        return try body()
    }

    func testAFailedCheckWritesNothingAndKeepsWhatWasThere() throws {
        guard ONNXParity.isAvailable() else {
            throw missingPrerequisite("python3 with numpy and onnxruntime (and tools/python/onnx_eval.py)", fix: "pip install numpy onnxruntime")
        }
        let dir = try scratchFolder()
        let model = try writeModel(dir)
        let out = dir + "/m.onnx"
        var r = try withWrongOnnxruntime(dir) { runCLI(["export", model, "--out", out, "--parity-windows", "8"]) }
        XCTAssertEqual(r.code, 1, r.err)
        XCTAssertTrue(r.err.contains("\(out) not written: onnxruntime's logits differ from the runtime's by 1, more than the tolerance "), r.err)
        XCTAssertTrue(r.out.hasPrefix("parity: max |logit difference| vs the Swift runtime over 8 windows made from the model's pose statistics: 1 (tolerance"), r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["model.atm", "python"], "no temporary file is left either")
        // With --force over an existing file: the file is as it was.
        try Data("earlier".utf8).write(to: URL(fileURLWithPath: out))
        r = try withWrongOnnxruntime(dir) { runCLI(["export", model, "--out", out, "--parity-windows", "8", "--force"]) }
        XCTAssertEqual(r.code, 1, r.err)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "earlier")
        // The same export with the real onnxruntime passes and writes.
        r = runCLI(["export", model, "--out", out, "--parity-windows", "8", "--force"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("export: wrote \(out) ("), r.out)
    }

    /// The windows: of --data (cut as predict cuts them), else the model file's statistics,
    /// else random; --data on another skeleton is refused naming the file.
    func testTheWindowsComeFromTheDataOrTheModelFile() throws {
        guard ONNXParity.isAvailable() else {
            throw missingPrerequisite("python3 with numpy and onnxruntime (and tools/python/onnx_eval.py)", fix: "pip install numpy onnxruntime")
        }
        let dir = try scratchFolder()
        let model = try writeModel(dir), old = try writeModel(dir, name: "old.atm", statistics: false)
        // Two clips of a Vision 2D person, 12 frames each: 3 sliding windows of 8 frames each (2 apart).
        let joints = Skeleton.visionBody2D.joints
        var lines = [#"{"actiontrain": "poses", "version": 1, "skeleton": "vision-body-2d", "frameRate": 30}"#]
        for s in 0..<2 {
            var frames: [String] = []
            for f in 0..<12 {
                let points = joints.enumerated().map { j, name in "\"\(name)\": [\(300 + 10 * j + f + s), \(200 + 20 * (j % 7) - f)]" }
                frames.append("{\"t\": \(Double(f) / 30), \"pose\": {\(points.joined(separator: ", "))}}")
            }
            lines.append("{\"id\": \"clip\(s)\", \"frames\": [\(frames.joined(separator: ", "))]}")
        }
        let data = dir + "/clips.jsonl"
        try lines.joined(separator: "\n").write(toFile: data, atomically: true, encoding: .utf8)
        var r = runCLI(["export", model, "--out", dir + "/a.onnx", "--raw-poses", "--data", data])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("over 6 windows of \(data): "), r.out)
        r = runCLI(["export", model, "--out", dir + "/b.onnx", "--parity-windows", "16"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("over 16 windows made from the model's pose statistics: "), r.out)
        let inspected = runCLI(["inspect", model])
        XCTAssertTrue(inspected.out.contains("  poses        statistics of 10 training windows' raw poses, for export's parity check"), inspected.out)
        XCTAssertFalse(runCLI(["inspect", old]).out.contains("  poses "))
        r = runCLI(["export", old, "--out", dir + "/c.onnx", "--parity-windows", "16"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("over 16 random windows: "), r.out)
        // Data on another skeleton.
        let other = dir + "/other.jsonl"
        try """
        {"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 30}
        {"id": "x", "frames": [{"t": 0, "pose": {"nose": [1, 2]}}]}
        """.write(toFile: other, atomically: true, encoding: .utf8)
        r = runCLI(["export", model, "--out", dir + "/d.onnx", "--data", other])
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.hasPrefix("error: \(other): "), r.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/d.onnx"))
        // Reading flags without --data, --data without a check.
        r = runCLI(["export", model, "--out", dir + "/e.onnx", "--people", "largest"])
        XCTAssertEqual(r.code, 2)
        XCTAssertTrue(r.err.contains("--people is for reading --data FILE"), r.err)
        r = runCLI(["export", model, "--out", dir + "/e.onnx", "--data", data, "--parity-windows", "0"])
        XCTAssertEqual(r.code, 2)
        XCTAssertTrue(r.err.contains("--parity-windows 0 skips the check"), r.err)
    }
}
