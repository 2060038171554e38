/// Errors from evaluation, reports and the regression gate. Each is one sentence that names
/// what is wrong (the file, the sample, both values) and, where there is one, what to do.
public enum EvalError: Error, Equatable, CustomStringConvertible {
    case mismatchedLengths(truth: Int, predicted: Int)
    case classOutOfRange(index: Int, classes: Int)
    case empty
    /// Every sample has the same true class: macro-F1, balanced accuracy and kappa mean nothing.
    case singleClass(label: String, samples: Int)
    case noClasses
    case duplicateClass(String)
    /// A probability row that is not a distribution (NaN, negative, or not summing to 1).
    case badProbabilities(sample: Int, reason: String)
    case mismatchedSamples(String)
    /// A file that is not an evaluation report, or one we cannot read.
    case badReport(file: String, reason: String)
    case unsupportedSchema(file: String, version: Int)
    /// Two reports that must not be compared, and why.
    case incomparable(String)
    case badPolicy(file: String, reason: String)

    public var description: String {
        switch self {
        case .mismatchedLengths(let t, let p):
            return "\(t) true labels but \(p) predictions"
        case .classOutOfRange(let i, let n):
            return "class index \(i) is outside the \(n) classes"
        case .empty:
            return "the evaluation set is empty; nothing to evaluate (check the split and that the sequences are at least one window long)"
        case .singleClass(let label, let n):
            return "the evaluation set holds only class '\(label)' (\(n) samples); per-class and averaged metrics need at least two classes: evaluate on a split with several classes"
        case .noClasses:
            return "the class list is empty"
        case .duplicateClass(let c):
            return "class '\(c)' appears twice in the class list"
        case .badProbabilities(let i, let why):
            return "sample \(i): the probabilities are not a distribution (\(why))"
        case .mismatchedSamples(let why):
            return why
        case .badReport(let file, let why):
            return "\(file): \(why)"
        case .unsupportedSchema(let file, let v):
            return "\(file): evaluation report schema version \(v) is newer than this reader (\(EvalReport.schemaVersion)); upgrade actiontrain"
        case .incomparable(let why):
            return "cannot compare the reports: \(why)"
        case .badPolicy(let file, let why):
            return "\(file): invalid gate policy: \(why) (see docs/reports.md)"
        }
    }
}
