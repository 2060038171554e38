import ActionRuntime
import Foundation

/// `predict`'s options for events and tracks (`--events`, `--stream`): an option group, as
/// `GateFlags`, mapped onto the runtime's `EventOptions` (docs/streaming.md).
struct EventFlags {
    var smoothing: Int?
    var enter: Double?
    var exit: Double?
    var minDuration: Double?
    var background: [String] = []
    var floor: Double?
    var forgetAfter = 2.0
    var maxTracks = 32
    var maxJump = 10.0
    var clipFrames: Int?
    var strideSeconds: Double?
    var allowOverlap = false
    var lookAhead: Double?
    var switchEvidence: Double?
    var windowEvents = false
    /// The flags given (without dashes), so that flags the command would not use are refused.
    var given: Set<String> = []
    /// The flags that only --stream reads (the others also serve --events on a file, where a
    /// sequence is one person's stream, forgotten after --forget-after as live).
    static let streamOnly: Set<String> = ["max-tracks"]

    /// The most windows --smoothing averages.
    static let maximumSmoothing = 1000

    /// Each flag, also noting that it was given (`given`).
    static let options: [Option<EventFlags>] = declared.map { o in
        Option(name: o.name, value: o.value, help: o.help, repeatable: o.repeatable, sample: o.sample) { v, raw in
            try o.apply(&v, raw)
            v.given.insert(o.name)
        }
    }

    private static let declared: [Option<EventFlags>] = [
        Option("smoothing", \.smoothing, value: "N", help: "Events: average the last N window predictions (default 3; 1 = none; at most 1000)."),
        Option(
            "enter", \.enter, value: "P",
            help: "Events: an event starts when its class's smoothed probability reaches P, for every class (default: the model's thresholds per class, calibrated by fit; 0.6 for older models)."),
        Option(
            "exit", \.exit, value: "P",
            help: "Events: and lasts while it stays at or above P, for every class (default: the model's, two thirds of each enter; 0.4 for older models; at most --enter)."),
        Option("overlap", \.allowOverlap, help: "Events from windows: let events of different classes overlap in time (by default one ends where the next begins)."),
        Option(
            "look-ahead", \.lookAhead, value: "SECONDS",
            help: "Events from frames: decide each frame this long after it, so an event comes at most this long after its end (default: the model's, calibrated by fit: 3/4 of its window)."),
        Option(
            "switch-evidence", \.switchEvidence, value: "SCORE-SECONDS",
            help: "Events from frames: the lead another class must gather over the running event's class before an action switches without rest (default: the model file's when it records one, else 0.3)."),
        Option(
            "window-events", \.windowEvents,
            help: "Events from windows (smoothing, hysteresis on window probabilities), the rule of model files before format 1.5, instead of from frames."),
        Option("min-duration", \.minDuration, value: "SECONDS", help: "Events: drop events shorter than this (default 0)."),
        Option(
            "background", \.background, value: "CLASS",
            help: "Events: a class that never makes an event; may be repeated (default: the model's classes named other, background, none, idle or null)."),
        Option("floor", \.floor, value: "P", help: "Events: a window whose best smoothed probability is under P abstains and ends the running event (default 0: off)."),
        Option(
            "forget-after", \.forgetAfter, value: "SECONDS",
            help: "--stream: forget a person unseen for this long, ending their event; --events on a file, eval --events: a sequence paused this long starts afresh, as live (default 2)."),
        Option("max-tracks", \.maxTracks, value: "N", help: "--stream: the most people followed at once (default 32, at most 1024); a line of one more is skipped with a warning."),
        Option(
            "max-jump", \.maxJump, value: "SECONDS",
            help: "--stream, --events: a frame more than this after the previous one is ignored unless the next frame confirms the jump, which restarts the stream (default 10)."),
        Option(
            "stride-seconds", \.strideSeconds, value: "SECONDS",
            help: "--stream, --events: seconds between window predictions, instead of --stride frames (default: a third of the window or clip)."),
        Option(
            "clip-frames", \.clipFrames, value: "N",
            help: "--stream, --events with a whole-clip (fit window) model: slide a clip of N frames (at the training data's frame rate) instead of the length the model file records; needed for model files that predate format 1.3."),
    ]

    /// The event options for a model: its defaults (`EventOptions.standard(for:)`: its
    /// calibrated thresholds per class), then these flags (--enter and --exit for every class).
    func eventOptions(model: ActionModel) throws -> EventOptions {
        let classes = model.classes
        var o = EventOptions.standard(for: model, fromFrames: !windowEvents)
        if let v = lookAhead {
            guard o.frames != nil else {
                throw CLIError.usage(
                    windowEvents ? "--look-ahead is for events from frames; leave out --window-events" : "--look-ahead is for events from frames, which this model file does not record (format 1.5); fit it again")
            }
            guard v > 0 && v <= 60 else { throw CLIError.usage("--look-ahead must be more than 0 and at most 60 seconds, got \(v)") }
            o.frames!.lookAhead = v
        }
        if let v = switchEvidence {
            guard o.frames != nil else {
                throw CLIError.usage(
                    windowEvents
                        ? "--switch-evidence is for events from frames; leave out --window-events"
                        : "--switch-evidence is for events from frames, which this model file does not record (format 1.5); fit it again")
            }
            guard v >= 0 && v <= 3600 else { throw CLIError.usage("--switch-evidence must be 0 to 3600 score-seconds, got \(v)") }
            o.frames!.switchEvidence = v
        }
        if let v = smoothing { o.smoothing = v }
        if let v = enter {
            o.enter = Float(v)
            o.classThresholds = [:]
            if exit == nil { o.exit = min(o.exit, o.enter) }
        }
        if let v = exit {
            o.exit = Float(v)
            if enter == nil {
                o.enter = max(o.enter, o.exit)
                o.classThresholds = o.classThresholds.mapValues { .init(enter: max($0.enter, o.exit), exit: o.exit) }
            }
        }
        o.allowOverlap = allowOverlap
        if let v = minDuration { o.minimumDuration = v }
        if !background.isEmpty { o.background = Set(background) }
        if let v = floor { o.floor = Float(v) }
        do {
            try o.validate(classes: classes)
        } catch let e as EventError {
            throw CLIError.usage(e.description)
        }
        guard forgetAfter > 0 && forgetAfter.isFinite else { throw CLIError.usage("--forget-after must be a positive number of seconds") }
        guard maxTracks >= 1 && maxTracks <= TrackedStream.maximumTracksLimit else {
            throw CLIError.usage("--max-tracks must be 1 to \(TrackedStream.maximumTracksLimit), got \(maxTracks)")
        }
        if let n = smoothing, !(1...Self.maximumSmoothing).contains(n) {
            throw CLIError.usage("--smoothing must be 1 to \(Self.maximumSmoothing) windows, got \(n)")
        }
        guard maxJump > 0 && maxJump.isFinite else { throw CLIError.usage("--max-jump must be a positive number of seconds") }
        if let n = clipFrames, n < 1 { throw CLIError.usage("--clip-frames must be at least 1, got \(n)") }
        if let s = strideSeconds, !(s > 0 && s.isFinite) { throw CLIError.usage("--stride-seconds must be a positive number of seconds") }
        return o
    }

    /// The session options of the flags: the stride (`stride` frames, `--stride-seconds`, or a
    /// third of the window or clip), the clip length of a whole-clip model, the reading flags,
    /// and the frames when events come from them.
    func sessionOptions(model: ActionModel, modelPath: String, stride given: Int?, reading: DataFlags) throws -> StreamOptions {
        if given != nil && strideSeconds != nil { throw CLIError.usage("give --stride (frames) or --stride-seconds, not both") }
        let window: (frames: Int, frameRate: Double?)
        do {
            window = try model.streamWindow(clipFrames: clipFrames)
        } catch let e as StreamError {
            throw CLIError.failure("\(modelPath): \(ActionTrainCLI.describe(e))")
        }
        var stride = given ?? max(1, window.frames / 3)
        if let seconds = strideSeconds {
            guard let r = window.frameRate else {
                throw CLIError.usage("--stride-seconds needs a model that resamples to a frame rate; this one takes frames as they come: give --stride in frames")
            }
            let frames = (seconds * r).rounded()  // compared as a Double: an Int may not hold it
            guard frames <= Double(PredictCommand.Options.maximumStride) else {
                throw CLIError.usage("--stride-seconds \(seconds) is \(frames) frames at the model's \(r) fps; the stride is at most \(PredictCommand.Options.maximumStride) frames")
            }
            stride = max(1, Int(frames))
        }
        var o = StreamOptions(stride: stride, strict: reading.strict, clipFrames: clipFrames, frames: try eventOptions(model: model).frames != nil)
        if let c = try reading.readOptions().minConfidence { o.minimumConfidence = c }  // checked as the readers check it
        o.maximumJump = maxJump
        return o
    }

    // MARK: - Output lines

    static func number(_ v: Float) -> String { v.isFinite ? "\(v)" : "null" }
    static func seconds(_ t: Double) -> String { String(format: "%.3f", t) }

    /// One window as a JSON line (`who` is `"person": 2` or `"sequence": "clip"`).
    static func jsonLine(_ w: StreamWindow, who: String, classes: [String]) -> String {
        var line = "{\"type\": \"window\", \(who), \"start\": \(seconds(w.startTime)), \"end\": \(seconds(w.endTime))"
        line += ", \"label\": \(PredictCommand.json(classes[w.classIndex])), \"probability\": \(number(w.probabilities[w.classIndex]))"
        line += ", \"probabilities\": {" + zip(classes, w.probabilities).map { "\(PredictCommand.json($0)): \(number($1))" }.joined(separator: ", ")
        return line + "}}"
    }

    static func jsonLine(_ e: ActionEvent, who: String) -> String {
        "{\"type\": \"event\", \(who), \"label\": \(PredictCommand.json(e.label)), \"start\": \(seconds(e.start)), \"end\": \(seconds(e.end))"
            + ", \"peak\": \(number(e.peak)), \"mean\": \(number(e.mean)), \"windows\": \(e.windows)}"
    }

    static let tableHeader = row("who", "what", "label", "start", "end", "probability", "mean")

    static func tableRow(_ w: StreamWindow, who: String, classes: [String]) -> String {
        row(who, "window", classes[w.classIndex], seconds(w.startTime), seconds(w.endTime), String(format: "%.4f", w.probabilities[w.classIndex]), "")
    }

    static func tableRow(_ e: ActionEvent, who: String) -> String {
        row(who, "event", e.label, seconds(e.start), seconds(e.end), String(format: "%.4f", e.peak), String(format: "%.4f", e.mean))
    }

    static func row(_ cells: String...) -> String {
        let widths = [20, 7, 20, 10, 10, 12, 8]
        return zip(cells, widths).enumerated().map { i, c in
            i < 3 ? c.0.padding(toLength: max(c.1, c.0.count + 1), withPad: " ", startingAt: 0) : String(repeating: " ", count: max(1, c.1 - c.0.count)) + c.0
        }.joined()
    }

    /// The warnings of a stream's statistics, one line each with its count and first occurrence.
    static func warnings(_ s: StreamStatistics) -> String {
        s.firstWarnings.map { "warning: \(s.count($0.kind)) x \($0.kind.rawValue); first: \($0)\n" }.joined()
    }
}
