import PoseCore

/// A two-way split of sequence indices (sorted), with warnings about its classes.
public struct Split: Equatable, Sendable {
    public var first: [Int]
    public var second: [Int]
    public var warnings: [SplitWarning]
}

/// One fold of a cross-validation: train on `train`, test on `test` (sorted indices).
public struct Fold: Equatable, Sendable {
    public var name: String
    public var train: [Int]
    public var test: [Int]

    public init(name: String, train: [Int], test: [Int]) {
        self.name = name
        self.train = train
        self.test = test
    }
}

/// Something a split could not do well; training can still proceed.
public enum SplitWarning: Equatable, Sendable, CustomStringConvertible {
    /// No sequence of `class` landed in `part` (e.g. "validation", "fold 2 test").
    case classMissing(class: String, part: String)

    public var description: String {
        switch self {
        case .classMissing(let c, let part):
            return "class '\(c)' has no sequence in \(part); its metrics there will be empty (too few sequences or groups of that class)"
        }
    }
}

/// Train/validation/test splits and cross-validation folds (docs/preprocessing.md, "Splits").
///
/// When sequences have groups (subjects, sessions), whole groups are assigned, so that no
/// group is on both sides; sequences without a group count as groups of one. Assignment is
/// seeded and stratified as well as the groups allow: groups are taken largest first (ties in
/// seeded random order) and each goes to the part where it most reduces
/// `sum over parts p, classes c of ((n_pc - t_pc) / N_c)^2` (n = assigned, t = target count,
/// N = class total); then single moves and pairwise swaps that reduce it are applied until
/// none does. Without groups this gives every part its share of every class to within one.
public enum Splits {
    /// Sequence indices by the split the data gives (`train`, `validation`, `test`, ...);
    /// sequences without one are left out.
    public static func given(_ dataset: Dataset) -> [String: [Int]] {
        var out: [String: [Int]] = [:]
        for (i, s) in dataset.sequences.enumerated() {
            if let split = s.split { out[split, default: []].append(i) }
        }
        return out
    }

    /// A seeded, stratified, group-aware split of `indices`: `fraction` of each class goes to
    /// the second part (named `names.1` in warnings).
    ///
    /// Throws when `fraction` is not in [0, 1), or when a non-zero share cannot be held out
    /// (fewer than 2 groups). Warns for each class absent from a part.
    public static func split(
        _ dataset: Dataset, indices: [Int], fraction: Double, seed: UInt64,
        names: (String, String) = ("train", "validation")
    ) throws -> Split {
        guard fraction.isFinite && fraction >= 0 && fraction < 1 else {
            throw DatasetError.split("the held-out fraction must be in [0, 1), got \(fraction)")
        }
        if fraction == 0 || indices.isEmpty { return Split(first: indices.sorted(), second: [], warnings: []) }
        let problem = Problem(dataset, indices)
        guard problem.units.count >= 2 else {
            throw DatasetError.split(
                "\(dataset.name): cannot hold out a \(names.1) share: \(problemDescription(problem)); add groups or give the split in the data"
            )
        }
        let shares = [1 - fraction, fraction]
        let parts = problem.assign(shares: shares, seed: seed)
        let first = problem.members(of: 0, parts), second = problem.members(of: 1, parts)
        return Split(
            first: first, second: second,
            warnings: problem.missingClasses(parts, partNames: [names.0, names.1]))
    }

    /// Compatibility form of `split`: on an impossible split, everything stays in the first part.
    public static func stratified(
        _ dataset: Dataset, indices: [Int], fraction: Double, seed: UInt64
    ) -> (first: [Int], second: [Int]) {
        guard let s = try? split(dataset, indices: indices, fraction: fraction, seed: seed) else {
            return (indices.sorted(), [])
        }
        return (s.first, s.second)
    }

    /// Stratified, group-aware k-fold cross-validation: `k` parts of about equal size with
    /// every class spread evenly; fold i tests on part i and trains on the rest. Every index
    /// is tested exactly once.
    ///
    /// Throws when k < 2 or there are fewer groups (or sequences) than folds.
    public static func kFold(
        _ dataset: Dataset, indices: [Int], k: Int, seed: UInt64
    ) throws -> (folds: [Fold], warnings: [SplitWarning]) {
        guard k >= 2 else { throw DatasetError.split("k-fold needs k >= 2, got \(k)") }
        let problem = Problem(dataset, indices)
        guard problem.units.count >= k else {
            throw DatasetError.split(
                "\(dataset.name): \(k)-fold cross-validation needs at least \(k) groups, but \(problemDescription(problem)); use fewer folds"
            )
        }
        let parts = problem.assign(shares: [Double](repeating: 1 / Double(k), count: k), seed: seed)
        let all = Set(indices)
        var folds: [Fold] = []
        for p in 0..<k {
            let test = problem.members(of: p, parts)
            folds.append(Fold(name: "fold \(p + 1)", train: all.subtracting(test).sorted(), test: test))
        }
        let warnings = problem.missingClasses(parts, partNames: (1...k).map { "fold \($0) test" })
        return (folds, warnings)
    }

    /// Leave-one-group-out: one fold per group (sorted by name), testing on that group.
    ///
    /// Throws when a sequence has no group or there are fewer than 2 groups. Warns when a
    /// class lives in one group only (its fold trains without that class).
    public static func leaveOneGroupOut(
        _ dataset: Dataset, indices: [Int]
    ) throws -> (folds: [Fold], warnings: [SplitWarning]) {
        var byGroup: [String: [Int]] = [:]
        for i in indices {
            guard let g = dataset.sequences[i].group else {
                throw DatasetError.split(
                    "\(dataset.name): sequence '\(dataset.sequences[i].id)' has no group; leave-one-group-out needs a group (subject/session) on every sequence"
                )
            }
            byGroup[g, default: []].append(i)
        }
        guard byGroup.count >= 2 else {
            throw DatasetError.split(
                "\(dataset.name): leave-one-group-out needs at least 2 groups, found \(byGroup.count)")
        }
        var folds: [Fold] = []
        var warnings: [SplitWarning] = []
        let all = Set(indices)
        for g in byGroup.keys.sorted() {
            let test = byGroup[g]!.sorted()
            let train = all.subtracting(test).sorted()
            folds.append(Fold(name: g, train: train, test: test))
            let trainClasses = Set(train.compactMap { dataset.sequences[$0].label })
            for c in Set(test.compactMap { dataset.sequences[$0].label }).subtracting(trainClasses).sorted() {
                warnings.append(.classMissing(class: c, part: "the training part of fold '\(g)'"))
            }
        }
        return (folds, warnings)
    }

    private static func problemDescription(_ p: Problem) -> String {
        let n = p.units.reduce(0) { $0 + $1.members.count }
        if p.units.count == 1, let g = p.units.first?.name, !g.hasPrefix("\u{0}") {
            return "all \(n) sequences belong to group '\(g)'"
        }
        return "the \(n) sequences form only \(p.units.count) group\(p.units.count == 1 ? "" : "s")"
    }
}

/// The assignment problem: units (groups) with per-class counts, to be spread over parts.
private struct Problem {
    struct Unit {
        var name: String
        var members: [Int]
        var counts: [Double]  // per class
    }
    var units: [Unit]
    var classNames: [String]
    var totals: [Double]  // N_c
    var weights: [Double]  // 1 / N_c^2

    init(_ dataset: Dataset, _ indices: [Int]) {
        // Classes: the dataset's order, then labels outside it, then unlabeled ("").
        var names = dataset.classes
        var classIndex: [String: Int] = [:]
        for (i, c) in names.enumerated() { classIndex[c] = i }
        for i in indices {
            let l = dataset.sequences[i].label ?? ""
            if classIndex[l] == nil {
                classIndex[l] = names.count
                names.append(l)
            }
        }
        var byName: [String: Unit] = [:]
        for i in indices {
            let s = dataset.sequences[i]
            let key = s.group ?? "\u{0}#\(i)"
            var u = byName[key] ?? Unit(name: key, members: [], counts: [Double](repeating: 0, count: names.count))
            u.members.append(i)
            u.counts[classIndex[s.label ?? ""]!] += 1
            byName[key] = u
        }
        units = byName.keys.sorted().map { byName[$0]! }
        classNames = names
        totals = [Double](repeating: 0, count: names.count)
        for u in units { for c in names.indices { totals[c] += u.counts[c] } }
        weights = totals.map { $0 > 0 ? 1 / ($0 * $0) : 0 }
    }

    /// The part of each unit.
    func assign(shares: [Double], seed: UInt64) -> [Int] {
        let P = shares.count, K = classNames.count, U = units.count
        let targets = shares.map { s in totals.map { $0 * s } }  // [P][K]
        var n = [[Double]](repeating: [Double](repeating: 0, count: K), count: P)
        var unitsIn = [Int](repeating: 0, count: P)
        var g = SeededGenerator(seed: seed)
        var shuffled = Array(0..<U)
        shuffled.seededShuffle(using: &g)
        var rank = [Int](repeating: 0, count: U)
        for (r, u) in shuffled.enumerated() { rank[u] = r }
        let order = (0..<U).sorted {
            let a = units[$0].members.count, b = units[$1].members.count
            return a != b ? a > b : rank[$0] < rank[$1]
        }

        /// Change of the cost when `delta` (per class) is added to part p.
        func gain(_ p: Int, _ delta: [Double], sign: Double) -> Double {
            var s = 0.0
            for c in 0..<K where delta[c] != 0 {
                let before = n[p][c] - targets[p][c], after = before + sign * delta[c]
                s += weights[c] * (after * after - before * before)
            }
            return s
        }

        var part = [Int](repeating: -1, count: U)
        for u in order {
            var best = -1, bestCost = Double.infinity, bestDeficit = -Double.infinity
            for p in 0..<P where shares[p] > 0 {
                let cost = gain(p, units[u].counts, sign: 1)
                let deficit = targets[p].reduce(0, +) - n[p].reduce(0, +)
                if cost < bestCost - 1e-12 || (abs(cost - bestCost) <= 1e-12 && deficit > bestDeficit) {
                    (best, bestCost, bestDeficit) = (p, cost, deficit)
                }
            }
            part[u] = best
            for c in 0..<K { n[best][c] += units[u].counts[c] }
            unitsIn[best] += 1
        }

        func move(_ u: Int, to q: Int) {
            let p = part[u]
            for c in 0..<K {
                n[p][c] -= units[u].counts[c]
                n[q][c] += units[u].counts[c]
            }
            unitsIn[p] -= 1
            unitsIn[q] += 1
            part[u] = q
        }

        // Local improvement: moves, then swaps, until neither helps (bounded).
        for _ in 0..<50 {
            var improved = false
            for u in order {
                let p = part[u]
                guard unitsIn[p] > 1 else { continue }
                var best = -1, bestDelta = -1e-12
                for q in 0..<P where q != p && shares[q] > 0 {
                    let d = gain(q, units[u].counts, sign: 1) + gain(p, units[u].counts, sign: -1)
                    if d < bestDelta { (best, bestDelta) = (q, d) }
                }
                if best >= 0 {
                    move(u, to: best)
                    improved = true
                }
            }
            if U <= 400 {
                for a in 0..<U {
                    for b in (a + 1)..<U where part[a] != part[b] {
                        let p = part[a], q = part[b]
                        let diff = (0..<K).map { units[a].counts[$0] - units[b].counts[$0] }
                        let d = gain(q, diff, sign: 1) + gain(p, diff, sign: -1)
                        if d < -1e-12 {
                            move(a, to: q)
                            move(b, to: p)
                            improved = true
                        }
                    }
                }
            }
            if !improved { break }
        }

        // Every part with a share gets at least one unit when there are enough.
        for q in 0..<P where shares[q] > 0 && unitsIn[q] == 0 {
            var best = -1, bestDelta = Double.infinity
            for u in 0..<U where unitsIn[part[u]] > 1 {
                let d = gain(q, units[u].counts, sign: 1) + gain(part[u], units[u].counts, sign: -1)
                if d < bestDelta { (best, bestDelta) = (u, d) }
            }
            if best >= 0 { move(best, to: q) }
        }
        return part
    }

    func members(of p: Int, _ part: [Int]) -> [Int] {
        units.indices.filter { part[$0] == p }.flatMap { units[$0].members }.sorted()
    }

    func missingClasses(_ part: [Int], partNames: [String]) -> [SplitWarning] {
        var warnings: [SplitWarning] = []
        for (p, name) in partNames.enumerated() {
            var has = [Bool](repeating: false, count: classNames.count)
            for u in units.indices where part[u] == p {
                for c in classNames.indices where units[u].counts[c] > 0 { has[c] = true }
            }
            for c in classNames.indices where totals[c] > 0 && !has[c] && !classNames[c].isEmpty {
                warnings.append(.classMissing(class: classNames[c], part: name))
            }
        }
        return warnings
    }
}
