import ActionRuntime
import Datasets
import Foundation
import Pipelines
import PoseCore

enum PredictCommand: ParsableCommand {
    enum Format: String, ArgumentChoice { case jsonl, table }

    struct Options: CommandOptions {
        var model = "", data = ""
        var stride: Int?
        var format = Format.jsonl
        var split: String?
        var useEvents = false
        var stream = false
        var events = false
        var unknownBelow: Double?
        var reading = DataFlags()
        var eventing = EventFlags()

        /// The largest --stride (and --stride-seconds in frames): the longest window a model takes.
        static let maximumStride = InputSpec.maxFrames

        func validate() throws {
            if let stride, !(1...Self.maximumStride).contains(stride) {
                throw CLIError.usage("--stride must be 1 to \(Self.maximumStride) frames, got \(stride)")
            }
            if let p = unknownBelow, !(p > 0 && p <= 1) {
                throw CLIError.usage("--unknown-below must be a probability in (0, 1], got \(p)")
            }
        }

        /// The checks across options (run, not `validate`: the options test sets every one at once).
        /// No flag is taken and then ignored: the event and track flags need --events or
        /// --stream, the track flags --stream, and a stream has no splits and follows people by
        /// their ids (`checkStream(model:)`).
        func checkStreaming() throws {
            if stream && data != "-" { throw CLIError.usage("--stream reads frames from stdin: give - as DATA") }
            if events && !stream && data == "-" { throw CLIError.usage("--events reads a file, or frames from stdin with --stream") }
            if useEvents && (stream || events) { throw CLIError.usage("--use-events cuts whole sequences; it does not go with --stream or --events") }
            if !stream && !events, let flag = eventing.given.sorted().first {
                throw CLIError.usage("--\(flag) is an option of --events and --stream; add one of them, or leave it out")
            }
            if !stream, let flag = eventing.given.intersection(EventFlags.streamOnly).sorted().first {
                throw CLIError.usage("--\(flag) follows the people of a live stream: it needs --stream")
            }
            if unknownBelow != nil && (stream || events) {
                throw CLIError.usage("--unknown-below decides the windows of a file; events and streams have their own thresholds (--enter, --exit): leave it out")
            }
            if stream && split != nil {
                throw CLIError.usage("--split chooses the sequences of a file; a live stream has no splits: leave it out")
            }
        }

        /// What a stream cannot do with the flags for `model`: --people other than the model's
        /// own bodies=M (a stream follows each person by their id, and pairs an interaction
        /// model's people into its bodies itself), and --clip-frames for a model that slides
        /// its windows (only a whole-clip model has a clip).
        func checkStream(model: ActionModel) throws {
            if stream, let people = reading.people, people != PeoplePolicy(modelInput: model.input) {
                let own = model.bodies > 1 ? "; this model's bodies=\(model.bodies) is what the stream does" : ""
                throw CLIError.usage(
                    "--people \(people) chooses people in a file; a live stream follows each person by their \"person\" id (at most --max-tracks)\(own): leave --people out")
            }
            if let n = eventing.clipFrames, model.input.window.mode != .fit {
                throw CLIError.usage(
                    "--clip-frames \(n) is for a whole-clip (fit window) model; this model slides windows of \(model.input.window.frames) frames: leave it out")
            }
        }
    }

    static let spec = CommandSpec<Options>(
        name: "predict",
        summary: "Predict the action of every sliding window of whole sequences (JSON Lines or a table).",
        positionals: [
            Positional("MODEL", \.model, help: "Model file written by 'actiontrain fit'."),
            Positional(
                "DATA", \.data,
                help: DataFlags.formats + " Or - to read native JSON Lines from stdin: the header line, then one sequence per line, each predicted as soon as it arrives."),
        ],
        options: [
            Option("stride", \.stride, value: "N", help: "Frames between window starts (default: a third of the window; at most 100000)."),
            Option("format", \.format, value: "FORMAT", help: "jsonl (one JSON object per window, the default) or table."),
            Option("split", \.split, value: "NAME", help: "Only the sequences of this split (default: all)."),
            Option(
                "unknown-below", \.unknownBelow, value: "P",
                help: "Answer \"unknown\" (\"decision\": null) for a window whose most probable class has a probability below P, in (0, 1]: with a calibrated model (fit's default), about P of the windows decided at that probability are right."),
            Option("use-events", \.useEvents, help: "Sequences with labeled events: one window centred on each event (as fit's useEvents) instead of sliding windows."),
            Option("stream", \.stream, help: "Read frames from stdin (DATA -), one JSON object per line, several people by \"person\"; write each window and event the moment it exists."),
            Option("events", \.events, help: "Write action events (label, start and end in seconds, peak and mean probability) instead of windows."),
        ] + DataFlags.options.map { $0.within(\.reading) } + EventFlags.options.map { $0.within(\.eventing) },
        discussion: """
            Each sequence is resampled to the model's frame rate when it has one, then cut into the
            model's windows exactly as at training time: windows start every --stride frames, the
            last one ends at the last frame, and a sequence shorter than a window is padded. One
            output per window:
              {"sequence": "clip-1", "window": 0, "start": 0, "end": 45, "label": "squat",
               "probability": 0.93, "probabilities": {"squat": 0.93, "other": 0.07}, "truth": "squat"}
            start and end are frame indices (end exclusive, padding excluded); truth is the
            sequence's own label when it has one. A summary goes to stderr.

            Live poses (docs/streaming.md): --stream reads one frame per line from stdin,
              {"t": 1.033, "person": 2, "pose": {"leftWrist": [412.5, 300.1, 0.92], "root": [398, 420]}}
            (t in seconds; points in pixels, or metres for 3D models, optionally with a confidence;
            joint names are the model's skeleton names or their aliases) and writes
              {"type": "window", "person": 2, "start": 0.000, "end": 1.467, "label": "squat", ...}
              {"type": "event", "person": 2, "label": "squat", "start": 2.100, "end": 3.050, "peak": 0.93, "mean": 0.81, "windows": 4}
            Example: pose-estimator | actiontrain predict model.atm - --stream --events --background other
            --events on a file writes the events of each sequence, in seconds.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        try run(options, out: &out, stdin: .standard)
    }

    /// `stdin` gives the bytes of standard input (replaceable in tests).
    static func run(_ options: Options, out: inout Output, stdin: StandardInput) throws {
        if let swapped = Guards.swappedArguments(model: options.model, data: options.data) { throw CLIError.usage(swapped) }
        try options.checkStreaming()
        let model = try ActionModel(contentsOf: options.model)
        do {
            try model.checkOutputs()
            try run(options, model: model, out: &out, stdin: stdin)
        } catch let e as ModelError {
            throw CLIError.failure("\(options.model): \(e)")
        }
    }

    private static func run(_ options: Options, model: ActionModel, out: inout Output, stdin: StandardInput) throws {
        let dataPath = options.data
        let stride = options.stride ?? Evaluation.defaultStride(model)
        let format = options.format
        var printer = Printer(model: model, format: format, stride: stride, split: options.split)
        printer.unknownBelow = options.unknownBelow.map(Float.init)
        printer.useEvents = options.useEvents
        if options.stream || options.events {
            try options.checkStream(model: model)
            _ = try options.eventing.eventOptions(model: model)  // usage errors first
        }
        if options.stream {
            var streamer = StreamPrinter(model: model, format: format, eventsOnly: options.events)
            return try streamer.stream(options, stdin: stdin, out: &out)
        }
        if dataPath == "-" {
            try printer.stream(stdin: stdin, out: &out)
        } else {
            try options.reading.checkPeople(for: model)
            let dataset = try options.reading.load(
                dataPath, people: PeoplePolicy(modelInput: model.input), bodyOrder: BodyOrderRule(modelInput: model.input), out: &out)
            if let split = options.split, !dataset.sequences.contains(where: { $0.split == split }) {
                // As eval: a split the data does not have is a mistake, not an empty result.
                let present = Set(dataset.sequences.compactMap(\.split)).sorted()
                throw CLIError.failure(EvaluationError.noSequences(dataPath: dataPath, split: split, present: present).description)
            }
            try printer.check(dataset, name: dataPath, out: &out)
            if options.events {
                var streamer = StreamPrinter(model: model, format: format, eventsOnly: true)
                var sequences = 0
                for s in dataset.sequences where options.split == nil || s.split == options.split {
                    try streamer.events(s, frameRate: dataset.frameRate, options: options, out: &out)
                    sequences += 1
                }
                return out.note("predict: \(streamer.events) events from \(sequences) sequence\(sequences == 1 ? "" : "s")\n")
            }
            for s in dataset.sequences { try printer.predict(s, sourceFrameRate: dataset.frameRate, out: &out) }
        }
        out.note(printer.summary())
    }

    /// A JSON string literal.
    static func json(_ s: String) -> String { JSONText.quote(s) }
}

/// Standard input as bytes, replaceable in tests: `read` fills the buffer and returns the byte
/// count, 0 at the end of the input.
struct StandardInput {
    var read: (UnsafeMutableRawBufferPointer) throws -> Int

    /// File descriptor 0. A read interrupted by a signal (EINTR) ends the input when a watched
    /// signal was raised (`InterruptFlag`: `predict --stream` stops there), else it is retried.
    static var standard: StandardInput {
        StandardInput { buffer in
            while true {
                let n = Foundation.read(0, buffer.baseAddress, buffer.count)
                if n >= 0 { return n }
                guard errno == EINTR else { throw CLIError.failure("<stdin>: cannot read: \(String(cString: strerror(errno)))") }
                if InterruptFlag().isRaised { return 0 }
            }
        }
    }

    /// The lines of a `LineReader` over this input.
    func lines(maximumLength: Int?) -> LineReader { LineReader(maximumLength: maximumLength, read: read) }
}
