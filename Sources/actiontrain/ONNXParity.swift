import ActionRuntime
import Foundation
import PoseCore

/// Runs an exported ONNX model through onnxruntime (Python, when installed) and compares its
/// logits with the Swift runtime's on seeded random inputs: `actiontrain export`'s check, and
/// the tests'. It lives in the CLI so that the ModelExport library never spawns a process.
enum ONNXParity {
    struct Result: Sendable {
        /// `max |logit_onnx − logit_swift|` over all windows and classes.
        var maxAbsDifference: Float
        var windows: Int
        var onnxruntimeVersion: String
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

    /// True when `python` can import numpy and onnxruntime.
    static func isAvailable() -> Bool {
        (try? run([python, "-c", "import numpy, onnxruntime"]))?.status == 0
    }

    /// Arguments: groups of (model.onnx, inputs.f32, input name, comma-separated dims, logits.f32).
    static let script = """
        import sys, numpy as np, onnxruntime as ort
        args = sys.argv[1:]
        for i in range(0, len(args), 5):
            model, x, name, dims, out = args[i:i + 5]
            s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            X = np.fromfile(x, "<f4").reshape([int(d) for d in dims.split(",")])
            np.ascontiguousarray(s.run(["logits"], {name: X})[0], "<f4").tofile(out)
        print(ort.__version__)
        """

    /// Compares `onnx` (the exported bytes of `network`) on `windows` random inputs, uniform in
    /// [-2, 2), seeded. Returns nil when onnxruntime is not available.
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

    /// The check of an export with the preprocessing (`rawPoses`): seeded random raw windows
    /// `[windows, frames, joints, D + 1]`, about a third of the joints absent (their coordinates
    /// random, to be ignored), every 4th window without the steps' first joints (so that the
    /// fallbacks run) and every 8th with no joint at all, against the runtime's own
    /// `FeatureExtractor` and network.
    static func checkRaw(onnx: [UInt8], header: ModelHeader, network: Network, windows: Int = 64, seed: UInt64 = 1) throws -> Result? {
        try compare([rawCase(onnx: onnx, header: header, network: network, windows: windows, seed: seed)], windows: windows)?.first
    }

    /// The inputs and expected logits of `checkRaw`.
    static func rawCase(onnx: [UInt8], header: ModelHeader, network: Network, windows: Int, seed: UInt64) throws -> Case {
        let s = header.input.skeleton, F = header.input.window.frames, J = s.jointCount, D = s.dimensions
        let extractor = try FeatureExtractor(header.input)
        let hidden = Set(header.input.steps.compactMap { $0.joints.first }.compactMap { s.index(of: $0) })
        var g = SeededGenerator(seed: seed)
        var raw: [Float] = [], features = [Float](repeating: 0, count: windows * network.inputShape.count)
        for w in 0..<windows {
            var coordinates = [Float](), present = [UInt8](), confidence = [Float]()
            for _ in 0..<F {
                for j in 0..<J {
                    let point = (0..<D).map { _ in s.units == .pixels ? 200 + g.nextSymmetric(150) : g.nextSymmetric(1.5) }
                    var k = g.nextUnitFloat() < 0.3 ? 0 : 0.1 + 0.9 * g.nextUnitFloat()
                    if w % 8 == 7 || (w % 4 == 1 && hidden.contains(j)) { k = 0 }
                    raw += point + [k]
                    coordinates += point
                    present.append(k > 0 ? 1 : 0)
                    confidence.append(k)
                }
            }
            features.withUnsafeMutableBufferPointer { out in
                extractor.extract(
                    coordinates: coordinates, present: present, confidence: confidence,
                    into: out.baseAddress! + w * network.inputShape.count, workspace: extractor.makeWorkspace())
            }
        }
        return Case(
            onnx: onnx, input: raw, name: "poses", dims: [windows, F, J, D + 1], expected: network.predictLogits(features, batch: windows),
            classes: network.classCount)
    }

    /// One model to run: its bytes, input values and shape, and the runtime's logits.
    struct Case {
        var onnx: [UInt8], input: [Float], name: String, dims: [Int], expected: [Float], classes: Int
    }

    /// Runs every case in one Python process and compares the logits; nil without onnxruntime.
    static func compare(_ cases: [Case], windows: Int) throws -> [Result]? {
        guard isAvailable() else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-onnx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var args: [String] = []
        for (i, c) in cases.enumerated() {
            let modelURL = dir.appendingPathComponent("m\(i).onnx"), xURL = dir.appendingPathComponent("x\(i).f32")
            try Data(c.onnx).write(to: modelURL)
            try c.input.withUnsafeBufferPointer { try Data(buffer: $0).write(to: xURL) }
            args += [modelURL.path, xURL.path, c.name, c.dims.map(String.init).joined(separator: ","), dir.appendingPathComponent("z\(i).f32").path]
        }
        let r = try run([python, "-c", script] + args)
        guard r.status == 0 else {
            throw ParityError.failed(r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)")
        }
        let version = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try cases.enumerated().map { i, c in
            let K = c.classes
            let data = try Data(contentsOf: dir.appendingPathComponent("z\(i).f32"))
            guard data.count == windows * K * 4 else {
                throw ParityError.failed("onnxruntime gave \(data.count / 4) logits, expected \(windows * K)")
            }
            let theirs = data.withUnsafeBytes { raw in
                (0..<(windows * K)).map { Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self).littleEndian) }
            }
            var worst: Float = 0
            for (a, b) in zip(theirs, c.expected) { worst = max(worst, a.isFinite && b.isFinite ? abs(a - b) : .infinity) }
            return Result(maxAbsDifference: worst, windows: windows, onnxruntimeVersion: version)
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
