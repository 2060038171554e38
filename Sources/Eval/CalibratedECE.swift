import PoseCore

/// The expected calibration error that a *calibrated* model with the same confidences would
/// show on as many samples: its sampling distribution, simulated.
///
/// The ECE of a finite sample is not 0 even for a perfectly calibrated model: with 99
/// sequences a bin of 10 samples at confidence 0.9 holds 8 or 10 right answers about as often
/// as 9. To tell a miscalibrated model from a small test set, each draw makes every sample i
/// right with probability `c_i` (its top-class confidence, what a calibrated model means by
/// it), independently, and computes the ECE with the same bins (`Metrics.calibration`). The
/// median and the central interval at the report's confidence level of `draws` such draws are
/// kept; a measured ECE above `upper` is more than sampling alone explains.
public struct CalibratedECE: Codable, Hashable, Sendable {
    /// Median of the simulated ECEs.
    public var median: Double
    /// Central interval of the simulated ECEs at the report's confidence level (quantiles
    /// `(1 − confidence)/2` and `1 − (1 − confidence)/2`, numpy's linear interpolation).
    public var lower: Double
    public var upper: Double
    /// How many samples of a calibrated model were drawn.
    public var draws: Int

    public init(median: Double, lower: Double, upper: Double, draws: Int) {
        self.median = median
        self.lower = lower
        self.upper = upper
        self.draws = draws
    }

    /// Where a measured ECE lies against the interval.
    public enum Verdict: String, Sendable {
        /// Above the upper end: the probabilities are off by more than sampling explains.
        case above
        /// Within the interval (or below it): sampling alone gives an ECE this large.
        case within
        /// Below the lower end: closer to the confidences than a calibrated model usually is.
        case below
    }

    public func verdict(_ measured: Double) -> Verdict {
        measured > upper ? .above : measured < lower ? .below : .within
    }

    /// At most this many draws; fewer for large sample counts (`draws(samples:)`).
    public static let defaultDraws = 1000
    /// The fewest draws, however many samples.
    public static let minimumDraws = 100
    /// The stream derived from a level's bootstrap seed for the draws
    /// (`SeededGenerator.derive(levelSeed, 3)`), apart from the bootstrap's own.
    public static let stream: UInt64 = 3
    /// Samples × draws budget: about 0.05 s in a release build (some 4 ns a sample).
    static let work = 10_000_000

    /// Draws for `n` samples: `defaultDraws` up to 10,000 samples, then fewer so that the
    /// simulation keeps to about `work` Bernoulli draws (500 at 20,000 samples), never fewer
    /// than `minimumDraws` (from 100,000 samples on, where the time grows with n again).
    public static func draws(samples n: Int) -> Int {
        min(defaultDraws, max(minimumDraws, work / max(n, 1)))
    }

    /// Simulates the ECE of a calibrated model whose top-class confidences are `confidences`,
    /// with `bins` equal-width bins as `Metrics.calibration` (bin b holds `(b/M, (b+1)/M]`,
    /// 0 in the first bin). Deterministic for a seed: one `SeededGenerator`; in each draw,
    /// bin by bin and within a bin in sample order, one uniform `u` in [0, 1) (53 bits, as
    /// `nextUnitDouble`) per sample, right when `u < c_i`.
    public static func simulate(
        confidences: [Double], bins M: Int = Metrics.calibrationBins, draws R: Int, seed: UInt64, confidence: Double = 0.95
    ) -> CalibratedECE {
        let n = confidences.count
        guard n > 0, R > 0, M > 0 else { return CalibratedECE(median: 0, lower: 0, upper: 0, draws: max(R, 0)) }
        // The samples grouped by bin, each as the integer threshold of its 53-bit draw:
        // x · 2⁻⁵³ < c  ⇔  x < ⌈c · 2⁵³⌉ for an integer x.
        var members = [[Double]](repeating: [], count: M), confidenceSum = [Double](repeating: 0, count: M)
        for c in confidences {
            let b = Metrics.calibrationBin(c, bins: M)
            members[b].append(c)
            confidenceSum[b] += c
        }
        var thresholds: [UInt64] = [], ends: [Int] = []
        thresholds.reserveCapacity(n)
        for b in 0..<M {
            for c in members[b] { thresholds.append(UInt64((min(1, max(0, c)) * 0x1p53).rounded(.up))) }
            ends.append(thresholds.count)
        }
        var g = SeededGenerator(seed: seed)
        var eces = [Double]()
        eces.reserveCapacity(R)
        thresholds.withUnsafeBufferPointer { t in
            for _ in 0..<R {
                // Σ_b (n_b/n)·|right_b/n_b − sum_b/n_b| = Σ_b |right_b − sum_b| / n.
                var sum = 0.0, start = 0
                for b in 0..<M {
                    var right = 0
                    for i in start..<ends[b] { right &+= (g.next() >> 11) < t[i] ? 1 : 0 }
                    start = ends[b]
                    sum += abs(Double(right) - confidenceSum[b])
                }
                eces.append(sum / Double(n))
            }
        }
        eces.sort()
        let tail = (1 - confidence) / 2
        return CalibratedECE(
            median: Bootstrap.percentile(eces, 0.5), lower: Bootstrap.percentile(eces, tail),
            upper: Bootstrap.percentile(eces, 1 - tail), draws: R)
    }

    /// The top-class confidence of every row (`probabilities[n, K]`, `predicted[n]`).
    public static func confidences(predicted: [Int32], probabilities: [Float], classes K: Int) -> [Double] {
        predicted.enumerated().map { Double(probabilities[$0.offset * K + Int($0.element)]) }
    }

    /// `[lower, upper]` with `digits` decimals.
    public func range(digits: Int = 4) -> String { "[\(Text.fixed(lower, digits)), \(Text.fixed(upper, digits))]" }

    /// `median [lower, upper]` with `digits` decimals, as the reports' rows show it.
    public func summary(digits: Int = 4) -> String { "\(Text.fixed(median, digits)) " + range(digits: digits) }

    /// What the draws were, for a report's note under the sentence.
    public var method: String { "A calibrated model: each sample right with the probability of its predicted class, \(draws) draws." }

    /// One sentence on a measured ECE against the interval, for the reports: whether the
    /// probabilities are off by more than a sample of this size explains.
    public func sentence(measured: Double, samples: Int, unit: String, confidence: Double, digits: Int = 4) -> String {
        let pct = "\(Int((confidence * 100).rounded()))%"
        let interval = range(digits: digits)
        let ece = "ECE \(Text.fixed(measured, digits))"
        let sample = "\(samples) \(unit)\(samples == 1 ? "" : "s")"
        switch verdict(measured) {
        case .above:
            return "\(ece) is above the \(pct) range of a calibrated model's ECE on \(sample) \(interval): "
                + "the probabilities are off by more than a sample this size explains."
        case .within:
            return "\(ece) is within the \(pct) range of a calibrated model's ECE on \(sample) \(interval): "
                + "sampling alone gives an ECE this large."
        case .below:
            return "\(ece) is below the \(pct) range of a calibrated model's ECE on \(sample) \(interval): "
                + "within what sampling alone gives."
        }
    }
}
