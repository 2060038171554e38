import ActionRuntime
import Datasets
import Foundation
import PoseCore

extension PeoplePolicy: ArgumentValue {
    static var expectation: String { PeoplePolicy.choices }
    static var sample: String { "split" }
}

/// The reading flags every command that reads data shares (docs/cli.md): the one confidence
/// rule, several people per frame, and refusing coordinate contradictions. An option group,
/// as `GateFlags`: `DataFlags.options.map { $0.within(\.reading) }`.
struct DataFlags {
    var minConfidence: Double?
    var people: PeoplePolicy?
    var strict = false

    static let options: [Option<DataFlags>] = [
        Option(
            "min-confidence", \.minConfidence, value: "C",
            help: "A point whose confidence is at or below C is absent, in every format (default 0: Vision's \"not detected\")."),
        Option(
            "people", \.people, value: "POLICY",
            help: "Several people per frame: split (one sequence per track, same group), largest, central, longest, confident (one track), or bodies=M (interaction models)."),
        Option(
            "strict", \.strict,
            help: "Refuse data whose coordinates contradict what it declares (normalised or y-up points as pixels, millimetres as metres, ...) instead of warning."),
    ]

    /// The data formats every command reads (for `--help`).
    static let formats =
        "Dataset file: .jsonl (native), .csv/.tsv (CSV), .npz/.npy (NumPy), .ts (UEA), .pkl (MMAction2/PYSKL); Create ML folders and the public datasets go through 'actiontrain import'."

    /// `ReadOptions` for these flags and a resolved skeleton.
    func readOptions(skeleton: Skeleton? = nil) throws -> ReadOptions {
        var o = ReadOptions(skeleton: skeleton, strict: strict)
        o.people = people
        if let c = minConfidence {
            guard c.isFinite, c >= 0, c < 1 else { throw CLIError.usage("--min-confidence must be in [0, 1), got \(c)") }
            o.minConfidence = Float(c)
        }
        return o
    }

    /// Reads DATA with these flags (`people` when no --people was given; a model's body order,
    /// `bodyOrder`, for its bodies) and prints the reader's warnings and, unless the caller
    /// prints `Lint`'s (which include them), the coordinate contradictions.
    func load(
        _ path: String, people fallback: PeoplePolicy? = nil, bodyOrder: BodyOrderRule? = nil, lintFollows: Bool = false, out: inout Output
    ) throws -> Dataset {
        var o = try readOptions()
        if o.people == nil { o.people = fallback }
        o.bodyOrder = bodyOrder
        let loaded = try DatasetLoader.read(path, options: o)
        DataFlags.printWarnings(lintFollows ? loaded.readerWarnings : loaded.warnings, out: &out)
        return loaded.dataset
    }

    /// A --people that cannot give the model's input: another number of bodies than an
    /// interaction model's (`bodies=M`, which is also the default for one), or bodies for a
    /// model of one person.
    func checkPeople(for model: ActionModel) throws {
        guard let people else { return }
        let m = model.bodies
        switch people {
        case .bodies(let k) where k != m && m > 1:
            throw CLIError.usage("the model takes \(m) people per frame: give --people bodies=\(m), or leave --people out (it is the default for this model)")
        case .bodies(let k) where k > 1 && m == 1:
            throw CLIError.usage(
                "the model takes one person per frame; --people bodies=\(k) stacks \(k): give --people split, largest, central, longest or confident")
        case .split, .pick:
            if m > 1 {
                throw CLIError.usage("the model takes \(m) people per frame: --people \(people) reads one; give --people bodies=\(m), or leave --people out")
            }
        default: break
        }
    }

    /// `W,H` or `WxH` in pixels.
    static func imageSize(_ raw: String, option: String = "image-size") throws -> [Double] {
        let parts = raw.split(whereSeparator: { $0 == "," || $0 == "x" || $0 == "X" }).map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let w = parts[0], let h = parts[1], w > 0, h > 0, w.isFinite, h.isFinite else {
            throw CLIError.usage("--\(option) expects WxH in pixels, e.g. 1920x1080; got '\(raw)'")
        }
        return [w, h]
    }

    /// Prints each warning on stderr.
    static func printWarnings(_ warnings: [DatasetWarning], out: inout Output) {
        for w in warnings { out.note("\(w)\n") }
    }
}

extension CoordinateFix.Origin: ArgumentChoice {}
