/// An SVG heatmap of a confusion matrix (rows = true, columns = predicted): each cell shows
/// the count and the share of its true class, coloured by that share (white 0 → dark blue 1),
/// so that the diagonal reads as recall. No scripts, fonts or external resources. The
/// provenance travels in `<title>`/`<desc>` and a footer line.
public enum SVGHeatmap {
    static let cell = 48
    static let charWidth = 7

    public static func render(_ r: EvalReport, level: Level? = nil, standalone: Bool = true) -> String {
        let m = r.metrics(level ?? r.headline) ?? r.headlineMetrics
        let K = r.classes.count
        let labels = r.classes.map { $0.count > 32 ? String($0.prefix(31)) + "…" : $0 }
        let longest = labels.map(\.count).max() ?? 1
        let left = 28 + longest * charWidth
        let top = 64 + Int(Double(longest * charWidth) * 0.72)
        let title = "Confusion matrix, \(m.level.rawValue) level (\(m.samples) \(m.level.rawValue)s)"
        // Room for the last rotated column label, the title (~9 px a character) and the subtitle.
        let width = max(left + K * cell + Int(Double(longest * charWidth) * 0.72) + 16, 24 + title.count * 9, 540)
        let height = top + K * cell + 44
        let share = m.confusionNormalized.overTrue
        let x = Text.xml
        var out = ""
        if standalone { out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- \(r.schema) confusion heatmap -->\n" }
        out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" font-family=\"Helvetica, Arial, sans-serif\" role=\"img\">\n"
        out += "<title>\(x(title))</title>\n<desc>\(x(r.provenance.map { "\($0.key): \($0.value)" }.joined(separator: "\n")))</desc>\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
        out += "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">\(x(title))</text>\n"
        out += "<text x=\"12\" y=\"40\" font-size=\"11\" fill=\"#555\">rows = true label, columns = predicted; colour and % = share of the true class</text>\n"
        for (p, label) in labels.enumerated() {
            let cx = left + p * cell + cell / 2
            out += "<text transform=\"translate(\(cx),\(top - 6)) rotate(-45)\" font-size=\"12\">\(x(label))</text>\n"
        }
        for (t, label) in labels.enumerated() {
            let y = top + t * cell + cell / 2 + 4
            out += "<text x=\"\(left - 8)\" y=\"\(y)\" font-size=\"12\" text-anchor=\"end\">\(x(label))</text>\n"
            for p in 0..<K {
                let v = share[t][p], cx = left + p * cell, cy = top + t * cell
                out += "<rect x=\"\(cx)\" y=\"\(cy)\" width=\"\(cell)\" height=\"\(cell)\" fill=\"\(colour(v))\" stroke=\"#d0d7de\"><title>\(x("true \(r.classes[t]), predicted \(r.classes[p]): \(m.confusion[t][p]) (\(Text.fixed(v * 100, 1))% of \(r.classes[t]))"))</title></rect>\n"
                let ink = v > 0.55 ? "#ffffff" : "#1f2328"
                out += "<text x=\"\(cx + cell / 2)\" y=\"\(cy + 21)\" font-size=\"13\" text-anchor=\"middle\" fill=\"\(ink)\"\(t == p ? " font-weight=\"bold\"" : "")>\(m.confusion[t][p])</text>\n"
                out += "<text x=\"\(cx + cell / 2)\" y=\"\(cy + 36)\" font-size=\"10\" text-anchor=\"middle\" fill=\"\(ink)\">\(Text.fixed(v * 100, 0))%</text>\n"
            }
        }
        var footer = "model \(r.model.path ?? "(not recorded)") · data \(r.data.name)"
        if let s = r.data.split { footer += " (\(s))" }
        if let h = r.data.hash { footer += " · \(h)" }
        out += "<text x=\"12\" y=\"\(height - 14)\" font-size=\"10\" fill=\"#555\">\(x(footer))</text>\n"
        out += "</svg>\n"
        return out
    }

    /// White (247, 251, 255) at 0 to dark blue (8, 48, 107) at 1.
    static func colour(_ v: Double) -> String {
        let t = min(1, max(0, v))
        func mix(_ a: Double, _ b: Double) -> Int { Int((a + (b - a) * t).rounded()) }
        return "rgb(\(mix(247, 8)),\(mix(251, 48)),\(mix(255, 107)))"
    }
}
