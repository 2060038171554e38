import ActionTrain
import Datasets
import Foundation
import PoseCore

/// A sweep, as `actiontrain sweep` makes it: every candidate config × fold × seed is one
/// trial, scored by `TuneRun.score` on `TuneRun.folds` (group-aware k-fold CV on the training
/// split; the test split is never read). Trial i runs on rank `i % group.size`; the ranks'
/// results are gathered on every rank into one table, and the candidate with the best mean
/// fold score is chosen (ties: the first). A trial's score depends on its config, fold and
/// seed only, so the table is the same at any rank count (the seconds aside).
///
/// A trial that fails (its training diverges, say) is recorded as failed with its reason and
/// the sweep goes on: its candidate has no mean and is never chosen. `known` trials (by `key`,
/// from the log of an interrupted sweep: `SweepTrialLog`) are not run again.
public struct SweepRun {
    /// One trial: indices into the candidates, the folds and the seeds.
    public struct Trial: Codable, Hashable, Sendable {
        public var candidate: Int, fold: Int, seed: Int
    }

    /// One trial's outcome: sequence accuracy on the fold's held-out sequences, or why it failed.
    public struct TrialResult: Codable, Hashable, Sendable {
        public var trial: Trial
        /// Nil when the trial failed.
        public var accuracy: Double?
        /// Why the trial failed (the error's description); nil when it was scored.
        public var failure: String?
        public var seconds: Double
        /// The rank that ran it.
        public var rank: Int

        public init(trial: Trial, accuracy: Double?, failure: String? = nil, seconds: Double, rank: Int) {
            self.trial = trial
            self.accuracy = accuracy
            self.failure = failure
            self.seconds = seconds
            self.rank = rank
        }
    }

    public struct Outcome: Sendable {
        /// Per candidate, each fold's score averaged over the seeds (`TuneRun.Search`'s table);
        /// nil when no candidate has a score (every one had a failed trial).
        public var search: TuneRun.Search?
        /// Every trial, in trial order.
        public var trials: [TrialResult]
        public var chosen: TrainingConfig? { search?.chosen }
        /// The failed trials, in trial order.
        public var failures: [TrialResult] { trials.filter { $0.failure != nil } }
    }

    public let tune: TuneRun
    public let candidates: [Tuning.Candidate]
    /// Seeds per candidate and fold: the candidate's seed plus 0 ..< seeds.
    public let seeds: Int

    /// `folds`: folds by group (fewer when there are fewer groups), made with `folds seed`.
    public init(dataPath: String, dataset: Dataset, candidates: [Tuning.Candidate], folds: Int, seeds: Int) {
        tune = TuneRun(
            dataPath: dataPath, dataset: dataset, config: candidates.first?.config ?? TrainingConfig(), explicit: nil,
            options: .init(folds: folds, budget: nil))
        self.candidates = candidates
        self.seeds = max(1, seeds)
    }

    /// Every trial, candidate by candidate, fold by fold, seed by seed.
    public func trials(folds: Int) -> [Trial] {
        candidates.indices.flatMap { c in
            (0..<folds).flatMap { f in (0..<seeds).map { Trial(candidate: c, fold: f, seed: $0) } }
        }
    }

    /// The config a trial trains: its candidate's, with the seed advanced by the trial's seed index.
    public func config(_ t: Trial) -> TrainingConfig {
        var config = candidates[t.candidate].config
        config.seed = config.seed &+ UInt64(t.seed)
        return config
    }

    /// A trial's identity in a trial log: its config (`Tuning.trialKey`, seed included) and
    /// the fold's held-out sequences, so that a resumed sweep of another grid, fold count or
    /// fold seed runs its trials afresh.
    public func key(_ t: Trial, folds: [Fold]) -> String {
        let fold = folds[t.fold]
        return Tuning.trialKey(config(t), fold: fold, confirmation: false) + ":" + FNV1a64.text(of: Array(fold.test.map(String.init).joined(separator: ",").utf8))
    }

    /// Runs this rank's trials (`onTrial(result, key, cached)` after each; `cached`: from
    /// `known`, not run), gathers all of them and chooses. `foldSeed` makes the folds (the same
    /// on every rank). A trial whose training or scoring throws is recorded as failed.
    public func run(
        group: Collective = SingleProcess(), foldSeed: UInt64 = 0, known: [String: TrialResult] = [:],
        onTrial: (_ result: TrialResult, _ key: String, _ cached: Bool) -> Void = { _, _, _ in }
    ) throws -> Outcome {
        guard !candidates.isEmpty else { throw SweepError.noCandidates }
        let folds = try tune.folds(seed: foldSeed)
        let all = trials(folds: folds.count)
        var mine: [TrialResult] = []
        for (i, t) in all.enumerated() where i % group.size == group.rank {
            let key = key(t, folds: folds)
            if var old = known[key] {
                old.trial = t
                mine.append(old)
                onTrial(old, key, true)
                continue
            }
            let start = Date()
            var result = TrialResult(trial: t, accuracy: nil, seconds: 0, rank: group.rank)
            do {
                result.accuracy = try tune.score(config(t), folds[t.fold])
            } catch {
                result.failure = "\(error)"
            }
            result.seconds = Date().timeIntervalSince(start)
            mine.append(result)
            onTrial(result, key, false)
        }
        let gathered = try group.allGather(bytes: Array(try JSONEncoder().encode(mine)))
        let results = try gathered.flatMap { try JSONDecoder().decode([TrialResult].self, from: Data($0)) }
        let byTrial = Dictionary(results.map { ($0.trial, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = all.compactMap { byTrial[$0] }
        guard ordered.count == all.count else { throw SweepError.missingTrials(expected: all.count, got: ordered.count) }
        return Outcome(search: table(ordered, folds: folds), trials: ordered)
    }

    /// The per-candidate table: fold scores averaged over seeds (none for a fold with a failed
    /// trial), the best mean chosen; nil when no candidate has a mean.
    func table(_ results: [TrialResult], folds: [Fold]) -> TuneRun.Search? {
        let rows = candidates.indices.map { c -> Tuning.Result in
            let mine = results.filter { $0.trial.candidate == c }
            let scores = folds.indices.map { f -> Double? in
                let s = mine.filter { $0.trial.fold == f }.map(\.accuracy)
                guard !s.isEmpty, !s.contains(nil) else { return nil }
                return s.reduce(0) { $0 + $1! } / Double(s.count)
            }
            return Tuning.Result(candidate: candidates[c], foldScores: scores, seconds: mine.reduce(0) { $0 + $1.seconds })
        }
        var chosen: Int?
        for (i, r) in rows.enumerated() {
            guard let score = r.score else { continue }
            if chosen == nil || score > rows[chosen!].score! { chosen = i }
        }
        guard let chosen else { return nil }
        return TuneRun.Search(
            recipe: [], outcome: Tuning.Outcome(results: rows, chosen: chosen, stoppedByBudget: false, folds: folds))
    }
}

public enum SweepError: Error, Equatable, CustomStringConvertible {
    case noCandidates
    /// The gathered table lacks trials (a rank returned fewer results than it was given).
    case missingTrials(expected: Int, got: Int)
    /// `--resume` found no trial log (`sweep-trials.jsonl`) in the folder.
    case noTrialLog(String)
    /// The trial log was written for other data.
    case trialLogOfOtherData(String, hash: String, dataset: String)

    public var description: String {
        switch self {
        case .noCandidates: return "the sweep has no candidate configs"
        case .missingTrials(let e, let g): return "the sweep gathered \(g) of its \(e) trials; were all ranks started from the same grid and data?"
        case .noTrialLog(let path): return "\(path): no trial log of an earlier sweep to resume"
        case .trialLogOfOtherData(let path, let hash, let dataset):
            return "\(path): the trials were run on other data (hash \(hash), this dataset \(dataset))"
        }
    }
}

/// The trials of a sweep as they finish (`sweep-trials.jsonl` in its folder), so that an
/// interrupted sweep resumes where it stopped: a header line naming the dataset's content hash,
/// then one line per trial, `{"key": ..., "result": {...}}` (`SweepRun.key`, a `TrialResult`,
/// failed ones too). Appended and flushed one line at a time: a killed process loses at most
/// the trials it was running.
public final class SweepTrialLog {
    public static let fileName = "sweep-trials.jsonl"
    public let path: String
    private let handle: FileHandle

    private struct Line: Codable {
        var key: String
        var result: SweepRun.TrialResult
    }

    /// Starts a new log at `path` (replacing one there) for `datasetHash`.
    public init(creating path: String, datasetHash: String) throws {
        self.path = path
        let header = try JSONSerialization.data(withJSONObject: ["actiontrain": "sweep-trials", "datasetHash": datasetHash], options: [.sortedKeys])
        try AtomicWrite.write(Array(header + Data("\n".utf8)), to: path)
        guard let h = FileHandle(forWritingAtPath: path) else { throw WriteError(path: path, reason: "cannot open the trial log") }
        handle = h
        _ = try handle.seekToEnd()
    }

    /// The trials a log at `path` holds, by key (lines cut short by a kill are left out: those
    /// trials run again). Throws when it is missing, is not a sweep's trial log, or belongs to
    /// other data.
    public static func read(_ path: String, datasetHash: String) throws -> [String: SweepRun.TrialResult] {
        guard let data = FileManager.default.contents(atPath: path) else { throw SweepError.noTrialLog(path) }
        var known: [String: SweepRun.TrialResult] = [:]
        for (i, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if i == 0 {
                let header = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
                guard header?["actiontrain"] as? String == "sweep-trials" else { throw SweepError.noTrialLog(path) }
                let hash = header?["datasetHash"] as? String ?? ""
                guard hash == datasetHash else { throw SweepError.trialLogOfOtherData(path, hash: hash, dataset: datasetHash) }
                continue
            }
            guard let entry = try? JSONDecoder().decode(Line.self, from: Data(line)) else { continue }
            known[entry.key] = entry.result
        }
        return known
    }

    /// Reopens the log at `path` for appending (after a line cut short, on a line of its own).
    public init(appendingTo path: String) throws {
        self.path = path
        guard let h = FileHandle(forUpdatingAtPath: path) else { throw WriteError(path: path, reason: "cannot open the trial log") }
        handle = h
        let end = try handle.seekToEnd()
        if end > 0 {
            try handle.seek(toOffset: end - 1)
            let last = try handle.read(upToCount: 1)
            _ = try handle.seekToEnd()
            if last != Data("\n".utf8) { try append(raw: Data("\n".utf8)) }
        }
    }

    /// Appends one trial and flushes it.
    public func append(key: String, result: SweepRun.TrialResult) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try append(raw: try encoder.encode(Line(key: key, result: result)) + Data("\n".utf8))
    }

    private func append(raw: Data) throws {
        do {
            try handle.write(contentsOf: raw)
            try handle.synchronize()
        } catch {
            throw WriteError(path: path, reason: "\(error.localizedDescription)")
        }
    }

    deinit { try? handle.close() }
}
