import Foundation
import PoseCore

/// The UEA/UCR multivariate `.ts` text format (sktime/aeon), as used by NATOPS.
///
/// Header lines start with `@` (`@problemName`, `@missing`, `@dimensions`, `@equalLength`,
/// `@seriesLength`, `@classLabel true <labels...>`, `@timeStamps`), `#` lines are comments,
/// and after `@data` each line is one case: the dimensions separated by `:`, each a
/// comma-separated series in time order, then the class label. Dimensions are grouped as
/// joints with `skeleton.dimensions` coordinates each (`x, y, z` of joint 0, then joint 1, ...).
/// A `?` or `NaN` value marks the joint absent in that frame. Cases may differ in length
/// (`@equalLength false`); the dimensions of one case must have the same length.
public enum UEAFormat {
    /// NATOPS's class names (SOURCE.md: 1 "I have command" ... 6 "Lock wings") for the
    /// archive's labels "1.0" ... "6.0", as `actiontrain import natops` applies them.
    public static let natopsLabelNames = [
        "1.0": "i-have-command", "2.0": "all-clear", "3.0": "not-clear", "4.0": "spread-wings", "5.0": "fold-wings",
        "6.0": "lock-wings",
    ]

    public struct Options: Sendable {
        /// The skeleton; default NATOPS's for the NATOPS problem, else one 2D "joint" per pair
        /// of channels (`channel0`, ...), unitless.
        public var skeleton: Skeleton?
        /// The split of every case; default from the file name (`_TRAIN` / `_TEST`).
        public var split: String?
        /// Renames labels (e.g. NATOPS's "1.0" to "i-have-command"); the class order stays the
        /// file's `@classLabel` order.
        public var labelNames: [String: String] = [:]

        public init(skeleton: Skeleton? = nil, split: String? = nil, labelNames: [String: String] = [:]) {
            self.skeleton = skeleton
            self.split = split
            self.labelNames = labelNames
        }
    }

    /// Reads a `.ts` file.
    public static func read(_ path: String, options: Options = Options()) throws -> Dataset {
        var reader = UEAReader(file: path, options: options)
        let endsWithNewline = try LineSplitter.forEachLine(ofFile: path) { line, number in try reader.consume(line, number) }
        return try reader.finish(endsWithNewline: endsWithNewline)
    }

    /// Compatibility spelling of `read(_:options:)`.
    public static func read(_ path: String, skeleton: Skeleton?, split: String? = nil) throws -> Dataset {
        try read(path, options: Options(skeleton: skeleton, split: split))
    }

    /// Parses `.ts` text held in memory (tests, fuzzing).
    public static func parse(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> Dataset {
        var reader = UEAReader(file: file, options: options)
        try bytes.withUnsafeBufferPointer { b in
            try LineSplitter.forEachLine(in: b, file: file) { line, number in try reader.consume(line, number) }
        }
        return try reader.finish(endsWithNewline: bytes.last == 0x0A)
    }
}

struct UEAReader {
    let file: String
    let options: Options
    typealias Options = UEAFormat.Options
    var problem = ""
    var classLabels: [String]?
    var declaredDimensions: Int?
    var missingAllowed = true
    var inData = false
    var lastLine = 0
    var skeleton: Skeleton?
    var sequences: [PoseSequence] = []
    var series: [[Float]] = []  // per dimension, reused
    var missing: [[Bool]] = []
    /// A case that did not read, held until the next line shows it was not the file's
    /// unterminated last line (then the file was cut short in it, which `finish` says).
    var failedCase: (error: Error, line: Int)?

    init(file: String, options: Options) {
        self.file = file
        self.options = options
    }

    var fileStem: String { URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent }

    mutating func consume(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        lastLine = number
        guard let p = line.baseAddress else { return }
        var s = 0, e = line.count
        while s < e && (p[s] == 0x20 || p[s] == 0x09) { s += 1 }
        while e > s && (p[e - 1] == 0x20 || p[e - 1] == 0x09 || p[e - 1] == 0x0D) { e -= 1 }
        if s == e || p[s] == UInt8(ascii: "#") { return }
        if let failedCase { throw failedCase.error }
        if !inData {
            let text = String(decoding: UnsafeBufferPointer(start: p + s, count: e - s), as: UTF8.self)
            try header(text, number)
            return
        }
        do { try dataLine(p, s, e, number) } catch { failedCase = (error, number) }
    }

    private mutating func header(_ text: String, _ number: Int) throws {
        let at = SourceLocation(file: file, line: number)
        guard text.hasPrefix("@") else {
            throw DatasetError.syntax(at, expected: "a header line starting with '@' or '#' before @data (is this a .ts file?)")
        }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        func flag() throws -> Bool {
            guard parts.count >= 2, ["true", "false"].contains(parts[1].lowercased()) else {
                throw DatasetError.syntax(at, expected: "\(parts[0]) true or false")
            }
            return parts[1].lowercased() == "true"
        }
        switch parts[0].lowercased() {
        case "@problemname": problem = parts.dropFirst().joined(separator: " ")
        case "@missing": missingAllowed = try flag()
        case "@timestamps":
            if try flag() {
                throw DatasetError.invalidValue(
                    at, problem: "time-stamped .ts series are not supported", fix: "export the series without timestamps (equally spaced)")
            }
        case "@dimensions":
            guard parts.count >= 2, let d = Int(parts[1]), d > 0 else { throw DatasetError.syntax(at, expected: "@dimensions <positive integer>") }
            declaredDimensions = d
        case "@classlabel":
            if try flag() {
                let labels = Array(parts.dropFirst(2))
                guard !labels.isEmpty else { throw DatasetError.syntax(at, expected: "the class labels after @classLabel true") }
                classLabels = labels
            }
        case "@targetlabel":
            if try flag() {
                throw DatasetError.invalidValue(at, problem: "this is a regression problem (@targetLabel true)", fix: "actiontrain classifies; use a problem with class labels")
            }
        case "@data": inData = true
        default: break  // @univariate, @equalLength, @seriesLength: checked against the data
        }
    }

    private mutating func dataLine(_ p: UnsafePointer<UInt8>, _ s: Int, _ e: Int, _ number: Int) throws {
        let k = sequences.count
        let id = "\(fileStem)-\(k)"
        func at(column: Int? = nil) -> SourceLocation {
            SourceLocation(file: file, line: number, column: column, record: id)
        }
        // Split on ':' — the last field is the label.
        var fields: [(Int, Int)] = []
        var start = s
        for i in s..<e where p[i] == UInt8(ascii: ":") {
            fields.append((start, i))
            start = i + 1
        }
        fields.append((start, e))
        let hasLabel = classLabels != nil
        let dims = fields.count - (hasLabel ? 1 : 0)
        // (Not `columnCount`: its words are a CSV header's fields, delimiter and quoting.)
        let andLabel = hasLabel ? " and a class label" : ""
        if let declared = declaredDimensions, dims != declared {
            throw DatasetError.invalidValue(
                at(), problem: "\(dims) dimension(s)\(andLabel) separated by ':', but the header says @dimensions \(declared)",
                fix: "give every case \(declared) comma-separated series\(andLabel), separated by ':'")
        }
        if skeleton == nil { skeleton = try chooseSkeleton(dims: dims, at: at()) }
        let skeleton = skeleton!
        let J = skeleton.jointCount, D = skeleton.dimensions
        guard dims == J * D else {
            throw DatasetError.invalidValue(
                at(), problem: "\(dims) dimension(s), but skeleton '\(skeleton.name)' needs \(J * D) (\(J) joints x \(D) coordinates)",
                fix: "name a skeleton whose joints x dimensions = \(dims)")
        }
        var label: String? = nil
        if hasLabel {
            let (ls, le) = fields[dims]
            let raw = String(decoding: UnsafeBufferPointer(start: p + ls, count: le - ls), as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard classLabels!.contains(raw) else {
                throw DatasetError.labelNotInClasses(at(column: ls - s + 1), label: raw, classes: classLabels!)
            }
            label = options.labelNames[raw] ?? raw
        }
        if series.count != dims {
            series = Array(repeating: [], count: dims)
            missing = Array(repeating: [], count: dims)
        }
        var length = -1
        for c in 0..<dims {
            series[c].removeAll(keepingCapacity: true)
            missing[c].removeAll(keepingCapacity: true)
            let (fs, fe) = fields[c]
            var i = fs
            while true {
                var vs = i
                var ve = i
                while ve < fe && p[ve] != UInt8(ascii: ",") { ve += 1 }
                let next = ve
                while vs < ve && (p[vs] == 0x20 || p[vs] == 0x09) { vs += 1 }
                while ve > vs && (p[ve - 1] == 0x20 || p[ve - 1] == 0x09) { ve -= 1 }
                if (ve - vs == 1 && p[vs] == UInt8(ascii: "?")) || NumberParser.isNaNWord(p, vs, ve) {
                    guard missingAllowed else {
                        throw DatasetError.invalidValue(
                            at(column: vs - s + 1), problem: "a missing value in dimension \(c + 1), but the header says @missing false",
                            fix: "set @missing true or fill the value")
                    }
                    series[c].append(0)
                    missing[c].append(true)
                } else if let (v, end) = NumberParser.parseDouble(p, vs, ve), end == ve {
                    guard v.isFinite else { throw DatasetError.nonFinite(at(column: vs - s + 1), what: "a value of dimension \(c + 1)") }
                    guard abs(v) <= Double(PoseBounds.maxCoordinate) else { throw PoseBounds.outOfRange(v, at: at(column: vs - s + 1)) }
                    series[c].append(NumberParser.float(v, p, vs, ve))
                    missing[c].append(false)
                } else {
                    let text = String(decoding: UnsafeBufferPointer(start: p + vs, count: ve - vs), as: UTF8.self)
                    throw DatasetError.invalidValue(
                        at(column: vs - s + 1), problem: "dimension \(c + 1): '\(text)' is not a number",
                        fix: hasLabel || c < dims - 1 ? "write numbers, '?' for missing values" : "is the @classLabel header missing?")
                }
                if next >= fe { break }
                i = next + 1
            }
            if length < 0 { length = series[c].count }
            guard series[c].count == length else {
                throw DatasetError.invalidValue(
                    at(), problem: "dimension \(c + 1) has \(series[c].count) values, dimension 1 has \(length)",
                    fix: "give every dimension of a case the same length")
            }
        }
        guard length > 0 else {
            throw DatasetError.invalidValue(at(), problem: "the case has no values", fix: "remove the line")
        }
        var coords = [Float](repeating: 0, count: length * J * D)
        var present = [UInt8](repeating: 0, count: length * J)
        for t in 0..<length {
            for j in 0..<J {
                var seen = true
                for d in 0..<D where missing[j * D + d][t] { seen = false }
                guard seen else { continue }
                for d in 0..<D { coords[(t * J + j) * D + d] = series[j * D + d][t] }
                present[t * J + j] = 1
            }
        }
        let split = options.split ?? (fileStem.uppercased().hasSuffix("_TRAIN") ? "train" : fileStem.uppercased().hasSuffix("_TEST") ? "test" : nil)
        sequences.append(
            PoseSequence(
                id: id, label: label, split: split, jointCount: J, dimensions: D, frameCount: length, coordinates: coords,
                present: present))
    }

    private func chooseSkeleton(dims: Int, at: SourceLocation) throws -> Skeleton {
        if let s = options.skeleton { return s }
        if problem.uppercased() == "NATOPS" { return .natops }
        guard dims % 2 == 0 else {
            throw DatasetError.invalidValue(
                at, problem: "\(dims) dimensions do not group into 2D joints", fix: "name a skeleton schema whose joints x dimensions = \(dims)")
        }
        return Skeleton(
            name: "\(problem.isEmpty ? "uea" : problem)-\(dims / 2)", joints: (0..<(dims / 2)).map { "channel\($0)" },
            dimensions: 2, units: .unitless)
    }

    func finish(endsWithNewline: Bool) throws -> Dataset {
        if let failedCase {
            guard !endsWithNewline else { throw failedCase.error }
            var what = "the last case"
            if case .invalidValue(_, let problem, _) = failedCase.error as? DatasetError { what += " (\(problem))" }
            throw DatasetError.truncated(SourceLocation(file: file, line: failedCase.line, record: "\(fileStem)-\(sequences.count)"), what: what)
        }
        guard inData else {
            throw DatasetError.syntax(SourceLocation(file: file, line: max(lastLine, 1)), expected: "an @data line (is this a .ts file?)")
        }
        guard !sequences.isEmpty else { throw DatasetError.empty(file: file) }
        return Dataset(
            name: problem.isEmpty ? fileStem : problem, skeleton: skeleton!, sequences: sequences,
            classes: classLabels.map { $0.map { options.labelNames[$0] ?? $0 } },
            frameRate: problem.uppercased() == "NATOPS" ? 20 : nil)
    }
}
