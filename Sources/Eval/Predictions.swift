/// The two levels at which a model is scored.
public enum Level: String, Codable, Sendable, CaseIterable {
    /// Every window cut from the evaluated sequences is one sample.
    case window
    /// Every sequence is one sample: its probabilities are the mean of its windows'
    /// probabilities and its prediction the most probable class of that mean.
    case sequence
}

/// Per-sample predictions at one level, stored by column. Shapes: `n` samples, `K` classes;
/// `probabilities` is `[n, K]` row-major.
public struct PredictionTable: Hashable, Sendable {
    /// Sequence id of each sample.
    public var sequence: [String]
    /// Start frame of each window (window level only).
    public var start: [Int]?
    /// Number of windows averaged into each sequence (sequence level only).
    public var windows: [Int]?
    /// True class index of each sample.
    public var truth: [Int32]
    /// Predicted class index: the most probable class, lowest index on ties.
    public var predicted: [Int32]
    public var probabilities: [Float]
    public let classCount: Int

    public var count: Int { truth.count }

    /// Window-level predictions. Validates the shapes, the class indices and that every
    /// probability row is a distribution; computes the predicted classes.
    public init(sequence: [String], start: [Int], truth: [Int32], probabilities: [Float], classes K: Int) throws {
        guard K > 0 else { throw EvalError.noClasses }
        let n = truth.count
        guard probabilities.count == n * K else {
            throw EvalError.mismatchedLengths(truth: n, predicted: probabilities.count / K)
        }
        guard sequence.count == n, start.count == n else {
            throw EvalError.mismatchedSamples("\(n) samples but \(sequence.count) sequence ids and \(start.count) window starts")
        }
        for t in truth where t < 0 || Int(t) >= K { throw EvalError.classOutOfRange(index: Int(t), classes: K) }
        try Metrics.validate(probabilities: probabilities, classes: K)
        self.sequence = sequence
        self.start = start
        self.windows = nil
        self.truth = truth
        self.probabilities = probabilities
        self.classCount = K
        self.predicted = Metrics.predictions(probabilities, classes: K)
    }

    /// A table whose predictions are already known (decoded from a report).
    init(
        sequence: [String], start: [Int]?, windows: [Int]?, truth: [Int32], predicted: [Int32], probabilities: [Float],
        classes K: Int
    ) {
        self.sequence = sequence
        self.start = start
        self.windows = windows
        self.truth = truth
        self.predicted = predicted
        self.probabilities = probabilities
        self.classCount = K
    }

    /// Sequence ids in order of first appearance and the unit (sequence) index of each sample.
    public func units() -> (ids: [String], unit: [Int]) {
        var index: [String: Int] = [:], ids: [String] = []
        let unit = sequence.map { s -> Int in
            if let u = index[s] { return u }
            index[s] = ids.count
            ids.append(s)
            return ids.count - 1
        }
        return (ids, unit)
    }

    /// Sequence-level predictions: one row per sequence (in order of first appearance), its
    /// probabilities the mean of its windows' rows. Nil when some sequence holds windows of
    /// different true classes (then a sequence has no single label).
    public func aggregatedBySequence() -> PredictionTable? {
        let K = classCount
        let (ids, unit) = units()
        var sums = [Double](repeating: 0, count: ids.count * K)
        var counts = [Int](repeating: 0, count: ids.count)
        var truth = [Int32](repeating: -1, count: ids.count)
        for i in 0..<count {
            let u = unit[i]
            if truth[u] == -1 { truth[u] = self.truth[i] } else if truth[u] != self.truth[i] { return nil }
            counts[u] += 1
            for k in 0..<K { sums[u * K + k] += Double(probabilities[i * K + k]) }
        }
        var mean = [Float](repeating: 0, count: ids.count * K)
        for u in ids.indices {
            for k in 0..<K { mean[u * K + k] = Float(sums[u * K + k] / Double(counts[u])) }
        }
        return PredictionTable(
            sequence: ids, start: nil, windows: counts, truth: truth, predicted: Metrics.predictions(mean, classes: K),
            probabilities: mean, classes: K)
    }
}
