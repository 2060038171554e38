import Foundation
import PoseCore

/// Where a model came from, as plain values copied from its file's header by the caller
/// (Eval does not read model files).
public struct ModelInfo: Codable, Hashable, Sendable {
    public var path: String?
    /// Tool that trained the model, e.g. `actiontrain 0.1.0`.
    public var tool: String?
    /// Ordered class labels of the model.
    public var classes: [String]
    /// The model's input description (skeleton, window, preprocessing, channels), by key.
    public var input: [String: String]
    /// Content hash of the training data and of the training config.
    public var trainingDataHash: String?
    public var configHash: String?
    public var seed: UInt64?
    /// Final training metrics recorded in the file (e.g. `validationAccuracy`).
    public var metrics: [String: Double]
    public var notes: [String: String]

    public init(
        path: String? = nil, tool: String? = nil, classes: [String], input: [String: String] = [:],
        trainingDataHash: String? = nil, configHash: String? = nil, seed: UInt64? = nil,
        metrics: [String: Double] = [:], notes: [String: String] = [:]
    ) {
        self.path = path
        self.tool = tool
        self.classes = classes
        self.input = input
        self.trainingDataHash = trainingDataHash
        self.configHash = configHash
        self.seed = seed
        self.metrics = metrics
        self.notes = notes
    }
}

/// The evaluated data: reports are only compared when these agree.
public struct DataInfo: Codable, Hashable, Sendable {
    public var name: String
    public var path: String?
    /// Content hash of the whole dataset file (all splits).
    public var hash: String?
    /// The evaluated split, nil for all sequences.
    public var split: String?
    public var windowFrames: Int?
    /// Frames between window starts.
    public var stride: Int?

    public init(
        name: String, path: String? = nil, hash: String? = nil, split: String? = nil, windowFrames: Int? = nil,
        stride: Int? = nil
    ) {
        self.name = name
        self.path = path
        self.hash = hash
        self.split = split
        self.windowFrames = windowFrames
        self.stride = stride
    }
}

/// How the metrics were computed; stored in the report so a reader knows.
public struct EvalSettings: Codable, Hashable, Sendable {
    /// Bootstrap resamples for the confidence intervals (0: no intervals).
    public var bootstrapResamples: Int = Bootstrap.defaultResamples
    public var seed: UInt64 = 0
    public var confidence: Double = 0.95
    /// Values of k for top-k accuracy; only k below the class count are reported.
    public var topK: [Int] = [2, 3, 5]
    public var calibrationBins: Int = Metrics.calibrationBins

    // Fixed policies, recorded for readers of the JSON.
    public var bootstrapMethod = "percentile; resampling unit: sequence (all windows of a drawn sequence)"
    public var calibrationBinning = "equal-width bins over the predicted class's probability, bin b holds (b/M, (b+1)/M]"
    public var logLossEpsilon = Metrics.logLossEpsilon
    public var zeroDivision = "0; macro averages over the classes present in the truth or the predictions"
    public var sequenceAggregation = "mean of the window probabilities, then the most probable class"

    public init(bootstrapResamples: Int = Bootstrap.defaultResamples, seed: UInt64 = 0, topK: [Int] = [2, 3, 5]) {
        self.bootstrapResamples = bootstrapResamples
        self.seed = seed
        self.topK = topK
    }
}

/// Every metric at one level (window or sequence).
public struct LevelMetrics: Codable, Hashable, Sendable {
    public struct TopK: Codable, Hashable, Sendable {
        public var k: Int
        public var accuracy: Double
    }

    public struct NormalizedConfusion: Codable, Hashable, Sendable {
        /// Rows sum to 1 (over true labels).
        public var overTrue: [[Double]]
        /// Columns sum to 1 (over predictions).
        public var overPredicted: [[Double]]
        /// The matrix sums to 1.
        public var overAll: [[Double]]
    }

    public var level: Level
    public var samples: Int
    public var sequences: Int
    public var accuracy: Double
    public var accuracyCI: Interval?
    public var macroF1: Double
    public var macroF1CI: Interval?
    public var balancedAccuracy: Double
    public var cohenKappa: Double
    public var logLoss: Double
    public var expectedCalibrationError: Double
    /// The ECE a calibrated model with these confidences would show on this many samples
    /// (`CalibratedECE.simulate`, at the settings' confidence level); nil in reports written
    /// before it.
    public var calibratedECE: CalibratedECE?
    /// The multi-class Brier score (`Metrics.brier`); nil in reports written before it.
    public var brierScore: Double?
    public var topK: [TopK]
    public var calibration: [CalibrationBin]
    /// Per class, in class order: log loss over its samples and one-vs-rest Brier score
    /// (`Metrics.classScores`); nil in reports written before them.
    public var classScores: [ClassScores]?
    /// Per-class precision, recall, F1 and support, in class order.
    public var classes: [ClassificationReport.ClassMetrics]
    public var macro: ClassificationReport.ClassMetrics
    public var weighted: ClassificationReport.ClassMetrics
    /// Counts, rows true, columns predicted.
    public var confusion: [[Int]]
    public var confusionNormalized: NormalizedConfusion

    /// Computes every metric of `table`; `unit[i]` is the bootstrap unit of sample i.
    init(level: Level, classes: [String], table: PredictionTable, settings: EvalSettings, seed: UInt64) throws {
        let K = classes.count
        let (ids, unit) = table.units()
        let m = try ConfusionMatrix(
            classes: classes, truth: table.truth.map(Int.init), predicted: table.predicted.map(Int.init))
        let report = try ClassificationReport(m)
        self.level = level
        samples = table.count
        sequences = ids.count
        accuracy = report.accuracy
        macroF1 = report.macro.f1
        if settings.bootstrapResamples > 0 {
            let ci = Bootstrap.intervals(
                unit: unit, unitCount: ids.count, truth: table.truth, predicted: table.predicted, classes: K,
                resamples: settings.bootstrapResamples, seed: seed, confidence: settings.confidence)
            accuracyCI = ci.accuracy
            macroF1CI = ci.macroF1
        }
        balancedAccuracy = Metrics.balancedAccuracy(m)
        cohenKappa = Metrics.cohenKappa(m)
        logLoss = Metrics.logLoss(truth: table.truth, probabilities: table.probabilities, classes: K)
        let cal = Metrics.calibration(
            truth: table.truth, predicted: table.predicted, probabilities: table.probabilities, classes: K,
            bins: settings.calibrationBins)
        expectedCalibrationError = cal.ece
        calibratedECE = CalibratedECE.simulate(
            confidences: CalibratedECE.confidences(predicted: table.predicted, probabilities: table.probabilities, classes: K),
            bins: settings.calibrationBins, draws: CalibratedECE.draws(samples: table.count),
            seed: SeededGenerator.derive(seed, CalibratedECE.stream), confidence: settings.confidence)
        calibration = cal.bins
        brierScore = Metrics.brier(truth: table.truth, probabilities: table.probabilities, classes: K)
        classScores = Metrics.classScores(truth: table.truth, probabilities: table.probabilities, classes: classes)
        topK = settings.topK.filter { $0 > 1 && $0 < K }.sorted().map {
            TopK(k: $0, accuracy: Metrics.topK($0, truth: table.truth, probabilities: table.probabilities, classes: K))
        }
        self.classes = report.classes
        macro = report.macro
        weighted = report.weighted
        confusion = m.counts
        confusionNormalized = NormalizedConfusion(
            overTrue: m.normalized(.overTrue), overPredicted: m.normalized(.overPredicted), overAll: m.normalized(.overAll))
    }

    /// The confusion matrix with its labels.
    public func confusionMatrix(classes: [String]) -> ConfusionMatrix { ConfusionMatrix(classes: classes, counts: confusion) }

    /// The classification report rebuilt from the counts.
    public func classificationReport(classes: [String]) throws -> ClassificationReport {
        try ClassificationReport(confusionMatrix(classes: classes))
    }
}

/// Per-sample predictions at both levels.
public struct Predictions: Hashable, Sendable {
    public var window: PredictionTable
    public var sequence: PredictionTable?

    public func table(_ level: Level) -> PredictionTable? { level == .window ? window : sequence }
}

/// A complete evaluation: what was evaluated (model provenance, data), how (settings), and
/// every metric at the window and, when sequences hold one label each, the sequence level,
/// with the per-sample predictions that let a later report be compared sample by sample.
/// Serialised as JSON by `ReportJSON` (schema in docs/reports.md).
public struct EvalReport: Hashable, Sendable {
    public static let schema = "actiontrain.eval"
    public static let schemaVersion = 1

    public var schema = EvalReport.schema
    public var schemaVersion = EvalReport.schemaVersion
    /// Tool that wrote the report.
    public var tool: String
    public var model: ModelInfo
    public var data: DataInfo
    public var classes: [String]
    public var settings: EvalSettings
    /// The level to read first: `sequence` when every sequence holds one label.
    public var headline: Level
    public var headlineReason: String
    public var window: LevelMetrics
    public var sequence: LevelMetrics?
    public var predictions: Predictions?
    /// Events against labelled segments (`eval --events`, `EventMetrics`); nil otherwise.
    public var events: EventMetrics?

    public func metrics(_ level: Level) -> LevelMetrics? { level == .window ? window : sequence }
    public var headlineMetrics: LevelMetrics { metrics(headline) ?? window }
    /// The headline level first, then the other one if present.
    public var levels: [LevelMetrics] { [metrics(headline), headline == .window ? sequence : window].compactMap { $0 } }

    /// Evaluates window-level predictions and, when every sequence holds one label, the
    /// sequence level (mean of the window probabilities per sequence).
    ///
    /// Throws `EvalError.empty` for no samples and `EvalError.singleClass` when every sample
    /// has the same true class.
    public static func evaluate(
        classes: [String], windows: PredictionTable, model: ModelInfo, data: DataInfo,
        settings: EvalSettings = EvalSettings(), tool: String
    ) throws -> EvalReport {
        guard !classes.isEmpty else { throw EvalError.noClasses }
        var seen = Set<String>()
        for c in classes where !seen.insert(c).inserted { throw EvalError.duplicateClass(c) }
        guard windows.classCount == classes.count else {
            throw EvalError.mismatchedSamples("the predictions have \(windows.classCount) classes, the class list \(classes.count)")
        }
        guard windows.count > 0 else { throw EvalError.empty }
        let present = Set(windows.truth)
        guard present.count > 1 else {
            throw EvalError.singleClass(label: classes[Int(windows.truth[0])], samples: windows.count)
        }
        let windowMetrics = try LevelMetrics(
            level: .window, classes: classes, table: windows, settings: settings, seed: streamSeed(settings.seed, .window))
        var sequenceMetrics: LevelMetrics? = nil
        let sequences = windows.aggregatedBySequence()
        if let sequences {
            sequenceMetrics = try LevelMetrics(
                level: .sequence, classes: classes, table: sequences, settings: settings,
                seed: streamSeed(settings.seed, .sequence))
        }
        let headline: Level = sequences == nil ? .window : .sequence
        let reason =
            sequences == nil
            ? "window level: some sequences hold windows of several labels, so a sequence has no single label"
            : "sequence level: each sequence holds one label (published accuracies are per sequence); a sequence's prediction is the most probable class of the mean of its window probabilities"
        return EvalReport(
            tool: tool, model: model, data: data, classes: classes, settings: settings, headline: headline,
            headlineReason: reason, window: windowMetrics, sequence: sequenceMetrics,
            predictions: Predictions(window: windows, sequence: sequences))
    }

    /// The bootstrap seed of one level, derived from the settings' seed.
    static func streamSeed(_ seed: UInt64, _ level: Level) -> UInt64 {
        SeededGenerator.derive(seed, level == .window ? 1 : 2)
    }

    /// Ordered `(key, value)` lines saying what was evaluated, printed at the top of every report.
    public var provenance: [(key: String, value: String)] {
        var out: [(String, String)] = []
        out.append(("model", model.path ?? "(not recorded)"))
        if let t = model.tool { out.append(("trained by", t)) }
        out.append(("classes", "\(model.classes.count): " + model.classes.joined(separator: ", ")))
        if !model.input.isEmpty {
            out.append(("input", model.input.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "; ")))
        }
        if let h = model.trainingDataHash { out.append(("training data", h)) }
        if let h = model.configHash { out.append(("training config", h)) }
        if let s = model.seed { out.append(("training seed", String(s))) }
        if !model.metrics.isEmpty {
            out.append(("training metrics", model.metrics.sorted { $0.key < $1.key }.map { "\($0.key) \(Self.number($0.value))" }.joined(separator: ", ")))
        }
        if !model.notes.isEmpty {
            out.append(("notes", model.notes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        }
        var d = data.name
        if let s = data.split { d += ", split \(s)" }
        d += ", \(window.sequences) sequences, \(window.samples) windows"
        if let f = data.windowFrames { d += " of \(f) frames" }
        if let s = data.stride { d += " (stride \(s))" }
        out.append(("data", d))
        if let p = data.path { out.append(("data file", p)) }
        if let h = data.hash { out.append(("data hash", h)) }
        out.append(("evaluated by", "\(tool), report schema \(schema) \(schemaVersion)"))
        return out
    }

    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(format: "%.4g", v)
    }
}
