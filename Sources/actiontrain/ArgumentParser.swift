/// Parses one command's arguments into its typed values: long options (`--name VALUE`,
/// `--name=VALUE`, flags), positionals, `--` before positionals that start with a dash, and
/// `--help`. Unknown options are rejected with the closest known name.
enum ArgumentParser {
    /// The values, or nil when help was asked for.
    static func parse<Values>(_ args: [String], for command: CommandSpec<Values>) throws -> Values? {
        var values = Values()
        var positionals: [String] = []
        var given: Set<String> = []
        var helpRequested = false
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "--help" || arg == "-h" {
                helpRequested = true
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
            guard option.repeatable || given.insert(name).inserted else { throw CLIError.usage("--\(name) is given twice") }
            guard let placeholder = option.value else {
                guard inlineValue == nil else { throw CLIError.usage("--\(name) takes no value") }
                try option.apply(&values, "")
                continue
            }
            if let inlineValue {
                try option.apply(&values, inlineValue)
            } else {
                guard i < args.count else { throw CLIError.usage("--\(name) needs a value <\(placeholder)>") }
                try option.apply(&values, args[i])
                i += 1
            }
        }
        if helpRequested { return nil }
        let required = command.positionals.filter { !$0.optional }.count
        guard positionals.count >= required else {
            throw CLIError.usage("missing \(command.positionals[positionals.count].name). Usage: \(command.usage)")
        }
        let variadic = command.positionals.last?.variadic == true
        guard variadic || positionals.count <= command.positionals.count else {
            throw CLIError.usage("unexpected argument '\(positionals[command.positionals.count])'. Usage: \(command.usage)")
        }
        for (k, raw) in positionals.enumerated() {
            command.positionals[min(k, command.positionals.count - 1)].apply(&values, raw)
        }
        try values.validate()
        return values
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
