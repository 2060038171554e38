import Datasets
import Foundation
import PoseCore

/// `actiontrain inspect FILE`: what is in a dataset and what is wrong with it (Lint), or the
/// header of a model file in human form (told apart by the model file's magic bytes).
enum InspectCommand: ParsableCommand {
    struct Options: CommandOptions {
        var file = ""
        var json = false
        var imageSize: String?
        var windowFrames: Int?
        /// --min-confidence, --people, and --strict (which here counts every warning).
        var reading = DataFlags()
    }

    static let spec = CommandSpec<Options>(
        name: "inspect",
        summary: "Describe a dataset (and check it) or a model file.",
        positionals: [Positional("FILE", \.file, help: "A dataset file (any supported format) or a model file (.atm).")],
        options: [
            Option("json", \.json, help: "Print the report (or the model header) as JSON instead of tables."),
            Option("image-size", \.imageSize, value: "W,H", help: "Image size in pixels, for the out-of-image check (default: the dataset's)."),
            Option("window-frames", \.windowFrames, value: "N", help: "Also report sequences shorter than a window of N frames."),
            Option("strict", \.reading.strict, help: "Exit with status 1 when there is any warning (for CI)."),
        ] + DataFlags.options.filter { $0.name != "strict" }.map { $0.within(\.reading) },
        discussion: """
            For a model file: the classes, the input (skeleton, window, preprocessing, channels), the
            layers with their output shapes and parameters, and the provenance.

            For a dataset: reports classes and counts per split, frames per sequence, frame rate, per-joint missing
            rates, NaN/inf values, points outside the image, empty frames, duplicate sequences and
            groups that appear in several splits, then a list of warnings. docs/cli.md lists them.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let path = options.file
        if InspectModel.isModelFile(path: path) {
            if options.imageSize != nil { throw CLIError.usage("--image-size applies to datasets; \(path) is a model file") }
            if options.windowFrames != nil { throw CLIError.usage("--window-frames applies to datasets; \(path) is a model file") }
            if options.reading.minConfidence != nil || options.reading.people != nil {
                throw CLIError.usage("--min-confidence and --people apply to datasets; \(path) is a model file")
            }
            try InspectModel.run(path: path, json: options.json, out: &out)
        } else {
            try runDataset(path: path, options: options, out: &out)
        }
    }

    /// Inspects the dataset at `path` (the lead's `inspect` dispatch calls this for datasets).
    static func runDataset(path: String, options: Options, out: inout Output) throws {
        var lint = Lint.Options()
        if let raw = options.imageSize {
            let parts = raw.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let w = parts[0], let h = parts[1], w > 0, h > 0, w.isFinite, h.isFinite else {
                throw CLIError.usage("--image-size expects W,H in pixels, e.g. 1920,1080; got '\(raw)'")
            }
            lint.imageSize = [w, h]
        }
        if let n = options.windowFrames {
            guard n > 0 else { throw CLIError.usage("--window-frames must be positive") }
            lint.windowFrames = n
        }
        var read = try options.reading.readOptions()
        read.strict = false  // every warning is reported; --strict makes them exit 1 below
        let loaded = try DatasetLoader.read(path, options: read)
        DataFlags.printWarnings(loaded.readerWarnings, out: &out)
        var report = Lint.inspect(loaded.dataset, options: lint)
        report.jointNames = loaded.jointNames.map(\.description)
        if options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            out.line(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            out.write(render(report))
            if let order = loaded.dataset.bodyOrder { out.line("body order: \(order)") }
        }
        let count = report.warnings.count + loaded.readerWarnings.count
        if options.reading.strict && count > 0 {
            throw CLIError.failure("\(path): \(count) warning(s) (--strict)")
        }
    }

    /// The human-readable report.
    static func render(_ r: DatasetInspection) -> String {
        var s = ""
        func line(_ x: String = "") { s += x + "\n" }
        func pad(_ x: String, _ n: Int) -> String { x.count >= n ? x : x + String(repeating: " ", count: n - x.count) }
        func lpad(_ x: String, _ n: Int) -> String { x.count >= n ? x : String(repeating: " ", count: n - x.count) + x }
        func num(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e9 ? String(Int(x)) : String(format: "%.1f", x) }

        line(
            "dataset \(r.name): skeleton \(r.skeleton) (\(r.jointCount) joints, \(r.dimensions)D, \(r.units)"
                + (r.jointNames.isEmpty ? "" : "; joint names by \(r.jointNames.joined(separator: " and "))") + "), "
                + "\(r.sequences) sequences, \(r.frames) frames, \(r.classes.count) classes, \(r.groups) groups")
        if let f = r.framesPerSequence {
            line("frames per sequence: min \(num(f.min)), median \(num(f.median)), max \(num(f.max))")
        }
        var rate = "frame rate: "
        if let d = r.declaredFrameRate { rate += "\(num(d)) fps declared" } else { rate += "not declared" }
        if let t = r.timestampFrameRate {
            rate += "; from timestamps \(num(t.median)) fps median (\(num(t.min))-\(num(t.max)))"
        }
        line(rate)
        line(CoordinateSpace.summary(r.space))
        line()

        // Classes x splits.
        let width = max(5, (r.classes.map(\.name.count).max() ?? 0) + 2)
        let colWidth = r.splits.map { max($0.count + 2, 7) }
        var header = pad("class", width)
        for (k, split) in r.splits.enumerated() { header += lpad(split, colWidth[k]) }
        header += lpad("total", 8)
        line(header)
        var splitTotals = [Int](repeating: 0, count: r.splits.count)
        for c in r.classes {
            var row = pad(c.name, width)
            for (k, split) in r.splits.enumerated() {
                let n = c.perSplit[split] ?? 0
                splitTotals[k] += n
                row += lpad(String(n), colWidth[k])
            }
            line(row + lpad(String(c.total), 8))
        }
        var totals = pad("total", width)
        for k in r.splits.indices { totals += lpad(String(splitTotals[k]), colWidth[k]) }
        line(totals + lpad(String(r.classes.reduce(0) { $0 + $1.total }), 8))
        line()

        // Joints.
        let jw = max(6, (r.joints.map(\.name.count).max() ?? 0) + 2)
        line(pad("joint", jw) + lpad("missing", 9))
        for j in r.joints {
            line(pad(j.name, jw) + lpad(String(format: "%.1f%%", j.missingRate * 100), 9))
        }
        line()

        // Checks.
        let leakingDuplicates = r.duplicates.filter { $0.splits.count > 1 }.count
        let rows: [(String, String)] = [
            ("NaN/inf values", String(r.nonFiniteValues)),
            (
                "out-of-image points",
                r.outOfImagePoints.map(String.init)
                    ?? (r.dimensions != 2 || r.units != "pixels"
                        ? "n/a (not 2D pixels)" : "n/a (no image size; pass --image-size W,H)")
            ),
            ("empty frames", "\(r.emptyFrames) of \(r.frames)"),
            ("empty sequences", String(r.emptySequences)),
            ("duplicate sequences", "\(r.duplicates.count) set(s), \(leakingDuplicates) across splits"),
            ("groups in several splits", String(r.groupLeaks.count)),
        ]
        line("checks")
        for (k, v) in rows { line("  " + pad(k, 26) + v) }
        line()
        if r.warnings.isEmpty {
            line("no warnings")
        } else {
            line("warnings (\(r.warnings.count))")
            for w in r.warnings { line("  - [\(w.code)] \(w.description)") }
        }
        return s
    }
}
