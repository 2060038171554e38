import Foundation
import PoseCore

/// Formatting and escaping shared by the report writers.
enum Text {
    /// Right-aligns `s` in `width` columns (never truncates).
    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }

    /// Left-aligns `s` in `width` columns.
    static func padRight(_ s: String, _ width: Int) -> String {
        s + String(repeating: " ", count: max(0, width - s.count))
    }

    static func fixed(_ v: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", v) }

    /// `+0.012` / `-0.012`; a value that rounds to zero is `+0.000` (never `-0.000`).
    static func signed(_ v: Double, _ digits: Int = 3) -> String {
        let s = String(format: "%+.\(digits)f", v)
        return s.hasPrefix("-") && s.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) ? "+" + s.dropFirst() : s
    }

    /// A p-value: 4 decimals, or `<0.0001`.
    static func pValue(_ p: Double) -> String { p < 0.0001 ? "<0.0001" : String(format: "%.4f", p) }

    /// `p = 0.0123` or `p < 0.0001`.
    static func p(_ p: Double) -> String { p < 0.0001 ? "p < 0.0001" : "p = " + String(format: "%.4f", p) }

    /// `[-0.050, +0.012]`.
    static func signedInterval(_ i: Interval) -> String { "[\(signed(i.low)), \(signed(i.high))]" }

    static func interval(_ i: Interval?, _ digits: Int = 3) -> String {
        guard let i else { return "" }
        return "[\(fixed(i.low, digits)), \(fixed(i.high, digits))]"
    }

    /// A matrix with row names `[k] label` and column headers `[k]`. `cell` formats one value.
    static func grid(classes: [String], rows: [[String]]) -> String {
        let width = max(5, (rows.flatMap { $0 }.map(\.count).max() ?? 0) + 1)
        let names = classes.enumerated().map { "[\($0.offset)] \($0.element)" }
        let nameWidth = names.map(\.count).max() ?? 0
        var out = padRight("", nameWidth) + classes.indices.map { pad("[\($0)]", width + 1) }.joined() + "\n"
        for (t, row) in rows.enumerated() {
            out += padRight(names[t], nameWidth) + row.map { pad($0, width + 1) }.joined() + "\n"
        }
        return out
    }

    static func matrix(_ m: ConfusionMatrix) -> String {
        grid(classes: m.classes, rows: m.counts.map { $0.map(String.init) })
    }

    static func matrix(_ m: ConfusionMatrix, normalized over: ConfusionMatrix.Normalization) -> String {
        grid(classes: m.classes, rows: m.normalized(over).map { $0.map { fixed($0, 2) } })
    }

    // MARK: escaping

    static func html(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab/newline are not allowed in XML 1.0.
                if c.value < 0x20 && c != "\t" && c != "\n" && c != "\r" { out += "\u{FFFD}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }

    /// XML attribute/text escaping (the same rules as HTML here).
    static func xml(_ s: String) -> String { html(s) }

    /// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
    static func csv(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A Markdown table cell: pipes and line breaks escaped.
    static func markdown(_ s: String) -> String {
        s.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }

    /// A JSON string literal with quotes.
    static func json(_ s: String) -> String { JSONText.quote(s) }
}
