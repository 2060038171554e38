/// Entry points from raw predictions.
public enum Reports {
    /// The classification report for true class indices and row-major probabilities
    /// `[samples, classes]`; the prediction is the most probable class (lowest index on ties).
    public static func classification(classes: [String], truth: [Int32], probabilities: [Float]) throws
        -> ClassificationReport
    {
        let K = classes.count
        guard K > 0, probabilities.count == truth.count * K else {
            throw EvalError.mismatchedLengths(truth: truth.count, predicted: K == 0 ? 0 : probabilities.count / K)
        }
        let predicted = truth.indices.map { i -> Int in
            var best = 0
            for k in 1..<K where probabilities[i * K + k] > probabilities[i * K + best] { best = k }
            return best
        }
        return try ClassificationReport(
            ConfusionMatrix(classes: classes, truth: truth.map(Int.init), predicted: predicted))
    }
}
