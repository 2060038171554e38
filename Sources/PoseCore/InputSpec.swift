/// Everything needed to turn raw poses into a network input, exactly as at training time.
/// It travels inside the model file, so a runtime reproduces the training-time inputs.
///
/// The network input for one window is `[frames, channelsPerFrame]` (time-major,
/// channels-last), where the per-frame channels are the blocks of `channels` in order.
public struct InputSpec: Codable, Hashable, Sendable {
    public var skeleton: Skeleton
    public var window: WindowSpec
    /// Coordinate transforms, applied in order to each window.
    public var steps: [PreprocessingStep]
    /// Per-frame feature blocks, in order.
    public var channels: [ChannelBlock]

    public init(skeleton: Skeleton, window: WindowSpec, steps: [PreprocessingStep], channels: [ChannelBlock]) {
        self.skeleton = skeleton
        self.window = window
        self.steps = steps
        self.channels = channels
    }

    /// The default input for a skeleton: centred on the skeleton's centre over the window,
    /// scaled by torso length for 2D (metres are kept for 3D), coordinates plus a presence mask.
    public static func standard(for skeleton: Skeleton, frames: Int) -> InputSpec {
        var steps: [PreprocessingStep] = []
        if !skeleton.centre.isEmpty {
            steps.append(.centre(joints: skeleton.centre, perFrame: false))
        }
        if skeleton.dimensions == 2 && !skeleton.torsoUpper.isEmpty && !skeleton.torsoLower.isEmpty {
            steps.append(.scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower))
        }
        return InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: frames), steps: steps,
            channels: [.coordinates, .mask])
    }

    /// Number of values per frame.
    public var channelsPerFrame: Int {
        channels.reduce(0) { $0 + $1.width(skeleton) }
    }

    /// Number of values per window: `frames * channelsPerFrame`.
    public var valuesPerWindow: Int { window.frames * channelsPerFrame }

    /// Checks that every joint named by a step exists and that the shape is sane.
    public func validate() throws {
        try skeleton.validate()
        guard window.frames > 0 else {
            throw PoseError.invalidSkeleton(name: skeleton.name, reason: "window length must be positive")
        }
        for step in steps {
            for j in step.joints where skeleton.index(of: j) == nil {
                throw PoseError.unknownJoint(j, skeleton: skeleton.name)
            }
        }
    }
}

/// How a sequence is cut into windows of exactly `frames` frames.
public struct WindowSpec: Codable, Hashable, Sendable {
    public enum Padding: String, Codable, Hashable, Sendable, CaseIterable {
        /// Pad with empty poses (nobody in view), per the Pose contract.
        case empty
        /// Repeat the last frame.
        case edge
    }
    public enum Mode: String, Codable, Hashable, Sendable, CaseIterable {
        /// Fixed-length windows at a stride; short sequences are padded.
        case sliding
        /// Each whole sequence is linearly resampled to `frames` frames: one window per sequence.
        case fit
    }

    public var frames: Int
    public var mode: Mode
    public var padding: Padding
    /// When set, sequences are first resampled to this rate (frames per second) using their
    /// timestamps or the dataset's frame rate. Nil keeps frames as recorded.
    public var frameRate: Double?

    public init(frames: Int, mode: Mode = .sliding, padding: Padding = .empty, frameRate: Double? = nil) {
        self.frames = frames
        self.mode = mode
        self.padding = padding
        self.frameRate = frameRate
    }
}

/// One coordinate transform. Only present joints are changed; absent joints stay absent.
public enum PreprocessingStep: Codable, Hashable, Sendable {
    /// Subtract the centre: the mean of the present `joints`, averaged over the window
    /// (`perFrame == false`) or taken frame by frame (frames without those joints use the
    /// window's centre). With none of them in the window, the mean of all present joints.
    case centre(joints: [String], perFrame: Bool)
    /// Divide by the torso length: the median over frames of the distance between the mean
    /// of `upper` and the mean of `lower`. Without a torso in the window, the RMS distance of
    /// the present joints from their mean is used; a zero scale leaves coordinates unchanged.
    case scaleByTorso(upper: [String], lower: [String])
    /// Divide each axis by a constant (e.g. image width and height).
    case divide(by: [Float])

    public var joints: [String] {
        switch self {
        case .centre(let joints, _): return joints
        case .scaleByTorso(let upper, let lower): return upper + lower
        case .divide: return []
        }
    }
}

/// A block of per-frame features.
public enum ChannelBlock: String, Codable, Hashable, Sendable, CaseIterable {
    /// `joints x dimensions` transformed coordinates (0 for absent joints).
    case coordinates
    /// `joints` confidences (0 absent; 1 for present joints of sources without confidence).
    case confidence
    /// `joints` presence flags (1 seen, 0 absent).
    case mask
    /// `joints x dimensions` frame differences (0 unless the joint is present in both frames;
    /// 0 at the first frame).
    case motion
    /// `bones x dimensions` child minus parent (0 unless both are present).
    case bones

    public func width(_ s: Skeleton) -> Int {
        switch self {
        case .coordinates, .motion: return s.jointCount * s.dimensions
        case .confidence, .mask: return s.jointCount
        case .bones: return s.bones.count * s.dimensions
        }
    }
}
