/// A self-contained HTML page (inline CSS and SVG, no scripts, no external resources) with
/// the provenance, the summary of both levels, and per level: the per-class table and bars,
/// the confusion heatmap, the most confused class pairs, the reliability table and the
/// worst-confused examples. Its size does not grow with the number of samples: examples are
/// capped at `maxExamples` per level and pairs at `maxPairs`.
public enum HTMLReport {
    public static let maxExamples = 20
    public static let maxPairs = 10

    public static func render(_ r: EvalReport) -> String {
        let h = Text.html
        var out = """
            <!DOCTYPE html>
            <!-- \(r.schema) report, schema \(r.schemaVersion) -->
            <html lang="en"><head><meta charset="utf-8">
            <title>Evaluation: \(h(r.data.name))</title>
            <style>
            body{font-family:Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
            table{border-collapse:collapse;margin:8px 0 20px}th,td{border:1px solid #d0d7de;padding:4px 10px}
            th{background:#f6f8fa;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
            .headline{background:#ddf4ff;border:1px solid #54aeff;padding:10px 14px;border-radius:6px}
            .prov td:first-child{color:#57606a;white-space:nowrap}.note{color:#57606a;font-size:90%}
            h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:36px}
            </style></head><body>

            """
        out += "<h1>Evaluation: \(h(r.data.name))\(r.data.split.map { " (\(h($0)))" } ?? "")</h1>\n"
        out += "<table class=\"prov\">\n"
        for (k, v) in r.provenance { out += "<tr><td>\(h(k))</td><td>\(h(v))</td></tr>\n" }
        out += "</table>\n"
        let m0 = r.headlineMetrics
        out += "<p class=\"headline\"><b>Headline: \(m0.level.rawValue) level, \(m0.samples) \(m0.level.rawValue)s. "
        out += "Accuracy \(Text.fixed(m0.accuracy)) \(Text.interval(m0.accuracyCI)), macro F1 \(Text.fixed(m0.macroF1)) \(Text.interval(m0.macroF1CI)).</b><br>"
        out += "\(h(r.headlineReason)).</p>\n"
        out += summary(r)
        for m in r.levels { out += level(m, r) }
        if let e = r.events { out += events(e) }
        out += "<p class=\"note\">\(h(TextReport.footnote(r.settings))) ECE uses \(r.settings.calibrationBins) equal-width confidence bins.</p>\n"
        out += "</body></html>\n"
        return out
    }

    static func events(_ e: EventMetrics) -> String {
        var out = "<h2>Events: \(e.events) events against \(e.segments) true segments in \(e.sequences) stream\(e.sequences == 1 ? "" : "s")</h2>\n"
        out += "<table><tr><th>IoU</th><th>precision</th><th>recall</th><th>F1</th></tr>\n"
        for a in e.atIoU {
            out += "<tr><td>≥ \(a.iou)</td><td class=\"n\">\(Text.fixed(a.precision))</td><td class=\"n\">\(Text.fixed(a.recall))</td><td class=\"n\">\(Text.fixed(a.f1))</td></tr>\n"
        }
        out += "</table>\n<table><tr><th>seconds</th><th>median</th><th>p90</th><th>mean</th></tr>\n"
        for (name, s) in [("start error", e.startError), ("end error", e.endError), ("latency", e.latency)] {
            guard let s else { continue }
            out += "<tr><td>\(name)</td><td class=\"n\">\(Text.fixed(s.median))</td><td class=\"n\">\(Text.fixed(s.p90))</td><td class=\"n\">\(Text.fixed(s.mean))</td></tr>\n"
        }
        out += "</table>\n<p>\(e.matched) of \(e.segments) segments matched (mean IoU \(Text.fixed(e.meanIoU))), \(e.missed) missed; "
        out += "\(e.extra) extra events (\(Text.fixed(e.extraPerDozen, 2)) per dozen segments).</p>\n"
        out += "<p class=\"note\">\(Text.html(EventMetrics.definition))</p>\n"
        return out
    }

    static func summary(_ r: EvalReport) -> String {
        let levels = r.levels
        var out = "<table><tr><th>metric</th>" + levels.map { "<th>\($0.level.rawValue) level</th>" }.joined() + "</tr>\n"
        func row(_ name: String, _ f: (LevelMetrics) -> String) {
            out += "<tr><td>\(Text.html(name))</td>" + levels.map { "<td class=\"n\">\(f($0))</td>" }.joined() + "</tr>\n"
        }
        row("samples") { String($0.samples) }
        row("accuracy") { Text.fixed($0.accuracy) + " " + Text.interval($0.accuracyCI) }
        row("macro F1") { Text.fixed($0.macroF1) + " " + Text.interval($0.macroF1CI) }
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
        for t in r.headlineMetrics.topK {
            row("top-\(t.k) accuracy") { m in m.topK.first { $0.k == t.k }.map { Text.fixed($0.accuracy) } ?? "" }
        }
        return out + "</table>\n"
    }

    static func level(_ m: LevelMetrics, _ r: EvalReport) -> String {
        let h = Text.html
        var out = "<h2>\(m.level.rawValue.capitalized) level (\(m.samples) \(m.level.rawValue)s)</h2>\n"
        out += "<h3>Per class</h3>\n<table><tr><th>class</th><th>precision</th><th>recall</th><th>F1</th><th>support</th></tr>\n"
        for c in m.classes + [m.macro, m.weighted] {
            out +=
                "<tr><td>\(h(c.label))</td><td class=\"n\">\(Text.fixed(c.precision))</td><td class=\"n\">\(Text.fixed(c.recall))</td>"
                + "<td class=\"n\">\(Text.fixed(c.f1))</td><td class=\"n\">\(c.support)</td></tr>\n"
        }
        out += "</table>\n" + bars(m)
        out += "<h3>Confusion matrix</h3>\n" + SVGHeatmap.render(r, level: m.level, standalone: false)
        out += pairs(m, r) + calibration(m, settings: r.settings) + examples(m, r)
        return out
    }

    /// Horizontal bars of precision, recall and F1 per class.
    static func bars(_ m: LevelMetrics) -> String {
        let nameWidth = 20 + 7 * min(32, m.classes.map(\.label.count).max() ?? 1), barWidth = 300, rowHeight = 46
        let width = nameWidth + barWidth + 60, height = 24 + m.classes.count * rowHeight
        let colours = [("precision", "#54aeff"), ("recall", "#2da44e"), ("F1", "#8250df")]
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\" role=\"img\">\n"
        out += "<title>Precision, recall and F1 per class</title>\n"
        for (i, (name, colour)) in colours.enumerated() {
            out += "<rect x=\"\(nameWidth + i * 90)\" y=\"4\" width=\"10\" height=\"10\" fill=\"\(colour)\"/><text x=\"\(nameWidth + i * 90 + 14)\" y=\"13\">\(name)</text>\n"
        }
        for (k, c) in m.classes.enumerated() {
            let y = 24 + k * rowHeight
            out += "<text x=\"\(nameWidth - 8)\" y=\"\(y + 22)\" text-anchor=\"end\" font-size=\"12\">\(Text.html(c.label))</text>\n"
            for (i, v) in [c.precision, c.recall, c.f1].enumerated() {
                let by = y + 2 + i * 13
                out += "<rect x=\"\(nameWidth)\" y=\"\(by)\" width=\"\(Int((v * Double(barWidth)).rounded()))\" height=\"11\" fill=\"\(colours[i].1)\"/>"
                out += "<text x=\"\(nameWidth + Int((v * Double(barWidth)).rounded()) + 4)\" y=\"\(by + 9)\">\(Text.fixed(v))</text>\n"
            }
        }
        return out + "</svg>\n"
    }

    /// The largest off-diagonal cells.
    static func pairs(_ m: LevelMetrics, _ r: EvalReport) -> String {
        var cells: [(t: Int, p: Int, n: Int)] = []
        for t in r.classes.indices {
            for p in r.classes.indices where p != t && m.confusion[t][p] > 0 { cells.append((t, p, m.confusion[t][p])) }
        }
        cells.sort { $0.n != $1.n ? $0.n > $1.n : ($0.t, $0.p) < ($1.t, $1.p) }
        guard !cells.isEmpty else { return "<p>No confusions at this level.</p>\n" }
        var out = "<h3>Most confused pairs</h3>\n<table><tr><th>true</th><th>predicted as</th><th>count</th><th>share of the true class</th></tr>\n"
        for c in cells.prefix(maxPairs) {
            out +=
                "<tr><td>\(Text.html(r.classes[c.t]))</td><td>\(Text.html(r.classes[c.p]))</td><td class=\"n\">\(c.n)</td>"
                + "<td class=\"n\">\(Text.fixed(m.confusionNormalized.overTrue[c.t][c.p] * 100, 1))%</td></tr>\n"
        }
        return out + "</table>\n"
    }

    static func calibration(_ m: LevelMetrics, settings: EvalSettings) -> String {
        var out = "<h3>Calibration (ECE \(Text.fixed(m.expectedCalibrationError, 4)), log loss \(Text.fixed(m.logLoss, 4))"
        out += (m.brierScore.map { ", Brier score \(Text.fixed($0, 4))" } ?? "") + ")</h3>\n"
        if let c = m.calibratedECE {
            let sentence = Text.html(
                c.sentence(measured: m.expectedCalibrationError, samples: m.samples, unit: m.level.rawValue, confidence: settings.confidence))
            out += "<p>" + (c.verdict(m.expectedCalibrationError) == .above ? "<b>\(sentence)</b>" : sentence)
            out += " <span class=\"note\">\(c.method)</span></p>\n"
        }
        out += SVGReliability.render(m, standalone: false)
        out += "<table><tr><th>confidence bin</th><th>samples</th><th>mean confidence</th><th>accuracy</th></tr>\n"
        for b in m.calibration where b.count > 0 {
            out +=
                "<tr><td>(\(Text.fixed(b.lower, 2)), \(Text.fixed(b.upper, 2))]</td><td class=\"n\">\(b.count)</td>"
                + "<td class=\"n\">\(Text.fixed(b.confidence))</td><td class=\"n\">\(Text.fixed(b.accuracy))</td></tr>\n"
        }
        out += "</table>\n"
        guard let scores = m.classScores else { return out }
        out += "<table><tr><th>class</th><th>log loss (its samples)</th><th>Brier (one-vs-rest)</th><th>support</th></tr>\n"
        for c in scores {
            out +=
                "<tr><td>\(Text.html(c.label))</td><td class=\"n\">\(Text.fixed(c.logLoss, 4))</td><td class=\"n\">\(Text.fixed(c.brier, 4))</td>"
                + "<td class=\"n\">\(c.support)</td></tr>\n"
        }
        return out + "</table>\n"
    }

    /// The wrong predictions made with the highest confidence, at most `maxExamples`.
    static func examples(_ m: LevelMetrics, _ r: EvalReport) -> String {
        guard let t = r.predictions?.table(m.level) else { return "" }
        let K = t.classCount
        let wrong = worstConfused(t, limit: maxExamples)
        guard !wrong.isEmpty else { return "<p>No wrong predictions at this level.</p>\n" }
        var out = "<h3>Worst-confused examples (the \(wrong.count) most confident wrong predictions)</h3>\n"
        out += "<table><tr><th>sequence</th><th>\(m.level == .window ? "window start" : "windows")</th><th>true</th><th>predicted</th><th>p(predicted)</th><th>p(true)</th></tr>\n"
        for i in wrong {
            let where_ = m.level == .window ? String(t.start?[i] ?? 0) : String(t.windows?[i] ?? 1)
            out +=
                "<tr><td>\(Text.html(t.sequence[i]))</td><td class=\"n\">\(where_)</td><td>\(Text.html(r.classes[Int(t.truth[i])]))</td>"
                + "<td>\(Text.html(r.classes[Int(t.predicted[i])]))</td><td class=\"n\">\(Text.fixed(Double(t.probabilities[i * K + Int(t.predicted[i])])))</td>"
                + "<td class=\"n\">\(Text.fixed(Double(t.probabilities[i * K + Int(t.truth[i])])))</td></tr>\n"
        }
        return out + "</table>\n"
    }

    /// Indices of wrong predictions by decreasing probability of the predicted class (ties by
    /// index), at most `limit`.
    public static func worstConfused(_ t: PredictionTable, limit: Int) -> [Int] {
        let K = t.classCount
        let wrong = (0..<t.count).filter { t.predicted[$0] != t.truth[$0] }
        func confidence(_ i: Int) -> Float { t.probabilities[i * K + Int(t.predicted[i])] }
        return Array(wrong.sorted { confidence($0) != confidence($1) ? confidence($0) > confidence($1) : $0 < $1 }.prefix(limit))
    }
}
