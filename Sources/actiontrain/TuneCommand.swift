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
        var minutes = 10.0
        var folds = 5
        var overrides = ConfigFlags()

        func validate() throws {
            guard minutes > 0, minutes.isFinite else { throw CLIError.usage("--minutes must be a positive number") }
            guard folds >= 2 else { throw CLIError.usage("--folds must be at least 2") }
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
            Option("minutes", \.minutes, value: "M", help: "Time for the search (default 10); the final training comes after it."),
            Option("folds", \.folds, value: "K", help: "Cross-validation folds, by group (subject) when the data has groups (default 5)."),
        ] + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            tune starts from the recipe fit would choose, scores it and each change around it (augmentation,
            motion channels, longer windows, more epochs, dropout, wider layers, the other model family)
            by k-fold cross-validation on the training sequences only (folds keep each group on one side),
            then the winning changes together; a change must beat the incumbent by more than 0.005 in mean
            sequence accuracy. Candidates that cannot finish within the time are not started. The chosen
            config is trained on the whole training split as 'fit' would, into the run folder, with
            tune.md and tune.json (every candidate's fold scores) beside config.json and model.atm.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let (config, given) = try ConfigOptions.resolveGiven(file: options.configFile, flags: options.overrides)
        let dataset = try DatasetLoader.load(options.data)
        let folder = try RunFolder.create(options.out ?? "runs/\(dataset.name)-tune", replacing: options.force, command: "tune")
        let tune = TuneRun(
            dataPath: options.data, dataset: dataset, config: config, explicit: given,
            options: .init(folds: options.folds, budget: options.minutes * 60))
        let interrupt = InterruptFlag()
        let signals = interrupt.watchSIGINT()
        defer { InterruptFlag.stopWatching(signals) }
        let folds = try tune.folds(seed: config.seed)
        out.line("tune: \(dataset.name): \(tune.trainingIndices.count) training sequences in \(folds.count) folds (\(folds.map { "\($0.test.count)" }.joined(separator: "/")) held out); up to \(format(options.minutes)) minutes")
        let search: TuneRun.Search
        do {
            search = try tune.search(
                shouldStop: { interrupt.isRaised },
                onEvent: { event in
                    if case .candidate(let r) = event {
                        let folds = r.foldScores.map { $0.map { String(format: "%.3f", $0) } ?? "-" }.joined(separator: " ")
                        out.line(String(format: "  %-34@ %@  mean %.3f ± %.3f  %5.1f s", r.candidate.name as NSString, folds, r.score ?? .nan, r.spread ?? .nan, r.seconds))
                    }
                })
        } catch let e as FitError {
            throw FitCommand.message(e)
        }
        if !search.recipe.isEmpty { out.write(FitCommand.recipeBlock(search.recipe)) }
        if interrupt.isRaised { throw CLIError.interrupted("tune: interrupted during the search; nothing was trained") }
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
