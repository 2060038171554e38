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
public struct SweepRun {
    /// One trial: indices into the candidates, the folds and the seeds.
    public struct Trial: Codable, Hashable, Sendable {
        public var candidate: Int, fold: Int, seed: Int
    }

    /// One trial's outcome: sequence accuracy on the fold's held-out sequences.
    public struct TrialResult: Codable, Hashable, Sendable {
        public var trial: Trial
        public var accuracy: Double
        public var seconds: Double
        /// The rank that ran it.
        public var rank: Int
    }

    public struct Outcome: Sendable {
        /// Per candidate, each fold's score averaged over the seeds (`TuneRun.Search`'s table).
        public var search: TuneRun.Search
        /// Every trial, in trial order.
        public var trials: [TrialResult]
        public var chosen: TrainingConfig { search.chosen }
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

    /// Runs this rank's trials (`onTrial` after each), gathers all of them and chooses.
    /// `foldSeed` makes the folds (the same on every rank).
    public func run(
        group: Collective = SingleProcess(), foldSeed: UInt64 = 0, onTrial: (TrialResult) -> Void = { _ in }
    ) throws -> Outcome {
        guard !candidates.isEmpty else { throw SweepError.noCandidates }
        let folds = try tune.folds(seed: foldSeed)
        let all = trials(folds: folds.count)
        var mine: [TrialResult] = []
        for (i, t) in all.enumerated() where i % group.size == group.rank {
            var config = candidates[t.candidate].config
            config.seed = config.seed &+ UInt64(t.seed)
            let start = Date()
            let accuracy = try tune.score(config, folds[t.fold])
            let result = TrialResult(trial: t, accuracy: accuracy, seconds: Date().timeIntervalSince(start), rank: group.rank)
            mine.append(result)
            onTrial(result)
        }
        let gathered = try group.allGather(bytes: Array(try JSONEncoder().encode(mine)))
        let results = try gathered.flatMap { try JSONDecoder().decode([TrialResult].self, from: Data($0)) }
        let byTrial = Dictionary(results.map { ($0.trial, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = all.compactMap { byTrial[$0] }
        guard ordered.count == all.count else { throw SweepError.missingTrials(expected: all.count, got: ordered.count) }
        return Outcome(search: table(ordered, folds: folds), trials: ordered)
    }

    /// The per-candidate table: fold scores averaged over seeds, the best mean chosen.
    func table(_ results: [TrialResult], folds: [Fold]) -> TuneRun.Search {
        let rows = candidates.indices.map { c -> Tuning.Result in
            let mine = results.filter { $0.trial.candidate == c }
            let scores = folds.indices.map { f -> Double? in
                let s = mine.filter { $0.trial.fold == f }.map(\.accuracy)
                return s.reduce(0, +) / Double(s.count)
            }
            return Tuning.Result(candidate: candidates[c], foldScores: scores, seconds: mine.reduce(0) { $0 + $1.seconds })
        }
        var chosen = 0
        for (i, r) in rows.enumerated() where r.score! > rows[chosen].score! { chosen = i }
        return TuneRun.Search(
            recipe: [], outcome: Tuning.Outcome(results: rows, chosen: chosen, stoppedByBudget: false, folds: folds))
    }
}

public enum SweepError: Error, Equatable, CustomStringConvertible {
    case noCandidates
    /// The gathered table lacks trials (a rank returned fewer results than it was given).
    case missingTrials(expected: Int, got: Int)

    public var description: String {
        switch self {
        case .noCandidates: return "the sweep has no candidate configs"
        case .missingTrials(let e, let g): return "the sweep gathered \(g) of its \(e) trials; were all ranks started from the same grid and data?"
        }
    }
}
