import PoseCore

/// Several people (or animals) in one stream: one `StreamSession` and `EventDetector` per
/// track id, tracks unseen for `forgetAfter` seconds forgotten (their running event ended),
/// at most `maximumTracks` followed at once.
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
        public var track: Int
        public var windows: [StreamWindow] = []
        public var events: [ActionEvent] = []
    }

    public let model: ActionModel
    public let options: StreamOptions
    public let events: EventOptions
    /// Seconds (of stream time) after which a track that got no frame is forgotten.
    public let forgetAfter: Double
    public let maximumTracks: Int

    private struct Track {
        let session: StreamSession
        var detector: EventDetector
        /// The time of the track's last frame used (or of its creation).
        var lastSeen: Double
    }

    private var tracks: [Int: Track] = [:]
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
        _ = try EventDetector(classes: model.classes, options: events)  // checks the options
        try options.validate(frameRate: model.input.window.frameRate)
        try model.checkOutputs()
        guard forgetAfter > 0 && !forgetAfter.isNaN else {
            throw StreamError.invalidOptions("tracks must be forgotten after a positive number of seconds, got \(forgetAfter)")
        }
        self.model = model
        self.options = options
        self.events = events
        self.forgetAfter = forgetAfter
        self.maximumTracks = max(1, maximumTracks)
        clock = StreamClock(maximumJump: options.maximumJump, tolerance: forgetAfter)
    }

    /// Tracks followed now, in increasing id.
    public var trackIDs: [Int] { tracks.keys.sorted() }

    /// Pushes one frame of track `track` at `time` seconds (the stream's clock, shared by all
    /// tracks). First forgets the tracks unseen for `forgetAfter` seconds, whose last events
    /// come back as outputs of their own. Throws `StreamError.tooManyTracks` when a new track
    /// would exceed `maximumTracks` (the frame is ignored), and the session's errors.
    public func push(track: Int, points: [String: PosePoint], time: Double) throws -> [Output] {
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
        var out = forget(before: verdict == .restart ? .infinity : time - forgetAfter)
        if tracks[track] == nil {
            guard tracks.count < maximumTracks else { throw StreamError.tooManyTracks(limit: maximumTracks, track: track) }
            tracks[track] = Track(
                session: try StreamSession(model: model, options: options), detector: try EventDetector(classes: model.classes, options: events),
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
        for w in windows { result.events += tracks[track]!.detector.add(w) }
        if !windows.isEmpty || !result.events.isEmpty { out.append(result) }
        return out
    }

    /// Ends every track (the stream ended): their last windows (`StreamSession.finish()`) and events.
    public func finish() -> [Output] { forget(before: .infinity) }

    /// Finishes the tracks last seen before `time`, in increasing id.
    private func forget(before time: Double) -> [Output] {
        var stale: [Int] = []
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
            for w in result.windows { result.events += t.detector.add(w) }
            if let e = t.detector.finish() { result.events.append(e) }
            if !result.windows.isEmpty || !result.events.isEmpty { out.append(result) }
        }
        return out
    }
}

/// A binary min-heap of (time, track), ordered by time then track.
private struct MinHeap {
    private var items: [(time: Double, id: Int)] = []

    init() {}

    init(_ entries: [(Double, Int)]) {
        for (t, id) in entries { insert(t, id) }
    }

    var count: Int { items.count }
    var first: (Double, Int)? { items.first.map { ($0.time, $0.id) } }

    private static func less(_ a: (time: Double, id: Int), _ b: (time: Double, id: Int)) -> Bool {
        a.time < b.time || (a.time == b.time && a.id < b.id)
    }

    mutating func insert(_ time: Double, _ id: Int) {
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
