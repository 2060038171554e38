/// A person's (or animal's) id in a live stream: an integer or a string, as the pose source
/// gives it (`"person": 2` or `"person": "a"` in a stream line, a dataset's `"track"`). Ids
/// order integers first (by value), then strings (by code points).
public enum PersonID: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByStringLiteral
{
    case number(Int)
    case name(String)

    public init(integerLiteral value: Int) { self = .number(value) }
    public init(stringLiteral value: String) { self = .name(value) }

    public var description: String {
        switch self {
        case .number(let n): return String(n)
        case .name(let s): return s
        }
    }

    /// As JSON: `2` or `"a"`.
    public var json: String {
        switch self {
        case .number(let n): return String(n)
        case .name(let s): return JSONText.quote(s)
        }
    }

    public static func < (a: PersonID, b: PersonID) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x < y
        case (.number, .name): return true
        case (.name, .number): return false
        case (.name(let x), .name(let y)): return Array(x.unicodeScalars.map(\.value)).lexicographicallyPrecedes(y.unicodeScalars.map(\.value))
        }
    }
}
