/// Two reports on the same samples, paired sample by sample at one level.
///
/// Construction refuses reports that must not be compared: other schema, other label sets,
/// other datasets (content hash) or splits, a level one of them lacks, or samples that do not
/// pair up one to one with the same true labels. Classes are matched by name, so the
/// candidate's classes may come in another order; everything is in the baseline's order.
public struct Comparison: Sendable {
    public let baseline: EvalReport
    public let candidate: EvalReport
    /// Names used in messages (file paths).
    public let baselineName: String
    public let candidateName: String
    public let level: Level
    public let classes: [String]
    /// Paired samples, in the baseline's order: true class, both predictions (baseline class
    /// indices), and the bootstrap unit (sequence) of each.
    public let truth: [Int32]
    public let baselinePredicted: [Int32]
    public let candidatePredicted: [Int32]
    public let unit: [Int]
    public let unitCount: Int
    /// McNemar's test on all paired samples, and per true class (the recall's samples).
    public let mcnemar: McNemar
    public let classMcNemar: [McNemar]
    /// Paired bootstrap interval of `candidate − baseline` (nil when resamples = 0), seeded
    /// with the candidate's bootstrap seed unless one is given.
    public let accuracyChange: Interval?
    public let macroF1Change: Interval?
    /// Confidence level of the change intervals (1 − α of the gate).
    public let confidence: Double
    public let resamples: Int

    public var baselineMetrics: LevelMetrics { baseline.metrics(level)! }
    public var candidateMetrics: LevelMetrics { candidate.metrics(level)! }

    /// Pairs the two reports at `level` (nil: the headline level, which must agree).
    public init(
        baseline: EvalReport, candidate: EvalReport, baselineName: String = "baseline", candidateName: String = "candidate",
        level requested: Level? = nil, confidence: Double = 0.95, resamples: Int? = nil, seed: UInt64? = nil
    ) throws {
        self.baseline = baseline
        self.candidate = candidate
        self.baselineName = baselineName
        self.candidateName = candidateName
        func refuse(_ why: String) -> EvalError { .incomparable("\(baselineName) and \(candidateName): \(why)") }

        // Labels: the same set, matched by name.
        let a = Set(baseline.classes), b = Set(candidate.classes)
        guard a == b else {
            let onlyA = a.subtracting(b).sorted(), onlyB = b.subtracting(a).sorted()
            throw refuse(
                "the label sets differ (only in the baseline: \(onlyA.isEmpty ? "none" : onlyA.joined(separator: ", ")); only in the candidate: \(onlyB.isEmpty ? "none" : onlyB.joined(separator: ", "))); compare models trained on the same classes")
        }
        // Data: the same dataset content and split.
        if let ha = baseline.data.hash, let hb = candidate.data.hash, ha != hb {
            throw refuse(
                "they evaluate different datasets ('\(baseline.data.name)' \(ha) vs '\(candidate.data.name)' \(hb)); evaluate both models on the same data file")
        }
        guard baseline.data.split == candidate.data.split else {
            throw refuse(
                "they evaluate different splits (\(baseline.data.split ?? "all") vs \(candidate.data.split ?? "all")); evaluate both on the same split")
        }
        let level = requested ?? baseline.headline
        guard requested != nil || baseline.headline == candidate.headline else {
            throw refuse("their headline levels differ (\(baseline.headline.rawValue) vs \(candidate.headline.rawValue)); choose the level to compare")
        }
        guard let pa = baseline.predictions?.table(level), let pb = candidate.predictions?.table(level),
            baseline.metrics(level) != nil, candidate.metrics(level) != nil
        else {
            let missing = baseline.predictions?.table(level) == nil || baseline.metrics(level) == nil ? baselineName : candidateName
            throw refuse("\(missing) has no \(level.rawValue)-level predictions to pair")
        }
        self.level = level
        classes = baseline.classes
        let remap = candidate.classes.map { Int32(baseline.classes.firstIndex(of: $0)!) }

        // Samples: the windows always pair one to one (same data, split, stride and window),
        // then the samples of the compared level.
        if level == .sequence, let wa = baseline.predictions?.window, let wb = candidate.predictions?.window {
            _ = try Comparison.pair(wa, wb, level: .window, remap: remap, classes: classes, refuse: refuse)
        }
        let match = try Comparison.pair(pa, pb, level: level, remap: remap, classes: classes, refuse: refuse)
        let truth = pa.truth
        let pb2 = match.map { remap[Int(pb.predicted[$0])] }
        self.truth = truth
        baselinePredicted = pa.predicted
        candidatePredicted = pb2
        let (ids, units) = pa.units()
        self.unit = units
        unitCount = ids.count
        mcnemar = McNemar(truth: truth, baseline: pa.predicted, candidate: pb2)
        classMcNemar = classes.indices.map { k in
            let idx = truth.indices.filter { truth[$0] == Int32(k) }
            return McNemar(truth: idx.map { truth[$0] }, baseline: idx.map { pa.predicted[$0] }, candidate: idx.map { pb2[$0] })
        }
        self.confidence = confidence
        let B = resamples ?? Bootstrap.defaultResamples
        self.resamples = B
        if B > 0 {
            let d = Bootstrap.pairedDifference(
                unit: units, unitCount: ids.count, truth: truth, baseline: pa.predicted, candidate: pb2,
                classes: classes.count, resamples: B, seed: seed ?? candidate.settings.seed, confidence: confidence)
            accuracyChange = d.accuracy
            macroF1Change = d.macroF1
        } else {
            accuracyChange = nil
            macroF1Change = nil
        }
    }

    /// For each baseline sample, the index of the same sample in the candidate: windows by
    /// (sequence, start, occurrence), sequences by id. Refuses unmatched samples and samples
    /// whose true label differs.
    static func pair(
        _ pa: PredictionTable, _ pb: PredictionTable, level: Level, remap: [Int32], classes: [String],
        refuse: (String) -> EvalError
    ) throws -> [Int] {
        func keys(_ t: PredictionTable) -> [String] {
            var seen: [String: Int] = [:]
            return (0..<t.count).map { i in
                let base = level == .window ? "\(t.sequence[i])\u{0}\(t.start?[i] ?? 0)" : t.sequence[i]
                let n = seen[base, default: 0]
                seen[base] = n + 1
                return "\(base)\u{0}\(n)"
            }
        }
        func describe(_ key: String) -> String {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
            return level == .window ? "sequence '\(parts[0])' window at frame \(parts[1])" : "sequence '\(parts[0])'"
        }
        let ka = keys(pa), kb = keys(pb)
        var indexB: [String: Int] = [:]
        for (i, k) in kb.enumerated() { indexB[k] = i }
        let missingInB = ka.filter { indexB[$0] == nil }
        if !missingInB.isEmpty || pa.count != pb.count {
            let setA = Set(ka)
            let missingInA = kb.filter { !setA.contains($0) }
            var why = "they hold different samples (\(pa.count) vs \(pb.count) \(level.rawValue)s"
            if let first = missingInB.first { why += "; \(missingInB.count) of the baseline's are not in the candidate, e.g. \(describe(first))" }
            if let first = missingInA.first { why += "; \(missingInA.count) of the candidate's are not in the baseline, e.g. \(describe(first))" }
            why += "); evaluate with the same data, split and stride"
            throw refuse(why)
        }
        return try ka.indices.map { i in
            let j = indexB[ka[i]]!
            let tb = remap[Int(pb.truth[j])]
            guard tb == pa.truth[i] else {
                throw refuse(
                    "\(describe(ka[i])) is '\(classes[Int(pa.truth[i])])' in the baseline but '\(classes[Int(tb)])' in the candidate; the labels of the data changed")
            }
            return j
        }
    }

    /// Per-class metrics of the candidate in the baseline's class order.
    public func candidateClass(_ k: Int) -> ClassificationReport.ClassMetrics {
        candidateMetrics.classes.first { $0.label == classes[k] }!
    }

    /// Windows of one sequence are not independent; McNemar on windows then overstates
    /// significance. True when the pairs are windows that share sequences.
    public var pairsShareSequences: Bool { level == .window && unitCount < truth.count }

    /// The confusion matrix change `candidate − baseline` (counts, baseline class order).
    public var confusionChange: [[Int]] {
        var d = baselineMetrics.confusion.map { $0.map { -$0 } }
        for i in truth.indices { d[Int(truth[i])][Int(candidatePredicted[i])] += 1 }
        return d
    }
}
