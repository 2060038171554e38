import ActionRuntime
import Datasets
import Foundation
import Pipelines
import PoseCore

extension PredictCommand {
    /// Predicts sequences one at a time and prints their windows.
    struct Printer {
        let model: ActionModel
        let format: Format
        let stride: Int
        let split: String?
        var sequences = 0, windows = 0, labeled = 0, correct = 0
        /// `--unknown-below`: windows whose top probability is below it are answered "unknown".
        var unknownBelow: Float?
        /// With `unknownBelow`: the windows answered "unknown", and of the labeled windows
        /// decided, how many and how many right.
        var unknown = 0, decidedLabeled = 0, decidedCorrect = 0
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
        mutating func stream(stdin: StandardInput, out: inout Output) throws {
            let file = "<stdin>"
            var lines = stdin.lines(maximumLength: nil)
            guard let header = try lines.next()?.bytes else {
                throw CLIError.failure("\(file): no input; expected the native header line, then sequences")
            }
            var checked = false
            while let line = try lines.next() {
                guard let bytes = line.bytes, !line.isBlank else { continue }
                let d: Dataset
                do {
                    d = try NativeFormat.parse(header + [0x0A] + bytes, file: file, options: .init(people: PeoplePolicy(modelInput: model.input), bodyOrder: BodyOrderRule(modelInput: model.input)))
                } catch let e as DatasetError {
                    // The line was parsed as line 2 of a two-line document: name its real line.
                    throw CLIError.failure(e.description.replacingOccurrences(of: "\(file):2:", with: "\(file):\(line.number):"))
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
                _ = try NativeFormat.parse(header, file: file)
            }
        }

        mutating func predict(_ s: PoseSequence, sourceFrameRate: Double?, out: inout Output) throws {
            if let split, s.split != split { return }
            let predictions: [WindowPrediction]
            do {
                predictions = try model.predict(sequence: s, stride: stride, sourceFrameRate: sourceFrameRate, useEvents: useEvents)
            } catch let e as ModelError {
                throw CLIError.failure("sequence '\(s.id)': \(e)")
            }
            sequences += 1
            let F = model.input.window.frames
            for (i, p) in predictions.enumerated() {
                windows += 1
                padding.add(frames: F, real: model.input.window.mode == .fit ? F : p.end - p.start)
                let label = model.classes[p.classIndex]
                let decided = unknownBelow.map { p.probabilities[p.classIndex] >= $0 } ?? true
                if !decided { unknown += 1 }
                if let truth = s.label {
                    labeled += 1
                    if truth == label { correct += 1 }
                    if decided && unknownBelow != nil {
                        decidedLabeled += 1
                        if truth == label { decidedCorrect += 1 }
                    }
                }
                switch format {
                case .jsonl: out.line(jsonLine(s, index: i, p))
                case .table:
                    if !wroteTableHeader {
                        out.line(row("sequence", "window", "start", "end", "label", "probability", "truth"))
                        wroteTableHeader = true
                    }
                    let shown = decided ? label : "unknown (\(label))"
                    out.line(row(s.id, "\(i)", "\(p.start)", "\(p.end)", shown, String(format: "%.4f", p.probabilities[p.classIndex]), s.label ?? ""))
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
            if let threshold = unknownBelow {
                line += ", \"decision\": " + (p.probabilities[p.classIndex] >= threshold ? json(model.classes[p.classIndex]) : "null")
            }
            if let truth = s.label { line += ", \"truth\": \(json(truth))" }
            return line + "}"
        }

        func summary() -> String {
            var s = "predict: \(windows) windows from \(sequences) sequences"
            if labeled > 0 { s += String(format: "; %d of %d labeled windows agree with their sequence's label (%.3f)", correct, labeled, Double(correct) / Double(labeled)) }
            if let threshold = unknownBelow {
                s += String(format: "; %d unknown (most probable class below %g)", unknown, threshold)
                if decidedLabeled > 0 {
                    s += String(format: ", %d of the %d labeled windows decided agree (%.3f)", decidedCorrect, decidedLabeled, Double(decidedCorrect) / Double(decidedLabeled))
                }
            }
            s += "\n"
            if let w = padding.warning(windowLength: model.input.window.frames) { s += "warning: \(w)\n" }
            return s
        }
    }
}
