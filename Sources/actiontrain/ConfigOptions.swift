import ActionTrain
import Datasets
import Foundation
import PoseCore

/// Config keys given as flags, each already checked against the table, by key.
struct ConfigFlags {
    var values: [String: JSONValue] = [:]
}

extension ConfigOptions {
    /// One flag per config key, storing its checked value in `ConfigFlags`.
    static let options: [Option<ConfigFlags>] = entries.map { e in
        Option(name: e.flag, value: e.value, help: e.help, sample: e.sample) { flags, raw in flags.values[e.key] = try flagValue(raw, e) }
    }

    /// Defaults, then the config file, then the flags. Unknown keys, wrong types and values
    /// out of range are one-line errors naming the key.
    static func resolve(file: String?, flags: ConfigFlags) throws -> TrainingConfig {
        try resolveGiven(file: file, flags: flags).config
    }

    /// `resolve(file:flags:)`, and the keys the user gave (in the file or as flags): the
    /// recipe chooses the others.
    static func resolveGiven(file: String?, flags: ConfigFlags) throws -> (config: TrainingConfig, given: Set<String>) {
        var dict: [String: JSONValue] = [:]
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError.failure("\(file): cannot read the config file; check the path")
            }
            dict = try fileValues(data, source: file)
        }
        let config = try resolve(base: TrainingConfig(), values: dict, flags: flags)
        return (config, Set(dict.keys).subtracting([peopleKey]).union(flags.values.keys))
    }

    /// The one key a config file may hold besides the training keys: how to read several
    /// people per frame (`--people`, which overrides it). `sweep` writes it into chosen.json so
    /// that `fit --config chosen.json` reads the data as the sweep did; it is not a key of
    /// `TrainingConfig` (a run's config.json does not hold it).
    static let peopleKey = "people"

    /// The `people` of the config file `file` (nil without a file or the key).
    static func people(file: String?) throws -> PeoplePolicy? {
        guard let file, let data = FileManager.default.contents(atPath: file) else { return nil }
        return people(try fileValues(data, source: file))
    }

    /// The `people` of checked config values.
    static func people(_ values: [String: JSONValue]) -> PeoplePolicy? {
        guard case .string(let s)? = values[peopleKey] else { return nil }
        return PeoplePolicy(argument: s)
    }

    /// `base` with `values` (already checked) and then the flags applied.
    static func resolve(base: TrainingConfig, values: [String: JSONValue], flags: ConfigFlags) throws -> TrainingConfig {
        var dict = try JSONDecoder().decode([String: JSONValue].self, from: JSONEncoder().encode(base))
        for (k, v) in values { dict[k] = v }
        for (k, v) in flags.values { dict[k] = v }
        let config: TrainingConfig
        do {
            config = try JSONDecoder().decode(TrainingConfig.self, from: JSONEncoder().encode(dict))
        } catch let DecodingError.dataCorrupted(ctx) {
            throw CLIError.failure("config key '\(ctx.codingPath.map(\.stringValue).joined(separator: "."))': \(ctx.debugDescription)")
        } catch let DecodingError.typeMismatch(_, ctx) {
            throw CLIError.failure("config key '\(ctx.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type")
        } catch {
            throw CLIError.failure("the config does not decode: \(error)")
        }
        do {
            try config.validate()
        } catch let e as TrainingError {
            throw CLIError.failure("\(e)")
        }
        return config
    }

    /// The keys of a config file, each checked against the table. Read by `JSONDocument`: a
    /// key given twice is refused (a decoder would keep one of them silently), and so is `8.0`
    /// for an integer key.
    static func fileValues(_ data: Data, source: String) throws -> [String: JSONValue] {
        let document: JSONDocument.Value
        do {
            document = try JSONDocument.parse(Array(data))
        } catch let e as JSONDocument.SyntaxError {
            throw CLIError.failure("\(source): not a JSON object of config keys (\(e))")
        }
        guard case .object(let members) = document else {
            throw CLIError.failure("\(source): not a JSON object of config keys (the file holds \(JSONValue(document)))")
        }
        return try fileValues(members, source: source)
    }

    /// The keys of a config object (already parsed: its keys distinct), each checked against the table.
    static func fileValues(_ members: [JSONDocument.Member], source: String) throws -> [String: JSONValue] {
        let object = Dictionary(members.map { ($0.key, JSONValue($0.value)) }, uniquingKeysWith: { a, _ in a })
        for (k, v) in object.sorted(by: { $0.key < $1.key }) {
            if k == peopleKey {
                guard case .string(let policy) = v, PeoplePolicy(argument: policy) != nil else {
                    throw CLIError.failure("\(source): config key 'people' expects \(PeoplePolicy.choices) (as --people), got \(v)")
                }
                continue
            }
            guard let e = entries.first(where: { $0.key == k }) else {
                let hint = ArgumentParser.suggestion(for: k, among: entries.map(\.key)).map { "; did you mean '\($0)'?" } ?? ""
                throw CLIError.failure("\(source): unknown config key '\(k)'\(hint)")
            }
            if let why = check(v, e) { throw CLIError.failure("\(source): config key '\(k)' \(why)") }
        }
        return object
    }

    /// Why a JSON value does not fit an entry, or nil when it does.
    static func check(_ v: JSONValue, _ e: Entry) -> String? {
        let wrong = "expects \(e.kind.expectation), got \(v)"
        func choice(_ s: String) -> String? {
            e.choices.isEmpty || e.choices.contains(s) ? nil : "must be one of \(e.choices.joined(separator: ", ")), got \"\(s)\""
        }
        // A number beyond double's range (1e400) reads as infinite; a seed is unsigned and
        // the other integer keys are Ints.
        if v.firstNonFinite != nil { return "expects finite numbers, got \(v) (a number beyond ±1.8e308 is infinite)" }
        switch (e.kind, v) {
        case (.int, .int(let i)) where i < 0 && e.key == "seed":
            return "expects an integer from 0 to \(UInt64.max), got \(i)"
        case (.int, .uint(let u)) where e.key != "seed":
            return "expects an integer of at most \(Int.max), got \(u)"
        case (.int, .int), (.int, .uint), (.number, .int), (.number, .uint), (.number, .double), (.bool, .bool):
            return nil
        case (.number, .null) where e.key == "frameRate":
            return nil
        case (.string, .string(let s)):
            return choice(s)
        case (.intList, .array(let items)):
            return items.allSatisfy { if case .int = $0 { return true } else { return false } } ? nil : wrong
        case (.numberList, .array(let items)):
            return items.allSatisfy { if case .int = $0 { return true } else if case .double = $0 { return true } else { return false } } ? nil : wrong
        case (.stringList, .array(let items)):
            for item in items {
                guard case .string(let s) = item else { return wrong }
                if let why = choice(s) { return why }
            }
            return nil
        case (.stringLists, .array(let lists)):
            for list in lists {
                guard case .array(let items) = list else { return wrong }
                for item in items {
                    guard case .string(let s) = item else { return wrong }
                    if let why = choice(s) { return why }
                }
            }
            return nil
        case (.members, .array(let items)):
            let architectures = names(TrainingConfig.Architecture.self), blocks = names(ChannelBlock.self)
            for (m, item) in items.enumerated() {
                guard case .object(let fields) = item else { return "member \(m + 1) must be an object {\"architecture\": ..., \"channels\": [...]}, got \(item)" }
                for k in fields.keys.sorted() where k != "architecture" && k != "channels" {
                    return "member \(m + 1) has an unknown key '\(k)'; a member takes architecture and channels (every other key is the run's)"
                }
                guard case .string(let a) = fields["architecture"] ?? .null, architectures.contains(a) else {
                    return "member \(m + 1) needs an architecture, one of \(architectures.joined(separator: ", ")), got \(fields["architecture"].map { "\($0)" } ?? "none")"
                }
                guard case .array(let list) = fields["channels"] ?? .null, !list.isEmpty else {
                    return "member \(m + 1) needs channels, a non-empty list of \(blocks.joined(separator: ", "))"
                }
                for b in list {
                    guard case .string(let name) = b, blocks.contains(name) else {
                        return "member \(m + 1): channel \(b) is not one of \(blocks.joined(separator: ", "))"
                    }
                }
            }
            return nil
        case (.classWeights, .string(let s)):
            return s == "none" || s == "balanced" ? nil : wrong
        case (.augmentation, .object(let fields)):
            let known = Set(AugmentationConfig.keyNames)
            for (k, v) in fields.sorted(by: { $0.key < $1.key }) {
                guard known.contains(k) else {
                    let hint = ArgumentParser.suggestion(for: k, among: Array(known)).map { "; did you mean '\($0)'?" } ?? ""
                    return "has an unknown key '\(k)'\(hint)"
                }
                guard v.number != nil else { return "key '\(k)' expects a number, got \(v)" }
            }
            return nil
        case (.classWeights, .array(let items)):
            return items.allSatisfy { if case .string = $0 { return false } else { return $0.number != nil } } ? nil : wrong
        default:
            return wrong
        }
    }

    static func flagValue(_ raw: String, _ e: Entry) throws -> JSONValue {
        func bad(_ why: String? = nil) -> CLIError { .usage("--\(e.flag) \(why ?? "expects \(e.kind.expectation), got '\(raw)'")") }
        let items = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let value: JSONValue
        switch e.kind {
        case .int:
            if let v = Int(raw) { value = .int(v) } else if let v = UInt64(raw) { value = .uint(v) } else { throw bad() }
        case .number:
            guard let v = Double(raw), v.isFinite else { throw bad() }
            value = .double(v)
        case .string:
            value = .string(raw)
        case .bool:
            guard let v = Bool(raw) else { throw bad() }
            value = .bool(v)
        case .intList:
            let v = items.compactMap { Int($0) }
            guard v.count == items.count, !items.isEmpty else { throw bad() }
            value = .array(v.map { .int($0) })
        case .numberList:
            let v = items.compactMap { Double($0) }.filter(\.isFinite)
            guard v.count == items.count, !items.isEmpty else { throw bad() }
            value = .array(v.map { .double($0) })
        case .stringList:
            value = .array(items.map { .string($0) })
        case .stringLists:
            value = .array(items.map { .array($0.split(separator: "+").map { .string($0.trimmingCharacters(in: .whitespaces)) }) })
        case .members:
            if raw.hasPrefix("[") {
                guard let v = try? JSONDecoder().decode(JSONValue.self, from: Data(raw.utf8)) else { throw bad() }
                value = v
            } else {
                value = .array(
                    try items.map { item in
                        let parts = item.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                        guard parts.count == 2 else { throw bad("expects architecture:block+block,... (e.g. tcn:coordinates+mask,ftp:relativePositions), got '\(item)'") }
                        let blocks = parts[1].split(separator: "+").map { JSONValue.string($0.trimmingCharacters(in: .whitespaces)) }
                        return .object(["architecture": .string(parts[0]), "channels": .array(blocks)])
                    })
            }
        case .augmentation:
            if raw.hasPrefix("{") {
                guard let v = try? JSONDecoder().decode(JSONValue.self, from: Data(raw.utf8)) else { throw bad() }
                value = v
            } else {
                var fields: [String: JSONValue] = [:]
                for item in items where !item.isEmpty {
                    let kv = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard kv.count == 2, let v = Double(kv[1]), v.isFinite else { throw bad() }
                    fields[kv[0]] = .double(v)
                }
                value = .object(fields)
            }
        case .classWeights:
            if raw == "none" || raw == "balanced" {
                value = .string(raw)
            } else {
                let v = items.compactMap { Double($0) }
                guard v.count == items.count, !items.isEmpty else { throw bad() }
                value = .array(v.map { .double($0) })
            }
        }
        if let why = check(value, e) { throw bad(why) }
        return value
    }
}
