/// The side-by-side diff of two reports (`actiontrain compare`, `eval --baseline`), as text
/// for a terminal and as Markdown for a pull request or a CI summary.
public enum CompareReport {
    /// Summary metrics of both sides: name, baseline, candidate, interval of the change.
    static func metricRows(_ c: Comparison) -> [(name: String, a: Double, b: Double, change: Interval?, digits: Int)] {
        let a = c.baselineMetrics, b = c.candidateMetrics
        var rows: [(String, Double, Double, Interval?, Int)] = [
            ("accuracy", a.accuracy, b.accuracy, c.accuracyChange, 3),
            ("macro F1", a.macroF1, b.macroF1, c.macroF1Change, 3),
            ("balanced accuracy", a.balancedAccuracy, b.balancedAccuracy, nil, 3),
            ("Cohen's kappa", a.cohenKappa, b.cohenKappa, nil, 3),
            ("log loss", a.logLoss, b.logLoss, nil, 4),
            ("ECE (\(c.candidate.settings.calibrationBins) bins)", a.expectedCalibrationError, b.expectedCalibrationError, nil, 4),
        ]
        for t in a.topK {
            if let u = b.topK.first(where: { $0.k == t.k }) { rows.append(("top-\(t.k) accuracy", t.accuracy, u.accuracy, nil, 3)) }
        }
        return rows
    }

    static func header(_ c: Comparison) -> [(key: String, value: String)] {
        func model(_ r: EvalReport) -> String {
            var s = r.model.path ?? "(model not recorded)"
            var extra: [String] = []
            if let t = r.model.tool { extra.append(t) }
            if let h = r.model.configHash { extra.append("config \(h)") }
            if let seed = r.model.seed { extra.append("seed \(seed)") }
            if !extra.isEmpty { s += " (" + extra.joined(separator: ", ") + ")" }
            return s
        }
        let d = c.baseline.data
        var data = d.name + (d.split.map { ", split \($0)" } ?? "")
        if let h = d.hash { data += ", \(h)" }
        let unit = c.level == .window ? "windows from \(c.unitCount) sequences" : "sequences"
        return [
            ("baseline", "\(c.baselineName): \(model(c.baseline))"),
            ("candidate", "\(c.candidateName): \(model(c.candidate))"),
            ("data", data),
            ("paired", "\(c.truth.count) \(unit), \(c.level.rawValue) level" + (c.level == c.baseline.headline ? " (the headline)" : "")),
        ]
    }

    public static func text(_ c: Comparison, gate: GateResult?) -> String {
        var out = "actiontrain comparison (\(EvalReport.schema) \(EvalReport.schemaVersion))\n"
        out += TextReport.keyValues(header(c))
        let ci = "\(Int((c.confidence * 100).rounded()))% CI of change"
        out += "\n" + Text.padRight("metric", 20) + Text.pad("baseline", 10) + Text.pad("candidate", 11) + Text.pad("change", 9) + "   " + ci + "\n"
        for r in metricRows(c) {
            out +=
                Text.padRight(r.name, 20) + Text.pad(Text.fixed(r.a, r.digits), 10) + Text.pad(Text.fixed(r.b, r.digits), 11)
                + Text.pad(Text.signed(r.b - r.a, r.digits), 9) + (r.change.map { "   " + Text.signedInterval($0) } ?? "") + "\n"
        }
        let nameWidth = max(12, (c.classes.map(\.count).max() ?? 0) + 2)
        out +=
            "\n" + Text.padRight("class", nameWidth) + Text.pad("support", 8) + Text.pad("recall", 9) + Text.pad("", 8)
            + Text.pad("change", 9) + Text.pad("McNemar p", 11) + Text.pad("F1", 9) + Text.pad("", 8) + Text.pad("change", 9) + "\n"
        out +=
            Text.padRight("", nameWidth) + Text.pad("", 8) + Text.pad("base", 9) + Text.pad("cand", 8) + Text.pad("", 9)
            + Text.pad("", 11) + Text.pad("base", 9) + Text.pad("cand", 8) + "\n"
        let a = c.baselineMetrics
        for k in c.classes.indices {
            let x = a.classes[k], y = c.candidateClass(k)
            out +=
                Text.padRight(c.classes[k], nameWidth) + Text.pad(String(x.support), 8) + Text.pad(Text.fixed(x.recall), 9)
                + Text.pad(Text.fixed(y.recall), 8) + Text.pad(Text.signed(y.recall - x.recall), 9)
                + Text.pad(x.support > 0 ? Text.pValue(c.classMcNemar[k].pValue) : "-", 11)
                + Text.pad(Text.fixed(x.f1), 9) + Text.pad(Text.fixed(y.f1), 8) + Text.pad(Text.signed(y.f1 - x.f1), 9) + "\n"
        }
        out += "\nMcNemar on the \(c.truth.count) paired \(c.level.rawValue)s: \(c.mcnemar.summary)\n"
        if c.pairsShareSequences {
            out += "(windows of one sequence are not independent, so this p-value is optimistic; the bootstrap resamples whole sequences)\n"
        }
        out += "\nconfusion matrix change (candidate − baseline; rows = true, columns = predicted)\n"
        out += Text.grid(classes: c.classes, rows: c.confusionChange.map { $0.map { $0 == 0 ? "0" : String(format: "%+d", $0) } })
        if let gate { out += "\n" + text(gate) }
        return out
    }

    static func policyLine(_ g: GateResult) -> String {
        let p = g.policy
        var s = "gate at the \(g.level.rawValue) level: max drop accuracy \(Text.fixed(p.maxAccuracyDrop)), macro F1 \(Text.fixed(p.maxMacroF1Drop)), class recall \(Text.fixed(p.maxClassRecallDrop))"
        if !p.classRecallDrop.isEmpty {
            s += " (" + p.classRecallDrop.sorted { $0.key < $1.key }.map { "\($0.key) \(Text.fixed($0.value))" }.joined(separator: ", ") + ")"
        }
        s += p.requireSignificance ? "; a drop must also be significant at α = \(p.alpha)" : "; significance not required"
        return s
    }

    public static func text(_ g: GateResult) -> String {
        var out = policyLine(g) + "\n"
        for ch in g.checks { out += "  " + (ch.passed ? "PASS  " : "FAIL  ") + ch.message + "\n" }
        out += g.passed ? "gate: passed (\(g.checks.count) checks)\n" : "gate: FAILED (\(g.failures.count) of \(g.checks.count) checks)\n"
        return out
    }

    public static func markdown(_ c: Comparison, gate: GateResult?) -> String {
        var out = "<!-- \(EvalReport.schema) comparison, schema \(EvalReport.schemaVersion) -->\n"
        if let gate {
            out += "## Regression gate: " + (gate.passed ? "passed ✅" : "FAILED ❌ (\(gate.failures.count) of \(gate.checks.count) checks)") + "\n\n"
        } else {
            out += "## Model comparison\n\n"
        }
        out += "| | |\n|---|---|\n"
        for (k, v) in header(c) { out += "| \(k) | \(Text.markdown(v)) |\n" }
        out += "\n| metric | baseline | candidate | change | \(Int((c.confidence * 100).rounded()))% CI of change |\n|---|---:|---:|---:|---|\n"
        for r in metricRows(c) {
            out +=
                "| \(r.name) | \(Text.fixed(r.a, r.digits)) | \(Text.fixed(r.b, r.digits)) | \(Text.signed(r.b - r.a, r.digits)) | "
                + (r.change.map(Text.signedInterval) ?? "") + " |\n"
        }
        out += "\n| class | support | recall baseline | recall candidate | change | McNemar p | F1 baseline | F1 candidate |\n"
        out += "|---|---:|---:|---:|---:|---:|---:|---:|\n"
        let a = c.baselineMetrics
        for k in c.classes.indices {
            let x = a.classes[k], y = c.candidateClass(k)
            out +=
                "| \(Text.markdown(c.classes[k])) | \(x.support) | \(Text.fixed(x.recall)) | \(Text.fixed(y.recall)) | "
                + "\(Text.signed(y.recall - x.recall)) | \(x.support > 0 ? Text.pValue(c.classMcNemar[k].pValue) : "-") | "
                + "\(Text.fixed(x.f1)) | \(Text.fixed(y.f1)) |\n"
        }
        out += "\nMcNemar on the \(c.truth.count) paired \(c.level.rawValue)s: \(c.mcnemar.summary).\n"
        if let gate {
            out += "\n" + policyLine(gate) + ".\n\n| check | result | detail |\n|---|---|---|\n"
            for ch in gate.checks {
                out += "| \(Text.markdown(ch.name)) | \(ch.passed ? "pass" : "**FAIL**") | \(Text.markdown(ch.message)) |\n"
            }
        }
        return out
    }
}
