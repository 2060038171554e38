import PoseCore

/// A whole recording played as one live stream: each frame pushed into a `StreamSession` at
/// its time, the windows and frames into an `EventStream`, as `TrackedStream` does for one
/// person. `predict FILE --events` and `eval --events` play sequences this way, so a file's
/// events are the live ones, with the time each one was emitted.
public enum LiveEvents {
    /// An event and the stream time at which it was emitted: the time of the frame whose push
    /// returned it (the recording's last frame for those its end gives).
    public struct Emitted: Equatable, Sendable {
        public var event: ActionEvent
        public var emitted: Double
    }

    /// What a recording gave: every window, every event, the session's statistics.
    public struct Played: Sendable {
        public var windows: [StreamWindow]
        public var events: [Emitted]
        public var statistics: StreamStatistics
    }

    /// Plays `sequence` (on the model's skeleton) at its timestamps, else at `frameRate`.
    /// With `forgetAfter`, a pause of more than that many seconds (and at most
    /// `options.maximumJump`) after the last frame used ends the person's stream as
    /// `TrackedStream` forgets a track (its last windows and events, emitted `forgetAfter` after
    /// that frame), and the frame starts a new one. Throws
    /// `StreamError.invalidOptions` when it has neither timestamps nor a rate, and the session's
    /// and the events' errors. `options.frames` is turned on when the events come from frames.
    public static func play(
        _ sequence: PoseSequence, frameRate: Double?, model: ActionModel, options: StreamOptions, events: EventOptions, forgetAfter: Double? = nil
    ) throws -> Played {
        guard sequence.timestamps != nil || frameRate != nil else {
            throw StreamError.invalidOptions("sequence '\(sequence.id)' has no timestamps and no frame rate: a stream needs seconds")
        }
        var streamOptions = options
        var detector = try EventStream(classes: model.classes, options: events)
        if detector.needsFrames { streamOptions.frames = true }
        var session = try StreamSession(model: model, options: streamOptions)
        var statistics = StreamStatistics()
        let J = sequence.jointCount, D = sequence.dimensions
        var windows: [StreamWindow] = [], emitted: [Emitted] = []
        var last = 0.0
        for f in 0..<sequence.frameCount {
            let time = sequence.timestamps?[f] ?? Double(f) / frameRate!
            // Forgotten as a tracked stream forgets (a longer jump is the session's to judge, as
            // the tracked stream's clock does: ignored, or a restart once confirmed).
            if let pause = forgetAfter, let seen = session.lastTime, time - seen > pause, time - seen <= streamOptions.maximumJump {
                let end = session.finish()
                windows += end
                for e in detector.add(windows: end, from: session) + detector.finish() { emitted.append(Emitted(event: e, emitted: seen + pause)) }
                statistics.add(from: StreamStatistics(), to: session.statistics)
                session = try StreamSession(model: model, options: streamOptions)
                detector = try EventStream(classes: model.classes, options: events)
            }
            let points = (0..<J).map { j -> PosePoint? in
                let i = f * J + j, c = i * D
                guard sequence.present[i] != 0 else { return nil }
                return PosePoint(
                    x: sequence.coordinates[c], y: sequence.coordinates[c + 1], z: D == 3 ? sequence.coordinates[c + 2] : 0,
                    confidence: sequence.confidence?[i])
            }
            let made = try session.push(joints: points, time: time)
            windows += made
            for e in detector.add(windows: made, from: session) { emitted.append(Emitted(event: e, emitted: time)) }
            last = time
        }
        let end = session.finish()
        windows += end
        for e in detector.add(windows: end, from: session) + detector.finish() { emitted.append(Emitted(event: e, emitted: last)) }
        statistics.add(from: StreamStatistics(), to: session.statistics)
        return Played(windows: windows, events: emitted, statistics: statistics)
    }
}
