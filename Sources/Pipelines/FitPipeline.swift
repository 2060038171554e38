import ActionRuntime
import ActionTrain
import Datasets
import PoseCore

/// The steps of a fit, each usable on its own (a cross-validation fold, a distributed worker)
/// and composed by `FitRun` for `actiontrain fit`:
///
/// 1. `resolve`: the config to train this dataset with, and the input it implies;
/// 2. `split`: training and validation sequence indices (or the caller's own, e.g. a fold);
/// 3. `TrainingData`: windows and tensors for those indices;
/// 4. `Training`: network, trainer, training;
/// 5. `FitRun.finish` / `Evaluation`: model file and reports.
public enum FitPipeline {
    /// A config ready for a dataset, the network input it implies, and what the recipe chose.
    public struct ResolvedConfig: Sendable {
        public var config: TrainingConfig
        public var input: InputSpec
        /// The recipe's choices (empty when it was off or everything was set).
        public var choices: [Recipe.Choice] = []
    }

    /// The sequence indices a run trains and validates on.
    public struct Split: Equatable, Sendable {
        public var train: [Int]
        public var validation: [Int]
        public var warnings: [SplitWarning]

        public init(train: [Int], validation: [Int], warnings: [SplitWarning] = []) {
            self.train = train
            self.validation = validation
            self.warnings = warnings
        }
    }

    /// Step 1: the config to train `dataset` with. When `explicit` is given (the config keys
    /// the user set) and `config.recipe` is `auto`, every other key is chosen from the
    /// dataset's non-test sequences by `Recipe`; nil keeps `config` as it is. Then the config
    /// is checked (`TrainingConfig.validate`) and the input description derived for the
    /// dataset's skeleton and image size. The returned config is the one saved with the run; a
    /// resumed run does not call this again (its checkpoint holds the resolved config).
    public static func resolve(_ config: TrainingConfig, for dataset: Dataset, explicit: Set<String>? = nil) throws -> ResolvedConfig {
        var config = config
        var choices: [Recipe.Choice] = []
        if let explicit, config.recipe == .auto {
            let usable = dataset.sequences.indices.filter { dataset.sequences[$0].split != "test" }
            (config, choices) = Recipe.choose(config, explicit: explicit, profile: DatasetProfile(dataset, indices: usable))
        }
        try config.validate()
        return ResolvedConfig(config: config, input: try input(config, for: dataset), choices: choices)
    }

    /// The network input that `config` gives for `dataset` (skeleton, image size, and the
    /// roles of its bodies when its reader placed them by role: `Dataset.bodyOrder`).
    public static func input(_ config: TrainingConfig, for dataset: Dataset) throws -> InputSpec {
        var spec = try config.inputSpec(for: dataset.skeleton, imageSize: dataset.imageSize)
        if spec.bodies != nil { spec.bodyRoles = dataset.bodyOrder?.rule.roles }
        return spec
    }

    /// Step 2: the data's own split when it has a "validation" split; otherwise a seeded,
    /// stratified, group-aware share (`validationFraction`) of the non-test sequences. "test"
    /// sequences are never used.
    public static func split(_ d: Dataset, config: TrainingConfig) throws -> Split {
        let splits = Set(d.sequences.compactMap(\.split))
        let usable = d.sequences.indices.filter { d.sequences[$0].split != "test" }
        if splits.contains("validation") {
            return Split(
                train: usable.filter { d.sequences[$0].split != "validation" },
                validation: usable.filter { d.sequences[$0].split == "validation" })
        }
        guard !usable.isEmpty else { throw FitError.noTrainingSequences(dataset: d.name) }
        if config.validationFraction == 0 { return Split(train: usable, validation: []) }
        let split = try Splits.split(d, indices: usable, fraction: config.validationFraction, seed: config.seed)
        return Split(train: split.first, validation: split.second, warnings: split.warnings)
    }

    /// The network `config` describes for `input` and `classes` classes (parameters not
    /// initialised), its `standardize` layers calibrated on the windows of `calibration` as
    /// they are, without augmentation (`StandardizeCalibration`; needed when the config has
    /// them, e.g. architecture `ftp`).
    public static func network(
        _ config: TrainingConfig, input: InputSpec, classes: Int, calibration: (any BatchSource)? = nil
    ) throws -> Network {
        let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
        do {
            var layers = try config.layers(for: input, classes: classes)
            if StandardizeCalibration.isNeeded(layers) {
                guard let source = calibration else {
                    throw ModelError.invalidLayer(layer: "standardize", reason: "is calibrated on training windows, and none were given")
                }
                layers = try StandardizeCalibration.calibrate(layers, input: shape, windows: source.count) { range, out in
                    source.plainFeatures(range, into: out)
                }
            }
            return try Network(layers: layers, input: shape)
        } catch let e as ModelError {
            throw FitError.networkDoesNotFit(architecture: config.modelName, input: "\(shape)", reason: "\(e)")
        }
    }
}

extension FitPipeline {
    /// The network to write for a trained one: itself, or with `testTimeFlip` the flip-averaged
    /// network over the same parameters (`TrainingConfig.flipped`).
    public static func networkToWrite(_ trained: Network, config: TrainingConfig, input: InputSpec) throws -> Network {
        guard config.testTimeFlip else { return trained }
        let network = try Network(layers: try config.flipped(trained.specs, input: input), input: trained.inputShape)
        network.load(parameters: UnsafeBufferPointer(start: trained.parameters, count: trained.parameterCount))
        return network
    }
}

/// Step 3: network inputs for one run, cut from a dataset's sequences at given indices:
/// the training windows (fixed features, or re-cut and augmented every epoch when the config
/// augments) and the validation tensors.
public struct TrainingData {
    public let input: InputSpec
    /// The dataset's classes; labels index them.
    public let classes: [String]
    public let trainIndices: [Int]
    public let validationIndices: [Int]
    /// `[windows, input.valuesPerWindow]` features and labels, fresh each epoch when augmented.
    public let train: any BatchSource
    public let trainLabels: [Int32]
    public let isAugmented: Bool
    /// Share of the training windows' frames that are padding (sequences shorter than a
    /// sliding window), in [0, 1].
    public let paddedShare: Double
    /// Nil when `validationIndices` is empty.
    public let validation: TensorSet?
    /// The cross-validation fold of each training window (its sequence's, in group-aware,
    /// stratified k-fold folds of the training sequences, k = min(5, groups), seeded by the
    /// config's seed), for the penalty of solved linear heads (`LinearHeads`); nil when the
    /// config has no head to cross-validate, or the sequences are fewer than 2 groups.
    public let folds: [Int]?

    /// Throws `FitError.noTrainingWindows` when the training sequences give no window, and
    /// `TrainingError` when validation sequences give none or the data's frame rate is one a
    /// model file cannot hold (`RunChecks`).
    public init(dataset: Dataset, train: [Int], validation: [Int], config: TrainingConfig, input: InputSpec) throws {
        self.input = input
        classes = dataset.classes
        trainIndices = train
        validationIndices = validation
        let windows = try WindowSet(
            dataset: dataset, indices: train, spec: input, stride: config.windowStride, classes: dataset.classes,
            useEvents: config.useEvents)
        guard windows.count > 0 else { throw FitError.noTrainingWindows(dataset: dataset.name, sequences: train.count) }
        trainLabels = windows.labels
        let padded = windows.sources.reduce(0) { $0 + $1.paddedFrames }
        paddedShare = Double(padded) / Double(max(1, windows.count * input.window.frames))
        isAugmented = config.augmentation.isEnabled
        if isAugmented {
            self.train = try AugmentedBatches(
                windows: windows, augmentation: config.augmentation, seed: config.seed, threads: config.threads,
                imageWidth: dataset.imageSize?.first)
        } else {
            self.train = TensorSet(features: try windows.features(), labels: windows.labels, valuesPerWindow: input.valuesPerWindow)
        }
        folds = try Self.folds(dataset, train, config: config).flatMap { Self.windowFolds($0, sequences: windows.sources.map(\.sequence)) }
        self.validation =
            try validation.isEmpty
            ? nil : Self.tensors(dataset, validation, input: input, stride: config.windowStride, useEvents: config.useEvents)
        // What would otherwise fail only after the last epoch.
        try RunChecks.checkValidationWindows(
            dataset: dataset.name, sequences: validation.count, windows: self.validation?.count ?? 0, windowFrames: input.window.frames)
        try RunChecks.checkDataFrameRate(dataset.frameRate, dataset: dataset.name)
    }

    /// Data made elsewhere (e.g. read from shards, `TrainingData(shards:manifest:)`): no
    /// sequence indices, no augmentation.
    public init(
        input: InputSpec, classes: [String], train: any BatchSource, trainLabels: [Int32], validation: TensorSet?, folds: [Int]? = nil
    ) {
        self.input = input
        self.classes = classes
        trainIndices = []
        validationIndices = []
        self.train = train
        self.trainLabels = trainLabels
        isAugmented = false
        paddedShare = 0
        self.validation = validation
        self.folds = folds
    }

    /// Folds at most `LinearHeads` cross-validates over.
    public static let maxFolds = 5

    /// The held-out training sequences of each fold `folds` is made from (nil when the config
    /// cross-validates no linear head, `train` is fewer than 2 groups, or too few of its
    /// sequences are of a class other groups hold too: `heldOutCanScore`).
    static func folds(_ d: Dataset, _ train: [Int], config: TrainingConfig) throws -> [[Int]]? {
        guard config.linearHead == .solve && config.linearPenalty == nil && config.hasLinearHead else { return nil }
        let groups = groupCount(d, train)
        guard groups >= 2, heldOutCanScore(d, train) else { return nil }
        return try Splits.kFold(d, indices: train, k: min(maxFolds, groups), seed: config.seed).folds.map(\.test)
    }

    /// Whether held-out windows can tell penalties apart: at least half of the `train`
    /// sequences are of a class (label or segment label) that another group holds too. A fold
    /// that holds out a class's only group trains without that class, so its windows are wrong
    /// whatever the penalty: with one sequence a class every penalty scored alike, the
    /// strongest won the tie, and the member's probabilities came out near uniform.
    static func heldOutCanScore(_ d: Dataset, _ train: [Int]) -> Bool {
        func classes(_ i: Int) -> Set<String> { Set([d.sequences[i].label].compactMap { $0 } + d.sequences[i].segments.map(\.label)) }
        var groups: [String: Set<String>] = [:]
        for i in train { for c in classes(i) { groups[c, default: []].insert(groupKey(d, i)) } }
        let scored = train.filter { classes($0).contains { groups[$0]!.count >= 2 } }.count
        return 2 * scored >= train.count
    }

    /// The group sequence `i` of `d` is held out with: its `group`, else a group of its own
    /// (as `Splits` counts it).
    static func groupKey(_ d: Dataset, _ i: Int) -> String { d.sequences[i].group ?? "#\(i)" }

    /// How many groups the sequences `indices` of `d` form (`groupKey`).
    static func groupCount(_ d: Dataset, _ indices: [Int]) -> Int { Set(indices.map { groupKey(d, $0) }).count }

    /// The fold of each window from its source sequence; nil when a sequence is in no fold.
    static func windowFolds(_ parts: [[Int]], sequences: [Int]) -> [Int]? {
        var fold = [Int: Int]()
        for (f, part) in parts.enumerated() { for i in part { fold[i] = f } }
        let folds = sequences.compactMap { fold[$0] }
        return folds.count == sequences.count ? folds : nil
    }

    /// Features and labels of every window of the sequences at `indices`.
    public static func tensors(_ d: Dataset, _ indices: [Int], input: InputSpec, stride: Int, useEvents: Bool) throws -> TensorSet {
        let windows = try WindowSet(dataset: d, indices: indices, spec: input, stride: stride, classes: d.classes, useEvents: useEvents)
        return TensorSet(features: try windows.features(), labels: windows.labels, valuesPerWindow: input.valuesPerWindow)
    }
}

/// Step 4: a network and its trainer for one `TrainingData`. The same object trains a
/// cross-validation fold in memory or the network of a `FitRun`; `run` is the training step a
/// distributed run shares.
public final class Training {
    public let config: TrainingConfig
    public let data: TrainingData
    public let network: Network
    public let trainer: Trainer
    /// The linear heads solved before training (`LinearHeads`; `linearHead solve`), which the
    /// trainer leaves as they are.
    public let linearHeads: [LinearHeads.Solution]

    /// Builds the network for `data` (its `standardize` layers calibrated on the training
    /// windows) with parameters initialised from `config.seed`, its linear heads over fixed
    /// features solved (`LinearHeads`, unless `linearHead` is `train`), the class weights from
    /// the training labels, and the trainer, which shares its steps with `group`
    /// (docs/distributed.md) and leaves the solved heads alone. Sets `BLAS.threads`.
    public init(config: TrainingConfig, data: TrainingData, group: Collective = SingleProcess()) throws {
        BLAS.threads = config.threads
        self.config = config
        self.data = data
        let network = try FitPipeline.network(config, input: data.input, classes: data.classes.count, calibration: data.train)
        network.initialize(seed: config.seed)
        self.network = network
        let weights = try config.classWeights.weights(labels: data.trainLabels, classes: data.classes.count)
        let heads = config.linearHead == .solve ? LinearHeads.find(network) : []
        linearHeads = try heads.map {
            try LinearHeads.solve(
                $0, network: network, data: data, folds: data.folds, classWeights: weights, penalty: config.linearPenalty,
                copies: config.linearHeadCopies)
        }
        trainer = Trainer(network: network, config: config, classWeights: weights, group: group)
        trainer.fixedParameters = zip(heads, linearHeads).filter { $1.notSolved == nil }.map { h, _ in
            h.offset..<(h.offset + h.classes * (h.features + 1))
        }
    }

    /// Trains until the config's epochs are done, early stopping ends the run, or
    /// `shouldStop()` (checked before every batch) returns true; see `Trainer.fit`. After a run
    /// that was not interrupted and had validation data, the network holds the best epoch's
    /// parameters.
    @discardableResult
    public func run(
        shouldStop: () -> Bool = { false }, onBatch: (BatchProgress) -> Void = { _ in },
        onEpoch: (EpochRecord) throws -> Void = { _ in }
    ) throws -> TrainingOutcome {
        BLAS.threads = config.threads
        return try trainer.fit(train: data.train, validation: data.validation, shouldStop: shouldStop, onBatch: onBatch, onEpoch: onEpoch)
    }

    /// The epoch records so far.
    public var records: [EpochRecord] { trainer.progress.records }

    /// Validation loss and accuracy of the network as it is now (nil without validation data).
    public func validationMetrics() -> (loss: Double, accuracy: Double)? {
        data.validation.map { trainer.evaluate($0) }
    }
}
