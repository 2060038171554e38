/// A confusion matrix: rows are true labels, columns are predictions (scikit-learn's convention).
public struct ConfusionMatrix: Codable, Hashable, Sendable {
    public let classes: [String]
    /// `counts[t][p]`: samples of true class t predicted as p.
    public internal(set) var counts: [[Int]]

    /// What a normalised matrix is divided by.
    public enum Normalization: String, Codable, CaseIterable, Sendable {
        /// Each row sums to 1 (the diagonal is the recall). scikit-learn's `normalize="true"`.
        case overTrue = "true"
        /// Each column sums to 1 (the diagonal is the precision). `normalize="pred"`.
        case overPredicted = "predicted"
        /// The whole matrix sums to 1. `normalize="all"`.
        case overAll = "all"
    }

    public init(classes: [String]) {
        self.classes = classes
        counts = Array(repeating: Array(repeating: 0, count: classes.count), count: classes.count)
    }

    /// Builds the matrix from class indices. Indices outside the class list throw.
    public init(classes: [String], truth: [Int], predicted: [Int]) throws {
        guard truth.count == predicted.count else {
            throw EvalError.mismatchedLengths(truth: truth.count, predicted: predicted.count)
        }
        self.init(classes: classes)
        for (t, p) in zip(truth, predicted) {
            guard classes.indices.contains(t), classes.indices.contains(p) else {
                throw EvalError.classOutOfRange(index: classes.indices.contains(t) ? p : t, classes: classes.count)
            }
            counts[t][p] += 1
        }
    }

    /// A matrix from counts `[K][K]` (rows true, columns predicted).
    public init(classes: [String], counts: [[Int]]) {
        precondition(counts.count == classes.count && counts.allSatisfy { $0.count == classes.count }, "counts shape")
        self.classes = classes
        self.counts = counts
    }

    public var total: Int { counts.reduce(0) { $0 + $1.reduce(0, +) } }
    public var correct: Int { classes.indices.reduce(0) { $0 + counts[$1][$1] } }
    /// Samples of each true class (row sums).
    public var support: [Int] { counts.map { $0.reduce(0, +) } }
    /// Samples predicted as each class (column sums).
    public var predictedCounts: [Int] { classes.indices.map { p in counts.reduce(0) { $0 + $1[p] } } }

    /// The matrix divided by its row sums, column sums or total. A row or column with no
    /// samples stays all zeros (no division by zero).
    public func normalized(_ over: Normalization) -> [[Double]] {
        let rows = support, cols = predictedCounts, all = total
        return counts.enumerated().map { t, row in
            row.enumerated().map { p, n in
                let d: Int
                switch over {
                case .overTrue: d = rows[t]
                case .overPredicted: d = cols[p]
                case .overAll: d = all
                }
                return d == 0 ? 0 : Double(n) / Double(d)
            }
        }
    }
}
