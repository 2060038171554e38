import ActionTrain
import Datasets
import Foundation
import PoseCore

/// The training options shared by the config file and the CLI: each flag `--kebab-name`
/// overrides the config key `camelName`. One table serves parsing, checking, help and the
/// docs (docs/training.md lists the same keys; a test keeps the table and `TrainingConfig`
/// in step).
enum ConfigOptions {
    enum Kind {
        case int, number, string, bool, intList, stringList
        /// `none`, `balanced` or a list of numbers.
        case classWeights
        /// An object of augmentation keys and numbers (docs/preprocessing.md); on the command
        /// line `key=value,key=value`.
        case augmentation

        var expectation: String {
            switch self {
            case .int: return "an integer"
            case .number: return "a number"
            case .string: return "a string"
            case .bool: return "true or false"
            case .intList: return "a list of integers"
            case .stringList: return "a list of strings"
            case .classWeights: return "\"none\", \"balanced\" or a list of numbers"
            case .augmentation: return "an object of augmentation keys and numbers (key=value,... on the command line)"
            }
        }
    }

    struct Entry {
        let key: String
        let kind: Kind
        let value: String
        let help: String
        /// Allowed values of a string (or each item of a string list); empty = any.
        var choices: [String] = []
        var flag: String {
            key.reduce(into: "") { s, c in
                if c.isUppercase { s += "-" + c.lowercased() } else { s.append(c) }
            }
        }
    }

    static func names<T: CaseIterable & RawRepresentable>(_: T.Type) -> [String] where T.RawValue == String {
        T.allCases.map(\.rawValue)
    }

    static let entries: [Entry] = [
        // Model
        Entry(key: "architecture", kind: .string, value: "NAME", help: "Model family: mlp (over the flattened window) or tcn (temporal convolution) (default tcn).", choices: names(TrainingConfig.Architecture.self)),
        Entry(key: "hidden", kind: .intList, value: "N,N", help: "MLP hidden widths (default 256,128)."),
        Entry(key: "widths", kind: .intList, value: "N,N", help: "TCN block widths; the depth is their count (default 64,64,64)."),
        Entry(key: "kernel", kind: .int, value: "N", help: "TCN kernel size in frames, odd (default 5)."),
        Entry(key: "dilationBase", kind: .int, value: "N", help: "TCN block i has dilation N^i: 1 = none, 2 = 1,2,4,... (default 2)."),
        Entry(key: "residual", kind: .bool, value: "BOOL", help: "TCN blocks are residual (two convolutions + shortcut) or plain (one convolution) (default true)."),
        Entry(key: "activation", kind: .string, value: "NAME", help: "relu or gelu (default relu).", choices: names(TrainingConfig.Activation.self)),
        Entry(key: "normalization", kind: .string, value: "NAME", help: "none or layerNorm after each linear/convolution (default layerNorm).", choices: names(TrainingConfig.Normalization.self)),
        Entry(key: "dropout", kind: .number, value: "P", help: "Dropout rate after hidden activations, in [0, 1) (default 0.1)."),
        // Data
        Entry(key: "windowFrames", kind: .int, value: "N", help: "Window length in frames (default 45)."),
        Entry(key: "windowStride", kind: .int, value: "N", help: "Frames between training window starts (default 15)."),
        Entry(key: "windowMode", kind: .string, value: "MODE", help: "sliding (fixed windows, short sequences padded) or fit (each sequence resampled to one window) (default sliding).", choices: names(WindowSpec.Mode.self)),
        Entry(key: "frameRate", kind: .number, value: "FPS", help: "Resample sequences to this frame rate first (default: keep recorded frames)."),
        Entry(key: "channels", kind: .stringList, value: "LIST", help: "Per-frame feature blocks: coordinates, confidence, mask, motion, bones (default coordinates,mask).", choices: names(ChannelBlock.self)),
        Entry(key: "windowPadding", kind: .string, value: "NAME", help: "Padding of short sequences: empty (poses with nobody in view) or edge (the nearest real frame) (default empty).", choices: names(WindowSpec.Padding.self)),
        Entry(key: "useEvents", kind: .bool, value: "BOOL", help: "Sequences with labeled events give one window centred on each event instead of sliding windows (default false)."),
        Entry(key: "centring", kind: .string, value: "NAME", help: "Centre coordinates on the skeleton's centre joints over the window, per frame, on the mean of all joints, or not: window, frame, mean or none (default window).", choices: names(InputSpec.Centring.self)),
        Entry(key: "scaling", kind: .string, value: "NAME", help: "Scale coordinates: auto (torso length for 2D, metres kept for 3D), torso, image (needs the image size), fixed (divided by scaleDivisor) or none (default auto).", choices: names(InputSpec.Scaling.self)),
        Entry(key: "scaleDivisor", kind: .number, value: "X", help: "fixed scaling: divide coordinates by X, in data units (the recipe sets it to the training data's body size)."),
        Entry(key: "alignFacing", kind: .bool, value: "BOOL", help: "3D: rotate each window about the vertical axis so the body faces one way (default false)."),
        Entry(key: "verticalAxis", kind: .int, value: "N", help: "Vertical axis of 3D data for alignFacing: 0 x, 1 y, 2 z (default 1)."),
        Entry(key: "augmentation", kind: .augmentation, value: "K=V,...", help: "Training augmentation, e.g. flipProbability=0.5,rotationProbability=0.5,maxRotationDegrees=15 (default none; keys in docs/preprocessing.md)."),
        Entry(key: "validationFraction", kind: .number, value: "F", help: "Share of training sequences held out for validation when the data gives no validation split, in [0, 1) (default 0.2)."),
        // Optimisation
        Entry(key: "epochs", kind: .int, value: "N", help: "Training epochs (default 60)."),
        Entry(key: "batchSize", kind: .int, value: "N", help: "Windows per mini-batch (default 64)."),
        Entry(key: "optimizer", kind: .string, value: "NAME", help: "sgd, adam or adamw (default adamw; with weightDecay 0 it is Adam).", choices: names(TrainingConfig.OptimizerKind.self)),
        Entry(key: "learningRate", kind: .number, value: "LR", help: "Base learning rate (default 0.001)."),
        Entry(key: "momentum", kind: .number, value: "M", help: "SGD momentum in [0, 1) (default 0)."),
        Entry(key: "nesterov", kind: .bool, value: "BOOL", help: "SGD with Nesterov momentum (default false)."),
        Entry(key: "beta1", kind: .number, value: "B", help: "Adam first-moment decay (default 0.9)."),
        Entry(key: "beta2", kind: .number, value: "B", help: "Adam second-moment decay (default 0.999)."),
        Entry(key: "epsilon", kind: .number, value: "E", help: "Adam denominator term (default 1e-8)."),
        Entry(key: "weightDecay", kind: .number, value: "W", help: "L2 penalty for sgd and adam, decoupled decay for adamw (default 0)."),
        Entry(key: "gradientClipNorm", kind: .number, value: "N", help: "Clip the global gradient norm to N; 0 = off (default 0)."),
        Entry(key: "schedule", kind: .string, value: "NAME", help: "Learning-rate schedule after warm-up: constant, step or cosine (default constant).", choices: names(LearningRateSchedule.Kind.self)),
        Entry(key: "warmupEpochs", kind: .int, value: "N", help: "Linear warm-up over the first N epochs (default 0)."),
        Entry(key: "stepEpochs", kind: .int, value: "N", help: "step schedule: multiply the rate by gamma every N epochs (default 10)."),
        Entry(key: "gamma", kind: .number, value: "G", help: "step schedule: decay factor in (0, 1] (default 0.1)."),
        Entry(key: "minLearningRate", kind: .number, value: "LR", help: "cosine schedule: final learning rate (default 0)."),
        Entry(key: "averageEpochs", kind: .number, value: "E", help: "Keep an exponential moving average of the parameters with a time constant of E epochs and use it as the model; 0 = off (default 0)."),
        // Loss
        Entry(key: "labelSmoothing", kind: .number, value: "E", help: "Label smoothing in [0, 1) (default 0)."),
        Entry(key: "classWeights", kind: .classWeights, value: "W", help: "Loss weight per class: none, balanced (n / (classes x count)), or a comma-separated list (default none)."),
        // Validation
        Entry(key: "monitor", kind: .string, value: "METRIC", help: "Metric that picks the kept model and drives early stopping: validationAccuracy or validationLoss (default validationAccuracy).", choices: names(TrainingConfig.Metric.self)),
        Entry(key: "patience", kind: .int, value: "N", help: "Stop after N epochs without improvement of the monitored metric; 0 = never (default 0)."),
        Entry(key: "minDelta", kind: .number, value: "D", help: "Smallest change of the monitored metric that counts as an improvement (default 0)."),
        // Reproducibility
        Entry(key: "seed", kind: .int, value: "N", help: "Seed for initialisation, shuffling, dropout and splits (default 0)."),
        Entry(key: "threads", kind: .int, value: "N", help: "Threads for OpenBLAS, the layers' batch split and the optimiser (default 2)."),
    ]

    /// Keys that `fit --resume` may change: they do not alter the model or the data.
    static let resumable: Set<String> = ["epochs", "learningRate", "gradientClipNorm", "patience", "minDelta", "threads"]

    static var options: [Option] { entries.map { Option($0.flag, value: $0.value, help: $0.help) } }

    /// Defaults, then the config file, then the flags. Unknown keys, wrong types and values
    /// out of range are one-line errors naming the key.
    static func resolve(file: String?, args: ParsedArguments) throws -> TrainingConfig {
        var dict: [String: JSONValue] = [:]
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError.failure("\(file): cannot read the config file; check the path")
            }
            dict = try fileValues(data, source: file)
        }
        return try resolve(base: TrainingConfig(), values: dict, args: args)
    }

    /// `base` with `values` (already checked) and then the flags applied.
    static func resolve(base: TrainingConfig, values: [String: JSONValue], args: ParsedArguments) throws -> TrainingConfig {
        var dict = try JSONDecoder().decode([String: JSONValue].self, from: JSONEncoder().encode(base))
        for (k, v) in values { dict[k] = v }
        for e in entries {
            guard let raw = args.value(e.flag) else { continue }
            dict[e.key] = try flagValue(raw, e)
        }
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

    /// The keys of a config file, each checked against the table.
    static func fileValues(_ data: Data, source: String) throws -> [String: JSONValue] {
        let object: [String: JSONValue]
        do {
            object = try JSONDecoder().decode([String: JSONValue].self, from: data)
        } catch {
            throw CLIError.failure("\(source): not a JSON object of config keys (\(jsonProblem(error)))")
        }
        for (k, v) in object.sorted(by: { $0.key < $1.key }) {
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
        switch (e.kind, v) {
        case (.int, .int), (.int, .uint), (.number, .int), (.number, .uint), (.number, .double), (.bool, .bool):
            return nil
        case (.number, .null) where e.key == "frameRate":
            return nil
        case (.string, .string(let s)):
            return choice(s)
        case (.intList, .array(let items)):
            return items.allSatisfy { if case .int = $0 { return true } else { return false } } ? nil : wrong
        case (.stringList, .array(let items)):
            for item in items {
                guard case .string(let s) = item else { return wrong }
                if let why = choice(s) { return why }
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

    private static func flagValue(_ raw: String, _ e: Entry) throws -> JSONValue {
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
        case .stringList:
            value = .array(items.map { .string($0) })
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

    private static func jsonProblem(_ error: Error) -> String {
        if case DecodingError.dataCorrupted(let ctx) = error {
            return (ctx.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? ctx.debugDescription
        }
        return "\(error)"
    }
}

/// A JSON value that keeps integers exact (seeds are 64-bit) and tells booleans from numbers.
enum JSONValue: Codable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

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
