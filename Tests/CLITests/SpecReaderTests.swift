import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// The second independent reader: tools/python/spec_reader.py, written from docs/format.md
/// alone, reads the model file and the recorded sequences and must reproduce `actiontrain
/// predict`'s probabilities to 1e-5, window by window, on the golden model (every layer type,
/// step but alignFacing, and block) and on variants that cover the rest of section 5:
/// resampling with and without timestamps, edge padding, fit windows, a 3D skeleton with
/// alignFacing, sequences shorter than a window, of one frame, and empty.
///
/// Needs python3 with numpy. Without it the test is skipped, except under CI
/// (`ACTIONTRAIN_CI=1`, set by .ci/run, or `CI`), where it fails.
final class SpecReaderTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let golden = root.appendingPathComponent("Tests/ActionRuntimeTests/Golden/model.atm").path
    static let script = root.appendingPathComponent("tools/python/spec_reader.py").path

    /// A recorded sequence: per frame, per joint nil (absent) or D coordinates, then a
    /// confidence when `confidence`; optional timestamps.
    struct Recorded {
        var id: String
        var label: String
        var frames: [[[Float]?]]
        var timestamps: [Double]?
    }

    var dir: URL!

    override func setUpWithError() throws {
        dir = try temporaryDirectory("SpecReaderTests")
        addTeardownBlock { [dir] in try? FileManager.default.removeItem(at: dir!) }
    }

    /// Fails under CI when python3 cannot import numpy, else skips.
    func requireNumpy() throws {
        if (try? run(["python3", "-c", "import numpy"]).status) == 0 { return }
        throw missingPrerequisite("python3 with numpy", fix: "pip install numpy, to run the independent spec reader")
    }

    /// Runs a command found on the PATH (the export command's helper).
    func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) { try ONNXParity.run(arguments) }

    // MARK: - Data

    /// Sequences of the given lengths: smooth motion plus noise, about a fifth of the joints
    /// absent (some frames empty), confidence in [0.3, 1] when asked.
    static func recorded(
        _ skeleton: Skeleton, lengths: [Int], classes: [String], confidence: Bool, rate: Double?, jitter: Bool, seed: UInt64
    ) -> [Recorded] {
        var g = SeededGenerator(seed: seed)
        let D = skeleton.dimensions
        return lengths.enumerated().map { s, n in
            var frames: [[[Float]?]] = []
            for f in 0..<n {
                let empty = g.nextUnitFloat() < 0.05
                frames.append(
                    (0..<skeleton.jointCount).map { j -> [Float]? in
                        if empty || g.nextUnitFloat() < 0.2 { return nil }
                        let phase = Float(f) * 0.4 + Float(j + s)
                        var point: [Float] =
                            D == 2
                            ? [200 + 30 * Float(j) + 25 * sin(phase) + g.nextSymmetric(3), 150 + 40 * Float(j) + 10 * cos(phase) + g.nextSymmetric(3)]
                            : [0.2 * Float(j) - 0.4 + 0.1 * sin(phase), 0.3 * Float(j) + g.nextSymmetric(0.05), 0.5 * cos(Float(s)) + 0.1 * cos(phase)]
                        if confidence { point.append(0.3 + 0.7 * g.nextUnitFloat()) }
                        return point
                    })
            }
            var timestamps: [Double]? = nil
            if jitter {
                var t = 0.0
                timestamps = (0..<n).map { f in
                    if f > 0 { t += (1 / (rate ?? 30)) * Double(0.3 + 1.4 * g.nextUnitFloat()) }
                    return t
                }
            }
            return Recorded(id: "seq-\(s)", label: classes[s % classes.count], frames: frames, timestamps: timestamps)
        }
    }

    /// `network` initialised with `seed` and written as a model file `file` in `dir`; its path.
    func writeModel(_ network: Network, input: InputSpec, classes: [String], seed: UInt64, file: String) throws -> String {
        network.initialize(seed: seed)
        let model = dir.appendingPathComponent(file).path
        try Data(try ModelFile.encode(classes: classes, input: input, network: network, provenance: .init(seed: seed)))
            .write(to: URL(fileURLWithPath: model))
        return model
    }

    /// The sequences as a native dataset file (for `predict`) and as the spec reader's poses
    /// JSON, the numbers written identically in both.
    func write(_ sequences: [Recorded], skeleton: Skeleton, classes: [String], rate: Double?, name: String) throws -> (data: String, poses: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let skeletonJSON = String(decoding: try encoder.encode(skeleton), as: UTF8.self)
        func number(_ v: Float) -> String { "\(v)" }
        let rateJSON = rate.map { "\($0)" } ?? "null"
        var lines = [#"{"actiontrain": "poses", "version": 1, "skeleton": \#(skeletonJSON), "frameRate": \#(rateJSON), "classes": \#(try String(decoding: encoder.encode(classes), as: UTF8.self))}"#]
        var poseSequences: [String] = []
        for s in sequences {
            var frames: [String] = [], poseFrames: [String] = []
            for (f, frame) in s.frames.enumerated() {
                let joints = zip(skeleton.joints, frame).compactMap { name, p in p.map { "\"\(name)\": [\($0.map(number).joined(separator: ", "))]" } }
                let t = s.timestamps.map { "\"t\": \($0[f]), " } ?? ""
                frames.append("{\(t)\"pose\": {\(joints.joined(separator: ", "))}}")
                poseFrames.append("[" + frame.map { p in p.map { "[\($0.map(number).joined(separator: ", "))]" } ?? "null" }.joined(separator: ", ") + "]")
            }
            lines.append(#"{"id": "\#(s.id)", "label": "\#(s.label)", "frames": [\#(frames.joined(separator: ", "))]}"#)
            let ts = s.timestamps.map { "[" + $0.map { "\($0)" }.joined(separator: ", ") + "]" } ?? "null"
            poseSequences.append(#"{"id": "\#(s.id)", "timestamps": \#(ts), "frames": [\#(poseFrames.joined(separator: ", "))]}"#)
        }
        let data = dir.appendingPathComponent("\(name).jsonl"), poses = dir.appendingPathComponent("\(name).poses.json")
        try (lines.joined(separator: "\n") + "\n").write(to: data, atomically: true, encoding: .utf8)
        try #"{"frameRate": \#(rateJSON), "sequences": [\#(poseSequences.joined(separator: ",\n"))]}"#.write(to: poses, atomically: true, encoding: .utf8)
        return (data.path, poses.path)
    }

    /// A model file with the golden network and another window.
    func goldenVariant(_ window: WindowSpec, name: String) throws -> String {
        let (header, network) = try ModelFile.load(contentsOf: Self.golden)
        var input = header.input
        input.window = window
        let bytes = try ModelFile.encode(classes: header.classes, input: input, network: network, provenance: header.provenance)
        let path = dir.appendingPathComponent("\(name).atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: - The comparison

    /// Runs `predict` and the spec reader on the same model and data; every window must match:
    /// sequence, index, start, end, and each probability to 1e-5. Returns the largest
    /// difference and the number of windows.
    @discardableResult
    func assertSameAsPredict(model: String, data: String, poses: String, stride: Int?, file: StaticString = #filePath, line: UInt = #line) throws -> (Float, Int) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(["predict", model, data] + (stride.map { ["--stride", "\($0)"] } ?? []), out: &output)
        XCTAssertEqual(code, 0, stderr, file: file, line: line)
        let classes = try ActionModel(contentsOf: model).classes
        let swift = try stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let python = try run(["python3", Self.script, model, poses] + (stride.map { ["--stride", "\($0)"] } ?? []))
        XCTAssertEqual(python.status, 0, python.stderr, file: file, line: line)
        let spec = try python.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertEqual(spec.count, swift.count, "windows", file: file, line: line)
        XCTAssertGreaterThan(swift.count, 0, file: file, line: line)
        var largest: Float = 0
        for (a, b) in zip(swift, spec) {
            for key in ["sequence", "window", "start", "end"] {
                XCTAssertEqual("\(a[key]!)", "\(b[key] ?? "missing")", "\(key) of \(a["sequence"]!) window \(a["window"]!)", file: file, line: line)
            }
            let p = try XCTUnwrap(a["probabilities"] as? [String: Double])
            let q = try XCTUnwrap(b["probabilities"] as? [Double])
            XCTAssertEqual(q.count, classes.count, file: file, line: line)
            for (k, c) in classes.enumerated() where k < q.count {
                largest = max(largest, Float(abs(p[c]! - q[k])))
            }
            let sorted = q.sorted(by: >)
            if sorted.count < 2 || sorted[0] - sorted[1] > 1e-5 {
                XCTAssertEqual(a["label"] as? String, b["label"] as? String, "label of \(a["sequence"]!) window \(a["window"]!)", file: file, line: line)
            }
        }
        XCTAssertLessThanOrEqual(largest, 1e-5, "largest probability difference", file: file, line: line)
        print("spec reader vs predict on \(URL(fileURLWithPath: model).lastPathComponent): \(swift.count) windows, largest probability difference \(largest)")
        return (largest, swift.count)
    }

    // MARK: - Cases

    /// The golden model as shipped: windows of 6 frames resampled to 30 fps, from data at
    /// 25 fps without timestamps; default stride and stride 1.
    func testGoldenModelResampledFromAnotherRate() throws {
        try requireNumpy()
        let header = try ActionModel(contentsOf: Self.golden).header
        let sequences = Self.recorded(
            header.input.skeleton, lengths: [3, 6, 10, 17, 1], classes: header.classes, confidence: true, rate: 25, jitter: false, seed: 1)
        let (data, poses) = try write(sequences, skeleton: header.input.skeleton, classes: header.classes, rate: 25, name: "golden")
        try assertSameAsPredict(model: Self.golden, data: data, poses: poses, stride: nil)
        try assertSameAsPredict(model: Self.golden, data: data, poses: poses, stride: 1)
        // The same model as a 1.7 file (standardize's statistics in the header, not as tensors).
        try assertSameAsPredict(model: Self.golden.replacingOccurrences(of: "model.atm", with: "model-1.7.atm"), data: data, poses: poses, stride: 1)
    }

    /// A model `fit` writes, whose header holds `poseStatistics` (format 1.4). Before, the
    /// reader refused every such file: "tensor '...' runs past the data section" (checking the
    /// statistics reused the name of the data section's length for the skeleton's dimensions).
    func testAFitModelWithPoseStatistics() throws {
        try requireNumpy()
        let classes = ["a", "b"]
        let sequences = Self.recorded(.natops, lengths: [12, 9, 15, 10, 11, 14], classes: classes, confidence: false, rate: 10, jitter: false, seed: 4)
        let (data, poses) = try write(sequences, skeleton: .natops, classes: classes, rate: 10, name: "fitted")
        let run = dir.appendingPathComponent("run").path
        XCTAssertEqual(runActionTrainCLI(["fit", data, "--out", run, "--epochs", "1"] + FitCLITests.quick).code, 0)
        let model = run + "/model.atm"
        XCTAssertNotNil(try ActionModel(contentsOf: model).header.poseStatistics)
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: nil)
    }

    /// Frames as recorded, edge padding, with an empty sequence among them.
    func testEdgePaddingWithoutResampling() throws {
        try requireNumpy()
        let model = try goldenVariant(WindowSpec(frames: 6, mode: .sliding, padding: .edge, frameRate: nil), name: "edge")
        let header = try ActionModel(contentsOf: model).header
        let sequences = Self.recorded(
            header.input.skeleton, lengths: [2, 0, 7, 12], classes: header.classes, confidence: true, rate: 30, jitter: false, seed: 2)
        let (data, poses) = try write(sequences, skeleton: header.input.skeleton, classes: header.classes, rate: 30, name: "edge")
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: 4)
    }

    /// One window per sequence, resampled to 20 fps from irregular timestamps, without
    /// confidences.
    func testFitWindowsFromTimestamps() throws {
        try requireNumpy()
        let model = try goldenVariant(WindowSpec(frames: 6, mode: .fit, padding: .empty, frameRate: 20), name: "fit")
        let header = try ActionModel(contentsOf: model).header
        let sequences = Self.recorded(
            header.input.skeleton, lengths: [5, 9, 23], classes: header.classes, confidence: false, rate: 30, jitter: true, seed: 3)
        let (data, poses) = try write(sequences, skeleton: header.input.skeleton, classes: header.classes, rate: nil, name: "fit")
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: nil)
    }

    /// A 3D skeleton in metres with every step (alignFacing about y) and every block.
    func test3DWithAlignFacing() throws {
        try requireNumpy()
        let skeleton = Skeleton(
            name: "spec-3d", joints: ["root", "neck", "head", "leftHand", "rightHand"], dimensions: 3, units: .metres,
            bones: [["root", "neck"], ["neck", "head"], ["neck", "leftHand"], ["neck", "rightHand"]], centre: ["root"],
            torsoUpper: ["neck"], torsoLower: ["root"])
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 8, mode: .sliding, padding: .edge, frameRate: 15),
            steps: [
                .centre(joints: ["root"], perFrame: false), .alignFacing(left: ["leftHand"], right: ["rightHand"], verticalAxis: 1),
                .scaleByTorso(upper: ["neck"], lower: ["root"]), .divide(by: [1, 2, 0.5]),
            ],
            channels: [.coordinates, .confidence, .mask, .motion, .bones])
        let shape = Shape(time: 8, channels: input.channelsPerFrame)
        let classes = ["throw", "catch", "idle", "wave"]
        let network = try Network(
            layers: [
                .conv1d(inputs: shape.channels, outputs: 12, kernel: 3, stride: 2, dilation: 1, padding: 1), .relu,
                .layerNorm(channels: 12, epsilon: 1e-5), .flatten, .linear(inputs: 48, outputs: 4),
            ], input: shape)
        let model = try writeModel(network, input: input, classes: classes, seed: 9, file: "3d.atm")
        let sequences = Self.recorded(skeleton, lengths: [4, 16, 31], classes: classes, confidence: true, rate: 30, jitter: true, seed: 4)
        let (data, poses) = try write(sequences, skeleton: skeleton, classes: classes, rate: 30, name: "3d")
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: 2)
    }

    /// A multi-stream model (three members on their own channel blocks) under test-time flip
    /// averaging (format 1.1): the reader's selectChannels, averageProbabilities and flipAverage.
    func testStreamsUnderFlipAveraging() throws {
        try requireNumpy()
        let skeleton = Skeleton(
            name: "spec-flip", joints: ["root", "leftHand", "rightHand", "head"], dimensions: 3, units: .metres,
            mirrorPairs: [["leftHand", "rightHand"]], bones: [["root", "leftHand"], ["root", "rightHand"], ["root", "head"]],
            centre: ["root"])
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 6), steps: [.centre(joints: ["root"], perFrame: false)],
            channels: [.coordinates, .bones, .motion])
        let shape = Shape(time: 6, channels: input.channelsPerFrame)  // 12 + 9 + 12
        let classes = ["left", "right", "both"]
        func member(_ channels: [Int]) -> [LayerSpec] {
            [
                .selectChannels(channels), .conv1d(inputs: channels.count, outputs: 5, kernel: 3, stride: 1, dilation: 1, padding: 1), .relu,
                .globalAveragePool, .linear(inputs: 5, outputs: 3),
            ]
        }
        let streams: LayerSpec = .averageProbabilities([member(Array(0..<12)), member(Array(12..<21)), member(Array(21..<33))])
        let mirror = try input.mirrorImage()
        let network = try Network(layers: [.flipAverage(channels: mirror.channels, signs: mirror.signs, body: [streams])], input: shape)
        let model = try writeModel(network, input: input, classes: classes, seed: 12, file: "flip.atm")
        let sequences = Self.recorded(skeleton, lengths: [6, 11, 20], classes: classes, confidence: false, rate: nil, jitter: false, seed: 6)
        let (data, poses) = try write(sequences, skeleton: skeleton, classes: classes, rate: nil, name: "flip")
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: 3)
    }

    /// An ST-GCN-like network on joint-major coordinates: a spatial graphConv (K = 1, two
    /// partitions of a non-symmetric graph), ReLU, a temporal one (K = 3, identity graph):
    /// the reader's graphConv (format 1.2).
    func testGraphConvNetwork() throws {
        try requireNumpy()
        let skeleton = Skeleton(
            name: "spec-graph", joints: ["root", "neck", "leftHand", "rightHand"], dimensions: 2, units: .pixels,
            bones: [["root", "neck"], ["neck", "leftHand"], ["neck", "rightHand"]], centre: ["root"])
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 5), steps: [.centre(joints: ["root"], perFrame: false)], channels: [.coordinates])
        let J = 4, shape = Shape(time: 5, channels: input.channelsPerFrame)  // 4 joints x 2 coordinates
        let towardsRoot: [Float] = [1, 0.5, 0, 0, 0, 1, 0.25, 0.25, 0, 0, 1, 0, 0, 0, 0, 1]
        let awayFromRoot: [Float] = [0, 0, 0, 0, 0.75, 0, 0, 0, 0, 0.5, 0, 0, 0, 0.5, 0, 0]
        let identity = (0..<(J * J)).map { Float($0 % (J + 1) == 0 ? 1 : 0) }
        let network = try Network(
            layers: [
                .graphConv(joints: J, inputs: 2, outputs: 6, kernel: 1, adjacency: [towardsRoot, awayFromRoot]), .relu,
                .graphConv(joints: J, inputs: 6, outputs: 3, kernel: 3, adjacency: [identity]), .globalAveragePool,
                .linear(inputs: J * 3, outputs: 3),
            ], input: shape)
        let classes = ["a", "b", "c"]
        let model = try writeModel(network, input: input, classes: classes, seed: 13, file: "graph.atm")
        let sequences = Self.recorded(skeleton, lengths: [5, 9, 14], classes: classes, confidence: false, rate: nil, jitter: false, seed: 7)
        let (data, poses) = try write(sequences, skeleton: skeleton, classes: classes, rate: nil, name: "graph")
        try assertSameAsPredict(model: model, data: data, poses: poses, stride: 2)
    }

    /// The optional `streaming` field (format.md 3.4): read when within its bounds, refused,
    /// naming it, when not (here an exit above its class's enter).
    func testSpecReaderChecksTheStreamingField() throws {
        try requireNumpy()
        let golden = try ActionModel(contentsOf: Self.golden)
        let K = golden.classes.count
        var input = golden.input
        input.window.mode = .fit
        let streaming = ModelHeader.Streaming(
            clipFrames: 20, clipFrameRate: 30, enter: Array(repeating: 0.5, count: K), exit: Array(repeating: 0.2, count: K), calibration: "training")
        var bytes = try ModelFile.encode(classes: golden.classes, input: input, network: golden.network, provenance: .init(), streaming: streaming)
        let good = dir.appendingPathComponent("streaming.atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: good))
        let read = try run(["python3", Self.script, good])
        XCTAssertEqual(read.status, 0, read.stderr)
        // The last exit becomes 0.9 (the same length): a header the Swift reader refuses too.
        let h = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
        var header = String(decoding: bytes[64..<(64 + h)], as: UTF8.self)
        let range = try XCTUnwrap(header.range(of: "0.2]"))
        header.replaceSubrange(range, with: "0.9]")
        bytes.replaceSubrange(64..<(64 + h), with: Array(header.utf8))
        let crc = CRC32.checksum(Array(bytes[64..<(64 + h)]))
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 32, as: UInt32.self) }
        XCTAssertThrowsError(try ModelFile.load(bytes)) { XCTAssertTrue("\($0)".contains("the thresholds need 0 <= exit <= enter"), "\($0)") }
        let bad = dir.appendingPathComponent("bad-streaming.atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: bad))
        let r = try run(["python3", Self.script, bad])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("streaming thresholds need 0 <= exit <= enter <= 1"), r.stderr)
    }

    /// The reader refuses what format.md says to refuse (here, a NaN in the first tensor, the
    /// golden model's standardize statistics since format 1.8), naming it.
    func testSpecReaderRefusesANonFiniteValue() throws {
        try requireNumpy()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.golden)))
        let h = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: Float.nan.bitPattern.littleEndian, toByteOffset: 64 + h + 4, as: UInt32.self) }
        let crc = CRC32.checksum(Array(bytes[(64 + h)...]))
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 36, as: UInt32.self) }
        let path = dir.appendingPathComponent("nan.atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try run(["python3", Self.script, path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("tensor 'layers.7.body.0.shortcut.1.mean' holds NaN or infinite values"), r.stderr)
    }
}
