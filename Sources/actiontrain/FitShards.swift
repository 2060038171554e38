import ActionRuntime
import ActionTrain
import Foundation
import Pipelines

/// `actiontrain fit DIR` on a shard directory (`convert --to shards`): trains from the shard files
/// shards with the conversion's config, changed by --config and the flags.
extension FitCommand {
    static func fitShards(_ directory: String, _ options: Options, out: inout Output) throws {
        if options.windowSeconds != nil { throw CLIError.usage("--window-seconds cannot be used with shards: their windows are cut") }
        var values: [String: JSONValue] = [:]
        if let file = options.configFile {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError.failure("\(file): cannot read the config file; check the path")
            }
            values = try ConfigOptions.fileValues(data, source: file)
        }
        let group = Job.group
        let run: ShardRun
        do {
            run = try ShardRun(directory: directory, group: group) { base in
                var config = try ConfigOptions.resolve(base: base, values: values, flags: options.overrides)
                if group.size > 1 && values["accumulate"] == nil && options.overrides.values["accumulate"] == nil {
                    config.accumulate = group.size  // one part of each batch per rank
                }
                return config
            }
        } catch let e as ShardError {
            throw CLIError.failure(e.description)
        }
        let folder = group.rank == 0 ? try RunFolder.create(options.out ?? "runs/\(run.manifest.dataset)", replacing: options.force) : nil
        let data = run.training.data, config = run.config
        out.line(
            "fit: \(directory): \(data.train.count) training windows, \(data.validation?.count ?? 0) validation windows (shards of "
                + "\(run.manifest.dataset)), \(data.classes.count) classes")
        out.line("fit: \(config.modelName), \(run.training.network.parameterCount) parameters, \(config.optimizer.rawValue)")
        var display = ProgressDisplay(terminal: out.isTerminal)
        let started = Date()
        do {
            try run.train(onBatch: { display.batch($0, &out) }, onEpoch: { display.epoch($0, epochs: config.epochs, &out) })
        } catch let e as ShardError {
            display.finish(&out)
            throw CLIError.failure(e.description)
        } catch {
            display.finish(&out)
            throw error
        }
        display.finish(&out)
        let bytes = try run.modelBytes()
        if let folder {
            try AtomicFile.write(try RunFolder.encode(config), to: folder.configPath)
            try AtomicFile.write(Data(bytes), to: folder.modelPath)
        }
        out.line(String(format: "fit: trained in %.1f s; wrote %@", Date().timeIntervalSince(started), folder?.modelPath ?? "nothing (not rank 0)"))
    }
}
