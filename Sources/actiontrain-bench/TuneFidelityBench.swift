import ActionTrain
import Datasets
import Foundation
import Eval
import Pipelines

/// `tune-fidelity DATA`: how well `tune`'s screening predicts. Every candidate `tune` would try
/// on DATA (the recipe and each single change) is scored by cross-validation at each screening
/// share of its epochs and at full length, on the search's folds and again at full length on
/// the confirmation folds (other folds, other seeds: how well a full-length score predicts
/// itself, the ceiling any screening can reach). Prints the scores and the Spearman rank
/// correlation of each screening with the full-length scores; every trial is appended to
/// `--log` as it finishes and read back when the bench is run again (a killed run resumes).
enum TuneFidelityBench {
    struct Trial: Codable {
        var candidate: String
        var share: Double
        var folds: String  // "search" or "confirmation"
        var fold: Int
        var score: Double
        var logLoss: Double?
        var seconds: Double
    }

    static func run(_ args: [String]) throws {
        guard let path = args.first, !path.hasPrefix("-") else {
            print("usage: actiontrain-bench tune-fidelity DATA [--shares 0.111,0.333] [--folds 5] [--log FILE] [--only a;b]")
            return
        }
        var shares = [1.0 / 9, 1.0 / 3]
        var k = 5
        var log = "runs/tune-fidelity/\(URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent).jsonl"
        var only: [String]? = nil
        var i = 1
        while i < args.count {
            let value = i + 1 < args.count ? args[i + 1] : ""
            switch args[i] {
            case "--shares": shares = value.split(separator: ",").compactMap { Double($0) }
            case "--folds": k = Int(value) ?? k
            case "--log": log = value
            case "--only": only = value.split(separator: ";").map(String.init)
            default: throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "unknown option \(args[i])"])
            }
            i += 2
        }
        let dataset = try DatasetLoader.read(path).dataset
        let tune = TuneRun(dataPath: path, dataset: dataset, config: TrainingConfig(), explicit: [], options: .init(folds: k))
        let recipe = try FitPipeline.resolve(TrainingConfig(), for: dataset, explicit: []).config
        var candidates = [Tuning.Candidate(name: "recipe", config: recipe, changes: [])]
        for change in Tuning.changes(for: dataset.skeleton, base: recipe) {
            var c = recipe
            change.apply(&c)
            candidates.append(.init(name: change.name, config: c, changes: [change.name]))
        }
        if let only { candidates = candidates.filter { only.contains($0.name) } }
        let search = try tune.folds(seed: recipe.seed)
        let confirmation = try tune.folds(seed: recipe.seed &+ 1)

        // Trials already in the log.
        var done: [String: Trial] = [:]
        func key(_ c: String, _ s: Double, _ f: String, _ n: Int) -> String { "\(c)|\(String(format: "%.4f", s))|\(f)|\(n)" }
        if let text = try? String(contentsOfFile: log, encoding: .utf8) {
            for line in text.split(separator: "\n") {
                if let t = try? JSONDecoder().decode(Trial.self, from: Data(line.utf8)) { done[key(t.candidate, t.share, t.folds, t.fold)] = t }
            }
        }
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: log).deletingLastPathComponent(), withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()

        let plan = Tuning.Plan(rungs: shares + [1], keep: 1, minimumEpochs: Tuning.Plan.standard.minimumEpochs)
        // (share, fold set, folds): the screenings on the search folds, then full length on both.
        var runs: [(Double, String, [Fold], Int)] = shares.enumerated().map { ($0.element, "search", search, $0.offset) }
        runs.append((1, "search", search, shares.count))
        runs.append((1, "confirmation", confirmation, shares.count))
        // Order: every candidate's cheapest screening first, so an interrupted run has whole columns.
        for (share, set, folds, rung) in runs {
            for c in candidates {
                let config = plan.config(c.config, rung: rung)
                for (n, fold) in folds.enumerated() where done[key(c.name, share, set, n)] == nil {
                    var trial = config
                    trial.seed = config.seed &+ UInt64(n) &+ (set == "confirmation" ? 1000 : 0)
                    let t0 = Date()
                    let m = try tune.metrics(trial, fold)
                    let score = m.accuracy
                    let t = Trial(
                        candidate: c.name, share: share, folds: set, fold: n, score: score, logLoss: m.logLoss, seconds: Date().timeIntervalSince(t0))
                    done[key(c.name, share, set, n)] = t
                    handle.write(try JSONEncoder().encode(t) + Data("\n".utf8))
                    print(String(format: "%@ share %.3f %@ fold %d: %.3f (%.1f s)", c.name, share, set, n + 1, score, t.seconds))
                }
            }
        }
        try handle.close()

        // The table: each candidate's mean per screening and at full length.
        func mean(_ c: String, _ s: Double, _ set: String, _ folds: Range<Int>) -> Double {
            let xs = folds.compactMap { done[key(c, s, set, $0)]?.score }
            return xs.reduce(0, +) / Double(max(1, xs.count))
        }
        let names = candidates.map(\.name)
        let all = 0..<search.count
        print("\n| candidate | " + shares.map { String(format: "%.3f", $0) }.joined(separator: " | ") + " | full | full, other folds |")
        print("|---|" + String(repeating: "---|", count: shares.count + 2))
        for c in names {
            let cells = (shares + [1]).map { String(format: "%.3f", mean(c, $0, "search", all)) }
            print("| \(c) | " + cells.joined(separator: " | ") + String(format: " | %.3f |", mean(c, 1, "confirmation", all)))
        }
        let full = names.map { mean($0, 1, "search", all) }
        print("\nSpearman rank correlation with the full-length scores (\(names.count) candidates):")
        for s in shares {
            print(String(format: "  share %.3f, %d folds: %.2f", s, search.count, spearman(names.map { mean($0, s, "search", all) }, full)))
        }
        print(String(format: "  full length, other folds (the ceiling): %.2f", spearman(names.map { mean($0, 1, "confirmation", all) }, full)))
        let half = search.count / 2
        print(
            String(
                format: "  full length on folds 1-%d against folds %d-%d: %.2f", half, half + 1, search.count,
                spearman(names.map { mean($0, 1, "search", 0..<half) }, names.map { mean($0, 1, "search", half..<search.count) })))
    }

    /// Spearman's rank correlation (ties get their mean rank).
    static func spearman(_ a: [Double], _ b: [Double]) -> Double {
        func ranks(_ x: [Double]) -> [Double] {
            let order = x.indices.sorted { x[$0] < x[$1] }
            var r = [Double](repeating: 0, count: x.count)
            var i = 0
            while i < order.count {
                var j = i
                while j + 1 < order.count && x[order[j + 1]] == x[order[i]] { j += 1 }
                for m in i...j { r[order[m]] = Double(i + j) / 2 }
                i = j + 1
            }
            return r
        }
        let (ra, rb) = (ranks(a), ranks(b))
        let n = Double(a.count)
        let ma = ra.reduce(0, +) / n
        let mb = rb.reduce(0, +) / n
        var (sab, saa, sbb) = (0.0, 0.0, 0.0)
        for i in ra.indices {
            sab += (ra[i] - ma) * (rb[i] - mb)
            saa += (ra[i] - ma) * (ra[i] - ma)
            sbb += (rb[i] - mb) * (rb[i] - mb)
        }
        return saa > 0 && sbb > 0 ? sab / (saa * sbb).squareRoot() : 0
    }
}
