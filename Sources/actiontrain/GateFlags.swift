import Eval
import Foundation
import Pipelines

/// Options of the regression gate, shared by `compare` and `eval --baseline`.
struct GateFlags {
    var policyFile: String?
    var maxAccuracyDrop: Double?
    var maxMacroF1Drop: Double?
    var maxRecallDrop: Double?
    var maxECERise: Double?
    var maxLogLossRise: Double?
    var recallDrop: [String] = []
    var requireSignificance = false
    var alpha: Double?
    var level: String?
    var junit: String?
    var markdown: String?

    static let options: [Option<GateFlags>] = [
        Option("policy", \.policyFile, value: "FILE", help: "Gate policy JSON (thresholds, significance, level); flags override its keys."),
        Option("max-accuracy-drop", \.maxAccuracyDrop, value: "X", help: "Fail when accuracy drops by more than X (default 0.02)."),
        Option("max-macro-f1-drop", \.maxMacroF1Drop, value: "X", help: "Fail when macro-F1 drops by more than X (default 0.02)."),
        Option("max-recall-drop", \.maxRecallDrop, value: "X", help: "Fail when any class's recall drops by more than X (default 0.10)."),
        Option("max-ece-rise", \.maxECERise, value: "X", help: "Fail when the expected calibration error rises by more than X (default: not checked)."),
        Option("max-log-loss-rise", \.maxLogLossRise, value: "X", help: "Fail when the log loss rises by more than X (default: not checked)."),
        Option("recall-drop", \.recallDrop, value: "LABEL=X", help: "Per-class recall threshold; may be repeated."),
        Option("require-significance", \.requireSignificance, help: "Fail only on drops that are also significant (McNemar / paired bootstrap at --alpha)."),
        Option("alpha", \.alpha, value: "A", help: "Significance level (default 0.05)."),
        Option("level", \.level, value: "LEVEL", help: "Compare at the headline (default), window or sequence level."),
        Option("junit", \.junit, value: "FILE", help: "Write the gate as JUnit XML (one test case per check)."),
        Option("markdown", \.markdown, value: "FILE", help: "Write the comparison and gate as Markdown (for a pull request or a CI job summary)."),
    ]

    /// The policy: defaults, then --policy, then flags.
    func policy() throws -> GatePolicy {
        var p = try policyFile.map { try GatePolicy.load($0) } ?? GatePolicy()
        if let v = maxAccuracyDrop { p.maxAccuracyDrop = v }
        if let v = maxMacroF1Drop { p.maxMacroF1Drop = v }
        if let v = maxRecallDrop { p.maxClassRecallDrop = v }
        if let v = maxECERise { p.maxECERise = v }
        if let v = maxLogLossRise { p.maxLogLossRise = v }
        for item in recallDrop {
            guard let eq = item.lastIndex(of: "="), let v = Double(item[item.index(after: eq)...]), eq != item.startIndex else {
                throw CLIError.usage("--recall-drop expects LABEL=X, got '\(item)'")
            }
            p.classRecallDrop[String(item[..<eq])] = v
        }
        if requireSignificance { p.requireSignificance = true }
        if let v = alpha { p.alpha = v }
        if let v = level { p.level = v }
        try Self.usageErrors { try p.validate() }
        return p
    }

    /// Refuses, before any work, to replace a --junit or --markdown file that is not ours.
    func checkOutputs(force: Bool, inputs: [String] = []) throws {
        for path in [junit, markdown].compactMap({ $0 }) { try OutputGuard.check(path, force: force, inputs: inputs) }
    }

    /// Runs `body`; when it throws (the reports cannot be compared), writes a JUnit file with
    /// one errored test case saying why, then rethrows.
    func reportingErrors<T>(baseline: String, candidate: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if let path = junit {
                let message = (error as? EvalError)?.description ?? String(describing: error)
                try? OutputGuard.write(Data(JUnitReport.error(message, baseline: baseline, candidate: candidate).utf8), to: path)
            }
            throw error
        }
    }

    /// Runs the gate, prints the comparison, writes --junit / --markdown, and throws
    /// `gateFailed` (exit 3) when a check fails.
    func gate(_ c: Comparison, policy: GatePolicy, out: inout Output) throws {
        try Self.usageErrors { try policy.check(classes: c.classes) }
        let result = Gate.evaluate(c, policy: policy)
        out.write(CompareReport.text(c, gate: result))
        if let path = junit { try OutputGuard.write(Data(JUnitReport.render(c, gate: result).utf8), to: path) }
        if let path = markdown { try OutputGuard.write(Data(CompareReport.markdown(c, gate: result).utf8), to: path) }
        if !result.passed {
            let names = result.failures.map(\.name).joined(separator: ", ")
            throw CLIError.gateFailed("regression gate failed against \(c.baselineName): \(names) (see the checks above)")
        }
    }

    /// A policy the gate refuses is a usage error.
    static func usageErrors(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let e as EvalError {
            if case .badPolicy(_, let why) = e { throw CLIError.usage("invalid gate settings: \(why)") }
            throw e
        }
    }
}
