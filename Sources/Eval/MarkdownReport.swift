/// The report as GitHub-flavoured Markdown, to paste into a pull request or append to a CI
/// job summary (`$GITHUB_STEP_SUMMARY`): provenance, the headline, the summary metrics of
/// both levels, and per class and confusion tables (the non-headline level folded away).
public enum MarkdownReport {
    public static func render(_ r: EvalReport) -> String {
        let h = r.headlineMetrics
        var out = "<!-- \(r.schema) report, schema \(r.schemaVersion) -->\n"
        out += "## Evaluation: \(Text.markdown(r.data.name))\(r.data.split.map { " (\(Text.markdown($0)))" } ?? "")\n\n"
        out += "| | |\n|---|---|\n"
        for (k, v) in r.provenance { out += "| \(k) | \(Text.markdown(v)) |\n" }
        out += "\n**Headline (\(h.level.rawValue) level, \(h.samples) \(h.level.rawValue)s): accuracy \(Text.fixed(h.accuracy))"
        if let ci = h.accuracyCI { out += " \(Text.interval(ci))" }
        out += ", macro F1 \(Text.fixed(h.macroF1))"
        if let ci = h.macroF1CI { out += " \(Text.interval(ci))" }
        out += ".** \(Text.markdown(r.headlineReason)).\n\n"

        let levels = r.levels
        out += "| metric | " + levels.map { "\($0.level.rawValue) level" }.joined(separator: " | ") + " |\n"
        out += "|---|" + levels.map { _ in "---:|" }.joined() + "\n"
        func row(_ name: String, _ f: (LevelMetrics) -> String) { out += "| \(name) | " + levels.map(f).joined(separator: " | ") + " |\n" }
        row("samples") { String($0.samples) }
        row("accuracy") { Text.fixed($0.accuracy) + ($0.accuracyCI.map { " " + Text.interval($0) } ?? "") }
        row("macro F1") { Text.fixed($0.macroF1) + ($0.macroF1CI.map { " " + Text.interval($0) } ?? "") }
        row("balanced accuracy") { Text.fixed($0.balancedAccuracy) }
        row("Cohen's kappa") { Text.fixed($0.cohenKappa) }
        row("log loss") { Text.fixed($0.logLoss, 4) }
        row("ECE (\(r.settings.calibrationBins) bins)") { Text.fixed($0.expectedCalibrationError, 4) }
        if levels.allSatisfy({ $0.calibratedECE != nil }) {
            row("ECE if calibrated (median [\(Int((r.settings.confidence * 100).rounded()))% range])") { m in
                m.calibratedECE?.summary() ?? ""
            }
        }
        if levels.allSatisfy({ $0.brierScore != nil }) { row("Brier score") { Text.fixed($0.brierScore ?? 0, 4) } }
        for t in h.topK { row("top-\(t.k) accuracy") { m in m.topK.first { $0.k == t.k }.map { Text.fixed($0.accuracy) } ?? "" } }
        out += "\n"
        for (i, m) in levels.enumerated() {
            if i > 0 { out += "<details><summary>\(m.level.rawValue) level: per class and confusion matrix</summary>\n\n" }
            out += perClass(m, r) + "\n" + confusion(m, r) + "\n" + calibration(m, diagram: i == 0, settings: r.settings)
            if i > 0 { out += "\n</details>\n" }
            out += "\n"
        }
        if let e = r.events { out += events(e) + "\n" }
        out += "_" + TextReport.footnote(r.settings) + (r.events == nil ? "" : " " + EventMetrics.definition) + "_\n"
        return out
    }

    static func events(_ e: EventMetrics) -> String {
        var out = "### Events (\(e.events) events, \(e.segments) true segments in \(e.sequences) stream\(e.sequences == 1 ? "" : "s"))\n\n"
        out += "| IoU | precision | recall | F1 |\n|---|---:|---:|---:|\n"
        for a in e.atIoU { out += "| ≥ \(a.iou) | \(Text.fixed(a.precision)) | \(Text.fixed(a.recall)) | \(Text.fixed(a.f1)) |\n" }
        out += "\n| seconds | median | p90 | mean |\n|---|---:|---:|---:|\n"
        for (name, s) in [("start error", e.startError), ("end error", e.endError), ("latency", e.latency)] {
            guard let s else { continue }
            out += "| \(name) | \(Text.fixed(s.median)) | \(Text.fixed(s.p90)) | \(Text.fixed(s.mean)) |\n"
        }
        out += "\n\(e.matched) of \(e.segments) segments matched (mean IoU \(Text.fixed(e.meanIoU))), \(e.missed) missed; "
        out += "\(e.extra) extra events (\(Text.fixed(e.extraPerDozen, 2)) per dozen segments).\n"
        return out
    }

    static func perClass(_ m: LevelMetrics, _ r: EvalReport) -> String {
        var out = "### Per class (\(m.level.rawValue) level)\n\n| class | precision | recall | F1 | support |\n|---|---:|---:|---:|---:|\n"
        for c in m.classes {
            out += "| \(Text.markdown(c.label)) | \(Text.fixed(c.precision)) | \(Text.fixed(c.recall)) | \(Text.fixed(c.f1)) | \(c.support) |\n"
        }
        for c in [m.macro, m.weighted] {
            out += "| *\(c.label)* | \(Text.fixed(c.precision)) | \(Text.fixed(c.recall)) | \(Text.fixed(c.f1)) | \(c.support) |\n"
        }
        return out
    }

    /// ECE with its bins, the per-class log loss and Brier score, and for the headline level
    /// the reliability diagram (`reliability.svg`, written beside report.md).
    static func calibration(_ m: LevelMetrics, diagram: Bool, settings: EvalSettings) -> String {
        var out = "### Calibration (\(m.level.rawValue) level): ECE \(Text.fixed(m.expectedCalibrationError, 4)), log loss \(Text.fixed(m.logLoss, 4))"
        out += (m.brierScore.map { ", Brier score \(Text.fixed($0, 4))" } ?? "") + "\n\n"
        if let c = m.calibratedECE {
            let sentence = c.sentence(
                measured: m.expectedCalibrationError, samples: m.samples, unit: m.level.rawValue, confidence: settings.confidence)
            out += (c.verdict(m.expectedCalibrationError) == .above ? "**\(sentence)**" : sentence)
            out += " (\(c.method))\n\n"
        }
        if diagram { out += "![Reliability diagram: accuracy against confidence per bin](reliability.svg)\n\n" }
        out += "| confidence bin | samples | mean confidence | accuracy |\n|---|---:|---:|---:|\n"
        for b in m.calibration where b.count > 0 {
            out += "| (\(Text.fixed(b.lower, 2)), \(Text.fixed(b.upper, 2))] | \(b.count) | \(Text.fixed(b.confidence)) | \(Text.fixed(b.accuracy)) |\n"
        }
        guard let scores = m.classScores else { return out }
        out += "\n| class | log loss (its samples) | Brier (one-vs-rest) | support |\n|---|---:|---:|---:|\n"
        for c in scores { out += "| \(Text.markdown(c.label)) | \(Text.fixed(c.logLoss, 4)) | \(Text.fixed(c.brier, 4)) | \(c.support) |\n" }
        return out
    }

    static func confusion(_ m: LevelMetrics, _ r: EvalReport) -> String {
        var out = "### Confusion matrix (\(m.level.rawValue) level; rows = true, columns = predicted)\n\n"
        out += "| true \\ predicted | " + r.classes.map(Text.markdown).joined(separator: " | ") + " |\n"
        out += "|---|" + r.classes.map { _ in "---:|" }.joined() + "\n"
        for (t, row) in m.confusion.enumerated() {
            out +=
                "| \(Text.markdown(r.classes[t])) | "
                + row.enumerated().map { p, n in p == t ? "**\(n)**" : String(n) }.joined(separator: " | ") + " |\n"
        }
        return out
    }
}
