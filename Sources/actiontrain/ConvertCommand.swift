import ActionTrain
import Datasets
import Foundation
import Pipelines
import PoseCore

enum ConvertCommand: ParsableCommand {
    struct Options: CommandOptions {
        var out = ""
        var inputs: [String] = []
        var labels: String?
        var skeleton: String?
        var force = false
        var to = Target.native
        var fromNormalized = false
        var origin: CoordinateFix.Origin?
        var imageSize: String?
        var mirror = false
        var normalizeHeight = false
        var reading = DataFlags()
        var shardWindows: Int?
        var configFile: String?
        var overrides = ConfigFlags()
    }

    enum Target: String, ArgumentChoice { case native, createml, shards }

    static let spec = CommandSpec<Options>(
        name: "convert",
        summary: "Convert dataset files (.jsonl, .ts, .csv, .npz, .npy) to one native .jsonl file.",
        positionals: [
            Positional("OUT", \.out, help: "Native .jsonl file to write. It must not exist unless --force."),
            Positional("INPUT...", \.inputs, help: "One or more dataset files; their sequences are concatenated."),
        ],
        options: [
            Option("labels", \.labels, value: "MAP", help: "Rename labels: old=new pairs separated by commas."),
            Option("skeleton", \.skeleton, value: "NAME|FILE", help: "Skeleton for inputs that do not name one (.csv, .npz, .npy, .ts)."),
            Option("force", \.force, help: "Overwrite OUT if it exists."),
            Option("to", \.to, value: "FORMAT", help: "native (default, OUT is a .jsonl file), createml (OUT is a folder per label of clip .json files, for Create ML) or shards (OUT is a folder of pre-windowed shard files that fit trains from, docs/datasets.md)."),
            Option("shard-windows", \.shardWindows, value: "N", help: "Windows per shard file with --to shards (default \(Shards.defaultWindowsPerShard))."),
            Option("config", \.configFile, value: "FILE", help: "With --to shards: the JSON training config whose windows to write; flags override its keys."),
            Option("from-normalized", \.fromNormalized, help: "The 2D points are fractions of the image (Vision, MediaPipe): multiply by the image size."),
            Option("origin", \.origin, value: "ORIGIN", help: "top-left (default) or bottom-left (Vision: y up); bottom-left flips y to the image convention."),
            Option("image-size", \.imageSize, value: "WxH", help: "Image size in pixels for --from-normalized, --origin and --mirror (default: the data's)."),
            Option("mirror", \.mirror, help: "Front-camera (mirrored) capture: swap left and right joints and mirror x."),
            Option("normalize-height", \.normalizeHeight, help: "3D: scale each person with a Vision bodyHeight to 1.8 m (Vision's reference height)."),
        ] + DataFlags.options.map { $0.within(\.reading) } + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            Without a repair flag the coordinates are copied as they are; each input is checked against
            what it declares (coordinate space, units, y direction, time unit) and every contradiction
            is a warning (an error with --strict). The repairs are applied in this order: normalised
            to pixels (or a bottom-left origin flipped), mirroring, height normalisation; the result
            is checked again. With --to shards the windows are cut and preprocessed as fit would cut them
            for the config (--config and the config flags, which only --to shards reads); fit DIR then
            trains from them. Example, Vision points saved as they come:
              actiontrain convert clips.jsonl raw.jsonl --from-normalized --origin bottom-left --image-size 1920x1080
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let outPath = options.out
        let inputs = options.inputs
        guard !inputs.isEmpty else { throw CLIError.usage("give at least one INPUT file. Usage: \(spec.usage)") }
        if FileManager.default.fileExists(atPath: outPath) && !options.force {
            throw CLIError.failure("\(outPath) exists; pass --force to overwrite it")
        }
        var renames: [String: String] = [:]
        for pair in (options.labels ?? "").split(separator: ",") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw CLIError.usage("--labels expects old=new pairs, got '\(pair)'") }
            renames[kv[0]] = kv[1]
        }
        let skeleton = try options.skeleton.map { try SkeletonFile.resolve($0) }
        var plan = CoordinateFix.Plan()
        plan.normalised = options.fromNormalized
        plan.origin = options.origin ?? .topLeft
        plan.mirror = options.mirror
        plan.imageSize = try options.imageSize.map { try DataFlags.imageSize($0) }
        if options.normalizeHeight { plan.heightReference = 1.8 }
        var read = try options.reading.readOptions(skeleton: skeleton)
        // With a repair, the inputs' contradictions are expected: only the result is checked.
        if !plan.isEmpty { read.strict = false }
        var merged: Dataset? = nil
        var ids = Set<String>()
        for path in inputs {
            let loaded = try DatasetLoader.read(path, options: read)
            DataFlags.printWarnings(plan.isEmpty ? loaded.warnings : loaded.readerWarnings, out: &out)
            var d: Dataset
            do { d = try plan.apply(to: loaded.dataset) } catch let e as CoordinateFix.FixError { throw CLIError.failure("\(path): \(e)") }
            for s in d.sequences where !ids.insert(s.id).inserted {
                throw CLIError.failure("\(path): sequence id '\(s.id)' is also in an earlier input; ids must be unique across inputs")
            }
            if merged != nil, merged!.skeleton != d.skeleton {
                throw CLIError.failure("\(path): skeleton '\(d.skeleton.name)' differs from the first input's '\(merged!.skeleton.name)'")
            }
            for i in d.sequences.indices { d.sequences[i].label = d.sequences[i].label.map { renames[$0] ?? $0 } }
            d.classes = d.classes.map { renames[$0] ?? $0 }
            if merged == nil {
                merged = d
            } else {
                merged!.sequences += d.sequences
                for c in d.classes where !merged!.classes.contains(c) { merged!.classes.append(c) }
            }
        }
        if !plan.isEmpty {
            let problems = CoordinateSpace.measure(merged!).problems
            if options.reading.strict, let p = problems.first {
                throw CLIError.failure("\(outPath): after the repairs: [\(p.code)] \(p) (--strict)")
            }
            for p in problems { out.note("warning: \(outPath): after the repairs: [\(p.code)] \(p)\n") }
        }
        if options.to == .createml {
            if merged!.imageSize == nil { merged!.imageSize = plan.imageSize }
            let files = try CreateMLFolder.write(merged!, to: outPath)
            out.line("convert: wrote \(files.count) clips in \(merged!.classes.count) label folders to \(outPath)")
            return
        }
        if options.to == .shards { return try writeShards(merged!, options, out: &out) }
        try NativeFormat.write(merged!, to: outPath)
        out.line("convert: wrote \(merged!.sequences.count) sequences, \(merged!.classes.count) classes to \(outPath)")
    }
}

extension ConvertCommand {
    /// `--to shards`: the windows fit would cut for the config, in a shard directory.
    static func writeShards(_ dataset: Dataset, _ options: Options, out: inout Output) throws {
        let (config, given) = try ConfigOptions.resolveGiven(file: options.configFile, flags: options.overrides)
        let windows = options.shardWindows ?? Shards.defaultWindowsPerShard
        guard windows > 0 else { throw CLIError.usage("--shard-windows must be positive, got \(windows)") }
        if FileManager.default.fileExists(atPath: options.out) {
            // --force replaces shards only, never another kind of folder.
            guard ShardManifest.isShardDirectory(options.out) else { throw CLIError.failure("\(options.out) exists and is not a shard directory; choose another OUT") }
            try FileManager.default.removeItem(atPath: options.out)
        }
        let manifest: ShardManifest
        do {
            manifest = try Shards.convert(
                dataset: dataset, dataPath: options.inputs[0], config: config, explicit: given, to: options.out, windowsPerShard: windows)
        } catch let e as ShardError {
            throw CLIError.failure(e.description)
        } catch let e as FitError {
            throw CLIError.failure(e.description)
        }
        let count = { (role: ShardManifest.Role) in manifest.shards.filter { $0.role == role }.reduce(0) { $0 + $1.windows } }
        let bytes = manifest.shards.reduce(0) { $0 + $1.bytes }
        out.line(
            "convert: wrote \(count(.train)) training and \(count(.validation)) validation windows of \(manifest.frames)x\(manifest.channels) "
                + "in \(manifest.shards.count) shards (\(bytes) bytes) to \(options.out)")
    }
}
