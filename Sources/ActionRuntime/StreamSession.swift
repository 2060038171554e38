import PoseCore

/// How a session cuts its stream.
public struct StreamOptions: Equatable, Sendable {
    /// Frames (at the model's frame rate) between window predictions: 1 predicts at every
    /// frame. Offline `predict` uses a third of the window.
    public var stride: Int
    /// Throw `StreamError.rejected` at a frame's first problem instead of counting it.
    public var strict = false
    /// A longer pause between frames is a `gap` warning (the frames between are still
    /// interpolated, as offline resampling does).
    public var maximumGap = 0.5
    /// A frame less than this many seconds after the previous one is a `tooFast` warning
    /// (more than 10,000 frames a second: timestamps in nanoseconds or clock ticks?), the
    /// bound offline data is checked against (`[too-fast-timestamps]`).
    public static let minimumInterval = 1e-4
    /// A point whose confidence is at or below this is absent, as the dataset readers' one
    /// confidence rule (0: Vision's "not detected").
    public var minimumConfidence: Float = 0
    /// The most seconds one frame may come after the previous one (`timeJump` beyond it: the
    /// frame is ignored, and a next frame that confirms the jump restarts the stream). It also
    /// caps the frames one push interpolates: `maximumJump` times the model's frame rate.
    public var maximumJump = 10.0
    /// Interaction models (`InputSpec.bodies` M > 1): a body whose person has had no joint
    /// present for this many seconds is given to a person waiting for one (`BodyPairing`).
    public var forgetAfter = 2.0
    /// Whole-clip (`fit` window) models: the clip a stream slides, in frames at the model's
    /// stream rate (`ActionModel.streamWindow`), instead of the length the model file records
    /// (`ModelHeader.Streaming.clipFrames`); needed for files written before it (format 1.3).
    public var clipFrames: Int? = nil
    /// Record each frame at the model's rate with its motion (`StreamFrame`, `FrameMotion`) for
    /// `StreamSession.takeFrames()`: frame-level events (`EventStream`) need them. Off: a push
    /// costs what it did without them.
    public var frames = false

    public init(
        stride: Int, strict: Bool = false, maximumGap: Double = 0.5, minimumConfidence: Float = 0, maximumJump: Double = 10,
        clipFrames: Int? = nil, frames: Bool = false
    ) {
        self.stride = stride
        self.strict = strict
        self.maximumGap = maximumGap
        self.minimumConfidence = minimumConfidence
        self.maximumJump = maximumJump
        self.clipFrames = clipFrames
        self.frames = frames
    }

    /// Checks the ranges for a model at `frameRate` (nil: none); throws `StreamError` naming the field.
    public func validate(frameRate: Double?) throws {
        guard stride >= 1 else { throw StreamError.invalidStride(stride) }
        guard forgetAfter > 0 && !forgetAfter.isNaN else {
            throw StreamError.invalidOptions("bodies must be given up after a positive number of seconds, got \(forgetAfter)")
        }
        if let n = clipFrames, !(n >= 1 && n <= InputSpec.maxFrames) {
            throw StreamError.invalidOptions("the clip length must be 1 to \(InputSpec.maxFrames) frames, got \(n)")
        }
        guard maximumJump > 0 && maximumJump.isFinite else {
            throw StreamError.invalidOptions("the jump limit must be a positive number of seconds, got \(maximumJump)")
        }
        if let r = frameRate, maximumJump * r > Double(PoseSequence.maxResampledFrames) {
            throw StreamError.invalidOptions(
                "a jump limit of \(maximumJump) s would let one frame make \(maximumJump * r) frames at \(r) fps (at most \(PoseSequence.maxResampledFrames))")
        }
    }

    /// The stride offline `predict` uses: a third of the model's window; for a whole-clip
    /// model a third of its clip (`ActionModel.streamWindow`; the model's window when the file
    /// records no clip length).
    public static func standard(for model: ActionModel) -> StreamOptions {
        let frames = (try? model.streamWindow().frames) ?? model.input.window.frames
        return StreamOptions(stride: max(1, frames / 3), frames: model.header.streaming?.frames != nil)
    }
}

/// One frame of a stream at the model's rate (the frames windows are cut from), with its
/// motion: recorded when `StreamOptions.frames` is on, taken with `StreamSession.takeFrames()`.
public struct StreamFrame: Equatable, Sendable {
    /// The frame, counted from the segment's first (`StreamWindow.start` counts the same way).
    public var index: Int
    /// Its time in seconds.
    public var time: Double
    /// `FrameMotion.motion` between the frames `FrameMotion.lag` before and after it.
    public var motion: Float
    /// The time of the newest frame when the motion was known (`lag` frames later, or the last
    /// frame at the end of a segment).
    public var now: Double
    /// The segment (`StreamWindow.segment`).
    public var segment: Int
}

/// One window prediction of a stream.
public struct StreamWindow: Equatable, Sendable {
    /// First frame of the window and one past its last real frame, at the model's frame rate,
    /// counted from the session's first frame (`WindowPrediction`'s `start` and `end` for the
    /// same recording read whole).
    public var start: Int
    public var end: Int
    /// Timestamps in seconds of the window's first and last real frames.
    public var startTime: Double
    public var endTime: Double
    /// Index into the model's classes of the most probable class (the first on ties).
    public var classIndex: Int
    /// Class probabilities, in the model's class order.
    public var probabilities: [Float]
    /// The piece of the stream the window belongs to: 0 from the session's first frame, one
    /// more after each restart (a confirmed time jump, or `finish()`). An `EventDetector` ends
    /// its running event where the segment changes (`add(_:)`).
    public var segment = 0
    /// False when no joint is present in any of the window's frames: nobody was in view (an
    /// empty scene), and an `EventDetector` makes no event of it (`add(_:)`).
    public var seen = true
}

/// One person's (or animal's) stream of poses, one frame at a time: the session resamples
/// the frames to the model's frame rate from their timestamps, keeps the last window, and
/// predicts a window every `stride` frames, the same windows `ActionModel.predict` cuts from
/// the whole recording (docs/streaming.md). A whole-clip (`fit` window) model slides a window
/// of its clip length instead (`ActionModel.streamWindow`) and resamples each to the model's
/// window as training resampled a clip: the windows of `ActionModel.streamWindows`.
///
/// Frame k at the model's rate r lies at `t₀ + k / r` and is interpolated between the pushed
/// frames around it exactly as `WindowSpec.retimed` does offline, so it exists once a frame
/// after that time has arrived. Without a model frame rate every pushed frame is a model frame.
/// Timestamps follow `StreamClock` (no decrease, jumps of at most `StreamOptions.maximumJump`),
/// so one push makes at most `maximumJump · r + 1` model frames.
///
/// A push either uses its frame or ignores it whole (the warning kinds' `ignoresFrame`); an
/// ignored frame leaves the session exactly as it was, so what follows it is unchanged.
///
/// A session owns its inference context: use it from one thread at a time. Any number of
/// sessions of one model run at once on any threads.
public final class StreamSession {
    public let model: ActionModel
    public let options: StreamOptions
    public private(set) var statistics = StreamStatistics()

    /// The session's context; its `window` holds the network input of the last window
    /// predicted (internal: the tests compare it with offline features).
    let context: InferenceContext
    private var reader: FrameReader
    // F: the model's window; W: the window in stream frames (F, or a whole-clip model's clip).
    private let J: Int, D: Int, F: Int, W: Int
    private let frameRate: Double?
    /// Whole-clip models: the F positions of the model's window in the last W frames, and
    /// the window they make.
    private let clip: (positions: [Double], window: Frames)?
    // The pushed frames: the current one (being read) and the previous one.
    private var current: Frames, previous: Frames
    private var pushed = 0
    private var firstTime = 0.0, previousTime = 0.0
    private var clock: StreamClock
    /// The current segment (`StreamWindow.segment`).
    public private(set) var segment = 0
    // The frames at the model's rate, the last ones in `ring` (capacity 2W, shifted down when
    // full, so that a window is always contiguous).
    private let ring: Frames
    private var ringTimes: [Double]
    private var ringCount = 0
    private var made = 0  // frames at the model's rate so far
    private let probabilities: UnsafeMutablePointer<Float>  // [classes]
    private var droppedWindows = 0, lastDropped: StreamWarning?  // `nonFiniteOutput`s, and the last
    /// Frames used since the session started (an ignored frame does not count).
    private var used = 0
    /// Interaction models (`model.bodies` M > 1): who is in which body, a reader of one body's
    /// points, and each person's frame of one body while a frame of several is read.
    private var pairing: BodyPairing?
    private var bodyReader: FrameReader
    private var personFrames: [Frames] = []
    /// `options.frames`: the last 2·lag + 1 frames at the model's rate (frame k in slot
    /// k mod (2·lag + 1)) for their motion, and the frames not taken yet.
    private let lag: Int
    private let recent: Frames?
    private let recentCoordinates: UnsafeMutablePointer<Float>?, recentPresent: UnsafeMutablePointer<UInt8>?
    private var recentTimes: [Double]
    private let bodies: Int
    private var taken: [StreamFrame] = []
    /// At most this many frames wait for `takeFrames()`; older ones are dropped.
    public static let maximumUntakenFrames = 1 << 16

    /// Frames `coordinates [n, J, D]`, `present [n, J]`, `confidence [n, J]`.
    private final class Frames {
        let coordinates: UnsafeMutablePointer<Float>, present: UnsafeMutablePointer<UInt8>, confidence: UnsafeMutablePointer<Float>
        init(_ n: Int, joints J: Int, dimensions D: Int) {
            coordinates = .allocate(capacity: n * J * D)
            coordinates.initialize(repeating: 0, count: n * J * D)
            present = .allocate(capacity: n * J)
            present.initialize(repeating: 0, count: n * J)
            confidence = .allocate(capacity: n * J)
            confidence.initialize(repeating: 0, count: n * J)
        }
        deinit {
            coordinates.deallocate()
            present.deallocate()
            confidence.deallocate()
        }
    }

    /// Throws `StreamError` for options out of range or a whole-clip model without a clip
    /// length, and `ModelError.nonFiniteOnPlainInput` for a model that cannot be trusted.
    public init(model: ActionModel, options: StreamOptions) throws {
        let stream = try model.streamWindow(clipFrames: options.clipFrames)
        try options.validate(frameRate: stream.frameRate)
        try model.checkOutputs()
        self.model = model
        self.options = options
        context = model.makeContext()
        reader = FrameReader(model.input)
        let skeleton = model.input.skeleton
        (J, D, F, W) = (skeleton.jointCount, skeleton.dimensions, model.input.window.frames, stream.frames)
        frameRate = stream.frameRate
        clip = model.input.window.mode == .fit ? (model.input.window.positions(frameCount: W, start: 0), Frames(F, joints: J, dimensions: D)) : nil
        bodyReader = FrameReader(skeleton: skeleton.oneBody)
        pairing =
            model.bodies > 1
            ? BodyPairing(bodies: model.bodies, forgetAfter: options.forgetAfter, roles: (model.input.bodyRoles ?? []).map(PersonID.init(parsing:)))
            : nil
        clock = StreamClock(maximumJump: options.maximumJump)
        current = Frames(1, joints: J, dimensions: D)
        previous = Frames(1, joints: J, dimensions: D)
        ring = Frames(2 * W, joints: J, dimensions: D)
        ringTimes = [Double](repeating: 0, count: 2 * W)
        probabilities = .allocate(capacity: model.classes.count)
        lag = FrameMotion.lag(frameRate: stream.frameRate)
        recent = options.frames ? Frames(2 * lag + 1, joints: J, dimensions: D) : nil
        (recentCoordinates, recentPresent) = (recent?.coordinates, recent?.present)
        recentTimes = [Double](repeating: 0, count: options.frames ? 2 * lag + 1 : 0)
        bodies = model.bodies
    }

    deinit { probabilities.deallocate() }

    /// Pushes one frame: points by joint name (the model's skeleton names, an alias of its
    /// tables, or those names without case and separators), at `time` seconds. An empty
    /// frame is a real frame: the person is not seen. Returns the windows completed by it (after
    /// a confirmed time jump, first the last windows of the segment before it, as `finish()`).
    /// Throws `StreamError.rejected` for a problem under `strict` (for `nonFiniteOutput`, once
    /// the frame is used: the push's windows are lost).
    public func push(_ points: [String: PosePoint], time: Double) throws -> [StreamWindow] {
        try push(time: time) { warn in
            reader.read(
                points, minimumConfidence: options.minimumConfidence, coordinates: current.coordinates, present: current.present,
                confidence: current.confidence, warn: warn)
        }
    }

    /// As `push(_:time:)`, with the points in the model's joint order (nil: not seen).
    public func push(joints points: [PosePoint?], time: Double) throws -> [StreamWindow] {
        try push(time: time) { warn in
            reader.read(
                joints: points, minimumConfidence: options.minimumConfidence, coordinates: current.coordinates,
                present: current.present, confidence: current.confidence, warn: warn)
        }
    }

    /// Pushes one frame of several people (or animals), each by id: for an interaction model
    /// (`model.bodies` M > 1) they are paired into its M bodies as offline `--people bodies=M`
    /// pairs a recording (`BodyPairing`: bodies in order of first appearance, kept for the
    /// stream; a person not in the frame is absent there), each person's points named as in one
    /// body (`leftWrist`, not `p2.leftWrist`). A person without a body (M others in view) is an
    /// `unpairedPerson` warning. For a model of one body, a frame of one person is
    /// `push(_:time:)` and more throw `StreamError.onePersonPerSession` (give each person a
    /// session: `TrackedStream`).
    public func push(people: [(id: PersonID, points: [String: PosePoint])], time: Double) throws -> [StreamWindow] {
        guard let pairing else {
            guard people.count <= 1 else { throw StreamError.onePersonPerSession(people: people.count) }
            return try push(people.first?.points ?? [:], time: time)
        }
        let M = model.bodies, Jb = J / M
        while personFrames.count < people.count { personFrames.append(Frames(1, joints: Jb, dimensions: D)) }
        var next: BodyPairing?
        let before = used
        let out = try push(time: time) { warn in
            var seen: [(id: PersonID, seen: Bool)] = []
            for (k, person) in people.enumerated() {
                let f = personFrames[k]
                bodyReader.read(
                    person.points, minimumConfidence: options.minimumConfidence, coordinates: f.coordinates, present: f.present,
                    confidence: f.confidence
                ) { kind, detail in warn(kind, "\(detail) (person \(person.id))") }
                seen.append((person.id, (0..<Jb).contains { f.present[$0] != 0 }))
            }
            let (bodies, paired) = pairing.assign(seen, time: time)
            next = paired
            current.coordinates.update(repeating: 0, count: J * D)
            current.present.update(repeating: 0, count: J)
            current.confidence.update(repeating: 0, count: J)
            for (k, body) in bodies.enumerated() {
                guard let b = body else {
                    if seen[k].seen { warn(.unpairedPerson, "\(people[k].id)") }
                    continue
                }
                let f = personFrames[k]
                (current.coordinates + b * Jb * D).update(from: f.coordinates, count: Jb * D)
                (current.present + b * Jb).update(from: f.present, count: Jb)
                (current.confidence + b * Jb).update(from: f.confidence, count: Jb)
            }
            reader.check(coordinates: current.coordinates, present: current.present, units: false, warn: warn)
        }
        if used > before, let next { self.pairing = next }
        return out
    }

    /// Interaction models: the person in each body (nil: a free body), in body order; empty
    /// for a model of one body.
    public var people: [PersonID?] { pairing?.people ?? [] }

    /// Checks the time, reads the frame into `current` with `read`, then resamples. Nothing
    /// but `current` and the statistics changes before the frame is known to be used.
    private func push(time: Double, read: ((StreamWarning.Kind, String) -> Void) -> Void) throws -> [StreamWindow] {
        let frame = statistics.frames
        statistics.frames += 1
        let verdict = clock.verdict(time)
        if verdict == .backwards || verdict == .jump {
            clock.commit(verdict, time)
            let w =
                verdict == .jump
                ? StreamWarning(kind: .timeJump, frame: frame, time: time, detail: "\(time - previousTime) s ahead of the previous frame's \(previousTime) s")
                : StreamWarning(kind: .timeBackwards, frame: frame, time: time, detail: "\(time) after \(previousTime)")
            if options.strict { throw StreamError.rejected(w) }
            statistics.note(w)
            return []
        }
        var problems: [StreamWarning] = []
        read { problems.append(StreamWarning(kind: $0, frame: frame, time: time, detail: $1)) }
        if verdict == .accept && pushed > 0 && time - previousTime > options.maximumGap {
            problems.append(StreamWarning(kind: .gap, frame: frame, time: time, detail: "\(time - previousTime) s"))
        }
        if verdict == .accept && pushed > 0 && time == previousTime {
            problems.append(StreamWarning(kind: .sameTime, frame: frame, time: time, detail: "\(time) s"))
        }
        if verdict == .accept && pushed > 0 && time > previousTime && time - previousTime < StreamOptions.minimumInterval {
            problems.append(StreamWarning(kind: .tooFast, frame: frame, time: time, detail: "\(time - previousTime) s"))
        }
        if options.strict, let first = problems.first { throw StreamError.rejected(first) }
        if problems.contains(where: { $0.kind.ignoresFrame }) {  // only why it was ignored
            for p in problems where p.kind.ignoresFrame { statistics.note(p) }
            return []
        }
        for p in problems { statistics.note(p) }
        let before = verdict == .restart ? finish() : []
        clock.commit(verdict, time)
        let dropped = droppedWindows
        let made = advance(to: time)
        if options.strict && droppedWindows > dropped, let w = lastDropped { throw StreamError.rejected(w) }
        return before.isEmpty ? made : before + made
    }

    /// The windows that need the end of the stream, as offline `predict` cuts them from the
    /// whole recording: the frames at the model's rate up to the last frame's time, the last
    /// window ending at the last frame when the stride did not land there, or one padded
    /// window when the stream is shorter than a window. The session then starts afresh (a new
    /// `segment`).
    public func finish() -> [StreamWindow] {
        guard pushed > 0 else { return [] }
        var out: [StreamWindow] = []
        if let r = frameRate {
            // Offline: k = 0 ... floor((t_last - t_0) r + 1e-6), the ones left at the last frame.
            let count = Int(((previousTime - firstTime) * r + 1e-6).rounded(.down)) + 1
            while made < count { append(previous, time: firstTime + Double(made) / r, into: &out) }
        }
        if made < W {
            if let w = paddedWindow() { out.append(w) }
        } else if (made - W) % options.stride != 0 {
            if let w = predict(start: made - W) { out.append(w) }
        }
        if recentCoordinates != nil {  // the last frames' motion, to the last frame
            for f in max(0, made - lag)..<made { recordMotion(of: f, until: made - 1) }
        }
        reset()
        return out
    }

    /// The frames at the model's rate made since the last call, with their motion, in order
    /// (`StreamOptions.frames`; empty without it). A frame's motion needs the frames `lag` after
    /// it, so a push returns frames up to `lag` behind its windows, and `finish()` the rest.
    public func takeFrames() -> [StreamFrame] {
        guard !taken.isEmpty else { return [] }
        defer { taken = [] }
        return taken
    }

    /// Gives the frames `takeFrames()` would return to `body` without copying them, then
    /// forgets them (keeping the buffer for the next push).
    func withTakenFrames<T>(_ body: ([StreamFrame]) -> T) -> T {
        defer { taken.removeAll(keepingCapacity: true) }
        return body(taken)
    }

    /// Records frame `f`'s motion between frames f − lag and `last` (f + lag, or the segment's
    /// last frame), which are in `recent`.
    private func recordMotion(of f: Int, until last: Int) {
        guard let c = recentCoordinates, let p = recentPresent else { return }
        let n = 2 * lag + 1, a = max(0, f - lag), b = max(f, last), JD = J * D
        let motion = FrameMotion.motion(
            frame: c + (f % n) * JD, framePresent: p + (f % n) * J, a: c + (a % n) * JD, aPresent: p + (a % n) * J, b: c + (b % n) * JD,
            bPresent: p + (b % n) * J, seconds: recentTimes[b % n] - recentTimes[a % n], joints: J, dimensions: D, bodies: bodies)
        if taken.count >= Self.maximumUntakenFrames { taken.removeFirst(taken.count / 2) }
        taken.append(StreamFrame(index: f, time: recentTimes[f % n], motion: motion, now: recentTimes[b % n], segment: segment))
    }

    /// Forgets the frames (not the statistics): the next push starts a new stream, a new
    /// `segment` if any frame was used since the last.
    public func reset() {
        if pushed > 0 { segment += 1 }
        (pushed, made, ringCount) = (0, 0, 0)
        clock.reset()
        pairing?.reset()
    }

    /// The time of the last frame used, nil before the first (or after `finish()`).
    var lastTime: Double? { pushed > 0 ? previousTime : nil }

    /// Makes the frames at the model's rate that lie at or before `time` (the current frame's).
    private func advance(to time: Double) -> [StreamWindow] {
        defer {
            swap(&previous, &current)
            previousTime = time
            pushed += 1
            used += 1
        }
        var out: [StreamWindow] = []
        guard let r = frameRate else {
            append(current, time: time, into: &out)
            return out
        }
        if pushed == 0 {
            firstTime = time
            return out
        }
        // At most maximumJump · r + 1 frames: the clock admits no longer step (`validate`). A
        // frame at the current frame's time is that frame, made now (not at the next push).
        let t0 = previousTime, dt = time - t0
        while true {
            let t = firstTime + Double(made) / r
            guard t <= time else { break }
            // As `WindowSpec.retimed` and `PoseSequence.sample`: position i + frac between the
            // previous frame (i) and the current one, within 1e-6 of a whole frame is that frame.
            let i = Double(pushed - 1)
            var p = i + min(max((t - t0) / dt, 0), 1)
            if abs(p - p.rounded()) < 1e-6 { p = p.rounded() }
            let w = Float(p - p.rounded(.down))
            if w == 0 {
                append(p == i ? previous : current, time: t, into: &out)
            } else {
                appendInterpolated(w, time: t, into: &out)
            }
        }
        return out
    }

    /// Appends a frame at the model's rate and predicts the window it completes, if any.
    private func append(_ frame: Frames, time: Double, into out: inout [StreamWindow]) {
        let slot = nextSlot(time: time)
        (ring.coordinates + slot * J * D).update(from: frame.coordinates, count: J * D)
        (ring.present + slot * J).update(from: frame.present, count: J)
        (ring.confidence + slot * J).update(from: frame.confidence, count: J)
        completed(into: &out)
    }

    /// Appends `(1 − w)·previous + w·current` for joints present in both, else the nearer
    /// frame's joint (`PoseSequence.sample`'s rule).
    private func appendInterpolated(_ w: Float, time: Double, into out: inout [StreamWindow]) {
        let slot = nextSlot(time: time)
        let a = previous, b = current, near = w < 0.5 ? previous : current
        let c = ring.coordinates + slot * J * D, p = ring.present + slot * J, k = ring.confidence + slot * J
        for j in 0..<J {
            if a.present[j] != 0 && b.present[j] != 0 {
                for d in 0..<D { c[j * D + d] = a.coordinates[j * D + d] * (1 - w) + b.coordinates[j * D + d] * w }
                p[j] = 1
                k[j] = a.confidence[j] * (1 - w) + b.confidence[j] * w
            } else {
                for d in 0..<D { c[j * D + d] = near.coordinates[j * D + d] }
                p[j] = near.present[j]
                k[j] = near.confidence[j]
            }
        }
        completed(into: &out)
    }

    /// The ring slot of the next frame at the model's rate, moving the last W − 1 frames
    /// down when the ring is full.
    private func nextSlot(time: Double) -> Int {
        if ringCount == 2 * W {
            let keep = W - 1, from = ringCount - keep
            for k in 0..<keep { ringTimes[k] = ringTimes[from + k] }
            ring.coordinates.update(from: ring.coordinates + from * J * D, count: keep * J * D)
            ring.present.update(from: ring.present + from * J, count: keep * J)
            ring.confidence.update(from: ring.confidence + from * J, count: keep * J)
            ringCount = keep
        }
        ringTimes[ringCount] = time
        ringCount += 1
        made += 1
        statistics.modelFrames += 1
        return ringCount - 1
    }

    private func completed(into out: inout [StreamWindow]) {
        if let c = recentCoordinates, let p = recentPresent {  // this frame, for motion; the one `lag` before it now has its motion
            let k = made - 1, slot = ringCount - 1, n = 2 * lag + 1
            (c + (k % n) * J * D).update(from: ring.coordinates + slot * J * D, count: J * D)
            (p + (k % n) * J).update(from: ring.present + slot * J, count: J)
            recentTimes[k % n] = ringTimes[slot]
            if k >= lag { recordMotion(of: k - lag, until: k) }
        }
        if made >= W && (made - W) % options.stride == 0, let w = predict(start: made - W) { out.append(w) }
    }

    /// The prediction of the window of the last W frames, which starts at frame `start` (for
    /// a whole-clip model resampled to the model's F frames, as `ActionModel.streamWindows`).
    private func predict(start: Int) -> StreamWindow? {
        let base = ringCount - W
        let c = ring.coordinates + base * J * D, p = ring.present + base * J, k = ring.confidence + base * J
        if let clip {
            clip.positions.withUnsafeBufferPointer { positions in
                PoseSequence.sample(
                    frames: W, joints: J, dimensions: D, coordinates: c, present: p, confidence: k, at: positions,
                    padding: model.input.window.padding, into: clip.window.coordinates, present: clip.window.present,
                    confidence: clip.window.confidence)
            }
            model.extractor.extract(
                coordinates: clip.window.coordinates, present: clip.window.present, confidence: clip.window.confidence,
                into: context.window.pointer, workspace: context.workspace)
        } else {
            model.extractor.extract(coordinates: c, present: p, confidence: k, into: context.window.pointer, workspace: context.workspace)
        }
        let seen = UnsafeBufferPointer(start: p, count: W * J).contains { $0 != 0 }
        return prediction(start: start, end: made, startTime: ringTimes[base], endTime: ringTimes[ringCount - 1], seen: seen)
    }

    /// The one window of a stream shorter than a window: its frames then the model's padding
    /// (a whole-clip model: its frames resampled to the window), cut as offline
    /// (`WindowSpec.window(of:start:)`).
    private func paddedWindow() -> StreamWindow? {
        let n = ringCount
        let seq = PoseSequence(
            id: "stream", label: nil, jointCount: J, dimensions: D, frameCount: n,
            coordinates: Array(UnsafeBufferPointer(start: ring.coordinates, count: n * J * D)),
            present: Array(UnsafeBufferPointer(start: ring.present, count: n * J)),
            confidence: Array(UnsafeBufferPointer(start: ring.confidence, count: n * J)))
        let window = model.input.window.window(of: seq, start: 0)
        model.extractor.extract(window, into: context.window.pointer, workspace: context.workspace)
        return prediction(start: 0, end: n, startTime: ringTimes[0], endTime: ringTimes[n - 1], seen: seq.present.contains { $0 != 0 })
    }

    /// Runs the network on `context.window` and packs the result; a non-finite output (an
    /// extreme input: `checkOutputs` passed) is no window but a `nonFiniteOutput` warning.
    private func prediction(start: Int, end: Int, startTime: Double, endTime: Double, seen: Bool) -> StreamWindow? {
        let K = model.classes.count
        context.logits(context.window.pointer, count: 1, into: probabilities)
        if let k = (0..<K).first(where: { !probabilities[$0].isFinite }) {
            let w = StreamWarning(
                kind: .nonFiniteOutput, frame: statistics.frames - 1, time: endTime,
                detail: "\(probabilities[k]) for class \(k) in the window from \(startTime) s to \(endTime) s")
            statistics.note(w)
            (droppedWindows, lastDropped) = (droppedWindows + 1, w)
            return nil
        }
        var best = 0  // argmax of the logits, the first on ties (as `ActionModel.predict`)
        for k in 0..<K where probabilities[k] > probabilities[best] { best = k }
        Inference.softmax(probabilities, rows: 1, classes: K)
        statistics.windows += 1
        return StreamWindow(
            start: start, end: end, startTime: startTime, endTime: endTime, classIndex: best,
            probabilities: Array(UnsafeBufferPointer(start: probabilities, count: K)), segment: segment, seen: seen)
    }
}
