import Foundation
import PoseCore

/// A JSON value that keeps integers exact (seeds are 64-bit) and tells booleans from numbers.
/// Files people write (configs, grids) are read by `JSONDocument`, which refuses a key given
/// twice and keeps `8.0` a number that is not an integer (`init(_:)`).
enum JSONValue: Codable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The first number in the value (nested too) that is NaN or infinite, or nil.
    var firstNonFinite: Double? {
        switch self {
        case .double(let d): return d.isFinite ? nil : d
        case .array(let items): return items.lazy.compactMap(\.firstNonFinite).first
        case .object(let fields): return fields.keys.sorted().lazy.compactMap { fields[$0]?.firstNonFinite }.first
        default: return nil
        }
    }

    /// A document's value (an object's keys are distinct there).
    init(_ v: JSONDocument.Value) {
        switch v {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let n): self = .int(n)
        case .uint(let n): self = .uint(n)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map(JSONValue.init))
        case .object(let members): self = .object(Dictionary(members.map { ($0.key, JSONValue($0.value)) }, uniquingKeysWith: { a, _ in a }))
        }
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let v = try? c.decode(Bool.self) {
            self = .bool(v)
        } else if let v = try? c.decode(Int.self) {
            self = .int(v)
        } else if let v = try? c.decode(UInt64.self) {
            self = .uint(v)
        } else if let v = try? c.decode(Double.self) {
            self = .double(v)
        } else if let v = try? c.decode(String.self) {
            self = .string(v)
        } else if let v = try? c.decode([JSONValue].self) {
            self = .array(v)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let v): try c.encode(v)
        case .int(let v): try c.encode(v)
        case .uint(let v): try c.encode(v)
        case .double(let v): try c.encode(v)
        case .string(let v): try c.encode(v)
        case .array(let v): try c.encode(v)
        case .object(let v): try c.encode(v)
        }
    }

    var number: Double? {
        switch self {
        case .int(let v): return Double(v)
        case .uint(let v): return Double(v)
        case .double(let v): return v
        default: return nil
        }
    }

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let v): return "\(v)"
        case .int(let v): return "\(v)"
        case .uint(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .string(let v): return "\"\(v)\""
        case .array: return "a list"
        case .object: return "an object"
        }
    }
}
