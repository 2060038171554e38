import ActionRuntime
import Eval
import Foundation
import PoseCore

/// `actiontrain eval` at scale: 100,000 windows through the reference MLP (flatten 2565 →
/// 256 → 128 → 6, random init) and every report written, timed in two parts:
/// - model: `Inference.probabilities` over all windows (batch 256, as `eval` runs it);
/// - report: `EvalReport.evaluate` (all metrics, 1000-resample bootstraps at both levels)
///   and every file of `--report DIR` rendered and written.
/// Window cutting and feature extraction are not included (they belong to the data layer).
/// Anchors (../shared/bench/RESULTS.md, same machine): torch MLP batch-1024 inference
/// 146,681 windows/s on 2 threads; sgemm-bound ceiling 176k windows/s (Haswell kernel).
enum EvalBench {
    static let torchWindowsPerSecond = 146_681.0
    static let ceilingWindowsPerSecond = 176_000.0

    static func run(_ args: [String]) throws {
        let windows = Int(args.first ?? "") ?? 100_000
        let perSequence = 10, sequences = windows / perSequence
        let reps = 3
        BLAS.threads = 2
        let input = Shape(time: 45, channels: 57)  // 45 frames x 19 joints x 3 = 2565
        let network = try Network(
            layers: [
                .flatten, .linear(inputs: 2565, outputs: 256), .relu, .linear(inputs: 256, outputs: 128), .relu,
                .linear(inputs: 128, outputs: 6),
            ], input: input)
        network.initialize(seed: 1)
        network.freeze()  // as ActionModel, which `eval` loads, freezes its network
        print("eval: \(windows) windows (\(sequences) sequences x \(perSequence)), reference MLP 2565-256-128-6, random init")
        print("OpenBLAS core \(BLAS.coreName), 2 threads; medians of \(reps) runs; anchors ../shared/bench/RESULTS.md")
        var g = SeededGenerator(seed: 2)
        var features = [Float](repeating: 0, count: windows * input.count)
        for i in features.indices { features[i] = g.nextSymmetric(2) }

        // Model part.
        let load = ForeignLoad()
        var probabilities: [Float] = []
        let modelSeconds = median(reps) { probabilities = Inference.probabilities(network, features: features, count: windows) }
        features = []

        // Labels: each sequence's label is its most probable class 80% of the time, so the
        // report has realistic confusions.
        let classes = ["wave", "clap", "jump", "squat", "throw", "kick"]
        var truth = [Int32](repeating: 0, count: windows)
        for s in 0..<sequences {
            var mean = [Double](repeating: 0, count: 6)
            for w in 0..<perSequence { for k in 0..<6 { mean[k] += Double(probabilities[(s * perSequence + w) * 6 + k]) } }
            let best = Int32(argmax(mean))
            let label = g.nextUnitDouble() < 0.8 ? best : Int32(g.nextInt(below: 6))
            for w in 0..<perSequence { truth[s * perSequence + w] = label }
        }
        let table = try PredictionTable(
            sequence: (0..<windows).map { "seq-\($0 / perSequence)" }, start: (0..<windows).map { ($0 % perSequence) * 15 },
            truth: truth, probabilities: probabilities, classes: 6)
        let model = ModelInfo(
            path: "reference-mlp.atm", tool: ActionRuntimeInfo.tool, classes: classes,
            input: ["network": "input 45x57: flatten > linear 256 > relu > linear 128 > relu > linear 6"])
        let data = DataInfo(name: "synthetic", hash: "fnv1a64:0000000000000000", split: "test", windowFrames: 45, stride: 15)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-evalbench-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }

        // Report part: metrics, then files.
        var report: EvalReport!
        let metricsSeconds = try medianThrowing(reps) {
            report = try EvalReport.evaluate(classes: classes, windows: table, model: model, data: data, tool: ActionRuntimeInfo.tool)
        }
        var sizes: [(String, Int)] = []
        let filesSeconds = try medianThrowing(reps) {
            sizes = []
            for f in try Reports.files(report) {
                try f.data.write(to: dir.appendingPathComponent(f.name))
                sizes.append((f.name, f.data.count))
            }
        }
        // Not part of eval: what `compare` / `eval --baseline` add.
        let jsonPath = dir.appendingPathComponent("report.json").path
        var baseline: EvalReport!
        let readSeconds = try medianThrowing(reps) { baseline = try ReportJSON.read(jsonPath) }
        let compareSeconds = try medianThrowing(reps) {
            let c = try Comparison(baseline: baseline, candidate: report)
            _ = JUnitReport.render(c, gate: Gate.evaluate(c, policy: GatePolicy()))
        }

        let total = modelSeconds + metricsSeconds + filesSeconds
        let torch = Double(windows) / torchWindowsPerSecond, ceiling = Double(windows) / ceilingWindowsPerSecond
        func row(_ name: String, _ s: Double, _ note: String = "") {
            print(name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%7.3f s", s) + (note.isEmpty ? "" : "   " + note))
        }
        print("")
        row(
            "model: probabilities, batch 256", modelSeconds,
            String(
                format: "%.0f windows/s; torch b1024 %.3f s (x%.2f), OpenBLAS Haswell sgemm ceiling %.3f s (%.0f%%)", Double(windows) / modelSeconds, torch,
                torch / modelSeconds, ceiling, 100 * ceiling / modelSeconds))
        row("report: metrics, bootstraps (2 x 1000)", metricsSeconds)
        row("report: render + write \(sizes.count) files", filesSeconds)
        row("total (target < 2 s)", total, String(format: "%@ (%.2f of the target)", total < 2 ? "met" : "MISSED", total / 2))
        row("compare: read report.json", readSeconds)
        row("compare: pair, tests, 1000 paired resamples", compareSeconds)
        print("")
        if let share = load.share() {
            print(String(format: "other processes used %.0f%% of the machine's CPU during the run%@", 100 * share, share > 0.1 ? " (figures are pessimistic)" : ""))
        }
        print("files: " + sizes.map { "\($0.0) \(format(Double($0.1) / 1e6, 2)) MB" }.joined(separator: ", "))
    }

    static func median(_ reps: Int, _ body: () -> Void) -> Double {
        var t: [Double] = []
        for _ in 0..<reps {
            let start = Clock.now()
            body()
            t.append(Double(Clock.now() - start) / 1e9)
        }
        return t.sorted()[t.count / 2]
    }

    static func medianThrowing(_ reps: Int, _ body: () throws -> Void) throws -> Double {
        var failure: Error?
        let t = median(reps) {
            do { try body() } catch { failure = error }
        }
        if let failure { throw failure }
        return t
    }
}
