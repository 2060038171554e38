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

    /// Frames from stdin, one JSON object per line: `{"t": 1.033, "person": 2, "pose": {"leftWrist": [x, y, c], ...}}`.
    mutating func stream(_ options: PredictCommand.Options, stdin: () -> String?, out: inout Output) throws {
        let file = "<stdin>"
        let streamOptions = try sessionOptions(options)
        let tracks = try TrackedStream(
            model: model, options: streamOptions, events: options.eventing.eventOptions(classes: model.classes),
            forgetAfter: options.eventing.forgetAfter, maximumTracks: options.eventing.maxTracks)
        var number = 0, noted = Set<StreamWarning.Kind>()
        while let line = stdin() {
            number += 1
            if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
            let (time, person, points) = try Self.frame(line, dimensions: model.input.skeleton.dimensions, at: "\(file):\(number)")
            let outputs: [TrackedStream.Output]
            do {
                outputs = try tracks.push(track: person, points: points, time: time)
            } catch let e as StreamError {
                throw CLIError.failure("\(file):\(number): \(e)")
            }
            for o in outputs { write(windows: o.windows, events: o.events, who: ("\"person\": \(o.track)", "person \(o.track)"), out: &out) }
            for w in tracks.statistics.firstWarnings where noted.insert(w.kind).inserted {
                out.note("warning: \(file):\(number): person \(person): \(w)\n")
            }
        }
        for o in tracks.finish() { write(windows: o.windows, events: o.events, who: ("\"person\": \(o.track)", "person \(o.track)"), out: &out) }
        out.note(summary(tracks.statistics, of: "\(number) lines"))
    }

    /// Each sequence as a stream of its own (`--events` on a file), at its timestamps or the
    /// dataset's frame rate.
    mutating func events(_ s: PoseSequence, frameRate: Double?, options: PredictCommand.Options, out: inout Output) throws {
        guard s.timestamps != nil || frameRate != nil else {
            throw CLIError.failure("sequence '\(s.id)' has no timestamps and the dataset declares no frame rate: events need seconds")
        }
        let session = try StreamSession(model: model, options: sessionOptions(options))
        var detector = try EventDetector(classes: model.classes, options: options.eventing.eventOptions(classes: model.classes))
        let J = s.jointCount, D = s.dimensions
        var found: [StreamWindow] = []
        for f in 0..<s.frameCount {
            let points = (0..<J).map { j -> PosePoint? in
                let i = f * J + j, c = i * D
                guard s.present[i] != 0 else { return nil }
                return PosePoint(x: s.coordinates[c], y: s.coordinates[c + 1], z: D == 3 ? s.coordinates[c + 2] : 0, confidence: s.confidence?[i])
            }
            found += try session.push(joints: points, time: s.timestamps?[f] ?? Double(f) / frameRate!)
        }
        found += session.finish()
        var es = found.compactMap { detector.add(probabilities: $0.probabilities, start: $0.startTime, end: $0.endTime) }
        if let e = detector.finish() { es.append(e) }
        write(windows: found, events: es, who: ("\"sequence\": \(PredictCommand.json(s.id))", s.id), out: &out)
        for w in session.statistics.firstWarnings { out.note("warning: sequence '\(s.id)': \(session.statistics.count(w.kind)) x \(w)\n") }
    }

    func sessionOptions(_ options: PredictCommand.Options) throws -> StreamOptions {
        var o = StreamOptions(stride: options.stride ?? StreamOptions.standard(for: model).stride, strict: options.reading.strict)
        if let c = options.reading.minConfidence { o.minimumConfidence = Float(c) }
        return o
    }

    func summary(_ s: StreamStatistics, of what: String) -> String {
        "predict: \(s.frames) frames from \(what), \(windows) windows, \(events) events\n" + EventFlags.warnings(s)
    }

    /// Parses one frame line: its time, person (0 when absent) and points.
    static func frame(_ line: String, dimensions D: Int, at place: String) throws -> (Double, Int, [String: PosePoint]) {
        func bad(_ why: String) -> CLIError { CLIError.failure("\(place): \(why); expected {\"t\": 1.033, \"person\": 2, \"pose\": {\"leftWrist\": [x, y, c], ...}}") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { throw bad("not a JSON object") }
        guard let t = (object["t"] as? NSNumber)?.doubleValue else { throw bad("no time \"t\" in seconds") }
        var person = 0
        if let p = object["person"], !(p is NSNull) {
            guard let n = p as? NSNumber, let k = Int(exactly: n.doubleValue) else { throw bad("\"person\" must be an integer track id") }
            person = k
        }
        var points: [String: PosePoint] = [:]
        if let pose = object["pose"], !(pose is NSNull) {
            guard let joints = pose as? [String: Any] else { throw bad("\"pose\" must be an object of joint name to [x, y(, z)(, confidence)]") }
            for (name, value) in joints where !(value is NSNull) {
                guard let v = (value as? [NSNumber])?.map({ $0.floatValue }), v.count == D || v.count == D + 1 else {
                    throw bad("joint '\(name)' must be \(D == 2 ? "[x, y] or [x, y, confidence]" : "[x, y, z] or [x, y, z, confidence]")")
                }
                points[name] = PosePoint(x: v[0], y: v[1], z: D == 3 ? v[2] : 0, confidence: v.count > D ? v[D] : nil)
            }
        }
        return (t, person, points)
    }
}
