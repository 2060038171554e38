import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

enum FitCommand {
    static let spec = CommandSpec(
        name: "fit",
        summary: "Train a classifier on a dataset and write a model file and a run folder.",
        positionals: [Positional(name: "DATA", help: "Dataset file (.jsonl native, .ts UEA). Optional with --resume.", optional: true)],
        options: [
            Option("config", value: "FILE", help: "JSON config file; flags override its keys."),
            Option("out", value: "DIR", help: "Run folder (default runs/<dataset>). It must not exist unless --force."),
            Option("force", help: "Replace the files of an existing run folder."),
            Option(
                "resume", value: "RUN",
                help: "Continue the run in folder RUN from its checkpoint, exactly where it stopped. Only --epochs, --learning-rate, --gradient-clip-norm, --patience, --min-delta and --threads may change."),
        ] + ConfigOptions.options,
        discussion: """
            Training uses the sequences whose split is "train" (all sequences when the data gives no
            split; "test" sequences are never used). Validation uses the "validation" split when there
            is one, otherwise a seeded stratified share of the training sequences (group-aware).
            The run folder gets config.json, log.jsonl, curves.svg and checkpoint.atc after every
            epoch, then model.atm and report.txt / report.json (the validation report). Ctrl-C saves
            a checkpoint and tells how to resume. Every option is described in docs/training.md.
            """)

    static let checkpointName = "checkpoint.atc"

    /// Everything a run needs, built the same way for a new run and a resumed one.
    struct Run {
        var dataPath: String
        var dataset: Dataset
        var runDir: String
        var config: TrainingConfig
        var input: InputSpec
        /// Precomputed features, or windows augmented afresh every epoch.
        var train: BatchSource
        var validation: TensorSet?
        /// Dataset indices of the validation sequences (for the sequence-level report).
        var validationIndices: [Int]
        var network: Network
        var trainer: Trainer
    }

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let run: Run
        if let resumeDir = args.value("resume") {
            run = try resume(resumeDir, args: args, out: &out)
        } else {
            guard let dataPath = args.positionals.first else {
                throw CLIError.usage("missing DATA. Usage: actiontrain fit DATA [options] or actiontrain fit --resume RUN")
            }
            let config = try ConfigOptions.resolve(file: args.value("config"), args: args)
            let dataset = try DatasetLoader.load(dataPath)
            let runDir = args.value("out") ?? "runs/\(dataset.name)"
            try prepareRunFolder(runDir, force: args.has("force"))
            run = try build(dataPath: dataPath, dataset: dataset, runDir: runDir, config: config, out: &out)
            run.network.initialize(seed: config.seed)
        }
        try train(run, out: &out)
    }

    /// Reads RUN's checkpoint, checks the dataset and the allowed overrides, and restores the
    /// trainer.
    static func resume(_ runDir: String, args: ParsedArguments, out: inout Output) throws -> Run {
        if args.value("config") != nil { throw CLIError.usage("--config cannot be combined with --resume; the run keeps its config") }
        if args.value("out") != nil { throw CLIError.usage("--out cannot be combined with --resume; the run folder is RUN") }
        for e in ConfigOptions.entries where args.value(e.flag) != nil && !ConfigOptions.resumable.contains(e.key) {
            throw CLIError.usage(
                "--\(e.flag) cannot change when resuming (it changes the model or the data); start a new run instead")
        }
        let path = "\(runDir)/\(checkpointName)"
        for name in AtomicFile.removeStaleTemporaries(in: runDir) { out.note("fit: removed \(runDir)/\(name), left by an interrupted write\n") }
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError.failure("\(runDir): no \(checkpointName) to resume from; was it written by 'actiontrain fit'?")
        }
        let checkpoint: Checkpoint
        do { checkpoint = try Checkpoint.read(path) } catch let e as CheckpointError { throw CLIError.failure(e.description) }
        let config = try ConfigOptions.resolve(base: checkpoint.config, values: [:], args: args)
        guard let dataPath = args.positionals.first ?? checkpoint.metadata["dataset"] else {
            throw CLIError.failure("\(path): the checkpoint does not name its dataset; pass DATA")
        }
        let dataset = try DatasetLoader.load(dataPath)
        if let hash = checkpoint.metadata["datasetHash"], hash != dataset.contentHash {
            throw CLIError.failure(
                "\(dataPath): the dataset changed since the run started (content hash \(dataset.contentHash), the checkpoint has \(hash)); resume with the original data or start a new run")
        }
        let run = try build(dataPath: dataPath, dataset: dataset, runDir: runDir, config: config, out: &out)
        do { try run.trainer.restore(checkpoint.state) } catch let e as TrainingError { throw CLIError.failure("\(path): \(e)") }
        let p = run.trainer.progress
        if run.trainer.isFinished {
            out.line("fit: the run already finished (\(p.records.count) epochs\(p.stoppedEarly ? ", stopped early" : "")); writing the model again")
        } else {
            out.line("fit: resuming \(runDir) at epoch \(p.epoch), batch \(p.batch)")
        }
        return run
    }

    /// Windows, tensors, network and trainer for `config` (parameters not initialised).
    static func build(dataPath: String, dataset: Dataset, runDir: String, config: TrainingConfig, out: inout Output) throws -> Run {
        BLAS.threads = config.threads
        for w in Lint.check(dataset, options: .init(imageSize: dataset.imageSize, windowFrames: config.windowFrames)) {
            out.note("warning: [\(w.code)] \(w)\n")
        }
        let (trainIdx, validIdx) = try trainingSplit(dataset, config: config, out: &out)
        let input: InputSpec
        do { input = try config.inputSpec(for: dataset.skeleton, imageSize: dataset.imageSize) } catch let e as TrainingError {
            throw CLIError.failure("\(e)")
        }
        let trainWindows = try WindowSet(
            dataset: dataset, indices: trainIdx, spec: input, stride: config.windowStride, classes: dataset.classes,
            useEvents: config.useEvents)
        let train: BatchSource
        if config.augmentation.isEnabled {
            train = try AugmentedBatches(
                windows: trainWindows, augmentation: config.augmentation, seed: config.seed, threads: config.threads,
                imageWidth: dataset.imageSize?.first)
        } else {
            train = TensorSet(features: try trainWindows.features(), labels: trainWindows.labels, valuesPerWindow: input.valuesPerWindow)
        }
        let validation = try validIdx.isEmpty
            ? nil
            : tensors(dataset, validIdx, spec: input, stride: config.windowStride, useEvents: config.useEvents)
        out.line(
            "fit: \(dataset.name): \(trainIdx.count) training sequences (\(train.count) windows"
                + (config.augmentation.isEnabled ? ", augmented" : "") + "), "
                + "\(validIdx.count) validation sequences (\(validation?.count ?? 0) windows), \(dataset.classes.count) classes")
        guard train.count > 0 else { throw CLIError.failure("\(dataPath): no training windows; check windowFrames and the data") }
        do {
            try RunChecks.checkValidationWindows(sequences: validIdx.count, windows: validation?.count ?? 0, windowFrames: input.window.frames)
            try RunChecks.checkDataFrameRate(dataset.frameRate)
        } catch let e as TrainingError { throw CLIError.failure("\(dataPath): \(e)") }
        let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
        let network: Network
        do {
            network = try Network(layers: config.layers(input: shape, classes: dataset.classes.count), input: shape)
        } catch let e as ModelError {
            throw CLIError.failure("the \(config.architecture.rawValue) model does not fit the input \(shape): \(e)")
        }
        let weights: [Float]?
        do {
            weights = try config.classWeights.weights(labels: trainWindows.labels, classes: dataset.classes.count)
        } catch let e as TrainingError { throw CLIError.failure("\(e)") }
        let trainer = Trainer(network: network, config: config, classWeights: weights)
        out.line(
            "fit: \(config.architecture.rawValue), \(network.parameterCount) parameters, \(config.optimizer.rawValue), "
                + "OpenBLAS \(BLAS.coreName) x\(config.threads)")
        return Run(
            dataPath: dataPath, dataset: dataset, runDir: runDir, config: config, input: input, train: train,
            validation: validation, validationIndices: validIdx, network: network, trainer: trainer)
    }

    /// Trains, checkpointing after every epoch, then writes the model and the reports.
    static func train(_ run: Run, out: inout Output) throws {
        let runDir = run.runDir, config = run.config, trainer = run.trainer
        let checkpointPath = "\(runDir)/\(checkpointName)"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let configData = try encoder.encode(config)
        try write(configData, to: "\(runDir)/config.json")
        let metadata = [
            "dataset": URL(fileURLWithPath: run.dataPath).standardizedFileURL.path, "datasetHash": run.dataset.contentHash, "datasetName": run.dataset.name,
            "classes": run.dataset.classes.joined(separator: ","),
        ]
        // The log is rewritten from the checkpoint's records, so that epochs logged after the
        // last checkpoint (before a crash) do not appear twice.
        let log = try LineWriter(path: "\(runDir)/log.jsonl")
        let lineEncoder = JSONEncoder()
        lineEncoder.outputFormatting = [.sortedKeys]
        for r in trainer.progress.records { try log.append(String(decoding: try lineEncoder.encode(r), as: UTF8.self)) }

        let interrupt = InterruptFlag()
        let signals = interrupt.watchSIGINT()
        var watching = true
        func stopWatching() {
            if watching { InterruptFlag.stopWatching(signals) }
            watching = false
        }
        defer { stopWatching() }
        var display = ProgressDisplay(terminal: out.isTerminal)
        var lastGoodEpoch: Int? = trainer.progress.records.last?.epoch
        let started = Date()
        var outcome: TrainingOutcome
        do {
            outcome = try trainer.fit(
                train: run.train, validation: run.validation, shouldStop: { interrupt.isRaised },
                onBatch: { p in display.batch(p, &out) },
                onEpoch: { r in
                    try log.append(String(decoding: try lineEncoder.encode(r), as: UTF8.self))
                    try write(
                        Data(
                            TrainingCurves.svg(
                                trainer.progress.records, title: "\(run.dataset.name): \(config.architecture.rawValue)",
                                bestEpoch: trainer.progress.bestEpoch
                            ).utf8), to: "\(runDir)/curves.svg")
                    try saveCheckpoint(trainer, config: config, metadata: metadata, to: checkpointPath)
                    lastGoodEpoch = r.epoch
                    display.epoch(r, epochs: config.epochs, &out)
                })
        } catch let e as TrainingError {
            display.finish(&out)
            if case .diverged = e {
                let saved =
                    lastGoodEpoch.map {
                        "the last good checkpoint (end of epoch \($0)) is intact in \(checkpointPath); resume from it with a lower rate: actiontrain fit --resume \(runDir) --learning-rate LR"
                    } ?? "no checkpoint was written (it diverged in the first epoch); start again with a lower learning rate"
                throw CLIError.failure("\(e.description); \(saved)")
            }
            throw CLIError.failure(e.description)
        }
        display.finish(&out)
        stopWatching()  // from here on Ctrl-C ends the process as usual
        if case .interrupted(let epoch, let batch) = outcome {
            try saveCheckpoint(trainer, config: config, metadata: metadata, to: checkpointPath)
            throw CLIError.interrupted(
                "interrupted at epoch \(epoch), batch \(batch); saved \(checkpointPath). Resume with: actiontrain fit --resume \(runDir)")
        }
        if case .stoppedEarly(let epoch) = outcome {
            out.line(
                "fit: early stopping after epoch \(epoch): \(config.monitor.rawValue) has not improved for \(config.patience) epochs")
        }
        if let best = trainer.progress.bestEpoch, run.validation != nil {
            out.line("fit: keeping the parameters of epoch \(best) (best \(config.monitor.rawValue))")
        }
        let seconds = Date().timeIntervalSince(started)
        try writeResults(run, configData: configData, seconds: seconds, out: &out)
    }

    static func saveCheckpoint(_ trainer: Trainer, config: TrainingConfig, metadata: [String: String], to path: String) throws {
        do {
            try Checkpoint(config: config, state: trainer.state(), metadata: metadata).write(to: path)
        } catch let e as CheckpointError {
            throw CLIError.failure(e.description)
        }
    }

    /// model.atm and the validation reports.
    static func writeResults(_ run: Run, configData: Data, seconds: Double, out: inout Output) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        var metrics: [String: Double] = [:]  // deterministic only: identical runs give identical model files
        if let last = run.trainer.progress.records.last { metrics["epochs"] = Double(last.epoch) }
        if let validation = run.validation {
            let (vl, va) = run.trainer.evaluate(validation)
            metrics["validationAccuracy"] = va
            metrics["validationLoss"] = vl
        }
        let provenance = ModelHeader.Provenance(
            datasetHash: run.dataset.contentHash, configHash: Hashing.fnv1a64(configData), seed: run.config.seed,
            metrics: metrics, notes: ["dataset": run.dataset.name])
        let modelBytes = try ModelFile.encode(
            classes: run.dataset.classes, input: run.input, network: run.network, provenance: provenance,
            trainingFrameRate: run.dataset.frameRate)
        let modelPath = "\(run.runDir)/model.atm"
        try write(Data(modelBytes), to: modelPath)
        // Anything failing from here moves the model aside and says so.
        try RunChecks.afterWritingModel(at: modelPath) {
            if !run.validationIndices.isEmpty {
                // The validation report comes from the file just written, through eval's own path:
                // what it shows is what `actiontrain eval` and the runtime will see.
                let model = try ActionModel(bytes: modelBytes)
                do {
                    let report = try EvalCommand.evaluate(
                        model: model, modelPath: modelPath, dataset: run.dataset, dataPath: run.dataPath,
                        indices: run.validationIndices, split: "validation", stride: run.config.windowStride,
                        useEvents: run.config.useEvents, settings: EvalSettings())
                    let text = TextReport.render(report)
                    try write(try ReportJSON.encode(report), to: "\(run.runDir)/report.json")
                    try write(Data(text.utf8), to: "\(run.runDir)/report.txt")
                    out.write("\nvalidation report\n" + text)
                } catch let e as CLIError {
                    // The model is written; a validation set the report cannot score (e.g. one class)
                    // only costs the report.
                    out.note("warning: no validation report: \(e)\n")
                }
            }
        }
        let trainLabels = (run.train as? TensorSet)?.labels ?? (run.train as? AugmentedBatches)?.windows.labels ?? []
        let records = run.trainer.progress.records
        if let warning = RunChecks.chanceLevelWarning(
            accuracy: metrics["validationAccuracy"] ?? records.last?.trainAccuracy ?? .nan,
            set: run.validation == nil ? "training" : "validation",
            labels: (run.validation?.labels ?? trainLabels).map(Int.init), classes: run.dataset.classes.count, records: records,
            learningRate: run.config.learningRate)
        {
            out.note("warning: \(warning)\n")
        }
        out.line(String(format: "fit: trained in %.1f s; wrote %@", seconds, modelPath))
    }

    /// Training and validation sequence indices: the data's own split when it has one.
    static func trainingSplit(_ d: Dataset, config: TrainingConfig, out: inout Output) throws -> (train: [Int], validation: [Int]) {
        let splits = Set(d.sequences.compactMap(\.split))
        let usable = d.sequences.indices.filter { d.sequences[$0].split != "test" }
        if splits.contains("validation") {
            return (usable.filter { d.sequences[$0].split != "validation" }, usable.filter { d.sequences[$0].split == "validation" })
        }
        guard !usable.isEmpty else {
            throw CLIError.failure("\(d.name): no training sequences (every sequence is in the test split)")
        }
        if config.validationFraction == 0 { return (usable, []) }
        let split = try Splits.split(d, indices: usable, fraction: config.validationFraction, seed: config.seed)
        for w in split.warnings { out.note("warning: \(w)\n") }
        return (split.first, split.second)
    }

    static func tensors(_ d: Dataset, _ indices: [Int], spec: InputSpec, stride: Int, useEvents: Bool) throws -> TensorSet {
        let windows = try WindowSet(dataset: d, indices: indices, spec: spec, stride: stride, classes: d.classes, useEvents: useEvents)
        return TensorSet(features: try windows.features(), labels: windows.labels, valuesPerWindow: spec.valuesPerWindow)
    }

    /// Creates the run folder; an existing non-empty folder needs --force.
    static func prepareRunFolder(_ dir: String, force: Bool) throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: dir, isDirectory: &isDir) {
            guard isDir.boolValue else { throw CLIError.failure("\(dir) exists and is not a folder; choose another --out") }
            let contents = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
            if !contents.isEmpty && !force {
                throw CLIError.failure(
                    "\(dir) already holds a run; pass --force to replace it, --resume \(dir) to continue it, or choose another --out")
            }
            if force { try? fm.removeItem(atPath: "\(dir)/\(checkpointName)") }
        }
        do {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw CLIError.failure("\(dir): cannot create the run folder: \(error.localizedDescription)")
        }
    }
}

/// Set from a SIGINT handler, read by the training loop between batches.
///
/// The handler is a plain C signal handler that only counts (async-signal-safe: a store to a
/// global, `write`, `_exit`). A dispatch signal source is not used: libdispatch installs its
/// own handler once per process, and restoring the previous disposition after a run left later
/// runs in the same process deaf to Ctrl-C.
final class InterruptFlag: @unchecked Sendable {
    var isRaised: Bool { sigintCount > 0 }

    /// Routes SIGINT to this flag until `stopWatching`. A second Ctrl-C exits at once (the
    /// last checkpoint on disk is complete: writes are atomic).
    func watchSIGINT() -> SignalWatch {
        sigintCount = 0
        return SignalWatch(previous: signal(SIGINT, handleSIGINT))
    }

    struct SignalWatch {
        let previous: (@convention(c) (Int32) -> Void)?
    }

    /// Puts back the SIGINT handler found before.
    static func stopWatching(_ watch: SignalWatch) {
        signal(SIGINT, watch.previous)
    }
}

/// SIGINTs received while a run watches; written only by `handleSIGINT`.
nonisolated(unsafe) private var sigintCount: Int32 = 0

private func handleSIGINT(_: Int32) {
    sigintCount &+= 1
    let message: StaticString =
        sigintCount > 1
        ? "\nactiontrain: second Ctrl-C, exiting without a new checkpoint\n"
        : "\nactiontrain: Ctrl-C, saving a checkpoint after this batch...\n"
    _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    if sigintCount > 1 { _exit(130) }
}

/// The progress display: on a terminal a bar redrawn in place (at most 10 times a second) and
/// one line per epoch; otherwise one plain line per epoch.
struct ProgressDisplay {
    let terminal: Bool
    private var lastDraw: UInt64 = 0
    private var drawn = false
    private var epochSeconds: [Double] = []

    init(terminal: Bool) { self.terminal = terminal }

    mutating func batch(_ p: BatchProgress, _ out: inout Output) {
        guard terminal else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw > 100_000_000 || p.batch == p.batches else { return }
        lastDraw = now
        let width = 24, filled = p.batches > 0 ? p.batch * width / p.batches : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let rate = p.seconds > 0 ? Double(p.seen) / p.seconds : 0
        let perBatch = p.batch > 0 ? p.seconds / Double(p.batch) : 0
        let remaining = Double((p.epochs - p.epoch) * p.batches + (p.batches - p.batch)) * perBatch
        let line = String(
            format: "epoch %d/%d [%@] %d/%d  %.0f win/s  loss %.4f  acc %.3f  ETA %@", p.epoch, p.epochs, bar, p.batch,
            p.batches, rate, p.loss, p.accuracy, duration(remaining))
        out.write("\r\u{1B}[2K" + line)
        drawn = true
    }

    mutating func epoch(_ r: EpochRecord, epochs: Int, _ out: inout Output) {
        finish(&out)
        let v = r.validationAccuracy.map { String(format: "  val loss %.4f  val acc %.3f", r.validationLoss!, $0) } ?? ""
        out.line(
            String(format: "epoch %3d/%d  loss %.4f  acc %.3f", r.epoch, epochs, r.trainLoss, r.trainAccuracy) + v
                + String(format: "  %.0f windows/s  lr %.3g", r.windowsPerSecond, r.learningRate ?? 0))
    }

    /// Clears the bar line.
    mutating func finish(_ out: inout Output) {
        if drawn { out.write("\r\u{1B}[2K") }
        drawn = false
    }

    func duration(_ s: Double) -> String {
        let t = Int(s.rounded())
        return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String(format: "%d:%02d", t / 60, t % 60)
    }
}

/// Writes a file atomically (`AtomicFile`: a recognisable temporary file, flushed, renamed),
/// with a one-line error.
func write(_ data: Data, to path: String) throws {
    do {
        try data.withUnsafeBytes { try AtomicFile.write($0, to: path) }
    } catch let e as AtomicFile.WriteError {
        throw CLIError.failure(e.description)
    }
}

/// Appends lines to a file (created empty), flushing each (the per-epoch log survives a crash).
final class LineWriter {
    let handle: FileHandle
    let path: String
    init(path: String) throws {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw CLIError.failure("\(path): cannot create the log file")
        }
        handle = h
    }
    func append(_ line: String) throws {
        do { try handle.write(contentsOf: Data((line + "\n").utf8)) } catch {
            throw CLIError.failure("\(path): cannot write: \(error.localizedDescription)")
        }
    }
    deinit { try? handle.close() }
}

enum Hashing {
    static func fnv1a64(_ data: Data) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in data { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(format: "fnv1a64:%016llx", h)
    }
}
