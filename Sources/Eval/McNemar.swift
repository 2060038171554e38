import Foundation

/// McNemar's test for two classifiers on the same samples.
///
/// Only the discordant pairs matter: `b` = samples the baseline gets right and the candidate
/// gets wrong, `c` = samples the baseline gets wrong and the candidate gets right. Under the
/// null hypothesis (equal error rates) each discordant pair is a fair coin, so
/// `b ~ Binomial(b + c, 1/2)`.
///
/// - With `b + c < 25` (`exactBelow`) the p-value is the exact two-sided binomial test:
///   `p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(n, i) / 2^n)` with `n = b + c`.
/// - Otherwise it is the chi-square test with Edwards' continuity correction:
///   `χ² = max(0, |b − c| − 1)² / (b + c)` with one degree of freedom,
///   `p = P(χ²₁ ≥ χ²) = erfc(√(χ²/2))`.
/// - With no discordant pair, `p = 1`.
///
/// The test is two-sided; the gate also requires the candidate to be the worse one (`b > c`).
/// Pairs must be independent: run it on sequences, not on overlapping windows of one sequence.
public struct McNemar: Codable, Hashable, Sendable {
    public enum Method: String, Codable, Sendable {
        case exactBinomial = "exact binomial"
        case chiSquareCorrected = "chi-square with continuity correction"
    }

    public static let exactBelow = 25

    /// Baseline right, candidate wrong.
    public var baselineOnly: Int
    /// Baseline wrong, candidate right.
    public var candidateOnly: Int
    public var pValue: Double
    public var method: Method
    /// The chi-square statistic (nil for the exact test).
    public var statistic: Double?

    public init(baselineOnly b: Int, candidateOnly c: Int) {
        baselineOnly = b
        candidateOnly = c
        let n = b + c
        if n < McNemar.exactBelow {
            method = .exactBinomial
            statistic = nil
            pValue = n == 0 ? 1 : min(1, 2 * McNemar.binomialCDF(min(b, c), n))
        } else {
            method = .chiSquareCorrected
            let d = max(0, Double(abs(b - c)) - 1)
            let chi2 = d * d / Double(n)
            statistic = chi2
            pValue = erfc((chi2 / 2).squareRoot())
        }
    }

    /// Counts the discordant pairs of two prediction vectors against the same truth.
    public init(truth: [Int32], baseline: [Int32], candidate: [Int32]) {
        var b = 0, c = 0
        for i in truth.indices {
            let ra = baseline[i] == truth[i], rb = candidate[i] == truth[i]
            if ra && !rb { b += 1 }
            if !ra && rb { c += 1 }
        }
        self.init(baselineOnly: b, candidateOnly: c)
    }

    /// `P(X ≤ k)` for `X ~ Binomial(n, 1/2)`, summed in log space (stable for any n).
    static func binomialCDF(_ k: Int, _ n: Int) -> Double {
        var sum = 0.0
        let logHalfN = Double(n) * log(0.5)
        for i in 0...k {
            sum += exp(lgamma(Double(n + 1)) - lgamma(Double(i + 1)) - lgamma(Double(n - i + 1)) + logHalfN)
        }
        return sum
    }

    /// One line: counts, method and p-value.
    public var summary: String {
        "baseline right/candidate wrong \(baselineOnly), baseline wrong/candidate right \(candidateOnly), \(method.rawValue) \(Text.p(pValue))"
    }
}
