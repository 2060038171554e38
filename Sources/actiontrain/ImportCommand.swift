import Datasets
import Foundation
import PoseCore

/// `actiontrain import KIND SRC --out FILE.jsonl`: one command from a public dataset or a
/// foreign format to the native format.
enum ImportCommand: ParsableCommand {
    static let kinds = ["natops", "penn-action", "utkinect", "csv", "npz", "createml", "pyskl"]

    struct Options: CommandOptions {
        var kind = "", source = ""
        var out: String?
        var force = false
        var skeleton: String?
        var mapping: String?
        var labels: String?
        var keepInvisible = false
        var split: String?
        var limit: Int?
        var recordings = false
        var classes: String?
        var splitNames: String?
        var imageSize: String?
        var reading = DataFlags()
    }

    static let spec = CommandSpec<Options>(
        name: "import",
        summary: "Import a public dataset (natops, penn-action, utkinect) or a CSV / NumPy / Create ML / PYSKL file into the native format.",
        positionals: [
            Positional("KIND", \.kind, help: "One of \(kinds.joined(separator: ", "))."),
            Positional("SRC", \.source, help: "The dataset folder (natops, penn-action, utkinect, createml with a folder per label) or file (csv, npz, createml, pyskl .pkl)."),
        ],
        options: [
            Option("out", \.out, value: "FILE", help: "Native .jsonl file to write (required). It must not exist unless --force."),
            Option("force", \.force, help: "Overwrite --out if it exists."),
            Option("skeleton", \.skeleton, value: "NAME|FILE", help: "Skeleton for csv and npz: a built-in name or a JSON schema file."),
            Option("mapping", \.mapping, value: "FILE", help: "csv: a JSON column mapping (docs/datasets.md)."),
            Option("labels", \.labels, value: "FILE", help: "npz: a .npy of labels when SRC is a bare X.npy."),
            Option("classes", \.classes, value: "LIST", help: "csv, npz, createml, pyskl: the class order, comma-separated (default: label_names, else first appearance; integer labels index it)."),
            Option("split-names", \.splitNames, value: "MAP", help: "npz: split values to split names, e.g. 0=train,1=test for a 0/1 integer split; pyskl: the split dictionary's keys, e.g. xsub_train=train,xsub_val=test."),
            Option("image-size", \.imageSize, value: "WxH", help: "createml: the image size of clips that do not give one (Vision's points are fractions of the image)."),
            Option("keep-invisible", \.keepInvisible, help: "penn-action: keep joints annotated invisible as present points with confidence 0.5."),
            Option("split", \.split, value: "PROTOCOL", help: "utkinect: cross-subject (odd subjects train, even test; default) or none."),
            Option("limit", \.limit, value: "N", help: "penn-action: import only the first N sequences (a quick look)."),
            Option(
                "recordings", \.recordings,
                help: "utkinect: one sequence per continuous recording with its labelled segments (for eval --events), instead of one per segment."),
        ] + DataFlags.options.map { $0.within(\.reading) },
        discussion: """
            Examples (the datasets' SOURCE.md files describe each):
              actiontrain import natops ../shared/datasets/natops --out natops.jsonl
              actiontrain import penn-action ../shared/datasets/penn_action --out penn.jsonl
              actiontrain import utkinect ../shared/datasets/utkinect_action3d --out utk.jsonl
              actiontrain import csv poses.csv --mapping columns.json --out poses.jsonl
              actiontrain import npz poses.npz --skeleton coco-17 --out poses.jsonl
              actiontrain import pyskl ntu60_hrnet.pkl --split-names xsub_train=train,xsub_val=test --people bodies=2 --out ntu.jsonl
              actiontrain import createml ThrowsFolder --image-size 1920x1080 --out throws.jsonl
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let kind = options.kind, src = options.source
        guard kinds.contains(kind) else {
            let hint = ArgumentParser.suggestion(for: kind, among: kinds).map { " Did you mean '\($0)'?" } ?? ""
            throw CLIError.usage("unknown KIND '\(kind)'; use one of \(kinds.joined(separator: ", ")).\(hint)")
        }
        guard let outPath = options.out else { throw CLIError.usage("give --out FILE.jsonl. Usage: \(spec.usage)") }
        try OutputGuard.checkOutput(outPath, force: options.force, inputs: [src], exists: "\(outPath) exists; pass --force to overwrite it")
        guard FileManager.default.fileExists(atPath: src) else { throw CLIError.failure("\(src): no such file or folder") }
        let skeleton = try options.skeleton.map { try SkeletonFile.resolve($0) }
        var read = try options.reading.readOptions(skeleton: skeleton)
        if let list = options.classes {
            let classes = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !classes.contains(""), Set(classes).count == classes.count else {
                throw CLIError.usage("--classes expects distinct names separated by commas, got '\(list)'")
            }
            read.classes = classes
        }
        for pair in (options.splitNames ?? "").split(separator: ",") {
            let kv = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard kv.count == 2, ["train", "validation", "test"].contains(kv[1]) else {
                throw CLIError.usage("--split-names expects value=train|validation|test pairs, got '\(pair)'")
            }
            read.splitNames[kv[0]] = kv[1]
        }
        read.imageSize = try options.imageSize.map { try DataFlags.imageSize($0) }
        let loaded = try load(kind: kind, src: src, read: read, options: options, out: &out)
        DataFlags.printWarnings(loaded.warnings, out: &out)
        let dataset = loaded.dataset
        try NativeFormat.write(dataset, to: outPath)
        out.line(summary(dataset, to: outPath))
    }

    static func load(kind: String, src: String, read: ReadOptions, options: Options, out: inout Output) throws -> LoadedDataset {
        var read = read
        switch kind {
        case "csv":
            read.mapping = try options.mapping.map { try CSVMapping.load($0) }
            return try DatasetLoader.read(src, format: .csv, options: read)
        case "npz":
            read.labelsPath = options.labels
            return try DatasetLoader.read(src, format: .npz, options: read)
        case "pyskl":
            return try DatasetLoader.read(src, format: .pyskl, options: read)
        case "createml":
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: src, isDirectory: &isDirectory)
            return try DatasetLoader.read(src, format: isDirectory.boolValue ? .createmlFolder : .createml, options: read)
        default:
            let d = try loadPublic(kind: kind, src: src, skeleton: read.skeleton, options: options, out: &out)
            return try DatasetLoader.checked(d, file: src, strict: read.strict)
        }
    }

    /// The public datasets' importers.
    static func loadPublic(kind: String, src: String, skeleton: Skeleton?, options: Options, out: inout Output) throws -> Dataset {
        switch kind {
        case "natops":
            var files: [String]
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: src, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                files = ["NATOPS_TRAIN.ts", "NATOPS_TEST.ts"].map { (src as NSString).appendingPathComponent($0) }
                for f in files where !FileManager.default.fileExists(atPath: f) {
                    throw CLIError.failure("\(f): not found; pass the folder holding NATOPS_TRAIN.ts and NATOPS_TEST.ts")
                }
            } else {
                files = [src]
            }
            var merged: Dataset? = nil
            for f in files {
                let d = try UEAFormat.read(f, options: .init(skeleton: skeleton, labelNames: UEAFormat.natopsLabelNames))
                if merged == nil { merged = d } else { merged!.sequences += d.sequences }
            }
            return merged!
        case "penn-action":
            let limit = options.limit
            if let limit, limit <= 0 { throw CLIError.usage("--limit must be positive") }
            return try PennActionImporter.read(src, options: .init(keepInvisible: options.keepInvisible, limit: limit))
        case "utkinect":
            let split: UTKinectImporter.Split
            switch options.split ?? "cross-subject" {
            case "cross-subject": split = .crossSubject
            case "none": split = .none
            case let other: throw CLIError.usage("--split must be cross-subject or none, not '\(other)'")
            }
            var o = UTKinectImporter.Options(split: split)
            o.recordings = options.recordings
            let (d, warnings) = try UTKinectImporter.read(src, options: o)
            for w in warnings { out.note("\(w)\n") }
            return d
        default:
            preconditionFailure("not a public dataset: \(kind)")
        }
    }

    /// One line: counts per split and class, frames, skeleton.
    static func summary(_ d: Dataset, to path: String) -> String {
        var splits: [String: Int] = [:]
        for s in d.sequences { splits[s.split ?? "(none)", default: 0] += 1 }
        let frames = d.sequences.reduce(0) { $0 + $1.frameCount }
        let splitText = splits.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "import: wrote \(d.sequences.count) sequences (\(splitText)), \(d.classes.count) classes, \(frames) frames, skeleton \(d.skeleton.name) to \(path)"
    }
}
