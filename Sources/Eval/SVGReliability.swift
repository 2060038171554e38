/// The reliability diagram of one level (DeGroot & Fienberg 1983; Guo et al. 2017): for each
/// non-empty confidence bin of the ECE, a bar as high as the accuracy of its samples, the gap
/// to their mean confidence shaded, a dot at the mean confidence, and the sample count; the
/// diagonal is perfect calibration (a bar below it: over-confident, above: under-confident).
/// Below the plot, the share of the samples in each bin. A self-contained SVG, no scripts.
public enum SVGReliability {
    public static func render(_ r: EvalReport, level: Level? = nil, standalone: Bool = true) -> String {
        let m = level.flatMap { r.metrics($0) } ?? r.headlineMetrics
        return render(m, standalone: standalone, provenance: r.provenance.map { "\($0.key): \($0.value)" }.joined(separator: "\n"))
    }

    /// Plot geometry: margins and the square plot's side, in pixels.
    static let left = 56, top = 34, side = 300, histogram = 40

    /// `provenance` goes in the SVG's `<desc>` (a standalone file says what it is about).
    public static func render(_ m: LevelMetrics, standalone: Bool = true, provenance: String? = nil) -> String {
        let width = left + side + 20, height = top + side + 36 + histogram + 20
        func x(_ v: Double) -> String { Text.fixed(Double(left) + v * Double(side), 1) }
        func y(_ v: Double) -> String { Text.fixed(Double(top) + (1 - v) * Double(side), 1) }
        var out = standalone ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- \(EvalReport.schema) reliability diagram -->\n" : ""
        out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\" role=\"img\">\n"
        let title = "Reliability, \(m.level.rawValue) level: ECE \(Text.fixed(m.expectedCalibrationError, 4)) over \(m.calibration.count) bins, \(m.samples) \(m.level.rawValue)s"
        // The range of a calibrated model's ECE on as many samples, under the title.
        let floor = m.calibratedECE.map {
            "a calibrated model: ECE \($0.summary())"
                + ($0.verdict(m.expectedCalibrationError) == .above ? "; measured above it" : "")
        }
        out += "<title>\(Text.xml(title + (floor.map { "; " + $0 } ?? "")))</title>\n"
        if let provenance { out += "<desc>\(Text.xml(provenance))</desc>\n" }
        out += "<text x=\"\(left)\" y=\"\(floor == nil ? 18 : 14)\" font-size=\"12\">\(Text.xml(title))</text>\n"
        if let floor { out += "<text x=\"\(left)\" y=\"28\" font-size=\"10\" fill=\"#57606a\">\(Text.xml(floor))</text>\n" }
        out += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(side)\" height=\"\(side)\" fill=\"#ffffff\" stroke=\"#8c959f\"/>\n"
        for t in stride(from: 0.0, through: 1.0001, by: 0.2) {
            out += "<line x1=\"\(x(t))\" y1=\"\(y(0))\" x2=\"\(x(t))\" y2=\"\(y(1))\" stroke=\"#eaeef2\"/>"
            out += "<line x1=\"\(x(0))\" y1=\"\(y(t))\" x2=\"\(x(1))\" y2=\"\(y(t))\" stroke=\"#eaeef2\"/>\n"
            out += "<text x=\"\(x(t))\" y=\"\(Double(top + side) + 14)\" text-anchor=\"middle\">\(Text.fixed(t, 1))</text>"
            out += "<text x=\"\(left - 6)\" y=\"\(Text.fixed(Double(top) + (1 - t) * Double(side) + 4, 1))\" text-anchor=\"end\">\(Text.fixed(t, 1))</text>\n"
        }
        out += "<text x=\"\(x(0.5))\" y=\"\(top + side + 28)\" text-anchor=\"middle\">confidence (probability of the predicted class)</text>\n"
        out += "<text x=\"14\" y=\"\(y(0.5))\" text-anchor=\"middle\" transform=\"rotate(-90 14 \(y(0.5)))\">accuracy</text>\n"
        let total = Double(max(1, m.calibration.reduce(0) { $0 + $1.count }))
        let base = top + side + 36
        for b in m.calibration where b.count > 0 {
            let w = Text.fixed((b.upper - b.lower) * Double(side) - 2, 1), bx = Text.fixed(Double(left) + b.lower * Double(side) + 1, 1)
            out += "<rect x=\"\(bx)\" y=\"\(y(b.accuracy))\" width=\"\(w)\" height=\"\(Text.fixed(b.accuracy * Double(side), 1))\" fill=\"#54aeff\"/>"
            let (low, high) = (min(b.accuracy, b.confidence), max(b.accuracy, b.confidence))
            out += "<rect x=\"\(bx)\" y=\"\(y(high))\" width=\"\(w)\" height=\"\(Text.fixed((high - low) * Double(side), 1))\" fill=\"#cf222e\" fill-opacity=\"0.35\"/>"
            out += "<circle cx=\"\(x((b.lower + b.upper) / 2))\" cy=\"\(y(b.confidence))\" r=\"2.5\" fill=\"#1f2328\"/>"
            out += "<text x=\"\(x((b.lower + b.upper) / 2))\" y=\"\(Text.fixed(Double(top) + (1 - high) * Double(side) - 4, 1))\" text-anchor=\"middle\" font-size=\"9\">\(b.count)</text>"
            let share = Double(b.count) / total
            out += "<rect x=\"\(bx)\" y=\"\(Text.fixed(Double(base + histogram) - share * Double(histogram), 1))\" width=\"\(w)\" height=\"\(Text.fixed(share * Double(histogram), 1))\" fill=\"#8c959f\"/>\n"
        }
        out += "<line x1=\"\(x(0))\" y1=\"\(y(0))\" x2=\"\(x(1))\" y2=\"\(y(1))\" stroke=\"#1f2328\" stroke-dasharray=\"4 3\"/>\n"
        out += "<line x1=\"\(left)\" y1=\"\(base + histogram)\" x2=\"\(left + side)\" y2=\"\(base + histogram)\" stroke=\"#8c959f\"/>"
        out += "<text x=\"\(left - 6)\" y=\"\(base + histogram)\" text-anchor=\"end\" font-size=\"9\">share</text>\n"
        return out + "</svg>\n"
    }
}
