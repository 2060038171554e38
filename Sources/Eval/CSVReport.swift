/// The report as CSV files (RFC 4180, UTF-8, `\n` line ends) for spreadsheets and pandas.
/// Each file opens with the provenance as `# key: value` comment lines
/// (`pandas.read_csv(path, comment="#")` skips them).
///
/// - `metrics.csv`: `level,metric,value,ci_low,ci_high` (summary metrics of both levels;
///   `ece_if_calibrated`: the median and range of a calibrated model's ECE, `CalibratedECE`);
/// - `classes.csv`: `level,class,precision,recall,f1,support` (plus `macro avg`, `weighted avg`);
/// - `confusion.csv`: `level,true,predicted,count,over_true,over_predicted,over_all`;
/// - `predictions.csv`: `sequence,start,true,predicted,p_<class>...` (every window).
public enum CSVReport {
    public static func files(_ r: EvalReport) -> [(name: String, text: String)] {
        [
            ("metrics.csv", metrics(r)), ("classes.csv", classes(r)), ("confusion.csv", confusion(r)),
            ("predictions.csv", predictions(r)),
        ]
    }

    static func preamble(_ r: EvalReport) -> String {
        "# \(r.schema) report, schema \(r.schemaVersion)\n"
            + r.provenance.map { "# \($0.key): \($0.value.replacingOccurrences(of: "\n", with: " "))\n" }.joined()
    }

    static func line(_ fields: [String]) -> String { fields.map(Text.csv).joined(separator: ",") + "\n" }

    static func number(_ v: Double) -> String { String(format: "%.6g", v) }

    public static func metrics(_ r: EvalReport) -> String {
        var out = preamble(r) + line(["level", "metric", "value", "ci_low", "ci_high"])
        for m in r.levels {
            let l = m.level.rawValue
            out += line([l, "samples", String(m.samples), "", ""])
            out += line([l, "accuracy", number(m.accuracy), m.accuracyCI.map { number($0.low) } ?? "", m.accuracyCI.map { number($0.high) } ?? ""])
            out += line([l, "macro_f1", number(m.macroF1), m.macroF1CI.map { number($0.low) } ?? "", m.macroF1CI.map { number($0.high) } ?? ""])
            out += line([l, "balanced_accuracy", number(m.balancedAccuracy), "", ""])
            out += line([l, "cohen_kappa", number(m.cohenKappa), "", ""])
            out += line([l, "log_loss", number(m.logLoss), "", ""])
            out += line([l, "ece", number(m.expectedCalibrationError), "", ""])
            if let c = m.calibratedECE { out += line([l, "ece_if_calibrated", number(c.median), number(c.lower), number(c.upper)]) }
            for t in m.topK { out += line([l, "top_\(t.k)_accuracy", number(t.accuracy), "", ""]) }
        }
        return out
    }

    public static func classes(_ r: EvalReport) -> String {
        var out = preamble(r) + line(["level", "class", "precision", "recall", "f1", "support"])
        for m in r.levels {
            for c in m.classes + [m.macro, m.weighted] {
                out += line([m.level.rawValue, c.label, number(c.precision), number(c.recall), number(c.f1), String(c.support)])
            }
        }
        return out
    }

    public static func confusion(_ r: EvalReport) -> String {
        var out = preamble(r) + line(["level", "true", "predicted", "count", "over_true", "over_predicted", "over_all"])
        for m in r.levels {
            let n = m.confusionNormalized
            for t in r.classes.indices {
                for p in r.classes.indices {
                    out += line([
                        m.level.rawValue, r.classes[t], r.classes[p], String(m.confusion[t][p]), number(n.overTrue[t][p]),
                        number(n.overPredicted[t][p]), number(n.overAll[t][p]),
                    ])
                }
            }
        }
        return out
    }

    public static func predictions(_ r: EvalReport) -> String {
        var out = preamble(r) + line(["sequence", "start", "true", "predicted"] + r.classes.map { "p_" + $0 })
        guard let t = r.predictions?.window else { return out }
        let labels = r.classes.map(Text.csv), K = r.classes.count
        out.reserveCapacity(out.utf8.count + t.count * (40 + 12 * K))
        for i in 0..<t.count {
            out +=
                Text.csv(t.sequence[i]) + "," + String(t.start?[i] ?? 0) + "," + labels[Int(t.truth[i])] + ","
                + labels[Int(t.predicted[i])]
            for k in 0..<K { out += "," + t.probabilities[i * K + k].description }
            out += "\n"
        }
        return out
    }
}
