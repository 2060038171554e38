import PoseCore

/// Where a window came from.
public struct WindowSource: Hashable, Sendable, Codable {
    /// Index of the source sequence in the dataset.
    public var sequence: Int
    /// First frame of the window in the sequence as windowed, i.e. after resampling to the
    /// spec's frame rate when one is set (0 for `fit` windows).
    public var start: Int
    /// Seconds from the sequence's first frame to the window's first frame, when the time
    /// base is known (a spec frame rate, timestamps or the dataset's frame rate).
    public var startTime: Double?
    /// Padding frames (beyond the end of the sequence) in the window.
    public var paddedFrames: Int
    /// The event frame (in the sequence as windowed) this window is centred on, if any.
    public var event: Int?

    public init(sequence: Int, start: Int, startTime: Double? = nil, paddedFrames: Int = 0, event: Int? = nil) {
        self.sequence = sequence
        self.start = start
        self.startTime = startTime
        self.paddedFrames = paddedFrames
        self.event = event
    }
}

/// Exact-length windows cut from a dataset, with their labels and where they came from.
///
/// The set keeps each source sequence once (after resampling to the spec's frame rate) and,
/// per window, its placement: source positions `first + i * step` for `i = 0 ..< frames`
/// (docs/preprocessing.md). Windows are cut on demand (`window(_:)`, `features()`), and an
/// augmenter can cut them differently each epoch (time warps reach real neighbouring frames).
public struct WindowSet: Sendable {
    public let spec: InputSpec
    public let classes: [String]
    /// The sequences windows are cut from, after resampling; `sources[i].sequence` indexes the
    /// dataset, `placements[i].sequence` this array.
    public let sequences: [PoseSequence]
    /// Class index of each window (-1 for unlabeled windows when labels are not required).
    public var labels: [Int32]
    /// Index of the source sequence in the dataset and start frame of each window.
    public var sources: [WindowSource]
    /// Per window: index into `sequences`, and source positions `first + i * step`.
    public let placements: [Placement]

    public struct Placement: Hashable, Sendable {
        public var sequence: Int
        public var first: Double
        public var step: Double
    }

    public var count: Int { labels.count }

    /// Cuts windows from `dataset` (or from the sequences at `indices`, in that order). Each
    /// sequence is first resampled to the spec's frame rate, if one is set. With `useEvents`,
    /// sequences that have labeled events give one window centred on each event, and
    /// sequences without events give sliding windows; otherwise windows start every `stride`
    /// frames (`WindowSpec.starts`). Sequences with no frames give no window.
    ///
    /// Throws for a label missing from `classes` (or a sequence without a label when
    /// `requireLabels`), bad timestamps, an event outside its sequence, or a NaN/infinite
    /// coordinate of a present joint.
    public init(
        dataset: Dataset, indices: [Int]? = nil, spec: InputSpec, stride: Int, classes: [String],
        useEvents: Bool = false, requireLabels: Bool = true
    ) throws {
        try spec.validate()
        self.spec = spec
        self.classes = classes
        var classIndex: [String: Int32] = [:]
        for (i, c) in classes.enumerated() { classIndex[c] = Int32(i) }
        let w = spec.window
        var sequences: [PoseSequence] = []
        var labels: [Int32] = []
        var sources: [WindowSource] = []
        var placements: [Placement] = []
        for i in indices ?? Array(dataset.sequences.indices) {
            let original = dataset.sequences[i]
            let c: Int32
            if let label = original.label, let k = classIndex[label] {
                c = k
            } else if original.label == nil && !requireLabels {
                c = -1
            } else {
                throw DatasetError.unknownLabel(
                    file: dataset.name, record: original.id, label: original.label ?? "(none)", classes: classes)
            }
            if let bad = original.firstNonFinite() {
                throw WindowError.nonFinite(sequence: original.id, frame: bad.frame, joint: bad.joint)
            }
            for e in original.events where e < 0 || e >= original.frameCount {
                throw WindowError.eventOutOfRange(sequence: original.id, event: e, frames: original.frameCount)
            }
            let seq = try w.retimed(original, sourceFrameRate: dataset.frameRate)
            guard seq.frameCount > 0 else { continue }
            let local = sequences.count
            sequences.append(seq)
            // Frames per second of `seq` when its frames are evenly spaced.
            let rate: Double? = w.frameRate ?? (seq.timestamps == nil ? dataset.frameRate : nil)
            func time(_ start: Int) -> Double? {
                if let rate { return Double(start) / rate }
                if let ts = seq.timestamps, start < ts.count { return ts[start] - ts[0] }
                return nil
            }
            var sliding = w
            sliding.mode = .sliding
            func add(start: Int, event: Int?) {
                // Event windows are sliding windows even when the spec fits whole sequences.
                let cut = event == nil ? w : sliding
                let (first, step) = cut.placement(frameCount: seq.frameCount, start: start)
                let isFit = cut.mode == .fit
                labels.append(c)
                placements.append(Placement(sequence: local, first: first, step: step))
                sources.append(
                    WindowSource(
                        sequence: i, start: isFit ? 0 : start, startTime: time(isFit ? 0 : start),
                        paddedFrames: isFit ? 0 : max(0, start + w.frames - seq.frameCount), event: event))
            }
            if useEvents && !seq.events.isEmpty {
                for e in seq.events { add(start: w.start(centredOn: e, frameCount: seq.frameCount), event: e) }
            } else {
                for s in w.starts(frameCount: seq.frameCount, stride: stride) { add(start: s, event: nil) }
            }
        }
        self.sequences = sequences
        self.labels = labels
        self.sources = sources
        self.placements = placements
    }

    /// Source positions of window `i` (`spec.window.frames` values).
    public func positions(of i: Int) -> [Double] {
        let p = placements[i]
        return (0..<spec.window.frames).map { p.first + Double($0) * p.step }
    }

    /// Window `i` as poses: exactly `spec.window.frames` frames.
    public func window(_ i: Int) -> PoseSequence {
        sequences[placements[i].sequence].sampled(at: positions(of: i), padding: spec.window.padding)
    }

    /// All windows as poses (materialises every window; prefer `window(_:)` or `features()`).
    public var windows: [PoseSequence] { (0..<count).map(window) }

    /// Writes window `i` into `coordinates [F, J, D]`, `present [F, J]` and, when given,
    /// `confidence [F, J]` (1 for present joints of sources without confidence) without
    /// allocating; `positions` is scratch for F values.
    public func sample(
        _ i: Int, positions: UnsafeMutablePointer<Double>, coordinates: UnsafeMutablePointer<Float>,
        present: UnsafeMutablePointer<UInt8>, confidence: UnsafeMutablePointer<Float>?
    ) {
        let p = placements[i], F = spec.window.frames
        for k in 0..<F { positions[k] = p.first + Double(k) * p.step }
        sequences[p.sequence].sample(
            at: UnsafeBufferPointer(start: positions, count: F), padding: spec.window.padding, coordinates: coordinates,
            present: present, confidence: confidence)
    }

    /// Network inputs for all windows, `[count, spec.valuesPerWindow]`.
    public func features() throws -> [Float] {
        let extractor = try FeatureExtractor(spec)
        var out = [Float](repeating: 0, count: count * spec.valuesPerWindow)
        out.withUnsafeMutableBufferPointer { features(0..<count, into: $0.baseAddress!, extractor: extractor, workspace: extractor.makeWorkspace()) }
        return out
    }

    /// Network inputs of the windows `range` into `out [range.count, spec.valuesPerWindow]`, by
    /// `extractor` (of `spec`) in `workspace`.
    public func features(
        _ range: Range<Int>, into out: UnsafeMutablePointer<Float>, extractor: FeatureExtractor, workspace ws: FeatureExtractor.Workspace
    ) {
        let F = spec.window.frames, J = spec.skeleton.jointCount, D = spec.skeleton.dimensions
        let n = spec.valuesPerWindow
        let positions = UnsafeMutablePointer<Double>.allocate(capacity: F)
        let coordinates = UnsafeMutablePointer<Float>.allocate(capacity: F * J * D)
        let present = UnsafeMutablePointer<UInt8>.allocate(capacity: F * J)
        // Confidence is read only when a block uses it (less memory traffic).
        let confidence: UnsafeMutablePointer<Float>? =
            spec.channels.contains(.confidence) ? .allocate(capacity: F * J) : nil
        defer {
            positions.deallocate()
            coordinates.deallocate()
            present.deallocate()
            confidence?.deallocate()
        }
        for (k, i) in range.enumerated() {
            sample(i, positions: positions, coordinates: coordinates, present: present, confidence: confidence)
            extractor.extract(coordinates: coordinates, present: present, confidence: confidence, into: out + k * n, workspace: ws)
        }
    }
}
