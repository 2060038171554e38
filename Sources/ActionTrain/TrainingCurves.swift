import Foundation

/// Training and validation curves as a self-contained SVG (no scripts, no external fonts or
/// styles): two panels, loss and accuracy against the epoch, training solid and validation
/// dashed, with the best epoch marked. Written as `curves.svg` in the run folder.
public enum TrainingCurves {
    public static func svg(_ records: [EpochRecord], title: String = "", bestEpoch: Int? = nil) -> String {
        let panelW = 420.0, panelH = 260.0, margin = (left: 56.0, right: 16.0, top: 40.0, bottom: 44.0)
        let width = 2 * (margin.left + panelW + margin.right), height = margin.top + panelH + margin.bottom + 24
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        if !title.isEmpty {
            out += "<text x=\"\(fmt(width / 2))\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">\(escape(title))</text>\n"
        }
        let epochs = records.map { Double($0.epoch) }
        let panels: [(String, [(String, [Double?], Bool)], Bool)] = [
            ("loss", [("training", records.map { $0.trainLoss }, false), ("validation", records.map { $0.validationLoss }, true)], false),
            ("accuracy", [("training", records.map { $0.trainAccuracy }, false), ("validation", records.map { $0.validationAccuracy }, true)], true),
        ]
        for (p, panel) in panels.enumerated() {
            let x0 = Double(p) * (margin.left + panelW + margin.right) + margin.left, y0 = margin.top
            let values = panel.1.flatMap { $0.1.compactMap { $0 } }.filter(\.isFinite)
            var lo = values.min() ?? 0, hi = values.max() ?? 1
            if panel.2 { hi = min(1, hi) } else { lo = min(lo, 0) }  // loss from 0; accuracy up to 1
            if hi - lo < 1e-9 { hi = lo + 1 }
            let (tickLo, tickHi, step) = niceRange(lo, hi)
            let xMax = max(epochs.last ?? 1, 1), xMin = min(epochs.first ?? 1, xMax == 1 ? 0 : 1)
            func px(_ e: Double) -> Double { x0 + (e - xMin) / max(xMax - xMin, 1) * panelW }
            func py(_ v: Double) -> Double { y0 + panelH - (v - tickLo) / (tickHi - tickLo) * panelH }
            out += "<g>\n<text x=\"\(fmt(x0 + panelW / 2))\" y=\"\(fmt(y0 - 10))\" text-anchor=\"middle\" font-weight=\"bold\">\(panel.0)</text>\n"
            out += "<rect x=\"\(fmt(x0))\" y=\"\(fmt(y0))\" width=\"\(fmt(panelW))\" height=\"\(fmt(panelH))\" fill=\"none\" stroke=\"#888\"/>\n"
            var v = tickLo
            while v <= tickHi + step / 2 {
                let y = py(v)
                out += "<line x1=\"\(fmt(x0))\" y1=\"\(fmt(y))\" x2=\"\(fmt(x0 + panelW))\" y2=\"\(fmt(y))\" stroke=\"#eee\"/>"
                out += "<text x=\"\(fmt(x0 - 6))\" y=\"\(fmt(y + 4))\" text-anchor=\"end\">\(tickLabel(v, step))</text>\n"
                v += step
            }
            let xStep = max(1, Int((xMax - xMin) / 8 + 0.999))
            var e = Int(xMin)
            while Double(e) <= xMax {
                if Double(e) >= xMin {
                    out += "<text x=\"\(fmt(px(Double(e))))\" y=\"\(fmt(y0 + panelH + 16))\" text-anchor=\"middle\">\(e)</text>\n"
                }
                e += xStep
            }
            out += "<text x=\"\(fmt(x0 + panelW))\" y=\"\(fmt(y0 + panelH + 38))\" text-anchor=\"end\">epoch</text>\n"
            if let bestEpoch, Double(bestEpoch) >= xMin, Double(bestEpoch) <= xMax {
                let x = px(Double(bestEpoch))
                out += "<line x1=\"\(fmt(x))\" y1=\"\(fmt(y0))\" x2=\"\(fmt(x))\" y2=\"\(fmt(y0 + panelH))\" stroke=\"#2a2\" stroke-dasharray=\"2 3\"/>"
                out += "<text x=\"\(fmt(x + 4))\" y=\"\(fmt(y0 + 12))\" fill=\"#2a2\">best</text>\n"
            }
            for (s, series) in panel.1.enumerated() {
                let colour = s == 0 ? "#1f6fb4" : "#d9541e"
                let points = zip(epochs, series.1).compactMap { e, v in v.flatMap { $0.isFinite ? (e, $0) : nil } }
                guard !points.isEmpty else { continue }
                let path = points.map { "\(fmt(px($0.0))),\(fmt(py($0.1)))" }.joined(separator: " ")
                let dash = series.2 ? " stroke-dasharray=\"6 4\"" : ""
                out += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(dash)/>\n"
                for (e, v) in points where points.count <= 60 {
                    out += "<circle cx=\"\(fmt(px(e)))\" cy=\"\(fmt(py(v)))\" r=\"2.5\" fill=\"\(colour)\"/>"
                }
                // Legend under the axis, on the left (the axis label is on the right).
                let ly = y0 + panelH + 38, lx = x0 + Double(s) * 100
                out += "\n<line x1=\"\(fmt(lx))\" y1=\"\(fmt(ly - 4))\" x2=\"\(fmt(lx + 24))\" y2=\"\(fmt(ly - 4))\" stroke=\"\(colour)\" stroke-width=\"2\"\(dash)/>"
                out += "<text x=\"\(fmt(lx + 30))\" y=\"\(fmt(ly))\">\(series.0)</text>\n"
            }
            out += "</g>\n"
        }
        return out + "</svg>\n"
    }

    /// Round tick bounds and step covering [lo, hi] with about 5 ticks.
    static func niceRange(_ lo: Double, _ hi: Double) -> (Double, Double, Double) {
        let raw = (hi - lo) / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        return (floor(lo / step) * step, ceil(hi / step) * step, step)
    }

    static func tickLabel(_ v: Double, _ step: Double) -> String {
        let digits = max(0, Int(-floor(log10(step)) + (step / pow(10, floor(log10(step))) == 2.5 ? 1 : 0)))
        return String(format: "%.\(digits)f", abs(v) < step / 1e6 ? 0 : v)
    }

    static func fmt(_ v: Double) -> String { String(format: "%.1f", v) }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
