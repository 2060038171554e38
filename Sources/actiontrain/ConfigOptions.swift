import ActionTrain
import Foundation

/// The training options shared by the config file and the CLI: each flag `--kebab-name`
/// overrides the config key `camelName`. One table serves parsing, help and the docs.
enum ConfigOptions {
    enum Kind { case int, number, string, intList, stringList }

    struct Entry {
        let key: String
        let kind: Kind
        let value: String
        let help: String
        var flag: String {
            key.reduce(into: "") { s, c in
                if c.isUppercase { s += "-" + c.lowercased() } else { s.append(c) }
            }
        }
    }

    static let entries: [Entry] = [
        Entry(key: "architecture", kind: .string, value: "mlp", help: "Model family: mlp."),
        Entry(key: "hidden", kind: .intList, value: "N,N", help: "Hidden widths of the MLP (default 256,128)."),
        Entry(key: "windowFrames", kind: .int, value: "N", help: "Window length in frames (default 45)."),
        Entry(key: "windowStride", kind: .int, value: "N", help: "Frames between training window starts (default 15)."),
        Entry(key: "windowMode", kind: .string, value: "MODE", help: "sliding (fixed windows, short sequences padded) or fit (each sequence resampled to one window)."),
        Entry(key: "frameRate", kind: .number, value: "FPS", help: "Resample sequences to this frame rate first (default: keep recorded frames)."),
        Entry(key: "channels", kind: .stringList, value: "LIST", help: "Per-frame feature blocks: coordinates, confidence, mask, motion, bones (default coordinates,mask)."),
        Entry(key: "epochs", kind: .int, value: "N", help: "Training epochs (default 30)."),
        Entry(key: "batchSize", kind: .int, value: "N", help: "Windows per mini-batch (default 64)."),
        Entry(key: "learningRate", kind: .number, value: "LR", help: "Adam learning rate (default 0.001)."),
        Entry(key: "weightDecay", kind: .number, value: "W", help: "Decoupled weight decay, AdamW (default 0)."),
        Entry(key: "labelSmoothing", kind: .number, value: "E", help: "Label smoothing in [0, 1) (default 0)."),
        Entry(key: "validationFraction", kind: .number, value: "F", help: "Share of training sequences held out for validation when the data gives no validation split (default 0.2)."),
        Entry(key: "seed", kind: .int, value: "N", help: "Seed for initialisation, shuffling and splits (default 0)."),
        Entry(key: "threads", kind: .int, value: "N", help: "OpenBLAS threads (default 2)."),
    ]

    static var options: [Option] { entries.map { Option($0.flag, value: $0.value, help: $0.help) } }

    /// Defaults, then the config file, then the flags. Unknown keys in the file are errors.
    static func resolve(file: String?, args: ParsedArguments) throws -> TrainingConfig {
        var dict = try jsonObject(JSONEncoder().encode(TrainingConfig()), source: "defaults")
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError.failure("\(file): cannot read the config file; check the path")
            }
            let user = try jsonObject(data, source: file)
            for (k, v) in user {
                guard dict[k] != nil else {
                    let hint = ArgumentParser.suggestion(for: k, among: Array(dict.keys)).map { "; did you mean '\($0)'?" } ?? ""
                    throw CLIError.failure("\(file): unknown config key '\(k)'\(hint)")
                }
                dict[k] = v
            }
        }
        for e in entries {
            guard let raw = args.value(e.flag) else { continue }
            dict[e.key] = try convert(raw, e)
        }
        let config: TrainingConfig
        do {
            config = try JSONDecoder().decode(TrainingConfig.self, from: JSONSerialization.data(withJSONObject: dict))
        } catch let DecodingError.dataCorrupted(ctx) {
            throw CLIError.failure("config: \(ctx.codingPath.map(\.stringValue).joined(separator: ".")): \(ctx.debugDescription)")
        } catch let DecodingError.typeMismatch(_, ctx) {
            throw CLIError.failure("config: '\(ctx.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type")
        } catch {
            throw CLIError.failure("config does not decode: \(error)")
        }
        try config.validate()
        return config
    }

    private static func jsonObject(_ data: Data, source: String) throws -> [String: Any] {
        guard let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CLIError.failure("\(source): not a JSON object")
        }
        return obj
    }

    private static func convert(_ raw: String, _ e: Entry) throws -> Any {
        func bad() -> CLIError { .usage("--\(e.flag) expects \(e.value), got '\(raw)'") }
        let items = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        switch e.kind {
        case .int:
            guard let v = Int(raw) else { throw bad() }
            return v
        case .number:
            guard let v = Double(raw), v.isFinite else { throw bad() }
            return v
        case .string:
            return raw
        case .intList:
            let v = items.compactMap { Int($0) }
            guard v.count == items.count else { throw bad() }
            return v
        case .stringList:
            return items
        }
    }
}
