/// One command's declaration: name, summary, positionals and options bound to `Values`, and
/// the help text made from them.
/// (`Sendable`, so that each command keeps its spec in a `static let`.)
struct CommandSpec<Values: CommandOptions>: Sendable {
    let name: String
    let summary: String
    let positionals: [Positional<Values>]
    let options: [Option<Values>]
    /// Extra paragraphs printed after the options.
    var discussion: String = ""

    var usage: String {
        var parts = ["actiontrain", name]
        parts += positionals.map { $0.optional ? "[\($0.name)]" : $0.name }
        if !options.isEmpty { parts.append("[options]") }
        return parts.joined(separator: " ")
    }

    var help: String {
        var out = "OVERVIEW: \(summary)\n\nUSAGE: \(usage)\n"
        if !positionals.isEmpty {
            out += "\nARGUMENTS:\n"
            for p in positionals { out += HelpText.row(p.name, p.help) }
        }
        out += "\nOPTIONS:\n"
        for o in options { out += HelpText.row("--\(o.name)" + (o.value.map { " <\($0)>" } ?? ""), o.help) }
        out += HelpText.row("--help", "Show help for this command.")
        if !discussion.isEmpty { out += "\n" + discussion + "\n" }
        return out
    }
}

enum HelpText {
    /// `left` in a 26-column margin, `text` wrapped at 72 columns beside it.
    static func row(_ left: String, _ text: String) -> String {
        let width = 26
        var out = "  " + left
        var lines = wrap(text, 72)
        if left.count + 2 < width {
            out += String(repeating: " ", count: width - left.count - 2) + (lines.isEmpty ? "" : lines.removeFirst())
        }
        out += "\n"
        for l in lines { out += String(repeating: " ", count: width) + l + "\n" }
        return out
    }

    static func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = [], line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
