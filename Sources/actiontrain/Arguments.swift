/// A small command-line parser in the shape of swift-argument-parser: each command declares
/// its positionals and options with help text; unknown options are rejected with a suggestion.
struct Option {
    /// Long name without dashes, e.g. `epochs`.
    let name: String
    /// Value placeholder, e.g. `N`; nil for a flag that takes no value.
    let value: String?
    let help: String
    /// May be given several times (values are collected in order).
    var repeatable = false

    init(_ name: String, value: String? = nil, help: String, repeatable: Bool = false) {
        self.name = name
        self.value = value
        self.help = help
        self.repeatable = repeatable
    }
}

struct Positional {
    let name: String
    let help: String
    var optional = false
    /// Takes every remaining argument (only the last positional).
    var variadic = false
}

struct CommandSpec {
    let name: String
    let summary: String
    let positionals: [Positional]
    let options: [Option]
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
            for p in positionals { out += row(p.name, p.help) }
        }
        out += "\nOPTIONS:\n"
        for o in options + [Option("help", help: "Show help for this command.")] {
            out += row("--\(o.name)" + (o.value.map { " <\($0)>" } ?? ""), o.help)
        }
        if !discussion.isEmpty { out += "\n" + discussion + "\n" }
        return out
    }

    private func row(_ left: String, _ text: String) -> String {
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

    private func wrap(_ text: String, _ width: Int) -> [String] {
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

/// The result of parsing one command's arguments.
struct ParsedArguments {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var helpRequested = false

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// A typed value; a value that does not convert is a usage error naming the option.
    func value<T: LosslessStringConvertible>(_ name: String, as: T.Type) throws -> T? {
        guard let raw = value(name) else { return nil }
        guard let v = T(raw) else { throw CLIError.usage("--\(name) expects \(typeName(T.self)), got '\(raw)'") }
        return v
    }
}

private func typeName<T>(_ t: T.Type) -> String {
    switch t {
    case is Int.Type, is UInt64.Type: return "an integer"
    case is Double.Type, is Float.Type: return "a number"
    default: return "a value"
    }
}

enum ArgumentParser {
    static func parse(_ args: [String], for command: CommandSpec) throws -> ParsedArguments {
        var result = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                result.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "--help" || arg == "-h" {
                result.helpRequested = true
                continue
            }
            var name = String(arg.drop(while: { $0 == "-" }))
            var inlineValue: String? = nil
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                let known = command.options.map(\.name) + ["help"]
                let hint = suggestion(for: name, among: known).map { "; did you mean '--\($0)'?" } ?? ""
                throw CLIError.usage("unknown option '\(arg)' for '\(command.name)'\(hint) See 'actiontrain \(command.name) --help'.")
            }
            if option.value == nil {
                guard inlineValue == nil else { throw CLIError.usage("--\(name) takes no value") }
                result.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard i < args.count else { throw CLIError.usage("--\(name) needs a value <\(option.value!)>") }
                value = args[i]
                i += 1
            }
            if !option.repeatable, result.values[name] != nil {
                throw CLIError.usage("--\(name) is given twice")
            }
            result.values[name, default: []].append(value)
        }
        if result.helpRequested { return result }
        let required = command.positionals.filter { !$0.optional }.count
        guard result.positionals.count >= required else {
            let missing = command.positionals[result.positionals.count].name
            throw CLIError.usage("missing \(missing). Usage: \(command.usage)")
        }
        guard command.positionals.last?.variadic == true || result.positionals.count <= command.positionals.count else {
            throw CLIError.usage("unexpected argument '\(result.positionals[command.positionals.count])'. Usage: \(command.usage)")
        }
        return result
    }

    /// The closest known name within a small edit distance.
    static func suggestion(for name: String, among known: [String]) -> String? {
        let scored = known.map { ($0, editDistance(name, $0)) }.filter { $0.1 <= max(2, name.count / 3) }
        return scored.min { $0.1 < $1.1 }?.0
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count), cur = prev
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}

/// Errors the CLI maps to exit codes: usage 2, failure 1, regression gate 3.
enum CLIError: Error, CustomStringConvertible {
    case usage(String)
    case failure(String)
    case gateFailed(String)
    /// Stopped by Ctrl-C after saving its state (exit 130, as a shell reports SIGINT).
    case interrupted(String)

    var description: String {
        switch self {
        case .usage(let s), .failure(let s), .gateFailed(let s), .interrupted(let s): return s
        }
    }

    var exitCode: Int32 {
        switch self {
        case .usage: return 2
        case .failure: return 1
        case .gateFailed: return 3
        case .interrupted: return 130
        }
    }
}
