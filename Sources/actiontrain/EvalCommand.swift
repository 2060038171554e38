import ActionRuntime
import Datasets
import Eval
import Foundation
import Pipelines
import PoseCore

/// `actiontrain eval`: flags, outputs and the gate around `Evaluation.run`.
enum EvalCommand: ParsableCommand {
    struct Options: CommandOptions {
        var model = "", data = ""
        var split: String?
        var stride: Int?
        var report: String?
        var json: String?
        var useEvents = false
        var force = false
        var bootstrap = Bootstrap.defaultResamples
        var seed: UInt64 = 0
        var topK: PositiveIntegers?
        var baseline: String?
        var gate = GateFlags()
        var reading = DataFlags()
        var events = false
        var eventing = EventFlags()
        /// The most bootstrap resamples (each resamples every sequence).
        static let maximumBootstrap = 100_000

        func validate() throws {
            guard bootstrap >= 0 && bootstrap <= Self.maximumBootstrap else {
                throw CLIError.usage("--bootstrap must be 0 to \(Self.maximumBootstrap), got \(bootstrap)")
            }
            if let stride, !(1...PredictCommand.Options.maximumStride).contains(stride) {
                throw CLIError.usage("--stride must be 1 to \(PredictCommand.Options.maximumStride) frames, got \(stride)")
            }
            if baseline == nil {
                if gate.junit != nil { throw CLIError.usage("--junit writes the gate's result and needs --baseline FILE") }
                if gate.markdown != nil { throw CLIError.usage("--markdown writes the gate's result and needs --baseline FILE") }
            }
        }
    }

    static let spec = CommandSpec<Options>(
        name: "eval",
        summary: "Evaluate a model file on a dataset: metrics at the window and sequence level, reports, and a regression gate.",
        positionals: [
            Positional("MODEL", \.model, help: "Model file written by 'actiontrain fit'."),
            Positional("DATA", \.data, help: DataFlags.formats),
        ],
        options: [
            Option("split", \.split, value: "NAME", help: "Evaluate the sequences of this split (default: test when the data has one, else all)."),
            Option("stride", \.stride, value: "N", help: "Frames between window starts (default: a third of the window; at most 100000)."),
            Option("report", \.report, value: "DIR", help: "Write report.txt, .json, .md, .html, confusion.svg and CSV files to DIR."),
            Option("json", \.json, value: "FILE", help: "Also write the JSON report (with per-sample predictions) to FILE."),
            Option("use-events", \.useEvents, help: "Cut one window centred on each labeled event (as fit's useEvents) instead of sliding windows."),
            Option("force", \.force, help: "Replace output files that actiontrain did not write."),
            Option("bootstrap", \.bootstrap, value: "N", help: "Bootstrap resamples for the 95% intervals (default 1000, at most 100000; 0 turns them off)."),
            Option("seed", \.seed, value: "N", help: "Seed of the bootstrap and of the calibrated-ECE draws (default 0)."),
            Option("top-k", \.topK, value: "LIST", help: "Values of k for top-k accuracy, comma-separated (default 2,3,5)."),
            Option("baseline", \.baseline, value: "FILE", help: "Compare with this earlier report.json on the same data; exit 3 on a regression."),
            Option(
                "events", \.events,
                help: "Play each sequence with labelled segments as a live stream and score its events against them: F1 at IoU 0.5 and 0.7, start and end errors, latency (docs/reports.md)."),
        ] + GateFlags.options.map { $0.within(\.gate) } + DataFlags.options.map { $0.within(\.reading) }
            + EventFlags.options.map { $0.within(\.eventing) },
        discussion: """
            Each evaluated sequence is cut into the model's windows. Metrics are reported per window
            and per sequence (a sequence's probabilities are the mean of its windows'); the sequence
            level is the headline when every sequence holds one label, as published accuracies are
            per sequence. Intervals: seeded percentile bootstrap over whole sequences.
            With --events, each sequence that has labelled segments ("segments", docs/datasets.md) is
            played as a live stream as 'predict --events' plays it, and its events are scored against
            the segments; the window level then scores the stream's windows against the segment at
            their middle. The event options are predict's.
            With --baseline the gate compares this evaluation with an earlier report (see
            'actiontrain compare --help'); --junit and --markdown need --baseline.
            Report formats and the JSON schema: docs/reports.md.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        // Everything that can be refused is checked before the model runs.
        if !options.events, let flag = options.eventing.given.sorted().first {
            throw CLIError.usage("--\(flag) is an option of --events; add it, or leave it out")
        }
        if let flag = options.eventing.given.intersection(EventFlags.streamOnly).sorted().first {
            throw CLIError.usage("--\(flag) follows the people of a live stream (predict --stream); eval --events plays each sequence as one person")
        }
        if options.events && options.useEvents { throw CLIError.usage("--use-events cuts one window per labeled event; it does not go with --events") }
        var settings = EvalSettings()
        settings.bootstrapResamples = options.bootstrap
        settings.seed = options.seed
        if let ks = options.topK { settings.topK = ks.values }
        let policy = try options.gate.policy()
        let inputs = [options.model, options.data] + (options.baseline.map { [$0] } ?? [])
        try options.gate.checkOutputs(force: options.force, inputs: inputs)
        if let path = options.json { try OutputGuard.check(path, force: options.force, inputs: inputs) }
        // The report folder is this process's until the end (`FolderLock`).
        let reportLock = try options.report.map { try prepareReportFolder($0, force: options.force, inputs: inputs) }
        defer { withExtendedLifetime(reportLock) {} }
        let baseline = try options.baseline.map { path in
            try options.gate.reportingErrors(baseline: path, candidate: "this evaluation") { try ReportJSON.read(path) }
        }

        if let swapped = Guards.swappedArguments(model: options.model, data: options.data) { throw CLIError.usage(swapped) }
        let model = try ActionModel(contentsOf: options.model)
        try options.reading.checkPeople(for: model)
        let dataset = try options.reading.load(
            options.data, people: PeoplePolicy(modelInput: model.input), bodyOrder: BodyOrderRule(modelInput: model.input), out: &out)
        var warnings: [String] = []
        let report: EvalReport
        if options.events {
            let flags = options.eventing
            let stream = try flags.sessionOptions(model: model, modelPath: options.model, stride: options.stride, reading: options.reading)
            report = try Evaluation.events(
                model: model, modelPath: options.model, dataset: dataset, dataPath: options.data, split: options.split, stream: stream,
                events: try flags.eventOptions(model: model), forgetAfter: flags.forgetAfter, settings: settings)
        } else {
            report = try Evaluation.run(
                model: model, modelPath: options.model, dataset: dataset, dataPath: options.data,
                options: .init(split: options.split, stride: options.stride, useEvents: options.useEvents, settings: settings),
                warn: { warnings.append($0) })
        }
        for w in warnings { out.note("warning: \(options.data): \(w)\n") }
        out.write(TextReport.render(report))
        if let path = options.json { try OutputGuard.write(try ReportJSON.encode(report), to: path) }
        if let dir = options.report { try OutputGuard.write(try Reports.files(report), in: dir) }
        let h = report.headlineMetrics
        var events = ""
        if let e = report.events {
            events = "; events F1 \(String(format: "%.3f", e.f1(at: 0.5) ?? 0)) at IoU 0.5 (\(e.events) events, \(e.segments) segments)"
        }
        out.line(
            "eval: headline accuracy \(String(format: "%.4f", h.accuracy)) at the \(h.level.rawValue) level (\(h.samples) \(h.level.rawValue)s)"
                + events + (options.report.map { "; reports in \($0)" } ?? ""))

        if let baseline, let baselinePath = options.baseline {
            let comparison = try options.gate.reportingErrors(baseline: baselinePath, candidate: "this evaluation") {
                try Comparison(
                    baseline: baseline, candidate: report, baselineName: baselinePath, candidateName: "this evaluation",
                    level: policy.requestedLevel, confidence: 1 - policy.alpha,
                    resamples: settings.bootstrapResamples > 0 ? settings.bootstrapResamples : nil, seed: settings.seed)
            }
            out.line("")
            try options.gate.gate(comparison, policy: policy, out: &out)
        }
    }

    /// The report folder may exist; each file we would write must be new or ours, unchanged
    /// since we wrote it (or --force). Returns the folder's lock: one eval writes it at a time.
    static func prepareReportFolder(_ dir: String, force: Bool, inputs: [String] = []) throws -> FolderLock {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) && !isDirectory.boolValue {
            throw CLIError.failure("\(dir) exists and is not a folder; choose another --report")
        }
        let lock: FolderLock
        do { lock = try FolderLock.creatingFolder(dir, command: "eval") } catch let e as AtomicWrite.WriteError {
            throw CLIError.failure("\(dir): cannot create the report folder: \(e.reason)")
        }
        for name in reportFileNames { try OutputGuard.check("\(dir)/\(name)", force: force, inputs: inputs) }
        return lock
    }

    static let reportFileNames = [
        "report.txt", "report.json", "report.md", "report.html", "confusion.svg", "metrics.csv", "classes.csv", "confusion.csv",
        "predictions.csv",
    ]
}
