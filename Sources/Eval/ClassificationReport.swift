import Foundation

/// Per-class precision, recall, F1 and support with accuracy and macro/weighted averages,
/// in the shape of scikit-learn's `classification_report`.
///
/// For class k with `tp = counts[k][k]`, `support = Σ_p counts[k][p]` (row) and
/// `predicted = Σ_t counts[t][k]` (column):
/// precision = tp / predicted, recall = tp / support, F1 = 2·P·R / (P + R).
///
/// Zero-division policy (scikit-learn's `zero_division=0`): a precision, recall or F1 whose
/// denominator is 0 is 0. The macro and weighted averages run over the classes that occur in
/// the truth or in the predictions (scikit-learn's default label set), so that a class absent
/// from the evaluation set and never predicted does not drag the averages down; it is still
/// listed with support 0. Weighted averages weight each class by its support.
public struct ClassificationReport: Codable, Hashable, Sendable {
    public struct ClassMetrics: Codable, Hashable, Sendable {
        public var label: String
        public var precision: Double
        public var recall: Double
        public var f1: Double
        public var support: Int

        public init(label: String, precision: Double, recall: Double, f1: Double, support: Int) {
            self.label = label
            self.precision = precision
            self.recall = recall
            self.f1 = f1
            self.support = support
        }
    }

    public var classes: [ClassMetrics]
    public var accuracy: Double
    public var macro: ClassMetrics
    public var weighted: ClassMetrics
    public var confusion: ConfusionMatrix

    public init(_ m: ConfusionMatrix) throws {
        guard m.total > 0 else { throw EvalError.empty }
        confusion = m
        let support = m.support, predicted = m.predictedCounts
        func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
        let perClass = m.classes.indices.map { k in
            let p = ratio(m.counts[k][k], predicted[k]), r = ratio(m.counts[k][k], support[k])
            return ClassMetrics(
                label: m.classes[k], precision: p, recall: r, f1: p + r == 0 ? 0 : 2 * p * r / (p + r),
                support: support[k])
        }
        classes = perClass
        accuracy = ratio(m.correct, m.total)
        let present = m.classes.indices.filter { support[$0] > 0 || predicted[$0] > 0 }
        let n = Double(present.count), total = Double(m.total)
        func mean(_ key: KeyPath<ClassMetrics, Double>) -> Double {
            present.reduce(0) { $0 + perClass[$1][keyPath: key] } / n
        }
        func weightedMean(_ key: KeyPath<ClassMetrics, Double>) -> Double {
            perClass.reduce(0) { $0 + $1[keyPath: key] * Double($1.support) } / total
        }
        macro = ClassMetrics(
            label: "macro avg", precision: mean(\.precision), recall: mean(\.recall), f1: mean(\.f1), support: m.total)
        weighted = ClassMetrics(
            label: "weighted avg", precision: weightedMean(\.precision), recall: weightedMean(\.recall),
            f1: weightedMean(\.f1), support: m.total)
    }

    /// The scikit-learn style table: per-class rows, accuracy, macro and weighted averages.
    public func table(digits: Int = 3) -> String {
        let nameWidth = max(12, (classes.map(\.label.count) + [macro.label.count]).max()!)
        func num(_ v: Double) -> String { String(format: "%.\(digits)f", v) }
        let w = max(9, digits + 6)
        var out = Text.pad("", nameWidth) + [" precision", " recall", " f1-score", " support"].map { Text.pad($0, w + 1) }.joined()
        out += "\n\n"
        func row(_ c: ClassMetrics) -> String {
            Text.pad(c.label, nameWidth) + " " + Text.pad(num(c.precision), w) + " " + Text.pad(num(c.recall), w) + " "
                + Text.pad(num(c.f1), w) + " " + Text.pad(String(c.support), w) + "\n"
        }
        for c in classes { out += row(c) }
        out +=
            "\n" + Text.pad("accuracy", nameWidth) + " " + Text.pad("", w) + " " + Text.pad("", w) + " "
            + Text.pad(num(accuracy), w) + " " + Text.pad(String(confusion.total), w) + "\n"
        out += row(macro) + row(weighted)
        return out
    }

    /// The table followed by the confusion matrix in counts.
    public func render(digits: Int = 3) -> String {
        table(digits: digits) + "\nconfusion matrix (rows = true, columns = predicted)\n" + Text.matrix(confusion)
    }
}
