import PoseCore

/// A two-sided confidence interval.
public struct Interval: Codable, Hashable, Sendable {
    public var low: Double
    public var high: Double

    public init(low: Double, high: Double) {
        self.low = low
        self.high = high
    }

    public func contains(_ v: Double) -> Bool { low <= v && v <= high }
}

/// Seeded percentile bootstrap over *units* (clusters of samples).
///
/// Windows cut from one sequence are not independent, so the resampling unit is the
/// sequence: each resample draws `U` sequences with replacement from the `U` sequences and
/// takes all of their windows (a cluster bootstrap). At the sequence level every unit is one
/// sample. The interval is the percentile interval: the `α/2` and `1 − α/2` quantiles of the
/// `B` resampled statistics, with numpy's default linear interpolation between order
/// statistics (quantile q at position `q·(B−1)` of the sorted values).
///
/// Randomness comes from `SeededGenerator`; the same seed, units and predictions give the
/// same interval on every platform.
public enum Bootstrap {
    public static let defaultResamples = 1000

    /// For each unit, the non-zero cells of its confusion matrix (`t·K + p`, count), stored
    /// compactly: unit u owns `cells[offsets[u] ..< offsets[u + 1]]`.
    struct Units {
        var offsets: [Int] = [0]
        var cells: [Int] = []
        var counts: [Int] = []
        let K: Int
        var count: Int { offsets.count - 1 }

        /// `unit[i]` in `0..<unitCount` for each sample i.
        init(unit: [Int], unitCount: Int, truth: [Int32], predicted: [Int32], classes K: Int) {
            self.K = K
            var members = [[Int]](repeating: [], count: unitCount)
            for (i, u) in unit.enumerated() { members[u].append(i) }
            var local: [Int: Int] = [:]
            for m in members {
                local.removeAll(keepingCapacity: true)
                for i in m { local[Int(truth[i]) * K + Int(predicted[i]), default: 0] += 1 }
                for (cell, n) in local.sorted(by: { $0.key < $1.key }) {
                    cells.append(cell)
                    counts.append(n)
                }
                offsets.append(cells.count)
            }
        }

        @inline(__always)
        func add(_ u: Int, into c: inout Tally) {
            for j in offsets[u]..<offsets[u + 1] {
                let (t, p) = cells[j].quotientAndRemainder(dividingBy: K), n = counts[j]
                c.rows[t] += n
                c.columns[p] += n
                if t == p { c.right[t] += n }
            }
        }
    }

    /// A resample's totals by class: samples of each true class (`rows`), of each predicted
    /// class (`columns`) and right (`right`), all that accuracy and macro-F1 need; O(K) a
    /// resample where a K × K confusion matrix was O(K²) (10,000 classes: 10⁸ cells a
    /// resample, hours for 1,000 of them).
    struct Tally {
        var rows: [Int], columns: [Int], right: [Int]
        init(classes K: Int) { (rows, columns, right) = ([Int](repeating: 0, count: K), [Int](repeating: 0, count: K), [Int](repeating: 0, count: K)) }
        mutating func clear() {
            for k in rows.indices { (rows[k], columns[k], right[k]) = (0, 0, 0) }
        }
        var scores: (accuracy: Double, macroF1: Double) { Metrics.accuracyAndMacroF1(rows: rows, columns: columns, right: right) }
    }

    /// Percentile intervals of accuracy and macro-F1 from `resamples` cluster resamples.
    /// `unit[i]` is the unit (e.g. sequence) of sample i, in `0..<unitCount`.
    public static func intervals(
        unit: [Int], unitCount: Int, truth: [Int32], predicted: [Int32], classes K: Int,
        resamples B: Int = defaultResamples, seed: UInt64, confidence: Double = 0.95
    ) -> (accuracy: Interval, macroF1: Interval) {
        let units = Units(unit: unit, unitCount: unitCount, truth: truth, predicted: predicted, classes: K)
        var g = SeededGenerator(seed: seed)
        var acc = [Double](), f1 = [Double]()
        acc.reserveCapacity(B)
        f1.reserveCapacity(B)
        var c = Tally(classes: K)
        for _ in 0..<B {
            c.clear()
            for _ in 0..<units.count { units.add(g.nextInt(below: units.count), into: &c) }
            let s = c.scores
            acc.append(s.accuracy)
            f1.append(s.macroF1)
        }
        return (interval(acc, confidence), interval(f1, confidence))
    }

    /// Paired bootstrap of the difference `candidate − baseline` in accuracy and macro-F1:
    /// each resample draws the same units for both models, so the interval reflects only the
    /// samples on which the two disagree.
    public static func pairedDifference(
        unit: [Int], unitCount: Int, truth: [Int32], baseline: [Int32], candidate: [Int32], classes K: Int,
        resamples B: Int = defaultResamples, seed: UInt64, confidence: Double = 0.95
    ) -> (accuracy: Interval, macroF1: Interval) {
        let a = Units(unit: unit, unitCount: unitCount, truth: truth, predicted: baseline, classes: K)
        let b = Units(unit: unit, unitCount: unitCount, truth: truth, predicted: candidate, classes: K)
        var g = SeededGenerator(seed: seed)
        var dAcc = [Double](), dF1 = [Double]()
        var ca = Tally(classes: K), cb = ca
        for _ in 0..<B {
            ca.clear()
            cb.clear()
            for _ in 0..<a.count {
                let u = g.nextInt(below: a.count)
                a.add(u, into: &ca)
                b.add(u, into: &cb)
            }
            let sa = ca.scores, sb = cb.scores
            dAcc.append(sb.accuracy - sa.accuracy)
            dF1.append(sb.macroF1 - sa.macroF1)
        }
        return (interval(dAcc, confidence), interval(dF1, confidence))
    }

    static func interval(_ values: [Double], _ confidence: Double) -> Interval {
        let s = values.sorted(), tail = (1 - confidence) / 2
        return Interval(low: percentile(s, tail), high: percentile(s, 1 - tail))
    }

    /// Quantile `q` of sorted values with linear interpolation (numpy's default method).
    public static func percentile(_ sorted: [Double], _ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let h = q * Double(sorted.count - 1)
        let lo = Int(h.rounded(.down)), hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (h - Double(lo)) * (sorted[hi] - sorted[lo])
    }
}
