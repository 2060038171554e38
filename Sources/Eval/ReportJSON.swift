import Foundation
import PoseCore

/// One per-sample prediction as stored in the JSON report (labels by name, so that reports of
/// models with the same classes in another order still pair up).
struct PredictionRow: Codable {
    var sequence: String
    var start: Int?
    var windows: Int?
    var truth: String
    var predicted: String
    var probabilities: [Float]

    enum CodingKeys: String, CodingKey {
        case sequence, start, windows, predicted, probabilities
        case truth = "true"
    }
}

extension EvalReport: Codable {
    enum CodingKeys: String, CodingKey {
        case schema, schemaVersion, tool, model, data, classes, settings, headline, headlineReason, window, sequence
        case predictions, events
    }

    enum PredictionKeys: String, CodingKey { case window, sequence }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schema = try c.decode(String.self, forKey: .schema)
        schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
        tool = try c.decode(String.self, forKey: .tool)
        model = try c.decode(ModelInfo.self, forKey: .model)
        data = try c.decode(DataInfo.self, forKey: .data)
        classes = try c.decode([String].self, forKey: .classes)
        settings = try c.decode(EvalSettings.self, forKey: .settings)
        headline = try c.decode(Level.self, forKey: .headline)
        headlineReason = try c.decode(String.self, forKey: .headlineReason)
        window = try c.decode(LevelMetrics.self, forKey: .window)
        sequence = try c.decodeIfPresent(LevelMetrics.self, forKey: .sequence)
        events = try c.decodeIfPresent(EventMetrics.self, forKey: .events)
        if c.contains(.predictions) {
            let p = try c.nestedContainer(keyedBy: PredictionKeys.self, forKey: .predictions)
            let w = try Self.table(try p.decode([PredictionRow].self, forKey: .window), classes: classes, level: .window)
            let s = try p.decodeIfPresent([PredictionRow].self, forKey: .sequence).map {
                try Self.table($0, classes: classes, level: .sequence)
            }
            predictions = Predictions(window: w, sequence: s)
        }
        try validateShapes()
    }

    /// A decoded report must be internally consistent, so that no renderer or comparison can
    /// index out of range on a hand-edited file.
    func validateShapes() throws {
        func bad(_ why: String) -> EvalError { .mismatchedSamples(why) }
        let K = classes.count
        guard K > 0 else { throw bad("the class list is empty") }
        guard Set(classes).count == K else { throw bad("the class list has duplicates") }
        guard metrics(headline) != nil else { throw bad("the headline level '\(headline.rawValue)' has no metrics") }
        for m in [window, sequence].compactMap({ $0 }) {
            let name = m.level.rawValue
            guard m.classes.map(\.label) == classes else { throw bad("\(name).classes do not match the class list") }
            let n = m.confusionNormalized
            for (what, matrix) in [
                ("confusion", m.confusion.map { $0.map(Double.init) }), ("overTrue", n.overTrue),
                ("overPredicted", n.overPredicted), ("overAll", n.overAll),
            ]
            where matrix.count != K || matrix.contains(where: { $0.count != K }) {
                throw bad("\(name).\(what) is not \(K)x\(K)")
            }
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(tool, forKey: .tool)
        try c.encode(model, forKey: .model)
        try c.encode(data, forKey: .data)
        try c.encode(classes, forKey: .classes)
        try c.encode(settings, forKey: .settings)
        try c.encode(headline, forKey: .headline)
        try c.encode(headlineReason, forKey: .headlineReason)
        try c.encode(window, forKey: .window)
        try c.encodeIfPresent(sequence, forKey: .sequence)
        try c.encodeIfPresent(events, forKey: .events)
        if let predictions {
            var p = c.nestedContainer(keyedBy: PredictionKeys.self, forKey: .predictions)
            try p.encode(Self.rows(predictions.window, classes: classes), forKey: .window)
            try p.encodeIfPresent(predictions.sequence.map { Self.rows($0, classes: classes) }, forKey: .sequence)
        }
    }

    static func rows(_ t: PredictionTable, classes: [String]) -> [PredictionRow] {
        let K = classes.count
        return (0..<t.count).map { i in
            PredictionRow(
                sequence: t.sequence[i], start: t.start?[i], windows: t.windows?[i], truth: classes[Int(t.truth[i])],
                predicted: classes[Int(t.predicted[i])], probabilities: Array(t.probabilities[(i * K)..<((i + 1) * K)]))
        }
    }

    static func table(_ rows: [PredictionRow], classes: [String], level: Level) throws -> PredictionTable {
        var index: [String: Int32] = [:]
        for (i, c) in classes.enumerated() { index[c] = Int32(i) }
        let K = classes.count
        var truth: [Int32] = [], predicted: [Int32] = [], probabilities: [Float] = []
        truth.reserveCapacity(rows.count)
        predicted.reserveCapacity(rows.count)
        probabilities.reserveCapacity(rows.count * K)
        for (i, r) in rows.enumerated() {
            guard let t = index[r.truth], let p = index[r.predicted] else {
                let bad = index[r.truth] == nil ? r.truth : r.predicted
                throw EvalError.mismatchedSamples("\(level.rawValue) prediction \(i) has label '\(bad)', which is not among the report's classes")
            }
            guard r.probabilities.count == K else {
                throw EvalError.mismatchedSamples("\(level.rawValue) prediction \(i) has \(r.probabilities.count) probabilities for \(K) classes")
            }
            guard level == .sequence || r.start != nil else {
                throw EvalError.mismatchedSamples("window prediction \(i) has no \"start\"")
            }
            truth.append(t)
            predicted.append(p)
            probabilities += r.probabilities
        }
        return PredictionTable(
            sequence: rows.map(\.sequence), start: level == .window ? rows.map { $0.start ?? 0 } : nil,
            windows: level == .sequence ? rows.map { $0.windows ?? 1 } : nil, truth: truth, predicted: predicted,
            probabilities: probabilities, classes: K)
    }
}

/// Reads and writes the JSON report (schema `actiontrain.eval`, docs/reports.md).
public enum ReportJSON {
    /// The report as pretty-printed JSON with sorted keys. The per-sample predictions (most
    /// of the bytes) are written by hand, one compact object per line: Foundation's encoder
    /// takes ~0.5 s for 100,000 rows, this ~0.1 s. The output decodes to the same report.
    public static func encode(_ report: EvalReport) throws -> Data {
        var head = report
        head.predictions = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var text = String(decoding: try encoder.encode(head), as: UTF8.self)
        guard let predictions = report.predictions else { return Data((text + "\n").utf8) }
        while let last = text.last, last != "}" { text.removeLast() }
        text.removeLast()
        while let last = text.last, last.isWhitespace { text.removeLast() }
        let labels = report.classes.map(Text.json)
        var out = text
        out.reserveCapacity(text.utf8.count + predictions.window.count * (60 + 12 * report.classes.count))
        out += ",\n  \"predictions\" : {\n"
        if let s = predictions.sequence {
            out += "    \"sequence\" : [\n"
            appendRows(s, labels: labels, to: &out)
            out += "    ],\n"
        }
        out += "    \"window\" : [\n"
        appendRows(predictions.window, labels: labels, to: &out)
        out += "    ]\n  }\n}\n"
        return Data(out.utf8)
    }

    static func appendRows(_ t: PredictionTable, labels: [String], to out: inout String) {
        let K = t.classCount
        var lastSequence = "", lastEscaped = ""
        for i in 0..<t.count {
            if t.sequence[i] != lastSequence {
                lastSequence = t.sequence[i]
                lastEscaped = Text.json(lastSequence)
            }
            out += "      {\"predicted\":" + labels[Int(t.predicted[i])] + ",\"probabilities\":["
            for k in 0..<K {
                if k > 0 { out += "," }
                out += t.probabilities[i * K + k].description
            }
            out += "],\"sequence\":" + lastEscaped
            if let s = t.start { out += ",\"start\":" + String(s[i]) }
            out += ",\"true\":" + labels[Int(t.truth[i])]
            if let w = t.windows { out += ",\"windows\":" + String(w[i]) }
            out += i + 1 < t.count ? "},\n" : "}\n"
        }
    }

    /// Reads a report file; every failure names the file and says what it expected.
    public static func read(_ path: String) throws -> EvalReport {
        var folder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &folder) else {
            throw EvalError.badReport(file: path, reason: "no such file; check the path")
        }
        guard !folder.boolValue else { throw EvalError.badReport(file: path, reason: "is a folder; pass the report.json in it") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EvalError.badReport(file: path, reason: "cannot read the report; check the path")
        }
        return try decode(data, file: path)
    }

    public static func decode(_ data: Data, file: String) throws -> EvalReport {
        /// The identifying keys only, each read leniently so that any JSON object decodes.
        struct Head: Decodable {
            struct Legacy: Decodable { var counts: [[Int]] }
            var schema: String?, schemaVersion: Int?, confusion: Legacy?
            enum CodingKeys: String, CodingKey { case schema, schemaVersion, confusion }
            init(from decoder: Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                schema = try? c.decode(String.self, forKey: .schema)
                schemaVersion = try? c.decode(Int.self, forKey: .schemaVersion)
                confusion = try? c.decode(Legacy.self, forKey: .confusion)
            }
        }
        let head: Head
        do {
            head = try JSONDecoder().decode(Head.self, from: data)
        } catch {
            throw EvalError.badReport(file: file, reason: notJSON([UInt8](data)) ?? "is not a JSON object (\(summary(error))); pass \(expected)")
        }
        guard head.schema == EvalReport.schema, let version = head.schemaVersion else {
            if head.schema == nil && head.confusion != nil {
                throw EvalError.badReport(
                    file: file,
                    reason: "is an old classification report without per-sample predictions; evaluate the model again for a report with per-sample predictions")
            }
            throw EvalError.badReport(
                file: file, reason: "is not an actiontrain evaluation report (no \"schema\": \"\(EvalReport.schema)\")")
        }
        guard version <= EvalReport.schemaVersion, version >= 1 else {
            throw EvalError.unsupportedSchema(file: file, version: version)
        }
        do {
            return try JSONDecoder().decode(EvalReport.self, from: data)
        } catch let e as EvalError {
            throw EvalError.badReport(file: file, reason: e.description)
        } catch {
            throw EvalError.badReport(
                file: file, reason: "does not match schema \(EvalReport.schema) \(version): \(summary(error))")
        }
    }

    /// What a report argument should be, as the errors say.
    static let expected = "a report.json written by 'actiontrain eval'"

    /// What a file that is no JSON object is, when it can be told: empty, a model file or a
    /// checkpoint, a dataset (JSON Lines), JSON that ends early (a copy cut short), or the line
    /// and column of its first syntax error. Nil for a file too large for `JSONDocument`.
    static func notJSON(_ bytes: [UInt8]) -> String? {
        let space: Set<UInt8> = [0x20, 0x0A, 0x0D, 0x09]
        if bytes.allSatisfy(space.contains) { return "is empty; pass \(expected)" }
        for (magic, what) in [("ATM", "an actiontrain model file"), ("ATC", "a training checkpoint")] where bytes.starts(with: [0x89] + Array(magic.utf8)) {
            return "is \(what), not a report; pass \(expected)"
        }
        let firstLine = bytes.prefix { $0 != 0x0A }
        if case .object(let members)? = try? JSONDocument.parse(Array(firstLine)), JSONDocument.member("actiontrain", of: members) == .string("poses") {
            return "is a dataset (JSON Lines), not a report; pass \(expected)"
        }
        guard bytes.count <= JSONDocument.maximumBytes else { return nil }
        do {
            _ = try JSONDocument.parse(bytes)
            return nil
        } catch let e as JSONDocument.SyntaxError {
            // A syntax error at the end of the text (or in the whitespace after it) is a cut.
            let end = bytes.count - bytes.reversed().prefix(while: space.contains).count
            let newlines = bytes.indices.filter { bytes[$0] == 0x0A }
            let lineStart = e.line == 1 ? 0 : newlines[e.line - 2] + 1
            if lineStart + e.column - 1 >= end {
                return "ends in the middle of its JSON (line \(e.line), column \(e.column)): the file is cut short; copy it again or let eval write it again"
            }
            return "is not valid JSON (\(e)); pass \(expected)"
        } catch {
            return nil
        }
    }

    /// A one-line account of a decoding error: what and where.
    static func summary(_ error: Error) -> String {
        func path(_ c: DecodingError.Context) -> String {
            let p = c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "at the top level" : "at \(p.hasPrefix(".") ? String(p.dropFirst()) : p)"
        }
        guard let e = error as? DecodingError else { return String(describing: error) }
        switch e {
        case .keyNotFound(let key, let c): return "missing key '\(key.stringValue)' \(path(c))"
        case .typeMismatch(let type, let c): return "expected \(type) \(path(c))"
        case .valueNotFound(let type, let c): return "null where \(type) was expected \(path(c))"
        case .dataCorrupted(let c):
            let underlying = (c.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return "invalid data \(path(c))" + (underlying.map { ": \($0)" } ?? "")
        @unknown default: return String(describing: e)
        }
    }
}
