import ActionRuntime
import Datasets
import Foundation
import PoseCore

/// `predict --stream` (frames from stdin, several people) and `predict --events` (whole
/// sequences), both on the runtime's sessions: every window or event is written the moment it
/// exists.
struct StreamPrinter {
    let model: ActionModel
    let format: PredictCommand.Format
    let eventsOnly: Bool
    var windows = 0, events = 0, wroteHeader = false

    init(model: ActionModel, format: PredictCommand.Format, eventsOnly: Bool) {
        self.model = model
        self.format = format
        self.eventsOnly = eventsOnly
    }

    mutating func write(windows ws: [StreamWindow], events es: [ActionEvent], who: (json: String, table: String), out: inout Output) {
        if format == .table && !wroteHeader && (!es.isEmpty || (!eventsOnly && !ws.isEmpty)) {
            out.line(EventFlags.tableHeader)
            wroteHeader = true
        }
        windows += ws.count
        events += es.count
        if !eventsOnly {
            for w in ws {
                out.line(format == .jsonl ? EventFlags.jsonLine(w, who: who.json, classes: model.classes) : EventFlags.tableRow(w, who: who.table, classes: model.classes))
            }
        }
        for e in es { out.line(format == .jsonl ? EventFlags.jsonLine(e, who: who.json) : EventFlags.tableRow(e, who: who.table)) }
    }

    /// Frames from stdin, one JSON object per line (`StreamLine`: `{"t": 1.033, "person": 2,
    /// "pose": {"leftWrist": [x, y, c], ...}}`, or a frame of several people as a dataset file
    /// writes it, `{"t": 1.033, "people": [{"track": 2, "pose": {...}}, ...]}`). A line that cannot be used (not that format,
    /// over `StreamLine.maximumBytes`, one person too many) is a counted warning naming it, and
    /// the stream goes on; with --strict the first problem stops it. Whatever ends the stream
    /// (the end of input, --strict, Ctrl-C, SIGTERM, SIGHUP or SIGQUIT, an error) first finishes
    /// every person's session and writes their last windows and events.
    mutating func stream(_ options: PredictCommand.Options, stdin: StandardInput, out: inout Output) throws {
        let file = "<stdin>", strict = options.reading.strict, D = model.input.skeleton.dimensions
        let tracks = try TrackedStream(
            model: model, options: try sessionOptions(options), events: options.eventing.eventOptions(model: model),
            forgetAfter: options.eventing.forgetAfter, maximumTracks: options.eventing.maxTracks)
        let interrupt = InterruptFlag()
        // Every signal that asks a process to end: Ctrl-C, SIGTERM, a closed terminal's SIGHUP
        // and Ctrl-\'s SIGQUIT (which would otherwise end the stream without its last events).
        let signals = interrupt.watch(
            [SIGINT, SIGTERM, SIGHUP, SIGQUIT], restartCalls: false, first: "\nactiontrain: stopping; writing every person's last windows and events...\n",
            second: "\nactiontrain: second signal, exiting at once\n")
        defer { InterruptFlag.stopWatching(signals) }
        var lines = stdin.lines(maximumLength: StreamLine.maximumBytes)
        var number = 0, skipped = LineProblems(), noted = Set<StreamWarning.Kind>()
        var failure: Error?
        /// One person, or an interaction model's people in body order (null: a free body).
        func who(_ o: TrackedStream.Output) -> (json: String, table: String) {
            guard !o.people.isEmpty else { return ("\"person\": \(o.track.json)", "person \(o.track)") }
            return (
                "\"people\": [" + o.people.map { $0?.json ?? "null" }.joined(separator: ", ") + "]",
                "people " + o.people.map { $0?.description ?? "-" }.joined(separator: "+")
            )
        }
        do {
            while !interrupt.isRaised, let line = try lines.next() {
                number = line.number
                if line.isBlank { continue }
                let place = "\(file):\(line.number)"
                guard let bytes = line.bytes else {
                    let why = "the line is \(line.length) bytes, more than the \(StreamLine.maximumBytes) a frame may take"
                    try skipped.note("longLine", at: place, why, strict: strict, out: &out)
                    continue
                }
                let frame: StreamLine
                do {
                    frame = try StreamLine.parse(bytes, dimensions: D)
                } catch let e as StreamLineError {
                    let ended = line.terminated ? "" : " (the input ended in the middle of this line)"
                    try skipped.note("badLine", at: place, "\(e)\(ended); expected \(StreamLine.example)", strict: strict, out: &out)
                    continue
                }
                // Everyone the line gives (a "people" line: each in turn; nobody in view of an
                // interaction model: its empty scene, as `TrackedStream.push(people:)` pushes it).
                var persons = frame.persons
                if persons.isEmpty && model.bodies > 1 { persons = [.init(id: 0, points: [:])] }
                for person in persons {
                    let outputs: [TrackedStream.Output]
                    do {
                        outputs = try tracks.push(track: person.id, points: person.points, time: frame.time)
                    } catch let e as StreamError {
                        if case .tooManyTracks = e {
                            try skipped.note("tooManyTracks", at: place, "\(e)", strict: strict, out: &out)
                            continue
                        }
                        throw CLIError.failure("\(place): \(e)")
                    }
                    for o in outputs { write(windows: o.windows, events: o.events, who: who(o), out: &out) }
                    for w in tracks.statistics.firstWarnings where noted.insert(w.kind).inserted {
                        out.note("warning: \(place): person \(person.id): \(w)\n")
                    }
                }
            }
        } catch {
            failure = error
        }
        for o in tracks.finish() { write(windows: o.windows, events: o.events, who: who(o), out: &out) }
        out.note(summary(tracks.statistics, of: "\(number) lines") + skipped.summary)
        if let failure { throw failure }
        if interrupt.isRaised {
            throw CLIError.interrupted("predict: stopped by a signal after line \(number); every person's last windows and events were written")
        }
        // Nothing but skipped lines: a stream of another format or dimension, not a live one
        // with some bad lines (which ends well).
        if skipped.total > 0 && tracks.statistics.frames == 0 {
            throw CLIError.failure(
                "predict: \(skipped.total == 1 ? "the only line was" : "all \(skipped.total) lines were") skipped (the warnings above say why), so no frame reached the model "
                    + "and nothing was predicted")
        }
    }

    /// Each sequence as a stream of its own (`--events` on a file), at its timestamps or the
    /// dataset's frame rate.
    mutating func events(_ s: PoseSequence, frameRate: Double?, options: PredictCommand.Options, out: inout Output) throws {
        guard s.timestamps != nil || frameRate != nil else {
            throw CLIError.failure("sequence '\(s.id)' has no timestamps and the dataset declares no frame rate: events need seconds")
        }
        let played = try LiveEvents.play(
            s, frameRate: frameRate, model: model, options: sessionOptions(options), events: options.eventing.eventOptions(model: model),
            forgetAfter: options.eventing.forgetAfter)
        write(windows: played.windows, events: played.events.map(\.event), who: ("\"sequence\": \(PredictCommand.json(s.id))", s.id), out: &out)
        let session = played.statistics
        for w in session.firstWarnings { out.note("warning: sequence '\(s.id)': \(session.count(w.kind)) x \(w)\n") }
    }

    /// The session options of the flags (`EventFlags.sessionOptions`).
    func sessionOptions(_ options: PredictCommand.Options) throws -> StreamOptions {
        try options.eventing.sessionOptions(model: model, modelPath: options.model, stride: options.stride, reading: options.reading)
    }

    func summary(_ s: StreamStatistics, of what: String) -> String {
        "predict: \(s.frames) frames from \(what), \(windows) windows, \(events) events\n" + EventFlags.warnings(s)
    }

}

/// The stream lines `predict --stream` skipped, by kind: counted, the first of each printed when
/// it occurs and summed at the end (as `StreamStatistics` does for frames).
struct LineProblems {
    private var counts: [String: Int] = [:]
    private var first: [(kind: String, message: String)] = []

    /// Counts a skipped line (`kind`, what is wrong at `place`); prints the first of its kind.
    /// Under --strict, throws it instead (the stream then stops).
    mutating func note(_ kind: String, at place: String, _ why: String, strict: Bool, out: inout Output) throws {
        let message = "\(place): \(why)"
        if strict { throw CLIError.failure(message) }
        counts[kind, default: 0] += 1
        if counts[kind] == 1 {
            first.append((kind, message))
            out.note("warning: \(message) (line skipped)\n")
        }
    }

    var summary: String { first.map { "warning: \(counts[$0.kind]!) x \($0.kind); first: \($0.message)\n" }.joined() }
    /// The lines skipped.
    var total: Int { counts.values.reduce(0, +) }
}
