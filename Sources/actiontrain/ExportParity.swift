import ActionRuntime
import Datasets
import Foundation
import PoseCore

/// How an export's parity check tells a wrong export from float32 rounding (docs/format.md
/// section 7.3).
///
/// Four sets of logits of the same windows: the exported model run by its engine in float32
/// (onnxruntime, or tools/python/coreml_eval.py for Core ML), this runtime's (float32, its own
/// kernels), and an independent NumPy evaluator's run of the exported graph in float32 and in
/// float64 (tools/python/onnx_eval.py, coreml_eval.py `--reference float64`), on the same
/// float32 weights and inputs. The evaluator's `|float32 − float64|` is how far float32 rounding
/// moves this model's outputs on these windows (the model's own float32 error: large where
/// features cancel, as pixel coordinates' relative positions do, and tiny for a small MLP); it
/// does not depend on whether the export is right, since both runs evaluate the same graph. An
/// export is right when its engine agrees with this runtime within `factor` times that error
/// (and never needs to within less than `floor`): runtimes that sum in other orders differ by
/// a few times one run's rounding, a wrong weight or axis by orders of magnitude more.
struct ParityFigures: Sendable {
    /// `max |export − runtime|` over all windows and logits.
    var difference: Double
    /// `max |float32 − float64|` of the NumPy evaluator: the model's own float32 error here.
    var rounding: Double
    /// `max |runtime − float64|`: this runtime's float32 error, if the export is right.
    var runtimeError: Double
    /// `max(factor · rounding, floor)`.
    var tolerance: Double
    /// The multiple of `rounding` allowed: `factor`, or `float16Factor` for a Float16 program.
    var multiple = ParityFigures.factor
    /// Within the tolerance, and the tolerance finite (a non-finite float32 run is no measure).
    var passed: Bool { difference <= tolerance && tolerance.isFinite }

    /// How many times the model's own float32 error two right runtimes may differ by. Measured
    /// (docs/format.md 7.3): at most 6.2 times over every development set's default model and
    /// every export; a swapped weight or a wrong transpose gives hundreds to millions of times.
    static let factor = 32.0
    /// The tolerance is never below this many float32 epsilons (2^−23) times the largest
    /// logit (at least 1): rounding the logits themselves.
    static let floorEpsilons = 16.0
    /// The multiple for a Float16 ML Program, whose own error (its NumPy run with every fp16
    /// value in half precision against its float64 run) is large beside float32's and makes up
    /// nearly all of its difference to this runtime: measured (docs/format.md 7.3) 0.83 to
    /// 1.12 times it on the default models of the shared and development sets; a tighter
    /// multiple than float32's so that a mistake only the Float16 program holds fails (an
    /// untransposed or truncated weight: 2.8 to 6.5 times this tolerance on a default model).
    static let float16Factor = 4.0

    /// The figures of `export` (the engine's float32 logits) against `runtime`, with the
    /// evaluator's `float32` and `float64` logits of the same windows. A non-finite value
    /// anywhere fails.
    static func measure(export: [Double], runtime: [Float], float32: [Double], float64: [Double], factor: Double = factor) -> ParityFigures {
        precondition(export.count == runtime.count && float32.count == runtime.count && float64.count == runtime.count, "logit counts")
        func worst(_ a: [Double], _ b: [Double]) -> Double {
            zip(a, b).reduce(0) { m, p in max(m, p.0.isFinite && p.1.isFinite ? abs(p.0 - p.1) : .infinity) }
        }
        let ours = runtime.map(Double.init)
        let rounding = worst(float32, float64)
        let scale = float64.reduce(1) { max($0, $1.isFinite ? abs($1) : 1) }
        return ParityFigures(
            difference: worst(export, ours), rounding: rounding, runtimeError: worst(ours, float64),
            tolerance: max(factor * rounding, floorEpsilons * Double(Float.ulpOfOne) * scale), multiple: factor)
    }

    /// `7.6e-05 (tolerance 1.1e-03 = 32 × 3.4e-05, the model's own float32 error on these
    /// windows; the Swift runtime's: 7.1e-05`, without the closing parenthesis.
    var summary: String {
        let basis =
            tolerance > multiple * rounding
            ? "the floor for logits up to \(Self.format(tolerance / (Self.floorEpsilons * Double(Float.ulpOfOne))))"
            : "\(Int(multiple)) × \(Self.format(rounding)), the model's own float32 error on these windows"
        return "\(Self.format(difference)) (tolerance \(Self.format(tolerance)) = \(basis); the Swift runtime's: \(Self.format(runtimeError))"
    }

    static func format(_ x: Double) -> String { String(format: "%.2g", x) }
}

/// tools/python's scripts (the independent evaluators) for the checks: under
/// `$ACTIONTRAIN_TOOLS`, the source tree this binary was built from, beside the executable's
/// build folder, or the working directory.
enum ParityTools {
    static func path(_ file: String) -> String? {
        let name = "tools/python/" + file
        var candidates: [URL] = []
        if let tools = ProcessInfo.processInfo.environment["ACTIONTRAIN_TOOLS"] {
            candidates.append(URL(fileURLWithPath: tools).appendingPathComponent(file))
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
}

/// Windows of raw poses on a model's skeleton for the export checks: `coordinates [n, F, J, D]`
/// in the skeleton's units, `present [n, F, J]`, `confidence [n, F, J]` (above 0 for a present
/// joint, 0 for an absent one), and where they come from.
struct PoseWindows {
    var frames: Int, joints: Int, dimensions: Int
    var coordinates: [Float] = []
    var present: [UInt8] = []
    var confidence: [Float] = []
    /// For the report: `random windows`, `windows of FILE`, ...
    var source: String

    var count: Int { present.count / max(1, frames * joints) }

    init(input: InputSpec, source: String) {
        (frames, joints, dimensions) = (input.window.frames, input.skeleton.jointCount, input.skeleton.dimensions)
        self.source = source
    }

    /// Appends one window's frame of joint values.
    mutating func append(point: [Float], confidence k: Float) {
        coordinates += k > 0 ? point : [Float](repeating: 0, count: dimensions)
        present.append(k > 0 ? 1 : 0)
        confidence.append(k > 0 ? k : 0)
    }

    /// `[n, F, J, D + 1]`: each joint's coordinates, then its confidence (the `--raw-poses` and
    /// Core ML native input).
    var packed: [Float] {
        var out: [Float] = []
        out.reserveCapacity(present.count * (dimensions + 1))
        for i in present.indices {
            out += coordinates[(i * dimensions)..<((i + 1) * dimensions)]
            out.append(confidence[i])
        }
        return out
    }

    /// The network inputs of every window, by the model's own `FeatureExtractor`.
    func features(_ input: InputSpec) throws -> [Float] {
        let extractor = try FeatureExtractor(input)
        let n = input.valuesPerWindow, per = frames * joints
        var out = [Float](repeating: 0, count: count * n)
        out.withUnsafeMutableBufferPointer { o in
            coordinates.withUnsafeBufferPointer { c in
                present.withUnsafeBufferPointer { p in
                    confidence.withUnsafeBufferPointer { k in
                        let ws = extractor.makeWorkspace()
                        for w in 0..<count {
                            extractor.extract(
                                coordinates: c.baseAddress! + w * per * dimensions, present: p.baseAddress! + w * per,
                                confidence: k.baseAddress! + w * per, into: o.baseAddress! + w * n, workspace: ws)
                        }
                    }
                }
            }
        }
        return out
    }

    /// Seeded random windows (for a model file that keeps no pose statistics: written before
    /// format 1.4, or fitted from shards converted before it): points around
    /// 200 ± 150 pixels or within ±1.5 in other units, about a third of the joints absent,
    /// every 4th window without the steps' first joints (so that the fallbacks run) and every
    /// 8th with no joint at all.
    static func random(input: InputSpec, count: Int, seed: UInt64) -> PoseWindows {
        let s = input.skeleton
        var out = PoseWindows(input: input, source: "random windows")
        let hidden = Set(input.steps.compactMap { $0.joints.first }.compactMap { s.index(of: $0) })
        var g = SeededGenerator(seed: seed)
        for w in 0..<count {
            for _ in 0..<out.frames {
                for j in 0..<out.joints {
                    let point = (0..<out.dimensions).map { _ in s.units == .pixels ? 200 + g.nextSymmetric(150) : g.nextSymmetric(1.5) }
                    var k = g.nextUnitFloat() < 0.3 ? 0 : 0.1 + 0.9 * g.nextUnitFloat()
                    if w % 8 == 7 || (w % 4 == 1 && hidden.contains(j)) { k = 0 }
                    out.append(point: point, confidence: k)
                }
            }
        }
        return out
    }

    /// Seeded windows like the training windows (docs/format.md 7.3), from the statistics the
    /// model file keeps (3.5): per window a centre and a pose drawn around the means (the
    /// centre within its spread, each joint's offset within half its spread), each joint then
    /// moving by its typical change per frame as a random walk, present in a frame as often as
    /// in training with its mean confidence; as in the random windows, every 4th window lacks
    /// the steps' first joints and every 8th is empty, so that the fallbacks run too.
    static func statistics(_ p: ModelHeader.PoseStatistics, input: InputSpec, count: Int, seed: UInt64) -> PoseWindows {
        let s = input.skeleton
        var out = PoseWindows(input: input, source: "windows made from the model's pose statistics")
        let J = out.joints, D = out.dimensions
        let hidden = Set(input.steps.compactMap { $0.joints.first }.compactMap { s.index(of: $0) })
        var g = SeededGenerator(seed: seed)
        func gaussian() -> Double { Double(max(-2.5, min(2.5, g.nextGaussian()))) }
        for w in 0..<count {
            let centre = (0..<D).map { p.centreMean[$0] + p.centreSpread[$0] * gaussian() }
            var point = (0..<(J * D)).map { centre[$0 % D] + p.offsetMean[$0] + 0.5 * p.offsetSpread[$0] * gaussian() }
            for _ in 0..<out.frames {
                for j in 0..<J {
                    for d in 0..<D { point[j * D + d] += p.motion[j] * gaussian() }
                    var k = g.nextUnitDouble() < p.present[j] ? max(p.confidence[j], 0.01) : 0
                    if w % 8 == 7 || (w % 4 == 1 && hidden.contains(j)) { k = 0 }
                    out.append(point: point[(j * D)..<((j + 1) * D)].map { Float($0) }, confidence: Float(k))
                }
            }
        }
        return out
    }

    /// Up to `count` windows of `dataset` cut as `predict` cuts them (a third of the window
    /// apart), spread evenly over all of them; labels are not read.
    static func data(_ dataset: Dataset, name: String, input: InputSpec, count: Int) throws -> PoseWindows {
        var unlabeled = dataset
        for i in unlabeled.sequences.indices { unlabeled.sequences[i].label = nil }
        let set = try WindowSet(dataset: unlabeled, spec: input, stride: max(1, input.window.frames / 3), classes: [], requireLabels: false)
        var out = PoseWindows(input: input, source: "windows of \(name)")
        guard set.count > 0 else { return out }
        let n = min(count, set.count), F = out.frames, J = out.joints, D = out.dimensions
        var positions = [Double](repeating: 0, count: F), coordinates = [Float](repeating: 0, count: F * J * D)
        var present = [UInt8](repeating: 0, count: F * J), confidence = [Float](repeating: 0, count: F * J)
        for i in 0..<n {
            set.sample(i * set.count / n, positions: &positions, coordinates: &coordinates, present: &present, confidence: &confidence)
            for p in 0..<(F * J) {
                out.append(point: Array(coordinates[(p * D)..<((p + 1) * D)]), confidence: present[p] != 0 ? max(confidence[p], Float.leastNormalMagnitude) : 0)
            }
        }
        return out
    }
}
