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

    static let options: [Option<EventFlags>] = [
        Option("smoothing", \.smoothing, value: "N", help: "Events: average the last N window predictions (default 3; 1 = none)."),
        Option("enter", \.enter, value: "P", help: "Events: an event starts when its class's smoothed probability reaches P (default 0.6)."),
        Option("exit", \.exit, value: "P", help: "Events: and lasts while it stays at or above P (default 0.4, at most --enter)."),
        Option("min-duration", \.minDuration, value: "SECONDS", help: "Events: drop events shorter than this (default 0)."),
        Option(
            "background", \.background, value: "CLASS",
            help: "Events: a class that never makes an event; may be repeated (default: the model's classes named other, background, none, idle or null)."),
        Option("floor", \.floor, value: "P", help: "Events: a window whose best smoothed probability is under P abstains and ends the running event (default 0: off)."),
        Option("forget-after", \.forgetAfter, value: "SECONDS", help: "--stream: forget a person unseen for this long, ending their event (default 2)."),
        Option("max-tracks", \.maxTracks, value: "N", help: "--stream: the most people followed at once (default 32); a line of one more is skipped with a warning."),
        Option(
            "max-jump", \.maxJump, value: "SECONDS",
            help: "--stream, --events: a frame more than this after the previous one is ignored unless the next frame confirms the jump, which restarts the stream (default 10)."),
    ]

    /// The event options for a model's classes: its defaults, then these flags.
    func eventOptions(classes: [String]) throws -> EventOptions {
        var o = EventOptions.standard(classes: classes)
        if let v = smoothing { o.smoothing = v }
        if let v = enter { o.enter = Float(v) }
        if let v = exit { o.exit = Float(v) }
        if let v = minDuration { o.minimumDuration = v }
        if !background.isEmpty { o.background = Set(background) }
        if let v = floor { o.floor = Float(v) }
        do {
            try o.validate(classes: classes)
        } catch let e as EventError {
            throw CLIError.usage(e.description)
        }
        guard forgetAfter > 0 && forgetAfter.isFinite else { throw CLIError.usage("--forget-after must be a positive number of seconds") }
        guard maxTracks >= 1 else { throw CLIError.usage("--max-tracks must be at least 1") }
        guard maxJump > 0 && maxJump.isFinite else { throw CLIError.usage("--max-jump must be a positive number of seconds") }
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
