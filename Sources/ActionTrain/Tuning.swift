import Datasets
import Foundation
import PoseCore

/// The search behind `actiontrain tune`: candidate configs scored by group-aware k-fold
/// cross-validation on the training split only, within a time budget.
///
/// Successive halving (Jamieson & Talwalkar 2016; Li et al. 2018, "Hyperband"), so that a
/// budget of minutes screens many candidates:
/// 1. rung 0: the base config (the recipe) and each single change from `Tuning.changes` that
///    applies, every one trained for a share of its epochs (`Plan.rungs[0]`, the learning-rate
///    schedule compressed to them) on every fold;
/// 2. the best `Plan.keep` share of the challengers by mean fold score go on to the next rung
///    (more epochs), again on every fold, until the last rung trains the full epochs, which the
///    best `Plan.finalists` (two) reach; the base config runs at every rung (the yardstick);
/// 3. at the last rung the challengers that beat the base by more than `margin` are also tried
///    together (one candidate), when the confirmation still fits in the budget after it;
/// 4. the best challenger at the last rung must then beat the base again on `confirmationFolds`
///    (other folds, other seeds): a winner has to win across repeated folds, not on one split.
/// The screening leaves the time the end needs (the recipe and the two best at full length, and
/// the confirmation, at the pace measured so far): when the budget cannot screen every
/// candidate, the best screened so far go to full length. A candidate's score is its mean
/// sequence accuracy over the folds; ties go to the base (the simpler config). Every trial
/// (candidate × rung × fold) is a job for `run`; results already known (a resumed search) come
/// from `known`, so a search is deterministic and resumable.
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

    /// How hard the search screens: the share of the epochs at each rung and the share of the
    /// challengers that go on.
    public struct Plan: Sendable, Equatable {
        /// Increasing shares of the candidates' epochs, the last 1.
        public var rungs: [Double]
        /// The share of a rung's challengers (at least one) trained at the next rung.
        public var keep: Double
        /// Epochs a screening fit trains at least.
        public var minimumEpochs: Int
        /// Challengers compared at full length (when there are so many): the screening leaves
        /// time for them, the recipe and the confirmation.
        public var finalists: Int

        /// A screening at a third of the epochs, then the two best at full length: n candidates
        /// cost about n/3 + 3 full fits per fold instead of n. A third, not a ninth: on the
        /// development sets the ranking at a third of the epochs predicts the full-length one (rank
        /// correlation 0.85 on NATOPS, where full length on other folds predicts it at 0.72), at
        /// a ninth it does not (0.02): the network member has barely started
        /// (docs/benchmarks.md, "Tune's screening").
        public static let standard = Plan(rungs: [1.0 / 3, 1], keep: 1.0 / 3, minimumEpochs: 4)
        /// Every candidate at full length (no screening).
        public static let exhaustive = Plan(rungs: [1], keep: 1, minimumEpochs: 1)

        public init(rungs: [Double], keep: Double, minimumEpochs: Int, finalists: Int = 2) {
            self.rungs = rungs
            self.keep = keep
            self.minimumEpochs = minimumEpochs
            self.finalists = finalists
        }

        /// `config` shortened for rung `r`: its epochs (and warm-up) scaled by the rung's share.
        public func config(_ config: TrainingConfig, rung r: Int) -> TrainingConfig {
            guard rungs[r] < 1 else { return config }
            var c = config
            c.epochs = max(min(minimumEpochs, config.epochs), Int((Double(config.epochs) * rungs[r]).rounded()))
            c.warmupEpochs = min(c.epochs - 1, Int((Double(config.warmupEpochs) * rungs[r]).rounded()))
            c.averageEpochs = min(c.averageEpochs * rungs[r], Double(c.epochs))
            return c
        }
    }

    /// One scored candidate at one rung: fold scores in fold order (nil where the budget ran
    /// out). `confirmation` results are on the confirmation folds.
    public struct Result: Sendable {
        public var candidate: Candidate
        public var rung: Int
        public var epochs: Int
        public var confirmation: Bool
        public var foldScores: [Double?]
        public var seconds: Double

        public init(
            candidate: Candidate, rung: Int = 0, epochs: Int? = nil, confirmation: Bool = false, foldScores: [Double?], seconds: Double
        ) {
            self.candidate = candidate
            self.rung = rung
            self.epochs = epochs ?? candidate.config.epochs
            self.confirmation = confirmation
            self.foldScores = foldScores
            self.seconds = seconds
        }
        /// Mean over the folds; nil when not every fold ran.
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

    /// A candidate the budget left out, and the seconds its remaining trials were expected to take.
    public struct Skipped: Sendable, Equatable {
        public var name: String
        public var rung: Int
        public var seconds: Double
    }

    /// What the search ended with.
    public struct Outcome: Sendable {
        public var results: [Result]
        /// Index into `results` of the chosen candidate (a full-length result).
        public var chosen: Int
        public var stoppedByBudget: Bool
        public var folds: [Fold]
        /// What the budget left out, in the order it would have run.
        public var skipped: [Skipped]
        /// Why the chosen candidate was chosen (for the table's footer).
        public var verdict: String

        public init(
            results: [Result], chosen: Int, stoppedByBudget: Bool, folds: [Fold], skipped: [Skipped] = [], verdict: String = ""
        ) {
            self.results = results
            self.chosen = chosen
            self.stoppedByBudget = stoppedByBudget
            self.folds = folds
            self.skipped = skipped
            self.verdict = verdict
        }
    }

    public enum Event: Sendable {
        /// A trial finished (`cached`: its score came from `known`); `key` is its `trialKey`.
        case trial(candidate: String, rung: Int, fold: Int, folds: Int, score: Double, seconds: Double, key: String, cached: Bool)
        case candidate(Result)
    }

    /// A trial's identity for resuming: the candidate's config (with the rung's epochs and the
    /// fold's seed), the fold and which fold set.
    public static func trialKey(_ config: TrainingConfig, fold: Fold, confirmation: Bool) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        let json = (try? e.encode(config)).map { String(decoding: $0, as: UTF8.self) } ?? "\(config)"
        return "\(confirmation ? "c" : "f")\(fold.name):\(FNV1a64.text(of: Array(json.utf8)))"
    }

    /// Runs the search. `run(config, fold)` trains on the fold's training indices and returns
    /// the sequence accuracy on its test indices; `known` answers trials already run (by
    /// `trialKey`). `budget` is in seconds (nil: no limit); a candidate's rung is not started
    /// when its expected time would pass it (the time per epoch measured so far), and is
    /// listed in `skipped`. `clock` gives the time in seconds (tests give their own).
    public static func search(
        base: TrainingConfig, changes: [Change], explicit: Set<String>, folds: [Fold], confirmationFolds: [Fold] = [],
        plan: Plan = .standard, budget: Double?, margin: Double = 0.005, known: [String: Double] = [:],
        shouldStop: () -> Bool = { false }, onEvent: (Event) -> Void = { _ in },
        clock: () -> Double = { Date().timeIntervalSinceReferenceDate },
        run: (TrainingConfig, Fold) throws -> Double
    ) throws -> Outcome {
        let start = clock()
        var results: [Result] = []
        var skipped: [Skipped] = []
        var stopped = false
        /// The screening ended early to leave time for the full-length comparison.
        var cut = false
        /// Seconds per epoch of a fold's fit, per candidate name (the largest seen), and overall.
        var perEpoch: [String: Double] = [:]
        var slowest = 0.0
        /// Trials run in this search: one that recurs (a config whose screening length is its full
        /// length) runs once.
        var ran: [String: Double] = [:]
        func spent() -> Double { clock() - start }
        func expected(_ c: Candidate, epochs: Int, folds n: Int) -> Double {
            (perEpoch[c.name] ?? slowest) * Double(epochs * n)
        }

        /// Scores `candidate` at rung `r` on `folds`, or returns nil when out of time. A screening
        /// trial (`reserve` > 0) must also leave `reserve` seconds; when it cannot, the screening
        /// ends (`cut`) but the search goes on to its full-length comparison.
        func evaluate(_ candidate: Candidate, rung r: Int, on folds: [Fold], confirmation: Bool = false, reserve: Double = 0) throws -> Result? {
            let config = plan.config(candidate.config, rung: r)
            let need = expected(candidate, epochs: config.epochs, folds: folds.count)
            if shouldStop() { stopped = true }
            if let budget, spent() + need > budget { stopped = true }
            if let budget, !stopped, spent() + need + reserve > budget { cut = true }
            if stopped || cut {
                skipped.append(Skipped(name: candidate.name, rung: r, seconds: need))
                return nil
            }
            var scores: [Double?] = []
            let t0 = clock()
            for (k, fold) in folds.enumerated() {
                let t = clock()
                var c = config
                c.seed = config.seed &+ UInt64(k) &+ (confirmation ? 1000 : 0)
                let key = trialKey(c, fold: fold, confirmation: confirmation)
                let s: Double
                var fresh = false
                if let cached = known[key] ?? ran[key] {
                    s = cached
                } else {
                    s = try run(c, fold)
                    ran[key] = s
                    fresh = true
                    let secs = clock() - t
                    perEpoch[candidate.name] = max(perEpoch[candidate.name] ?? 0, secs / Double(max(1, c.epochs)))
                    slowest = max(slowest, perEpoch[candidate.name]!)
                }
                scores.append(s)
                onEvent(
                    .trial(
                        candidate: candidate.name, rung: r, fold: k + 1, folds: folds.count, score: s, seconds: clock() - t,
                        key: key, cached: !fresh))
            }
            let result = Result(
                candidate: candidate, rung: r, epochs: config.epochs, confirmation: confirmation, foldScores: scores,
                seconds: clock() - t0)
            results.append(result)
            onEvent(.candidate(result))
            return result
        }

        let usable = changes.filter { Set($0.keys).isDisjoint(with: explicit) }
        func candidate(_ applied: [Change]) -> Candidate {
            var c = base
            for ch in applied { ch.apply(&c) }
            return Candidate(
                name: applied.isEmpty ? "recipe" : applied.map(\.name).joined(separator: ", "), config: c,
                changes: applied.map(\.name))
        }
        let recipe = candidate([])
        let last = plan.rungs.count - 1
        /// The challengers in the order they would go on: `alive` (already best first after
        /// rung 0), those scored at the running rung first, by score.
        var alive: [(Change, Candidate)] = usable.map { ($0, candidate([$0])) }
        /// The time the end of the search needs: the recipe and the `plan.finalists` first of
        /// `order` at full length on the folds, and the confirmation of one of them.
        func reserve(_ order: [Candidate]) -> Double {
            let full = { (c: Candidate) in expected(c, epochs: c.config.epochs, folds: folds.count) }
            let finalists = order.prefix(plan.finalists).map(full)
            let recipeFull = baseline?.rung == last ? 0 : full(recipe)
            let confirmation = confirmationFolds.isEmpty ? 0 : (recipeFull + (finalists.max() ?? 0)) * Double(confirmationFolds.count) / Double(folds.count)
            return recipeFull + finalists.reduce(0, +) + confirmation
        }
        var baseline: Result? = nil
        var finalists: [(Change, Result)] = []
        for r in 0...last {
            let screening = r < last
            if let b = try evaluate(recipe, rung: r, on: folds, reserve: screening ? reserve(alive.map(\.1)) : 0) { baseline = b }
            var scored: [(Change, Candidate, Double)] = []
            for (change, c) in alive {
                // The challengers scored so far at this rung, best first, then the rest in order.
                let ranked = scored.sorted { $0.2 > $1.2 }.map(\.1) + alive.map(\.1).filter { a in !scored.contains { $0.1.name == a.name } }
                guard let res = try evaluate(c, rung: r, on: folds, reserve: screening ? reserve(ranked) : 0), let s = res.score else { continue }
                scored.append((change, c, s))
                if r == last { finalists.append((change, res)) }
            }
            if stopped { break }  // what this rung left out is listed in `skipped`
            if screening {
                // The better share goes on (at least `plan.finalists` to the last rung); equal
                // scores keep their order (deterministic). When the screening was cut short, the
                // best so far go straight to full length: at this rung's scores, then (past rung 0)
                // the previous rung's order.
                let ranked = scored.enumerated().sorted { $0.element.2 != $1.element.2 ? $0.element.2 > $1.element.2 : $0.offset < $1.offset }
                    .map { ($0.element.0, $0.element.1) }
                let unscored = r == 0 ? [] : alive.filter { a in !scored.contains { $0.1.name == a.1.name } }
                let n = max(min(plan.finalists, scored.count), Int((Double(scored.count) * plan.keep).rounded(.up)))
                alive = Array((ranked + unscored).prefix(cut || r == last - 1 ? plan.finalists : n))
                if cut {
                    // Straight to the last rung.
                    cut = false
                    if let b = try evaluate(recipe, rung: last, on: folds) { baseline = b }
                    for (change, c) in alive {
                        guard let res = try evaluate(c, rung: last, on: folds), res.score != nil else { continue }
                        finalists.append((change, res))
                    }
                    break
                }
            }
        }
        func f3(_ x: Double) -> String { String(format: "%.3f", x) }
        var chosen: Int? = nil
        var verdict = "the recipe: no change was scored at full length"
        if let b = baseline, b.rung == last, let bs = b.score {
            chosen = results.firstIndex { $0.rung == last && $0.candidate.name == "recipe" && !$0.confirmation }
            verdict = "the recipe: no change beat it by more than \(f3(margin))"
            var contenders = finalists.compactMap { f -> (Change, Result, Double)? in
                guard let s = f.1.score, s > bs + margin else { return nil }
                return (f.0, f.1, s)
            }
            if contenders.count > 1 && !stopped {
                // Only when the confirmation of the best still fits after it.
                let together = contenders.sorted { $0.2 > $1.2 }.map(\.0)
                let combined = candidate(together)
                let confirming = confirmationFolds.isEmpty ? 0 : [recipe, combined].reduce(0) { $0 + expected($1, epochs: $1.config.epochs, folds: confirmationFolds.count) }
                if let res = try evaluate(combined, rung: last, on: folds, reserve: confirming), let s = res.score, s > bs + margin {
                    contenders.append((together[0], res, s))
                }
                cut = false
            }
            // The best full-length challenger, then the same comparison on other folds.
            if let best = contenders.enumerated().max(by: { $0.element.2 != $1.element.2 ? $0.element.2 < $1.element.2 : $0.offset > $1.offset })?.element {
                let bestIndex = results.firstIndex { $0.candidate.name == best.1.candidate.name && $0.rung == last && !$0.confirmation }!
                if confirmationFolds.isEmpty {
                    chosen = bestIndex
                    verdict = "\(best.1.candidate.name): beat the recipe by \(f3(best.2 - bs)) (no confirmation folds)"
                } else if let rc = try evaluate(recipe, rung: last, on: confirmationFolds, confirmation: true),
                    let cc = try evaluate(best.1.candidate, rung: last, on: confirmationFolds, confirmation: true),
                    let rcs = rc.score, let ccs = cc.score
                {
                    let all = (best.2 + ccs) / 2 - (bs + rcs) / 2
                    if all > margin && ccs >= rcs {
                        chosen = bestIndex
                        verdict = "\(best.1.candidate.name): beat the recipe by \(f3(best.2 - bs)) and again by \(f3(ccs - rcs)) on other folds"
                    } else {
                        verdict = "the recipe: \(best.1.candidate.name) beat it by \(f3(best.2 - bs)) but by \(f3(ccs - rcs)) on other folds"
                    }
                } else {
                    verdict = "the recipe: the time ran out before \(best.1.candidate.name) was confirmed on other folds"
                }
            }
        }
        return Outcome(
            results: results, chosen: chosen ?? results.firstIndex { $0.candidate.name == "recipe" } ?? 0, stoppedByBudget: stopped,
            folds: folds, skipped: skipped, verdict: verdict)
    }

    /// The changes tried around a recipe, for a dataset whose skeleton is `skeleton`. Each
    /// names what it changes; one whose keys the user set is left out by `search`.
    public static func changes(for skeleton: Skeleton, base: TrainingConfig) -> [Change] {
        var out: [Change] = []
        let a = base.augmentation
        if a.isEnabled {
            out.append(Change("no augmentation", keys: ["augmentation"]) { $0.augmentation = AugmentationConfig() })
            if a.rotationProbability > 0 {
                out.append(
                    Change("no rotation", keys: ["augmentation"]) {
                        $0.augmentation.rotationProbability = 0
                        $0.augmentation.maxRotationDegrees = 0
                    })
            }
        } else {
            out.append(Change("augmentation", keys: ["augmentation"]) { $0.augmentation = Recipe.standardAugmentation })
        }
        if a.flipProbability > 0 {
            out.append(Change("no flips", keys: ["augmentation"]) { $0.augmentation.flipProbability = 0 })
        } else if !skeleton.mirrorPairs.isEmpty {
            out.append(
                Change("flips", keys: ["augmentation"]) { c in
                    if !c.augmentation.isEnabled { c.augmentation = Recipe.standardAugmentation }
                    c.augmentation.flipProbability = 0.5
                })
        }
        // Turning the bodies back is tried only when the cameras stay where they were (`views
        // same`): cross-validation on the training cameras cannot see what a new camera costs.
        if skeleton.dimensions == 3 && Recipe.hasFacingPairs(skeleton) && (!base.alignFacing || base.views == .same) {
            let align = !base.alignFacing
            out.append(Change(align ? "alignFacing" : "no alignFacing", keys: ["alignFacing"]) { $0.alignFacing = align })
        }
        // With `members` (the recipe's network and an ftp member), the changes of the channels
        // and of the architecture are the network's: the first member's.
        let channelsKey = base.members.isEmpty ? "channels" : "members"
        for block in [ChannelBlock.distances, .motion, .fastMotion] where !base.networkChannels.contains(block) {
            out.append(Change("+ \(block.rawValue)", keys: [channelsKey]) { $0.networkChannels.append(block) })
        }
        let J = skeleton.jointCount
        if !base.networkChannels.contains(.relativePositions) && J * (J - 1) / 2 <= 190 {
            out.append(Change("+ relativePositions", keys: [channelsKey]) { $0.networkChannels.append(.relativePositions) })
        }
        if base.members.count > 1, let network = base.members.first {
            out.append(
                Change("\(network.architecture.rawValue) alone", keys: ["members", "fillGaps", "pairs"]) { c in
                    (c.architecture, c.channels) = (network.architecture, network.channels)
                    (c.members, c.fillGaps, c.pairs) = ([], false, [])
                })
            if let ftp = base.members.dropFirst().first(where: { $0.architecture == .ftp }) {
                out.append(
                    Change("ftp alone", keys: ["members"]) { c in
                        (c.architecture, c.channels, c.members) = (.ftp, ftp.channels, [])
                    })
            }
        }
        let architecture = base.networkArchitecture
        if architecture != .mlp && base.pyramid.isEmpty && base.windowFrames >= 4 {
            out.append(Change("pyramid 1,2,4", keys: ["pyramid"]) { $0.pyramid = [1, 2, 4] })
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
        let architectureKey = base.members.isEmpty ? "architecture" : "members"
        if architecture != .mlp {
            out.append(Change("mlp", keys: [architectureKey]) { $0.networkArchitecture = .mlp })
        }
        if architecture != .stgcn && (!skeleton.bones.isEmpty || !base.graph.isEmpty) && base.streams.isEmpty {
            out.append(
                Change("stgcn", keys: [architectureKey, "widths", "kernel"]) { c in
                    c.networkArchitecture = .stgcn
                    c.widths = [32, 32, 32]
                    c.kernel = 9
                })
        }
        return out
    }
}

extension TrainingConfig {
    /// The channels of the network the recipe chose: its first member's with `members` (the
    /// others are the ftp member's), else `channels`.
    var networkChannels: [ChannelBlock] {
        get { members.isEmpty ? channels : members[0].channels }
        set {
            if members.isEmpty { channels = newValue } else { members[0].channels = newValue }
        }
    }

    /// The architecture of that network: the first member's with `members`, else `architecture`.
    var networkArchitecture: Architecture {
        get { members.isEmpty ? architecture : members[0].architecture }
        set {
            if members.isEmpty { architecture = newValue } else { members[0].architecture = newValue }
        }
    }
}
