import Eval
import Foundation

enum CompareCommand {
    static let spec = CommandSpec(
        name: "compare",
        summary: "Compare two evaluation reports side by side and run the regression gate (exit 3 on a regression).",
        positionals: [
            Positional(name: "BASELINE", help: "The earlier report.json (from 'actiontrain eval --report DIR' or --json)."),
            Positional(name: "CANDIDATE", help: "The new report.json, on the same data."),
        ],
        options: GateOptions.options + [
            Option("bootstrap", value: "N", help: "Paired bootstrap resamples for the intervals of the change (default 1000)."),
            Option("seed", value: "N", help: "Seed of the paired bootstrap (default: the candidate report's seed)."),
            Option("force", help: "Replace --junit / --markdown files that actiontrain did not write."),
        ],
        discussion: """
            The reports must come from the same dataset (content hash), split and samples, with the
            same label set; otherwise compare refuses and says why. Samples are paired one to one (a
            window by its sequence and start frame, a sequence by its id) at the headline level of
            the reports unless --level says otherwise. Exit codes: 0 the gate passes, 3 it fails,
            1 the reports cannot be compared. Policy file and statistics: docs/reports.md.
            """)

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let policy = try GateOptions.policy(args)
        let resamples = try args.value("bootstrap", as: Int.self) ?? Bootstrap.defaultResamples
        guard resamples >= 0 else { throw CLIError.usage("--bootstrap must be 0 or more") }
        let seed = try args.value("seed", as: UInt64.self)
        try GateOptions.checkOutputs(args)
        let baselinePath = args.positionals[0], candidatePath = args.positionals[1]
        let comparison = try GateOptions.reportingErrors(args, baseline: baselinePath, candidate: candidatePath) {
            try Comparison(
                baseline: try ReportJSON.read(baselinePath), candidate: try ReportJSON.read(candidatePath),
                baselineName: baselinePath, candidateName: candidatePath, level: policy.requestedLevel,
                confidence: 1 - policy.alpha, resamples: resamples, seed: seed)
        }
        try GateOptions.gate(comparison, policy: policy, args: args, out: &out)
    }
}

/// Options of the regression gate, shared by `compare` and `eval --baseline`.
enum GateOptions {
    static let options: [Option] = [
        Option("policy", value: "FILE", help: "Gate policy JSON (thresholds, significance, level); flags override its keys."),
        Option("max-accuracy-drop", value: "X", help: "Fail when accuracy drops by more than X (default 0.02)."),
        Option("max-macro-f1-drop", value: "X", help: "Fail when macro-F1 drops by more than X (default 0.02)."),
        Option("max-recall-drop", value: "X", help: "Fail when any class's recall drops by more than X (default 0.10)."),
        Option("recall-drop", value: "LABEL=X", help: "Per-class recall threshold; may be repeated.", repeatable: true),
        Option("require-significance", help: "Fail only on drops that are also significant (McNemar / paired bootstrap at --alpha)."),
        Option("alpha", value: "A", help: "Significance level (default 0.05)."),
        Option("level", value: "LEVEL", help: "Compare at the headline (default), window or sequence level."),
        Option("junit", value: "FILE", help: "Write the gate as JUnit XML (one test case per check)."),
        Option("markdown", value: "FILE", help: "Write the comparison and gate as Markdown (for a pull request or a CI job summary)."),
    ]

    /// The policy: defaults, then --policy, then flags.
    static func policy(_ args: ParsedArguments) throws -> GatePolicy {
        var p = try args.value("policy").map { try GatePolicy.load($0) } ?? GatePolicy()
        if let v = try args.value("max-accuracy-drop", as: Double.self) { p.maxAccuracyDrop = v }
        if let v = try args.value("max-macro-f1-drop", as: Double.self) { p.maxMacroF1Drop = v }
        if let v = try args.value("max-recall-drop", as: Double.self) { p.maxClassRecallDrop = v }
        for item in args.all("recall-drop") {
            guard let eq = item.lastIndex(of: "="), let v = Double(item[item.index(after: eq)...]), eq != item.startIndex else {
                throw CLIError.usage("--recall-drop expects LABEL=X, got '\(item)'")
            }
            p.classRecallDrop[String(item[..<eq])] = v
        }
        if args.has("require-significance") { p.requireSignificance = true }
        if let v = try args.value("alpha", as: Double.self) { p.alpha = v }
        if let v = args.value("level") { p.level = v }
        do {
            try p.validate()
        } catch let e as EvalError {
            if case .badPolicy(_, let why) = e { throw CLIError.usage("invalid gate settings: \(why)") }
            throw e
        }
        return p
    }

    /// Refuses, before any work, to replace a --junit or --markdown file that is not ours.
    static func checkOutputs(_ args: ParsedArguments) throws {
        for name in ["junit", "markdown"] {
            if let path = args.value(name) { try OutputGuard.check(path, force: args.has("force")) }
        }
    }

    /// Runs `body`; when it throws (the reports cannot be compared), writes a JUnit file with
    /// one errored test case saying why, then rethrows.
    static func reportingErrors<T>(_ args: ParsedArguments, baseline: String, candidate: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if let path = args.value("junit") {
                let message = (error as? EvalError)?.description ?? String(describing: error)
                try? write(Data(JUnitReport.error(message, baseline: baseline, candidate: candidate).utf8), to: path)
            }
            throw error
        }
    }

    /// Runs the gate, prints the comparison, writes --junit / --markdown, and throws
    /// `gateFailed` (exit 3) when a check fails.
    static func gate(_ c: Comparison, policy: GatePolicy, args: ParsedArguments, out: inout Output) throws {
        do {
            try policy.check(classes: c.classes)
        } catch let e as EvalError {
            if case .badPolicy(_, let why) = e { throw CLIError.usage("invalid gate settings: \(why)") }
            throw e
        }
        let result = Gate.evaluate(c, policy: policy)
        out.write(CompareReport.text(c, gate: result))
        if let path = args.value("junit") { try write(Data(JUnitReport.render(c, gate: result).utf8), to: path) }
        if let path = args.value("markdown") { try write(Data(CompareReport.markdown(c, gate: result).utf8), to: path) }
        if !result.passed {
            let names = result.failures.map(\.name).joined(separator: ", ")
            throw CLIError.gateFailed("regression gate failed against \(c.baselineName): \(names) (see the checks above)")
        }
    }
}

/// Nothing a user gave is overwritten without asking: an existing file may be replaced only
/// when actiontrain wrote it for a report (it carries the report marker near its top, or is
/// the classification report of earlier versions), when it is empty, or with --force.
enum OutputGuard {
    static func check(_ path: String, force: Bool) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard !isDirectory.boolValue else { throw CLIError.failure("\(path) is a folder; pass a file path") }
        if force || isOurs(path) || isEmpty(path) { return }
        throw CLIError.failure("\(path) exists and was not written by actiontrain eval; pass --force to replace it or choose another path")
    }

    /// An empty file holds nothing of the user's (e.g. a file CI created for us to fill).
    static func isEmpty(_ path: String) -> Bool {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue == 0
    }

    static func isOurs(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 64 << 10)) ?? Data()
        if String(decoding: head, as: UTF8.self).contains(Reports.marker) { return true }
        // The classification report.json of earlier versions (no schema field).
        guard head.count < 64 << 10, (try? JSONDecoder().decode(ClassificationReport.self, from: head)) != nil else { return false }
        return true
    }
}
