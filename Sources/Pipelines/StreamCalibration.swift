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
///   played back to back: docs/benchmarks.md, "Events on long streams";
/// - the frame rule's switch evidence and a factor of its minimum durations, fitted on a
///   held-out stream (`heldOutStream`: sequences the scoring network did not train on, with
///   still stretches between clips as a deployment sees them; `switchEvidence`, `minimumFactor`).
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

    /// What the calibration needs besides the network: the clip length, the windows of the
    /// calibration stream (features in stream order, labels = each window's truth), and for
    /// frame-level events the training clips' motion numbers and the stream's windows and frames.
    public struct Source: Sendable {
        public var clip: (frames: Int, frameRate: Double?)?
        public var windows: TensorSet?
        /// `validation` or `training`: which sequences made the stream.
        public var sequences: String
        /// Frame-level events (format 1.5): nil leaves the model to make events from windows.
        public var frames: FrameCalibrationInput?
        /// The config's `switchEvidence`, written into the frame rule's numbers when given
        /// (else `streaming` fits it on the held-out stream of the networks it is given).
        public var switchEvidence: Double?
        /// What the held-out stream is cut from (`heldOutStream`): the dataset (and its class
        /// names), the input and the seed; nil: no held-out stream (the switch evidence is not
        /// fitted).
        public var data: (dataset: Dataset, input: InputSpec, seed: UInt64)?

        public init(clip: (frames: Int, frameRate: Double?)?, windows: TensorSet?, sequences: String, frames: FrameCalibrationInput? = nil) {
            self.clip = clip
            self.windows = windows
            self.sequences = sequences
            self.frames = frames
        }

        /// The source of a run: the clip of its training sequences (whole-clip inputs), the
        /// stream of its validation sequences, else its training ones (none for `useEvents`,
        /// whose sequence labels do not hold over whole sequences), and the motion of its
        /// training sequences.
        public init(dataset: Dataset, train: [Int], validation: [Int], config: TrainingConfig, input: InputSpec) {
            let clip = StreamCalibration.clip(dataset, indices: train, input: input)
            let onValidation = validation.contains { dataset.sequences[$0].label != nil }
            sequences = onValidation ? "validation" : "training"
            self.clip = clip
            switchEvidence = config.switchEvidence
            // A stream that cannot be cut (e.g. timestamps resampling cannot handle) costs the
            // thresholds only: the model then keeps the defaults (and events from windows).
            let stream =
                config.useEvents
                ? nil
                : try? StreamCalibration.stream(dataset, indices: onValidation ? validation : train, input: input, clip: clip, seed: config.seed)
            windows = stream?.windows
            data = (dataset, input, config.seed)
            frames = stream.flatMap { s in
                (try? StreamCalibration.motion(dataset, indices: train, input: input, clip: clip)).map { m in
                    FrameCalibrationInput(
                        lookAhead: s.lookAhead, frameRate: s.frameRate, stillBelow: m.stillBelow, hold: m.hold.map { min($0, s.lookAhead) },
                        leadIn: m.leadIn, leadOut: m.leadOut, minimumDuration: m.minimumDuration, windowStarts: s.starts, windowEnds: s.ends,
                        runFrames: s.runFrames, runClasses: s.runClasses)
                }
            }
        }
    }

    /// The calibration stream: its windows' features and truths, each window's frames, the
    /// frames' classes run by run, the stream's frame rate and the look-ahead.
    public struct Stream: Sendable {
        public var windows: TensorSet
        public var starts: [Int], ends: [Int]
        public var runFrames: [Int], runClasses: [Int32]
        public var frameRate: Double
        public var lookAhead: Double
        /// With `rests`: each frame's motion (`FrameMotion`, as a session measures it).
        public var motion: [Float]?
    }

    /// Stretches of a still body between the clips of a calibration stream, as a deployment
    /// sees them (and as scripts/stream-events builds its test streams): before a clip with
    /// probability `share` (always before the first, and between two clips of one label, which
    /// nothing would otherwise separate), and after the last, `shortest` to `longest` seconds of
    /// the next clip's first pose, reached from the last pose in `reach` seconds and held with
    /// Gaussian jitter of `jitter` times the body's size on each coordinate. A still frame's
    /// class is -1 (no action).
    public struct Rests: Sendable, Equatable {
        public var share = 2.0 / 3, shortest = 1.5, longest = 2.0, reach = 0.1, jitter = 0.003
        public init() {}
    }

    /// `motion`'s frames moving (above `stillBelow`) and still in turn, run by run from a moving
    /// run (`FrameCalibrationInput.stillRuns`); nil for no frames.
    public static func stillRuns(_ motion: [Float], stillBelow: Double) -> [Int]? {
        guard !motion.isEmpty else { return nil }
        var runs = [0], still = false
        let below = Float(stillBelow)  // compared in float, as the runtime compares (`FrameSegmenter`)
        for m in motion {
            let isStill = !(m > below)
            if isStill != still {
                runs.append(0)
                still = isStill
            }
            runs[runs.count - 1] += 1
        }
        return runs
    }

    /// The look-ahead of frame-level events: this share of the stream window's duration.
    public static let lookAheadShare = 0.75
    /// The share of a class's training clips (their motion) above which `hold` lies: the
    /// stillness that ends an event lasts longer than this share of the clips' longest pause.
    public static let holdQuantile = 0.9
    /// Motion at or below this quantile of the training frames' is still.
    public static let stillQuantile = 0.1
    /// The shortest hold, in seconds.
    public static let shortestHold = 0.2

    /// The frame rule's look-ahead for a window or clip of `frames` at `frameRate`:
    /// `lookAheadShare` of its span, to the millisecond, kept within what a model file holds
    /// (more than 0, at most 60 s): a clip of one frame (sequences of one frame) or
    /// frames microseconds apart would otherwise give 0, and a long slow window more than 60 s.
    static func lookAhead(frames: Int, frameRate: Double) -> Double {
        min(60, max(0.001, (lookAheadShare * Double(frames - 1) / frameRate * 1000).rounded() / 1000))
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
        try stream(d, indices: indices, input: input, clip: clip, seed: seed)?.windows
    }

    /// `windows`, with each window's frames and the stream's frames by class (the class of the
    /// sequence playing at a frame's time; frames as recorded: the sequence it comes from).
    ///
    /// With `rests`, still stretches come between the clips (`Rests`: seeded by `seed` too) and
    /// the stream's motion is measured.
    public static func stream(
        _ d: Dataset, indices: [Int], input: InputSpec, clip: (frames: Int, frameRate: Double?)?, seed: UInt64, rests: Rests? = nil
    ) throws -> Stream? {
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
        var still = SeededGenerator(seed: seed ^ 0x5245_5354)  // "REST"
        typealias Pose = (coordinates: ArraySlice<Float>, present: ArraySlice<UInt8>, confidence: ArraySlice<Float>?)
        var last: Pose?, lastLabel: Int32?
        /// A frame of `s` with a joint present: the first, or the last.
        func pose(_ s: PoseSequence, last: Bool) -> Pose {
            let seen = (0..<s.frameCount).filter { f in s.present[(f * J)..<((f + 1) * J)].contains { $0 != 0 } }
            let f = (last ? seen.last : seen.first) ?? 0
            return (s.coordinates[(f * J * D)..<((f + 1) * J * D)], s.present[(f * J)..<((f + 1) * J)], s.confidence?[(f * J)..<((f + 1) * J)])
        }
        /// `seconds` of a still body in `pose`, reached from `last`.
        func rest(_ pose: Pose, seconds: Double, _ r: Rests) {
            let n = max(1, Int((seconds / period).rounded())), blend = max(1, Int((r.reach / period).rounded()))
            let c = Array(pose.coordinates), p = Array(pose.present)
            var size: Float = 0
            for axis in 0..<D {
                let values = (0..<J).filter { p[$0] != 0 }.map { c[$0 * D + axis] }
                if let lo = values.min(), let hi = values.max() { size = max(size, hi - lo) }
            }
            let sigma = Float(r.jitter) * (size > 0 ? size : 1)
            let from = last.map { (Array($0.coordinates), Array($0.present)) }  // the pose the body comes from
            for k in 0..<n {
                let w = Float(min(1, Double(k + 1) / Double(blend)))
                for j in 0..<J {
                    for axis in 0..<D {
                        let q = from.map { $0.1[j] != 0 ? $0.0[j * D + axis] : c[j * D + axis] } ?? c[j * D + axis]
                        coordinates.append(p[j] != 0 ? (1 - w) * q + w * c[j * D + axis] + sigma * still.nextGaussian() : c[j * D + axis])
                    }
                }
                present += p
                confidence += pose.confidence.map(Array.init) ?? p.map { $0 != 0 ? 1 : 0 }
                times.append(t0 + Double(k) * period)
            }
            spans.append((times[times.count - 1], times.count, -1))
            t0 = times[times.count - 1] + period
        }
        for i in order {
            let s = d.sequences[i]
            let label = Int32(d.classes.firstIndex(of: s.label!)!)
            if let r = rests, lastLabel == nil || lastLabel == label || still.nextUnitDouble() < r.share {
                rest(pose(s, last: false), seconds: r.shortest + (r.longest - r.shortest) * still.nextUnitDouble(), r)
            }
            coordinates += s.coordinates
            present += s.present
            confidence += s.confidence ?? s.present.map { $0 != 0 ? 1 : 0 }
            let own = s.timestamps ?? (0..<s.frameCount).map { Double($0) * period }
            for t in own { times.append(t0 + t - own[0]) }
            spans.append((times[times.count - 1], times.count, label))
            t0 = times[times.count - 1] + period
            (last, lastLabel) = (pose(s, last: true), label)
        }
        if let r = rests, let l = last { rest(l, seconds: r.shortest + (r.longest - r.shortest) * still.nextUnitDouble(), r) }
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
        /// The class playing at frame position `x` of the stream (seconds from its rate, or as a frame index).
        func label(at x: Double) -> Int32 {
            let span: Int?
            if let r = rate {
                span = spans.firstIndex { $0.end >= times[0] + x / r }
            } else {
                span = spans.firstIndex { Double($0.frames) > x }
            }
            return spans[span ?? spans.count - 1].label
        }
        var features = [Float](repeating: 0, count: cut.count * V), labels = [Int32](repeating: 0, count: cut.count)
        features.withUnsafeMutableBufferPointer { out in
            for (k, w) in cut.enumerated() {
                extractor.extract(w.window, into: out.baseAddress! + k * V, workspace: workspace)
                labels[k] = label(at: Double(w.start + w.end - 1) / 2)  // the window's middle
            }
        }
        // The stream's frames (as the session makes them) by class.
        let frameCount = rate.map { Int(((times[times.count - 1] - times[0]) * $0 + 1e-6).rounded(.down)) + 1 } ?? times.count
        var runFrames: [Int] = [], runClasses: [Int32] = []
        for f in 0..<frameCount {
            let c = label(at: Double(f))
            if runClasses.last == c { runFrames[runFrames.count - 1] += 1 } else { (runFrames, runClasses) = (runFrames + [1], runClasses + [c]) }
        }
        let frameRate = rate ?? d.frameRate ?? 30
        var motion: [Float]?
        if rests != nil {
            let slide = WindowSpec(frames: window.frames, mode: .sliding, padding: input.window.padding, frameRate: rate)
            let resampled = try slide.retimed(stream, sourceFrameRate: nil)
            motion = frameMotion(resampled, times: rate.map { r in (0..<resampled.frameCount).map { Double($0) / r } } ?? times, frameRate: rate, bodies: input.bodies ?? 1)
        }
        return Stream(
            windows: TensorSet(features: features, labels: labels, valuesPerWindow: V), starts: cut.map(\.start), ends: cut.map(\.end),
            runFrames: runFrames, runClasses: runClasses, frameRate: frameRate,
            lookAhead: lookAhead(frames: window.frames, frameRate: frameRate), motion: motion)
    }

    /// Each frame's motion (`FrameMotion`, `FrameMotion.lag` frames each way within `s`, as a
    /// session measures it) at `times`.
    static func frameMotion(_ s: PoseSequence, times: [Double], frameRate: Double?, bodies M: Int) -> [Float] {
        let n = s.frameCount, J = s.jointCount, D = s.dimensions, lag = FrameMotion.lag(frameRate: frameRate)
        var motion = [Float](repeating: 0, count: n)
        s.coordinates.withUnsafeBufferPointer { c in
            s.present.withUnsafeBufferPointer { p in
                for f in 0..<n {
                    let a = max(0, f - lag), b = min(n - 1, f + lag)
                    motion[f] = FrameMotion.motion(
                        frame: c.baseAddress! + f * J * D, framePresent: p.baseAddress! + f * J, a: c.baseAddress! + a * J * D,
                        aPresent: p.baseAddress! + a * J, b: c.baseAddress! + b * J * D, bPresent: p.baseAddress! + b * J,
                        seconds: times[b] - times[a], joints: J, dimensions: D, bodies: M)
                }
            }
        }
        return motion
    }

    /// The motion numbers of frame-level events, from the labelled sequences at `indices` (at
    /// most `maximumSequences`, evenly spread over them), each resampled as a stream resamples it (`FrameMotion` per
    /// frame, `FrameMotion.lag` each way within the sequence): `stillBelow` the
    /// `stillQuantile` of every frame's motion (those `lag` from either end left out), a frame at
    /// or below it being still; per class
    /// (nil for a class without sequences: the defaults), `hold` the `holdQuantile` of each
    /// sequence's longest run of still frames inside it (touching neither end), at least
    /// `shortestHold`; `leadIn` and `leadOut` the medians of the seconds before the first moving
    /// frame and after the last one; `minimumDuration` half the 5th percentile of the durations.
    /// All rounded to 0.001. Throws when a sequence cannot be resampled.
    public static func motion(_ d: Dataset, indices: [Int], input: InputSpec, clip: (frames: Int, frameRate: Double?)?) throws
        -> (stillBelow: Double, hold: [Double], leadIn: [Double], leadOut: [Double], minimumDuration: [Double])
    {
        let window = clip ?? (input.window.frames, input.window.frameRate)
        let rate = input.window.mode == .fit ? window.frameRate : input.window.frameRate
        let slide = WindowSpec(frames: window.frames, mode: .sliding, padding: input.window.padding, frameRate: rate)
        let lag = FrameMotion.lag(frameRate: rate)
        let M = input.bodies ?? 1
        // At most `maximumSequences`, spread evenly over the file: the first ones would leave out
        // the classes of a file sorted by class (Penn Action's last three of 15).
        let candidates = indices.filter { d.sequences[$0].label.flatMap(d.classes.firstIndex) != nil }
        let labelled =
            candidates.count <= maximumSequences
            ? candidates : (0..<maximumSequences).map { candidates[$0 * candidates.count / maximumSequences] }
        var all: [Float] = []
        var clips: [(label: Int, times: [Double], motion: [Float])] = []
        for i in labelled {
            let s = try slide.retimed(d.sequences[i], sourceFrameRate: d.frameRate)
            let n = s.frameCount
            guard n > 0 else { continue }
            let times: [Double]
            if let r = rate {
                times = (0..<n).map { Double($0) / r }
            } else if let t = s.timestamps {
                times = t
            } else {
                let r = d.frameRate ?? 30
                times = (0..<n).map { Double($0) / r }
            }
            let motion = frameMotion(s, times: times, frameRate: rate, bodies: M)
            if n > 2 * lag { all += motion[lag..<(n - lag)] }
            clips.append((d.classes.firstIndex(of: d.sequences[i].label!)!, times, motion))
        }
        func quantile(_ v: [Double], _ q: Double) -> Double? {
            guard !v.isEmpty else { return nil }
            let sorted = v.sorted(), x = q * Double(sorted.count - 1), lo = Int(x.rounded(.down)), hi = min(lo + 1, sorted.count - 1)
            return sorted[lo] + (sorted[hi] - sorted[lo]) * (x - Double(lo))
        }
        func rounded(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
        let still = quantile(all.map(Double.init), stillQuantile) ?? 0
        var hold: [Double] = [], leadIn: [Double] = [], leadOut: [Double] = [], minimum: [Double] = []
        for k in d.classes.indices {
            var longest: [Double] = [], first: [Double] = [], last: [Double] = [], durations: [Double] = []
            for c in clips where c.label == k {
                let n = c.motion.count, isStill = c.motion.map { Double($0) <= still }
                var best = 0.0, f = 0
                while f < n {
                    guard isStill[f] else {
                        f += 1
                        continue
                    }
                    var g = f
                    while g + 1 < n && isStill[g + 1] { g += 1 }
                    if f > 0 && g < n - 1 { best = max(best, c.times[g] - c.times[f]) }
                    f = g + 1
                }
                longest.append(best)
                if let m = isStill.firstIndex(of: false) { first.append(c.times[m] - c.times[0]) }
                if let m = isStill.lastIndex(of: false) { last.append(c.times[n - 1] - c.times[m]) }
                durations.append(c.times[n - 1] - c.times[0])
            }
            hold.append(rounded(max(shortestHold, quantile(longest, holdQuantile) ?? FrameOptions.defaultHold)))
            leadIn.append(rounded(quantile(first, 0.5) ?? 0))
            leadOut.append(rounded(quantile(last, 0.5) ?? 0))
            minimum.append(rounded((quantile(durations, 0.05) ?? 0) / 2))
        }
        return (rounded(still), hold, leadIn, leadOut, minimum)
    }

    /// Frame-level thresholds per class (`enter`, and `exit` two thirds of it) from the
    /// probabilities `[N, K]` of the calibration windows: each frame's scores as
    /// `FrameSegmenter` makes them (windows weighted by position, only those ending at most
    /// `lookAhead` after the frame), and per class the threshold of `grid` that maximises the F1
    /// score of "the frame's score is at or above it" against "the frame is the class's" (the
    /// middle of the best run on ties); a class without frames keeps `fallback`. Rounded to 0.001.
    public static func frameThresholds(probabilities p: [Float], input f: FrameCalibrationInput, classes K: Int) -> (enter: [Double], exit: [Double]) {
        let N = f.windowStarts.count, frames = f.runFrames.reduce(0, +)
        precondition(p.count == N * K, "probabilities [windows, classes]")
        let ahead = Int((f.lookAhead * f.frameRate + 1e-6).rounded(.down))
        var sums = [Double](repeating: 0, count: frames * K), weights = [Double](repeating: 0, count: frames)
        for n in 0..<N {
            let s = f.windowStarts[n], e = min(f.windowEnds[n], frames)
            guard e > s else { continue }
            for k in max(s, e - 1 - ahead)..<e {  // frames the window ends at most `lookAhead` after
                let w = Double(min(k - s + 1, f.windowEnds[n] - k))
                for c in 0..<K { sums[k * K + c] += w * Double(p[n * K + c]) }
                weights[k] += w
            }
        }
        var truth = [Int32](repeating: -1, count: frames), at = 0
        for (count, c) in zip(f.runFrames, f.runClasses) {
            for k in at..<(at + count) { truth[k] = c }
            at += count
        }
        return f1Thresholds(truth: truth, classes: K) { k, c in weights[k] > 0 ? sums[k * K + c] / weights[k] : nil }
    }

    /// The switch evidences tried, in score-seconds.
    public static let switchEvidenceGrid: [Double] = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]

    /// The switch evidence of events from frames (`FrameSegmenter.Settings.switchEvidence`, the
    /// lead another class must gather before an action switches without rest), fitted to a
    /// model's scores on a calibration stream: `fit` gives it the held-out stream
    /// (`heldOutStream`: sequences the scoring network did not train on, with still stretches
    /// between two clips in three, as a deployment sees them). On a stream of the training clips
    /// back to back the values fitted did worse on new streams than the default 0.3
    /// (docs/benchmarks.md, "third pass"); on the held-out one, "fourth pass". The rule: the
    /// stream played through the frame rule with `settings` (the model's other numbers; `play`),
    /// for each value of `switchEvidenceGrid`, and the F1 score at IoU 0.5 of its events against
    /// the stream's runs of a class (`truth`, `eventF1`); the values within
    /// `fitTolerance` of the best tie: the default (0.3) when it is among them, else
    /// the smallest of them (a switch decided soonest). Nil when the stream has no frame or no
    /// window.
    public static func switchEvidence(probabilities p: [Float], input f: FrameCalibrationInput, settings: FrameSegmenter.Settings) -> Double? {
        fitted(switchEvidenceGrid, default: FrameSegmenter.Settings.defaultSwitchEvidence, probabilities: p, input: f) { evidence in
            var s = settings
            s.switchEvidence = evidence
            return s
        }
    }

    /// The minimum durations' factors tried (1: half the 5th percentile of the training clips'
    /// durations, `motion`).
    public static let minimumFactorGrid: [Double] = [1, 1.25, 1.5, 2]

    /// The factor of `minimumFactorGrid` by which every class's minimum duration in `settings`
    /// is multiplied, fitted on a calibration stream as `switchEvidence` is, with the switch
    /// evidence of `settings` (`fit`: the one fitted first): of the factors within
    /// `fitTolerance` of the best F1, 1 when it is among them, else the smallest. A
    /// longer minimum drops the short events of a phase of an action that scores as another
    /// class, and short true actions. Nil when the stream has no frame or no window.
    public static func minimumFactor(probabilities p: [Float], input f: FrameCalibrationInput, settings: FrameSegmenter.Settings) -> Double? {
        fitted(minimumFactorGrid, default: 1, probabilities: p, input: f) { factor in
            var s = settings
            s.minimumDuration = settings.minimumDuration.map { $0 * factor }
            return s
        }
    }

    /// The value of `grid` whose settings (`apply`) make events that match the stream's runs
    /// best: the F1 score at IoU 0.5 of the events (`play`) against the runs (`truth`,
    /// `eventF1`) for each value, then `choose`. Nil when the stream has no frame or no window.
    static func fitted(
        _ grid: [Double], default value: Double, probabilities p: [Float], input f: FrameCalibrationInput,
        apply: (Double) -> FrameSegmenter.Settings
    ) -> Double? {
        guard let truth = truth(input: f, settings: apply(value)), !f.windowStarts.isEmpty else { return nil }
        let scores = grid.map { v in
            eventF1(play(probabilities: p, input: f, settings: apply(v)).map { ($0.event.label, $0.event.start, $0.event.end) }, truth: truth)
        }
        return choose(grid, default: value, scores: scores)
    }

    /// The value of `grid` chosen by its F1 `scores` (one per value): values within
    /// `fitTolerance` of the best tie (a stream of a few hundred clips cannot tell
    /// them apart); `value` (the default) stays when it is among them, else the smallest of them
    /// (a switch decided soonest; the fewest events dropped).
    static func choose(_ grid: [Double], default value: Double, scores: [Double]) -> Double {
        precondition(scores.count == grid.count, "one score per value")
        let best = scores.max() ?? 0
        let near = scores.indices.filter { scores[$0] >= best - fitTolerance }
        if let d = grid.firstIndex(of: value), near.contains(d) { return value }
        return grid[near[0]]
    }

    /// The calibration stream's true segments (class, first and last frame's seconds): its runs
    /// of a class that makes events (not -1, not background). Nil for a stream without frames
    /// or unusable settings.
    static func truth(input f: FrameCalibrationInput, settings: FrameSegmenter.Settings) -> [(label: Int, start: Double, end: Double)]? {
        guard f.runFrames.reduce(0, +) > 0 && settings.problem == nil else { return nil }
        var truth: [(label: Int, start: Double, end: Double)] = [], at = 0
        for (count, c) in zip(f.runFrames, f.runClasses) where count > 0 {
            if c >= 0 && Int(c) < settings.classes && !settings.background[Int(c)] {
                truth.append((Int(c), Double(at) / f.frameRate, Double(at + count - 1) / f.frameRate))
            }
            at += count
        }
        return truth
    }

    /// The calibration stream played through `FrameSegmenter` with `settings`, as a live stream
    /// gives it: the windows with their probabilities `[N, K]` when their last frame comes (clamped
    /// to the stream), a frame when the motion's `lag` frames after it have come, still or moving as
    /// `input.stillRuns` says (all moving without). Each event with the stream time it was
    /// emitted at.
    static func play(probabilities p: [Float], input f: FrameCalibrationInput, settings: FrameSegmenter.Settings)
        -> [(event: FrameSegmenter.Event, emitted: Double)]
    {
        let K = settings.classes, N = f.windowStarts.count, frames = f.runFrames.reduce(0, +)
        precondition(p.count == N * K && f.windowEnds.count == N, "probabilities [windows, classes]")
        guard frames > 0 && settings.problem == nil else { return [] }
        let lag = FrameMotion.lag(frameRate: f.frameRate)
        func time(_ k: Int) -> Double { Double(k) / f.frameRate }
        var still = [Bool](repeating: false, count: frames), k = 0
        for (i, count) in (f.stillRuns ?? []).enumerated() {
            for j in k..<min(frames, k + max(0, count)) { still[j] = i % 2 == 1 }
            k = min(frames, k + max(0, count))
        }
        func motion(_ k: Int) -> Float { still[k] ? 0 : .infinity }
        // The windows by their last frame (clamped to the stream), in order.
        let order = (0..<N).filter { f.windowEnds[$0] > f.windowStarts[$0] }.sorted { (min(f.windowEnds[$0], frames), $0) < (min(f.windowEnds[$1], frames), $1) }
        var segmenter = FrameSegmenter(settings: settings)
        var events: [(event: FrameSegmenter.Event, emitted: Double)] = [], next = 0
        for n in 0..<frames {
            while next < order.count && min(f.windowEnds[order[next]], frames) - 1 <= n {
                let w = order[next]
                let end = min(f.windowEnds[w], frames)
                segmenter.add(window: f.windowStarts[w], end: end, endTime: time(end - 1), probabilities: Array(p[(w * K)..<((w + 1) * K)]))
                next += 1
            }
            if n >= lag { events += segmenter.add(frame: n - lag, time: time(n - lag), motion: motion(n - lag), now: time(n)).map { ($0, time(n)) } }
        }
        for k in max(0, frames - lag)..<frames {
            events += segmenter.add(frame: k, time: time(k), motion: motion(k), now: time(frames - 1)).map { ($0, time(frames - 1)) }
        }
        return events + segmenter.finish().map { ($0, time(frames - 1)) }
    }

    /// Values (switch evidences, minimum factors) whose F1 at IoU 0.5 on the calibration stream is
    /// within this of the best tie (`choose`): two events in a hundred true segments.
    public static let fitTolerance = 0.02

    /// The F1 score at IoU 0.5 of `events` against `truth` (class, start and end seconds): each
    /// event, in order, matched to the unmatched true segment of its class it overlaps most, a
    /// hit when their intersection over union is at least 0.5. 1 when both are empty.
    static func eventF1(_ events: [(label: Int, start: Double, end: Double)], truth: [(label: Int, start: Double, end: Double)]) -> Double {
        guard !(events.isEmpty && truth.isEmpty) else { return 1 }
        var used = [Bool](repeating: false, count: truth.count), hits = 0
        for e in events {
            var best = -1, bestIoU = 0.0
            for (i, t) in truth.enumerated() where !used[i] && t.label == e.label {
                let overlap = min(e.end, t.end) - max(e.start, t.start)
                guard overlap > 0 else { continue }
                let iou = overlap / (max(e.end, t.end) - min(e.start, t.start))
                if iou > bestIoU { (best, bestIoU) = (i, iou) }
            }
            if best >= 0 && bestIoU >= 0.5 {
                used[best] = true
                hits += 1
            }
        }
        return Double(2 * hits) / Double(events.count + truth.count)
    }

    /// Per class c, the threshold g of `grid` that maximises the F1 score of "score(i, c) ≥ g"
    /// (nil: never) against "truth[i] is c" over the items i (the middle of the best run on
    /// ties), and its exit, two thirds of it, both rounded to 0.001; a class that no threshold
    /// finds keeps `fallback`.
    static func f1Thresholds(truth: [Int32], classes K: Int, score: (Int, Int) -> Double?) -> (enter: [Double], exit: [Double]) {
        var enter: [Double] = [], exit: [Double] = []
        for c in 0..<K {
            let scores = grid.map { g -> Double in
                var tp = 0, fp = 0, fn = 0
                for i in truth.indices {
                    let positive = (score(i, c) ?? -.infinity) >= g, isClass = truth[i] == Int32(c)
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
        return f1Thresholds(truth: truth, classes: K) { n, k in smoothed[n * K + k] }
    }

    /// The held-out stream of the switch evidence and minimum factor: for each of `folds` (a
    /// network and the sequences it did not train on: `fit`'s calibration folds), those
    /// sequences as a stream with still stretches between clips (`stream` with `Rests`, each
    /// fold seeded by `source`'s seed and its place), the fold's network's probabilities of its
    /// windows, and the frames' stillness at `source`'s `stillBelow`; the folds' streams one
    /// after another (each starts with a still stretch, no window spans two). Nil without a
    /// frame calibration, data, or a window.
    public static func heldOutStream(_ source: Source, folds: [ModelCalibration.HeldOut]) throws
        -> (probabilities: [Float], input: FrameCalibrationInput)?
    {
        guard let data = source.data, var out = source.frames else { return nil }
        var p: [Float] = [], starts: [Int] = [], ends: [Int] = [], runFrames: [Int] = [], runClasses: [Int32] = [], motion: [Float] = []
        for (f, fold) in folds.enumerated() {
            guard
                let s = try stream(
                    data.dataset, indices: fold.sequences, input: data.input, clip: source.clip, seed: data.seed &+ UInt64(f), rests: Rests()),
                var m = s.motion
            else { continue }
            let n = s.runFrames.reduce(0, +), offset = motion.count
            m = Array(m.prefix(n)) + [Float](repeating: m.last ?? 0, count: max(0, n - m.count))
            p += Inference.probabilities(fold.network, features: s.windows.features, count: s.windows.count)
            starts += s.starts.map { min($0, n) + offset }
            ends += s.ends.map { min($0, n) + offset }
            (runFrames, runClasses, motion) = (runFrames + s.runFrames, runClasses + s.runClasses, motion + m)
        }
        guard !starts.isEmpty else { return nil }
        (out.windowStarts, out.windowEnds, out.runFrames, out.runClasses) = (starts, ends, runFrames, runClasses)
        out.stillRuns = stillRuns(motion, stillBelow: out.stillBelow)
        return (p, out)
    }

    /// The frame rule as `EventOptions.standard(for:)` makes it from a model file's `frames`
    /// for `classes` (background classes by name), at the motion lag of `frameRate`.
    static func settings(_ frames: ModelHeader.Streaming.Frames, classes: [String], frameRate: Double) -> FrameSegmenter.Settings? {
        var o = EventOptions.standard(classes: classes)
        o.frames = FrameOptions(frames, classes: classes)
        o.frames?.motionLag = FrameMotion.lag(frameRate: frameRate)
        for (k, c) in classes.enumerated() { o.classThresholds[c] = EventOptions.Thresholds(enter: Float(frames.enter[k]), exit: Float(frames.exit[k])) }
        return o.segmenterSettings(classes: classes).flatMap { $0.problem == nil ? $0 : nil }
    }

    /// The `streaming` header field of `network` (the model about to be written) for `source`:
    /// the clip, the thresholds of its calibration windows, and on the stream of the sequences
    /// `heldOut`'s networks did not train on (`heldOutStream`): the switch evidence fitted there
    /// (`switchEvidence`) unless the config gives one, then with it the factor of the minimum
    /// durations (`minimumFactor`). Without held-out networks no switch evidence but the
    /// config's is written, and the minimum durations are the training clips' (`motion`).
    public static func streaming(network: Network, source: Source, classes K: Int, heldOut: [ModelCalibration.HeldOut] = []) -> ModelHeader.Streaming? {
        var out = ModelHeader.Streaming(clipFrames: source.clip?.frames, clipFrameRate: source.clip?.frameRate)
        if let w = source.windows, w.count > 0 {
            let p = Inference.probabilities(network, features: w.features, count: w.count)
            (out.enter, out.exit) = thresholds(probabilities: p, truth: w.labels, classes: K)
            out.calibration = source.sequences
            if let f = source.frames, f.windowStarts.count == w.count, f.hold.count == K {
                let (enter, exit) = frameThresholds(probabilities: p, input: f, classes: K)
                var frames = ModelHeader.Streaming.Frames(
                    lookAhead: f.lookAhead, stillBelow: f.stillBelow, enter: enter, exit: exit, hold: f.hold, leadIn: f.leadIn, leadOut: f.leadOut,
                    minimumDuration: f.minimumDuration, switchEvidence: source.switchEvidence)
                // Not on this stream of clips back to back the network trained on: fitted there it
                // did worse on new streams than the default (docs/benchmarks.md, "third pass").
                if let names = source.data?.dataset.classes, names.count == K, let (p, stream) = try? heldOutStream(source, folds: heldOut),
                    var settings = settings(frames, classes: names, frameRate: f.frameRate)
                {
                    if frames.switchEvidence == nil, let e = switchEvidence(probabilities: p, input: stream, settings: settings) {
                        frames.switchEvidence = e
                        settings.switchEvidence = e
                    }
                    if let factor = minimumFactor(probabilities: p, input: stream, settings: settings) {
                        frames.minimumDuration = frames.minimumDuration.map { ($0 * factor * 1000).rounded() / 1000 }
                    }
                }
                out.frames = frames
            }
        }
        return out == ModelHeader.Streaming() ? nil : out
    }
}
