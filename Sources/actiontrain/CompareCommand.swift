import Eval
import Foundation

enum CompareCommand: ParsableCommand {
    struct Options: CommandOptions {
        var baseline = "", candidate = ""
        var gate = GateFlags()
        var bootstrap = Bootstrap.defaultResamples
        var seed: UInt64?
        var force = false

        func validate() throws {
            guard bootstrap >= 0 && bootstrap <= EvalCommand.Options.maximumBootstrap else {
                throw CLIError.usage("--bootstrap must be 0 to \(EvalCommand.Options.maximumBootstrap), got \(bootstrap)")
            }
        }
    }

    static let spec = CommandSpec<Options>(
        name: "compare",
        summary: "Compare two evaluation reports side by side and run the regression gate (exit 3 on a regression).",
        positionals: [
            Positional("BASELINE", \.baseline, help: "The earlier report.json (from 'actiontrain eval --report DIR' or --json)."),
            Positional("CANDIDATE", \.candidate, help: "The new report.json, on the same data."),
        ],
        options: GateFlags.options.map { $0.within(\.gate) } + [
            Option("bootstrap", \.bootstrap, value: "N", help: "Paired bootstrap resamples for the intervals of the change (default 1000, at most 100000)."),
            Option("seed", \.seed, value: "N", help: "Seed of the paired bootstrap (default: the candidate report's seed)."),
            Option("force", \.force, help: "Replace --junit / --markdown files that actiontrain did not write."),
        ],
        discussion: """
            The reports must come from the same dataset (content hash), split and samples, with the
            same label set; otherwise compare refuses and says why. Samples are paired one to one (a
            window by its sequence and start frame, a sequence by its id) at the headline level of
            the reports unless --level says otherwise. Exit codes: 0 the gate passes, 3 it fails,
            1 the reports cannot be compared. Policy file and statistics: docs/reports.md.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let policy = try options.gate.policy()
        try options.gate.checkOutputs(force: options.force, inputs: [options.baseline, options.candidate])
        let baselinePath = options.baseline, candidatePath = options.candidate
        let comparison = try options.gate.reportingErrors(baseline: baselinePath, candidate: candidatePath) {
            try Comparison(
                baseline: try ReportJSON.read(baselinePath), candidate: try ReportJSON.read(candidatePath),
                baselineName: baselinePath, candidateName: candidatePath, level: policy.requestedLevel,
                confidence: 1 - policy.alpha, resamples: options.bootstrap, seed: options.seed)
        }
        try options.gate.gate(comparison, policy: policy, out: &out)
    }
}
