import Datasets
import Foundation
import PoseCore

enum ConvertCommand: ParsableCommand {
    struct Options: CommandOptions {
        var out = ""
        var inputs: [String] = []
        var labels: String?
        var skeleton: String?
        var force = false
    }

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
        ])

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
        var merged: Dataset? = nil
        var ids = Set<String>()
        for path in inputs {
            var d = try DatasetLoader.load(path, skeleton: skeleton)
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
        try NativeFormat.write(merged!, to: outPath)
        out.line("convert: wrote \(merged!.sequences.count) sequences, \(merged!.classes.count) classes to \(outPath)")
    }
}
