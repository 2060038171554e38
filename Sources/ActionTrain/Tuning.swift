import Datasets
import Foundation
import PoseCore

/// The search behind `actiontrain tune`: candidate configs scored by group-aware k-fold
/// cross-validation on the training split only, within a time budget.
///
/// The search is greedy in two rounds, so that a budget of a few minutes covers it:
/// 1. the base config (the recipe) and each single change from `Tuning.changes` that applies;
/// 2. the base with every change that beat it in round 1 combined, then the best single change.
/// A candidate's score is its mean sequence accuracy over the folds; a challenger must beat
/// the incumbent by more than `margin` to win, so ties go to the simpler config. Every trial
/// (candidate × fold) is a job for `run`; where it runs (this process, another rank) is the
/// caller's business.
public enum Tuning {
    /// One change to a config: a name for the table and the keys it sets.
    public struct Change: Sendable {
        public var name: String
        /// The config keys this change sets (a user's explicit keys are never changed).
        public var keys: [String]
        public var apply: @Sendable (inout TrainingConfig) -> Void

        public init(_ name: String, keys: [String], apply: @escaping @Sendable (inout TrainingConfig) -> Void) {
            self.name = name
            self.keys = keys
            self.apply = apply
        }
    }

    /// A config to score and how it differs from the base.
    public struct Candidate: Sendable {
        public var name: String
        public var config: TrainingConfig
        public var changes: [String]

        public init(name: String, config: TrainingConfig, changes: [String]) {
            self.name = name
            self.config = config
            self.changes = changes
        }
    }

    /// One scored candidate: fold scores in fold order (nil where the budget ran out).
    public struct Result: Sendable {
        public var candidate: Candidate
        public var foldScores: [Double?]
        public var seconds: Double

        public init(candidate: Candidate, foldScores: [Double?], seconds: Double) {
            self.candidate = candidate
            self.foldScores = foldScores
            self.seconds = seconds
        }
        /// Mean over the folds that ran; nil when not every fold ran.
        public var score: Double? {
            let s = foldScores.compactMap { $0 }
            return s.count == foldScores.count && !s.isEmpty ? s.reduce(0, +) / Double(s.count) : nil
        }
        /// Standard deviation over the folds (0 for one fold).
        public var spread: Double? {
            guard let m = score, foldScores.count > 1 else { return score.map { _ in 0 } }
            let s = foldScores.compactMap { $0 }
            return (s.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(s.count - 1)).squareRoot()
        }
    }

    /// What the search ended with.
    public struct Outcome: Sendable {
        public var results: [Result]
        /// Index into `results` of the chosen candidate.
        public var chosen: Int
        public var stoppedByBudget: Bool
        public var folds: [Fold]

        public init(results: [Result], chosen: Int, stoppedByBudget: Bool, folds: [Fold]) {
            self.results = results
            self.chosen = chosen
            self.stoppedByBudget = stoppedByBudget
            self.folds = folds
        }
    }

    public enum Event: Sendable {
        case trial(candidate: String, fold: Int, folds: Int, score: Double, seconds: Double)
        case candidate(Result)
    }

    /// The changes tried around a recipe, for a dataset whose skeleton is `skeleton`. Each
    /// names what it changes; one whose keys the user set is left out by `search`.
    public static func changes(for skeleton: Skeleton, base: TrainingConfig) -> [Change] {
        var out: [Change] = []
        if base.augmentation.isEnabled {
            out.append(Change("no augmentation", keys: ["augmentation"]) { $0.augmentation = AugmentationConfig() })
        } else {
            out.append(Change("augmentation", keys: ["augmentation"]) { $0.augmentation = Recipe.standardAugmentation })
        }
        if !base.channels.contains(.motion) {
            out.append(Change("+ motion", keys: ["channels"]) { $0.channels.append(.motion) })
        }
        if base.windowMode == .fit {
            let longer = min(64, base.windowFrames * 3 / 2)
            if longer != base.windowFrames {
                out.append(Change("\(longer) frames", keys: ["windowFrames"]) { $0.windowFrames = longer })
            }
        }
        out.append(Change("epochs x2", keys: ["epochs"]) { $0.epochs *= 2 })
        out.append(Change("dropout 0.3", keys: ["dropout"]) { $0.dropout = 0.3 })
        out.append(
            Change("widths x2", keys: ["widths", "hidden"]) { c in
                c.widths = c.widths.map { $0 * 2 }
                c.hidden = c.hidden.map { $0 * 2 }
            })
        if base.architecture != .mlp {
            out.append(Change("mlp", keys: ["architecture"]) { $0.architecture = .mlp })
        }
        return out
    }

    /// Runs the search. `run(config, fold)` trains on the fold's training indices and returns
    /// the sequence accuracy on its test indices. `budget` is in seconds (nil: no limit); a
    /// candidate that cannot finish all folds in time is not started once the budget is spent.
    public static func search(
        base: TrainingConfig, changes: [Change], explicit: Set<String>, folds: [Fold], budget: Double?,
        margin: Double = 0.005, shouldStop: () -> Bool = { false }, onEvent: (Event) -> Void = { _ in },
        run: (TrainingConfig, Fold) throws -> Double
    ) throws -> Outcome {
        let start = Date()
        var results: [Result] = []
        var stopped = false
        var fitSeconds: Double? = nil
        func spent() -> Double { Date().timeIntervalSince(start) }

        /// Scores a candidate on every fold, or returns nil when out of time.
        func evaluate(_ candidate: Candidate) throws -> Result? {
            if shouldStop() { stopped = true }
            if let budget, let per = fitSeconds, spent() + per * Double(folds.count) > budget { stopped = true }
            if stopped { return nil }
            var scores: [Double?] = []
            let t0 = Date()
            for (k, fold) in folds.enumerated() {
                let t = Date()
                var config = candidate.config
                config.seed = candidate.config.seed &+ UInt64(k)
                let s = try run(config, fold)
                let secs = Date().timeIntervalSince(t)
                fitSeconds = max(fitSeconds ?? 0, secs)
                scores.append(s)
                onEvent(.trial(candidate: candidate.name, fold: k + 1, folds: folds.count, score: s, seconds: secs))
            }
            let r = Result(candidate: candidate, foldScores: scores, seconds: Date().timeIntervalSince(t0))
            results.append(r)
            onEvent(.candidate(r))
            return r
        }

        let usable = changes.filter { Set($0.keys).isDisjoint(with: explicit) }
        func candidate(_ applied: [Change]) -> Candidate {
            var c = base
            for ch in applied { ch.apply(&c) }
            return Candidate(
                name: applied.isEmpty ? "recipe" : applied.map(\.name).joined(separator: ", "), config: c,
                changes: applied.map(\.name))
        }
        guard let baseline = try evaluate(candidate([])) else {
            return Outcome(results: results, chosen: 0, stoppedByBudget: true, folds: folds)
        }
        // Round 1: single changes.
        var winners: [(Change, Double)] = []
        for ch in usable {
            guard let r = try evaluate(candidate([ch])) else { break }
            if let s = r.score, s > baseline.score! + margin { winners.append((ch, s)) }
        }
        // Round 2: the winning changes together.
        if winners.count > 1 && !stopped {
            let together = winners.sorted { $0.1 > $1.1 }.map(\.0)
            _ = try evaluate(candidate(together))
        }
        var chosen = 0
        for (i, r) in results.enumerated() {
            guard let s = r.score, let best = results[chosen].score else { continue }
            if s > best + margin { chosen = i }
        }
        return Outcome(results: results, chosen: chosen, stoppedByBudget: stopped, folds: folds)
    }
}
