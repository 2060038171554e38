/// From window predictions to action events: smoothing, hysteresis, a minimum duration and
/// an abstain decision (docs/streaming.md "Events").

/// How window predictions become events. The defaults suit models whose windows last 1-2 s
/// predicted every third of a window; `standard(for:)` takes a model's calibrated thresholds
/// per class; docs/streaming.md says how to choose each.
public struct EventOptions: Equatable, Sendable {
    /// The two thresholds of one class.
    public struct Thresholds: Equatable, Sendable {
        public var enter: Float
        public var exit: Float
        public init(enter: Float, exit: Float) {
            self.enter = enter
            self.exit = exit
        }
    }

    /// Windows averaged: the decision at a window uses the mean probabilities of the last
    /// `smoothing` windows (1: no smoothing).
    public var smoothing = 3
    /// An event of class c starts when c's smoothed probability reaches `enter` (and c is
    /// the most probable class and not a background class)...
    public var enter: Float = 0.6
    /// ...and lasts while it stays at or above `exit` (hysteresis: `exit <= enter`).
    public var exit: Float = 0.4
    /// Events shorter than this many seconds (from the first window's start to the last
    /// window's end) are dropped.
    public var minimumDuration = 0.0
    /// Classes that never make events (the model's "not one of the actions" class).
    public var background: Set<String> = []
    /// A window whose most probable smoothed class is below this probability abstains: it
    /// starts no event and ends the running one (0: off).
    public var floor: Float = 0
    /// Thresholds of their own for some classes (by name), in place of `enter` and `exit`: a
    /// model's calibrated ones (`standard(for:)`).
    public var classThresholds: [String: Thresholds] = [:]
    /// Let events of different classes overlap in time. Off by default: consecutive windows
    /// overlap, so an event would otherwise start up to a window before the previous one ends;
    /// instead the boundary of two events that meet (one ends at the window where the other
    /// starts) is the middle of their overlap, and an event that starts later begins at the
    /// previous one's end.
    public var allowOverlap = false
    /// Events from frames (`FrameSegmenter`, `EventStream`) with these numbers, the thresholds
    /// then applying to frame scores; nil: events from windows (`EventDetector`), the rule of
    /// model files before format 1.5. `smoothing` and `allowOverlap` are the window rule's only.
    public var frames: FrameOptions?

    public init(
        smoothing: Int = 3, enter: Float = 0.6, exit: Float = 0.4, minimumDuration: Double = 0, background: Set<String> = [],
        floor: Float = 0, classThresholds: [String: Thresholds] = [:], allowOverlap: Bool = false, frames: FrameOptions? = nil
    ) {
        self.frames = frames
        self.smoothing = smoothing
        self.enter = enter
        self.exit = exit
        self.minimumDuration = minimumDuration
        self.background = background
        self.floor = floor
        self.classThresholds = classThresholds
        self.allowOverlap = allowOverlap
    }

    /// The thresholds of class `name`: its own, else `enter` and `exit`.
    public func thresholds(of name: String) -> Thresholds { classThresholds[name] ?? Thresholds(enter: enter, exit: exit) }

    /// Class names taken as background when none is given: `other`, `background`, `none`,
    /// `idle`, `null` (any case).
    public static let backgroundNames: Set<String> = ["other", "background", "none", "idle", "null"]

    /// The defaults for a model's classes: those named in `backgroundNames` are background.
    public static func standard(classes: [String]) -> EventOptions {
        EventOptions(background: Set(classes.filter { backgroundNames.contains($0.lowercased()) }))
    }

    /// The defaults for a model: `standard(classes:)` with what its file records
    /// (`ModelHeader.Streaming`, calibrated by `fit`): since format 1.5 events from frames with
    /// the file's numbers (`frames`) and its frame thresholds per class; with `fromFrames` false,
    /// or for a file without them, events from windows with its window thresholds per class (none
    /// in files before format 1.3, which keep `enter` 0.6 and `exit` 0.4).
    public static func standard(for model: ActionModel, fromFrames: Bool = true) -> EventOptions {
        var o = standard(classes: model.classes)
        let streaming = model.header.streaming
        if fromFrames, let f = streaming?.frames {
            o.frames = FrameOptions(f, classes: model.classes)
            o.frames?.motionLag = FrameMotion.lag(frameRate: (try? model.streamWindow())?.frameRate ?? nil)
            for (k, c) in model.classes.enumerated() { o.classThresholds[c] = Thresholds(enter: Float(f.enter[k]), exit: Float(f.exit[k])) }
        } else if let enter = streaming?.enter, let exit = streaming?.exit {
            for (k, c) in model.classes.enumerated() { o.classThresholds[c] = Thresholds(enter: Float(enter[k]), exit: Float(exit[k])) }
        }
        return o
    }

    /// The frame rule's settings for `classes` (`frames` must be set): its numbers, the
    /// thresholds per class, `minimumDuration` as a floor of every class's, the background
    /// classes and the floor.
    public func segmenterSettings(classes: [String]) -> FrameSegmenter.Settings? {
        guard let f = frames else { return nil }
        func each(_ values: [String: Double], _ fallback: Double) -> [Double] { classes.map { values[$0] ?? fallback } }
        return FrameSegmenter.Settings(
            enter: classes.map { thresholds(of: $0).enter }, exit: classes.map { thresholds(of: $0).exit },
            hold: each(f.hold, FrameOptions.defaultHold).map { min($0, f.lookAhead) }, leadIn: each(f.leadIn, 0), leadOut: each(f.leadOut, 0),
            minimumDuration: each(f.minimumDuration, 0).map { max($0, minimumDuration) }, background: classes.map { background.contains($0) },
            lookAhead: f.lookAhead, stillBelow: f.stillBelow, floor: floor, switchEvidence: f.switchEvidence, motionLag: f.motionLag)
    }

    /// Checks the ranges; throws `EventError` naming the field.
    public func validate(classes: [String]) throws {
        guard smoothing >= 1 else { throw EventError.invalid("smoothing must be at least 1 window, got \(smoothing)") }
        guard enter > 0 && enter <= 1, exit >= 0 && exit <= enter else {
            throw EventError.invalid("the thresholds need 0 <= exit <= enter <= 1 (enter > 0), got enter \(enter), exit \(exit)")
        }
        for (c, t) in classThresholds.sorted(by: { $0.key < $1.key }) {
            guard classes.contains(c) else {
                throw EventError.invalid("thresholds for '\(c)', which is not among the model's classes (\(classes.joined(separator: ", ")))")
            }
            guard t.enter > 0 && t.enter <= 1, t.exit >= 0 && t.exit <= t.enter else {
                throw EventError.invalid("the thresholds of '\(c)' need 0 <= exit <= enter <= 1 (enter > 0), got enter \(t.enter), exit \(t.exit)")
            }
        }
        guard floor >= 0 && floor <= 1 else { throw EventError.invalid("the probability floor must be in [0, 1], got \(floor)") }
        guard minimumDuration >= 0 && minimumDuration.isFinite else {
            throw EventError.invalid("the minimum duration must be zero or more seconds, got \(minimumDuration)")
        }
        if let unknown = background.sorted().first(where: { !classes.contains($0) }) {
            throw EventError.invalid("background class '\(unknown)' is not among the model's classes (\(classes.joined(separator: ", ")))")
        }
        if classes.allSatisfy(background.contains) { throw EventError.invalid("every class is a background class: no event can start") }
        if let f = frames {
            for (name, values) in [("hold", f.hold), ("leadIn", f.leadIn), ("leadOut", f.leadOut), ("minimumDuration", f.minimumDuration)] {
                if let unknown = values.keys.sorted().first(where: { !classes.contains($0) }) {
                    throw EventError.invalid("\(name) for '\(unknown)', which is not among the model's classes (\(classes.joined(separator: ", ")))")
                }
            }
            if let why = segmenterSettings(classes: classes)?.problem { throw EventError.invalid(why) }
        }
    }
}

/// The numbers of events from frames (`FrameSegmenter`), by class name where they are per
/// class: a model file's (`ModelHeader.Streaming.Frames`, calibrated by `fit`), or a caller's.
public struct FrameOptions: Equatable, Sendable {
    /// Seconds after a frame at which it is decided: an event comes at most this long after the
    /// frame that decides its end (and `hold` plus the motion's lag twice, about two tenths of a
    /// second, after the body stopped when stillness ends it).
    public var lookAhead: Double
    /// Motion (`FrameMotion`, body sizes per second) at or below which a frame is still.
    public var stillBelow: Float
    /// Per class: seconds of stillness that end an event (at most `lookAhead`; a class
    /// without one: `defaultHold`).
    public var hold: [String: Double]
    /// Per class: seconds from an event's start to its first moving frame, and from its last
    /// moving frame to its end (0 when missing).
    public var leadIn: [String: Double]
    public var leadOut: [String: Double]
    /// Per class: the shortest event, in seconds (0 when missing).
    public var minimumDuration: [String: Double]
    /// Score-seconds by which a class must lead the running event's class to start another
    /// action without rest: the model file's (format 1.7, when it records one), else
    /// `FrameSegmenter.Settings.defaultSwitchEvidence`.
    public var switchEvidence: Double
    /// Frames each way of the stream's motion (`FrameMotion.lag` at its rate): rest ends an event
    /// where the body stopped, this many frames before its last moving frame. `standard(for:)`
    /// sets the model's stream's; 0 ends it at the last moving frame.
    public var motionLag: Int

    /// The hold of a class that has none.
    public static let defaultHold = 0.5

    public init(
        lookAhead: Double, stillBelow: Float, hold: [String: Double] = [:], leadIn: [String: Double] = [:], leadOut: [String: Double] = [:],
        minimumDuration: [String: Double] = [:], switchEvidence: Double = FrameSegmenter.Settings.defaultSwitchEvidence, motionLag: Int = 0
    ) {
        self.switchEvidence = switchEvidence
        self.motionLag = motionLag
        self.lookAhead = lookAhead
        self.stillBelow = stillBelow
        self.hold = hold
        self.leadIn = leadIn
        self.leadOut = leadOut
        self.minimumDuration = minimumDuration
    }

    /// A model file's numbers for its `classes` (its switch evidence, or the default for a file
    /// before format 1.7).
    public init(_ f: ModelHeader.Streaming.Frames, classes: [String]) {
        func named(_ v: [Double]) -> [String: Double] { Dictionary(uniqueKeysWithValues: zip(classes, v)) }
        self.init(
            lookAhead: f.lookAhead, stillBelow: Float(f.stillBelow), hold: named(f.hold), leadIn: named(f.leadIn), leadOut: named(f.leadOut),
            minimumDuration: named(f.minimumDuration), switchEvidence: f.switchEvidence ?? FrameSegmenter.Settings.defaultSwitchEvidence)
    }
}

public enum EventError: Error, Equatable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self {
        case .invalid(let why): return "event options: \(why)"
        }
    }
}

/// One action event.
public struct ActionEvent: Equatable, Sendable {
    public var label: String
    /// Start of the first window and end of the last window of the event, in seconds.
    public var start: Double
    public var end: Double
    /// The highest and the mean probability of `label` over the event's windows (unsmoothed).
    public var peak: Float
    public var mean: Float
    /// Windows in the event.
    public var windows: Int
}

/// Turns one stream's window predictions, in order, into events. Keep one per stream.
public struct EventDetector: Sendable {
    public let classes: [String]
    public let options: EventOptions
    private let backgroundIndex: [Bool]
    /// Each class's thresholds (`EventOptions.thresholds(of:)`).
    private let enter: [Float], exit: [Float]
    private var recent: [[Float]] = []  // the last `smoothing` probability vectors
    private var open: (label: Int, start: Double, end: Double, peak: Float, sum: Float, windows: Int)?
    /// The end of the last event reported (an event starting later does not begin before it).
    private var lastEnd: Double?
    private var segment = 0  // of the last stream window (`add(_:)`)

    public init(classes: [String], options: EventOptions) throws {
        try options.validate(classes: classes)
        self.classes = classes
        self.options = options
        backgroundIndex = classes.map { options.background.contains($0) }
        enter = classes.map { options.thresholds(of: $0).enter }
        exit = classes.map { options.thresholds(of: $0).exit }
    }

    /// Takes the next window's probabilities (and its start and end in seconds); returns the
    /// event it ends, if any. Unless `allowOverlap`, an event starting at the window where the
    /// previous one ended shares their overlap at its middle, and one starting later begins no
    /// earlier than the previous one's end.
    public mutating func add(probabilities p: [Float], start: Double, end: Double) -> ActionEvent? {
        precondition(p.count == classes.count, "probabilities for \(classes.count) classes expected")
        recent.append(p)
        if recent.count > options.smoothing { recent.removeFirst() }
        var smoothed = [Float](repeating: 0, count: p.count)
        for r in recent { for k in r.indices { smoothed[k] += r[k] } }
        for k in smoothed.indices { smoothed[k] /= Float(recent.count) }
        var top = 0
        for k in smoothed.indices where smoothed[k] > smoothed[top] { top = k }
        let abstains = backgroundIndex[top] || smoothed[top] < options.floor
        var closing: ActionEvent? = nil  // the event this window ends, before the minimum duration
        if let o = open {
            let switches = !abstains && top != o.label && smoothed[top] >= enter[top]
            if abstains || switches || smoothed[o.label] < exit[o.label] {
                closing = event(o)
                open = nil
            } else {
                open = (o.label, o.start, end, max(o.peak, p[o.label]), o.sum + p[o.label], o.windows + 1)
            }
        }
        guard open == nil && !abstains && smoothed[top] >= enter[top] else { return closing.flatMap { report($0) } }
        var begin = start
        var ended: ActionEvent? = nil
        if var c = closing {
            if !options.allowOverlap && c.end > start {  // the two meet: the boundary is the middle of their overlap
                c.end = (start + c.end) / 2
            }
            ended = report(c)
        }
        if !options.allowOverlap, let previous = lastEnd { begin = max(begin, previous) }
        open = (top, begin, end, p[top], p[top], 1)
        return ended
    }

    /// Takes a stream's next window. A window of another segment than the last one (the
    /// session restarted: a confirmed time jump) first ends the running event and the
    /// smoothing, as `finish()`. A window where nobody is seen (`StreamWindow.seen` false: an
    /// empty scene) makes no event and ends the running one and the smoothing, as `finish()`.
    /// Returns the events ended, in order (at most two).
    public mutating func add(_ w: StreamWindow) -> [ActionEvent] {
        var ended: [ActionEvent] = []
        if w.segment != segment {
            if let e = finish() { ended.append(e) }
            segment = w.segment
        }
        guard w.seen else { return ended + (finish().map { [$0] } ?? []) }
        if let e = add(probabilities: w.probabilities, start: w.startTime, end: w.endTime) { ended.append(e) }
        return ended
    }

    /// Ends the running event (the stream ended, or its track was forgotten).
    public mutating func finish() -> ActionEvent? {
        recent.removeAll()
        return close()
    }

    private mutating func close() -> ActionEvent? {
        guard let o = open else { return nil }
        open = nil
        return report(event(o))
    }

    private func event(_ o: (label: Int, start: Double, end: Double, peak: Float, sum: Float, windows: Int)) -> ActionEvent {
        ActionEvent(label: classes[o.label], start: o.start, end: o.end, peak: o.peak, mean: o.sum / Float(o.windows), windows: o.windows)
    }

    /// The event if it lasts at least `minimumDuration` (it is then the last one reported), else nil.
    private mutating func report(_ e: ActionEvent) -> ActionEvent? {
        guard e.end - e.start >= options.minimumDuration else { return nil }
        lastEnd = e.end
        return e
    }
}

/// One stream's events, from its session's windows and frames (`StreamSession.push`, then
/// `takeFrames()`): from frames (`FrameSegmenter`) when `EventOptions.frames` is set, else from
/// windows (`EventDetector`, which ignores the frames). Keep one per stream (`TrackedStream`
/// keeps one per track); the same windows and frames give the same events however the pushes
/// group them, so a recording read whole gives a live stream's events exactly.
public struct EventStream: Sendable {
    public let classes: [String]
    public let options: EventOptions
    private var windows: EventDetector
    private var frames: FrameSegmenter?
    private var segment = 0

    /// Throws `EventError` for options out of range.
    public init(classes: [String], options: EventOptions) throws {
        windows = try EventDetector(classes: classes, options: options)  // checks the options
        self.classes = classes
        self.options = options
        frames = options.segmenterSettings(classes: classes).map { FrameSegmenter(settings: $0) }
    }

    /// True when events come from frames: the session must record them (`StreamOptions.frames`).
    public var needsFrames: Bool { frames != nil }

    /// Takes one push's windows and frames (in their order); returns the events they end, in
    /// order. Windows and frames of a new segment (a restart) first end the running event.
    public mutating func add(windows ws: [StreamWindow], frames fs: [StreamFrame]) -> [ActionEvent] {
        guard frames != nil else { return ws.flatMap { windows.add($0) } }
        var out: [ActionEvent] = []
        var i = 0, j = 0
        // In the order the stream made them: a window when its last frame came, a frame's motion
        // `lag` frames later (`now`); a window first at the same time.
        while i < ws.count || j < fs.count {
            let takeWindow = j == fs.count || (i < ws.count && (ws[i].segment, ws[i].endTime) <= (fs[j].segment, fs[j].now))
            let itemSegment = takeWindow ? ws[i].segment : fs[j].segment
            if itemSegment != segment {
                out += finishFrames()
                segment = itemSegment
            }
            if takeWindow {
                let w = ws[i]
                frames!.add(window: w.start, end: w.end, endTime: w.endTime, probabilities: w.probabilities)
                i += 1
            } else {
                let f = fs[j]
                out += frames!.add(frame: f.index, time: f.time, motion: f.motion, now: f.now).map(event)
                j += 1
            }
        }
        return out
    }

    /// `add(windows:frames:)` with the session's frames (`StreamSession.takeFrames()`), taken
    /// without copying them.
    public mutating func add(windows ws: [StreamWindow], from session: StreamSession) -> [ActionEvent] {
        return session.withTakenFrames { add(windows: ws, frames: $0) }
    }

    /// Ends the running event (the stream ended, or its track was forgotten). Call it after the
    /// session's `finish()` windows and frames went through `add`.
    public mutating func finish() -> [ActionEvent] {
        guard frames != nil else { return windows.finish().map { [$0] } ?? [] }
        return finishFrames()
    }

    private mutating func finishFrames() -> [ActionEvent] { frames!.finish().map(event) }

    private func event(_ e: FrameSegmenter.Event) -> ActionEvent {
        ActionEvent(label: classes[e.label], start: e.start, end: e.end, peak: e.peak, mean: e.mean, windows: e.windows)
    }
}
