/// Everything needed to turn raw poses into a network input, exactly as at training time.
/// It travels inside the model file (as JSON, docs/format.md section 5 gives the exact form and
/// maths), so a runtime reproduces the training-time inputs.
///
/// The network input for one window is `[frames, channelsPerFrame]` (time-major,
/// channels-last), where the per-frame channels are the blocks of `channels` in order.
public struct InputSpec: Codable, Hashable, Sendable {
    public var skeleton: Skeleton
    public var window: WindowSpec
    /// Coordinate transforms, applied in order to each window.
    public var steps: [PreprocessingStep]
    /// Per-frame feature blocks, in order (`ChannelBlocks.all` lists them).
    public var channels: [ChannelBlock]
    /// The joint pairs the relational blocks (`relativePositions`, `distances`) read, as joint
    /// names `[a, b]` (a pair's value is `c[b] − c[a]`); nil for every pair of the skeleton's
    /// joints `(i, j)`, `i < j`, row by row. Written to the model header only when set
    /// (docs/format.md, section 5).
    public var pairs: [[String]]?
    /// Interaction models: the number M > 1 of bodies per frame, on a skeleton of M copies
    /// (`Skeleton.bodies`, joints `p1.<joint>` ... `pM.<joint>`); nil for one body. Written to
    /// the model header only when set (docs/format.md, section 5).
    public var bodies: Int?
    /// Interaction models whose training data named its people by role: the track ids of
    /// bodies 1, 2, ... (at most `bodies`, distinct, non-empty), so that a runtime puts a person
    /// whose id is `bodyRoles[k]` in body k + 1 (`BodyPairing`; offline, Datasets'
    /// `BodyOrderRule.roles`); nil: bodies in order of first appearance. Written to the model
    /// header only when set (docs/format.md, section 5).
    public var bodyRoles: [String]?

    /// `bodies` is the skeleton's `bodyCount` (nil for one body).
    public init(skeleton: Skeleton, window: WindowSpec, steps: [PreprocessingStep], channels: [ChannelBlock]) {
        self.skeleton = skeleton
        self.window = window
        self.steps = steps
        self.channels = channels
        let m = skeleton.bodyCount
        bodies = m > 1 ? m : nil
    }

    /// Where the coordinates are centred.
    public enum Centring: String, Codable, Hashable, Sendable, CaseIterable {
        /// On the skeleton's centre joints, averaged over the window (the body's path stays).
        case window
        /// On the skeleton's centre joints, frame by frame (only the pose relative to the
        /// centre remains).
        case frame
        /// Not centred.
        case none
        /// On the mean of all the skeleton's joints, averaged over the window: for skeletons
        /// that name no centre joints.
        case mean
    }

    /// How the coordinates are scaled.
    public enum Scaling: String, Codable, Hashable, Sendable, CaseIterable {
        /// Torso length for 2D skeletons with a torso; nothing for 3D (metres stay metres).
        case auto
        /// Divided by the window's torso length.
        case torso
        /// x divided by the image width and y by the image height (2D pixels).
        case image
        /// Not scaled.
        case none
        /// Divided by a fixed number (`divisor`), e.g. the training data's typical body size
        /// for skeletons without a torso: the data's units disappear, the poses keep their
        /// relative sizes.
        case fixed
    }

    /// The default input for a skeleton: centred on the skeleton's centre over the window,
    /// scaled by torso length for 2D (metres are kept for 3D), coordinates plus a presence mask.
    /// Same as `standard(for:window:)` with `centring: .window, scaling: .auto`; not
    /// validated (`FeatureExtractor.init` validates).
    public static func standard(for skeleton: Skeleton, frames: Int) -> InputSpec {
        var steps: [PreprocessingStep] = []
        if !skeleton.centre.isEmpty {
            steps.append(.centre(joints: skeleton.centre, perFrame: false))
        }
        if skeleton.dimensions == 2 && !skeleton.torsoUpper.isEmpty && !skeleton.torsoLower.isEmpty {
            steps.append(.scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower))
        }
        return InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: frames), steps: steps, channels: [.coordinates, .mask])
    }

    /// An input for a skeleton with a chosen centring and scaling.
    ///
    /// - `image` scaling needs `imageSize` `[width, height]` and a 2D skeleton; it is applied
    ///   before centring, so centred coordinates are in image widths and heights.
    /// - `torso` scaling needs a skeleton with `torsoUpper` and `torsoLower` joints.
    /// - Centring needs the skeleton's `centre` joints; without them `window`/`frame` centring
    ///   is an error (say `none`).
    /// - `fixed` scaling divides by `divisor`, or axis a by `axisDivisors[a]` when given.
    public static func standard(
        for skeleton: Skeleton, window: WindowSpec, centring: Centring = .window, scaling: Scaling = .auto,
        imageSize: [Double]? = nil, channels: [ChannelBlock] = [.coordinates, .mask], divisor: Double? = nil,
        axisDivisors: [Double] = []
    ) throws -> InputSpec {
        var steps: [PreprocessingStep] = []
        let hasTorso = !skeleton.torsoUpper.isEmpty && !skeleton.torsoLower.isEmpty
        if scaling == .image {
            guard skeleton.dimensions == 2 else {
                throw InputSpecError.step(index: 0, reason: "image scaling is for 2D skeletons; '\(skeleton.name)' is 3D")
            }
            guard let size = imageSize, size.count == 2, size.allSatisfy({ $0.isFinite && $0 > 0 }) else {
                throw InputSpecError.step(
                    index: 0, reason: "image scaling needs the image size [width, height] (give imageSize in the dataset header)")
            }
            steps.append(.divide(by: size.map { Float($0) }))
        }
        switch centring {
        case .none: break
        case .mean:
            steps.append(.centre(joints: skeleton.joints, perFrame: false))
        case .window, .frame:
            if skeleton.centre.isEmpty {
                guard centring == .window else {
                    throw InputSpecError.step(
                        index: steps.count, reason: "skeleton '\(skeleton.name)' names no centre joints; use centring none")
                }
            } else {
                steps.append(.centre(joints: skeleton.centre, perFrame: centring == .frame))
            }
        }
        switch scaling {
        case .auto:
            if skeleton.dimensions == 2 && hasTorso {
                steps.append(.scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower))
            }
        case .torso:
            guard hasTorso else {
                throw InputSpecError.step(
                    index: steps.count, reason: "skeleton '\(skeleton.name)' names no torso joints; use another scaling")
            }
            steps.append(.scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower))
        case .fixed where !axisDivisors.isEmpty:
            guard axisDivisors.count == skeleton.dimensions, axisDivisors.allSatisfy({ $0.isFinite && $0 > 0 }) else {
                throw InputSpecError.step(
                    index: steps.count, reason: "fixed scaling needs \(skeleton.dimensions) positive axis divisors, got \(axisDivisors)")
            }
            steps.append(.divide(by: axisDivisors.map { Float($0) }))
        case .fixed:
            guard let divisor, divisor.isFinite, divisor > 0 else {
                throw InputSpecError.step(index: steps.count, reason: "fixed scaling needs a positive divisor")
            }
            steps.append(.divide(by: [Float](repeating: Float(divisor), count: skeleton.dimensions)))
        case .image, .none: break
        }
        let spec = InputSpec(skeleton: skeleton, window: window, steps: steps, channels: channels)
        try spec.validate()
        return spec
    }

    /// Number of values per frame.
    public var channelsPerFrame: Int {
        channels.reduce(0) { $0 + $1.width(for: self) }
    }

    /// Number of values per window: `frames * channelsPerFrame`.
    public var valuesPerWindow: Int { window.frames * channelsPerFrame }

    /// Width and offset of each channel block inside a frame, in order.
    public var channelLayout: [(block: ChannelBlock, offset: Int, width: Int)] {
        var o = 0
        return channels.map { b in
            let w = b.width(for: self)
            defer { o += w }
            return (b, o, w)
        }
    }

    /// The channel blocks resolved for this input (joint indices looked up), each with its
    /// offset in a frame. Throws what `validate()` throws.
    public func resolvedBlocks() throws -> [(block: any ChannelBlockKind, offset: Int)] {
        try validate()
        return try placedBlocks()
    }

    /// `resolvedBlocks()` for a validated input (or one whose blocks `validate` is checking).
    private func placedBlocks() throws -> [(block: any ChannelBlockKind, offset: Int)] {
        var o = 0
        return try channels.map { b in
            let block = try b.kind.init(input: self)
            defer { o += b.width(for: self) }
            return (block, o)
        }
    }

    /// Largest window accepted (frames); a larger one is a damaged or hostile description.
    public static let maxFrames = 100_000

    /// Checks the skeleton, the window, that every step names known joints and sane
    /// parameters, and that the channel blocks are usable with this skeleton.
    public func validate() throws {
        try skeleton.validate()
        try window.validate()
        guard (bodies ?? 1) == skeleton.bodyCount, bodies != 1 else {
            throw InputSpecError.bodies(
                "bodies is \(bodies.map(String.init) ?? "absent (one body)") but skeleton '\(skeleton.name)' holds \(skeleton.bodyCount) (joints p1.<joint> ... pM.<joint>)")
        }
        if let roles = bodyRoles {
            let m = bodies ?? 1
            guard m > 1, (1...m).contains(roles.count), !roles.contains(where: \.isEmpty), Set(roles).count == roles.count else {
                throw InputSpecError.bodies(
                    "bodyRoles \(roles) must be 1 to \(m) distinct, non-empty track ids, one for each of the first bodies of an interaction model")
            }
        }
        for (i, step) in steps.enumerated() {
            for j in step.joints where skeleton.index(of: j) == nil {
                throw PoseError.unknownJoint(j, skeleton: skeleton.name)
            }
            switch step {
            case .centre(let joints, _):
                guard !joints.isEmpty else { throw InputSpecError.step(index: i, reason: "centre names no joints") }
            case .scaleByTorso(let upper, let lower):
                guard !upper.isEmpty && !lower.isEmpty else {
                    throw InputSpecError.step(index: i, reason: "scaleByTorso needs upper and lower joints")
                }
            case .divide(let by):
                guard by.count == skeleton.dimensions else {
                    throw InputSpecError.step(
                        index: i, reason: "divide needs \(skeleton.dimensions) divisors (one per axis), got \(by.count)")
                }
                guard by.allSatisfy({ PreprocessingStep.divisors.contains($0) }) else {
                    throw InputSpecError.step(
                        index: i, reason: "divide needs divisors from \(PreprocessingStep.divisors.lowerBound) to \(Int(PreprocessingStep.divisors.upperBound)), got \(by)")
                }
            case .fillGaps:
                guard i == 0 else {
                    throw InputSpecError.step(index: i, reason: "fillGaps must be the first step (it fills the poses as given), at most once")
                }
            case .alignFacing(let left, let right, let verticalAxis):
                guard skeleton.dimensions == 3 else {
                    throw InputSpecError.step(index: i, reason: "alignFacing is for 3D skeletons; '\(skeleton.name)' is 2D")
                }
                guard !left.isEmpty && !right.isEmpty else {
                    throw InputSpecError.step(index: i, reason: "alignFacing needs left and right joints")
                }
                guard (0..<3).contains(verticalAxis) else {
                    throw InputSpecError.step(index: i, reason: "alignFacing's verticalAxis must be 0, 1 or 2, got \(verticalAxis)")
                }
            }
        }
        try validatePairs()
        guard !channels.isEmpty else { throw InputSpecError.channels("no channel blocks; give at least one") }
        var seen = Set<ChannelBlock>()
        for c in channels {
            guard seen.insert(c).inserted else { throw InputSpecError.channels("block '\(c.rawValue)' is listed twice") }
        }
        _ = try placedBlocks()  // each block checks that it can be built (bones need bones, pairs a limit)
        guard valuesPerWindow <= Int(Int32.max) else {
            throw InputSpecError.window("\(window.frames) frames x \(channelsPerFrame) channels is too large")
        }
    }
}

/// Errors in an input description (from a config or a model file's header).
public enum InputSpecError: Error, Equatable, CustomStringConvertible {
    case window(String)
    case step(index: Int, reason: String)
    case channels(String)
    case bodies(String)
    case pairs(String)

    public var description: String {
        switch self {
        case .bodies(let why): return "bodies: \(why)"
        case .window(let why): return "window: \(why)"
        case .step(let index, let why): return "preprocessing step \(index): \(why)"
        case .channels(let why): return "channels: \(why)"
        case .pairs(let why): return "pairs: \(why)"
        }
    }
}

/// How a sequence is cut into windows of exactly `frames` frames (docs/format.md 5.3-5.5).
///
/// JSON: `{"frames": 45, "mode": "sliding", "padding": "empty", "frameRate": 30}`;
/// `frameRate` is `null` when sequences are used as recorded. Missing `mode`/`padding` keys
/// decode as `sliding`/`empty`.
public struct WindowSpec: Codable, Hashable, Sendable {
    public enum Padding: String, Codable, Hashable, Sendable, CaseIterable {
        /// Pad with empty poses (nobody in view), per the Pose contract.
        case empty
        /// Repeat the nearest real frame (the last one for windows running past the end).
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

    /// A window given in seconds: `frames = round(seconds * frameRate)` (at least 1), and
    /// sequences are resampled to `frameRate` so that the window always spans that time.
    public init(seconds: Double, frameRate: Double, mode: Mode = .sliding, padding: Padding = .empty) throws {
        guard seconds.isFinite && seconds > 0 else { throw InputSpecError.window("length must be a positive number of seconds, got \(seconds)") }
        guard frameRate.isFinite && frameRate > 0 else {
            throw InputSpecError.window("a window in seconds needs a positive frame rate, got \(frameRate)")
        }
        let f = (seconds * frameRate).rounded()
        guard f <= Double(InputSpec.maxFrames) else {
            throw InputSpecError.window("\(seconds) s at \(frameRate) fps is more than \(InputSpec.maxFrames) frames")
        }
        self.init(frames: max(1, Int(f)), mode: mode, padding: padding, frameRate: frameRate)
    }

    /// Window length in seconds, when the frame rate is fixed.
    public var seconds: Double? { frameRate.map { Double(frames) / $0 } }

    /// The frame rates a window (and a model file's `trainingFrameRate`) may have, frames per
    /// second: every real pose source lies well inside (docs/format.md 2.1).
    public static let frameRates: ClosedRange<Double> = 0.01...10_000

    public func validate() throws {
        guard frames > 0 && frames <= InputSpec.maxFrames else {
            throw InputSpecError.window("length must be 1 to \(InputSpec.maxFrames) frames, got \(frames)")
        }
        if let r = frameRate {
            guard WindowSpec.frameRates.contains(r) else {
                throw InputSpecError.window(
                    "frame rate must be \(WindowSpec.frameRates.lowerBound) to \(Int(WindowSpec.frameRates.upperBound)) frames per second, got \(r)")
            }
        }
    }

    private enum CodingKeys: String, CodingKey { case frames, mode, padding, frameRate }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        frames = try c.decode(Int.self, forKey: .frames)
        mode = try c.decodeIfPresent(Mode.self, forKey: .mode) ?? .sliding
        padding = try c.decodeIfPresent(Padding.self, forKey: .padding) ?? .empty
        frameRate = try c.decodeIfPresent(Double.self, forKey: .frameRate)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(frames, forKey: .frames)
        try c.encode(mode, forKey: .mode)
        try c.encode(padding, forKey: .padding)
        if let frameRate { try c.encode(frameRate, forKey: .frameRate) } else { try c.encodeNil(forKey: .frameRate) }
    }
}

/// One coordinate transform. Only present joints are changed; absent joints stay absent with
/// zero coordinates. Exact maths: docs/format.md 5.6.
///
/// JSON (one object per step, `op` first in meaning):
/// `{"op": "centre", "joints": ["root"], "perFrame": false}`,
/// `{"op": "scaleByTorso", "upper": ["neck"], "lower": ["root"]}`,
/// `{"op": "divide", "by": [1920, 1080]}`,
/// `{"op": "alignFacing", "left": ["leftHip"], "right": ["rightHip"], "verticalAxis": 1}`,
/// `{"op": "fillGaps"}`.
public enum PreprocessingStep: Codable, Hashable, Sendable {
    /// Fill each joint's gaps in time (first step only): a frame where the joint is absent but
    /// present in some other frame of the window takes the value linearly interpolated in frame
    /// index between the nearest present frames before (p) and after (q) it,
    /// `c[p] + w·(c[q] − c[p])` with `w = (f − p) / (q − p)` (float32, each operation rounded),
    /// and before the first (after the last) present frame that frame's value.
    /// A joint present in no frame of the window stays absent. Filled points are present for
    /// every later step and every channel block except `mask` and `confidence`, which still
    /// report them as not seen (the Pose contract: absent is reported as missing; a filled
    /// point has no confidence).
    case fillGaps
    /// Subtract the centre. The centre of frame f is the mean of the present `joints` at f.
    /// `perFrame == false`: every frame uses the window centre, the mean of the frame centres
    /// over the frames that have one. `perFrame == true`: each frame uses its own centre, and
    /// frames without one use the window centre. With none of `joints` present anywhere in the
    /// window, the window centre is the mean of all present joints of the window.
    case centre(joints: [String], perFrame: Bool)
    /// Divide by the torso length: the median over frames of the distance between the mean
    /// of the present `upper` joints and the mean of the present `lower` joints (frames
    /// lacking either side are skipped). Without a positive torso length in the window, the
    /// RMS distance of the present joints from their mean is used; a zero scale leaves
    /// coordinates unchanged.
    case scaleByTorso(upper: [String], lower: [String])
    /// Divide each axis by a constant (e.g. image width and height), in `divisors`.
    case divide(by: [Float])

    /// The divisors `divide` accepts (docs/format.md 2.1): image sizes and unit changes lie
    /// inside, and a bounded coordinate stays finite.
    public static let divisors: ClosedRange<Float> = 1e-6...1e6
    /// 3D only: rotate the window about the vertical axis (through the origin, so put it after
    /// `centre`) so that the body faces one way. The side vector of frame f is the mean of the
    /// present `right` joints minus the mean of the present `left` joints; its window mean
    /// (over frames with both) is projected on the horizontal plane, whose axes are the two
    /// axes other than `verticalAxis` in increasing order (h1, h2). With θ the angle of that
    /// projection from h1, every present joint is rotated by −θ:
    /// `h1' = cos θ·h1 + sin θ·h2`, `h2' = −sin θ·h1 + cos θ·h2`, so the side vector lies on +h1.
    /// Without a side vector in the window (or a zero projection) nothing changes. This
    /// removes the camera's viewing angle while keeping turns within the window.
    case alignFacing(left: [String], right: [String], verticalAxis: Int)

    public var joints: [String] {
        switch self {
        case .centre(let joints, _): return joints
        case .scaleByTorso(let upper, let lower): return upper + lower
        case .divide, .fillGaps: return []
        case .alignFacing(let left, let right, _): return left + right
        }
    }

    /// The `op` name in JSON.
    public var op: String {
        switch self {
        case .centre: return "centre"
        case .scaleByTorso: return "scaleByTorso"
        case .divide: return "divide"
        case .alignFacing: return "alignFacing"
        case .fillGaps: return "fillGaps"
        }
    }

    private enum Keys: String, CodingKey { case op, joints, perFrame, upper, lower, by, left, right, verticalAxis }
    /// Swift's synthesized form (`{"centre": {"joints": ..., "perFrame": ...}}`), which the
    /// first model files used; still read, never written.
    private enum LegacyKeys: String, CodingKey { case centre, scaleByTorso, divide }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        guard let op = try c.decodeIfPresent(String.self, forKey: .op) else {
            let legacy = try decoder.container(keyedBy: LegacyKeys.self)
            if legacy.contains(.centre) {
                let b = try legacy.nestedContainer(keyedBy: Keys.self, forKey: .centre)
                self = .centre(joints: try b.decode([String].self, forKey: .joints), perFrame: try b.decode(Bool.self, forKey: .perFrame))
            } else if legacy.contains(.scaleByTorso) {
                let b = try legacy.nestedContainer(keyedBy: Keys.self, forKey: .scaleByTorso)
                self = .scaleByTorso(upper: try b.decode([String].self, forKey: .upper), lower: try b.decode([String].self, forKey: .lower))
            } else if legacy.contains(.divide) {
                let b = try legacy.nestedContainer(keyedBy: Keys.self, forKey: .divide)
                self = .divide(by: try b.decode([Float].self, forKey: .by))
            } else {
                throw DecodingError.dataCorruptedError(
                    forKey: .op, in: c, debugDescription: "a preprocessing step needs an \"op\" (centre, scaleByTorso, divide, alignFacing, fillGaps)")
            }
            return
        }
        switch op {
        case "centre":
            self = .centre(joints: try c.decode([String].self, forKey: .joints), perFrame: try c.decode(Bool.self, forKey: .perFrame))
        case "scaleByTorso":
            self = .scaleByTorso(upper: try c.decode([String].self, forKey: .upper), lower: try c.decode([String].self, forKey: .lower))
        case "divide":
            self = .divide(by: try c.decode([Float].self, forKey: .by))
        case "alignFacing":
            self = .alignFacing(
                left: try c.decode([String].self, forKey: .left), right: try c.decode([String].self, forKey: .right),
                verticalAxis: try c.decode(Int.self, forKey: .verticalAxis))
        case "fillGaps":
            self = .fillGaps
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .op, in: c,
                debugDescription: "unknown preprocessing step '\(op)'; this reader knows centre, scaleByTorso, divide, alignFacing, fillGaps")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(op, forKey: .op)
        switch self {
        case .centre(let joints, let perFrame):
            try c.encode(joints, forKey: .joints)
            try c.encode(perFrame, forKey: .perFrame)
        case .scaleByTorso(let upper, let lower):
            try c.encode(upper, forKey: .upper)
            try c.encode(lower, forKey: .lower)
        case .divide(let by):
            try c.encode(by, forKey: .by)
        case .alignFacing(let left, let right, let verticalAxis):
            try c.encode(left, forKey: .left)
            try c.encode(right, forKey: .right)
            try c.encode(verticalAxis, forKey: .verticalAxis)
        case .fillGaps:
            break
        }
    }
}
