import PoseCore

/// Several people (or animals) in one stream: one `StreamSession` and `EventDetector` per
/// track id, tracks unseen for `forgetAfter` seconds forgotten (their running event ended),
/// at most `maximumTracks` followed at once.
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

    private var tracks: [Int: (session: StreamSession, detector: EventDetector, lastSeen: Double)] = [:]
    /// Statistics of the tracks already forgotten, summed.
    private var forgotten = StreamStatistics()

    public init(
        model: ActionModel, options: StreamOptions, events: EventOptions, forgetAfter: Double = 2, maximumTracks: Int = 32
    ) throws {
        _ = try EventDetector(classes: model.classes, options: events)  // checks the options
        self.model = model
        self.options = options
        self.events = events
        self.forgetAfter = forgetAfter
        self.maximumTracks = max(1, maximumTracks)
    }

    /// Tracks followed now, in increasing id.
    public var trackIDs: [Int] { tracks.keys.sorted() }

    /// Pushes one frame of track `track` at `time` seconds (the stream's clock, shared by all
    /// tracks). First forgets the tracks unseen for `forgetAfter` seconds, whose last events
    /// come back as outputs of their own. Throws `StreamError.tooManyTracks` when a new track
    /// would exceed `maximumTracks`, and the session's errors.
    public func push(track: Int, points: [String: PosePoint], time: Double) throws -> [Output] {
        var out = forget(before: time - forgetAfter)
        if tracks[track] == nil {
            guard tracks.count < maximumTracks else { throw StreamError.tooManyTracks(limit: maximumTracks, track: track) }
            tracks[track] = (
                try StreamSession(model: model, options: options), try EventDetector(classes: model.classes, options: events), time
            )
        }
        let windows = try tracks[track]!.session.push(points, time: time)
        tracks[track]!.lastSeen = time
        var result = Output(track: track, windows: windows)
        for w in windows {
            if let e = tracks[track]!.detector.add(probabilities: w.probabilities, start: w.startTime, end: w.endTime) {
                result.events.append(e)
            }
        }
        if !windows.isEmpty || !result.events.isEmpty { out.append(result) }
        return out
    }

    /// Ends every track (the stream ended): their last windows (`StreamSession.finish()`) and events.
    public func finish() -> [Output] { forget(before: .infinity) }

    /// The statistics of every track, current and forgotten, summed.
    public var statistics: StreamStatistics {
        var total = forgotten
        for t in tracks.values { total.add(t.session.statistics) }
        return total
    }

    private func forget(before time: Double) -> [Output] {
        var out: [Output] = []
        var stale: [Int] = []
        for (id, t) in tracks where t.lastSeen < time { stale.append(id) }
        for id in stale.sorted() {
            let (session, kept, _) = tracks.removeValue(forKey: id)!
            var detector = kept
            var result = Output(track: id, windows: session.finish())
            for w in result.windows {
                if let e = detector.add(probabilities: w.probabilities, start: w.startTime, end: w.endTime) { result.events.append(e) }
            }
            if let e = detector.finish() { result.events.append(e) }
            forgotten.add(session.statistics)
            if !result.windows.isEmpty || !result.events.isEmpty { out.append(result) }
        }
        return out
    }
}

extension StreamStatistics {
    /// Adds another session's counts (its first warnings after these).
    mutating func add(_ other: StreamStatistics) {
        frames += other.frames
        modelFrames += other.modelFrames
        windows += other.windows
        for (k, n) in other.warningCounts { warningCounts[k, default: 0] += n }
        for w in other.firstWarnings where !firstWarnings.contains(where: { $0.kind == w.kind }) { firstWarnings.append(w) }
        for name in other.unknownNames where unknownNames.count < 16 && !unknownNames.contains(name) { unknownNames.append(name) }
    }
}
