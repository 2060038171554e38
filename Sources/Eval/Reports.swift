import Foundation

/// Entry points from raw predictions, and the set of files of a report folder.
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
        let predicted = Metrics.predictions(probabilities, classes: K).map(Int.init)
        return try ClassificationReport(
            ConfusionMatrix(classes: classes, truth: truth.map(Int.init), predicted: predicted))
    }

    /// Every file of `actiontrain eval --report DIR`, by name: `report.txt` (the terminal
    /// report), `report.json` (schema in docs/reports.md), `report.md`, `report.html`,
    /// `confusion.svg` and `reliability.svg` (headline level) and the CSV files of `CSVReport`.
    public static func files(_ report: EvalReport) throws -> [(name: String, data: Data)] {
        var out: [(String, Data)] = [
            ("report.txt", Data(TextReport.render(report).utf8)),
            ("report.json", try ReportJSON.encode(report)),
            ("report.md", Data(MarkdownReport.render(report).utf8)),
            ("report.html", Data(HTMLReport.render(report).utf8)),
            ("confusion.svg", Data(SVGHeatmap.render(report).utf8)),
            ("reliability.svg", Data(SVGReliability.render(report).utf8)),
        ]
        out += CSVReport.files(report).map { ($0.name, Data($0.text.utf8)) }
        return out
    }

    /// Marker present near the top of every file actiontrain writes for a report: a file that
    /// holds it may be replaced by a new report; any other file is the user's and is kept.
    public static let marker = EvalReport.schema
}
