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
        var reading = DataFlags()

        func validate() throws {
            if let stride, stride <= 0 { throw CLIError.usage("--stride must be positive") }
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
            Option("stride", \.stride, value: "N", help: "Frames between window starts (default: a third of the window)."),
            Option("format", \.format, value: "FORMAT", help: "jsonl (one JSON object per window, the default) or table."),
            Option("split", \.split, value: "NAME", help: "Only the sequences of this split (default: all)."),
            Option("use-events", \.useEvents, help: "Sequences with labeled events: one window centred on each event (as fit's useEvents) instead of sliding windows."),
        ] + DataFlags.options.map { $0.within(\.reading) },
        discussion: """
            Each sequence is resampled to the model's frame rate when it has one, then cut into the
            model's windows exactly as at training time: windows start every --stride frames, the
            last one ends at the last frame, and a sequence shorter than a window is padded. One
            output per window:
              {"sequence": "clip-1", "window": 0, "start": 0, "end": 45, "label": "squat",
               "probability": 0.93, "probabilities": {"squat": 0.93, "other": 0.07}, "truth": "squat"}
            start and end are frame indices (end exclusive, padding excluded); truth is the
            sequence's own label when it has one. A summary goes to stderr.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        try run(options, out: &out, stdin: { readLine(strippingNewline: true) })
    }

    /// `stdin` yields the lines of standard input (replaceable in tests).
    static func run(_ options: Options, out: inout Output, stdin: () -> String?) throws {
        if let swapped = Guards.swappedArguments(model: options.model, data: options.data) { throw CLIError.usage(swapped) }
        let model = try ActionModel(contentsOf: options.model)
        let dataPath = options.data
        let stride = options.stride ?? Evaluation.defaultStride(model)
        let format = options.format
        var printer = Printer(model: model, format: format, stride: stride, split: options.split)
        printer.useEvents = options.useEvents
        if dataPath == "-" {
            try printer.stream(stdin: stdin, out: &out)
        } else {
            let dataset = try options.reading.load(dataPath, people: PeoplePolicy(modelInput: model.input), out: &out)
            try printer.check(dataset, name: dataPath, out: &out)
            for s in dataset.sequences { try printer.predict(s, sourceFrameRate: dataset.frameRate, out: &out) }
        }
        out.note(printer.summary())
    }

    /// Predicts sequences one at a time and prints their windows.
    struct Printer {
        let model: ActionModel
        let format: Format
        let stride: Int
        let split: String?
        var sequences = 0, windows = 0, labeled = 0, correct = 0
        var wroteTableHeader = false
        /// Labels outside the model's classes already warned about.
        var warnedLabels = Set<String>()
        var useEvents = false
        var padding = Guards.PaddingTally()

        init(model: ActionModel, format: Format, stride: Int, split: String?) {
            self.model = model
            self.format = format
            self.stride = stride
            self.split = split
        }

        /// The data must have the model's skeleton; a frame-rate mismatch is worth a warning.
        mutating func check(_ d: Dataset, name: String, out: inout Output) throws {
            try Evaluation.checkSkeleton(model, d, dataPath: name)
            noteUnknownLabels(d, name: name, out: &out)
            if model.input.window.frameRate == nil, let trained = model.header.trainingFrameRate, let rate = d.frameRate,
                abs(rate - trained) > 1e-6
            {
                out.note("warning: \(name) is at \(rate) fps but the model was trained on \(trained) fps data and does not resample; predictions may be off\n")
            }
        }

        /// Labels the model cannot predict get one warning each (their windows never agree).
        mutating func noteUnknownLabels(_ d: Dataset, name: String, out: inout Output) {
            let unknown = d.labels(outside: model.classes, split: split).filter { warnedLabels.insert($0.label).inserted }
            guard !unknown.isEmpty else { return }
            let list = unknown.map { "'\($0.label)' (\($0.sequences) sequence\($0.sequences == 1 ? "" : "s"))" }.joined(separator: ", ")
            out.note(
                "warning: \(name): label\(unknown.count == 1 ? "" : "s") \(list) \(unknown.count == 1 ? "is" : "are") not among the model's classes "
                    + "(\(model.classes.joined(separator: ", "))): the model cannot predict \(unknown.count == 1 ? "it" : "them"), "
                    + "so those windows never agree with their label\n")
        }

        /// Native JSON Lines from stdin: the header line, then one sequence per line.
        mutating func stream(stdin: () -> String?, out: inout Output) throws {
            let file = "<stdin>"
            guard let header = stdin() else { throw CLIError.failure("\(file): no input; expected the native header line, then sequences") }
            var number = 1, checked = false
            while let line = stdin() {
                number += 1
                if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
                let d: Dataset
                do {
                    d = try NativeFormat.parse(
                        Array((header + "\n" + line).utf8), file: file, options: .init(people: PeoplePolicy(modelInput: model.input)))
                } catch let e as DatasetError {
                    // The line was parsed as line 2 of a two-line document: name its real line.
                    throw CLIError.failure(e.description.replacingOccurrences(of: "\(file):2:", with: "\(file):\(number):"))
                }
                if !checked {
                    try check(d, name: file, out: &out)
                    checked = true
                } else {
                    noteUnknownLabels(d, name: file, out: &out)
                }
                for s in d.sequences { try predict(s, sourceFrameRate: d.frameRate, out: &out) }
            }
            if !checked {  // a header alone: still check it
                _ = try NativeFormat.parse(Array(header.utf8), file: file)
            }
        }

        mutating func predict(_ s: PoseSequence, sourceFrameRate: Double?, out: inout Output) throws {
            if let split, s.split != split { return }
            let predictions = try model.predict(sequence: s, stride: stride, sourceFrameRate: sourceFrameRate, useEvents: useEvents)
            sequences += 1
            let F = model.input.window.frames
            for (i, p) in predictions.enumerated() {
                windows += 1
                padding.add(frames: F, real: model.input.window.mode == .fit ? F : p.end - p.start)
                let label = model.classes[p.classIndex]
                if let truth = s.label {
                    labeled += 1
                    if truth == label { correct += 1 }
                }
                switch format {
                case .jsonl: out.line(jsonLine(s, index: i, p))
                case .table:
                    if !wroteTableHeader {
                        out.line(row("sequence", "window", "start", "end", "label", "probability", "truth"))
                        wroteTableHeader = true
                    }
                    out.line(row(s.id, "\(i)", "\(p.start)", "\(p.end)", label, String(format: "%.4f", p.probabilities[p.classIndex]), s.label ?? ""))
                }
            }
        }

        func row(_ id: String, _ i: String, _ start: String, _ end: String, _ label: String, _ p: String, _ truth: String) -> String {
            func left(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s.padding(toLength: n, withPad: " ", startingAt: 0) }
            func right(_ s: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - s.count)) + s + " " }
            return left(id, 24) + right(i, 6) + right(start, 6) + right(end, 6) + " " + left(label, 20) + right(p, 11) + " " + truth
        }

        func jsonLine(_ s: PoseSequence, index: Int, _ p: WindowPrediction) -> String {
            func num(_ v: Float) -> String { v.isFinite ? "\(v)" : "null" }
            var line = "{\"sequence\": \(json(s.id)), \"window\": \(index), \"start\": \(p.start), \"end\": \(p.end)"
            line += ", \"label\": \(json(model.classes[p.classIndex])), \"probability\": \(num(p.probabilities[p.classIndex]))"
            line += ", \"probabilities\": {"
            line += zip(model.classes, p.probabilities).map { "\(json($0)): \(num($1))" }.joined(separator: ", ") + "}"
            if let truth = s.label { line += ", \"truth\": \(json(truth))" }
            return line + "}"
        }

        func summary() -> String {
            var s = "predict: \(windows) windows from \(sequences) sequences"
            if labeled > 0 { s += String(format: "; %d of %d labeled windows agree with their sequence's label (%.3f)", correct, labeled, Double(correct) / Double(labeled)) }
            s += "\n"
            if let w = padding.warning(windowLength: model.input.window.frames) { s += "warning: \(w)\n" }
            return s
        }
    }

    /// A JSON string literal.
    static func json(_ s: String) -> String { JSONText.quote(s) }
}
