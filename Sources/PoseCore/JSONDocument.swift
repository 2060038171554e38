/// A JSON document read as it is written, for the files people write by hand (training
/// configs, sweep grids): RFC 8259 with three checks Foundation's `JSONDecoder` does not make.
///
/// - Every object's keys are distinct: a repeated key is an error naming it and where it is
///   (`JSONDecoder` keeps one of the two silently, as model headers refuse, format.md 1.3).
/// - A number keeps the type of its spelling: `8` is an integer, `8.0` and `8e0` are not (an
///   integer option given `8.0` is then refused, not silently taken as 8); an integer beyond
///   `UInt64` is a floating-point number.
/// - Strings are well-formed UTF-8 (a lone surrogate escape is refused), nesting is at most
///   `maximumDepth` levels, and the document is at most `maximumBytes` long.
///
/// Pure Swift (no Foundation), so that every module and the fuzz targets can use it.
public enum JSONDocument {
    public static let maximumDepth = 64
    public static let maximumBytes = 16 << 20

    public indirect enum Value: Equatable, Sendable {
        case null
        case bool(Bool)
        case int(Int)
        /// An integer above `Int.max` (a 64-bit seed).
        case uint(UInt64)
        case double(Double)
        case string(String)
        case array([Value])
        /// The members in the document's order (their keys distinct).
        case object([Member])
    }

    /// The object's value for `key`, if it has one.
    public static func member(_ key: String, of members: [Member]) -> Value? { members.first { $0.key == key }?.value }

    public struct Member: Equatable, Sendable {
        public var key: String
        public var value: Value

        public init(key: String, value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// A value as compact JSON text (a number as Swift writes it: `1e+30`; a number JSON cannot
    /// hold, ±infinity, as `null`), for messages and for decoders that take JSON.
    public static func text(_ v: Value) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let n): return String(n)
        case .uint(let n): return String(n)
        case .double(let d): return d.isFinite ? "\(d)" : "null"
        case .string(let s): return JSONText.quote(s)
        case .array(let a): return "[" + a.map(text).joined(separator: ", ") + "]"
        case .object(let m): return "{" + m.map { JSONText.quote($0.key) + ": " + text($0.value) }.joined(separator: ", ") + "}"
        }
    }

    /// What is wrong, at a 1-based line and column (in bytes) of the document.
    public struct SyntaxError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var column: Int
        public var reason: String

        public var description: String { "line \(line), column \(column): \(reason)" }
    }

    /// Parses a whole document: one value, then only whitespace.
    public static func parse(_ bytes: [UInt8]) throws -> Value {
        try bytes.withUnsafeBufferPointer { b in
            var p = Parser(bytes: b)
            guard b.count <= maximumBytes else { throw p.error(at: 0, "the document is \(b.count) bytes, more than the \(maximumBytes) a hand-written file may take") }
            if b.count >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF { p.i = 3 }  // a UTF-8 byte order mark
            let v = try p.value(depth: 0, path: "")
            p.skipSpace()
            guard p.i == b.count else { throw p.error(at: p.i, "expected the end of the document after its value") }
            return v
        }
    }

    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        func error(at offset: Int, _ reason: String) -> SyntaxError {
            var line = 1, start = 0
            for k in 0..<min(offset, bytes.count) where bytes[k] == 0x0A {
                line += 1
                start = k + 1
            }
            return SyntaxError(line: line, column: offset - start + 1, reason: reason)
        }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func take(_ c: UInt8) -> Bool {
            skipSpace()
            guard i < bytes.count, bytes[i] == c else { return false }
            i += 1
            return true
        }

        mutating func expect(_ c: UInt8, _ what: String) throws {
            guard take(c) else { throw error(at: i, "expected \(what)") }
        }

        /// `path` names where the value is (`grid.learningRate`, `candidates[2]`; empty: the top).
        mutating func value(depth: Int, path: String) throws -> Value {
            skipSpace()
            guard i < bytes.count else { throw error(at: i, "expected a value") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                guard depth < JSONDocument.maximumDepth else { throw error(at: i, "nested more than \(JSONDocument.maximumDepth) levels") }
                i += 1
                var members: [Member] = [], keys = Set<String>()
                if take(UInt8(ascii: "}")) { return .object(members) }
                repeat {
                    skipSpace()
                    let at = i
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error(at: i, "expected a key in double quotes") }
                    let key = try string()
                    guard keys.insert(key).inserted else {
                        throw error(at: at, "the key \"\(key)\" appears twice in \(path.isEmpty ? "the object" : path); give each key once")
                    }
                    try expect(UInt8(ascii: ":"), "':' after the key")
                    members.append(Member(key: key, value: try value(depth: depth + 1, path: path.isEmpty ? key : "\(path).\(key)")))
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "}"), "',' or '}' in the object")
                return .object(members)
            case UInt8(ascii: "["):
                guard depth < JSONDocument.maximumDepth else { throw error(at: i, "nested more than \(JSONDocument.maximumDepth) levels") }
                i += 1
                var elements: [Value] = []
                if take(UInt8(ascii: "]")) { return .array(elements) }
                repeat {
                    elements.append(try value(depth: depth + 1, path: "\(path)[\(elements.count)]"))
                } while take(UInt8(ascii: ","))
                try expect(UInt8(ascii: "]"), "',' or ']' in the list")
                return .array(elements)
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
                return try number()
            }
        }

        mutating func word(_ w: StaticString) throws {
            let n = w.utf8CodeUnitCount
            guard bytes.count - i >= n, (0..<n).allSatisfy({ bytes[i + $0] == w.utf8Start[$0] }) else {
                throw error(at: i, "expected a value (an object, list, string, number, true, false or null)")
            }
            i += n
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, typed by its spelling.
        mutating func number() throws -> Value {
            let start = i
            var integral = true
            func digits(_ p: inout Parser) -> Int {
                let s = p.i
                while p.i < p.bytes.count, p.bytes[p.i] >= UInt8(ascii: "0"), p.bytes[p.i] <= UInt8(ascii: "9") { p.i += 1 }
                return p.i - s
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            let bad = "expected a value (an object, list, string, number, true, false or null)"
            guard i < bytes.count else { throw error(at: start, bad) }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                guard digits(&self) > 0 else { throw error(at: start, bad) }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                integral = false
                guard digits(&self) > 0 else { throw error(at: i, "expected digits after the decimal point") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                integral = false
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw error(at: i, "expected the exponent's digits") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            if integral {
                if let n = Int(text) { return .int(n) }
                if let n = UInt64(text) { return .uint(n) }
            }
            guard let d = Double(text) else { throw error(at: start, "expected a number") }
            return .double(d)  // finite or ±infinity for a huge exponent: the reader's checks refuse it
        }

        /// A string at `i` (its opening quote): escapes resolved, well-formed UTF-8 required.
        mutating func string() throws -> String {
            let open = i
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                switch b {
                case UInt8(ascii: "\""):
                    let s = String(decoding: out, as: UTF8.self)
                    guard s.utf8.elementsEqual(out) else { throw error(at: open, "the string is not well-formed UTF-8") }
                    return s
                case UInt8(ascii: "\\"):
                    guard i < bytes.count else { break }
                    let e = bytes[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard bytes.count - i >= 2, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                                throw error(at: i, "expected a low surrogate \\uDC00-\\uDFFF after a high one")
                            }
                            i += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw error(at: i - 4, "expected a low surrogate \\uDC00-\\uDFFF") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { throw error(at: i - 4, "a lone surrogate escape is no character") }
                        out.append(contentsOf: UTF8.encode(u)!)
                    default:
                        throw error(at: i - 2, "an unknown escape \\\(Unicode.Scalar(e))")
                    }
                default:
                    guard b >= 0x20 else { throw error(at: i - 1, "a control character in a string; escape it (\\n, \\t, \\u0000)") }
                    out.append(b)
                }
            }
            throw error(at: open, "expected the string's closing '\"'")
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - i >= 4 else { throw error(at: i, "expected 4 hexadecimal digits after \\u") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[i]
                let d: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
                default: throw error(at: i, "expected 4 hexadecimal digits after \\u")
                }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }
    }
}
