import Foundation
import PoseCore

// Byte-level building blocks shared by the text readers (native JSON Lines, CSV, UEA `.ts`,
// UTKinect): exact decimal parsing, a chunked line reader with bounded memory, and a small
// JSON value parser for headers, schema and mapping files. Nothing here allocates per number.

/// Decimal number parsing on raw bytes.
///
/// Results are correctly rounded: the common case (at most 2^53 in the significand and a
/// decimal exponent within ±22) is Clinger's exact fast path `m · 10^e` in Double; anything
/// else goes through the standard library's correctly rounded `Double(String)`. `float(...)`
/// converts that Double to Float and falls back to `Float(String)` when the value lies within
/// one Double ulp of a Float rounding boundary, so that double rounding can never change the
/// result: a Float written with Swift's shortest representation always reads back bit-exact.
enum NumberParser {
    /// 10^k for 0 ≤ k ≤ 22, all exact in Double (a switch the compiler turns into a table).
    @inline(__always)
    static func powerOfTen(_ k: Int) -> Double {
        switch k {
        case 0: return 1e0
        case 1: return 1e1
        case 2: return 1e2
        case 3: return 1e3
        case 4: return 1e4
        case 5: return 1e5
        case 6: return 1e6
        case 7: return 1e7
        case 8: return 1e8
        case 9: return 1e9
        case 10: return 1e10
        case 11: return 1e11
        case 12: return 1e12
        case 13: return 1e13
        case 14: return 1e14
        case 15: return 1e15
        case 16: return 1e16
        case 17: return 1e17
        case 18: return 1e18
        case 19: return 1e19
        case 20: return 1e20
        case 21: return 1e21
        default: return 1e22
        }
    }

    /// Parses `[-+]digits[.digits][(e|E)[-+]digits]` (or `.digits`) starting at `p[start]`, not
    /// beyond `end`. Returns the value and the index after the number, or nil when no complete
    /// number starts there. Never reads outside `p[start..<end]`.
    @inline(__always)
    static func parseDouble(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> (value: Double, next: Int)? {
        var i = start
        var negative = false
        if i < end {
            if p[i] == UInt8(ascii: "-") {
                negative = true
                i += 1
            } else if p[i] == UInt8(ascii: "+") {
                i += 1
            }
        }
        var m: UInt64 = 0
        var e10 = 0
        var exact = true
        var sawDigit = false
        while i < end {
            let d = p[i] &- 48
            if d > 9 { break }
            sawDigit = true
            if m < 100_000_000_000_000_000 { m = m &* 10 &+ UInt64(d) } else { e10 += 1; exact = false }
            i += 1
        }
        if i < end && p[i] == UInt8(ascii: ".") {
            i += 1
            while i < end {
                let d = p[i] &- 48
                if d > 9 { break }
                sawDigit = true
                if m < 100_000_000_000_000_000 {
                    m = m &* 10 &+ UInt64(d)
                    e10 -= 1
                } else {
                    exact = false
                }
                i += 1
            }
        }
        guard sawDigit else { return nil }
        if i < end && (p[i] | 0x20) == UInt8(ascii: "e") {
            var j = i + 1
            var expNegative = false
            if j < end && (p[j] == UInt8(ascii: "-") || p[j] == UInt8(ascii: "+")) {
                expNegative = p[j] == UInt8(ascii: "-")
                j += 1
            }
            var e = 0
            var sawExpDigit = false
            while j < end {
                let d = p[j] &- 48
                if d > 9 { break }
                sawExpDigit = true
                if e < 100_000 { e = e * 10 + Int(d) }
                j += 1
            }
            guard sawExpDigit else { return nil }
            e10 += expNegative ? -e : e
            i = j
        }
        if m == 0 { return (negative ? -0.0 : 0.0, i) }
        if exact && m <= (1 << 53) && e10 >= -22 && e10 <= 22 {
            var v = Double(m)
            v = e10 >= 0 ? v * powerOfTen(e10) : v / powerOfTen(-e10)
            return (negative ? -v : v, i)
        }
        return (slowDouble(p, start, i), i)
    }

    /// The correctly rounded Float nearest to the decimal at `p[start..<next]` whose Double
    /// value is `d` (see the type's note on double rounding).
    @inline(__always)
    static func float(_ d: Double, _ p: UnsafePointer<UInt8>, _ start: Int, _ next: Int) -> Float {
        // Rounding Double to Float drops the low 29 of the 52 mantissa bits. For a Float in
        // the normal range, `d` is within one Double ulp of a rounding boundary (a Float
        // midpoint) exactly when those bits are 0x10000000 ± 1; only then can the two-step
        // rounding differ from rounding the decimal directly.
        let bits = d.bitPattern
        let exponent = Int((bits >> 52) & 0x7FF)
        if exponent > 1023 - 126 && exponent < 1023 + 127 {
            let low = bits & 0x1FFF_FFFF
            if low &- 0x0FFF_FFFF > 2 { return Float(d) }
        } else if d == 0 || !d.isFinite {
            return Float(d)
        }
        return carefulFloat(d, p, start, next)
    }

    /// The general case of `float`: compare with the midpoint of the neighbouring Floats.
    static func carefulFloat(_ d: Double, _ p: UnsafePointer<UInt8>, _ start: Int, _ next: Int) -> Float {
        let f = Float(d)
        let df = Double(f)
        if df == d || !f.isFinite { return f }
        let other = d > df ? f.nextUp : f.nextDown
        let mid = (df + Double(other)) * 0.5
        if abs(d - mid) <= d.ulp {
            return Float(String(decoding: UnsafeBufferPointer(start: p + start, count: next - start), as: UTF8.self)) ?? f
        }
        return f
    }

    static func slowDouble(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Double {
        let s = String(decoding: UnsafeBufferPointer(start: p + start, count: end - start), as: UTF8.self)
        return Double(s) ?? .nan
    }

    /// True when `p[start..<end]` spells `nan` (any case), the way numpy, pandas and the UEA
    /// archive write a missing value.
    static func isNaNWord(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        end - start == 3 && (p[start] | 0x20) == UInt8(ascii: "n") && (p[start + 1] | 0x20) == UInt8(ascii: "a")
            && (p[start + 2] | 0x20) == UInt8(ascii: "n")
    }
}

/// Splits text into lines (`\n`, with a trailing `\r` removed) with 1-based line numbers,
/// either from memory or streamed from a file in fixed chunks, so that reading a file of any
/// size holds at most one chunk plus the longest line.
enum LineSplitter {
    /// Calls `body(line, number)` for every line of `bytes`, including a last line without
    /// a newline. `endsWithNewline` tells the body whether the text's last line was complete.
    ///
    /// With `file` (text datasets), the text is checked as UTF-8: a byte-order mark at the
    /// start of line 1 is skipped, and a line that is not valid UTF-8 throws an error naming
    /// the file, line and column.
    static func forEachLine(
        in bytes: UnsafeBufferPointer<UInt8>, firstLine: Int = 1, file: String? = nil,
        _ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Void
    ) throws {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        var start = 0
        var number = firstLine
        let n = bytes.count
        if file != nil && firstLine == 1 && n >= 3 && base[0] == 0xEF && base[1] == 0xBB && base[2] == 0xBF { start = 3 }
        while start < n {
            let rest = UnsafeRawPointer(base + start)
            let found = memchr(rest, 0x0A, n - start)
            let stop = found.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? n
            var lineEnd = stop
            if lineEnd > start && base[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if let file, let bad = UTF8Check.firstInvalid(base + start, lineEnd - start) {
                throw DatasetError.invalidValue(
                    SourceLocation(file: file, line: number, column: bad + 1),
                    problem: String(format: "the text is not valid UTF-8 (byte 0x%02X)", base[start + bad]),
                    fix: "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)")
            }
            try body(UnsafeBufferPointer(start: base + start, count: lineEnd - start), number)
            number += 1
            start = stop + 1
        }
    }

    /// Streams the file at `path` line by line (see `forEachLine(in:)`). Returns whether the
    /// file ended with a newline (false for an empty file).
    @discardableResult
    static func forEachLine(
        ofFile path: String, chunkSize: Int = 1 << 22,
        _ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Void
    ) throws -> Bool {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw DatasetError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: max(chunkSize, 16))
        var filled = 0  // bytes of buffer holding unprocessed data
        var lineNumber = 1
        var lastByte: UInt8 = 0
        var sawAny = false
        while true {
            if filled == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }  // a very long line
            let got = buffer.withUnsafeMutableBytes { raw -> Int in
                while true {
                    let r = read(fd, raw.baseAddress! + filled, raw.count - filled)
                    if r < 0 && errno == EINTR { continue }
                    return r
                }
            }
            guard got >= 0 else { throw DatasetError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
            if got > 0 {
                sawAny = true
                lastByte = buffer[filled + got - 1]
            }
            let available = filled + got
            let atEnd = got == 0
            // Process complete lines; keep the incomplete tail for the next read.
            var consumed = 0
            try buffer.withUnsafeBufferPointer { all in
                let base = all.baseAddress!
                var complete = available
                if !atEnd {
                    // Last newline in the data: everything after it is an incomplete line.
                    var k = available - 1
                    while k >= 0 && base[k] != 0x0A { k -= 1 }
                    complete = k + 1
                }
                if complete > 0 {
                    var lines = 0
                    try forEachLine(in: UnsafeBufferPointer(start: base, count: complete), firstLine: lineNumber, file: path) { line, number in
                        lines += 1
                        try body(line, number)
                    }
                    lineNumber += lines
                }
                consumed = complete
            }
            if atEnd { break }
            if consumed > 0 {
                let tail = available - consumed
                if tail > 0 {
                    buffer.withUnsafeMutableBufferPointer { b in
                        _ = memmove(b.baseAddress!, b.baseAddress! + consumed, tail)
                    }
                }
                filled = tail
            } else {
                filled = available
            }
        }
        return sawAny && lastByte == 0x0A
    }

    /// True when every byte is a space, tab or carriage return.
    @inline(__always)
    static func isBlank(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in line where b != 0x20 && b != 0x09 && b != 0x0D { return false }
        return true
    }
}

/// UTF-8 validation of raw text (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
enum UTF8Check {
    /// The offset of the first byte that does not belong to a valid UTF-8 sequence, or nil.
    /// ASCII text is checked eight bytes at a time.
    @inline(__always)
    static func firstInvalid(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int? {
        var i = 0
        while i + 8 <= n {
            if UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            i += 8
        }
        while i < n && p[i] < 0x80 { i += 1 }
        return i == n ? nil : slowCheck(p, i, n)
    }

    static func slowCheck(_ p: UnsafePointer<UInt8>, _ from: Int, _ n: Int) -> Int? {
        var i = from
        while i < n {
            let b = p[i]
            if b < 0x80 { i += 1; continue }
            let length: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF  // bounds of the second byte
            switch b {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F  // no surrogates
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F  // at most U+10FFFF
            default: return i
            }
            guard i + length <= n else { return i }
            guard p[i + 1] >= lower && p[i + 1] <= upper else { return i }
            for k in 2..<length where p[i + k] & 0xC0 != 0x80 { return i }
            i += length
        }
        return nil
    }
}

/// The largest coordinate magnitude any reader accepts (`PosePoint.maxCoordinate`, which says
/// why). Readers refuse a coordinate beyond it with the file, record and joint.
public enum PoseBounds {
    public static let maxCoordinate = PosePoint.maxCoordinate

    /// The error for a coordinate `value` beyond `maxCoordinate` at `at`.
    static func outOfRange(_ value: Double, at: SourceLocation) -> DatasetError {
        .invalidValue(
            at, problem: "the coordinate \(value) is beyond ±\(Int(maxCoordinate))",
            fix: "check the units and the writer (pose coordinates are pixels or metres)")
    }
}

/// A parsed JSON value, for headers, skeleton schemas and mapping files (small documents).
/// The per-frame data of the native format never goes through this type.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public var string: String? { if case .string(let s) = self { return s } else { return nil } }
    public var number: Double? { if case .number(let n) = self { return n } else { return nil } }
    public var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var object: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
    /// The value as an exact integer, if it is one.
    public var integer: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) < 9e15 else { return nil }
        return Int(n)
    }

    /// The value written compactly, for error messages.
    var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return n.rounded() == n && abs(n) < 1e15 ? String(Int(n)) : String(n)
        case .string(let s): return "\"\(s)\""
        case .array(let a): return "[" + a.map(\.text).joined(separator: ", ") + "]"
        case .object: return "{...}"
        }
    }

    /// A short name of the value's kind, for error messages.
    var kind: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// Parses one JSON document from `bytes`. Errors give the byte offset of the problem.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { b in
            var s = JSONScanner(b)
            let v = try s.value(depth: 0)
            s.skipSpace()
            guard s.i == s.end else { throw JSONSyntaxError(offset: s.i, expected: "the end of the document") }
            return v
        }
    }
}

extension JSONValue {
    /// Reads and parses a small JSON file (a skeleton schema, a CSV mapping). A syntax error
    /// names the file, line and column.
    static func parse(file path: String) throws -> JSONValue {
        var bytes = try DatasetLoader.contents(of: path)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }  // a UTF-8 byte-order mark
        do {
            return try parse(bytes)
        } catch let e as JSONSyntaxError {
            // 1-based line and column of the error's byte offset.
            var line = 1, lineStart = 0
            for k in 0..<min(e.offset, bytes.count) where bytes[k] == 0x0A {
                line += 1
                lineStart = k + 1
            }
            throw DatasetError.syntax(SourceLocation(file: path, line: line, column: e.offset - lineStart + 1), expected: e.expected)
        }
    }
}

/// Where and what a JSON syntax error is: `offset` is a byte index into the parsed text.
struct JSONSyntaxError: Error, Equatable {
    let offset: Int
    let expected: String
}

/// A cursor over JSON text. `i` only moves forward and never passes `end`.
struct JSONScanner {
    let p: UnsafePointer<UInt8>
    let end: Int
    var i: Int
    static let maxDepth = 64

    init(_ b: UnsafeBufferPointer<UInt8>) {
        // An empty buffer may have a nil base address; point at a static byte instead.
        p = b.baseAddress ?? UnsafePointer(JSONScanner.emptyByte)
        end = b.count
        i = 0
    }

    /// `nonisolated(unsafe)`: allocated once, holds 0 and is never written (nor read: an empty
    /// buffer's `end` is 0).
    nonisolated(unsafe) private static let emptyByte: UnsafeMutablePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        p.pointee = 0
        return p
    }()

    @inline(__always)
    mutating func skipSpace() {
        while i < end {
            let c = p[i]
            if c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A { i += 1 } else { return }
        }
    }

    @inline(__always)
    func fail(_ expected: String) -> JSONSyntaxError { JSONSyntaxError(offset: i, expected: expected) }

    /// Consumes `c` after optional whitespace.
    @inline(__always)
    mutating func expect(_ c: UInt8, _ what: String) throws {
        skipSpace()
        guard i < end && p[i] == c else { throw fail(what) }
        i += 1
    }

    /// After optional whitespace, consumes `c` if it is next.
    @inline(__always)
    mutating func take(_ c: UInt8) -> Bool {
        skipSpace()
        if i < end && p[i] == c {
            i += 1
            return true
        }
        return false
    }

    /// A string's raw bytes (between the quotes) when it has no escapes, else its decoded
    /// value. The cursor must be at the opening quote (after whitespace).
    mutating func rawString() throws -> (start: Int, count: Int, decoded: String?) {
        skipSpace()
        guard i < end && p[i] == UInt8(ascii: "\"") else { throw fail("a string in double quotes") }
        i += 1
        let start = i
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return (start, i - 1 - start, nil)
            }
            if c == UInt8(ascii: "\\") {
                i = start
                return (start, 0, try decodeEscapedString())
            }
            if c < 0x20 { throw fail("a closing '\"' (control characters must be escaped)") }
            i += 1
        }
        throw fail("a closing '\"' before the end of the line")
    }

    /// A string value whose bytes are well-formed UTF-8 (escapes resolved), or nil when they
    /// are not: `string()` would repair them, so that two different ill-formed strings become
    /// one. The cursor must be at the opening quote, and is after the closing one either way.
    mutating func wellFormedString() throws -> String? {
        skipSpace()
        let open = i
        let value = try string()
        let raw = UnsafeBufferPointer(start: p + open + 1, count: i - open - 2)
        return String(decoding: raw, as: UTF8.self).utf8.elementsEqual(raw) ? value : nil
    }

    /// A string value as a Swift String. The cursor must be at the opening quote.
    mutating func string() throws -> String {
        let r = try rawString()
        if let d = r.decoded { return d }
        return String(decoding: UnsafeBufferPointer(start: p + r.start, count: r.count), as: UTF8.self)
    }

    /// Decodes a string with escapes; the cursor is just after the opening quote.
    private mutating func decodeEscapedString() throws -> String {
        var out: [UInt8] = []
        while i < end {
            let c = p[i]
            i += 1
            if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
            if c < 0x20 { i -= 1; throw fail("a closing '\"' (control characters must be escaped)") }
            if c != UInt8(ascii: "\\") {
                out.append(c)
                continue
            }
            guard i < end else { break }
            let e = p[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    // A surrogate pair: \uD83D\uDE00.
                    guard i + 1 < end, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u") else {
                        throw fail("a low surrogate \\uDC00-\\uDFFF after a high surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("a low surrogate \\uDC00-\\uDFFF") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("a valid \\u escape (not a lone surrogate)") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default:
                i -= 1
                throw fail("a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
            }
        }
        throw fail("a closing '\"' before the end of the line")
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= end else { throw fail("4 hex digits after \\u") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = p[i] | 0x20
            let d: UInt8
            if c >= 48 && c <= 57 { d = c - 48 } else if c >= 97 && c <= 102 { d = c - 87 } else { throw fail("4 hex digits after \\u") }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    /// A number (after whitespace). `what` names the value in the error.
    @inline(__always)
    mutating func number(_ what: String = "a number") throws -> Double {
        skipSpace()
        guard let (v, next) = NumberParser.parseDouble(p, i, end) else { throw fail(what) }
        i = next
        return v
    }

    /// Skips any value (used for keys this reader does not know).
    mutating func skipValue(depth: Int) throws {
        _ = try value(depth: depth)
    }

    /// Parses any value.
    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < JSONScanner.maxDepth else { throw fail("less deeply nested data (at most \(JSONScanner.maxDepth) levels)") }
        skipSpace()
        guard i < end else { throw fail("a value") }
        switch p[i] {
        case UInt8(ascii: "{"):
            i += 1
            var obj: [String: JSONValue] = [:]
            if take(UInt8(ascii: "}")) { return .object(obj) }
            repeat {
                let keyAt = i
                let key = try string()
                try expect(UInt8(ascii: ":"), "':' after the key")
                let v = try value(depth: depth + 1)
                guard obj.updateValue(v, forKey: key) == nil else {
                    throw JSONSyntaxError(offset: keyAt, expected: "each key once (\"\(key)\" is repeated)")
                }
            } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "}"), "',' or '}' in the object")
            return .object(obj)
        case UInt8(ascii: "["):
            i += 1
            var arr: [JSONValue] = []
            if take(UInt8(ascii: "]")) { return .array(arr) }
            repeat { arr.append(try value(depth: depth + 1)) } while take(UInt8(ascii: ","))
            try expect(UInt8(ascii: "]"), "',' or ']' in the array")
            return .array(arr)
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try word("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try word("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try word("null")
            return .null
        default:
            return .number(try number("a value (object, array, string, number, true, false or null)"))
        }
    }

    private mutating func word(_ w: StaticString) throws {
        let n = w.utf8CodeUnitCount
        guard i + n <= end, memcmp(p + i, w.utf8Start, n) == 0 else { throw fail("a value") }
        i += n
    }
}

extension Array {
    /// A copy with capacity equal to the count. Handing a reused scratch buffer to a
    /// sequence would keep its doubled capacity alive (and make the next `removeAll` copy).
    @inline(__always)
    func exactCopy() -> [Element] {
        withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: $0.baseAddress, count: $0.count)) }
    }
}
