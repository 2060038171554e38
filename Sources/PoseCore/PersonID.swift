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

    /// Integer ids are below this in magnitude (as readers take a track id, in a float64).
    public static let integerLimit = 1_000_000_000_000_000

    /// The one rule for an id given as a string, live and offline: a string that spells an
    /// integer id as JSON writes it (`"7"`, `"-3"`; not `"07"`, `"+7"` or `"7.0"`) is that
    /// integer, so that `"person": "7"` and `"person": 7` (and a file's `"track": "7"` and
    /// `"track": 7`) are one person; any other string is a name.
    public init(parsing text: String) {
        if let n = Int(text), abs(n) < Self.integerLimit, String(n) == text { self = .number(n) } else { self = .name(text) }
    }

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
