import Foundation

/// Typed command-line options in the shape of swift-argument-parser: each command has a
/// struct of its values (`CommandOptions`), and each option and positional is declared once,
/// with its help, bound to a key path of that struct. Code reads `options.stride`, never a
/// name: a misspelt or undeclared option does not compile.

/// The values of one command's arguments, with their defaults.
protocol CommandOptions {
    init()
    /// Cross-option checks and ranges, after parsing (usage errors).
    func validate() throws
}

extension CommandOptions {
    func validate() throws {}
}

/// A type an option or positional value converts to.
protocol ArgumentValue {
    init?(argument: String)
    /// What a usage error says the option expects, e.g. "an integer".
    static var expectation: String { get }
    /// A valid value, for the tests that parse every option.
    static var sample: String { get }
}

extension String: ArgumentValue {
    init?(argument: String) { self = argument }
    static var expectation: String { "a value" }
    static var sample: String { "sample" }
}

extension Int: ArgumentValue {
    init?(argument: String) { self.init(argument) }
    static var expectation: String { "an integer" }
    static var sample: String { "7" }
}

extension UInt64: ArgumentValue {
    init?(argument: String) { self.init(argument) }
    static var expectation: String { "an integer" }
    static var sample: String { "7" }
}

extension Double: ArgumentValue {
    init?(argument: String) { self.init(argument) }
    static var expectation: String { "a number" }
    static var sample: String { "0.125" }
}

/// A comma-separated list of positive integers, e.g. `2,3,5`.
struct PositiveIntegers: ArgumentValue {
    var values: [Int]

    init?(argument: String) {
        let items = argument.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !items.isEmpty, items.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
        values = items.map { $0! }
    }
    static var expectation: String { "positive integers separated by commas" }
    static var sample: String { "1,4" }
}

/// A closed set of choices, e.g. `enum Format: String, ArgumentChoice { case jsonl, table }`.
protocol ArgumentChoice: ArgumentValue, CaseIterable, RawRepresentable where RawValue == String {}

extension ArgumentChoice {
    init?(argument: String) { self.init(rawValue: argument) }
    static var choices: [String] { allCases.map(\.rawValue) }
    /// "jsonl or table", "a, b or c".
    static var expectation: String {
        choices.count < 2 ? choices.joined() : choices.dropLast().joined(separator: ", ") + " or " + choices.last!
    }
    static var sample: String { choices.last! }
}

/// `--name`, `--name VALUE` or `--name=VALUE`, bound to a property of `Values`.
///
/// `@unchecked Sendable`, so that specs can be `static let`s: it is never changed after it is
/// built, and `apply` captures only key paths and constants, nothing mutable (closures and key
/// paths are not `Sendable` to the compiler).
struct Option<Values>: @unchecked Sendable {
    /// Long name without dashes, e.g. `epochs`.
    let name: String
    /// Value placeholder, e.g. `N`; nil for a flag that takes no value.
    let value: String?
    let help: String
    /// May be given several times (values are collected in order).
    var repeatable = false
    /// A valid value (nil for a flag), for the tests that parse every option.
    let sample: String?
    /// Stores one given value (the empty string for a flag).
    let apply: (inout Values, String) throws -> Void

    init(name: String, value: String?, help: String, repeatable: Bool = false, sample: String?, apply: @escaping (inout Values, String) throws -> Void) {
        self.name = name
        self.value = value
        self.help = help
        self.repeatable = repeatable
        self.sample = sample
        self.apply = apply
    }

    /// A flag: `--name` sets the property to true.
    init(_ name: String, _ keyPath: WritableKeyPath<Values, Bool>, help: String) {
        self.init(name: name, value: nil, help: help, sample: nil) { v, _ in v[keyPath: keyPath] = true }
    }

    /// An option with a value; absent it leaves the property nil.
    init<T: ArgumentValue>(_ name: String, _ keyPath: WritableKeyPath<Values, T?>, value: String, help: String) {
        self.init(name: name, value: value, help: help, sample: T.sample) { v, raw in v[keyPath: keyPath] = try Self.convert(raw, name) }
    }

    /// An option with a value; absent it leaves the property's default.
    init<T: ArgumentValue>(_ name: String, _ keyPath: WritableKeyPath<Values, T>, value: String, help: String) {
        self.init(name: name, value: value, help: help, sample: T.sample) { v, raw in v[keyPath: keyPath] = try Self.convert(raw, name) }
    }

    /// An option that may be repeated; its values are collected in order.
    init<T: ArgumentValue>(_ name: String, _ keyPath: WritableKeyPath<Values, [T]>, value: String, help: String) {
        self.init(name: name, value: value, help: help, repeatable: true, sample: T.sample) { v, raw in
            v[keyPath: keyPath].append(try Self.convert(raw, name))
        }
    }

    static func convert<T: ArgumentValue>(_ raw: String, _ name: String) throws -> T {
        guard let v = T(argument: raw) else {
            if T.self is any ArgumentChoice.Type { throw CLIError.usage("--\(name) must be \(T.expectation), got '\(raw)'") }
            throw CLIError.usage("--\(name) expects \(T.expectation), got '\(raw)'")
        }
        return v
    }

    /// This option inside a larger set of values (an option group such as the gate's).
    func within<Outer>(_ keyPath: WritableKeyPath<Outer, Values>) -> Option<Outer> {
        let apply = self.apply
        return Option<Outer>(name: name, value: value, help: help, repeatable: repeatable, sample: sample) { v, raw in
            try apply(&v[keyPath: keyPath], raw)
        }
    }
}

/// A positional argument bound to a property of `Values`.
///
/// `@unchecked Sendable`, so that specs can be `static let`s: it is never changed after it is
/// built, and `apply` captures only key paths and constants, nothing mutable (closures and key
/// paths are not `Sendable` to the compiler).
struct Positional<Values>: @unchecked Sendable {
    let name: String
    let help: String
    var optional = false
    /// Takes every remaining argument (only the last positional).
    var variadic = false
    let apply: (inout Values, String) -> Void

    init(_ name: String, _ keyPath: WritableKeyPath<Values, String>, help: String) {
        (self.name, self.help) = (name, help)
        apply = { v, raw in v[keyPath: keyPath] = raw }
    }

    init(_ name: String, _ keyPath: WritableKeyPath<Values, String?>, help: String) {
        (self.name, self.help, optional) = (name, help, true)
        apply = { v, raw in v[keyPath: keyPath] = raw }
    }

    init(_ name: String, _ keyPath: WritableKeyPath<Values, [String]>, help: String) {
        (self.name, self.help, variadic) = (name, help, true)
        apply = { v, raw in v[keyPath: keyPath].append(raw) }
    }
}
