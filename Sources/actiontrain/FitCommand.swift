import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

enum FitCommand {
    static let spec = CommandSpec(
        name: "fit",
        summary: "Train a classifier on a dataset and write a model file and a run folder.",
        positionals: [Positional(name: "DATA", help: "Dataset file (.jsonl native, .ts UEA).")],
        options: [
            Option("config", value: "FILE", help: "JSON config file; flags override its keys."),
            Option("out", value: "DIR", help: "Run folder (default runs/<dataset>). It must not exist unless --force."),
            Option("force", help: "Replace the files of an existing run folder."),
        ] + ConfigOptions.options,
        discussion: """
            Training uses the sequences whose split is "train" (all sequences when the data gives no
            split; "test" sequences are never used). Validation uses the "validation" split when there
            is one, otherwise a seeded stratified share of the training sequences (group-aware).
            The run folder gets config.json, log.jsonl, model.atm and report.txt / report.json
            (the validation report).
            """)

    static func run(_ args: ParsedArguments, out: inout Output) throws {
        let dataPath = args.positionals[0]
        let config = try ConfigOptions.resolve(file: args.value("config"), args: args)
        let dataset = try DatasetLoader.load(dataPath)
        let runDir = args.value("out") ?? "runs/\(dataset.name)"
        try prepareRunFolder(runDir, force: args.has("force"))

        BLAS.threads = config.threads
        let (trainIdx, validIdx) = try trainingSplit(dataset, config: config)
        var spec = InputSpec.standard(for: dataset.skeleton, frames: config.windowFrames)
        spec.window.mode = config.windowMode
        spec.window.frameRate = config.frameRate
        spec.channels = config.channels
        let train = try tensors(dataset, trainIdx, spec: spec, stride: config.windowStride)
        let validation = validIdx.isEmpty ? nil : try tensors(dataset, validIdx, spec: spec, stride: config.windowStride)
        out.line(
            "fit: \(dataset.name): \(trainIdx.count) training sequences (\(train.count) windows), "
                + "\(validIdx.count) validation sequences (\(validation?.count ?? 0) windows), \(dataset.classes.count) classes")

        let input = Shape(time: spec.window.frames, channels: spec.channelsPerFrame)
        let network = try Network(layers: config.layers(input: input, classes: dataset.classes.count), input: input)
        network.initialize(seed: config.seed)
        out.line("fit: \(config.architecture.rawValue), \(network.parameterCount) parameters, OpenBLAS \(BLAS.coreName) x\(config.threads)")

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let configData = try encoder.encode(config)
        try write(configData, to: "\(runDir)/config.json")
        let log = try LineWriter(path: "\(runDir)/log.jsonl")
        let trainer = Trainer(network: network, config: config)
        let started = Date()
        let lineEncoder = JSONEncoder()
        lineEncoder.outputFormatting = [.sortedKeys]
        var records: [EpochRecord] = []
        var logError: Error?
        try trainer.fit(train: train, validation: validation) { r in
            records.append(r)
            do { try log.append(String(decoding: lineEncoder.encode(r), as: UTF8.self)) } catch { logError = error }
            let v = r.validationAccuracy.map { String(format: "  val loss %.4f  val acc %.3f", r.validationLoss!, $0) } ?? ""
            out.line(
                String(format: "epoch %3d  loss %.4f  acc %.3f", r.epoch, r.trainLoss, r.trainAccuracy) + v
                    + String(format: "  %.0f windows/s", r.windowsPerSecond))
        }
        if let logError { throw logError }
        let seconds = Date().timeIntervalSince(started)

        var metrics: [String: Double] = [:]  // deterministic only: identical runs give identical model files
        var reportText = ""
        if let validation {
            let (vl, va) = trainer.evaluate(validation)
            metrics["validationAccuracy"] = va
            metrics["validationLoss"] = vl
            let predicted = Inference.probabilities(network, features: validation.features, count: validation.count)
            let report = try Reports.classification(
                classes: dataset.classes, truth: validation.labels, probabilities: predicted)
            reportText = report.render()
            try write(try encoder.encode(report), to: "\(runDir)/report.json")
            try write(Data(reportText.utf8), to: "\(runDir)/report.txt")
        }
        let provenance = ModelHeader.Provenance(
            datasetHash: dataset.contentHash, configHash: Hashing.fnv1a64(configData), seed: config.seed,
            metrics: metrics, notes: ["dataset": dataset.name])
        let modelBytes = try ModelFile.encode(
            classes: dataset.classes, input: spec, network: network, provenance: provenance, trainingFrameRate: dataset.frameRate)
        try write(Data(modelBytes), to: "\(runDir)/model.atm")
        if !reportText.isEmpty { out.write("\nvalidation report\n" + reportText) }
        out.line(String(format: "fit: trained in %.1f s; wrote %@/model.atm", seconds, runDir))
    }

    /// Training and validation sequence indices: the data's own split when it has one.
    static func trainingSplit(_ d: Dataset, config: TrainingConfig) throws -> (train: [Int], validation: [Int]) {
        let splits = Set(d.sequences.compactMap(\.split))
        let usable = d.sequences.indices.filter { d.sequences[$0].split != "test" }
        if splits.contains("validation") {
            return (usable.filter { d.sequences[$0].split != "validation" }, usable.filter { d.sequences[$0].split == "validation" })
        }
        guard !usable.isEmpty else {
            throw CLIError.failure("\(d.name): no training sequences (every sequence is in the test split)")
        }
        if config.validationFraction == 0 { return (usable, []) }
        let (train, valid) = Splits.stratified(d, indices: usable, fraction: config.validationFraction, seed: config.seed)
        return (train, valid)
    }

    static func tensors(_ d: Dataset, _ indices: [Int], spec: InputSpec, stride: Int) throws -> TensorSet {
        let windows = try WindowSet(dataset: d, indices: indices, spec: spec, stride: stride, classes: d.classes)
        return TensorSet(features: try windows.features(), labels: windows.labels, valuesPerWindow: spec.valuesPerWindow)
    }

    /// Creates the run folder; an existing non-empty folder needs --force.
    static func prepareRunFolder(_ dir: String, force: Bool) throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: dir, isDirectory: &isDir) {
            guard isDir.boolValue else { throw CLIError.failure("\(dir) exists and is not a folder; choose another --out") }
            let contents = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
            if !contents.isEmpty && !force {
                throw CLIError.failure("\(dir) already holds a run; pass --force to replace it or choose another --out")
            }
        }
        do {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw CLIError.failure("\(dir): cannot create the run folder: \(error.localizedDescription)")
        }
    }
}

/// Writes a file atomically (temporary file + rename), with a one-line error.
func write(_ data: Data, to path: String) throws {
    do {
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        throw CLIError.failure("\(path): cannot write: \(error.localizedDescription)")
    }
}

/// Appends lines to a file, flushing each (the per-epoch log survives a crash).
final class LineWriter {
    let handle: FileHandle
    let path: String
    init(path: String) throws {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
            throw CLIError.failure("\(path): cannot create the log file")
        }
        handle = h
    }
    func append(_ line: String) throws {
        do { try handle.write(contentsOf: Data((line + "\n").utf8)) } catch {
            throw CLIError.failure("\(path): cannot write: \(error.localizedDescription)")
        }
    }
    deinit { try? handle.close() }
}

enum Hashing {
    static func fnv1a64(_ data: Data) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in data { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(format: "fnv1a64:%016llx", h)
    }
}
