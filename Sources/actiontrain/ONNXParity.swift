import ActionRuntime
import Foundation
import PoseCore

/// Runs an exported ONNX model through onnxruntime (Python, when installed) and compares its
/// logits with the Swift runtime's, within a tolerance set by the model's own float32 error
/// (`ParityFigures`: tools/python/onnx_eval.py runs the same graph in float32 and float64):
/// `actiontrain export`'s check, and the tests'. It lives in the CLI so that the ModelExport
/// library never spawns a process.
enum ONNXParity {
    struct Result: Sendable {
        /// `max |logit_onnx − logit_swift|` over all windows and classes, and the tolerance.
        var figures: ParityFigures
        var windows: Int
        var onnxruntimeVersion: String
        /// `max |logit_onnxruntime − logit_onnx_eval|`, both float32: two independent readings
        /// of the ONNX graph agree (a check of the evaluator, for the tests).
        var evaluatorDifference: Double

        var maxAbsDifference: Float { Float(figures.difference) }
        var passed: Bool { figures.passed }
    }

    enum ParityError: Error, CustomStringConvertible {
        case failed(String)
        var description: String {
            switch self {
            case .failed(let why): return "the onnxruntime parity check failed: \(why)"
            }
        }
    }

    /// The Python interpreter used: `$ACTIONTRAIN_PYTHON`, else `python3` on the PATH.
    static var python: String { ProcessInfo.processInfo.environment["ACTIONTRAIN_PYTHON"] ?? "python3" }

    /// True when `python` can import numpy and onnxruntime and tools/python/onnx_eval.py is found.
    static func isAvailable() -> Bool {
        evaluator != nil && (try? run([python, "-c", "import numpy, onnxruntime"]))?.status == 0
    }

    /// tools/python/onnx_eval.py, the NumPy evaluator of the float32 and float64 runs.
    static var evaluator: String? { ParityTools.path("onnx_eval.py") }

    /// Arguments: the folder of onnx_eval.py, then groups of (model.onnx, inputs.f32, input name,
    /// comma-separated dims, logits file): onnxruntime's logits (float32) go to the file,
    /// onnx_eval's float32 and float64 runs (float64 values) to the file + `.32` and `.64`.
    static let script = """
        import sys, numpy as np, onnxruntime as ort
        sys.path.insert(0, sys.argv[1])
        import onnx_eval
        args = sys.argv[2:]
        for i in range(0, len(args), 5):
            model, x, name, dims, out = args[i:i + 5]
            s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            X = np.fromfile(x, "<f4").reshape([int(d) for d in dims.split(",")])
            np.ascontiguousarray(s.run(["logits"], {name: X})[0], "<f4").tofile(out)
            g = onnx_eval.load(model)
            for dtype, suffix in ((np.float32, ".32"), (np.float64, ".64")):
                z = onnx_eval.evaluate(g, {name: X}, dtype)["logits"]
                np.ascontiguousarray(z, "<f8").tofile(out + suffix)
        print(ort.__version__)
        """

    /// Compares `onnx` (the exported bytes of `network`) on `windows` random network inputs,
    /// uniform in [-2, 2), seeded (the layer tests: a network without a pose input). Returns nil
    /// when onnxruntime is not available.
    static func check(onnx: [UInt8], network: Network, windows: Int = 64, seed: UInt64 = 1) throws -> Result? {
        try check([(onnx, network)], windows: windows, seed: seed)?.first
    }

    /// `check` for several models in one Python process (onnxruntime takes a second to import).
    static func check(_ models: [(onnx: [UInt8], network: Network)], windows: Int = 64, seed: UInt64 = 1) throws -> [Result]? {
        let cases = models.enumerated().map { i, m -> Case in
            var g = SeededGenerator(seed: seed &+ UInt64(i))
            let x = (0..<(windows * m.network.inputShape.count)).map { _ in g.nextSymmetric(2) }
            return Case(
                onnx: m.onnx, input: x, name: "input", dims: [windows, m.network.inputShape.time, m.network.inputShape.channels],
                expected: m.network.predictLogits(x, batch: windows), classes: m.network.classCount)
        }
        return try compare(cases, windows: windows)
    }

    /// The check of a default export (`input`, the network input) on `poses`, whose features
    /// this runtime's `FeatureExtractor` computes for both.
    static func check(onnx: [UInt8], header: ModelHeader, network: Network, poses: PoseWindows) throws -> Result? {
        let x = try poses.features(header.input)
        let c = Case(
            onnx: onnx, input: x, name: "input", dims: [poses.count, network.inputShape.time, network.inputShape.channels],
            expected: network.predictLogits(x, batch: poses.count), classes: network.classCount)
        return try compare([c], windows: poses.count)?.first
    }

    /// The check of an export with the preprocessing (`rawPoses`) on seeded random raw windows
    /// (`PoseWindows.random`: a third of the joints absent, windows without the steps' joints,
    /// empty windows).
    static func checkRaw(onnx: [UInt8], header: ModelHeader, network: Network, windows: Int = 64, seed: UInt64 = 1) throws -> Result? {
        try compare([rawCase(onnx: onnx, header: header, network: network, windows: windows, seed: seed)], windows: windows)?.first
    }

    /// The inputs and expected logits of `checkRaw`.
    static func rawCase(onnx: [UInt8], header: ModelHeader, network: Network, windows: Int, seed: UInt64) throws -> Case {
        try rawCase(onnx: onnx, header: header, network: network, poses: PoseWindows.random(input: header.input, count: windows, seed: seed))
    }

    /// An export with the preprocessing on `poses`, against the runtime's own `FeatureExtractor`
    /// and network.
    static func rawCase(onnx: [UInt8], header: ModelHeader, network: Network, poses: PoseWindows) throws -> Case {
        let s = header.input.skeleton
        return Case(
            onnx: onnx, input: poses.packed, name: "poses", dims: [poses.count, poses.frames, s.jointCount, s.dimensions + 1],
            expected: network.predictLogits(try poses.features(header.input), batch: poses.count), classes: network.classCount)
    }

    /// One model to run: its bytes, input values and shape, and the runtime's logits.
    struct Case {
        var onnx: [UInt8], input: [Float], name: String, dims: [Int], expected: [Float], classes: Int
    }

    /// Runs every case in one Python process and compares the logits; nil without onnxruntime
    /// or tools/python/onnx_eval.py.
    static func compare(_ cases: [Case], windows: Int) throws -> [Result]? {
        guard isAvailable(), let evaluator else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-onnx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var args = [URL(fileURLWithPath: evaluator).deletingLastPathComponent().path]
        for (i, c) in cases.enumerated() {
            let modelURL = dir.appendingPathComponent("m\(i).onnx"), xURL = dir.appendingPathComponent("x\(i).f32")
            try Data(c.onnx).write(to: modelURL)
            try c.input.withUnsafeBufferPointer { try Data(buffer: $0).write(to: xURL) }
            args += [modelURL.path, xURL.path, c.name, c.dims.map(String.init).joined(separator: ","), dir.appendingPathComponent("z\(i)").path]
        }
        let r = try run([python, "-c", script] + args)
        guard r.status == 0 else {
            throw ParityError.failed(r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)")
        }
        let version = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try cases.enumerated().map { i, c in
            let n = windows * c.classes
            func values(_ suffix: String, bytes: Int) throws -> [Double] {
                let data = try Data(contentsOf: dir.appendingPathComponent("z\(i)" + suffix))
                guard data.count == n * bytes else {
                    throw ParityError.failed("\(suffix.isEmpty ? "onnxruntime" : "onnx_eval.py") gave \(data.count / bytes) logits, expected \(n)")
                }
                return data.withUnsafeBytes { raw in
                    (0..<n).map { k in
                        bytes == 4
                            ? Double(Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * k, as: UInt32.self).littleEndian))
                            : Double(bitPattern: raw.loadUnaligned(fromByteOffset: 8 * k, as: UInt64.self).littleEndian)
                    }
                }
            }
            let export = try values("", bytes: 4), float32 = try values(".32", bytes: 8)
            let figures = ParityFigures.measure(export: export, runtime: c.expected, float32: float32, float64: try values(".64", bytes: 8))
            let evaluator = zip(export, float32).reduce(0) { m, p in max(m, p.0.isFinite && p.1.isFinite ? abs(p.0 - p.1) : .infinity) }
            return Result(figures: figures, windows: windows, onnxruntimeVersion: version, evaluatorDifference: evaluator)
        }
    }

    /// Runs a command found on the PATH; returns its exit status, stdout and stderr. The output
    /// goes to files in a temporary folder, so that no pipe can fill up and block the child.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = ["stdout", "stderr"].map { dir.appendingPathComponent($0) }
        for f in files { _ = FileManager.default.createFile(atPath: f.path, contents: nil) }
        let handles = try files.map { try FileHandle(forWritingTo: $0) }
        defer { for h in handles { try? h.close() } }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = arguments
        p.standardOutput = handles[0]
        p.standardError = handles[1]
        try p.run()
        p.waitUntilExit()
        let text = try files.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        return (p.terminationStatus, text[0], text[1])
    }
}
