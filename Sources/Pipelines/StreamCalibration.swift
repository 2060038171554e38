import ActionRuntime
import ActionTrain
import Datasets
import Foundation
import PoseCore

/// What `fit` records in the model file for live streams and events (`ModelHeader.Streaming`,
/// docs/format.md 3.4; docs/streaming.md "Events"):
///
/// - for a whole-clip (`fit` window) model, the clip a stream slides: the median length of the
///   training sequences, in frames at the model's window rate, else the training data's
///   (declared, or the median step of its timestamps), else as recorded (`clip`);
/// - event thresholds per class, calibrated on a stream made of the validation sequences (the
///   training ones when there are none) played back to back in a seeded order, as a live
///   session would see them (`windows`): for each class c, with `s_c` its probability averaged
///   over the last `smoothing` windows (as `EventDetector` does) and a window's truth the
///   label at its middle, `enter[c]` is the threshold of `grid` that maximises the F1 score of
///   "`s_c ≥ enter[c]`" against "the truth is c" (the middle of the best run of thresholds on
///   ties), and `exit[c] = 2/3 · enter[c]`; a class without such a window keeps 0.6 and 0.4
///   (`thresholds`). Measured against fixed thresholds on the shared datasets' test clips
///   played back to back: docs/benchmarks.md, "Events on long streams".
///
/// Training windows are more confident than new ones, but a stream of clips back to back has
/// the windows that straddle two clips, which are the ones thresholds must reject; calibrating
/// on them carried over to the test streams (the same benchmark).
public enum StreamCalibration {
    /// The smoothing the thresholds are calibrated for (`EventOptions`' default).
    public static let smoothing = EventOptions().smoothing
    /// The thresholds tried: 0.05, 0.10, ..., 0.95.
    public static let grid: [Double] = (1...19).map { Double($0) / 20 }
    /// A class without windows to calibrate on keeps these (`EventOptions`' defaults).
    public static let fallback = (enter: 0.6, exit: 0.4)
    /// At most this many sequences, and the first of them that reach this many frames, make the
    /// calibration stream (a seeded choice of them).
    public static let maximumSequences = 1000
    public static let maximumFrames = 200_000

    /// What the calibration needs besides the network: the clip length, and the windows of the
    /// calibration stream (features in stream order, labels = each window's truth).
    public struct Source: Sendable {
        public var clip: (frames: Int, frameRate: Double?)?
        public var windows: TensorSet?
        /// `validation` or `training`: which sequences made the stream.
        public var sequences: String

        public init(clip: (frames: Int, frameRate: Double?)?, windows: TensorSet?, sequences: String) {
            self.clip = clip
            self.windows = windows
            self.sequences = sequences
        }

        /// The source of a run: the clip of its training sequences (whole-clip inputs), the
        /// stream of its validation sequences, else its training ones (none for `useEvents`,
        /// whose sequence labels do not hold over whole sequences).
        public init(dataset: Dataset, train: [Int], validation: [Int], config: TrainingConfig, input: InputSpec) {
            let clip = StreamCalibration.clip(dataset, indices: train, input: input)
            let onValidation = validation.contains { dataset.sequences[$0].label != nil }
            sequences = onValidation ? "validation" : "training"
            self.clip = clip
            // A stream that cannot be cut (e.g. timestamps resampling cannot handle) costs the
            // thresholds only: the model then keeps the defaults.
            windows =
                config.useEvents
                ? nil
                : try? StreamCalibration.windows(dataset, indices: onValidation ? validation : train, input: input, clip: clip, seed: config.seed)
        }
    }

    /// The clip a stream slides for a whole-clip input (nil for sliding windows): the median
    /// frame count of the labeled sequences at `indices` once resampled to the clip rate (the
    /// input's window rate, else the dataset's declared rate, else the median step of its
    /// timestamps; nil: frames as recorded), as `WindowSpec.retimed` counts them.
    public static func clip(_ d: Dataset, indices: [Int], input: InputSpec) -> (frames: Int, frameRate: Double?)? {
        guard input.window.mode == .fit else { return nil }
        let labeled = indices.filter { d.sequences[$0].label != nil }
        let chosen = labeled.isEmpty ? indices : labeled
        guard !chosen.isEmpty else { return nil }
        let rate = input.window.frameRate ?? d.frameRate ?? DatasetProfile.timestampRate(d, chosen)
        let counts = chosen.map { i -> Int in
            let s = d.sequences[i]
            guard let r = rate, s.frameCount > 1 else { return s.frameCount }
            let span: Double
            if let t = s.timestamps {
                span = t[t.count - 1] - t[0]
            } else if let source = d.frameRate {
                span = Double(s.frameCount - 1) / source
            } else {
                return s.frameCount
            }
            guard span.isFinite && span >= 0 else { return s.frameCount }
            return Int(min((span * r + 1e-6).rounded(.down) + 1, Double(InputSpec.maxFrames)))
        }.sorted()
        return (max(1, counts[counts.count / 2]), rate.flatMap { WindowSpec.frameRates.contains($0) ? $0 : nil })
    }

    /// The windows a live session cuts (`ActionModel.streamWindows`, at the standard stride: a
    /// third of the window or clip) from the labeled sequences at `indices` played back to back
    /// in a seeded order (at most `maximumSequences`, up to the one that reaches
    /// `maximumFrames`), each at its own timestamps or the dataset's frame rate (30 fps when it
    /// has none) with one frame period between two; each window's label is the class of the
    /// sequence playing at its middle. Nil when no labeled sequence has a frame.
    public static func windows(_ d: Dataset, indices: [Int], input: InputSpec, clip: (frames: Int, frameRate: Double?)?, seed: UInt64) throws
        -> TensorSet?
    {
        var order = indices.filter { d.sequences[$0].label.flatMap(d.classes.firstIndex) != nil && d.sequences[$0].frameCount > 0 }
        var generator = SeededGenerator(seed: seed ^ 0x5354_5245_414D)  // "STREAM"
        for k in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(k, Int(generator.next() % UInt64(k + 1))) }
        order = Array(order.prefix(maximumSequences))
        var frames = 0
        if let last = order.firstIndex(where: {
            frames += d.sequences[$0].frameCount; return frames >= maximumFrames
        }) {
            order = Array(order.prefix(last + 1))
        }
        guard !order.isEmpty else { return nil }
        let J = input.skeleton.jointCount, D = input.skeleton.dimensions
        let period = 1 / (d.frameRate ?? clip?.frameRate ?? input.window.frameRate ?? 30)
        var coordinates: [Float] = [], present: [UInt8] = [], confidence: [Float] = [], times: [Double] = []
        var spans: [(end: Double, frames: Int, label: Int32)] = []  // each sequence's last time and frame, and class
        let anyConfidence = order.contains { d.sequences[$0].confidence != nil }
        var t0 = 0.0
        for i in order {
            let s = d.sequences[i]
            coordinates += s.coordinates
            present += s.present
            confidence += s.confidence ?? s.present.map { $0 != 0 ? 1 : 0 }
            let own = s.timestamps ?? (0..<s.frameCount).map { Double($0) * period }
            for t in own { times.append(t0 + t - own[0]) }
            spans.append((times[times.count - 1], times.count, Int32(d.classes.firstIndex(of: s.label!)!)))
            t0 = times[times.count - 1] + period
        }
        let stream = PoseSequence(
            id: "calibration", label: nil, jointCount: J, dimensions: D, frameCount: times.count, coordinates: coordinates, present: present,
            confidence: anyConfidence ? confidence : nil, timestamps: times)
        let window = clip ?? (input.window.frames, input.window.frameRate)
        let rate = input.window.mode == .fit ? window.frameRate : input.window.frameRate
        let cut = try ActionModel.streamWindows(
            of: stream, input: input, stream: window, stride: max(1, window.frames / 3), sourceFrameRate: nil)
        guard !cut.isEmpty else { return nil }
        let extractor = try FeatureExtractor(input)
        let workspace = extractor.makeWorkspace()
        let V = input.valuesPerWindow
        var features = [Float](repeating: 0, count: cut.count * V), labels = [Int32](repeating: 0, count: cut.count)
        features.withUnsafeMutableBufferPointer { out in
            for (k, w) in cut.enumerated() {
                extractor.extract(w.window, into: out.baseAddress! + k * V, workspace: workspace)
                // The middle of the window, in seconds (resampled frames) or as a frame index.
                let middle = Double(w.start + w.end - 1) / 2
                let span: Int?
                if let r = rate {
                    span = spans.firstIndex { $0.end >= times[0] + middle / r }
                } else {
                    span = spans.firstIndex { Double($0.frames) > middle }
                }
                labels[k] = spans[span ?? spans.count - 1].label
            }
        }
        return TensorSet(features: features, labels: labels, valuesPerWindow: V)
    }

    /// Thresholds per class from the probabilities `[N, K]` of the calibration windows in
    /// stream order and their truths (the rule above), rounded to 0.001.
    public static func thresholds(probabilities p: [Float], truth: [Int32], classes K: Int) -> (enter: [Double], exit: [Double]) {
        let N = truth.count
        precondition(p.count == N * K, "probabilities [windows, classes]")
        var smoothed = [Double](repeating: 0, count: N * K)
        for n in 0..<N {
            let first = max(0, n - smoothing + 1)
            for k in 0..<K {
                var sum = 0.0
                for m in first...n { sum += Double(p[m * K + k]) }
                smoothed[n * K + k] = sum / Double(n - first + 1)
            }
        }
        var enter: [Double] = [], exit: [Double] = []
        for k in 0..<K {
            let scores = grid.map { g -> Double in
                var tp = 0, fp = 0, fn = 0
                for n in 0..<N {
                    let positive = smoothed[n * K + k] >= g, isClass = truth[n] == Int32(k)
                    if positive && isClass { tp += 1 } else if positive { fp += 1 } else if isClass { fn += 1 }
                }
                return Double(2 * tp) / Double(max(1, 2 * tp + fp + fn))
            }
            let best = scores.max() ?? 0
            guard best > 0 else {
                enter.append(fallback.enter)
                exit.append(fallback.exit)
                continue
            }
            let tied = scores.indices.filter { scores[$0] >= best - 1e-12 }
            let g = grid[tied[tied.count / 2]]
            enter.append((g * 1000).rounded() / 1000)
            exit.append((g * 2 / 3 * 1000).rounded() / 1000)
        }
        return (enter, exit)
    }

    /// The `streaming` header field of `network` (the model about to be written) for `source`:
    /// the clip, and the thresholds of its calibration windows.
    public static func streaming(network: Network, source: Source, classes K: Int) -> ModelHeader.Streaming? {
        var out = ModelHeader.Streaming(clipFrames: source.clip?.frames, clipFrameRate: source.clip?.frameRate)
        if let w = source.windows, w.count > 0 {
            let p = Inference.probabilities(network, features: w.features, count: w.count)
            (out.enter, out.exit) = thresholds(probabilities: p, truth: w.labels, classes: K)
            out.calibration = source.sequences
        }
        return out == ModelHeader.Streaming() ? nil : out
    }
}
