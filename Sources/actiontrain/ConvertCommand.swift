import Datasets
import Foundation
import PoseCore

enum ConvertCommand {
    static let spec = CommandSpec(
        name: "convert",
        summary: "Convert datasets to the native .jsonl format (e.g. NATOPS's UEA .ts files).",
        positionals: [
            Positional(name: "OUT", help: "Native .jsonl file to write. It must not exist unless --force."),
            Positional(name: "INPUT...", help: "One or more dataset files; their sequences are concatenated.", variadic: true),
        ],
        options: [
            Option("labels", value: "MAP", help: "Rename labels: old=new pairs separated by commas."),
            Option("force", help: "Overwrite OUT if it exists."),
        ])

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let outPath = args.positionals[0]
        let inputs = Array(args.positionals.dropFirst())
        guard !inputs.isEmpty else { throw CLIError.usage("give at least one INPUT file. Usage: \(spec.usage)") }
        if FileManager.default.fileExists(atPath: outPath) && !args.has("force") {
            throw CLIError.failure("\(outPath) exists; pass --force to overwrite it")
        }
        var renames: [String: String] = [:]
        for pair in (args.value("labels") ?? "").split(separator: ",") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw CLIError.usage("--labels expects old=new pairs, got '\(pair)'") }
            renames[kv[0]] = kv[1]
        }
        var merged: Dataset? = nil
        for path in inputs {
            var d = try DatasetLoader.load(path)
            if merged != nil, merged!.skeleton != d.skeleton {
                throw CLIError.failure("\(path): skeleton '\(d.skeleton.name)' differs from the first input's '\(merged!.skeleton.name)'")
            }
            for i in d.sequences.indices { d.sequences[i].label = d.sequences[i].label.map { renames[$0] ?? $0 } }
            d.classes = d.classes.map { renames[$0] ?? $0 }
            if merged == nil { merged = d } else { merged!.sequences += d.sequences }
        }
        try NativeFormat.write(merged!, to: outPath)
        out.line("convert: wrote \(merged!.sequences.count) sequences, \(merged!.classes.count) classes to \(outPath)")
    }
}
