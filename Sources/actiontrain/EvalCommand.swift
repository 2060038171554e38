import ActionRuntime
import Datasets
import Eval
import Foundation
import PoseCore

enum EvalCommand {
    static let spec = CommandSpec(
        name: "eval",
        summary: "Evaluate a model file on a dataset: metrics at the window and sequence level, reports, and a regression gate.",
        positionals: [
            Positional(name: "MODEL", help: "Model file written by 'actiontrain fit'."),
            Positional(name: "DATA", help: "Dataset file (.jsonl native, .ts UEA)."),
        ],
        options: [
            Option("split", value: "NAME", help: "Evaluate the sequences of this split (default: test when the data has one, else all)."),
            Option("stride", value: "N", help: "Frames between window starts (default: a third of the window)."),
            Option("report", value: "DIR", help: "Write report.txt, .json, .md, .html, confusion.svg and CSV files to DIR."),
            Option("json", value: "FILE", help: "Also write the JSON report (with per-sample predictions) to FILE."),
            Option("use-events", help: "Cut one window centred on each labeled event (as fit's useEvents) instead of sliding windows."),
            Option("force", help: "Replace output files that actiontrain did not write."),
            Option("bootstrap", value: "N", help: "Bootstrap resamples for the 95% intervals (default 1000; 0 turns them off)."),
            Option("seed", value: "N", help: "Seed of the bootstrap (default 0)."),
            Option("top-k", value: "LIST", help: "Values of k for top-k accuracy, comma-separated (default 2,3,5)."),
            Option("baseline", value: "FILE", help: "Compare with this earlier report.json on the same data; exit 3 on a regression."),
        ] + GateOptions.options,
        discussion: """
            Each evaluated sequence is cut into the model's windows. Metrics are reported per window
            and per sequence (a sequence's probabilities are the mean of its windows'); the sequence
            level is the headline when every sequence holds one label, as published accuracies are
            per sequence. Intervals: seeded percentile bootstrap over whole sequences.
            With --baseline the gate compares this evaluation with an earlier report (see
            'actiontrain compare --help'); --junit and --markdown need --baseline.
            Report formats and the JSON schema: docs/reports.md.
            """)

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let modelPath = args.positionals[0], dataPath = args.positionals[1]
        // Everything that can be refused is checked before the model runs.
        var settings = EvalSettings()
        settings.bootstrapResamples = try args.value("bootstrap", as: Int.self) ?? Bootstrap.defaultResamples
        guard settings.bootstrapResamples >= 0 else { throw CLIError.usage("--bootstrap must be 0 or more") }
        settings.seed = try args.value("seed", as: UInt64.self) ?? 0
        if let list = args.value("top-k") {
            let ks = list.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !ks.isEmpty, ks.allSatisfy({ ($0 ?? 0) > 0 }) else {
                throw CLIError.usage("--top-k expects positive integers separated by commas, got '\(list)'")
            }
            settings.topK = ks.map { $0! }
        }
        let baselinePath = args.value("baseline")
        let policy = try GateOptions.policy(args)
        for name in ["junit", "markdown"] where args.value(name) != nil && baselinePath == nil {
            throw CLIError.usage("--\(name) writes the gate's result and needs --baseline FILE")
        }
        let force = args.has("force")
        try GateOptions.checkOutputs(args)
        if let path = args.value("json") { try OutputGuard.check(path, force: force) }
        let reportDir = args.value("report")
        if let dir = reportDir { try prepareReportFolder(dir, force: force) }
        let baseline = try baselinePath.map { path in
            try GateOptions.reportingErrors(args, baseline: path, candidate: "this evaluation") { try ReportJSON.read(path) }
        }

        let model = try ActionModel(contentsOf: modelPath)
        let dataset = try DatasetLoader.load(dataPath)
        try checkCompatible(model, dataset, dataPath: dataPath)
        let splits = Set(dataset.sequences.compactMap(\.split))
        let split = args.value("split") ?? (splits.contains("test") ? "test" : nil)
        let indices = dataset.sequences.indices.filter { split == nil || dataset.sequences[$0].split == split }
        guard !indices.isEmpty else {
            throw CLIError.failure("\(dataPath): no sequences in split '\(split ?? "")'; splits present: \(splits.sorted())")
        }
        let stride = try args.value("stride", as: Int.self) ?? max(1, model.input.window.frames / 3)
        guard stride > 0 else { throw CLIError.usage("--stride must be positive") }
        let report = try evaluate(
            model: model, modelPath: modelPath, dataset: dataset, dataPath: dataPath, indices: indices, split: split,
            stride: stride, useEvents: args.has("use-events"), settings: settings)
        out.write(TextReport.render(report))
        if let path = args.value("json") { try write(try ReportJSON.encode(report), to: path) }
        if let dir = reportDir {
            for file in try Reports.files(report) { try write(file.data, to: "\(dir)/\(file.name)") }
        }
        let h = report.headlineMetrics
        out.line(
            "eval: headline accuracy \(String(format: "%.4f", h.accuracy)) at the \(h.level.rawValue) level (\(h.samples) \(h.level.rawValue)s)"
                + (reportDir.map { "; reports in \($0)" } ?? ""))

        if let baseline, let baselinePath {
            let comparison = try GateOptions.reportingErrors(args, baseline: baselinePath, candidate: "this evaluation") {
                try Comparison(
                    baseline: baseline, candidate: report, baselineName: baselinePath, candidateName: "this evaluation",
                    level: policy.requestedLevel, confidence: 1 - policy.alpha,
                    resamples: settings.bootstrapResamples > 0 ? settings.bootstrapResamples : nil, seed: settings.seed)
            }
            out.line("")
            try GateOptions.gate(comparison, policy: policy, args: args, out: &out)
        }
    }

    /// Cuts the sequences at `indices` into the model's windows, runs the model and scores
    /// them at the window and sequence level (`fit` uses it for its validation report).
    static func evaluate(
        model: ActionModel, modelPath: String, dataset: Dataset, dataPath: String, indices: [Int], split: String?,
        stride: Int, useEvents: Bool, settings: EvalSettings
    ) throws -> EvalReport {
        let windows = try WindowSet(
            dataset: dataset, indices: indices, spec: model.input, stride: stride, classes: model.classes, useEvents: useEvents)
        let probabilities = try model.probabilities(features: try windows.features(), count: windows.count)
        let ids = sequenceIDs(dataset, indices)
        let table = try PredictionTable(
            sequence: windows.sources.map { ids[$0.sequence]! }, start: windows.sources.map(\.start), truth: windows.labels,
            probabilities: probabilities, classes: model.classes.count)
        let data = DataInfo(
            name: dataset.name, path: dataPath, hash: dataset.contentHash, split: split,
            windowFrames: model.input.window.frames, stride: stride)
        do {
            return try EvalReport.evaluate(
                classes: model.classes, windows: table, model: modelInfo(model.header, path: modelPath), data: data,
                settings: settings, tool: ActionRuntimeInfo.tool)
        } catch let e as EvalError {
            throw CLIError.failure("\(dataPath) (split \(split ?? "all")): \(e)")
        }
    }

    /// Sequence ids as given by the data; an id used twice gets `#index` appended.
    static func sequenceIDs(_ d: Dataset, _ indices: [Int]) -> [Int: String] {
        var count: [String: Int] = [:]
        for i in indices { count[d.sequences[i].id, default: 0] += 1 }
        var out: [Int: String] = [:]
        for i in indices {
            let id = d.sequences[i].id
            out[i] = count[id]! > 1 ? "\(id)#\(i)" : id
        }
        return out
    }

    /// The model's provenance as plain values for Eval.
    static func modelInfo(_ h: ModelHeader, path: String) -> ModelInfo {
        let s = h.input.skeleton, w = h.input.window
        var window = "\(w.frames) frames, \(w.mode.rawValue), padding \(w.padding.rawValue)"
        if let fps = w.frameRate { window += ", resampled to \(fps) fps" }
        let layers = h.layers.map { l -> String in
            if case .linear(_, let outputs) = l { return "linear \(outputs)" }
            return l.typeName
        }
        return ModelInfo(
            path: path, tool: h.provenance.tool, classes: h.classes,
            input: [
                "skeleton": "\(s.name) (\(s.jointCount) joints, \(s.dimensions)D, \(s.units.rawValue))",
                "window": window,
                "preprocessing": h.input.steps.isEmpty ? "none" : h.input.steps.map { String(describing: $0) }.joined(separator: ", "),
                "channels": h.input.channels.map(\.rawValue).joined(separator: ", "),
                "network": "input \(h.inputShape.time)x\(h.inputShape.channels): " + layers.joined(separator: " > "),
            ],
            trainingDataHash: h.provenance.datasetHash, configHash: h.provenance.configHash, seed: h.provenance.seed,
            metrics: h.provenance.metrics, notes: h.provenance.notes)
    }

    /// The report folder may exist; each file we would write must be new or ours (or --force).
    static func prepareReportFolder(_ dir: String, force: Bool) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CLIError.failure("\(dir) exists and is not a folder; choose another --report") }
            for name in reportFileNames { try OutputGuard.check("\(dir)/\(name)", force: force) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw CLIError.failure("\(dir): cannot create the report folder: \(error.localizedDescription)")
            }
        }
    }

    static let reportFileNames = [
        "report.txt", "report.json", "report.md", "report.html", "confusion.svg", "metrics.csv", "classes.csv", "confusion.csv",
        "predictions.csv",
    ]

    /// The dataset must have the model's skeleton and only labels the model knows.
    static func checkCompatible(_ model: ActionModel, _ d: Dataset, dataPath: String) throws {
        if let why = model.input.skeleton.mismatch(data: d.skeleton) { throw CLIError.failure("\(dataPath): \(why)") }
        let unknown = d.labels(outside: model.classes).map(\.label)
        guard unknown.isEmpty else {
            throw CLIError.failure("\(dataPath): labels \(unknown) are not among the model's classes \(model.classes)")
        }
    }
}
