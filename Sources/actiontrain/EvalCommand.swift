import ActionRuntime
import Datasets
import Eval
import Foundation
import PoseCore

enum EvalCommand {
    static let spec = CommandSpec(
        name: "eval",
        summary: "Evaluate a model file on a dataset: confusion matrix and per-class metrics.",
        positionals: [
            Positional(name: "MODEL", help: "Model file written by 'actiontrain fit'."),
            Positional(name: "DATA", help: "Dataset file (.jsonl native, .ts UEA)."),
        ],
        options: [
            Option("split", value: "NAME", help: "Evaluate the sequences of this split (default: test when the data has one, else all)."),
            Option("stride", value: "N", help: "Frames between window starts (default: a third of the window)."),
            Option("json", value: "FILE", help: "Also write the report as JSON to FILE."),
        ])

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let model = try ActionModel(contentsOf: args.positionals[0])
        let dataset = try DatasetLoader.load(args.positionals[1])
        try checkCompatible(model, dataset, dataPath: args.positionals[1])
        let splits = Set(dataset.sequences.compactMap(\.split))
        let split = args.value("split") ?? (splits.contains("test") ? "test" : nil)
        let indices = dataset.sequences.indices.filter { split == nil || dataset.sequences[$0].split == split }
        guard !indices.isEmpty else {
            throw CLIError.failure("\(args.positionals[1]): no sequences in split '\(split ?? "")'; splits present: \(splits.sorted())")
        }
        let stride = try args.value("stride", as: Int.self) ?? max(1, model.input.window.frames / 3)
        guard stride > 0 else { throw CLIError.usage("--stride must be positive") }
        let windows = try WindowSet(dataset: dataset, indices: indices, spec: model.input, stride: stride, classes: model.classes)
        let probabilities = try model.probabilities(features: try windows.features(), count: windows.count)
        let report = try Reports.classification(classes: model.classes, truth: windows.labels, probabilities: probabilities)
        out.line("eval: \(dataset.name), split \(split ?? "all"): \(indices.count) sequences, \(windows.count) windows")
        out.write(report.render())
        out.line(String(format: "accuracy %.4f", report.accuracy))
        if let path = args.value("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try write(try encoder.encode(report), to: path)
        }
    }

    /// The dataset must have the model's skeleton and only labels the model knows.
    static func checkCompatible(_ model: ActionModel, _ d: Dataset, dataPath: String) throws {
        let s = model.input.skeleton
        guard d.skeleton.joints == s.joints, d.skeleton.dimensions == s.dimensions else {
            throw CLIError.failure(
                "\(dataPath): skeleton '\(d.skeleton.name)' (\(d.skeleton.jointCount) joints, \(d.skeleton.dimensions)D) does not match the model's '\(s.name)' (\(s.jointCount) joints, \(s.dimensions)D)")
        }
        let unknown = Set(d.sequences.compactMap(\.label)).subtracting(model.classes)
        guard unknown.isEmpty else {
            throw CLIError.failure("\(dataPath): labels \(unknown.sorted()) are not among the model's classes \(model.classes)")
        }
    }
}
