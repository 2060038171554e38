import Foundation
import PoseCore

// The live-stream input of `actiontrain predict - --stream` (docs/streaming.md, "The line
// format"): a byte stream cut into bounded lines (`LineReader`), each line one frame of one
// person (`StreamLine`). Both are pure: what a bad line costs is decided by their caller, which
// counts it and goes on (the CLI), and the fuzz target `fuzz/StreamLine` drives them together
// with a `TrackedStream`.

/// Cuts a byte stream (standard input, a socket) into lines as the bytes arrive, holding at
/// most one chunk plus one line of at most `maximumLength` bytes: a longer line is skipped up
/// to its newline and reported by its length only, so one endless line cannot exhaust memory.
///
/// A line ends at `\n` (a `\r` before it is dropped). The last line may lack its newline (the
/// writer stopped mid-line): it is returned with `terminated` false. Lines are numbered from 1.
public struct LineReader {
    /// One line: its bytes, or nil when it was longer than the limit (then only `length` is known).
    public struct Line: Equatable, Sendable {
        public var number: Int
        public var bytes: [UInt8]?
        /// Bytes in the line, without its newline (for a skipped line, all of them).
        public var length: Int
        /// False for a last line the input ended in the middle of.
        public var terminated: Bool

        /// True when the line holds only spaces, tabs and carriage returns.
        public var isBlank: Bool {
            guard let bytes else { return false }
            return bytes.withUnsafeBufferPointer { LineSplitter.isBlank($0) }
        }
    }

    /// The longest line kept (nil: no limit).
    public let maximumLength: Int?
    /// Fills the buffer with the next bytes and returns how many (0 at the end of the input).
    private let read: (UnsafeMutableRawBufferPointer) throws -> Int
    private var chunk: [UInt8]
    private var start = 0, end = 0
    private var finished = false
    private var number = 0

    /// `read` fills its buffer and returns the byte count, 0 at the end of the input (it may
    /// return fewer bytes than asked, e.g. what a pipe holds); `chunkSize` is the most asked at once.
    public init(maximumLength: Int?, chunkSize: Int = 1 << 16, read: @escaping (UnsafeMutableRawBufferPointer) throws -> Int) {
        precondition(chunkSize > 0 && (maximumLength ?? 0) >= 0, "chunk size and limit")
        self.maximumLength = maximumLength
        self.read = read
        chunk = [UInt8](repeating: 0, count: chunkSize)
    }

    /// The next line, or nil at the end of the input. Calls `read` only when the bytes held do
    /// not finish a line, so a line is returned as soon as its newline has arrived.
    public mutating func next() throws -> Line? {
        var line: [UInt8]? = []
        var length = 0, sawBytes = false
        while true {
            if start == end {
                if finished { break }
                let n = try chunk.withUnsafeMutableBytes { try read($0) }
                guard n > 0 else {
                    finished = true
                    break
                }
                (start, end) = (0, min(n, chunk.count))
            }
            sawBytes = true
            let newline: Int? = chunk.withUnsafeBufferPointer { b in
                memchr(b.baseAddress! + start, 0x0A, end - start).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - b.baseAddress! }
            }
            let stop = newline ?? end
            keep(start..<stop, into: &line, length: &length)
            start = newline.map { $0 + 1 } ?? end
            if newline != nil {
                if line?.last == 0x0D { line!.removeLast() }
                number += 1
                return Line(number: number, bytes: line, length: length, terminated: true)
            }
        }
        guard sawBytes else { return nil }
        number += 1
        return Line(number: number, bytes: line, length: length, terminated: false)
    }

    /// Appends `chunk[range]` to the line, or only counts it once the line is over the limit.
    private func keep(_ range: Range<Int>, into line: inout [UInt8]?, length: inout Int) {
        length += range.count
        if let m = maximumLength, length > m {
            line = nil
        } else if line != nil {
            line!.append(contentsOf: chunk[range])
        }
    }
}

/// One frame of one person, as a line of a live stream:
///
///     {"t": 1.033, "person": 2, "pose": {"leftWrist": [412.5, 300.1, 0.92], "root": [398.0, 420.2]}}
///
/// `t` is the time in seconds (required), `person` the track id (an integer or a string; absent
/// or null: 0; `"track"`, the dataset file's spelling, is read the same; `PersonID(parsing:)`
/// makes `"7"` and `7` one person, and a string id must be well-formed UTF-8),
/// `pose` the points by joint name as `[x, y]` or `[x, y, confidence]` (`[x, y, z]` or
/// `[x, y, z, confidence]` in 3D); a null point is not seen, an absent, null or empty pose is a
/// frame with nobody in view. Instead of `person` and `pose`, a line may hold a frame of several
/// people as a dataset file's frame does: `"people": [{"track": 1, "pose": {...}}, ...]` (each
/// with `track` or `person`, absent: its position in the list from 0; an id twice is an
/// error). Other keys are ignored. Numbers may also be `NaN`, `Infinity` or
/// `-Infinity`, as Python's `json` writes them: a session takes such a joint as absent and
/// such a time as going backwards (docs/streaming.md). Names are not checked here: the session
/// resolves them against the model's skeleton.
public struct StreamLine: Equatable, Sendable {
    /// One person of a `people` line.
    public struct Person: Equatable, Sendable {
        public var id: PersonID
        public var points: [String: PosePoint]

        public init(id: PersonID, points: [String: PosePoint]) {
            self.id = id
            self.points = points
        }
    }

    /// The longest line a stream reads (1 MiB, about a thousand people's poses); a longer one is
    /// skipped with a warning.
    public static let maximumBytes = 1 << 20
    /// The line format, for messages.
    public static let example = #"{"t": 1.033, "person": 2, "pose": {"leftWrist": [x, y, c], ...}}"#

    public var time: Double
    /// A line of one person: the person and their points (for a `people` line, 0 and none).
    public var person: PersonID
    public var points: [String: PosePoint]
    /// A `people` line: everyone in the frame, in the line's order (possibly nobody); nil for a
    /// line of one person.
    public var people: [Person]?

    public init(time: Double, person: PersonID = 0, points: [String: PosePoint], people: [Person]? = nil) {
        self.time = time
        self.person = person
        self.points = points
        self.people = people
    }

    /// Everyone the line gives: its `people`, or its one person.
    public var persons: [Person] { people ?? [Person(id: person, points: points)] }

    /// Parses one line for a skeleton of `dimensions` (2 or 3). Throws `StreamLineError` naming
    /// the column and what is wrong.
    public static func parse(_ bytes: [UInt8], dimensions D: Int) throws -> StreamLine {
        precondition(D == 2 || D == 3, "2 or 3 dimensions")
        return try bytes.withUnsafeBufferPointer { b in
            var s = JSONScanner(b)
            do {
                return try parse(&s, dimensions: D)
            } catch let e as JSONSyntaxError {
                throw StreamLineError(column: e.offset + 1, reason: "expected \(e.expected)")
            }
        }
    }

    private static func parse(_ s: inout JSONScanner, dimensions D: Int) throws -> StreamLine {
        func bad(_ at: Int, _ why: String) -> StreamLineError { StreamLineError(column: at + 1, reason: why) }
        try s.expect(UInt8(ascii: "{"), "a JSON object")
        var time: Double?, person: PersonID?, points: [String: PosePoint]?, people: [Person]?
        var seen = Set<String>()
        if !s.take(UInt8(ascii: "}")) {
            repeat {
                s.skipSpace()
                let keyAt = s.i
                let key = try s.string()
                guard seen.insert(key).inserted else { throw bad(keyAt, "the key \"\(key)\" appears twice") }
                try s.expect(UInt8(ascii: ":"), "':' after the key")
                s.skipSpace()
                let at = s.i
                switch key {
                case "t":
                    guard let t = try number(&s) else { throw bad(at, "the time \"t\" must be a number of seconds") }
                    time = t
                case "person", "track":
                    guard !seen.contains(key == "person" ? "track" : "person") else {
                        throw bad(keyAt, "\"person\" and \"track\" both name the person; give one of them")
                    }
                    person = try id(&s, key: key)
                case "pose":
                    if try null(&s) { break }
                    points = try pose(&s, dimensions: D)
                case "people":
                    people = try self.people(&s, dimensions: D)
                default:
                    try s.skipValue(depth: 1)
                }
            } while s.take(UInt8(ascii: ","))
            try s.expect(UInt8(ascii: "}"), "',' or '}' in the object")
        }
        s.skipSpace()
        guard s.i == s.end else { throw bad(s.i, "the end of the line after the object") }
        guard let time else { throw bad(0, "no time \"t\" in seconds") }
        if people != nil, let one = ["person", "track", "pose"].first(where: seen.contains) {
            throw bad(0, "\"people\" gives everyone in the frame, so \"\(one)\" does not go with it; give \"people\" or \"person\" and \"pose\"")
        }
        return StreamLine(time: time, person: person ?? 0, points: points ?? [:], people: people)
    }

    /// A person id after `key`: null (nil), an integer below `PersonID.integerLimit` in
    /// magnitude, or a well-formed UTF-8 string (`PersonID(parsing:)`).
    private static func id(_ s: inout JSONScanner, key: String) throws -> PersonID? {
        s.skipSpace()
        let at = s.i
        if try null(&s) { return nil }
        if s.i < s.end && s.p[s.i] == UInt8(ascii: "\"") {
            guard let text = try s.wellFormedString() else {
                throw StreamLineError(column: at + 1, reason: "the \"\(key)\" id is not well-formed UTF-8")
            }
            return PersonID(parsing: text)
        }
        guard let n = try number(&s), n.rounded() == n, abs(n) < Double(PersonID.integerLimit) else {
            throw StreamLineError(column: at + 1, reason: "\"\(key)\" must be a track id: an integer (below 10^15 in magnitude) or a string")
        }
        return .number(Int(n))
    }

    /// `[{"track": id, "pose": {...}}, ...]` (or `"person"`); the scanner is at the `[`.
    private static func people(_ s: inout JSONScanner, dimensions D: Int) throws -> [Person] {
        let shape = "\"people\" must be a list of {\"track\": id, \"pose\": {...}}"
        guard s.take(UInt8(ascii: "[")) else { throw StreamLineError(column: s.i + 1, reason: shape) }
        var out: [Person] = [], ids = Set<PersonID>()
        if s.take(UInt8(ascii: "]")) { return out }
        repeat {
            s.skipSpace()
            let at = s.i
            guard s.take(UInt8(ascii: "{")) else { throw StreamLineError(column: at + 1, reason: shape) }
            var id: PersonID?, points: [String: PosePoint]?, seen = Set<String>()
            if !s.take(UInt8(ascii: "}")) {
                repeat {
                    s.skipSpace()
                    let keyAt = s.i
                    let key = try s.string()
                    guard seen.insert(key).inserted else { throw StreamLineError(column: keyAt + 1, reason: "the key \"\(key)\" appears twice") }
                    try s.expect(UInt8(ascii: ":"), "':' after the key")
                    switch key {
                    case "person", "track":
                        guard !seen.contains(key == "person" ? "track" : "person") else {
                            throw StreamLineError(column: keyAt + 1, reason: "\"person\" and \"track\" both name the person; give one of them")
                        }
                        id = try self.id(&s, key: key)
                    case "pose":
                        s.skipSpace()
                        points = try null(&s) ? [:] : try pose(&s, dimensions: D)
                    default:
                        try s.skipValue(depth: 2)
                    }
                } while s.take(UInt8(ascii: ","))
                try s.expect(UInt8(ascii: "}"), "',' or '}' in the person")
            }
            guard let points else { throw StreamLineError(column: at + 1, reason: "person \(out.count + 1) of \"people\" has no \"pose\"") }
            let person = id ?? .number(out.count)
            guard ids.insert(person).inserted else {
                throw StreamLineError(column: at + 1, reason: "person \(person) appears twice in \"people\"; give each person of a frame an id of their own")
            }
            out.append(Person(id: person, points: points))
        } while s.take(UInt8(ascii: ","))
        try s.expect(UInt8(ascii: "]"), "',' or ']' in \"people\"")
        return out
    }

    /// `{"name": [x, y(, z)(, c)] or null, ...}`; the scanner is at the `{`.
    private static func pose(_ s: inout JSONScanner, dimensions D: Int) throws -> [String: PosePoint] {
        let shape = D == 2 ? "[x, y] or [x, y, confidence]" : "[x, y, z] or [x, y, z, confidence]"
        guard s.i < s.end && s.p[s.i] == UInt8(ascii: "{") else {
            throw StreamLineError(column: s.i + 1, reason: "\"pose\" must be an object of joint name to \(shape)")
        }
        s.i += 1
        var points: [String: PosePoint] = [:]
        if s.take(UInt8(ascii: "}")) { return points }
        var values = [Double](repeating: 0, count: 4)
        repeat {
            s.skipSpace()
            let nameAt = s.i
            let name = try s.string()
            try s.expect(UInt8(ascii: ":"), "':' after the joint name")
            s.skipSpace()
            let at = s.i
            func bad() -> StreamLineError { StreamLineError(column: at + 1, reason: "joint '\(name)' must be \(shape)") }
            if try null(&s) { continue }
            guard s.take(UInt8(ascii: "[")) else { throw bad() }
            var count = 0
            if !s.take(UInt8(ascii: "]")) {
                repeat {
                    guard count <= D, let v = try number(&s) else { throw bad() }
                    values[count] = v
                    count += 1
                } while s.take(UInt8(ascii: ","))
                guard s.take(UInt8(ascii: "]")) else { throw bad() }
            }
            guard count == D || count == D + 1 else { throw bad() }
            let point = PosePoint(
                x: float(values[0]), y: float(values[1]), z: D == 3 ? float(values[2]) : 0, confidence: count > D ? float(values[D]) : nil)
            guard points.updateValue(point, forKey: name) == nil else {
                throw StreamLineError(column: nameAt + 1, reason: "joint '\(name)' appears twice")
            }
        } while s.take(UInt8(ascii: ","))
        try s.expect(UInt8(ascii: "}"), "',' or '}' in the pose")
        return points
    }

    /// A number, or `NaN`, `Infinity`, `-Infinity` (Python's spellings); nil (cursor unmoved)
    /// when something else is next.
    private static func number(_ s: inout JSONScanner) throws -> Double? {
        s.skipSpace()
        guard s.i < s.end else { return nil }
        switch s.p[s.i] {
        case UInt8(ascii: "N"): return s.match("NaN") ? .nan : nil
        case UInt8(ascii: "I"): return s.match("Infinity") ? .infinity : nil
        case UInt8(ascii: "-") where s.i + 1 < s.end && s.p[s.i + 1] == UInt8(ascii: "I"): return s.match("-Infinity") ? -.infinity : nil
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "0")...UInt8(ascii: "9"): return try s.number()
        default: return nil
        }
    }

    /// Consumes `null` if it is next.
    private static func null(_ s: inout JSONScanner) throws -> Bool { s.match("null") }

    /// A coordinate or confidence as Float: a finite value beyond Float's range becomes the
    /// largest finite Float of its sign (still out of any coordinate range), never infinity.
    private static func float(_ v: Double) -> Float {
        guard v.isFinite else { return Float(v) }
        return Float(min(max(v, -Double(Float.greatestFiniteMagnitude)), Double(Float.greatestFiniteMagnitude)))
    }
}

/// What is wrong with a stream line, at a 1-based byte column.
public struct StreamLineError: Error, Equatable, CustomStringConvertible {
    public let column: Int
    public let reason: String

    public init(column: Int, reason: String) {
        self.column = column
        self.reason = reason
    }

    public var description: String { "column \(column): \(reason)" }
}

extension JSONScanner {
    /// Consumes the ASCII word `w` if the text continues with it.
    mutating func match(_ w: StaticString) -> Bool {
        let n = w.utf8CodeUnitCount
        guard end - i >= n, memcmp(p + i, w.utf8Start, n) == 0 else { return false }
        i += n
        return true
    }
}
