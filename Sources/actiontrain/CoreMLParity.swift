import ActionRuntime
import Foundation
import ModelExport
import PoseCore

/// Checks an exported Core ML model without a Mac: tools/python/coreml_eval.py loads it with
/// coremltools, validates it against the schema's rules and evaluates it with NumPy (written
/// from Apple's specification, not from the exporter), on seeded random windows of raw poses;
/// its probabilities are compared with this runtime's (`FeatureExtractor` and the network).
/// `actiontrain export --format coreml`'s check, and the tests'.
enum CoreMLParity {
    struct Result {
        /// `max |p_coreml − p_swift|` over all windows and classes.
        var maxAbsDifference: Float
        /// `max |logit_coreml − logit_swift|`.
        var maxLogitDifference: Float
        var windows: Int
        /// The evaluator's account of the model (coremltools' version, metadata, layer types).
        var model: [String: Any]
    }

    enum CheckError: Error, CustomStringConvertible {
        case failed(String)
        var description: String { "the Core ML check failed: \(description_)" }
        private var description_: String {
            switch self {
            case .failed(let why): return why
            }
        }
    }

    static var python: String { ONNXParity.python }

    /// True when `python` can import numpy and finds coremltools (checked once: importing
    /// coremltools takes seconds).
    static func isAvailable() -> Bool { available }

    private static let available =
        (try? ONNXParity.run([python, "-c", "import importlib.util, numpy; assert importlib.util.find_spec('coremltools')"]))?.status == 0

    /// tools/python/coreml_eval.py: under `$ACTIONTRAIN_TOOLS`, the source tree this binary was
    /// built from, beside the executable's build folder, or the working directory.
    static func script() -> String? {
        let name = "tools/python/coreml_eval.py"
        var candidates: [URL] = []
        if let tools = ProcessInfo.processInfo.environment["ACTIONTRAIN_TOOLS"] {
            candidates.append(URL(fileURLWithPath: tools).appendingPathComponent("coreml_eval.py"))
        }
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name))
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.appendingPathComponent(name))
            dir = dir.deletingLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(name))
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) }?.path
    }

    /// Seeded random windows of the model's input and this runtime's logits for them. Native:
    /// the ONNX raw-pose check's windows (`ONNXParity.rawCase`). Create ML: `[F, 3, 18]`
    /// keypoints in Vision's normalised coordinates, about a third undetected (confidence 0),
    /// every 4th window without the hips and neck, every 8th empty; the expected values come
    /// from converting them here, joint by joint, to pixel poses on the model's skeleton.
    static func windows(header: ModelHeader, network: Network, interface: CoreMLExport.Interface, count: Int, seed: UInt64) throws -> (input: [Float], logits: [Float]) {
        switch interface {
        case .native:
            let c = try ONNXParity.rawCase(onnx: [], header: header, network: network, windows: count, seed: seed)
            return (c.input, c.expected)
        case .createML(let c):
            let s = header.input.skeleton, F = header.input.window.frames, J = s.jointCount
            let extractor = try FeatureExtractor(header.input)
            let (W, H) = c.units
            let hidden: Set<String> = ["leftHip", "rightHip", "neck"]
            var g = SeededGenerator(seed: seed)
            var input: [Float] = [], features = [Float](repeating: 0, count: count * network.inputShape.count)
            for w in 0..<count {
                var frames: [[Float]] = []  // per frame [3 · 18]: x row, y row, confidence row
                for _ in 0..<F {
                    var rows = [Float](repeating: 0, count: 54)
                    for k in 0..<18 {
                        var conf: Float = g.nextUnitFloat() < 0.3 ? 0 : 0.1 + 0.9 * g.nextUnitFloat()
                        if w % 8 == 7 || (w % 4 == 1 && hidden.contains(c.keypointOrder[k])) { conf = 0 }
                        rows[k] = 0.05 + 0.9 * g.nextUnitFloat()
                        rows[18 + k] = 0.05 + 0.9 * g.nextUnitFloat()
                        rows[36 + k] = conf
                    }
                    frames.append(rows)
                }
                input += frames.flatMap { $0 }
                var coordinates = [Float](repeating: 0, count: F * J * 2), present = [UInt8](repeating: 0, count: F * J)
                var confidence = [Float](repeating: 0, count: F * J)
                for (f, rows) in frames.enumerated() {
                    func keypoint(_ name: String) -> (x: Float, y: Float, c: Float)? {
                        guard let k = c.keypointOrder.firstIndex(of: name), rows[36 + k] > 0 else { return nil }
                        return (Float(Double(rows[k]) * W), Float((1 - Double(rows[18 + k])) * H), rows[36 + k])
                    }
                    for (j, name) in s.joints.enumerated() {
                        var p = keypoint(name)
                        if name == "root" {
                            p = nil
                            if c.root == .hips, let l = keypoint("leftHip"), let r = keypoint("rightHip") {
                                p = ((l.x + r.x) / 2, (l.y + r.y) / 2, (l.c + r.c) / 2)
                            }
                        }
                        guard let p else { continue }
                        coordinates[(f * J + j) * 2] = p.x
                        coordinates[(f * J + j) * 2 + 1] = p.y
                        present[f * J + j] = 1
                        confidence[f * J + j] = p.c
                    }
                }
                features.withUnsafeMutableBufferPointer { out in
                    extractor.extract(
                        coordinates: coordinates, present: present, confidence: confidence,
                        into: out.baseAddress! + w * network.inputShape.count, workspace: extractor.makeWorkspace())
                }
            }
            return (input, network.predictLogits(features, batch: count))
        }
    }

    /// One model to check: its bytes, input windows, and this runtime's logits for them.
    struct Case {
        var mlmodel: [UInt8], input: [Float], logits: [Float], windows: Int, classes: Int
    }

    /// The case of `count` seeded random windows (`windows(...)`) for an export of `network`.
    static func makeCase(mlmodel: [UInt8], header: ModelHeader, network: Network, interface: CoreMLExport.Interface, windows count: Int, seed: UInt64 = 1) throws -> Case {
        let (input, logits) = try windows(header: header, network: network, interface: interface, count: count, seed: seed)
        return Case(mlmodel: mlmodel, input: input, logits: logits, windows: count, classes: network.classCount)
    }

    /// Runs the evaluator on `mlmodel` and compares it with this runtime on `count` random
    /// windows; nil when python3 lacks numpy or coremltools, or the script is not found.
    static func check(
        mlmodel: [UInt8], header: ModelHeader, network: Network, interface: CoreMLExport.Interface, windows count: Int, seed: UInt64 = 1,
        script: String? = script()
    ) throws -> Result? {
        try compare([makeCase(mlmodel: mlmodel, header: header, network: network, interface: interface, windows: count, seed: seed)], script: script)?.first
    }

    /// Every case in one Python process (coremltools takes seconds to import); nil when python3
    /// lacks numpy or coremltools, or the script is not found.
    static func compare(_ cases: [Case], script: String? = script()) throws -> [Result]? {
        guard let script, isAvailable() else { return nil }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-coreml-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var args = [python, script]
        for (i, c) in cases.enumerated() {
            let model = dir.appendingPathComponent("m\(i).mlmodel"), x = dir.appendingPathComponent("x\(i).f32")
            try Data(c.mlmodel).write(to: model)
            try c.input.withUnsafeBufferPointer { try Data(buffer: $0).write(to: x) }
            args += [model.path, "--inputs", x.path, "--count", "\(c.windows)"]
        }
        let r = try ONNXParity.run(args)
        guard r.status == 0 else { throw CheckError.failed(r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)") }
        let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
        guard let all = cases.count == 1 ? [parsed] : parsed as? [Any], all.count == cases.count else {
            throw CheckError.failed("coreml_eval.py printed \(r.stdout.prefix(200))")
        }
        return try zip(cases, all).map { c, item in
            guard let json = item as? [String: Any], let probabilities = json["probabilities"] as? [[Double]],
                let theirLogits = json["logits"] as? [[Double]], let summary = json["model"] as? [String: Any]
            else { throw CheckError.failed("coreml_eval.py printed no probabilities: \(r.stdout.prefix(200))") }
            let K = c.classes, count = c.windows
            var expected = c.logits
            expected.withUnsafeMutableBufferPointer { Inference.softmax($0.baseAddress!, rows: count, classes: K) }
            guard probabilities.count == count, probabilities.allSatisfy({ $0.count == K }), theirLogits.count == count else {
                throw CheckError.failed("coreml_eval.py gave \(probabilities.count) windows of \(probabilities.first?.count ?? 0) classes, expected \(count) of \(K)")
            }
            func worst(_ a: [Double], _ b: [Float]) -> Float {
                zip(a, b).reduce(0) { m, p in max(m, p.0.isFinite && p.1.isFinite ? abs(Float(p.0) - p.1) : .infinity) }
            }
            return Result(
                maxAbsDifference: worst(probabilities.flatMap { $0 }, expected), maxLogitDifference: worst(theirLogits.flatMap { $0 }, c.logits),
                windows: count, model: summary)
        }
    }
}
