import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

/// One fit run, as `actiontrain fit` makes it: config → data → split → windows → network →
/// training → model file and validation report, with a run folder (optional) that holds
/// the config, the log, the curves, a checkpoint after every epoch, the model and the report.
///
/// In a job of several ranks (`group`, docs/distributed.md) every rank builds the same run and
/// trains its share of each step; rank 0 alone writes the run folder.
///
/// With `ensemble` N > 1 the run trains N members one after another (`Ensemble`), each a
/// complete training with its own seed and best epoch on the same split, its log, curves,
/// checkpoint and model in the folder `member<m>/` (m from 1; `RunFolder.member`); the model
/// written averages their probabilities. A resumed run restores every member that has a
/// checkpoint and continues with the last of them.
///
/// Use: `start` (or `resume`) builds everything and collects `warnings`; `train` runs the
/// epochs, reporting progress through callbacks and stopping when asked; `finish` writes
/// the model and the validation report. Nothing is printed.
public final class FitRun {
    public let dataPath: String
    public let dataset: Dataset
    /// Nil: nothing is written (a model in memory only, e.g. for cross-validation).
    public let folder: RunFolder?
    /// The members started (or restored) so far, in order (one unless `ensemble` > 1).
    public private(set) var members: [Training]
    /// The index of the member training now (or trained last, or resumed from).
    public private(set) var current = 0
    /// The member training now (or trained last, or resumed from).
    public var training: Training { members[current] }
    /// The ranks that train this run together.
    public let group: Collective
    /// The folder to write to: `folder` on rank 0, nil on the others.
    var writer: RunFolder? { group.rank == 0 ? folder : nil }
    /// Warnings found while building the run (lint, split, temporary files removed on resume).
    public private(set) var warnings: [FitWarning]
    /// What the recipe chose (`FitPipeline.resolve`); empty for a resumed run.
    public private(set) var recipe: [Recipe.Choice] = []
    /// The resolved config (`FitPipeline.resolve`); members train with their own seeds
    /// (`Ensemble.config`).
    public let config: TrainingConfig
    /// The data of member 0 (the others' differ only in their augmentation seed).
    public var data: TrainingData { members[0].data }
    public var progress: TrainingProgress { training.trainer.progress }
    /// Seconds spent in `train` (all calls).
    public private(set) var trainingSeconds = 0.0
    let configData: Data

    /// Builds a new run of `config` on `dataset` (read from `dataPath`, which the checkpoint
    /// records). `explicit`: the config keys the user set, the others chosen by the recipe
    /// (nil: `config` is used as it is; see `FitPipeline.resolve`). `split` overrides the
    /// default split (`FitPipeline.split`), e.g. with a cross-validation fold.
    public static func start(
        dataPath: String, dataset: Dataset, config: TrainingConfig, explicit: Set<String>? = nil, folder: RunFolder?,
        split: FitPipeline.Split? = nil, group: Collective = SingleProcess()
    ) throws -> FitRun {
        BLAS.threads = config.threads
        let resolved = try FitPipeline.resolve(config, for: dataset, explicit: explicit)
        let run = try FitRun(dataPath: dataPath, dataset: dataset, resolved: resolved, folder: folder, split: split, group: group)
        run.recipe = resolved.choices
        return run
    }

    /// Continues the run in `folder` from its checkpoint, exactly where it stopped (an
    /// ensemble: from its members' checkpoints, `checkpointPaths`). `configure` may change the
    /// checkpoint's config in the fields of `FitRun.resumableKeys` only (for every member);
    /// `dataPath` defaults to the dataset the checkpoint records, whose content must not have
    /// changed (read with `read`, as the run's data was).
    public static func resume(
        folder: RunFolder, dataPath: String? = nil, read: ReadOptions = ReadOptions(), group: Collective = SingleProcess(),
        configure: (TrainingConfig) throws -> TrainingConfig = { $0 }
    ) throws -> FitRun {
        // Rank 0 writes: it locks the folder before clearing what killed writes left in it.
        let folder = group.rank == 0 && folder.lock == nil ? try RunFolder.claim(folder.path) : folder
        let paths = checkpointPaths(folder), path = paths[0]
        let removed = group.rank == 0 ? AtomicWrite.removeStaleTemporaries(in: folder.path) : []
        guard FileManager.default.fileExists(atPath: path) else { throw FitError.noCheckpoint(folder: folder.path) }
        let checkpoint = try Checkpoint.read(path)
        let config = try configure(checkpoint.config)
        let changed = try changedKeys(checkpoint.config, config).subtracting(resumableKeys)
        guard changed.isEmpty else { throw FitError.changedOnResume(keys: changed.sorted()) }
        try config.validate()
        guard let dataPath = dataPath ?? checkpoint.metadata["dataset"] else { throw FitError.checkpointNamesNoDataset(checkpoint: path) }
        let dataset = try DatasetLoader.read(dataPath, options: read).dataset
        if let hash = checkpoint.metadata["datasetHash"], hash != dataset.contentHash {
            throw FitError.datasetChanged(dataPath: dataPath, hash: dataset.contentHash, checkpointHash: hash)
        }
        // (Checkpoints written before the detail hash have none.)
        if let details = checkpoint.metadata["datasetDetailHash"], details != dataset.detailHash {
            throw FitError.datasetDetailsChanged(dataPath: dataPath)
        }
        BLAS.threads = config.threads
        let resolved = FitPipeline.ResolvedConfig(config: config, input: try FitPipeline.input(config, for: dataset))
        let run = try FitRun(dataPath: dataPath, dataset: dataset, resolved: resolved, folder: folder, split: nil, group: group)
        if !removed.isEmpty { run.warnings.append(.removedTemporaryFiles(folder: folder.path, names: removed)) }
        guard paths.count <= config.ensemble else {
            throw FitError.incompatibleCheckpoint(checkpoint: paths[config.ensemble], reason: "the run has \(config.ensemble) members")
        }
        for (m, path) in paths.enumerated() {
            if m > 0 { run.members.append(try run.makeMember(m)) }
            let state = m == 0 ? checkpoint.state : try Checkpoint.read(path).state
            run.current = m
            do { try run.training.trainer.restore(state) } catch let e as TrainingError {
                throw FitError.incompatibleCheckpoint(checkpoint: path, reason: e.description)
            }
        }
        return run
    }

    /// The checkpoints to resume the run in `folder` from: its members' in order, as far as
    /// they go, when `member1/` has one (an ensemble), else the run's own.
    static func checkpointPaths(_ folder: RunFolder) -> [String] {
        var paths: [String] = []
        while FileManager.default.fileExists(atPath: folder.member(paths.count).checkpointPath) {
            paths.append(folder.member(paths.count).checkpointPath)
        }
        return paths.isEmpty ? [folder.checkpointPath] : paths
    }

    /// Config fields a resumed run may change: they alter neither the model nor the data.
    public static let resumableKeys: Set<String> = ["epochs", "learningRate", "gradientClipNorm", "patience", "minDelta", "threads", "switchEvidence"]

    private init(
        dataPath: String, dataset: Dataset, resolved: FitPipeline.ResolvedConfig, folder: RunFolder?, split: FitPipeline.Split?,
        group: Collective
    ) throws {
        let config = resolved.config
        // Fit windows resample short sequences instead of padding them: no short-sequence lint.
        let lintWindow = config.windowMode == .sliding && !config.useEvents ? config.windowFrames : nil
        var warnings = Lint.check(dataset, options: .init(imageSize: dataset.imageSize, windowFrames: lintWindow)).map(FitWarning.lint)
        let given = split
        let split = try split ?? FitPipeline.split(dataset, config: config)
        warnings += split.warnings.map(FitWarning.split)
        // A split given by the caller is a fold's (tune, sweep), which may miss a rare class.
        try Guards.requireTrainable(dataset, training: split.train, file: dataPath, everyClass: given == nil)
        let data = try TrainingData(dataset: dataset, train: split.train, validation: split.validation, config: config, input: resolved.input)
        warnings += Self.dataWarnings(dataset, split: split, data: data, config: config)
        self.members = [try Training(config: config, data: data, group: group)]
        self.config = config
        self.dataPath = dataPath
        self.dataset = dataset
        self.folder = folder
        self.group = group
        self.warnings = warnings
        configData = try RunFolder.encode(config)
        if group.size > 1 {
            // Ranks that read other data or resolved another config would train different models.
            try group.requireSame(
                "data \(dataset.contentHash), config \(FNV1a64.text(of: configData)), \(data.train.count) windows",
                what: "the dataset, config and window count")
        }
    }

    /// What is wrong with the data for this config, found before training, each with the key
    /// that fixes it: windows mostly padding, a kernel over time longer than the window, classes
    /// with very few sequences, a validation split too small to choose an epoch from.
    static func dataWarnings(_ d: Dataset, split: FitPipeline.Split, data: TrainingData, config: TrainingConfig) -> [FitWarning] {
        var out: [FitWarning] = []
        let architectures = config.members.isEmpty ? [config.architecture] : config.members.map(\.architecture)
        let frames = data.input.window.frames
        if architectures.contains(where: { $0 == .tcn || $0 == .stgcn }) && config.kernel > frames {
            out.append(.kernelLongerThanWindow(kernel: config.kernel, windowFrames: frames))
        }
        if config.windowMode == .sliding && data.paddedShare > 0.5 {
            out.append(.mostlyPadding(share: data.paddedShare, windowFrames: config.windowFrames))
        }
        var perClass = [String: Int]()
        for i in split.train { if let l = d.sequences[i].label { perClass[l, default: 0] += 1 } }
        let tiny = d.classes.filter { perClass[$0, default: 0] < tinyClass }.map { ($0, perClass[$0, default: 0]) }
        if !tiny.isEmpty { out.append(.tinyClasses(tiny.map { "\($0.0) (\($0.1))" })) }
        let classes = Set(split.validation.compactMap { d.sequences[$0].label }).count
        if !split.validation.isEmpty && split.validation.count < 3 * max(1, d.classes.count) {
            out.append(.smallValidation(sequences: split.validation.count, classes: classes))
        }
        return out
    }

    /// A class with fewer training sequences than this gets a warning.
    public static let tinyClass = 5

    /// True when the checkpoint resumed from had finished (all epochs, or stopped early), for
    /// every member.
    public var isFinished: Bool { members.count == config.ensemble && members.allSatisfy(\.trainer.isFinished) }

    /// The model written averages probabilities (an ensemble, a test-time flip, or members
    /// combined by the mean of their probabilities): a temperature divides each averaged
    /// branch's logits, and can change the predicted class.
    public var averagesProbabilities: Bool {
        config.ensemble > 1 || config.testTimeFlip
            || (config.memberAverage == .probabilities && max(config.members.count, config.streams.count) > 1)
    }

    /// What `train` reports of the members (one unless `ensemble` > 1), 0-based.
    public enum MemberEvent: Equatable, Sendable {
        case started(Int)
        /// Trained to the end (all epochs, or stopped early); not sent when interrupted.
        case finished(Int, TrainingOutcome)
    }

    /// Trains each member in turn from the first (see `Training.run`; a member restored
    /// finished only takes back its best epoch's parameters), and returns the last one's
    /// outcome, or the interruption. With a run folder: writes config.json, and for each member
    /// (in `memberFolder`) rewrites its log.jsonl from the records so far and after every epoch
    /// appends to the log, redraws curves.svg and saves the checkpoint, before calling
    /// `onEpoch`; when `shouldStop` ends the run early, saves the checkpoint too. Divergence
    /// throws `FitError.diverged` naming the last good checkpoint, which is left intact.
    public func train(
        shouldStop: () -> Bool = { false }, onMember: (MemberEvent) -> Void = { _ in }, onBatch: (BatchProgress) -> Void = { _ in },
        onEpoch: (EpochRecord) -> Void = { _ in }
    ) throws -> TrainingOutcome {
        if let folder = writer { try AtomicFile.write(configData, to: folder.configPath) }
        let started = Date()
        defer { trainingSeconds += Date().timeIntervalSince(started) }
        current = 0
        while true {
            onMember(.started(current))
            let outcome = try trainMember(current, shouldStop: shouldStop, onBatch: onBatch, onEpoch: onEpoch)
            if case .interrupted = outcome { return outcome }
            onMember(.finished(current, outcome))
            guard current + 1 < config.ensemble else { return outcome }
            current += 1
            if current == members.count { members.append(try makeMember(current)) }
        }
    }

    /// Member m's training (m > 0): the run's split, the member's config (`Ensemble.config`).
    func makeMember(_ m: Int) throws -> Training {
        let config = Ensemble.config(self.config, member: m)
        // Augmented windows are drawn from the member's seed; fixed ones are shared.
        let data =
            self.data.isAugmented
            ? try TrainingData(
                dataset: dataset, train: self.data.trainIndices, validation: self.data.validationIndices, config: config,
                input: self.data.input) : self.data
        return try Training(config: config, data: data, group: group)
    }

    /// The folder of member m's files (created): the run folder itself for a single network,
    /// else `member<m+1>/` in it. Nil on ranks other than 0 and without a run folder.
    func memberFolder(_ m: Int) throws -> RunFolder? {
        guard let folder = writer, config.ensemble > 1 else { return writer }
        let member = folder.member(m)
        do { try FileManager.default.createDirectory(atPath: member.path, withIntermediateDirectories: true) } catch {
            throw FitError.cannotCreateFolder(member.path, reason: error.localizedDescription)
        }
        return member
    }

    /// The checkpoint of the member training now (nil on ranks other than 0 and without a run
    /// folder).
    public var checkpointPath: String? { writer.map { config.ensemble > 1 ? $0.member(current) : $0 }?.checkpointPath }

    private func trainMember(
        _ m: Int, shouldStop: () -> Bool, onBatch: (BatchProgress) -> Void, onEpoch: (EpochRecord) -> Void
    ) throws -> TrainingOutcome {
        let folder = try memberFolder(m)
        let log = try folder.map { try $0.startLog(progress.records) }
        var lastGoodEpoch = progress.records.last?.epoch
        let outcome: TrainingOutcome
        do {
            outcome = try training.run(
                shouldStop: shouldStop, onBatch: onBatch,
                onEpoch: { r in
                    if let folder, let log {
                        try log.append(r)
                        let member = config.ensemble == 1 ? "" : ", member \(m + 1)/\(config.ensemble)"
                        let title = "\(dataset.name): \(config.modelName)\(member)"
                        let svg = TrainingCurves.svg(progress.records, title: title, bestEpoch: progress.bestEpoch)
                        try AtomicFile.write(Data(svg.utf8), to: folder.curvesPath)
                        try saveCheckpoint(folder)
                    }
                    lastGoodEpoch = r.epoch
                    onEpoch(r)
                })
        } catch let e as TrainingError {
            guard case .diverged = e else { throw e }
            throw FitError.diverged(e, checkpoint: folder?.checkpointPath, lastGoodEpoch: lastGoodEpoch)
        }
        if case .interrupted = outcome, let folder { try saveCheckpoint(folder) }
        return outcome
    }

    func saveCheckpoint(_ folder: RunFolder) throws {
        let metadata = [
            "dataset": URL(fileURLWithPath: dataPath).standardizedFileURL.path, "datasetHash": dataset.contentHash,
            "datasetName": dataset.name, "classes": dataset.classes.joined(separator: ","), "datasetDetailHash": dataset.detailHash,
        ]
        try Checkpoint(config: config, state: training.trainer.state(), metadata: metadata).write(to: folder.checkpointPath)
    }

    /// Encodes the model (with its provenance: dataset and config hashes, seed, epochs and
    /// validation metrics, all deterministic, so identical runs give identical files), writes
    /// model.atm, and scores the validation sequences through `Evaluation.evaluate` on the
    /// model read back from those bytes, writing report.json and report.txt (without validation
    /// sequences, the training sequences', labelled so).
    ///
    /// With `calibration temperature` the model written is calibrated first (`ModelCalibration`):
    /// on the validation windows, or without them on out-of-fold predictions of the training
    /// split (the network trained again on the rest of each fold; `onCalibrationFold(f, k)`
    /// before fold f of k), and the evidence is written to calibration.json.
    public func finish(onCalibrationFold: (Int, Int) -> Void = { _, _ in }) throws -> FitResult {
        let streams = StreamCalibration.Source(
            dataset: dataset, train: data.trainIndices, validation: data.validationIndices, config: config, input: data.input)
        let poses = try ModelHeader.PoseStatistics.training(dataset, train: data.trainIndices, input: data.input)
        func encode(_ members: [Training], outOfFold: (() throws -> ModelCalibration.Evidence?)? = nil) throws -> EncodedModel {
            try Self.encodeModel(
                members, configData: configData, datasetHash: dataset.contentHash, datasetName: dataset.name, frameRate: dataset.frameRate,
                streams: streams, poseStatistics: poses, outOfFold: outOfFold)
        }
        let (dataset, data, config) = (self.dataset, self.data, self.config)
        let encoded = try withoutActuallyEscaping(onCalibrationFold) { onFold in
            try encode(members) {
                try ModelCalibration.outOfFold(
                    dataset: dataset, train: data.trainIndices, config: config, input: data.input, folds: config.calibrationFolds,
                    onFold: onFold)
            }
        }
        let (bytes, metrics) = (encoded.bytes, encoded.metrics)
        let folder = writer
        if let folder { try AtomicFile.write(Data(bytes), to: folder.modelPath) }
        var result = FitResult(modelBytes: bytes, modelPath: folder?.modelPath)
        result.calibration = encoded.calibration
        result.calibrationNote = encoded.calibrationNote
        if let folder, let evidence = encoded.evidence, let calibration = encoded.calibration {
            try AtomicFile.write(try ModelCalibration.evidenceJSON(evidence, calibration: calibration), to: folder.calibrationPath)
        }
        guard group.rank == 0 else { return result }  // the same model; rank 0 reports
        if members.count > 1 {
            for (m, member) in members.enumerated() {
                let (bytes, metrics) = try encode([member]).parts
                let path = try memberFolder(m)?.modelPath
                if let path { try AtomicFile.write(Data(bytes), to: path) }
                result.members.append(
                    .init(
                        seed: member.config.seed, modelBytes: bytes, modelPath: path, bestEpoch: member.trainer.progress.bestEpoch,
                        validationAccuracy: metrics["validationAccuracy"], validationLoss: metrics["validationLoss"]))
            }
        }
        result.validationAccuracy = metrics["validationAccuracy"]
        if let w = Self.lossWarning(progress.records) { result.warnings.append(w) }
        let records = progress.records
        if let warning = RunChecks.chanceLevelWarning(
            accuracy: metrics["validationAccuracy"] ?? records.last?.trainAccuracy ?? .nan,
            set: data.validation == nil ? "training" : "validation",
            labels: (data.validation?.labels ?? data.trainLabels).map(Int.init), classes: data.classes.count, records: records,
            learningRate: config.learningRate)
        {
            result.warnings.append(.chanceLevel(warning))
        }
        // Without validation sequences the report scores the training sequences (unaugmented),
        // labelled as such: how well the model fits what it saw, not how it does on new data.
        let validated = !data.validationIndices.isEmpty
        guard validated || !data.trainIndices.isEmpty else { return result }
        // Anything failing from here moves the written model aside and says so.
        func report() throws {
            do {
                let report = try Evaluation.evaluate(
                    model: try ActionModel(bytes: bytes), modelPath: folder?.modelPath ?? "(not written)", dataset: dataset,
                    dataPath: dataPath, indices: validated ? data.validationIndices : data.trainIndices, split: validated ? "validation" : "training",
                    stride: config.windowStride, useEvents: config.useEvents, settings: EvalSettings())
                if let folder {
                    try AtomicFile.write(try ReportJSON.encode(report), to: folder.reportJSONPath)
                    try AtomicFile.write(Data(((validated ? "" : Self.trainingReportNote + "\n\n") + TextReport.render(report)).utf8), to: folder.reportTextPath)
                }
                if validated { result.validationReport = report } else { result.trainingReport = report }
            } catch let e as EvaluationError {
                // The model is written; a set the report cannot score (e.g. one class) only costs
                // the report.
                result.warnings.append(.noValidationReport(e.description))
            }
        }
        if let folder { try RunChecks.afterWritingModel(at: folder.modelPath, report) } else { try report() }
        return result
    }

    /// What a report on the training sequences is (the first lines of its report.txt).
    public static let trainingReportNote = """
        training report: this run had no validation sequences, so this report scores the sequences it was trained on
        (without augmentation). It shows how well the model fits them, not how it does on new data: evaluate a held-out
        split with 'actiontrain eval'.
        """

    /// The model file of the `members`' networks as they are now (`Ensemble.network`; one
    /// member: its network), with its provenance (dataset and config hashes, member 0's seed,
    /// the epochs trained over all members and validation metrics), those metrics, and what
    /// streams need (`StreamCalibration`: the clip length, the thresholds calibrated on `streams`,
    /// the switch evidence and minimum factor fitted on the sequences the calibration folds held
    /// out) and the training windows' `poseStatistics` (docs/format.md 3.5).
    ///
    /// With `calibration temperature` the network written is calibrated (`ModelCalibration`) on
    /// the validation windows, or without them on the evidence `outOfFold` gives (nil, or a
    /// nil evidence: not calibrated, `calibrationNote` says why).
    static func encodeModel(
        _ members: [Training], configData: Data, datasetHash: String, datasetName: String, frameRate: Double?,
        streams: StreamCalibration.Source?, poseStatistics: ModelHeader.PoseStatistics? = nil,
        outOfFold: (() throws -> ModelCalibration.Evidence?)? = nil
    ) throws -> EncodedModel {
        var metrics: [String: Double] = [:]
        let epochs = members.compactMap { $0.records.last?.epoch }
        if !epochs.isEmpty { metrics["epochs"] = Double(epochs.reduce(0, +)) }
        let training = members[0], data = training.data
        let trained = try Ensemble.network(members.map(\.network))
        var written = try FitPipeline.networkToWrite(trained, config: training.config, input: data.input)
        var calibration: ModelHeader.Calibration?, note: String?, evidence: ModelCalibration.Evidence?
        if training.config.calibration == .temperature {
            if let why = ModelCalibration.unscalable(written) {
                note = "not calibrated: \(why)"
            } else {
                if let v = data.validation {
                    evidence = ModelCalibration.Evidence(
                        logits: Inference.logits(written, features: v.features, count: v.count), labels: v.labels, classes: data.classes.count,
                        source: "validation", members: try ModelCalibration.memberLogProbabilities(written, features: v.features, count: v.count),
                        branches: try ModelCalibration.branchLogits(written, features: v.features, count: v.count))
                } else {
                    evidence = try outOfFold?()
                }
                if let evidence {
                    // Weights that grew without the loss overflowing give NaN or infinite outputs here.
                    guard evidence.logits.allSatisfy(\.isFinite) else {
                        throw FitError.outputsNotFinite(
                            on: evidence.source == "validation" ? "the validation windows" : "the training windows held out for calibration")
                    }
                    let fitted = ModelCalibration.fit(evidence)
                    written = try ModelCalibration.scaled(written, temperature: fitted.temperature)
                    calibration = fitted
                } else {
                    note =
                        outOfFold == nil
                        ? "not calibrated: no validation windows to fit a temperature on"
                        : "not calibrated: nothing can be held out to fit a temperature on (the training sequences are fewer than 2 groups, "
                            + "or most are of a class that no other group holds)"
                }
            }
        }
        if let validation = data.validation {
            let (loss, accuracy) = Trainer.evaluate(written, validation)  // what the written model scores
            guard loss.isFinite else { throw FitError.outputsNotFinite(on: "the validation windows") }
            metrics["validationAccuracy"] = accuracy
            metrics["validationLoss"] = loss
        }
        let provenance = ModelHeader.Provenance(
            datasetHash: datasetHash, configHash: FNV1a64.text(of: configData), seed: training.config.seed, metrics: metrics,
            notes: ["dataset": datasetName])
        // The held-out stream the event rule's switch evidence and minimum factor are fitted on
        // (`StreamCalibration.streaming`): the sequences each calibration fold held out (out-of-
        // fold evidence only), scored by its network calibrated as the written one. Not the
        // validation sequences: a fit from shards, which has no sequences, writes the model a
        // fit in memory writes.
        var heldOut: [ModelCalibration.HeldOut] = []
        if let evidence, let calibration {
            heldOut = try evidence.heldOut.map {
                ModelCalibration.HeldOut(network: try ModelCalibration.scaled($0.network, temperature: calibration.temperature), sequences: $0.sequences)
            }
        }
        let streaming = streams.flatMap { StreamCalibration.streaming(network: written, source: $0, classes: data.classes.count, heldOut: heldOut) }
        let bytes = try ModelFile.encode(
            classes: data.classes, input: data.input, network: written, provenance: provenance, trainingFrameRate: frameRate,
            streaming: streaming, poseStatistics: poseStatistics, calibration: calibration)
        return EncodedModel(bytes: bytes, metrics: metrics, calibration: calibration, calibrationNote: note, evidence: evidence)
    }

    /// A model file's bytes as `encodeModel` made them, and what it found.
    struct EncodedModel {
        var bytes: [UInt8]
        var metrics: [String: Double]
        var calibration: ModelHeader.Calibration?
        var calibrationNote: String?
        var evidence: ModelCalibration.Evidence?
        var parts: ([UInt8], [String: Double]) { (bytes, metrics) }
    }

    /// A warning when the last epoch's training loss is clearly above the lowest one (more than
    /// 1.5 times it and 0.05 above): the run ended worse than it was.
    static func lossWarning(_ records: [EpochRecord]) -> FitWarning? {
        guard let last = records.last, let best = records.min(by: { $0.trainLoss < $1.trainLoss }) else { return nil }
        guard last.trainLoss > 1.5 * best.trainLoss && last.trainLoss > best.trainLoss + 0.05 else { return nil }
        return .lossAboveMinimum(final: last.trainLoss, minimum: best.trainLoss, epoch: best.epoch)
    }

    /// The top-level config keys whose values differ between `a` and `b`.
    static func changedKeys(_ a: TrainingConfig, _ b: TrainingConfig) throws -> Set<String> {
        func fields(_ c: TrainingConfig) throws -> [String: Data] {
            let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(c)) as? [String: Any] ?? [:]
            return try object.mapValues { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .fragmentsAllowed]) }
        }
        let x = try fields(a), y = try fields(b)
        return Set(x.keys).union(y.keys).filter { x[$0] != y[$0] }
    }
}

/// What `FitRun.finish` produced.
public struct FitResult {
    /// The model file's bytes (written to `modelPath` when the run has a folder).
    public var modelBytes: [UInt8]
    public var modelPath: String?
    /// The validation report, when there were validation sequences and they could be scored.
    public var validationReport: EvalReport?
    /// Without validation sequences: the report on the training sequences (split `training`),
    /// when they could be scored (also written as report.txt and report.json).
    public var trainingReport: EvalReport?
    public var warnings: [FitWarning] = []
    /// The written model's accuracy on the validation windows (nil without validation data, and
    /// on ranks other than 0).
    public var validationAccuracy: Double?
    /// With `ensemble` > 1 (on rank 0), each member as a model of its own, in order.
    public var members: [Member] = []
    /// How the model written was calibrated (nil: not calibrated, `calibrationNote` says why
    /// when `calibration` asked for it).
    public var calibration: ModelHeader.Calibration?
    public var calibrationNote: String?

    /// One member of an ensemble: its model file (written to `member<m>/model.atm` when the run
    /// has a folder; the run's config hash, the member's seed) and validation scores.
    public struct Member: Sendable {
        public var seed: UInt64
        public var modelBytes: [UInt8]
        public var modelPath: String?
        public var bestEpoch: Int?
        public var validationAccuracy: Double?
        public var validationLoss: Double?
    }

    public init(modelBytes: [UInt8], modelPath: String?, validationReport: EvalReport? = nil, warnings: [FitWarning] = []) {
        self.modelBytes = modelBytes
        self.modelPath = modelPath
        self.validationReport = validationReport
        self.warnings = warnings
    }
}
