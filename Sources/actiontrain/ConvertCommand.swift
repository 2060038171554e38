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
            Option("shard-windows", \.shardWindows, value: "N", help: "Windows per shard file with --to shards (default \(Shards.defaultWindowsPerShard), at most 1048576)."),
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
        if options.to == .createml || options.to == .shards {
            if FileManager.default.fileExists(atPath: outPath) && !options.force { throw CLIError.failure("\(outPath) exists; pass --force to overwrite it") }
        } else {
            try OutputGuard.checkOutput(outPath, force: options.force, inputs: inputs, exists: "\(outPath) exists; pass --force to overwrite it")
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
            if let reference = plan.heightReference, loaded.dataset.skeleton.dimensions == 3 {
                out.line(heightNote(CoordinateFix.HeightCounts(loaded.dataset, reference: reference), reference: reference, file: path))
            }
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
            let lock = try Export.claim(outPath)
            try Export.clear(outPath, format: "createml")
            let files = try CreateMLFolder.write(merged!, to: outPath)
            try Export.record(outPath, format: "createml", files: files)
            withExtendedLifetime(lock) {}
            out.line("convert: wrote \(files.count) clips in \(merged!.classes.count) label folders to \(outPath)")
            return
        }
        if options.to == .shards { return try writeShards(merged!, options, out: &out) }
        try NativeFormat.write(merged!, to: outPath)
        out.line("convert: wrote \(merged!.sequences.count) sequences, \(merged!.classes.count) classes to \(outPath)")
    }
}

extension ConvertCommand {
    /// What --normalize-height does to one input.
    static func heightNote(_ c: CoordinateFix.HeightCounts, reference: Double, file: String) -> String {
        var parts = ["scaled \(c.scaled) sequence\(c.scaled == 1 ? "" : "s") to \(reference) m"]
        if c.alreadyAtReference > 0 {
            parts.append(
                "left \(c.alreadyAtReference) whose bodyHeight is already \(reference) m as \(c.alreadyAtReference == 1 ? "it is" : "they are") (normalised before, or Vision's reference height)")
        }
        if c.withoutHeight > 0 { parts.append("left \(c.withoutHeight) without a bodyHeight as \(c.withoutHeight == 1 ? "it is" : "they are")") }
        return "convert: \(file): --normalize-height " + parts.joined(separator: "; ")
    }

    /// `--to shards`: the windows fit would cut for the config, in a shard directory.
    static func writeShards(_ dataset: Dataset, _ options: Options, out: inout Output) throws {
        let (config, given) = try ConfigOptions.resolveGiven(file: options.configFile, flags: options.overrides)
        let windows = options.shardWindows ?? Shards.defaultWindowsPerShard
        guard windows > 0 && windows <= 1 << 20 else { throw CLIError.usage("--shard-windows must be 1 to \(1 << 20), got \(windows)") }
        if FileManager.default.fileExists(atPath: options.out) && !ShardManifest.isShardDirectory(options.out) {
            // --force replaces shards only, never another kind of folder.
            throw CLIError.failure("\(options.out) exists and is not a shard directory; choose another OUT")
        }
        let lock = try Export.claim(options.out)
        defer { withExtendedLifetime(lock) {} }
        // The earlier conversion's files only: its manifest, shards and temporary files.
        try Export.removeOwnFiles(options.out) { ShardManifest.isShardName($0) || $0 == ShardManifest.fileName || AtomicWrite.isTemporaryName($0) }
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

/// Folders `convert` writes (a Create ML export, a shard directory): one writer at a time, and
/// `--force` removes only what an earlier conversion wrote there.
enum Export {
    /// The record of an export's files: `.actiontrain-export.json` in its folder.
    static let recordName = ".actiontrain-export.json"

    struct Record: Codable {
        var format: String
        /// Paths relative to the folder.
        var files: [String]
    }

    /// Creates `folder` if needed and locks it (`FolderLock`).
    static func claim(_ folder: String) throws -> FolderLock {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) && !isDirectory.boolValue {
            throw CLIError.failure("\(folder) exists and is not a folder; choose another OUT")
        }
        do { return try FolderLock.creatingFolder(folder, command: "convert") } catch let e as AtomicWrite.WriteError {
            throw CLIError.failure("\(folder): cannot create the folder: \(e.reason)")
        }
    }

    /// Makes `folder` (locked, possibly holding an earlier export of `format`) ready for a new
    /// export: the files its record lists are removed, then the label folders left empty. A
    /// folder with other content (files the record does not list, or no record: not an export
    /// of ours) is refused, naming what is in it, so that nothing of the user's is removed and
    /// no other clip is mixed into the new export.
    static func clear(_ folder: String, format: String) throws {
        let fm = FileManager.default
        let recordPath = "\(folder)/\(recordName)"
        var listed = Set<String>()
        if let data = fm.contents(atPath: recordPath) {
            guard let record = try? JSONDecoder().decode(Record.self, from: data), record.format == format else {
                throw CLIError.failure("\(recordPath) is not the record of a \(format) export; choose another OUT")
            }
            listed = Set(record.files)
        }
        let present = try files(in: folder)
        let foreign = present.filter { !listed.contains($0) }
        if let first = foreign.first {
            throw CLIError.failure(
                "\(folder) holds \(foreign.count) file\(foreign.count == 1 ? "" : "s") an earlier 'convert --to \(format)' did not write (\(first)\(foreign.count > 1 ? ", ..." : "")); "
                    + "they are kept, and would mix with the new export: choose another OUT, or move them away")
        }
        for name in present where listed.contains(name) { try fm.removeItem(atPath: "\(folder)/\(name)") }
        // Label folders the export made and that are now empty.
        for name in Set(listed.compactMap { $0.split(separator: "/").count > 1 ? String($0.split(separator: "/")[0]) : nil }) {
            let path = "\(folder)/\(name)"
            if (try? fm.contentsOfDirectory(atPath: path))?.isEmpty == true { try fm.removeItem(atPath: path) }
        }
        try? fm.removeItem(atPath: recordPath)
    }

    /// Records the export's files (absolute or folder-relative paths) in its folder.
    static func record(_ folder: String, format: String, files: [String]) throws {
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        let relative = files.map { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : $0 }.sorted()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try AtomicFile.write(try encoder.encode(Record(format: format, files: relative)), to: "\(folder)/\(recordName)")
    }

    /// Removes the files directly in `folder` whose names `isOurs` accepts.
    static func removeOwnFiles(_ folder: String, isOurs: (String) -> Bool) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where isOurs(name) && !FolderLock.isLockName(name) {
            try FileManager.default.removeItem(atPath: "\(folder)/\(name)")
        }
    }

    /// Every file below `folder` (relative paths; not the lock or the record, not following
    /// links), and every folder with nothing in it.
    static func files(in folder: String) throws -> [String] {
        var out: [String] = []
        func walk(_ relative: String) throws {
            let path = relative.isEmpty ? folder : "\(folder)/\(relative)"
            let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            if names.isEmpty && !relative.isEmpty { out.append(relative + "/") }
            for name in names where relative.isEmpty ? !(FolderLock.isLockName(name) || name == recordName) : true {
                let child = relative.isEmpty ? name : "\(relative)/\(name)"
                let attributes = try FileManager.default.attributesOfItem(atPath: "\(folder)/\(child)")
                if attributes[.type] as? FileAttributeType == .typeDirectory { try walk(child) } else { out.append(child) }
            }
        }
        try walk("")
        return out
    }
}
