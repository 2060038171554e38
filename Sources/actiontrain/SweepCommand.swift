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
        ] + DataFlags.options.map { $0.within(\.reading) } + ConfigOptions.options.map { $0.within(\.overrides) },
        discussion: """
            Every combination of the grid's values is a candidate (or each object of "candidates"): the file's "config" keys and the
            flags, the recipe for the keys given nowhere (as fit would choose them), then the grid's keys.
            Each candidate is trained on every fold (k-fold by group on the training sequences, as tune
            does) with every seed (the config's seed + 0 ..< seeds): one trial each. Under
            'mpirun -np N' trial i runs on rank i mod N and rank 0 gathers the results; the table is the
            same at any N. The candidate with the best mean fold accuracy (averaged over seeds) is chosen
            and written as chosen.json, a config file for 'fit --config'. docs/distributed.md.
            """)

    /// The grid file: base keys, the candidates (a grid of values per key, or a list), folds
    /// and seeds.
    struct Grid {
        typealias Assignment = [(key: String, value: JSONValue)]
        static let keys = ["config", "grid", "candidates", "folds", "seeds"]
        var config: [String: JSONValue] = [:]
        /// The keys each candidate sets, in order.
        var candidates: [Assignment] = []
        var folds = 3
        var seeds = 1

        init(_ path: String) throws {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError.failure("\(path): cannot read the grid file; check the path")
            }
            let shape = "\"config\", \"grid\" or \"candidates\", \"folds\" and \"seeds\""
            guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: data) else {
                throw CLIError.failure("\(path): not a JSON object with \(shape)")
            }
            for key in object.keys.sorted() where !Self.keys.contains(key) {
                throw CLIError.failure("\(path): unknown key '\(key)'; a grid has \(shape)")
            }
            if let c = object["config"] {
                config = try ConfigOptions.fileValues(try JSONEncoder().encode(c), source: "\(path) \"config\"")
            }
            /// The keys of one object, checked as a config file's, sorted.
            func assignment(_ v: JSONValue, _ source: String) throws -> Assignment {
                guard case .object(let o) = v else { throw CLIError.failure("\(path): \(source) must be an object of config keys") }
                if o[ConfigOptions.peopleKey] != nil {
                    throw CLIError.failure("\(path): \(source): 'people' says how to read the data, the same for every trial: give it in \"config\" or as --people")
                }
                _ = try ConfigOptions.fileValues(try JSONEncoder().encode(v), source: "\(path) \(source)")
                return o.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            }
            switch (object["grid"], object["candidates"]) {
            case (.object(let grid)?, nil) where !grid.isEmpty:
                candidates = [[]]
                for (key, v) in grid.sorted(by: { $0.key < $1.key }) {
                    guard case .array(let list) = v, !list.isEmpty else {
                        throw CLIError.failure("\(path): grid key '\(key)' needs a non-empty list of values")
                    }
                    let values = try list.map { try assignment(.object([key: $0]), "grid")[0].value }
                    candidates = candidates.flatMap { c in values.map { c + [(key, $0)] } }  // the first key varies slowest
                }
            case (nil, .array(let list)?) where !list.isEmpty:
                candidates = try list.enumerated().map { try assignment($1, "candidate \($0 + 1)") }
            default:
                throw CLIError.failure(
                    "\(path): give either \"grid\" (config keys, each with a list of values) or \"candidates\" (a list of objects of config keys)")
            }
            func count(_ key: String, _ least: Int) throws -> Int? {
                guard let v = object[key] else { return nil }
                guard case .int(let n) = v, n >= least else { throw CLIError.failure("\(path): \"\(key)\" must be an integer ≥ \(least)") }
                return n
            }
            folds = try count("folds", 2) ?? folds
            seeds = try count("seeds", 1) ?? seeds
        }
    }

    static func run(_ options: Options, out: inout Output) throws {
        let grid = try Grid(options.grid)
        let people = options.reading.people ?? ConfigOptions.people(grid.config)
        let dataset = try options.reading.load(options.data, people: people, out: &out)
        let group = Job.group
        let folder = group.rank == 0 ? try RunFolder.create(options.out ?? "runs/\(dataset.name)-sweep", replacing: options.force, command: "sweep") : nil
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
        out.line(
            "sweep: \(dataset.name): \(candidates.count) candidates x \(folds.count) folds x \(sweep.seeds) seeds = "
                + "\(sweep.trials(folds: folds.count).count) trials on \(group.size) rank\(group.size == 1 ? "" : "s")")
        let outcome: SweepRun.Outcome
        do {
            outcome = try sweep.run(group: group, foldSeed: resolved.config.seed) { r in
                out.line(
                    String(
                        format: "  rank %d: %@, fold %d, seed +%d: %.3f (%.1f s)", r.rank, candidates[r.trial.candidate].name as NSString,
                        r.trial.fold + 1, r.trial.seed, r.accuracy, r.seconds))
            }
        } catch let e as FitError {
            throw FitCommand.message(e)
        }
        guard let folder else { return }
        let table = outcome.search.markdown()
        out.write("\n" + table + "\n")
        try AtomicFile.write(Data(table.utf8), to: "\(folder.path)/sweep.md")
        try AtomicFile.write(try json(outcome, candidates: candidates), to: "\(folder.path)/sweep.json")
        try AtomicFile.write(try chosenFile(outcome.chosen, people: people), to: "\(folder.path)/chosen.json")
        let chosen = outcome.search.outcome.results[outcome.search.outcome.chosen]
        out.line("sweep: chosen \(chosen.candidate.name); its config is \(folder.path)/chosen.json (actiontrain fit DATA --config it)")
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

    /// sweep.json: every trial and the chosen candidate.
    static func json(_ outcome: SweepRun.Outcome, candidates: [Tuning.Candidate]) throws -> Data {
        struct Row: Encodable { var candidate: String, fold: Int, seed: Int, accuracy: Double, seconds: Double, rank: Int }
        struct File: Encodable {
            var schema = "actiontrain.sweep", schemaVersion = 1
            var chosen: String
            var trials: [Row]
        }
        let file = File(
            chosen: outcome.search.outcome.results[outcome.search.outcome.chosen].candidate.name,
            trials: outcome.trials.map {
                Row(
                    candidate: candidates[$0.trial.candidate].name, fold: $0.trial.fold + 1, seed: $0.trial.seed, accuracy: $0.accuracy,
                    seconds: $0.seconds, rank: $0.rank)
            })
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try e.encode(file)
    }
}
