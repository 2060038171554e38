/// From window predictions to action events: smoothing, hysteresis, a minimum duration and
/// an abstain decision (docs/streaming.md "Events").

/// How window predictions become events. The defaults suit models whose windows last 1-2 s
/// predicted every third of a window; docs/streaming.md says how to choose each.
public struct EventOptions: Equatable, Sendable {
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

    public init(
        smoothing: Int = 3, enter: Float = 0.6, exit: Float = 0.4, minimumDuration: Double = 0, background: Set<String> = [],
        floor: Float = 0
    ) {
        self.smoothing = smoothing
        self.enter = enter
        self.exit = exit
        self.minimumDuration = minimumDuration
        self.background = background
        self.floor = floor
    }

    /// Class names taken as background when none is given: `other`, `background`, `none`,
    /// `idle`, `null` (any case).
    public static let backgroundNames: Set<String> = ["other", "background", "none", "idle", "null"]

    /// The defaults for a model: its classes named in `backgroundNames` are background.
    public static func standard(classes: [String]) -> EventOptions {
        EventOptions(background: Set(classes.filter { backgroundNames.contains($0.lowercased()) }))
    }

    /// Checks the ranges; throws `EventError` naming the field.
    public func validate(classes: [String]) throws {
        guard smoothing >= 1 else { throw EventError.invalid("smoothing must be at least 1 window, got \(smoothing)") }
        guard enter > 0 && enter <= 1, exit >= 0 && exit <= enter else {
            throw EventError.invalid("the thresholds need 0 <= exit <= enter <= 1 (enter > 0), got enter \(enter), exit \(exit)")
        }
        guard floor >= 0 && floor <= 1 else { throw EventError.invalid("the probability floor must be in [0, 1], got \(floor)") }
        guard minimumDuration >= 0 && minimumDuration.isFinite else {
            throw EventError.invalid("the minimum duration must be zero or more seconds, got \(minimumDuration)")
        }
        if let unknown = background.sorted().first(where: { !classes.contains($0) }) {
            throw EventError.invalid("background class '\(unknown)' is not among the model's classes (\(classes.joined(separator: ", ")))")
        }
        if classes.allSatisfy(background.contains) { throw EventError.invalid("every class is a background class: no event can start") }
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
    private var recent: [[Float]] = []  // the last `smoothing` probability vectors
    private var open: (label: Int, start: Double, end: Double, peak: Float, sum: Float, windows: Int)?
    private var segment = 0  // of the last stream window (`add(_:)`)

    public init(classes: [String], options: EventOptions) throws {
        try options.validate(classes: classes)
        self.classes = classes
        self.options = options
        backgroundIndex = classes.map { options.background.contains($0) }
    }

    /// Takes the next window's probabilities (and its start and end in seconds); returns the
    /// event it ends, if any.
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
        var ended: ActionEvent? = nil
        if let o = open {
            let switches = !abstains && top != o.label && smoothed[top] >= options.enter
            if abstains || switches || smoothed[o.label] < options.exit {
                ended = close()
            } else {
                open = (o.label, o.start, end, max(o.peak, p[o.label]), o.sum + p[o.label], o.windows + 1)
            }
        }
        if open == nil && !abstains && smoothed[top] >= options.enter {
            open = (top, start, end, p[top], p[top], 1)
        }
        return ended
    }

    /// Takes a stream's next window. A window of another segment than the last one (the
    /// session restarted: a confirmed time jump) first ends the running event and the
    /// smoothing, as `finish()`. Returns the events ended, in order (at most two).
    public mutating func add(_ w: StreamWindow) -> [ActionEvent] {
        var ended: [ActionEvent] = []
        if w.segment != segment {
            if let e = finish() { ended.append(e) }
            segment = w.segment
        }
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
        guard o.end - o.start >= options.minimumDuration else { return nil }
        return ActionEvent(label: classes[o.label], start: o.start, end: o.end, peak: o.peak, mean: o.sum / Float(o.windows), windows: o.windows)
    }
}
