import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import Pipelines

/// `member-weights DATA RUN...`: how a two-member model's probabilities should be combined.
/// For each run folder of `fit DATA` (its model.atm and calibration.json, whose evidence holds
/// each member's out-of-fold log-probabilities), scores the test split at the sequence level, as
/// `eval` does, with the members' log-probabilities combined by: equal weights (the network as
/// trained), one temperature fitted on the evidence, one weight per member fitted on the
/// evidence (`ModelCalibration.memberWeights`), each member alone (its own temperature), and
/// weights fitted on the test windows themselves (what no fit can know: the headroom).
enum MemberWeightsBench {
    static func run(_ args: [String]) throws {
        guard args.count >= 2 else {
            print("usage: actiontrain-bench member-weights DATA RUN...   (RUN: a fit's folder, with model.atm and calibration.json)")
            return
        }
        let dataset = try DatasetLoader.read(args[0]).dataset
        let test = dataset.sequences.indices.filter { dataset.sequences[$0].split == "test" }
        print("| run | method | weights | accuracy | ECE | log loss |")
        print("|---|---|---|---|---|---|")
        for folder in args.dropFirst() {
            guard FileManager.default.fileExists(atPath: folder + "/calibration.json") else {
                print("| \(folder) | (no calibration.json: not finished, or not calibrated) | | | | |")
                continue
            }
            let model = try ActionModel(contentsOf: folder + "/model.atm")
            let evidence = try ModelCalibration.evidence(fromJSON: Data(contentsOf: URL(fileURLWithPath: folder + "/calibration.json")))
            let windows = try WindowSet(
                dataset: dataset, indices: test, spec: model.input, stride: Evaluation.defaultStride(model), classes: model.classes,
                useEvents: false)
            let features = try windows.features()
            let members = try ModelCalibration.memberLogProbabilities(model.network, features: features, count: windows.count)
            guard members.count > 1 else {
                print("| \(folder) | (one member: nothing to weigh) | | | | |")
                continue
            }
            let K = model.classes.count, M = members.count
            let ids = Evaluation.sequenceIDs(dataset, test)
            func combined(_ L: [[Float]], _ w: [Double]) -> [Float] {
                var out = [Float](repeating: 0, count: L[0].count)
                for m in L.indices { for j in out.indices { out[j] += Float(w[m]) * L[m][j] } }
                return out
            }
            func score(_ w: [Double]) throws -> LevelMetrics {
                let p = ModelCalibration.probabilities(combined(members, w), classes: K, scale: 1)
                let table = try PredictionTable(
                    sequence: windows.sources.map { ids[$0.sequence]! }, start: windows.sources.map(\.start), truth: windows.labels,
                    probabilities: p, classes: K)
                let report = try EvalReport.evaluate(
                    classes: model.classes, windows: table, model: ModelInfo(classes: model.classes), data: DataInfo(name: "test"), tool: "bench")
                return report.sequence ?? report.window
            }
            let equal = [Double](repeating: 1 / Double(M), count: M)
            let ones = [Double](repeating: 1, count: evidence.labels.count)
            let t = SoftmaxRegression.logitScale(combined(evidence.members, equal), labels: evidence.labels, weights: ones, classes: K)
            var rows: [(String, [Double])] = [("equal", equal), ("temperature", equal.map { $0 * t })]
            if let w = ModelCalibration.memberWeights(evidence) { rows.append(("member weights", w)) }
            for m in 0..<M {
                let s = SoftmaxRegression.logitScale(evidence.members[m], labels: evidence.labels, weights: ones, classes: K)
                rows.append(("member \(m) alone", (0..<M).map { $0 == m ? s : 1e-30 }))
            }
            let oracle = ModelCalibration.Evidence(
                logits: combined(members, equal), labels: windows.labels, classes: K, source: "test", members: members)
            if let w = ModelCalibration.memberWeights(oracle) { rows.append(("oracle weights", w)) }
            for (name, w) in rows {
                let s = try score(w)
                let shown = w.map { $0 < 1e-20 ? "0" : String(format: "%.3f", $0) }.joined(separator: ", ")
                print(String(format: "| %@ | %@ | %@ | %.3f | %.3f | %.3f |", folder, name, shown, s.accuracy, s.expectedCalibrationError, s.logLoss))
            }
        }
    }
}
