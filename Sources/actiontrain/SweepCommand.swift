import ActionTrain
import Datasets
import Foundation
import Pipelines

/// `actiontrain sweep`: a grid of configs scored by cross-validation, its trials spread over the
/// ranks of `mpirun` (or run in this process); rank 0 prints and writes the table.
enum SweepCommand: ParsableCommand {
    struct Options: CommandOptions {
        var grid = ""
        var data = ""
        var out: String?
        var force = false
        var resume = false
        var overrides = ConfigFlags()
        var reading = DataFlags()
    }

    static let spec = CommandSpec<Options>(
        name: "sweep",
        summary: "Score a grid of configs by cross-validation (folds x seeds), spread over MPI ranks.",
        positionals: [
            Positional(
                "GRID", \.grid,
                help: "JSON: {\"config\": {keys}, \"grid\": {\"key\": [values]} or \"candidates\": [{keys}], \"folds\": 3, \"seeds\": 1}."),
            Positional("DATA", \.data, help: "Dataset file, as for fit. Its test split is never read."),
        ],
        options: [
            Option("out", \.out, value: "DIR", help: "Folder for sweep.md, sweep.json and chosen.json (default runs/<dataset>-sweep)."),
            Option("force", \.force, help: "Replace the files of an existing folder."),
            Option("resume", \.resume, help: "Continue an interrupted sweep in --out: trials already run (sweep-trials.jsonl) are not run again."),
        ] + DataFlags.options.map { $0.within(\.reading) } + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            Every combination of the grid's values is a candidate (or each object of "candidates"): the file's "config" keys and the
            flags, the recipe for the keys given nowhere (as fit would choose them), then the grid's keys.
            Each candidate is trained on every fold (k-fold by group on the training sequences, as tune
            does) with every seed (the config's seed + 0 ..< seeds): one trial each. Under
            'mpirun -np N' trial i runs on rank i mod N and rank 0 gathers the results; the table is the
            same at any N. The candidate with the best mean fold accuracy (averaged over seeds) is chosen
            and written as chosen.json, a config file for 'fit --config'. A trial that fails (a
            diverging training, say) is recorded with its reason and the sweep goes on; its candidate
            is never chosen. Every trial is logged as it finishes (sweep-trials.jsonl), so --resume
            continues an interrupted sweep. docs/distributed.md.
            """)

    /// The grid file: base keys, the candidates (a grid of values per key, or a list), folds
    /// and seeds.
    struct Grid {
        typealias Assignment = [(key: String, value: JSONValue)]
        var config: [String: JSONValue] = [:]
        /// The keys each candidate sets, in order.
        var candidates: [Assignment] = []
        var folds = 3
        var seeds = 1

        /// The grid file at `path` (Pipelines' `SweepGrid`), its config keys checked as a config file's.
        init(_ path: String) throws {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError.failure("\(path): cannot read the grid file; check the path")
            }
            let grid: SweepGrid
            do {
                grid = try SweepGrid(parsing: Array(data)) { keys, place in _ = try ConfigOptions.fileValues(keys, source: "\(path) \(place)") }
            } catch let e as SweepGridError {
                throw CLIError.failure("\(path): \(e)")
            }
            config = try ConfigOptions.fileValues(grid.config, source: "\(path) \"config\"")
            for (i, candidate) in grid.candidates.enumerated() where candidate.contains(where: { $0.key == ConfigOptions.peopleKey }) {
                throw CLIError.failure(
                    "\(path): candidate \(i + 1): 'people' says how to read the data, the same for every trial: give it in \"config\" or as --people")
            }
            candidates = grid.candidates.map { $0.map { ($0.key, JSONValue($0.value)) } }
            (folds, seeds) = (grid.folds, grid.seeds)
        }
    }

    static func run(_ options: Options, out: inout Output) throws {
        guard !(options.resume && options.force) else { throw CLIError.usage("--resume continues a sweep folder and --force replaces one: give one of them") }
        let grid = try Grid(options.grid)
        let people = options.reading.people ?? ConfigOptions.people(grid.config)
        let dataset = try options.reading.load(options.data, people: people, out: &out)
        let group = Job.group
        let path = options.out ?? "runs/\(dataset.name)-sweep"
        let logPath = "\(path)/\(SweepTrialLog.fileName)"
        // Rank 0 writes the folder and the trial log; every rank learns the logged trials.
        var folder: RunFolder?, log: SweepTrialLog?, logged: [String: SweepRun.TrialResult] = [:]
        if group.rank == 0 {
            do {
                if options.resume {
                    folder = try RunFolder.claim(path, command: "sweep")
                    logged = try SweepTrialLog.read(logPath, datasetHash: dataset.contentHash)
                    log = try SweepTrialLog(appendingTo: logPath)
                } else {
                    folder = try RunFolder.create(path, replacing: options.force, command: "sweep")
                    log = try SweepTrialLog(creating: logPath, datasetHash: dataset.contentHash)
                }
            } catch let e as FitError {
                throw FitCommand.message(e)
            } catch let e as SweepError {
                throw CLIError.failure("\(e); start a new sweep without --resume")
            }
        }
        let known = try JSONDecoder().decode(
            [String: SweepRun.TrialResult].self, from: Data(try group.allGather(bytes: Array(try JSONEncoder().encode(logged)))[0]))
        let base = try ConfigOptions.resolve(base: TrainingConfig(), values: grid.config, flags: options.overrides)
        let given = Set(grid.config.keys).union(options.overrides.values.keys).union(grid.candidates.flatMap { $0.map(\.key) })
        let resolved = try FitPipeline.resolve(base, for: dataset, explicit: given)
        let candidates = try grid.candidates.map { c in
            Tuning.Candidate(
                name: c.isEmpty ? "(config)" : c.map { "\($0.key)=\(text($0.value))" }.joined(separator: ", "),
                config: try ConfigOptions.resolve(base: resolved.config, values: Dictionary(uniqueKeysWithValues: c.map { ($0.key, $0.value) }), flags: ConfigFlags()),
                changes: c.map { "\($0.key)=\(text($0.value))" })
        }
        let sweep = SweepRun(dataPath: options.data, dataset: dataset, candidates: candidates, folds: grid.folds, seeds: grid.seeds)
        let folds = try sweep.tune.folds(seed: resolved.config.seed)
        if !resolved.choices.isEmpty { out.write(FitCommand.recipeBlock(resolved.choices)) }
        if options.resume { out.line("sweep: resuming \(path): \(known.count) trials already run") }
        out.line(
            "sweep: \(dataset.name): \(candidates.count) candidates x \(folds.count) folds x \(sweep.seeds) seeds = "
                + "\(sweep.trials(folds: folds.count).count) trials on \(group.size) rank\(group.size == 1 ? "" : "s")")
        let outcome: SweepRun.Outcome
        var logFailed = false
        do {
            outcome = try sweep.run(group: group, foldSeed: resolved.config.seed, known: known) { r, key, cached in
                if !cached, let log {
                    do { try log.append(key: key, result: r) } catch {
                        if !logFailed { out.note("warning: \(error); a --resume would run such trials again\n") }
                        logFailed = true
                    }
                }
                out.line("  " + trialLine(r, candidates: candidates) + (cached ? " (from the trial log)" : ""))
            }
        } catch let e as FitError {
            throw FitCommand.message(e)
        }
        guard let folder else { return }
        let table = (outcome.search?.markdown() ?? "") + failuresMarkdown(outcome, candidates: candidates)
        out.write("\n" + table + "\n")
        try AtomicFile.write(Data(table.utf8), to: "\(folder.path)/sweep.md")
        try AtomicFile.write(try json(outcome, candidates: candidates), to: "\(folder.path)/sweep.json")
        guard let search = outcome.search, let chosenConfig = outcome.chosen else {
            let first = outcome.failures.first.map { trialLine($0, candidates: candidates) } ?? "-"
            throw CLIError.failure(
                "sweep: every candidate has a failed trial, so none is chosen (first: \(first)); the trials are in \(folder.path)/sweep.json")
        }
        try AtomicFile.write(try chosenFile(chosenConfig, people: people), to: "\(folder.path)/chosen.json")
        let chosen = search.outcome.results[search.outcome.chosen]
        out.line("sweep: chosen \(chosen.candidate.name); its config is \(folder.path)/chosen.json (actiontrain fit DATA --config it)")
    }

    /// One trial as printed: `rank 0: lr=0.1, fold 1, seed +0: 0.833 (1.2 s)`, or `...: failed: why`.
    static func trialLine(_ r: SweepRun.TrialResult, candidates: [Tuning.Candidate]) -> String {
        let head = "rank \(r.rank): \(candidates[r.trial.candidate].name), fold \(r.trial.fold + 1), seed +\(r.trial.seed): "
        guard let accuracy = r.accuracy else { return head + "failed: \(r.failure ?? "?")" }
        return head + String(format: "%.3f (%.1f s)", accuracy, r.seconds)
    }

    /// The failed trials under the table (nothing when none failed).
    static func failuresMarkdown(_ outcome: SweepRun.Outcome, candidates: [Tuning.Candidate]) -> String {
        let failed = outcome.failures
        guard !failed.isEmpty else { return "" }
        var text = "\nFailed trials (\(failed.count) of \(outcome.trials.count); their candidates have no mean and are never chosen):\n"
        for r in failed {
            text += "- \(candidates[r.trial.candidate].name), fold \(r.trial.fold + 1), seed +\(r.trial.seed): \(r.failure ?? "?")\n"
        }
        return text
    }

    /// chosen.json: the chosen config, and the --people the sweep read the data with (a config
    /// file's `people` key), so that `fit DATA --config chosen.json` trains on the same data.
    static func chosenFile(_ config: TrainingConfig, people: PeoplePolicy?) throws -> Data {
        guard let people else { return try RunFolder.encode(config) }
        var object = try JSONDecoder().decode([String: JSONValue].self, from: RunFolder.encode(config))
        object[ConfigOptions.peopleKey] = .string(people.description)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(object)
    }

    /// A grid value as it is written in JSON (strings without their quotes).
    static func text(_ v: JSONValue) -> String {
        if case .string(let s) = v { return s }
        return (try? JSONEncoder().encode(v)).map { String(decoding: $0, as: UTF8.self) } ?? "\(v)"
    }

    /// sweep.json: every trial (a failed one with its reason instead of an accuracy) and the
    /// chosen candidate (absent when none could be chosen).
    static func json(_ outcome: SweepRun.Outcome, candidates: [Tuning.Candidate]) throws -> Data {
        struct Row: Encodable {
            var candidate: String, fold: Int, seed: Int, accuracy: Double?, failure: String?, seconds: Double, rank: Int
        }
        struct File: Encodable {
            var schema = "actiontrain.sweep", schemaVersion = 2
            var chosen: String?
            var trials: [Row]
        }
        let file = File(
            chosen: outcome.search.map { $0.outcome.results[$0.outcome.chosen].candidate.name },
            trials: outcome.trials.map {
                Row(
                    candidate: candidates[$0.trial.candidate].name, fold: $0.trial.fold + 1, seed: $0.trial.seed, accuracy: $0.accuracy,
                    failure: $0.failure, seconds: $0.seconds, rank: $0.rank)
            })
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try e.encode(file)
    }
}
