import Foundation
import PoseCore

/// One bin of a reliability diagram.
public struct CalibrationBin: Codable, Hashable, Sendable {
    /// The bin holds confidences in `(lower, upper]` (the first bin also holds 0).
    public var lower: Double
    public var upper: Double
    public var count: Int
    /// Share of the bin's samples whose prediction is right (0 for an empty bin).
    public var accuracy: Double
    /// Mean confidence of the bin's samples (0 for an empty bin).
    public var confidence: Double
}

/// The probabilistic scores of one class (`Metrics.classScores`).
public struct ClassScores: Codable, Hashable, Sendable {
    public var label: String
    /// Samples whose true class it is.
    public var support: Int
    /// Mean `−ln p(class)` over those samples (0 without any): the class's share of the log loss.
    public var logLoss: Double
    /// One-vs-rest Brier score over every sample, `(1/n) Σ_i (p_i[class] − [t_i = class])²`; the
    /// classes' scores add up to the multi-class Brier score.
    public var brier: Double
}

/// Metrics over samples, each a true class index and a probability row. Shapes: `truth[n]`,
/// `probabilities[n, K]` row-major. All sums are in Double.
public enum Metrics {
    /// Smallest probability used by the log loss (scikit-learn clips the same way).
    public static let logLossEpsilon = 1e-15
    /// Number of equal-width confidence bins of the expected calibration error.
    public static let calibrationBins = 15

    /// Predicted class of every row (the lowest index wins a tie).
    public static func predictions(_ probabilities: [Float], classes K: Int) -> [Int32] {
        let n = K == 0 ? 0 : probabilities.count / K
        return (0..<n).map { Int32(argmax(probabilities[($0 * K)..<($0 * K + K)])) }
    }

    /// Top-k accuracy: the share of samples whose true class is among the k most probable.
    /// Ties are ranked as `argmax` breaks them (lower index first), so top-1 equals accuracy:
    /// the rank of the true class t is `#{j : p_j > p_t} + #{j < t : p_j = p_t}`, and the
    /// sample counts when that rank is below k.
    public static func topK(_ k: Int, truth: [Int32], probabilities: [Float], classes K: Int) -> Double {
        guard !truth.isEmpty else { return 0 }
        var hits = 0
        probabilities.withUnsafeBufferPointer { p in
            for (i, t32) in truth.enumerated() {
                let t = Int(t32), row = i * K, pt = p[row + t]
                var rank = 0
                for j in 0..<K where p[row + j] > pt || (j < t && p[row + j] == pt) { rank += 1 }
                if rank < k { hits += 1 }
            }
        }
        return Double(hits) / Double(truth.count)
    }

    /// Mean recall over the classes that have at least one true sample (scikit-learn's
    /// `balanced_accuracy_score`).
    public static func balancedAccuracy(_ m: ConfusionMatrix) -> Double {
        let support = m.support
        let present = m.classes.indices.filter { support[$0] > 0 }
        guard !present.isEmpty else { return 0 }
        return present.reduce(0) { $0 + Double(m.counts[$1][$1]) / Double(support[$1]) } / Double(present.count)
    }

    /// Cohen's kappa between truth and prediction: `κ = (p_o − p_e) / (1 − p_e)` with the
    /// observed agreement `p_o = Σ_k C_kk / n` and the chance agreement
    /// `p_e = Σ_k (row_k / n)(col_k / n)`. When `p_e = 1` (truth and predictions are all one
    /// and the same class) κ is defined as 0.
    public static func cohenKappa(_ m: ConfusionMatrix) -> Double {
        let n = Double(m.total)
        guard n > 0 else { return 0 }
        let rows = m.support, cols = m.predictedCounts
        let po = Double(m.correct) / n
        let pe = m.classes.indices.reduce(0.0) { $0 + Double(rows[$1]) * Double(cols[$1]) } / (n * n)
        return pe >= 1 ? 0 : (po - pe) / (1 - pe)
    }

    /// Mean negative log-likelihood of the true class, natural log:
    /// `−(1/n) Σ_i ln(clip(p_i[t_i], ε, 1))` with ε = 1e-15.
    public static func logLoss(truth: [Int32], probabilities: [Float], classes K: Int) -> Double {
        guard !truth.isEmpty else { return 0 }
        var sum = 0.0
        for (i, t) in truth.enumerated() {
            let p = min(1, max(logLossEpsilon, Double(probabilities[i * K + Int(t)])))
            sum -= log(p)
        }
        return sum / Double(truth.count)
    }

    /// Multi-class Brier score (Brier 1950): `(1/n) Σ_i Σ_k (p_ik − [t_i = k])²`, 0 (certain and
    /// right) to 2 (certain and wrong).
    public static func brier(truth: [Int32], probabilities: [Float], classes K: Int) -> Double {
        guard !truth.isEmpty else { return 0 }
        var sum = 0.0
        for (i, t) in truth.enumerated() {
            for k in 0..<K {
                let d = Double(probabilities[i * K + k]) - (k == Int(t) ? 1 : 0)
                sum += d * d
            }
        }
        return sum / Double(truth.count)
    }

    /// Each class's log loss over its own samples (`logLossEpsilon` clipping, as `logLoss`) and
    /// one-vs-rest Brier score over all samples.
    public static func classScores(truth: [Int32], probabilities: [Float], classes: [String]) -> [ClassScores] {
        let K = classes.count, n = Double(max(truth.count, 1))
        var support = [Int](repeating: 0, count: K), loss = [Double](repeating: 0, count: K), brier = [Double](repeating: 0, count: K)
        for (i, t) in truth.enumerated() {
            support[Int(t)] += 1
            loss[Int(t)] -= log(min(1, max(logLossEpsilon, Double(probabilities[i * K + Int(t)]))))
            for k in 0..<K {
                let d = Double(probabilities[i * K + k]) - (k == Int(t) ? 1 : 0)
                brier[k] += d * d
            }
        }
        return (0..<K).map {
            ClassScores(label: classes[$0], support: support[$0], logLoss: support[$0] == 0 ? 0 : loss[$0] / Double(support[$0]), brier: brier[$0] / n)
        }
    }

    /// Expected calibration error with `bins` equal-width bins over the confidence (the
    /// probability of the predicted class), as in Guo et al. 2017: bin b (0-based) holds
    /// confidences in `(b/M, (b+1)/M]`, confidence 0 goes to the first bin;
    /// `ECE = Σ_b (n_b / n) · |accuracy_b − mean confidence_b|`. Empty bins contribute 0.
    public static func calibration(
        truth: [Int32], predicted: [Int32], probabilities: [Float], classes K: Int, bins M: Int = calibrationBins
    ) -> (ece: Double, bins: [CalibrationBin]) {
        var count = [Int](repeating: 0, count: M), right = [Int](repeating: 0, count: M)
        var confidenceSum = [Double](repeating: 0, count: M)
        for i in truth.indices {
            let c = Double(probabilities[i * K + Int(predicted[i])])
            let b = calibrationBin(c, bins: M)
            count[b] += 1
            confidenceSum[b] += c
            if predicted[i] == truth[i] { right[b] += 1 }
        }
        let n = Double(max(truth.count, 1))
        var ece = 0.0
        let table = (0..<M).map { b -> CalibrationBin in
            let acc = count[b] == 0 ? 0 : Double(right[b]) / Double(count[b])
            let conf = count[b] == 0 ? 0 : confidenceSum[b] / Double(count[b])
            ece += Double(count[b]) / n * abs(acc - conf)
            return CalibrationBin(
                lower: Double(b) / Double(M), upper: Double(b + 1) / Double(M), count: count[b], accuracy: acc, confidence: conf)
        }
        return (ece, table)
    }

    /// The bin of confidence `c` among `M` equal-width bins: `(b/M, (b+1)/M]`, 0 in the first.
    @inline(__always)
    static func calibrationBin(_ c: Double, bins M: Int) -> Int {
        min(M - 1, max(0, Int((c * Double(M)).rounded(.up)) - 1))
    }

    /// Accuracy and macro-F1 straight from a confusion matrix's row sums (samples of each true
    /// class), column sums (of each predicted class) and diagonal (right), with the same
    /// zero-division and averaging policy as `ClassificationReport`. Used by the bootstrap.
    static func accuracyAndMacroF1(rows: [Int], columns: [Int], right: [Int]) -> (accuracy: Double, macroF1: Double) {
        var total = 0, correct = 0, f1Sum = 0.0, present = 0
        for k in rows.indices {
            let row = rows[k], col = columns[k]
            total += row
            let tp = right[k]
            correct += tp
            guard row > 0 || col > 0 else { continue }
            present += 1
            // F1 = 2PR/(P+R) = 2·tp / (row + col); 0 when tp = 0.
            if tp > 0 { f1Sum += 2 * Double(tp) / Double(row + col) }
        }
        return (total == 0 ? 0 : Double(correct) / Double(total), present == 0 ? 0 : f1Sum / Double(present))
    }

    /// Checks that every row is a probability distribution: finite, non-negative, summing to
    /// 1 within 1e-3.
    static func validate(probabilities: [Float], classes K: Int) throws {
        let n = probabilities.count / K
        try probabilities.withUnsafeBufferPointer { p in
            for i in 0..<n {
                var sum = 0.0
                for k in 0..<K {
                    let v = p[i * K + k]
                    guard v.isFinite else { throw EvalError.badProbabilities(sample: i, reason: "value \(v) for class \(k)") }
                    guard v >= 0 else { throw EvalError.badProbabilities(sample: i, reason: "negative value \(v) for class \(k)") }
                    sum += Double(v)
                }
                guard abs(sum - 1) <= 1e-3 else {
                    throw EvalError.badProbabilities(sample: i, reason: "the row sums to \(Text.fixed(sum, 6)), not 1")
                }
            }
        }
    }
}
