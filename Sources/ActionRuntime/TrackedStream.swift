import PoseCore

/// Several people (or animals) in one stream: one `StreamSession` and `EventStream` per
/// track id, tracks unseen for `forgetAfter` seconds forgotten (their running event ended),
/// at most `maximumTracks` followed at once. For an interaction model (`model.bodies` M > 1)
/// the people of each frame are paired into its bodies instead, one session for the scene
/// (`StreamSession.push(people:time:)`, `BodyPairing`): lines of one person at a time are
/// gathered by time, a frame being complete when a line of a later time arrives (or at
/// `finish()`), so the scene's windows come one frame later than a person's would.
///
/// All tracks share the stream's clock (`StreamClock` with a tolerance of `forgetAfter`): a
/// frame older than the latest time by more than `forgetAfter` (its track would be forgotten at
/// once) is ignored as `timeBackwards`, and a frame more than `options.maximumJump` ahead of it
/// is ignored as `timeJump` unless the next frame confirms the jump, which then ends every track
/// and starts afresh. The cost of a push does not grow with the number of tracks (beyond a
/// logarithm): the tracks wait to be forgotten in a heap by last-seen time, and the statistics
/// are summed as they change.
///
/// Use from one thread at a time; one model may serve any number of these at once.
public final class TrackedStream {
    /// What one push produced for one track.
    public struct Output: Equatable, Sendable {
        /// The person (for an interaction model, the person in body 1, or the pushed one).
        public var track: PersonID
        public var windows: [StreamWindow] = []
        public var events: [ActionEvent] = []
        /// Interaction models: the person in each body (nil: free) when the windows were
        /// made, in body order; empty for a model of one body.
        public var people: [PersonID?] = []

        public init(track: PersonID, windows: [StreamWindow] = [], events: [ActionEvent] = [], people: [PersonID?] = []) {
            self.track = track
            self.windows = windows
            self.events = events
            self.people = people
        }
    }

    public let model: ActionModel
    public let options: StreamOptions
    public let events: EventOptions
    /// Seconds (of stream time) after which a track that got no frame is forgotten.
    public let forgetAfter: Double
    public let maximumTracks: Int
    /// The largest `maximumTracks`: each track holds a session and its buffers, so a stream's
    /// memory is bounded by this many sessions.
    public static let maximumTracksLimit = 1024

    private struct Track {
        let session: StreamSession
        var detector: EventStream
        /// The time of the track's last frame used (or of its creation).
        var lastSeen: Double
    }

    private var tracks: [PersonID: Track] = [:]
    /// Interaction models: the one scene (made at the first frame), and the frame being
    /// gathered (its time and people in pushed order).
    private var scene: Track?
    private var pending: (time: Double, people: [(id: PersonID, points: [String: PosePoint])])?
    /// (last seen, track) for every track, earliest first; entries whose track has been seen
    /// since (or forgotten) are stale and skipped (compacted when they outnumber the tracks).
    private var byLastSeen = MinHeap()
    private var clock: StreamClock
    /// Every track's statistics, current and forgotten, plus the frames this stream ignored itself.
    public private(set) var statistics = StreamStatistics()
    /// Heap entries examined while forgetting (the tests check it stays proportional to pushes).
    private(set) var examined = 0

    /// Throws `EventError` or `StreamError.invalidOptions` for options out of range, and
    /// `ModelError.nonFiniteOnPlainInput` for a model that cannot be trusted (`checkOutputs`).
    public init(
        model: ActionModel, options: StreamOptions, events: EventOptions, forgetAfter: Double = 2, maximumTracks: Int = 32
    ) throws {
        _ = try EventStream(classes: model.classes, options: events)  // checks the options
        try options.validate(frameRate: model.input.window.frameRate)
        try model.checkOutputs()
        guard forgetAfter > 0 && !forgetAfter.isNaN else {
            throw StreamError.invalidOptions("tracks must be forgotten after a positive number of seconds, got \(forgetAfter)")
        }
        guard maximumTracks <= Self.maximumTracksLimit else {
            throw StreamError.invalidOptions("at most \(Self.maximumTracksLimit) tracks may be followed at once, got \(maximumTracks)")
        }
        self.model = model
        var options = options
        if events.frames != nil { options.frames = true }  // events from frames need them
        self.options = options
        self.events = events
        self.forgetAfter = forgetAfter
        self.maximumTracks = max(1, maximumTracks)
        clock = StreamClock(maximumJump: options.maximumJump, tolerance: forgetAfter)
        _ = try model.streamWindow(clipFrames: options.clipFrames)  // a whole-clip model needs its clip
    }

    /// Tracks followed now, in increasing id (an interaction model: the people in its bodies).
    public var trackIDs: [PersonID] { model.bodies > 1 ? (scene?.session.people.compactMap { $0 } ?? []).sorted() : tracks.keys.sorted() }

    /// `push(track:points:time:)` for an integer id.
    public func push(track: Int, points: [String: PosePoint], time: Double) throws -> [Output] {
        try push(track: .number(track), points: points, time: time)
    }

    /// Pushes one frame of everyone in view: each person's points by id (an interaction
    /// model pairs them into its bodies; otherwise `push(track:points:time:)` for each).
    public func push(people: [(id: PersonID, points: [String: PosePoint])], time: Double) throws -> [Output] {
        guard model.bodies > 1 else { return try people.flatMap { try push(track: $0.id, points: $0.points, time: time) } }
        var out = people.isEmpty ? try push(track: 0, points: [:], time: time) : []
        for p in people { out += try push(track: p.id, points: p.points, time: time) }
        return pending?.time == time ? out + (try flush()) : out  // the frame is whole: no need to wait for the next
    }

    /// Pushes one frame of track `track` at `time` seconds (the stream's clock, shared by all
    /// tracks). First forgets the tracks unseen for `forgetAfter` seconds, whose last events
    /// come back as outputs of their own. Throws `StreamError.tooManyTracks` when a new track
    /// would exceed `maximumTracks` (the frame is ignored), and the session's errors. For an
    /// interaction model the line joins the frame being gathered at its time (one at an earlier
    /// time is `timeBackwards`), and the frame before it, complete, goes to the scene.
    public func push(track: PersonID, points: [String: PosePoint], time: Double) throws -> [Output] {
        let verdict = clock.verdict(time)
        if verdict == .backwards || verdict == .jump {
            clock.commit(verdict, time)
            let now = clock.time ?? time
            let w =
                verdict == .jump
                ? StreamWarning(kind: .timeJump, frame: statistics.frames, time: time, detail: "\(time - now) s ahead of the stream's \(now) s (person \(track))")
                : StreamWarning(kind: .timeBackwards, frame: statistics.frames, time: time, detail: "\(time) after the stream's \(now) s (person \(track))")
            statistics.frames += 1
            if options.strict { throw StreamError.rejected(w) }
            statistics.note(w)
            return []
        }
        if model.bodies > 1 { return try gather(track: track, points: points, time: time, verdict: verdict) }
        var out = forget(before: verdict == .restart ? .infinity : time - forgetAfter)
        if tracks[track] == nil {
            guard tracks.count < maximumTracks else { throw StreamError.tooManyTracks(limit: maximumTracks, track: track) }
            tracks[track] = Track(
                session: try StreamSession(model: model, options: options), detector: try EventStream(classes: model.classes, options: events),
                lastSeen: time)
            byLastSeen.insert(time, track)
        }
        clock.commit(verdict, time)
        let session = tracks[track]!.session
        let before = session.statistics
        defer { statistics.add(from: before, to: session.statistics) }
        let windows = try session.push(points, time: time)
        if let t = session.lastTime, t > tracks[track]!.lastSeen {
            tracks[track]!.lastSeen = t
            byLastSeen.insert(t, track)
            if byLastSeen.count > 2 * tracks.count + 32 { byLastSeen = MinHeap(tracks.map { ($0.value.lastSeen, $0.key) }) }
        }
        var result = Output(track: track, windows: windows)
        result.events = tracks[track]!.detector.add(windows: windows, from: session)
        if !windows.isEmpty || !result.events.isEmpty { out.append(result) }
        return out
    }

    /// Ends every track (the stream ended): their last windows (`StreamSession.finish()`) and
    /// events (for an interaction model, the frame being gathered first).
    public func finish() -> [Output] {
        guard model.bodies > 1 else { return forget(before: .infinity) }
        let last = (try? flush()) ?? []  // under `strict`, a problem of the last frame only costs it
        return last + endScene()
    }

    // MARK: - Interaction models

    /// A line of an interaction model's stream, past the clock's checks: joins the frame at
    /// its time, or completes the one being gathered and starts the next.
    private func gather(track: PersonID, points: [String: PosePoint], time: Double, verdict: StreamClock.Verdict) throws -> [Output] {
        if let p = pending, time < p.time {
            let w = StreamWarning(kind: .timeBackwards, frame: statistics.frames, time: time, detail: "\(time) after the frame at \(p.time) s (person \(track))")
            statistics.frames += 1
            if options.strict { throw StreamError.rejected(w) }
            statistics.note(w)
            return []
        }
        clock.commit(verdict, time)
        var out: [Output] = []
        if pending?.time != time {
            out = try flush()
            if verdict == .restart { out += endScene() }
        }
        if pending == nil { pending = (time, []) }
        if let k = pending!.people.firstIndex(where: { $0.id == track }) {
            pending!.people[k].points = points  // the person's later line at the same time replaces the earlier
        } else {
            guard pending!.people.count < maximumTracks else { throw StreamError.tooManyTracks(limit: maximumTracks, track: track) }
            pending!.people.append((track, points))
        }
        return out
    }

    /// Pushes the frame being gathered to the scene (ended first when no frame came for
    /// `forgetAfter` seconds, as a forgotten track).
    private func flush() throws -> [Output] {
        guard let frame = pending else { return [] }
        pending = nil
        var out: [Output] = []
        if let s = scene, let last = s.session.lastTime, frame.time - last > forgetAfter { out += endScene() }
        if scene == nil {
            scene = Track(
                session: try StreamSession(model: model, options: sessionOptions),
                detector: try EventStream(classes: model.classes, options: events), lastSeen: frame.time)
        }
        let session = scene!.session
        let before = session.statistics
        defer { statistics.add(from: before, to: session.statistics) }
        let windows: [StreamWindow]
        if frame.people.count == 1, isPacked(frame.people[0].points) {
            windows = try session.push(frame.people[0].points, time: frame.time)  // p1.<joint> ... pM.<joint>: the bodies given
        } else {
            windows = try session.push(people: frame.people, time: frame.time)
        }
        var result = Output(track: session.people.first.flatMap { $0 } ?? frame.people.first?.id ?? 0, windows: windows, people: session.people)
        result.events = scene!.detector.add(windows: windows, from: session)
        if !windows.isEmpty || !result.events.isEmpty { out.append(result) }
        return out
    }

    /// Ends the scene: its last windows and events.
    private func endScene() -> [Output] {
        guard var s = scene else { return [] }
        scene = nil
        let people = s.session.people
        let before = s.session.statistics
        defer { statistics.add(from: before, to: s.session.statistics) }
        var result = Output(track: people.first.flatMap { $0 } ?? 0, windows: s.session.finish(), people: people)
        result.events = s.detector.add(windows: result.windows, from: s.session) + s.detector.finish()
        return result.windows.isEmpty && result.events.isEmpty ? [] : [result]
    }

    /// True when the points name the bodies themselves (`p1.nose`, `p2.nose`): one line that
    /// holds every body, as the model's own skeleton names them.
    private func isPacked(_ points: [String: PosePoint]) -> Bool {
        points.keys.contains { $0.hasPrefix("p") && $0.contains(Skeleton.bodySeparator) && model.input.skeleton.index(of: $0) != nil }
    }

    /// The options of the sessions: `options`, with `forgetAfter` for giving up bodies.
    private var sessionOptions: StreamOptions {
        var o = options
        o.forgetAfter = forgetAfter
        return o
    }

    /// Finishes the tracks last seen before `time`, in increasing id.
    private func forget(before time: Double) -> [Output] {
        var stale: [PersonID] = []
        if time == .infinity {
            stale = Array(tracks.keys)
            byLastSeen = MinHeap()
        } else {
            while let (seen, id) = byLastSeen.first, seen < time {
                byLastSeen.removeFirst()
                examined += 1
                if tracks[id]?.lastSeen == seen { stale.append(id) }
            }
        }
        var out: [Output] = []
        for id in stale.sorted() {
            var t = tracks.removeValue(forKey: id)!
            let before = t.session.statistics
            defer { statistics.add(from: before, to: t.session.statistics) }
            var result = Output(track: id, windows: t.session.finish())
            result.events = t.detector.add(windows: result.windows, from: t.session) + t.detector.finish()
            if !result.windows.isEmpty || !result.events.isEmpty { out.append(result) }
        }
        return out
    }
}

/// A binary min-heap of (time, track), ordered by time then track.
private struct MinHeap {
    private var items: [(time: Double, id: PersonID)] = []

    init() {}

    init(_ entries: [(Double, PersonID)]) {
        for (t, id) in entries { insert(t, id) }
    }

    var count: Int { items.count }
    var first: (Double, PersonID)? { items.first.map { ($0.time, $0.id) } }

    private static func less(_ a: (time: Double, id: PersonID), _ b: (time: Double, id: PersonID)) -> Bool {
        a.time < b.time || (a.time == b.time && a.id < b.id)
    }

    mutating func insert(_ time: Double, _ id: PersonID) {
        items.append((time, id))
        var k = items.count - 1
        while k > 0 {
            let parent = (k - 1) / 2
            guard Self.less(items[k], items[parent]) else { break }
            items.swapAt(k, parent)
            k = parent
        }
    }

    mutating func removeFirst() {
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var k = 0
        while true {
            let l = 2 * k + 1, r = l + 1
            var m = k
            if l < items.count && Self.less(items[l], items[m]) { m = l }
            if r < items.count && Self.less(items[r], items[m]) { m = r }
            guard m != k else { return }
            items.swapAt(k, m)
            k = m
        }
    }
}
