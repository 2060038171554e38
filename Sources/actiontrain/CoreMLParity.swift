import ActionRuntime
import Foundation
import ModelExport
import PoseCore

/// Checks an exported Core ML model without a Mac: tools/python/coreml_eval.py loads it with
/// coremltools, validates it against the schema's rules and evaluates it with NumPy (written
/// from Apple's specification, not from the exporter) in float32 and, as the reference that
/// measures float32 rounding, in float64, on windows of raw poses; its logits are compared with
/// this runtime's (`FeatureExtractor` and the network) within the tolerance `ParityFigures`
/// sets from the model's own float32 error. `actiontrain export --format coreml`'s check, and
/// the tests'.
enum CoreMLParity {
    struct Result {
        /// The logits' figures: `max |logit_coreml − logit_swift|` against the tolerance.
        var figures: ParityFigures
        /// `max |p_coreml − p_swift|` over all windows and classes.
        var maxAbsDifference: Float
        /// `max |logit_coreml − logit_swift|`.
        var maxLogitDifference: Float { Float(figures.difference) }
        var windows: Int
        /// The evaluator's account of the model (coremltools' version, metadata, layer types).
        var model: [String: Any]
        /// The evaluator's float32 logits and its float64 reference's, per window and class.
        var logits: [Double] = [], logits64: [Double] = []
        /// Its probabilities, per window and class.
        var probabilities: [Double] = []
        var passed: Bool { figures.passed }
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

    /// tools/python/coreml_eval.py (`ParityTools`).
    static func script() -> String? { ParityTools.path("coreml_eval.py") }

    /// The model's input for `poses` and this runtime's logits for them. Native: the poses
    /// packed `[n, F, J, D + 1]`. Create ML: each frame's `[3, 18]` keypoints in Vision's
    /// normalised coordinates (the poses' pixels over the image size, else over a frame of the
    /// aspect ratio that holds them; y up), confidence 0 for a keypoint the skeleton lacks or
    /// the pose lacks; the expected values come from converting them back here, joint by joint,
    /// to pixel poses on the model's skeleton, with the root as the export makes it.
    static func windows(header: ModelHeader, network: Network, interface: CoreMLExport.Interface, poses: PoseWindows) throws -> (input: [Float], logits: [Float]) {
        switch interface {
        case .native:
            return (poses.packed, network.predictLogits(try poses.features(header.input), batch: poses.count))
        case .createML(let c):
            let s = header.input.skeleton, F = poses.frames, J = poses.joints, D = poses.dimensions
            precondition(D == 2, "the Create ML interface takes 2D poses")
            let (W, H) = c.units
            let (pw, ph): (Double, Double)
            if let size = c.imageSize {
                (pw, ph) = (size[0], size[1])
            } else {
                var extent = 1.0
                for i in poses.present.indices where poses.present[i] != 0 {
                    extent = max(extent, Double(poses.coordinates[2 * i + 1]), Double(poses.coordinates[2 * i]) / c.aspectRatio)
                }
                (ph, pw) = (1.05 * extent, 1.05 * extent * c.aspectRatio)
            }
            let source = c.keypointOrder.map { s.index(of: $0) }
            var input: [Float] = [], converted = PoseWindows(input: header.input, source: poses.source)
            for w in 0..<poses.count {
                for f in 0..<F {
                    var rows = [Float](repeating: 0, count: 54)  // x row, y row, confidence row
                    for (k, j) in source.enumerated() {
                        guard let j, poses.present[(w * F + f) * J + j] != 0 else { continue }
                        let p = ((w * F + f) * J + j) * 2
                        rows[k] = Float(Double(poses.coordinates[p]) / pw)
                        rows[18 + k] = Float(1 - Double(poses.coordinates[p + 1]) / ph)
                        rows[36 + k] = poses.confidence[(w * F + f) * J + j]
                    }
                    input += rows
                    func keypoint(_ name: String) -> (x: Float, y: Float, c: Float)? {
                        guard let k = c.keypointOrder.firstIndex(of: name), rows[36 + k] > 0 else { return nil }
                        return (Float(Double(rows[k]) * W), Float((1 - Double(rows[18 + k])) * H), rows[36 + k])
                    }
                    for name in s.joints {
                        var p = keypoint(name)
                        if name == "root" {
                            p = nil
                            if c.root == .hips, let l = keypoint("leftHip"), let r = keypoint("rightHip") {
                                p = ((l.x + r.x) / 2, (l.y + r.y) / 2, (l.c + r.c) / 2)
                            }
                        }
                        converted.append(point: p.map { [$0.x, $0.y] } ?? [0, 0], confidence: p?.c ?? 0)
                    }
                }
            }
            return (input, network.predictLogits(try converted.features(header.input), batch: poses.count))
        }
    }

    /// One model to check: its bytes, input windows, and this runtime's logits for them.
    struct Case {
        var mlmodel: [UInt8], input: [Float], logits: [Float], windows: Int, classes: Int
        /// An ML Program package to check instead of `mlmodel`.
        var package: CoreMLPackage.Package? = nil
    }

    /// The case of `poses` for an export of `network`.
    static func makeCase(mlmodel: [UInt8], header: ModelHeader, network: Network, interface: CoreMLExport.Interface, poses: PoseWindows) throws -> Case {
        let (input, logits) = try windows(header: header, network: network, interface: interface, poses: poses)
        return Case(mlmodel: mlmodel, input: input, logits: logits, windows: poses.count, classes: network.classCount)
    }

    /// The case of `count` seeded random windows (`PoseWindows.random`).
    static func makeCase(mlmodel: [UInt8], header: ModelHeader, network: Network, interface: CoreMLExport.Interface, windows count: Int, seed: UInt64 = 1) throws -> Case {
        try makeCase(mlmodel: mlmodel, header: header, network: network, interface: interface, poses: .random(input: header.input, count: count, seed: seed))
    }

    /// Runs the evaluator on `mlmodel` and compares it with this runtime on `poses`; nil when
    /// python3 lacks numpy or coremltools, or the script is not found.
    static func check(
        mlmodel: [UInt8], header: ModelHeader, network: Network, interface: CoreMLExport.Interface, poses: PoseWindows, script: String? = script()
    ) throws -> Result? {
        try compare([makeCase(mlmodel: mlmodel, header: header, network: network, interface: interface, poses: poses)], script: script)?.first
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
            let model = dir.appendingPathComponent(c.package == nil ? "m\(i).mlmodel" : "m\(i).mlpackage"), x = dir.appendingPathComponent("x\(i).f32")
            if let package = c.package {
                for f in package.files {
                    let file = model.appendingPathComponent(f.path)
                    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data(f.bytes).write(to: file)
                }
            } else {
                try Data(c.mlmodel).write(to: model)
            }
            try c.input.withUnsafeBufferPointer { try Data(buffer: $0).write(to: x) }
            args += [model.path, "--inputs", x.path, "--count", "\(c.windows)", "--reference", "float64"]
        }
        let r = try ONNXParity.run(args)
        guard r.status == 0 else { throw CheckError.failed(r.stderr.split(separator: "\n").last.map(String.init) ?? "exit \(r.status)") }
        let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
        guard let all = cases.count == 1 ? [parsed] : parsed as? [Any], all.count == cases.count else {
            throw CheckError.failed("coreml_eval.py printed \(r.stdout.prefix(200))")
        }
        return try zip(cases, all).map { c, item in
            // null: a value that is not finite (JSON has none).
            func numbers(_ any: Any?) -> [[Double]]? {
                (any as? [[Any]])?.map { row in row.map { ($0 as? NSNumber)?.doubleValue ?? .nan } }
            }
            guard let json = item as? [String: Any], let probabilities = numbers(json["probabilities"]),
                let theirLogits = numbers(json["logits"]), let reference = numbers(json["logits64"]),
                let summary = json["model"] as? [String: Any]
            else { throw CheckError.failed("coreml_eval.py printed no probabilities: \(r.stdout.prefix(200))") }
            let K = c.classes, count = c.windows
            var expected = c.logits
            expected.withUnsafeMutableBufferPointer { Inference.softmax($0.baseAddress!, rows: count, classes: K) }
            guard probabilities.count == count, probabilities.allSatisfy({ $0.count == K }), theirLogits.count == count,
                theirLogits.allSatisfy({ $0.count == K }), reference.count == count, reference.allSatisfy({ $0.count == K })
            else {
                throw CheckError.failed("coreml_eval.py gave \(probabilities.count) windows of \(probabilities.first?.count ?? 0) classes, expected \(count) of \(K)")
            }
            let logits = theirLogits.flatMap { $0 }
            let p = probabilities.flatMap { $0 }
            let worst = zip(p, expected).reduce(Float(0)) { m, q in max(m, q.0.isFinite && q.1.isFinite ? abs(Float(q.0) - q.1) : .infinity) }
            return Result(
                figures: ParityFigures.measure(export: logits, runtime: c.logits, float32: logits, float64: reference.flatMap { $0 }),
                maxAbsDifference: worst, windows: count, model: summary, logits: logits, logits64: reference.flatMap { $0 }, probabilities: p)
        }
    }
}

extension CoreMLParity {
    /// The check of an ML Program package: the program in Float32 against this runtime within
    /// 32 times its own float32 error, as a `.mlmodel` (the graph is right); and, for a Float16
    /// package, the Float16 program against this runtime within 4 times its own Float16 error
    /// (`ParityFigures.float16Factor`): its NumPy evaluation (every fp16 value stored in half precision, float32
    /// arithmetic inside each op) against the float64 evaluation of the same Float16 program
    /// (the same stored weights). That error is the rounding of the values the program
    /// computes; the rounding of the weights to Float16 is not in it but is in the difference
    /// to this runtime (docs/format.md 7.3 gives the measured ratios). Both measures come from
    /// the Float16 package itself, so a mistake only it holds (a weight wrongly converted to
    /// Float16) fails.
    struct PackageResult {
        var float32: Result
        var float16: Result?
        /// For Float16: its figures (against its own float64 run).
        var float16Figures: ParityFigures?
        /// For Float16: windows whose most likely class differs from this runtime's, and the
        /// largest probability difference.
        var labelChanges = 0
        var maxProbabilityDifference = 0.0
        var passed: Bool { float32.passed && (float16Figures?.passed ?? true) }
    }

    static func checkPackage(
        _ package: CoreMLPackage.Package, float32: CoreMLPackage.Package?, header: ModelHeader, network: Network, interface: CoreMLExport.Interface, poses: PoseWindows,
        script: String? = script()
    ) throws -> PackageResult? {
        var base = try makeCase(mlmodel: [], header: header, network: network, interface: interface, poses: poses)
        var cases: [Case] = []
        base.package = float32 ?? package
        cases.append(base)
        if float32 != nil {
            base.package = package
            cases.append(base)
        }
        guard let results = try compare(cases, script: script) else { return nil }
        var r = PackageResult(float32: results[0])
        if results.count == 2 {
            let half = results[1], K = base.classes
            r.float16 = half
            r.float16Figures = ParityFigures.measure(
                export: half.logits, runtime: base.logits, float32: half.logits, float64: half.logits64, factor: ParityFigures.float16Factor)
            var expected = base.logits
            expected.withUnsafeMutableBufferPointer { Inference.softmax($0.baseAddress!, rows: base.windows, classes: K) }
            for w in 0..<base.windows {
                let row = w * K..<(w + 1) * K
                let theirs = Array(half.probabilities[row]), ours = Array(expected[row])
                if theirs.indices.max(by: { theirs[$0] < theirs[$1] }) != ours.indices.max(by: { ours[$0] < ours[$1] }) { r.labelChanges += 1 }
                for (a, b) in zip(theirs, ours) { r.maxProbabilityDifference = max(r.maxProbabilityDifference, a.isFinite ? abs(a - Double(b)) : .infinity) }
            }
        }
        return r
    }
}
