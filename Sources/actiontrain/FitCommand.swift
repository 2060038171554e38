import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import Pipelines

/// `actiontrain fit`: flags, printing and exit codes around `FitRun`.
enum FitCommand: ParsableCommand {
    struct Options: CommandOptions {
        var data: String?
        var configFile: String?
        var out: String?
        var force = false
        var resume: String?
        /// The config keys given as flags.
        var overrides = ConfigFlags()
        var windowSeconds: Double?
        var reading = DataFlags()
    }

    static let spec = CommandSpec<Options>(
        name: "fit",
        summary: "Train a classifier on a dataset and write a model file and a run folder.",
        positionals: [Positional("DATA", \.data, help: DataFlags.formats + " Or a shard directory (convert --to shards). Optional with --resume.")],
        options: [
            Option("config", \.configFile, value: "FILE", help: "JSON config file; flags override its keys."),
            Option("out", \.out, value: "DIR", help: "Run folder (default runs/<dataset>). It must not exist unless --force."),
            Option("force", \.force, help: "Replace the files of an existing run folder."),
            Option(
                "resume", \.resume, value: "RUN",
                help: "Continue the run in folder RUN from its checkpoint, exactly where it stopped. Only --epochs, --learning-rate, --gradient-clip-norm, --patience, --min-delta and --threads may change."),
            Option("window-seconds", \.windowSeconds, value: "S", help: "Window length in seconds instead of --window-frames: S times the frame rate (the resampling rate, else the data's)."),
        ] + DataFlags.options.map { $0.within(\.reading) } + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            Training uses the sequences whose split is "train" (all sequences when the data gives no
            split; "test" sequences are never used). Validation uses the "validation" split when there
            is one, otherwise a seeded stratified share of the training sequences (group-aware).
            The run folder gets config.json, log.jsonl, curves.svg and checkpoint.atc after every
            epoch, then model.atm and report.txt / report.json (the validation report; without
            validation sequences, a report on the training sequences, labelled so). Ctrl-C saves
            a checkpoint and tells how to resume. Every option is described in docs/training.md.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        do {
            let run: FitRun
            if let dir = options.resume {
                run = try resume(dir, options, out: &out)
            } else {
                guard let dataPath = options.data else {
                    throw CLIError.usage("missing DATA. Usage: actiontrain fit DATA [options] or actiontrain fit --resume RUN")
                }
                if ShardManifest.isShardDirectory(dataPath) { return try fitShards(dataPath, options, out: &out) }
                var (config, given) = try ConfigOptions.resolveGiven(file: options.configFile, flags: options.overrides)
                let dataset = try options.reading.load(
                    dataPath, people: try ConfigOptions.people(file: options.configFile), lintFollows: true, out: &out)
                if let seconds = options.windowSeconds {
                    guard !given.contains("windowFrames") else { throw CLIError.usage("give --window-frames or --window-seconds, not both") }
                    config.windowFrames = try Guards.windowFrames(seconds: seconds, dataset: dataset, resampleRate: config.frameRate)
                    given.insert("windowFrames")
                }
                let group = Job.group
                if group.size > 1 && !given.contains("accumulate") {
                    config.accumulate = group.size  // one part of each batch per rank
                    given.insert("accumulate")
                }
                // Rank 0 alone creates and writes the run folder.
                let folder = group.rank == 0 ? try RunFolder.create(options.out ?? "runs/\(dataset.name)", replacing: options.force) : nil
                run = try FitRun.start(dataPath: dataPath, dataset: dataset, config: config, explicit: given, folder: folder, group: group)
                describe(run, out: &out)
            }
            try train(run, out: &out)
        } catch let e as FitError {
            throw message(e)
        }
    }

    /// Checks that only resumable keys are given, then restores the run from its checkpoint.
    static func resume(_ dir: String, _ options: Options, out: inout Output) throws -> FitRun {
        if options.configFile != nil { throw CLIError.usage("--config cannot be combined with --resume; the run keeps its config") }
        if options.out != nil { throw CLIError.usage("--out cannot be combined with --resume; the run folder is RUN") }
        if options.windowSeconds != nil { throw CLIError.usage("--window-seconds cannot change when resuming; start a new run instead") }
        for e in ConfigOptions.entries where options.overrides.values[e.key] != nil && !FitRun.resumableKeys.contains(e.key) {
            throw CLIError.usage("--\(e.flag) cannot change when resuming (it changes the model or the data); start a new run instead")
        }
        let run = try FitRun.resume(
            folder: RunFolder(existing: dir), dataPath: options.data, read: try options.reading.readOptions(), group: Job.group
        ) {
            try ConfigOptions.resolve(base: $0, values: [:], flags: options.overrides)
        }
        describe(run, out: &out)
        let p = run.progress
        if run.isFinished {
            out.line("fit: the run already finished (\(p.records.count) epochs\(p.stoppedEarly ? ", stopped early" : "")); writing the model again")
        } else {
            let member = run.config.ensemble > 1 ? " member \(run.current + 1)/\(run.config.ensemble)," : ""
            out.line("fit: resuming \(dir) at\(member) epoch \(p.epoch), batch \(p.batch)")
        }
        return run
    }

    /// The recipe's choices, the run's warnings, data and network.
    static func describe(_ run: FitRun, out: inout Output) {
        if !run.recipe.isEmpty { out.write(recipeBlock(run.recipe)) }
        if let order = run.dataset.bodyOrder, !run.recipe.contains(where: { $0.topic == "people" }) {
            let people = Recipe.peopleChoice(order)
            out.line("fit: people: \(people.seen) → \(people.set)")
        }
        for w in run.warnings { out.note("warning: \(w)\n") }
        let data = run.data, config = run.config
        out.line(
            "fit: \(run.dataset.name): \(data.trainIndices.count) training sequences (\(data.train.count) windows"
                + (data.isAugmented ? ", augmented" : "") + "), "
                + "\(data.validationIndices.count) validation sequences (\(data.validation?.count ?? 0) windows), \(data.classes.count) classes")
        out.line(
            "fit: \(config.modelName), \(run.training.network.parameterCount) parameters"
                + (config.ensemble > 1 ? " per member, \(config.ensemble) members trained in turn" : "") + ", \(config.optimizer.rawValue), "
                + "OpenBLAS \(BLAS.coreName) x\(config.threads)"
                + (run.group.size > 1 ? ", \(run.group.size) ranks (accumulate \(config.microBatches))" : config.microBatches > 1 ? ", accumulate \(config.microBatches)" : ""))
        for head in run.training.linearHeads { out.line(linearHeadLine(head)) }
    }

    /// A solved linear head in one line: which, its penalty and how it was chosen.
    static func linearHeadLine(_ h: LinearHeads.Solution) -> String {
        let which = h.member.map { "member \($0 + 1)'s linear head" } ?? "the linear head"
        if let why = h.notSolved { return "fit: \(which) is trained with the network, not solved: \(why)" }
        var text = "fit: \(which) solved (logistic regression over \(h.features) fixed features of \(h.windows) windows): L2 penalty "
        text += String(format: "%g", h.penalty) + ", \(h.chosenBy)" + (h.temperature == 1 ? "" : String(format: ", temperature %.3g", h.temperature))
        if let best = h.scores.first(where: { $0.penalty == h.penalty }) {
            text += String(format: " (held-out log loss %.3f, accuracy %.3f; penalty: log loss/accuracy ", best.logLoss, best.accuracy)
            text += h.scores.map { String(format: "%g: %.3f/%.3f", $0.penalty, $0.logLoss, $0.accuracy) }.joined(separator: ", ") + ")"
        }
        return text + String(format: ", %d iterations, %.1f s", h.iterations, h.seconds)
    }

    /// The calibration in one line: the temperature, what it was fitted on, and the evidence's
    /// expected calibration error and log loss before and after it.
    /// `averaged`: the model averages its members' probabilities (each member's logits were
    /// divided), so its predicted class can change.
    static func calibrationLine(_ c: ModelHeader.Calibration, trainingWindows: Int, averaged: Bool = false) -> String {
        let all = c.windows >= trainingWindows ? "" : " of \(trainingWindows)"
        let evidence =
            c.evidence == "validation"
            ? "the \(c.windows) validation windows" : "out-of-fold predictions of \(c.windows)\(all) training windows (\(c.folds ?? 0) folds)"
        return "fit: calibrated: temperature " + String(format: "%.3g", c.temperature) + " fitted on \(evidence): ECE "
            + String(format: "%.3f → %.3f, log loss %.3f → %.3f", c.eceBefore, c.eceAfter, c.logLossBefore, c.logLossAfter)
            + (averaged ? " (each averaged member's logits divided by it)" : " (the predicted class is unchanged)")
    }

    /// Trains with a progress display and Ctrl-C handling, then writes the model and reports.
    static func train(_ run: FitRun, out: inout Output) throws {
        let config = run.config, folder = run.folder?.path ?? "RUN"
        let interrupt = InterruptFlag()
        let signals = interrupt.watchSIGINT()
        var watching = true
        func stopWatching() {
            if watching { InterruptFlag.stopWatching(signals) }
            watching = false
        }
        defer { stopWatching() }
        var display = ProgressDisplay(terminal: out.isTerminal)
        let members = config.ensemble
        /// "fit: " or, in an ensemble, "fit: member m/N: ".
        func prefix(_ m: Int) -> String { members > 1 ? "fit: member \(m + 1)/\(members): " : "fit: " }
        let outcome: TrainingOutcome
        do {
            outcome = try run.train(
                shouldStop: { interrupt.isRaised },
                onMember: { event in
                    display.finish(&out)
                    switch event {
                    case .started(let m):
                        if members > 1 { out.line("fit: member \(m + 1)/\(members) (seed \(Ensemble.seed(config.seed, member: m)))") }
                    case .finished(let m, let outcome):
                        if case .stoppedEarly(let epoch) = outcome {
                            out.line(
                                prefix(m) + "early stopping after epoch \(epoch): \(config.monitor.rawValue) has not improved for \(config.patience) epochs")
                        }
                        if let best = run.progress.bestEpoch, run.data.validation != nil {
                            out.line(prefix(m) + "keeping the parameters of epoch \(best) (best \(config.monitor.rawValue))")
                        }
                    }
                }, onBatch: { display.batch($0, &out) }, onEpoch: { display.epoch($0, epochs: config.epochs, &out) })
        } catch {
            display.finish(&out)
            throw error
        }
        display.finish(&out)
        stopWatching()  // from here on Ctrl-C ends the process as usual
        if case .interrupted(let epoch, let batch) = outcome {
            let member = members > 1 ? " in member \(run.current + 1)/\(members)" : ""
            throw CLIError.interrupted(
                "interrupted\(member) at epoch \(epoch), batch \(batch); saved \(run.checkpointPath ?? "the checkpoint"). Resume with: actiontrain fit --resume \(folder)")
        }
        let result = try run.finish(onCalibrationFold: { f, k in
            if f == 0 {
                out.line(
                    "fit: calibrating: \(k) folds of the training sequences, the network trained again on the rest of each until \(ModelCalibration.enoughWindows) windows are held out")
            }
        })
        if let c = result.calibration { out.line(calibrationLine(c, trainingWindows: run.data.train.count, averaged: run.averagesProbabilities)) } else if let note = result.calibrationNote { out.line("fit: \(note)") }
        for w in result.warnings { out.note("warning: \(w)\n") }
        if !result.members.isEmpty, let ensemble = result.validationAccuracy {
            let scores = result.members.enumerated().map { m, r in "member \(m + 1) " + (r.validationAccuracy.map { String(format: "%.3f", $0) } ?? "-") }
            out.line("fit: validation window accuracy: " + scores.joined(separator: ", ") + String(format: "; ensemble %.3f", ensemble))
        }
        if let report = result.validationReport { out.write("\nvalidation report\n" + TextReport.render(report)) }
        if let report = result.trainingReport { out.write("\n" + FitRun.trainingReportNote + "\n" + TextReport.render(report)) }
        let t = run.training.trainer.timings
        if t.exchange > 0 && t.steps > 0 {
            out.line(String(format: "fit: summing and exchanging gradients took %.3f ms per step, %.1f%% of the steps' time", 1000 * t.exchange / Double(t.steps), 100 * t.exchange / t.total))
        }
        out.line(String(format: "fit: trained in %.1f s; wrote %@", run.trainingSeconds, result.modelPath ?? "nothing (not rank 0)"))
    }

    /// The recipe in one short block: a line per topic, what the data showed and what was set.
    static func recipeBlock(_ choices: [Recipe.Choice]) -> String {
        var text = "fit: recipe chosen from the data (keys you set are kept; \"recipe\": \"none\" turns this off):\n"
        for c in choices { text += "  " + c.topic.padding(toLength: 12, withPad: " ", startingAt: 0) + c.seen + " → " + c.set + "\n" }
        return text
    }

    /// The library's message, with the flags that fix it where there are some.
    static func message(_ e: FitError) -> CLIError {
        switch e {
        case .runFolderIsAFile(let dir): return .failure("\(dir) exists and is not a folder; choose another --out")
        case .runFolderNotEmpty(let dir):
            return .failure("\(dir) already holds a run; pass --force to replace it, --resume \(dir) to continue it, or choose another --out")
        case .noCheckpoint: return .failure("\(e); was it written by 'actiontrain fit'?")
        case .checkpointNamesNoDataset(let path): return .failure("\(path): the checkpoint does not name its dataset; pass DATA")
        case .diverged(let cause, let checkpoint?, let epoch?):
            let dir = RunFolder.run(ofCheckpoint: checkpoint)
            return .failure(
                "\(cause); the last good checkpoint (end of epoch \(epoch)) is intact in \(checkpoint); resume from it with a lower rate: actiontrain fit --resume \(dir) --learning-rate LR")
        default: return .failure(e.description)
        }
    }
}
