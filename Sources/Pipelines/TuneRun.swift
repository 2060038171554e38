import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

/// A tune run, as `actiontrain tune` makes it: the recipe for the dataset, candidate changes
/// around it scored by group-aware k-fold cross-validation on the training split only
/// (`Tuning.search`), then the winner trained on the whole training split as a normal fit run.
/// The test split is never read. Nothing is printed; progress comes through `onEvent`.
public struct TuneRun {
    public struct Options: Sendable {
        /// Folds (fewer when there are fewer groups).
        public var folds = 5
        /// Seconds for the search; the refit of the winner comes after it. Nil: no limit.
        public var budget: Double? = 600
        /// A challenger must beat the incumbent's CV accuracy by more than this, and by more
        /// than two held-out sequences' worth (`TuneRun.margin`): on 100 training sequences one
        /// sequence is 0.01, and a winner by one sequence is a coin toss.
        public var margin = 0.005
        /// How hard the search screens (`Tuning.Plan`).
        public var plan = Tuning.Plan.standard
        /// Whether the best challenger must win again on other folds (`Tuning.search`).
        public var confirm = true

        public init(folds: Int = 5, budget: Double? = 600, margin: Double = 0.005, plan: Tuning.Plan = .standard, confirm: Bool = true) {
            self.folds = folds
            self.budget = budget
            self.margin = margin
            self.plan = plan
            self.confirm = confirm
        }
    }

    /// What the search found, before the refit.
    public struct Search: Sendable {
        /// The recipe's choices for the whole training split.
        public var recipe: [Recipe.Choice]
        public var outcome: Tuning.Outcome
        public var chosen: TrainingConfig { outcome.results[outcome.chosen].candidate.config }
    }

    public let dataPath: String
    public let dataset: Dataset
    public let base: TrainingConfig
    public let explicit: Set<String>?
    public let options: Options

    /// `explicit`: the keys the user set (the recipe chooses the others; nil: `config` as is).
    public init(dataPath: String, dataset: Dataset, config: TrainingConfig, explicit: Set<String>?, options: Options) {
        self.dataPath = dataPath
        self.dataset = dataset
        self.base = config
        self.explicit = explicit
        self.options = options
    }

    /// The non-test sequences, which are all tune ever reads.
    public var trainingIndices: [Int] { dataset.sequences.indices.filter { dataset.sequences[$0].split != "test" } }

    /// Group-aware, stratified folds of the training sequences.
    public func folds(seed: UInt64) throws -> [Fold] {
        let indices = trainingIndices
        guard !indices.isEmpty else { throw FitError.noTrainingSequences(dataset: dataset.name) }
        // What the final fit would refuse (one class, no labels, ...), said before any fold trains.
        try Guards.requireTrainable(dataset, training: indices, file: dataPath)
        let groups = TrainingData.groupCount(dataset, indices)
        let k = min(options.folds, groups)
        guard k >= 2 else { throw TuneError.tooFewGroups(dataset: dataset.name, groups: groups) }
        let folds = try Splits.kFold(dataset, indices: indices, k: k, seed: seed).folds
        // A fold that holds out one class only cannot be scored (its metrics need two): say so
        // before any training, naming the fold count, rather than after the fold's training.
        for (n, fold) in folds.enumerated() {
            let labels = Set(fold.test.compactMap { dataset.sequences[$0].label })
            guard labels.count >= 2 else {
                throw TuneError.foldOfOneClass(dataset: dataset.name, fold: n + 1, folds: k, heldOut: fold.test.count, label: labels.first)
            }
        }
        return folds
    }

    /// Scores the candidates by cross-validation.
    /// `known`: trial scores by `Tuning.trialKey` from an earlier, interrupted search of the
    /// same data (`tune --resume`).
    public func search(
        known: [String: Double] = [:], shouldStop: () -> Bool = { false }, onEvent: (Tuning.Event) -> Void = { _ in }
    ) throws -> Search {
        let resolved = try FitPipeline.resolve(base, for: dataset, explicit: explicit)
        let recipe = resolved.config
        let folds = try self.folds(seed: recipe.seed)
        // Other folds for the confirmation: the same k, cut with another seed.
        let confirmation = options.confirm ? try self.folds(seed: recipe.seed &+ 1) : []
        let changes = Tuning.changes(for: dataset.skeleton, base: recipe)
        let given = explicit ?? []
        let outcome = try Tuning.search(
            base: recipe, changes: changes, explicit: given, folds: folds, confirmationFolds: confirmation, plan: options.plan,
            budget: options.budget, margin: Self.margin(options.margin, heldOut: folds.reduce(0) { $0 + $1.test.count }), known: known,
            shouldStop: shouldStop, onEvent: onEvent
        ) { config, fold in try score(config, fold) }
        return Search(recipe: resolved.choices, outcome: outcome)
    }

    /// The margin a challenger must beat: `least`, or two of the `heldOut` sequences (each
    /// training sequence is held out once over the folds), whichever is larger.
    public static func margin(_ least: Double, heldOut: Int) -> Double {
        max(least, 2 / Double(max(heldOut, 1)))
    }

    /// Trains `config` on the fold's training sequences (holding out its validation share of
    /// them when the config asks for one) and returns the sequence accuracy on its test ones.
    public func score(_ config: TrainingConfig, _ fold: Fold) throws -> Double {
        try metrics(config, fold).accuracy
    }

    /// What `score` measures, all of it: the sequence-level metrics on the fold's test sequences.
    public func metrics(_ config: TrainingConfig, _ fold: Fold) throws -> LevelMetrics {
        var validation: [Int] = []
        var train = fold.train
        if config.validationFraction > 0 {
            let s = try Splits.split(dataset, indices: fold.train, fraction: config.validationFraction, seed: config.seed)
            (train, validation) = (s.first, s.second)
        }
        // A temperature leaves the predicted class, hence the accuracy scored here, as it is.
        var config = config
        config.calibration = .none
        let run = try FitRun.start(
            dataPath: dataPath, dataset: dataset, config: config, folder: nil, split: .init(train: train, validation: validation))
        _ = try run.train()
        let model = try ActionModel(bytes: try run.finish().modelBytes)
        var settings = EvalSettings()
        settings.bootstrapResamples = 0
        let report = try Evaluation.evaluate(
            model: model, modelPath: "(\(fold.name))", dataset: dataset, dataPath: dataPath, indices: fold.test,
            split: fold.name, stride: config.windowStride, useEvents: config.useEvents, settings: settings)
        return report.headlineMetrics
    }
}

public enum TuneError: Error, Equatable, CustomStringConvertible {
    /// Cross-validation needs at least two groups (or ungrouped sequences).
    case tooFewGroups(dataset: String, groups: Int)
    /// `--resume` found no trial log (`tune-trials.jsonl`) in the folder.
    case noTrialLog(String)
    /// The trial log was written for other data.
    case trialLogOfOtherData(String, hash: String, dataset: String)
    /// A fold holds out the sequences of one class only (too many folds for the data).
    case foldOfOneClass(dataset: String, fold: Int, folds: Int, heldOut: Int, label: String?)

    public var description: String {
        switch self {
        case .foldOfOneClass(let d, let fold, let folds, let heldOut, let label):
            let what = label.map { "all of class '\($0)'" } ?? "none labeled"
            return "\(d): with \(folds) folds, fold \(fold) holds out \(heldOut) sequence\(heldOut == 1 ? "" : "s"), \(what); "
                + "a fold needs two classes to be scored: give fewer folds"
        case .noTrialLog(let path):
            return "\(path): no trial log of an earlier tune run to resume"
        case .trialLogOfOtherData(let path, let hash, let dataset):
            return "\(path): the trials were run on other data (hash \(hash), this dataset \(dataset))"
        case .tooFewGroups(let d, let n):
            return "\(d): cross-validation needs at least 2 groups of training sequences, found \(n); give the sequences groups (subjects) or more sequences"
        }
    }
}

extension TuneRun.Search {
    /// The CV table as Markdown: every candidate with its fold scores, mean and spread, the
    /// chosen one marked. Written to `tune.md` in the run folder and printed by `tune`.
    public func markdown() -> String {
        let results = outcome.results
        let k = outcome.folds.count
        var text = "| candidate | epochs | " + (1...max(1, k)).map { "fold \($0)" }.joined(separator: " | ") + " | mean | sd | seconds |\n"
        text += "|---|---|" + String(repeating: "---|", count: k) + "---|---|---|\n"
        for (i, r) in results.enumerated() {
            let name = (i == outcome.chosen ? "**\(r.candidate.name)** (chosen)" : r.candidate.name) + (r.confirmation ? " (other folds)" : "")
            let folds = r.foldScores.map { $0.map { String(format: "%.3f", $0) } ?? "-" }
            text += "| \(name) | \(r.epochs) | " + folds.joined(separator: " | ") + " | "
            text += (r.score.map { String(format: "%.3f", $0) } ?? "-") + " | " + (r.spread.map { String(format: "%.3f", $0) } ?? "-")
            text += String(format: " | %.1f |\n", r.seconds)
        }
        if !outcome.verdict.isEmpty { text += "\nChosen: \(outcome.verdict).\n" }
        if !outcome.skipped.isEmpty {
            let minutes = outcome.skipped.reduce(0) { $0 + $1.seconds } / 60
            text += "\nLeft out by the time budget (about \(String(format: "%.1f", minutes)) more minutes): "
            text += outcome.skipped.map { "\($0.name) (rung \($0.rung + 1))" }.joined(separator: ", ") + ".\n"
        }
        return text
    }

    /// The table as JSON (`tune.json`): folds with their sizes, and per candidate its changes,
    /// fold scores, mean, spread, seconds and whether it was chosen.
    public func json() throws -> Data {
        struct Row: Encodable {
            var candidate: String, changes: [String], rung: Int, epochs: Int, otherFolds: Bool, foldScores: [Double?], mean: Double?
            var sd: Double?, seconds: Double, chosen: Bool
        }
        struct Skip: Encodable { var candidate: String, rung: Int, seconds: Double }
        struct Table: Encodable {
            var schema = "actiontrain.tune"
            var schemaVersion = 2
            var folds: [[String: Int]]
            var stoppedByBudget: Bool
            var verdict: String
            var skipped: [Skip]
            var candidates: [Row]
        }
        let table = Table(
            folds: outcome.folds.map { ["train": $0.train.count, "test": $0.test.count] }, stoppedByBudget: outcome.stoppedByBudget,
            verdict: outcome.verdict, skipped: outcome.skipped.map { Skip(candidate: $0.name, rung: $0.rung + 1, seconds: $0.seconds) },
            candidates: outcome.results.enumerated().map { i, r in
                Row(
                    candidate: r.candidate.name, changes: r.candidate.changes, rung: r.rung + 1, epochs: r.epochs, otherFolds: r.confirmation,
                    foldScores: r.foldScores, mean: r.score, sd: r.spread, seconds: r.seconds, chosen: i == outcome.chosen)
            })
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try e.encode(table)
    }
}

/// The trials of a tune run as they finish (`tune-trials.jsonl` in its folder), so that an
/// interrupted search resumes where it stopped: a header line naming the dataset's content
/// hash, then one `{"key": ..., "score": ...}` line per trial (`Tuning.trialKey`). Appended
/// and flushed one line at a time: a killed process loses at most the trial it was running.
public final class TuneTrialLog {
    public static let fileName = "tune-trials.jsonl"
    public let path: String
    private let handle: FileHandle

    /// Starts a new log at `path` (replacing one there) for `datasetHash`.
    public init(creating path: String, datasetHash: String) throws {
        self.path = path
        let header = try JSONSerialization.data(withJSONObject: ["actiontrain": "tune-trials", "datasetHash": datasetHash], options: [.sortedKeys])
        guard FileManager.default.createFile(atPath: path, contents: header + Data("\n".utf8)), let h = FileHandle(forWritingAtPath: path) else {
            throw WriteError(path: path, reason: "cannot create the trial log")
        }
        handle = h
        handle.seekToEndOfFile()
    }

    /// Reopens the log at `path` for appending and returns the trials it holds. Throws when it
    /// is missing, is not a trial log, or belongs to other data.
    public static func resume(_ path: String, datasetHash: String) throws -> (log: TuneTrialLog, known: [String: Double]) {
        guard let data = FileManager.default.contents(atPath: path) else { throw TuneError.noTrialLog(path) }
        var known: [String: Double] = [:]
        for (i, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                // A line cut short by a kill: the trial is run again.
                continue
            }
            if i == 0 {
                guard object["actiontrain"] as? String == "tune-trials" else { throw TuneError.noTrialLog(path) }
                let hash = object["datasetHash"] as? String ?? ""
                guard hash == datasetHash else { throw TuneError.trialLogOfOtherData(path, hash: hash, dataset: datasetHash) }
                continue
            }
            if let key = object["key"] as? String, let score = object["score"] as? Double { known[key] = score }
        }
        guard let h = FileHandle(forWritingAtPath: path) else { throw WriteError(path: path, reason: "cannot open the trial log") }
        h.seekToEndOfFile()
        let log = TuneTrialLog(path: path, handle: h)
        if !data.isEmpty && data.last != UInt8(ascii: "\n") { try log.write(Data("\n".utf8)) }
        return (log, known)
    }

    private init(path: String, handle: FileHandle) {
        self.path = path
        self.handle = handle
    }

    /// Appends one trial (a score JSON cannot hold, NaN, is not logged: that trial runs again).
    public func append(key: String, score: Double) throws {
        guard let line = try? JSONSerialization.data(withJSONObject: ["key": key, "score": score], options: [.sortedKeys]) else { return }
        try write(line + Data("\n".utf8))
    }

    private func write(_ data: Data) throws {
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            throw WriteError(path: path, reason: error.localizedDescription)
        }
    }

    deinit { try? handle.close() }
}
