import Foundation
import PoseCore

/// The JSON header of a model file. Every field is specified in docs/format.md, section 3.
public struct ModelHeader: Codable, Hashable, Sendable {
    /// One parameter tensor in the data section (docs/format.md 3.2).
    public struct Tensor: Codable, Hashable, Sendable {
        /// `layers.<i>.<param>`, e.g. `layers.1.weight`.
        public var name: String
        /// Always `float32` in version 1.
        public var dtype: String
        public var shape: [Int]
        /// Axis names, e.g. `"[outputs, inputs]"`.
        public var layout: String
        /// Byte offset from the start of the data section; the offsets tile the section.
        public var offset: Int
        /// Byte length, `4 · Π shape`.
        public var length: Int
    }

    /// Where a model came from (docs/format.md 3.3). Never changes what it computes.
    public struct Provenance: Codable, Hashable, Sendable {
        /// Writer name and version, e.g. `actiontrain 0.1.0`.
        public var tool: String
        public var datasetHash: String?
        public var configHash: String?
        public var seed: UInt64?
        /// Final metrics by name (e.g. `validationAccuracy`). Deterministic: no durations.
        public var metrics: [String: Double]
        public var notes: [String: String]

        public init(
            tool: String = ActionRuntimeInfo.tool, datasetHash: String? = nil, configHash: String? = nil,
            seed: UInt64? = nil, metrics: [String: Double] = [:], notes: [String: String] = [:]
        ) {
            self.tool = tool
            self.datasetHash = datasetHash
            self.configHash = configHash
            self.seed = seed
            self.metrics = metrics
            self.notes = notes
        }
    }

    /// The coordinate convention of the input poses, derived from the skeleton's units
    /// (docs/format.md 3.1).
    public struct CoordinateSystem: Codable, Hashable, Sendable {
        public var units: Skeleton.Units
        /// `topLeft` for pixels; `source` (the pose source's own frame) otherwise.
        public var origin: String
        /// `down` for pixels, `up` for metres (the Pose contract), `source` for unitless.
        public var yAxis: String
        /// Always `anatomical`: `leftWrist` is the person's left wrist.
        public var sides: String

        public init(units: Skeleton.Units) {
            self.units = units
            origin = units == .pixels ? "topLeft" : "source"
            switch units {
            case .pixels: yAxis = "down"
            case .metres: yAxis = "up"
            case .unitless: yAxis = "source"
            }
            sides = "anatomical"
        }
    }

    /// How the model runs on a live stream and makes events (docs/format.md 3.4), written by
    /// `fit` since format 1.3; optional: files without it run with the runtime's defaults (a
    /// whole-clip model then needs its clip length from the caller, `StreamOptions.clipFrames`).
    public struct Streaming: Codable, Hashable, Sendable {
        /// Whole-clip (`fit` window) models: a stream slides a window of `clipFrames` frames
        /// (at `clipFrameRate` when it is set, else as pushed), the training clips' median
        /// length, and resamples each to the model's window as training resampled a clip.
        public var clipFrames: Int?
        /// The frame rate `clipFrames` counts at: the model's window rate, else the training
        /// data's (declared or from its timestamps); nil when unknown (frames as pushed).
        public var clipFrameRate: Double?
        /// Event thresholds per class, in class order: an event starts at `enter[c]` and lasts
        /// while the class's smoothed probability stays at or above `exit[c]`.
        public var enter: [Double]?
        public var exit: [Double]?
        /// Which windows the thresholds were calibrated on: `validation` or `training`.
        public var calibration: String?
        /// Frame-level events (format 1.5, docs/format.md 3.4): the numbers of the rule of
        /// `FrameSegmenter`, calibrated by `fit`. Nil: events from windows (`EventDetector`).
        public var frames: Frames?

        /// The calibrated numbers of frame-level events, per class in class order.
        public struct Frames: Codable, Hashable, Sendable {
            /// Seconds after a frame at which it is decided (the default look-ahead).
            public var lookAhead: Double
            /// Motion (body sizes per second) at or below which a frame is still.
            public var stillBelow: Double
            /// Frame scores that start an event of the class, and that it must keep.
            public var enter: [Double]
            public var exit: [Double]
            /// Seconds of stillness that end an event of the class.
            public var hold: [Double]
            /// Seconds from an event's start to its first moving frame, and from its last moving frame to its end.
            public var leadIn: [Double]
            public var leadOut: [Double]
            /// The shortest event of the class, in seconds.
            public var minimumDuration: [Double]
            /// Score-seconds by which another class must lead the running event's class for a new
            /// action to start without rest (format 1.7: a value for this model, which `fit` does not
            /// write yet); nil: `FrameSegmenter.Settings.defaultSwitchEvidence`.
            public var switchEvidence: Double?

            public init(
                lookAhead: Double, stillBelow: Double, enter: [Double], exit: [Double], hold: [Double], leadIn: [Double], leadOut: [Double],
                minimumDuration: [Double], switchEvidence: Double? = nil
            ) {
                self.lookAhead = lookAhead
                self.stillBelow = stillBelow
                self.enter = enter
                self.exit = exit
                self.hold = hold
                self.leadIn = leadIn
                self.leadOut = leadOut
                self.minimumDuration = minimumDuration
                self.switchEvidence = switchEvidence
            }
        }

        public init(
            clipFrames: Int? = nil, clipFrameRate: Double? = nil, enter: [Double]? = nil, exit: [Double]? = nil, calibration: String? = nil,
            frames: Frames? = nil
        ) {
            self.clipFrames = clipFrames
            self.clipFrameRate = clipFrameRate
            self.enter = enter
            self.exit = exit
            self.calibration = calibration
            self.frames = frames
        }

        /// The clip duration in seconds, `(clipFrames − 1) / clipFrameRate`, when both are known.
        public var clipSeconds: Double? {
            guard let n = clipFrames, let r = clipFrameRate else { return nil }
            return Double(n - 1) / r
        }
    }

    /// What the raw poses of the training windows look like (docs/format.md 3.5), written by
    /// `fit` since format 1.4 so that a checker can make windows like the ones the model will
    /// see (`actiontrain export`'s parity check) without the data. Never changes what the model
    /// computes. Per frame of a window (resampled and cut, before any step), the centre is the
    /// mean of the present joints; a joint's offset is its position minus that centre.
    public struct PoseStatistics: Codable, Hashable, Sendable {
        /// How many windows the statistics come from.
        public var windows: Int
        /// Mean and standard deviation of the centre, `[D]`, over frames with a present joint.
        public var centreMean: [Double]
        public var centreSpread: [Double]
        /// Mean and standard deviation of each joint's offset, `[J · D]` (joint-major), over the
        /// frames where it is present (0 for a joint never present).
        public var offsetMean: [Double]
        public var offsetSpread: [Double]
        /// Per joint `[J]`: the share of frames where it is present; the mean confidence of
        /// those frames (1 for data without confidences); the root mean square of its change
        /// per coordinate from one frame to the next, over pairs of frames that both have it.
        public var present: [Double]
        public var confidence: [Double]
        public var motion: [Double]

        public init(
            windows: Int, centreMean: [Double], centreSpread: [Double], offsetMean: [Double], offsetSpread: [Double], present: [Double],
            confidence: [Double], motion: [Double]
        ) {
            self.windows = windows
            self.centreMean = centreMean
            self.centreSpread = centreSpread
            self.offsetMean = offsetMean
            self.offsetSpread = offsetSpread
            self.present = present
            self.confidence = confidence
            self.motion = motion
        }
    }

    /// How the model's probabilities were calibrated (docs/format.md 3.6), written by `fit`
    /// since format 1.6. A record only: the temperature is already in the layers (the last
    /// `linear` layer's weight and bias, or the weights of a last `averageLogProbabilities`,
    /// are divided by it), so a reader applies nothing more.
    public struct Calibration: Codable, Hashable, Sendable {
        /// `temperature`: the logits divided by `temperature`.
        public var method: String
        public var temperature: Double
        /// What it was fitted on: `validation` (the run's validation windows) or `outOfFold`
        /// (predictions of networks trained on the other `folds` of the training split).
        public var evidence: String
        public var folds: Int?
        /// The windows of the evidence.
        public var windows: Int
        /// The evidence's mean log loss and expected calibration error (15 bins) before and
        /// after the temperature.
        public var logLossBefore: Double
        public var logLossAfter: Double
        public var eceBefore: Double
        public var eceAfter: Double

        public init(
            method: String = "temperature", temperature: Double, evidence: String, folds: Int? = nil, windows: Int, logLossBefore: Double,
            logLossAfter: Double, eceBefore: Double, eceAfter: Double
        ) {
            self.method = method
            self.temperature = temperature
            self.evidence = evidence
            self.folds = folds
            self.windows = windows
            self.logLossBefore = logLossBefore
            self.logLossAfter = logLossAfter
            self.eceBefore = eceBefore
            self.eceAfter = eceAfter
        }

        /// The methods and evidence a reader knows.
        public static let methods: Set<String> = ["temperature"]
        public static let evidences: Set<String> = ["validation", "outOfFold"]
    }

    /// Always `actiontrain.model`.
    public var format: String
    /// Ordered class labels: logit `i` is `classes[i]`.
    public var classes: [String]
    public var coordinateSystem: CoordinateSystem
    /// Skeleton, window, preprocessing steps and channel blocks: how to build the input from poses.
    public var input: InputSpec
    /// Per-window network input `[time, channels]`.
    public var inputShape: Shape
    /// Frames per second of the training data before any resampling, when known.
    public var trainingFrameRate: Double?
    public var layers: [LayerSpec]
    /// Parameter tensors in data order.
    public var tensors: [Tensor]
    public var provenance: Provenance
    /// Streams and events (3.4); nil in files written before format 1.3 and by callers that give none.
    public var streaming: Streaming? = nil
    /// The training windows' poses (3.5); nil in files written before format 1.4, by a fit
    /// from shards and by callers that give none.
    public var poseStatistics: PoseStatistics? = nil
    /// How the probabilities were calibrated (3.6); nil in files written before format 1.6 and
    /// by runs that calibrate nothing.
    public var calibration: Calibration? = nil
}

public enum ActionRuntimeInfo {
    public static let version = "0.1.0"
    public static let tool = "actiontrain \(version)"
}

/// Errors reading or writing a model file. Each says what is wrong and carries its evidence.
public indirect enum ModelFileError: Error, Equatable, CustomStringConvertible {
    case notAModelFile(String)
    case unsupportedVersion(major: Int, minor: Int)
    /// The file is shorter than its preamble says (or than a preamble).
    case truncated(expected: Int, got: Int)
    /// The file is longer than its preamble says.
    case trailingBytes(expected: Int, got: Int)
    /// The section lengths of the preamble are inconsistent.
    case badPreamble(String)
    case checksumMismatch(section: String, stored: UInt32, computed: UInt32)
    case badHeader(String)
    /// A size in the file beyond the reader's limits (docs/format.md 2.1).
    case limitExceeded(what: String, value: Int, limit: Int)
    case badTensor(name: String, reason: String)
    /// A non-zero byte in the zero padding of the data section (docs/format.md 1.4), at `offset`
    /// from the start of the data section, after tensor `after`.
    case nonZeroPadding(after: String, offset: Int)
    /// NaN or infinite values in a tensor (docs/format.md 1.4): how many, and the first one's
    /// index (in the tensor's shape) and kind (`NaN`, `+infinity`, `-infinity`).
    case nonFiniteValues(tensor: String, count: Int, firstIndex: [Int], first: String)
    /// Writing: the model cannot be represented (e.g. a non-finite metric).
    case cannotEncode(String)
    case io(String)
    /// Any of the above, about a named file.
    case inFile(String, ModelFileError)

    /// The error without the file name.
    public var underlying: ModelFileError {
        if case .inFile(_, let e) = self { return e.underlying }
        return self
    }

    public var description: String {
        switch self {
        case .notAModelFile(let why):
            return "not an actiontrain model file (\(why)); pass a file written by `actiontrain fit`"
        case .unsupportedVersion(let major, let minor):
            return "model file version \(major).\(minor) is not supported by this reader (major version \(ModelFile.majorVersion)); use a matching actiontrain"
        case .truncated(let expected, let got):
            return "model file is truncated: it should have \(expected) bytes but has \(got); copy it again"
        case .trailingBytes(let expected, let got):
            return "model file has trailing bytes: it should have \(expected) bytes but has \(got); copy it again"
        case .badPreamble(let why):
            return "model file preamble is invalid: \(why)"
        case .checksumMismatch(let section, let stored, let computed):
            return String(
                format: "model file is damaged: the %@ checksum does not match (stored %08x, computed %08x); copy it again",
                section, stored, computed)
        case .badHeader(let why):
            return "model file header is invalid: \(why)"
        case .limitExceeded(let what, let value, let limit):
            return "model file is beyond this reader's limits: \(what) is \(value), the limit is \(limit)"
        case .badTensor(let name, let why):
            return "model file tensor '\(name)' is invalid: \(why)"
        case .nonZeroPadding(let after, let offset):
            return "model file data section has a non-zero padding byte at data offset \(offset), after tensor '\(after)' "
                + "(padding must be zero); the file is damaged or was not written by a conforming writer"
        case .nonFiniteValues(let tensor, let count, let index, let first):
            return "model file tensor '\(tensor)' holds \(count) NaN or infinite value\(count == 1 ? "" : "s") "
                + "(the first, \(first), at \(index)); such a model cannot compute probabilities: it comes from a diverged "
                + "or damaged run, retrain it (e.g. with a lower learning rate)"
        case .cannotEncode(let why):
            return "cannot write the model file: \(why)"
        case .io(let why):
            return why
        case .inFile(let path, let e):
            return "\(path): \(e.description)"
        }
    }
}
