import PoseCore

/// The Pose contract at the runtime boundary: what a pushed frame may get wrong, and how a
/// session turns points by joint name into the model's dense frame.

/// A problem with one pushed frame. A session counts it in its statistics and goes on (the
/// frame is used or ignored as described per kind, `ignoresFrame`), or with
/// `StreamOptions.strict` throws it as `StreamError.rejected` and ignores the frame.
public struct StreamWarning: Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, CaseIterable, Sendable {
        /// A joint name that is neither the skeleton's, nor an alias of its tables, nor the
        /// skeleton's name without case and separators. The point is ignored.
        case unknownJoint
        /// A frame with points but none of the joints a preprocessing step needs (the centre,
        /// a torso end, a side): the step falls back as docs/format.md 5 says.
        case missingJoint
        /// A NaN or infinite coordinate or confidence. The joint is taken as absent.
        case nonFinite
        /// A coordinate beyond ±`PosePoint.maxCoordinate` (1e6), which the dataset readers
        /// refuse in files: a unit or writing error. The frame is ignored.
        case outOfRange
        /// 2D points all inside the unit square (Vision's normalised coordinates?) for a model
        /// trained on pixels. Used as given: convert them to pixels first.
        case normalisedPoints
        /// A body size implausible for the model's units (under 8 for pixels, over 20 for
        /// metres: millimetres?). Used as given.
        case wrongScale
        /// A timestamp before the previous frame's, or NaN. The frame is ignored.
        case timeBackwards
        /// A timestamp more than `StreamOptions.maximumJump` seconds after the previous frame's.
        /// The frame is ignored; when the next frame comes at most `maximumJump` after it (the
        /// stream really resumed later), the session restarts there (`StreamClock`).
        case timeJump
        /// More than `StreamOptions.maximumGap` seconds since the previous frame: the frames
        /// between are interpolated. Push empty poses while the person is not seen.
        case gap
        /// The same timestamp as the previous frame's: used, as offline (at a frame rate the
        /// later of the two is what a model frame at that time samples; without one, each pushed
        /// frame is a frame), but no time passed: a source that repeats its clock (or writes
        /// none) would make windows and events of no duration.
        case sameTime
        /// Less than `StreamOptions.minimumInterval` (0.1 ms: more than 10,000 frames a second)
        /// after the previous frame: nanoseconds or clock ticks written as seconds? Used as
        /// given (as offline data with `[too-fast-timestamps]`), but the frames crowd into one
        /// model frame.
        case tooFast
        /// The model's output for a window this frame completed is NaN or infinite: an extreme
        /// input (the model passed `ActionModel.checkOutputs`), e.g. a torso of almost no
        /// length that scaling turns into huge values. The frame is used, the window dropped.
        case nonFiniteOutput
        /// An interaction model's bodies are all taken by people still in view: one more person
        /// waits for a body (`BodyPairing`). The frame is used without them.
        case unpairedPerson
    }

    public var kind: Kind
    /// Index of the pushed frame (from 0), and its timestamp.
    public var frame: Int
    public var time: Double
    /// The joint name, the values or the times concerned.
    public var detail: String

    public init(kind: Kind, frame: Int, time: Double, detail: String) {
        self.kind = kind
        self.frame = frame
        self.time = time
        self.detail = detail
    }

    public var description: String {
        let what: String
        switch kind {
        case .unknownJoint: what = "unknown joint name \(detail) (ignored); use the model's skeleton names or a documented alias"
        case .missingJoint: what = "none of the joints \(detail) is present, which the model's preprocessing needs"
        case .nonFinite: what = "NaN or infinite value for joint \(detail) (taken as absent)"
        case .outOfRange: what = "joint \(detail) is beyond ±\(Int(PosePoint.maxCoordinate)) (frame ignored); check the units and the writer"
        case .normalisedPoints: what = "the points look normalised (\(detail)) but the model was trained on pixels; convert them to pixels"
        case .wrongScale: what = "the body measures \(detail), implausible for the model's units"
        case .timeBackwards: what = "timestamp \(detail) (frame ignored); timestamps must not decrease"
        case .timeJump:
            what = "the timestamp jumps \(detail) (frame ignored; a next frame at most the jump limit after it restarts the stream there); timestamps must be seconds"
        case .gap: what = "\(detail) since the previous frame; the frames between are interpolated"
        case .sameTime: what = "the same timestamp as the previous frame (\(detail)); timestamps must advance with the frames"
        case .tooFast: what = "\(detail) after the previous frame (beyond 10000 fps): are the timestamps nanoseconds or clock ticks? Send seconds"
        case .nonFiniteOutput: what = "the model's output is \(detail), not finite (window dropped); an extreme or degenerate pose?"
        case .unpairedPerson:
            what = "person \(detail) waits for a body: the model takes a fixed number of people and every body is taken by someone still in view (used without them)"
        }
        return "frame \(frame) (t = \(time) s): \(what)"
    }
}

extension StreamWarning.Kind {
    /// True for the problems that make a session ignore the frame (the others use it).
    public var ignoresFrame: Bool { self == .timeBackwards || self == .timeJump || self == .outOfRange }
}

/// What a session has seen: frames, windows and the warnings by kind.
public struct StreamStatistics: Equatable, Sendable {
    /// Frames pushed, including ignored ones.
    public var frames = 0
    /// Frames at the model's frame rate (after resampling).
    public var modelFrames = 0
    /// Window predictions made.
    public var windows = 0
    /// How often each kind of warning occurred.
    public var warningCounts: [StreamWarning.Kind: Int] = [:]
    /// The first warning of each kind, in the order they occurred.
    public var firstWarnings: [StreamWarning] = []
    /// Unknown joint names seen (at most 16).
    public var unknownNames: [String] = []

    public init() {}

    public func count(_ kind: StreamWarning.Kind) -> Int { warningCounts[kind, default: 0] }
    public var warningTotal: Int { warningCounts.values.reduce(0, +) }

    mutating func note(_ w: StreamWarning) {
        warningCounts[w.kind, default: 0] += 1
        if warningCounts[w.kind] == 1 { firstWarnings.append(w) }
        if w.kind == .unknownJoint && unknownNames.count < 16 && !unknownNames.contains(w.detail) { unknownNames.append(w.detail) }
    }

    /// Adds what another session's statistics gained from `before` to `after` (its new first
    /// warnings after these): keeps a sum over sessions current in O(kinds) per push.
    mutating func add(from before: StreamStatistics, to after: StreamStatistics) {
        frames += after.frames - before.frames
        modelFrames += after.modelFrames - before.modelFrames
        windows += after.windows - before.windows
        for (k, n) in after.warningCounts where n != before.count(k) { warningCounts[k, default: 0] += n - before.count(k) }
        for w in after.firstWarnings.dropFirst(before.firstWarnings.count) where !firstWarnings.contains(where: { $0.kind == w.kind }) {
            firstWarnings.append(w)
        }
        for name in after.unknownNames.dropFirst(before.unknownNames.count) where unknownNames.count < 16 && !unknownNames.contains(name) {
            unknownNames.append(name)
        }
    }
}

/// Errors of sessions and multi-track streams. Each says what to fix.
public enum StreamError: Error, Equatable, CustomStringConvertible {
    /// A problem with a frame, under `StreamOptions.strict`.
    case rejected(StreamWarning)
    /// A whole-clip (`fit` window) model whose file records no clip length (written before
    /// format 1.3, or without the training data's clip lengths) and no `StreamOptions.clipFrames`.
    case unknownClipLength
    /// A stride below 1.
    case invalidStride(Int)
    /// Stream options out of their range (which, and why).
    case invalidOptions(String)
    /// A multi-track stream already follows `limit` tracks.
    case tooManyTracks(limit: Int, track: PersonID)
    /// Several people pushed as one frame to a session of a one-body model.
    case onePersonPerSession(people: Int)

    public var description: String {
        switch self {
        case .rejected(let w): return "rejected \(w)"
        case .unknownClipLength:
            return "the model classifies whole clips (fit windows) and its file records no clip length to slide over a stream (it predates model format 1.3); "
                + "give the training clips' typical length in frames (StreamOptions.clipFrames), or train it again with this version of fit, which records it"
        case .invalidStride(let s): return "the stride must be at least 1 frame, got \(s)"
        case .invalidOptions(let why): return "stream options: \(why)"
        case .tooManyTracks(let limit, let track):
            return "track \(track) is one more than the \(limit) tracks followed at once (the limit is \(limit)); raise the track limit or forget unseen tracks sooner"
        case .onePersonPerSession(let n):
            return "\(n) people in one frame for a model of one person: give each person a session of their own (a TrackedStream does)"
        }
    }
}

/// Turns points by joint name into the model's dense frame, checking the Pose contract.
struct FrameReader {
    let skeleton: Skeleton
    /// Joint groups a preprocessing step needs, with a name for messages.
    let required: [(name: String, joints: [Int])]
    /// Resolved names (`-1`: unknown), at most `cacheLimit` of them.
    private var names: [String: Int] = [:]
    private let cacheLimit = 1024

    /// A reader of one body's points (an interaction model's people): names, values and units, no preprocessing joints.
    init(skeleton: Skeleton) {
        self.skeleton = skeleton
        required = []
    }

    init(_ input: InputSpec) {
        skeleton = input.skeleton
        let s = input.skeleton
        func group(_ joints: [String]) -> (name: String, joints: [Int]) {
            ("[" + joints.joined(separator: ", ") + "]", joints.compactMap { s.index(of: $0) })
        }
        var groups: [(name: String, joints: [Int])] = []
        for step in input.steps {
            switch step {
            case .centre(let joints, _): groups.append(group(joints))
            case .scaleByTorso(let upper, let lower): groups += [group(upper), group(lower)]
            case .alignFacing(let left, let right, _): groups += [group(left), group(right)]
            case .divide, .fillGaps: break
            }
        }
        var seen = Set<String>()
        required = groups.filter { !$0.joints.isEmpty && seen.insert($0.name).inserted }
    }

    mutating func index(of name: String) -> Int {
        if let k = names[name] { return k }
        let k = skeleton.resolveJoint(name)?.index ?? -1
        if names.count < cacheLimit { names[name] = k }
        return k
    }

    /// Writes `points` into `coordinates [J, D]`, `present [J]`, `confidence [J]` (absent
    /// joints zero) and reports what is wrong with them to `warn`. A point whose confidence
    /// is at or below `minimumConfidence` is absent (the readers' one confidence rule).
    mutating func read(
        _ points: [String: PosePoint], minimumConfidence: Float, coordinates: UnsafeMutablePointer<Float>,
        present: UnsafeMutablePointer<UInt8>, confidence: UnsafeMutablePointer<Float>, warn: (StreamWarning.Kind, String) -> Void
    ) {
        clear(coordinates: coordinates, present: present, confidence: confidence)
        for (name, p) in points {
            let j = index(of: name)
            guard j >= 0 else {
                warn(.unknownJoint, name)
                continue
            }
            put(p, joint: j, name: name, minimumConfidence: minimumConfidence, coordinates, present, confidence, warn)
        }
        check(coordinates: coordinates, present: present, warn: warn)
    }

    /// As `read`, for points in the skeleton's joint order (nil: absent).
    func read(
        joints points: [PosePoint?], minimumConfidence: Float, coordinates: UnsafeMutablePointer<Float>,
        present: UnsafeMutablePointer<UInt8>, confidence: UnsafeMutablePointer<Float>, warn: (StreamWarning.Kind, String) -> Void
    ) {
        precondition(points.count == skeleton.jointCount, "\(points.count) points for \(skeleton.jointCount) joints")
        clear(coordinates: coordinates, present: present, confidence: confidence)
        for (j, p) in points.enumerated() {
            if let p { put(p, joint: j, name: skeleton.joints[j], minimumConfidence: minimumConfidence, coordinates, present, confidence, warn) }
        }
        check(coordinates: coordinates, present: present, warn: warn)
    }

    private func clear(coordinates: UnsafeMutablePointer<Float>, present: UnsafeMutablePointer<UInt8>, confidence: UnsafeMutablePointer<Float>) {
        let J = skeleton.jointCount
        coordinates.update(repeating: 0, count: J * skeleton.dimensions)
        present.update(repeating: 0, count: J)
        confidence.update(repeating: 0, count: J)
    }

    private func put(
        _ p: PosePoint, joint j: Int, name: String, minimumConfidence: Float, _ coordinates: UnsafeMutablePointer<Float>,
        _ present: UnsafeMutablePointer<UInt8>, _ confidence: UnsafeMutablePointer<Float>, _ warn: (StreamWarning.Kind, String) -> Void
    ) {
        let D = skeleton.dimensions
        guard p.x.isFinite, p.y.isFinite, D == 2 || p.z.isFinite, (p.confidence ?? 1).isFinite else {
            warn(.nonFinite, name)
            return
        }
        let limit = PosePoint.maxCoordinate
        guard abs(p.x) <= limit && abs(p.y) <= limit && (D == 2 || abs(p.z) <= limit) else {
            warn(.outOfRange, D == 2 ? "\(name) at (\(p.x), \(p.y))" : "\(name) at (\(p.x), \(p.y), \(p.z))")
            return
        }
        if let c = p.confidence, c <= minimumConfidence { return }
        coordinates[j * D] = p.x
        coordinates[j * D + 1] = p.y
        if D == 3 { coordinates[j * D + 2] = p.z }
        present[j] = 1
        confidence[j] = p.confidence ?? 1
    }

    /// The missing-joint and (with `units`) units checks of one dense frame (thresholds as
    /// `CoordinateSpace`'s).
    func check(coordinates: UnsafePointer<Float>, present: UnsafePointer<UInt8>, units: Bool = true, warn: (StreamWarning.Kind, String) -> Void) {
        let J = skeleton.jointCount, D = skeleton.dimensions
        var seen = 0, inUnit = true
        var lo = SIMD3<Float>(repeating: .infinity), hi = SIMD3<Float>(repeating: -.infinity)  // z stays 0 in 2D
        for j in 0..<J where present[j] != 0 {
            seen += 1
            var v = SIMD3<Float>(repeating: 0)
            for d in 0..<D { v[d] = coordinates[j * D + d] }
            lo = pointwiseMin(lo, v)
            hi = pointwiseMax(hi, v)
            if D == 2 && (v.x < -0.1 || v.x > 1.1 || v.y < -0.1 || v.y > 1.1) { inUnit = false }
        }
        guard seen > 0 else { return }  // an empty pose is a real frame
        for g in required where !g.joints.contains(where: { present[$0] != 0 }) { warn(.missingJoint, g.name) }
        guard units && seen >= 2 else { return }
        let size = (hi - lo).max()
        switch skeleton.units {
        case .pixels where D == 2 && inUnit && size < 1.5:
            warn(.normalisedPoints, "all inside the unit square, \(size) across")
        case .pixels where size < 8 && size > 0:
            warn(.wrongScale, "\(size) pixels across")
        case .metres where size > 20:
            warn(.wrongScale, "\(size) across for a model in metres")
        default: break
        }
    }
}

/// The time rule of a stream (docs/streaming.md, "Time"). A frame may come before the clock's
/// time by at most `tolerance` (0 for one person's session; a multi-track stream tolerates the
/// lines of different people slightly out of order), and after it by at most `maximumJump`.
/// A frame further ahead is held back as a possible stray timestamp: it is ignored, and only
/// when the next frame past the clock comes at most `maximumJump` after it (the stream really
/// resumed later) does the clock restart, at that next frame. So one stray `1e12` costs one
/// frame and nothing after it, a real long pause costs the first frame after it, and no push
/// moves the clock (and the interpolation) more than `maximumJump` seconds.
struct StreamClock {
    enum Verdict: Equatable {
        /// Within the rules: use the frame.
        case accept
        /// NaN, infinite, or too far before the clock: ignore the frame.
        case backwards
        /// Too far ahead: ignore the frame, remember its time.
        case jump
        /// Confirms the last jump: start afresh with this frame.
        case restart
    }

    let maximumJump: Double
    let tolerance: Double
    /// The latest time used (nil before the first frame).
    private(set) var time: Double?
    /// The time of the last jump ignored since, which the next frame may confirm.
    private var jumpedTo: Double?

    init(maximumJump: Double, tolerance: Double = 0) {
        self.maximumJump = maximumJump
        self.tolerance = tolerance
    }

    func verdict(_ t: Double) -> Verdict {
        guard t.isFinite else { return .backwards }
        guard let now = time else { return .accept }
        if t < now - tolerance { return .backwards }
        if t - now <= maximumJump { return .accept }
        if let j = jumpedTo, t >= j && t - j <= maximumJump { return .restart }
        return .jump
    }

    /// Records a frame's verdict: when the frame is used (`accept`, `restart`) or ignored for
    /// its time (`jump`; `backwards` changes nothing).
    mutating func commit(_ v: Verdict, _ t: Double) {
        switch v {
        case .accept: (time, jumpedTo) = (max(time ?? t, t), nil)
        case .restart: (time, jumpedTo) = (t, nil)
        case .jump: jumpedTo = t
        case .backwards: break
        }
    }

    /// Forgets the time: the next frame starts a new stream.
    mutating func reset() { (time, jumpedTo) = (nil, nil) }
}
