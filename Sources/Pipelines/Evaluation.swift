import ActionRuntime
import Datasets
import Eval
import Foundation
import PoseCore

/// An evaluation run: a model and a dataset (or some of its sequences) to an `EvalReport`,
/// at the window and the sequence level. `actiontrain eval` and a fit's validation report both
/// come from `evaluate`, so that what a run reports is what the runtime will see.
public enum Evaluation {
    /// Which sequences to score and how to cut them.
    public struct Options: Sendable {
        /// Sequences of this split; nil: "test" when the data has one, else all.
        public var split: String?
        /// Frames between window starts; nil: a third of the model's window.
        public var stride: Int?
        /// One window centred on each labeled event instead of sliding windows.
        public var useEvents = false
        /// Bootstrap resamples and seed, top-k values.
        public var settings = EvalSettings()

        public init(split: String? = nil, stride: Int? = nil, useEvents: Bool = false, settings: EvalSettings = EvalSettings()) {
            self.split = split
            self.stride = stride
            self.useEvents = useEvents
            self.settings = settings
        }
    }

    /// Checks that the model can score `dataset`, picks the split's sequences and evaluates
    /// them (the whole of `actiontrain eval` but its outputs). `warn` hears what the caller
    /// should know (windows mostly padding, `Guards.PaddingTally`).
    public static func run(
        model: ActionModel, modelPath: String, dataset: Dataset, dataPath: String, options: Options, warn: (String) -> Void = { _ in }
    ) throws -> EvalReport {
        try checkCompatible(model, dataset, dataPath: dataPath)
        let splits = Set(dataset.sequences.compactMap(\.split))
        let split = options.split ?? (splits.contains("test") ? "test" : nil)
        let indices = dataset.sequences.indices.filter { split == nil || dataset.sequences[$0].split == split }
        guard !indices.isEmpty else { throw EvaluationError.noSequences(dataPath: dataPath, split: split, present: splits.sorted()) }
        // What predict says too: windows of another rate hold another stretch of time.
        if model.input.window.frameRate == nil, let trained = model.header.trainingFrameRate, let rate = dataset.frameRate,
            abs(rate - trained) > 1e-6
        {
            warn("the data is at \(rate) fps but the model was trained on \(trained) fps data and does not resample; the scores may be off")
        }
        if !indices.contains(where: { i in dataset.sequences[i].present.contains { $0 != 0 } }) {
            warn("no joint is present in any frame of the \(indices.count) evaluated sequences: the model sees only empty poses; check the joint names and the confidences")
        }
        return try evaluate(
            model: model, modelPath: modelPath, dataset: dataset, dataPath: dataPath, indices: indices, split: split,
            stride: options.stride ?? defaultStride(model), useEvents: options.useEvents, settings: options.settings, warn: warn)
    }

    /// A third of the model's window, at least 1.
    public static func defaultStride(_ model: ActionModel) -> Int { max(1, model.input.window.frames / 3) }

    /// Cuts the sequences at `indices` into the model's windows, runs the model and scores
    /// them at the window and sequence level. `split` only labels the report.
    public static func evaluate(
        model: ActionModel, modelPath: String, dataset: Dataset, dataPath: String, indices: [Int], split: String?,
        stride: Int, useEvents: Bool, settings: EvalSettings, warn: (String) -> Void = { _ in }
    ) throws -> EvalReport {
        let windows = try WindowSet(
            dataset: dataset, indices: indices, spec: model.input, stride: stride, classes: model.classes, useEvents: useEvents)
        if let w = Guards.padding(of: windows).warning(windowLength: model.input.window.frames) { warn(w) }
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
            throw EvaluationError.report(dataPath: dataPath, split: split, e)
        }
    }

    /// Events against labelled segments (`eval --events`): each sequence of the split that has
    /// segments (`PoseSequence.segments`) played as one person's live stream (`LiveEvents.play`,
    /// with `stream` and `events`, forgotten after pauses of more than `forgetAfter` seconds as
    /// `TrackedStream` forgets a track), at its timestamps or the dataset's frame rate. The report's
    /// window level scores the stream's windows against the segment at each window's middle
    /// (windows between segments are left out); its `events` are `EventMetrics` of every event
    /// against every segment, a segment spanning its first frame's time to its last's.
    public static func events(
        model: ActionModel, modelPath: String, dataset: Dataset, dataPath: String, split requested: String?, stream: StreamOptions,
        events options: EventOptions, forgetAfter: Double? = 2, settings: EvalSettings
    ) throws -> EvalReport {
        try checkCompatible(model, dataset, dataPath: dataPath)
        let splits = Set(dataset.sequences.compactMap(\.split))
        let split = requested ?? (splits.contains("test") ? "test" : nil)
        let indices = dataset.sequences.indices.filter {
            (split == nil || dataset.sequences[$0].split == split) && !dataset.sequences[$0].segments.isEmpty
        }
        guard !indices.isEmpty else { throw EvaluationError.noSegments(dataPath: dataPath, split: split) }
        let ids = sequenceIDs(dataset, indices)
        var truth: [TrueSegment] = [], found: [StreamEvent] = []
        var rows: (sequence: [String], start: [Int], truth: [Int32], probabilities: [Float]) = ([], [], [], [])
        for i in indices {
            let s = dataset.sequences[i], id = ids[i]!
            guard s.timestamps != nil || dataset.frameRate != nil else {
                throw EvaluationError.stream(dataPath: dataPath, sequence: s.id, reason: "no timestamps and the dataset declares no frame rate: events need seconds")
            }
            func time(_ f: Int) -> Double { s.timestamps?[f] ?? Double(f) / dataset.frameRate! }
            let segments = s.segments.map { TrueSegment(sequence: id, label: $0.label, start: time($0.start), end: time($0.end)) }
            truth += segments
            let played: LiveEvents.Played
            do {
                played = try LiveEvents.play(s, frameRate: dataset.frameRate, model: model, options: stream, events: options, forgetAfter: forgetAfter)
            } catch let e as StreamError {
                throw EvaluationError.stream(dataPath: dataPath, sequence: s.id, reason: "\(e)")
            }
            found += played.events.map { StreamEvent(sequence: id, label: $0.event.label, start: $0.event.start, end: $0.event.end, emitted: $0.emitted) }
            for w in played.windows {
                let middle = (w.startTime + w.endTime) / 2
                guard let g = segments.first(where: { $0.start <= middle && middle <= $0.end }), let c = model.classes.firstIndex(of: g.label) else { continue }
                rows.sequence.append(id)
                rows.start.append(w.start)
                rows.truth.append(Int32(c))
                rows.probabilities += w.probabilities
            }
        }
        let data = DataInfo(
            name: dataset.name, path: dataPath, hash: dataset.contentHash, split: split, windowFrames: try model.streamWindow(clipFrames: stream.clipFrames).frames,
            stride: stream.stride)
        do {
            let table = try PredictionTable(
                sequence: rows.sequence, start: rows.start, truth: rows.truth, probabilities: rows.probabilities, classes: model.classes.count)
            var report = try EvalReport.evaluate(
                classes: model.classes, windows: table, model: modelInfo(model.header, path: modelPath), data: data, settings: settings,
                tool: ActionRuntimeInfo.tool)
            report.events = EventMetrics(truth: truth, events: found)
            return report
        } catch let e as EvalError {
            throw EvaluationError.report(dataPath: dataPath, split: split, e)
        }
    }

    /// Sequence ids as given by the data; an id used twice gets `#index` appended.
    public static func sequenceIDs(_ d: Dataset, _ indices: [Int]) -> [Int: String] {
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
    public static func modelInfo(_ h: ModelHeader, path: String) -> ModelInfo {
        let s = h.input.skeleton, w = h.input.window
        var window = "\(w.frames) frames, \(w.mode.rawValue), padding \(w.padding.rawValue)"
        if let fps = w.frameRate { window += ", resampled to \(fps) fps" }
        let layers = h.layers.map { l -> String in
            if let linear = l.kind as? LinearKind { return "linear \(linear.outputs)" }
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

    /// The dataset must have the model's skeleton (same joints in the same order, same
    /// dimensions); the error names the first joint that differs.
    public static func checkSkeleton(_ model: ActionModel, _ d: Dataset, dataPath: String) throws {
        if let why = model.input.skeleton.mismatch(data: d.skeleton) {
            throw EvaluationError.skeletonMismatch(dataPath: dataPath, reason: why)
        }
    }

    /// The model's skeleton, and only labels the model knows.
    public static func checkCompatible(_ model: ActionModel, _ d: Dataset, dataPath: String) throws {
        try checkSkeleton(model, d, dataPath: dataPath)
        let unknown = d.labels(outside: model.classes).map(\.label)
        guard unknown.isEmpty else {
            throw EvaluationError.unknownLabels(dataPath: dataPath, labels: unknown, classes: model.classes)
        }
    }
}
