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

    /// Arguments: groups of (model.onnx, inputs.f32, count, frames, channels, logits.f32).
    static let script = """
        import sys, numpy as np, onnxruntime as ort
        args = sys.argv[1:]
        for i in range(0, len(args), 6):
            model, x, n, t, c, out = args[i:i + 6]
            s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            X = np.fromfile(x, "<f4").reshape(int(n), int(t), int(c))
            np.ascontiguousarray(s.run(["logits"], {"input": X})[0], "<f4").tofile(out)
        print(ort.__version__)
        """

    /// Compares `onnx` (the exported bytes of `network`) on `windows` random inputs, uniform in
    /// [-2, 2), seeded. Returns nil when onnxruntime is not available.
    static func check(onnx: [UInt8], network: Network, windows: Int = 64, seed: UInt64 = 1) throws -> Result? {
        try check([(onnx, network)], windows: windows, seed: seed)?.first
    }

    /// `check` for several models in one Python process (onnxruntime takes a second to import).
    static func check(_ models: [(onnx: [UInt8], network: Network)], windows: Int = 64, seed: UInt64 = 1) throws -> [Result]? {
        guard isAvailable() else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-onnx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var args: [String] = [], inputs: [[Float]] = []
        for (i, m) in models.enumerated() {
            let modelURL = dir.appendingPathComponent("m\(i).onnx"), xURL = dir.appendingPathComponent("x\(i).f32")
            try Data(m.onnx).write(to: modelURL)
            var g = SeededGenerator(seed: seed &+ UInt64(i))
            let x = (0..<(windows * m.network.inputShape.count)).map { _ in g.nextSymmetric(2) }
            try x.withUnsafeBufferPointer { try Data(buffer: $0).write(to: xURL) }
            inputs.append(x)
            args += [
                modelURL.path, xURL.path, "\(windows)", "\(m.network.inputShape.time)", "\(m.network.inputShape.channels)",
                dir.appendingPathComponent("z\(i).f32").path,
            ]
        }
        let r = try run([python, "-c", script] + args)
        guard r.status == 0 else {
            throw ParityError.failed(r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)")
        }
        let version = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try models.enumerated().map { i, m in
            let K = m.network.classCount
            let data = try Data(contentsOf: dir.appendingPathComponent("z\(i).f32"))
            guard data.count == windows * K * 4 else {
                throw ParityError.failed("onnxruntime gave \(data.count / 4) logits, expected \(windows * K)")
            }
            let theirs = data.withUnsafeBytes { raw in
                (0..<(windows * K)).map { Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self).littleEndian) }
            }
            let ours = m.network.predictLogits(inputs[i], batch: windows)
            var worst: Float = 0
            for (a, b) in zip(theirs, ours) { worst = max(worst, a.isFinite && b.isFinite ? abs(a - b) : .infinity) }
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
