import ActionTrain
import Datasets
import Foundation
import Pipelines

/// `actiontrain tune`: flags, printing and exit codes around `TuneRun`.
enum TuneCommand: ParsableCommand {
    struct Options: CommandOptions {
        var data = ""
        var configFile: String?
        var out: String?
        var force = false
        var resume = false
        var minutes = 10.0
        var folds = 5
        var overrides = ConfigFlags()
        /// The longest --minutes: a year.
        static let maximumMinutes = 525_600.0
        var reading = DataFlags()

        func validate() throws {
            guard minutes > 0, minutes <= Self.maximumMinutes else {
                throw CLIError.usage("--minutes must be a positive number of minutes, at most \(Int(Self.maximumMinutes)) (a year), got \(minutes)")
            }
            guard folds >= 2 && folds <= SweepGrid.maximumFolds else {
                throw CLIError.usage("--folds must be 2 to \(SweepGrid.maximumFolds), got \(folds)")
            }
        }
    }

    static let spec = CommandSpec<Options>(
        name: "tune",
        summary: "Choose a config by cross-validation on the training split, then train it on the whole split.",
        positionals: [Positional("DATA", \.data, help: "Dataset file, as for fit. Its test split is never read.")],
        options: [
            Option("config", \.configFile, value: "FILE", help: "JSON config file; its keys (and flags) are kept, the search changes only the others."),
            Option("out", \.out, value: "DIR", help: "Run folder for the chosen model (default runs/<dataset>-tune). It must not exist unless --force."),
            Option("force", \.force, help: "Replace the files of an existing run folder."),
            Option("resume", \.resume, help: "Continue an interrupted tune run in --out: trials already run (tune-trials.jsonl) are not run again."),
            Option("minutes", \.minutes, value: "M", help: "Time for the search (default 10, at most 525600: a year); the final training comes after it."),
            Option("folds", \.folds, value: "K", help: "Cross-validation folds, by group (subject) when the data has groups (default 5, at most 100)."),
        ] + DataFlags.options.map { $0.within(\.reading) } + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            tune starts from the recipe fit would choose and scores it and each change around it
            (augmentation, rotations, flips, facing alignment, distance/relative-position/motion channels,
            a temporal pyramid, longer windows, more epochs, dropout, wider layers, the other model
            families) by k-fold cross-validation on the training sequences only (folds keep each group on
            one side). Every candidate trains first for a third of its epochs on every fold, the two best
            then for all of them (tried together too when both beat the recipe). The best must beat the
            recipe by more than 0.005 (and two held-out sequences) in mean sequence accuracy, then again
            on other folds, or the recipe is kept. The screening leaves the time that full-length
            comparison needs, so a short budget screens fewer candidates; trials that cannot finish within
            the time are not started; the table lists them with the time they would take. Every trial is logged (tune-trials.jsonl), so
            --resume continues an interrupted search. The chosen config is trained on the whole training
            split as 'fit' would, into the run folder, with tune.md and tune.json beside config.json and
            model.atm.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        // Not in `validate`: every option parses on its own (OptionsTests sets them all).
        guard !(options.resume && options.force) else { throw CLIError.usage("--resume continues a run folder and --force replaces one: give one of them") }
        let (config, given) = try ConfigOptions.resolveGiven(file: options.configFile, flags: options.overrides)
        let dataset = try options.reading.load(options.data, people: try ConfigOptions.people(file: options.configFile), out: &out)
        let path = options.out ?? "runs/\(dataset.name)-tune"
        let folder: RunFolder
        let log: TuneTrialLog
        var known: [String: Double] = [:]
        let logPath = "\(path)/\(TuneTrialLog.fileName)"
        do {
            if options.resume {
                folder = try RunFolder.claim(path, command: "tune")
                (log, known) = try TuneTrialLog.resume(logPath, datasetHash: dataset.contentHash)
            } else {
                folder = try RunFolder.create(path, replacing: options.force, command: "tune")
                log = try TuneTrialLog(creating: logPath, datasetHash: dataset.contentHash)
            }
        } catch let e as FitError {
            throw FitCommand.message(e)
        } catch let e as TuneError {
            throw CLIError.failure("\(e); start a new run without --resume")
        }
        if options.resume { out.line("tune: resuming \(path): \(known.count) trials already run") }
        let tune = TuneRun(
            dataPath: options.data, dataset: dataset, config: config, explicit: given,
            options: .init(folds: options.folds, budget: options.minutes * 60))
        let interrupt = InterruptFlag()
        let signals = interrupt.watchSIGINT()
        defer { InterruptFlag.stopWatching(signals) }
        let folds = try tune.folds(seed: config.seed)
        out.line("tune: \(dataset.name): \(tune.trainingIndices.count) training sequences in \(folds.count) folds (\(folds.map { "\($0.test.count)" }.joined(separator: "/")) held out); up to \(format(options.minutes)) minutes")
        let search: TuneRun.Search
        var logFailed = false
        do {
            search = try tune.search(
                known: known, shouldStop: { interrupt.isRaised },
                onEvent: { event in
                    if case .trial(_, _, _, _, let score, _, let key, let cached) = event, !cached {
                        do { try log.append(key: key, score: score) } catch {
                            if !logFailed { out.note("warning: \(error); a --resume would run such trials again\n") }
                            logFailed = true
                        }
                    }
                    if case .candidate(let r) = event {
                        let folds = r.foldScores.map { $0.map { String(format: "%.3f", $0) } ?? "-" }.joined(separator: " ")
                        let name = r.candidate.name + (r.confirmation ? " (other folds)" : "")
                        out.line(String(format: "  %-34@ %4d ep  %@  mean %.3f ± %.3f  %5.1f s", name as NSString, r.epochs, folds, r.score ?? .nan, r.spread ?? .nan, r.seconds))
                    }
                })
        } catch let e as FitError {
            throw FitCommand.message(e)
        }
        if !search.recipe.isEmpty { out.write(FitCommand.recipeBlock(search.recipe)) }
        if interrupt.isRaised {
            throw CLIError.interrupted("tune: interrupted during the search; nothing was trained (tune --resume --out \(path) DATA continues it)")
        }
        guard !search.outcome.results.isEmpty else {
            throw CLIError.failure(
                "tune: --minutes \(format(options.minutes)) ran out before the first trial (the recipe's first rung) could start; nothing was scored or trained: give more minutes")
        }
        if search.outcome.stoppedByBudget { out.line("tune: the time ran out; candidates not scored are left out of the table") }
        out.write("\n" + search.markdown() + "\n")
        try AtomicFile.write(Data(search.markdown().utf8), to: "\(folder.path)/tune.md")
        try AtomicFile.write(try search.json(), to: "\(folder.path)/tune.json")
        let chosen = search.outcome.results[search.outcome.chosen]
        out.line("tune: chosen \(chosen.candidate.name); training it on all \(tune.trainingIndices.count) training sequences")
        let run: FitRun
        do {
            run = try FitRun.start(dataPath: options.data, dataset: dataset, config: search.chosen, folder: folder)
        } catch let e as FitError {
            throw FitCommand.message(e)
        }
        FitCommand.describe(run, out: &out)
        try FitCommand.train(run, out: &out)
    }

    static func format(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
}
