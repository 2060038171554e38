import Datasets
import Foundation
import PoseCore

/// The flags every command that reads data shares (docs/cli.md, "Reading data"), turned into
/// the library's `ReadOptions`.
enum DataOptions {
    static let minConfidence = Option(
        "min-confidence", value: "C",
        help: "A point whose confidence is at or below C is absent, in every format (default 0: Vision's \"not detected\").")
    static let strict = Option(
        "strict", help: "Refuse data whose coordinates contradict what it declares (normalised or y-up points as pixels, millimetres as metres, ...) instead of warning.")

    static let people = Option(
        "people", value: "POLICY",
        help: "Several people per frame: split (one sequence per track, same group), largest, central, longest, confident (one track), or bodies=M (interaction models).")

    /// The data formats every command reads (for `--help`).
    static let formats =
        "Dataset file: .jsonl (native), .csv/.tsv (CSV), .npz/.npy (NumPy), .ts (UEA), .pkl (MMAction2/PYSKL); Create ML folders and the public datasets go through 'actiontrain import'."

    /// Reads DATA with the shared flags and prints the reader's warnings and (unless the
    /// caller prints `Lint`'s, which include them) the coordinate contradictions.
    static func load(_ path: String, _ args: ParsedArguments, people: PeoplePolicy? = nil, lintFollows: Bool = false, out: inout Output) throws -> Dataset {
        var o = try readOptions(args)
        if o.people == nil { o.people = people }
        let loaded = try DatasetLoader.read(path, options: o)
        printWarnings(lintFollows ? loaded.readerWarnings : loaded.warnings, out: &out)
        return loaded.dataset
    }

    /// `ReadOptions` from `--min-confidence`, `--strict`, `--people` and a resolved skeleton.
    static func readOptions(_ args: ParsedArguments, skeleton: Skeleton? = nil) throws -> ReadOptions {
        var o = ReadOptions(skeleton: skeleton, strict: args.has("strict"))
        if let raw = args.value("people") {
            guard let p = PeoplePolicy(argument: raw) else { throw CLIError.usage("--people must be \(PeoplePolicy.choices), got '\(raw)'") }
            o.people = p
        }
        if let c = try args.value("min-confidence", as: Float.self) {
            guard c.isFinite, c >= 0, c < 1 else { throw CLIError.usage("--min-confidence must be in [0, 1), got \(c)") }
            o.minConfidence = c
        }
        return o
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
