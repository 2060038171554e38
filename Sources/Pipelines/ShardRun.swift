import ActionRuntime
import ActionTrain
import Datasets
import Foundation
import PoseCore

/// Datasets larger than memory (docs/datasets.md "Shards"): `convert` cuts and preprocesses a
/// dataset's windows exactly as a fit would (`FitPipeline.resolve`, `FitPipeline.split`,
/// `TrainingData.tensors`) into a shard directory; `ShardRun` trains from it, reading each
/// batch from the shard files, and gives the model a fit of the same windows in memory gives.
public enum Shards {
    /// The config keys that decide which windows a conversion writes and what they hold (the
    /// seed and validation fraction choose the validation split).
    public static let windowKeys = [
        "windowFrames", "windowStride", "windowMode", "frameRate", "channels", "windowPadding", "useEvents", "centring", "scaling",
        "scaleDivisor", "axisDivisors", "graph", "mirrorPairs", "pairs", "alignFacing", "verticalAxis", "streams", "members", "fillGaps", "augmentation", "validationFraction", "seed",
    ]

    /// Windows per shard unless told otherwise.
    public static let defaultWindowsPerShard = 8192

    /// Writes the training and validation windows of `dataset` for `config` (resolved as
    /// `FitPipeline.resolve` does with `explicit`) to `directory` (created; the manifest is
    /// written last). Windows are cut 256 sequences at a time, so only the poses and one shard
    /// of windows are in memory. Refuses augmenting configs (`ShardError.augmentationNeedsPoses`);
    /// the recipe does not choose augmentation for shards (as if the user had set it).
    @discardableResult
    public static func convert(
        dataset: Dataset, dataPath: String, config: TrainingConfig, explicit: Set<String>? = nil, to directory: String,
        windowsPerShard: Int = defaultWindowsPerShard
    ) throws -> ShardManifest {
        let resolved = try FitPipeline.resolve(config, for: dataset, explicit: explicit.map { $0.union(["augmentation"]) })
        let config = resolved.config, input = resolved.input
        guard !config.augmentation.isEnabled else { throw ShardError.augmentationNeedsPoses }
        let split = try FitPipeline.split(dataset, config: config)
        try Guards.requireTrainable(dataset, training: split.train, file: dataPath)
        try RunChecks.checkDataFrameRate(dataset.frameRate, dataset: dataset.name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var manifest = ShardManifest(
            dataset: dataset.name, datasetHash: dataset.contentHash, frameRate: dataset.frameRate, classes: dataset.classes,
            input: input, config: config, windowKeys: windowKeys)
        // What streams need: the clip, and the calibration stream's windows (`StreamCalibration`).
        let streams = StreamCalibration.Source(dataset: dataset, train: split.train, validation: split.validation, config: config, input: input)
        manifest.streams = .init(clipFrames: streams.clip?.frames, clipFrameRate: streams.clip?.frameRate, sequences: streams.sequences, frames: streams.frames)
        manifest.folds = try TrainingData.folds(dataset, split.train, config: config)
        manifest.poseStatistics = try ModelHeader.PoseStatistics.training(dataset, train: split.train, input: input)
        func write(_ role: ShardManifest.Role, _ pending: inout (features: [Float], labels: [Int32], groups: [Int32]), upTo n: Int) throws {
            let header = ShardFile.Header(
                role: role, windows: n, frames: input.window.frames, channels: input.channelsPerFrame, datasetHash: dataset.contentHash)
            let bytes = try ShardFile.encode(
                header: header, features: pending.features[..<(n * input.valuesPerWindow)], labels: pending.labels[..<n],
                groups: pending.groups[..<n])
            let file = ShardManifest.shardName(role, manifest.shards.filter { $0.role == role }.count)
            try AtomicWrite.write(bytes, to: "\(directory)/\(file)")
            let crc = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self)) }
            manifest.shards.append(.init(file: file, role: role, windows: n, bytes: bytes.count, crc32: crc))
            pending.features.removeFirst(n * input.valuesPerWindow)
            pending.labels.removeFirst(n)
            pending.groups.removeFirst(n)
        }
        for (role, indices) in [(ShardManifest.Role.train, split.train), (.validation, split.validation)] {
            var pending = (features: [Float](), labels: [Int32](), groups: [Int32]())
            for start in stride(from: 0, to: indices.count, by: 256) {
                let part = Array(indices[start..<min(start + 256, indices.count)])
                let windows = try WindowSet(
                    dataset: dataset, indices: part, spec: input, stride: config.windowStride, classes: dataset.classes,
                    useEvents: config.useEvents)
                pending.features += try windows.features()
                pending.labels += windows.labels
                pending.groups += windows.sources.map { Int32($0.sequence) }
                while pending.labels.count >= windowsPerShard { try write(role, &pending, upTo: windowsPerShard) }
            }
            if !pending.labels.isEmpty { try write(role, &pending, upTo: pending.labels.count) }
        }
        if let w = streams.windows, w.count > 0 {
            var pending = (features: w.features, labels: w.labels, groups: [Int32](repeating: 0, count: w.count))
            while !pending.labels.isEmpty { try write(.stream, &pending, upTo: min(windowsPerShard, pending.labels.count)) }
        }
        let windows = { (role: ShardManifest.Role) in manifest.shards.filter { $0.role == role }.reduce(0) { $0 + $1.windows } }
        guard windows(.train) > 0 else { throw FitError.noTrainingWindows(dataset: dataset.name, sequences: split.train.count) }
        try RunChecks.checkValidationWindows(
            dataset: dataset.name, sequences: split.validation.count, windows: windows(.validation), windowFrames: input.window.frames)
        manifest.totals = ShardManifest.totals(of: manifest.shards)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicFile.write(try encoder.encode(manifest), to: "\(directory)/\(ShardManifest.fileName)")
        return manifest
    }

    /// Refuses `config` when it differs from the conversion's in a window key.
    public static func check(_ config: TrainingConfig, against manifest: ShardManifest, directory: String) throws {
        let changed = try FitRun.changedKeys(manifest.config, config).intersection(manifest.windowKeys)
        guard changed.isEmpty else {
            throw ShardError.configMismatch(manifest: "\(directory)/\(ShardManifest.fileName)", keys: changed.sorted())
        }
    }
}

extension TrainingData {
    /// The training windows of a shard directory, read batch by batch from the shard
    /// files; its validation windows in memory.
    /// The manifest is verified first (`ShardManifest.verify`), and every shard when opened.
    public init(shards directory: String, manifest: ShardManifest) throws {
        try manifest.verify(directory: directory)
        let train = try ShardBatches(directory: directory, manifest: manifest, role: .train)
        let validation = try ShardBatches(directory: directory, manifest: manifest, role: .validation)
        let windows = validation.count == 0 ? nil : validation.tensors()
        if let e = validation.readError { throw e }
        self.init(
            input: manifest.input, classes: manifest.classes, train: train, trainLabels: train.labels, validation: windows,
            folds: manifest.folds.flatMap { Self.windowFolds($0, sequences: train.sequences) })
    }
}

/// A fit from a shard directory: the config is the conversion's with the caller's changes
/// (window keys may not change), the trainer the one `FitRun` uses. No checkpoints, no
/// validation report (which needs the sequences), no augmentation.
public final class ShardRun {
    public let directory: String
    public let manifest: ShardManifest
    public let training: Training
    let source: ShardBatches
    let configData: Data

    /// `configure` changes the conversion's config; the result is checked (`Shards.check`,
    /// `TrainingConfig.validate`).
    public init(directory: String, group: Collective = SingleProcess(), configure: (TrainingConfig) throws -> TrainingConfig = { $0 }) throws {
        self.directory = directory
        manifest = try ShardManifest.read(directory)
        let config = try configure(manifest.config)
        try Shards.check(config, against: manifest, directory: directory)
        try config.validate()
        guard config.ensemble == 1 else { throw ShardError.ensembleNeedsPoses(members: config.ensemble) }
        BLAS.threads = config.threads
        let data = try TrainingData(shards: directory, manifest: manifest)
        source = data.train as! ShardBatches  // what TrainingData(shards:) builds
        training = try Training(config: config, data: data, group: group)
        configData = try RunFolder.encode(config)
    }

    public var config: TrainingConfig { training.config }

    /// Trains (`Training.run`); a shard that can no longer be read or was written to (changed
    /// under the run) stops the training after the step that read it and is thrown as its
    /// `ShardError`.
    @discardableResult
    public func train(
        shouldStop: () -> Bool = { false }, onBatch: (BatchProgress) -> Void = { _ in }, onEpoch: (EpochRecord) throws -> Void = { _ in }
    ) throws -> TrainingOutcome {
        let outcome: TrainingOutcome
        do {
            outcome = try training.run(shouldStop: { source.readError != nil || shouldStop() }, onBatch: onBatch, onEpoch: onEpoch)
        } catch {
            // A step on windows that could not be read (zeros) may have failed too: the shard is the cause.
            throw source.readError ?? error
        }
        if let e = source.readError { throw e }
        return outcome
    }

    /// The model file's bytes, as `FitRun.finish` encodes them for the same dataset and config
    /// (what streams need from the manifest and its stream shards: none for a directory
    /// converted before they existed).
    public func modelBytes() throws -> [UInt8] {
        var streams: StreamCalibration.Source?
        if let s = manifest.streams {
            let shards = try ShardBatches(directory: directory, manifest: manifest, role: .stream)
            let windows = shards.count == 0 ? nil : shards.tensors()
            if let e = shards.readError { throw e }
            streams = StreamCalibration.Source(
                clip: s.clipFrames.map { ($0, s.clipFrameRate) }, windows: windows, sequences: s.sequences, frames: s.frames)
        }
        return try FitRun.encodeModel(
            [training], configData: configData, datasetHash: manifest.datasetHash, datasetName: manifest.dataset,
            frameRate: manifest.frameRate, streams: streams, poseStatistics: manifest.poseStatistics
        ).bytes
    }
}
