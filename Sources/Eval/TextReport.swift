/// The fixed-width terminal report: provenance, then for each level (headline first) the
/// scikit-learn style classification table, the summary metrics with their bootstrap
/// intervals, and the confusion matrix in counts and normalised over the true labels.
public enum TextReport {
    public static func render(_ r: EvalReport, digits: Int = 3) -> String {
        var out = "actiontrain evaluation report (\(r.schema) \(r.schemaVersion))\n"
        out += keyValues(r.provenance)
        out += keyValues([("headline", r.headlineReason)])
        for m in r.levels {
            out += "\n" + section(m, headline: m.level == r.headline) + "\n\n"
            if let table = try? m.classificationReport(classes: r.classes) { out += table.table(digits: digits) }
            out += "\n" + summary(m, settings: r.settings, digits: digits)
            if r.classes.count > maxMatrixClasses {
                out += "\nconfusion matrix: \(r.classes.count) classes, more than the \(maxMatrixClasses) a text report prints (report.json holds it)\n"
                continue
            }
            let cm = m.confusionMatrix(classes: r.classes)
            out += "\nconfusion matrix (rows = true, columns = predicted)\n" + Text.matrix(cm)
            out += "\nconfusion matrix normalised over true labels (each row sums to 1; the diagonal is the recall)\n"
            out += Text.matrix(cm, normalized: .overTrue)
        }
        if let e = r.events { out += "\n" + eventSection(e) + "\n" + e.textLines(digits: digits) }
        out += "\n" + footnote(r.settings) + (r.events == nil ? "" : " " + EventMetrics.definition) + "\n"
        return out
    }

    /// The most classes whose confusion matrices the text prints: beyond it a row is wider than
    /// any terminal, and 10,000 classes made 2.4 GB of text (4 matrices of 10⁸ cells).
    public static let maxMatrixClasses = 200

    static func eventSection(_ e: EventMetrics) -> String {
        "== events: \(e.events) events against \(e.segments) true segments in \(e.sequences) stream\(e.sequences == 1 ? "" : "s") =="
    }

    static func keyValues(_ pairs: [(key: String, value: String)]) -> String {
        pairs.map { Text.padRight($0.key, 18) + $0.value + "\n" }.joined()
    }

    static func section(_ m: LevelMetrics, headline: Bool) -> String {
        let what =
            m.level == .window
            ? "\(m.samples) windows from \(m.sequences) sequences" : "\(m.samples) sequences (mean of window probabilities)"
        return "== \(m.level.rawValue) level\(headline ? " (headline)" : ""): \(what) =="
    }

    /// The summary metrics, one per line, with the 95% interval where there is one.
    static func summary(_ m: LevelMetrics, settings: EvalSettings, digits: Int) -> String {
        let ci = "\(Int((settings.confidence * 100).rounded()))% CI"
        var rows: [(String, String, String)] = [
            ("accuracy", Text.fixed(m.accuracy, digits), Text.interval(m.accuracyCI, digits)),
            ("macro F1", Text.fixed(m.macroF1, digits), Text.interval(m.macroF1CI, digits)),
            ("balanced accuracy", Text.fixed(m.balancedAccuracy, digits), ""),
            ("Cohen's kappa", Text.fixed(m.cohenKappa, digits), ""),
            ("log loss", Text.fixed(m.logLoss, digits + 1), ""),
            ("ECE (\(settings.calibrationBins) bins)", Text.fixed(m.expectedCalibrationError, digits + 1), ""),
        ]
        if let c = m.calibratedECE {
            rows.append(("ECE if calibrated", Text.fixed(c.median, digits + 1), Text.interval(Interval(low: c.lower, high: c.upper), digits + 1)))
        }
        rows += m.topK.map { ("top-\($0.k) accuracy", Text.fixed($0.accuracy, digits), "") }
        var out = Text.padRight("", 20) + Text.pad("value", 8) + "   " + ci + "\n"
        for (name, value, interval) in rows {
            out += Text.padRight(name, 20) + Text.pad(value, 8) + (interval.isEmpty ? "" : "   " + interval) + "\n"
        }
        if let note = calibratedNote(m, settings: settings, digits: digits) { out += note + "\n" }
        return out
    }

    /// Under the summary: what "ECE if calibrated" is, and whether the measured ECE is above
    /// its range.
    static func calibratedNote(_ m: LevelMetrics, settings: EvalSettings, digits: Int) -> String? {
        guard let c = m.calibratedECE else { return nil }
        let windows = m.level == .window && m.samples > m.sequences
        return "ECE if calibrated: median and \(Int((settings.confidence * 100).rounded()))% range of the ECE over \(c.draws) draws "
            + "of the \(m.samples) \(m.level.rawValue)s, each right with the probability of its predicted class "
            + "(a calibrated model with these confidences\(windows ? "; windows drawn independently, though a sequence's are not, so the range is too narrow" : "")).\n"
            + c.sentence(
                measured: m.expectedCalibrationError, samples: m.samples, unit: m.level.rawValue, confidence: settings.confidence,
                digits: digits + 1)
    }

    static func footnote(_ s: EvalSettings) -> String {
        let ci =
            s.bootstrapResamples > 0
            ? "\(Int((s.confidence * 100).rounded()))% CI: percentile bootstrap, \(s.bootstrapResamples) resamples of whole sequences, seed \(s.seed)."
            : "No confidence intervals (bootstrap disabled)."
        return ci + " Precision, recall or F1 with a zero denominator count as 0."
    }
}
