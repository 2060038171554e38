import PoseCore

/// Fixed-length windows cut from a dataset, with their labels and where they came from.
/// Windows keep their raw poses (for augmentation) and are turned into network inputs by
/// the `InputSpec`'s feature extractor.
public struct WindowSet: Sendable {
    public let spec: InputSpec
    public let classes: [String]
    /// Exact-length windows of raw poses.
    public var windows: [PoseSequence]
    /// Class index of each window.
    public var labels: [Int32]
    /// Index of the source sequence in the dataset and start frame of each window.
    public var sources: [(sequence: Int, start: Int)]

    public var count: Int { windows.count }

    /// Cuts windows from `dataset` (or from the sequences at `indices`). Each sequence is
    /// first resampled to the spec's frame rate, if one is set. With `events`, one window is
    /// centred on each labeled event; otherwise windows start every `stride` frames.
    public init(
        dataset: Dataset, indices: [Int]? = nil, spec: InputSpec, stride: Int, classes: [String], useEvents: Bool = false
    ) throws {
        self.spec = spec
        self.classes = classes
        var classIndex: [String: Int32] = [:]
        for (i, c) in classes.enumerated() { classIndex[c] = Int32(i) }
        var windows: [PoseSequence] = []
        var labels: [Int32] = []
        var sources: [(Int, Int)] = []
        for i in indices ?? Array(dataset.sequences.indices) {
            let original = dataset.sequences[i]
            guard let label = original.label, let c = classIndex[label] else {
                throw DatasetError.unknownLabel(
                    file: dataset.name, record: original.id, label: original.label ?? "(none)", classes: classes)
            }
            let seq = spec.window.retimed(original, sourceFrameRate: dataset.frameRate)
            guard seq.frameCount > 0 else { continue }
            if useEvents && !seq.events.isEmpty {
                for e in seq.events {
                    windows.append(spec.window.window(of: seq, centredOn: e))
                    labels.append(c)
                    sources.append((i, max(0, e - spec.window.frames / 2)))
                }
            } else {
                for s in spec.window.starts(frameCount: seq.frameCount, stride: stride) {
                    windows.append(spec.window.window(of: seq, start: s))
                    labels.append(c)
                    sources.append((i, s))
                }
            }
        }
        self.windows = windows
        self.labels = labels
        self.sources = sources
    }

    /// Network inputs for all windows, `[count, spec.valuesPerWindow]`.
    public func features() throws -> [Float] {
        let extractor = try FeatureExtractor(spec)
        let n = spec.valuesPerWindow
        var out = [Float](repeating: 0, count: count * n)
        out.withUnsafeMutableBufferPointer { p in
            for (i, w) in windows.enumerated() { extractor.extract(w, into: p.baseAddress! + i * n) }
        }
        return out
    }
}
