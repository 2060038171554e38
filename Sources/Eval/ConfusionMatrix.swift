/// A confusion matrix: rows are true labels, columns are predictions (scikit-learn's convention).
public struct ConfusionMatrix: Codable, Hashable, Sendable {
    public let classes: [String]
    /// `counts[t][p]`: samples of true class t predicted as p.
    public private(set) var counts: [[Int]]

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

    public var total: Int { counts.reduce(0) { $0 + $1.reduce(0, +) } }
    public var correct: Int { classes.indices.reduce(0) { $0 + counts[$1][$1] } }
    /// Samples of each true class.
    public var support: [Int] { counts.map { $0.reduce(0, +) } }
    /// Samples predicted as each class.
    public var predictedCounts: [Int] { classes.indices.map { p in counts.reduce(0) { $0 + $1[p] } } }
}

public enum EvalError: Error, Equatable, CustomStringConvertible {
    case mismatchedLengths(truth: Int, predicted: Int)
    case classOutOfRange(index: Int, classes: Int)
    case empty

    public var description: String {
        switch self {
        case .mismatchedLengths(let t, let p): return "\(t) true labels but \(p) predictions"
        case .classOutOfRange(let i, let n): return "class index \(i) is outside the \(n) classes"
        case .empty: return "the evaluation set is empty; nothing to evaluate"
        }
    }
}
