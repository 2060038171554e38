import Foundation

/// Per-class precision, recall, F1 and support with accuracy and macro/weighted averages,
/// in the shape of scikit-learn's `classification_report`.
///
/// Zero-division policy: a precision, recall or F1 whose denominator is 0 is reported as 0
/// (scikit-learn's `zero_division=0`).
public struct ClassificationReport: Codable, Hashable, Sendable {
    public struct ClassMetrics: Codable, Hashable, Sendable {
        public var label: String
        public var precision: Double
        public var recall: Double
        public var f1: Double
        public var support: Int
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
        let n = Double(perClass.count), total = Double(m.total)
        macro = ClassMetrics(
            label: "macro avg", precision: perClass.map(\.precision).reduce(0, +) / n,
            recall: perClass.map(\.recall).reduce(0, +) / n, f1: perClass.map(\.f1).reduce(0, +) / n, support: m.total)
        func weightedMean(_ key: KeyPath<ClassMetrics, Double>) -> Double {
            perClass.reduce(0) { $0 + $1[keyPath: key] * Double($1.support) } / total
        }
        weighted = ClassMetrics(
            label: "weighted avg", precision: weightedMean(\.precision), recall: weightedMean(\.recall),
            f1: weightedMean(\.f1), support: m.total)
    }

    /// The fixed-width table: per-class rows, accuracy, averages, then the confusion matrix.
    public func render(digits: Int = 3) -> String {
        let nameWidth = max(12, (classes.map(\.label.count) + [macro.label.count]).max()!)
        func pad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }
        func num(_ v: Double) -> String { String(format: "%.\(digits)f", v) }
        let w = max(9, digits + 6)
        var out = pad("", nameWidth) + pad("precision", w + 1) + pad("recall", w + 1) + pad("f1-score", w + 1) + pad("support", w + 1) + "\n\n"
        for c in classes {
            out += pad(c.label, nameWidth) + " " + pad(num(c.precision), w) + " " + pad(num(c.recall), w) + " "
                + pad(num(c.f1), w) + " " + pad(String(c.support), w) + "\n"
        }
        out += "\n" + pad("accuracy", nameWidth) + " " + pad("", w) + " " + pad("", w) + " " + pad(num(accuracy), w) + " "
            + pad(String(confusion.total), w) + "\n"
        for c in [macro, weighted] {
            out += pad(c.label, nameWidth) + " " + pad(num(c.precision), w) + " " + pad(num(c.recall), w) + " "
                + pad(num(c.f1), w) + " " + pad(String(c.support), w) + "\n"
        }
        out += "\nconfusion matrix (rows = true, columns = predicted)\n"
        let cell = max(5, String(confusion.counts.flatMap { $0 }.max() ?? 0).count + 1)
        let rowNames = confusion.classes.enumerated().map { "[\($0.offset)] \($0.element)" }
        let rowWidth = rowNames.map(\.count).max() ?? 0
        out += pad("", rowWidth) + confusion.classes.indices.map { pad("[\($0)]", cell + 1) }.joined() + "\n"
        for (t, row) in confusion.counts.enumerated() {
            out += rowNames[t] + String(repeating: " ", count: rowWidth - rowNames[t].count) + row.map { pad(String($0), cell + 1) }.joined() + "\n"
        }
        return out
    }
}
