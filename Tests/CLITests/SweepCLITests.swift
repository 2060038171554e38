@testable import ActionRuntime
@testable import ActionTrain
import Pipelines
@testable import actiontrain
import Datasets
import Foundation
import TestSupport
import XCTest

/// `actiontrain sweep` in one process and `fit --accumulate`, end to end on the tiny fixture.
/// (Several ranks: PipelinesTests/DistributedTests with threads, scripts/test-mpi under mpirun.)
final class SweepCLITests: XCTestCase {
    let fixture = FitCLITests.fixture

    func run(_ args: [String]) -> (code: Int32, out: String, err: String) { runCLI(args) }
    func folder() throws -> String { try scratchFolder() }

    func write(_ text: String, _ path: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }

    static let base = #""config": {"recipe": "none", "architecture": "mlp", "windowFrames": 10, "hidden": [16], "batchSize": 4, "threads": 1, "epochs": 2, "seed": 3}"#

    func testASweepWritesItsTableAndAChosenConfigThatFitTakes() throws {
        let dir = try folder()
        try write(#"{\#(Self.base), "grid": {"learningRate": [0.001, 0.01], "hidden": [[8], [16]]}, "folds": 2}"#, "\(dir)/grid.json")
        let r = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/sweep"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("4 candidates x 2 folds x 1 seeds = 8 trials on 1 rank"), r.out)
        XCTAssertTrue(r.out.contains("hidden=[8], learningRate=0.001"), r.out)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/sweep/sweep.json"))) as! [String: Any]
        let trials = json["trials"] as! [[String: Any]]
        XCTAssertEqual(trials.count, 8)
        XCTAssertEqual(Set(trials.map { $0["candidate"] as! String }).count, 4)
        let chosen = json["chosen"] as! String
        let table = try String(contentsOfFile: "\(dir)/sweep/sweep.md", encoding: .utf8)
        XCTAssertTrue(table.contains("**\(chosen)** (chosen)"), table)
        // The chosen config is a config file for fit, with the grid's values.
        let config = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/sweep/chosen.json")))
        XCTAssertTrue(chosen.contains("learningRate=\(config.learningRate)"), chosen)
        XCTAssertEqual(config.epochs, 2)
        let f = run(["fit", fixture, "--config", "\(dir)/sweep/chosen.json", "--out", "\(dir)/fit"])
        XCTAssertEqual(f.code, 0, f.err)
        XCTAssertEqual(try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/fit/config.json"))), config)
    }

    /// Issue 37: chosen.json keeps --people, so that fit --config reads the data as the sweep
    /// did (two people per frame, stacked as two bodies: without it fit refuses the data).
    func testChosenConfigKeepsThePeoplePolicy() throws {
        let dir = try folder()
        let data = try InteractionCLITests.twoPersonData(URL(fileURLWithPath: dir))
        let base = #""config": {"recipe": "none", "architecture": "mlp", "windowFrames": 5, "hidden": [8], "batchSize": 4, "threads": 1, "epochs": 1, "seed": 3}"#
        try write(#"{\#(base), "grid": {"learningRate": [0.001, 0.01]}, "folds": 2}"#, "\(dir)/grid.json")
        let r = run(["sweep", "\(dir)/grid.json", data, "--people", "bodies=2", "--out", "\(dir)/sweep"])
        XCTAssertEqual(r.code, 0, r.err)
        let chosen = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/sweep/chosen.json"))) as! [String: Any]
        XCTAssertEqual(chosen["people"] as? String, "bodies=2")
        let f = run(["fit", data, "--config", "\(dir)/sweep/chosen.json", "--out", "\(dir)/fit"])
        XCTAssertEqual(f.code, 0, f.err)
        XCTAssertEqual(try ActionModel(contentsOf: "\(dir)/fit/model.atm").bodies, 2)
        // A config file's people is checked like --people; a grid may not vary it.
        try write(#"{"people": "everyone"}"#, "\(dir)/bad.json")
        let bad = run(["fit", data, "--config", "\(dir)/bad.json", "--out", "\(dir)/bad"])
        XCTAssertEqual(bad.code, 1)
        XCTAssertTrue(bad.err.contains("config key 'people' expects \(PeoplePolicy.choices) (as --people), got"), bad.err)
        try write(#"{\#(base), "grid": {"people": ["bodies=2", "largest"]}}"#, "\(dir)/varied.json")
        let varied = run(["sweep", "\(dir)/varied.json", data, "--out", "\(dir)/varied"])
        XCTAssertEqual(varied.code, 1)
        XCTAssertTrue(varied.err.contains("'people' says how to read the data, the same for every trial"), varied.err)
    }

    func testCandidatesAreTriedAsListedOnTheConfig() throws {
        let dir = try folder()
        try write(#"{\#(Self.base), "candidates": [{}, {"hidden": [8], "learningRate": 0.01}], "folds": 2, "seeds": 2}"#, "\(dir)/c.json")
        let r = run(["sweep", "\(dir)/c.json", fixture, "--out", "\(dir)/sweep"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("2 candidates x 2 folds x 2 seeds = 8 trials"), r.out)
        let table = try String(contentsOfFile: "\(dir)/sweep/sweep.md", encoding: .utf8)
        XCTAssertTrue(table.contains("(config)") && table.contains("hidden=[8], learningRate=0.01"), table)
    }

    func testBadGridsAreOneLineErrorsNamingTheKey() throws {
        let dir = try folder()
        let cases: [(String, [String])] = [
            (#"{"grid": {"learningRate": [0.1]}, "trials": 3}"#, ["unknown key 'trials'"]),
            (#"{"grid": {"learningRat": [0.1]}}"#, ["unknown config key 'learningRat'", "learningRate"]),
            (#"{"grid": {"learningRate": []}}"#, ["grid key 'learningRate' needs a non-empty list"]),
            (#"{"grid": {"epochs": ["many"]}}"#, ["config key 'epochs'"]),
            (#"{"grid": {}}"#, ["give either \"grid\"", "or \"candidates\""]),
            (#"{"grid": {"epochs": [1]}, "candidates": [{}]}"#, ["give either \"grid\""]),
            (#"{"candidates": [{"epochs": 2}, 3]}"#, ["candidate 2 must be an object of config keys"]),
            (#"{"candidates": [{"epohcs": 2}]}"#, ["candidate 1", "unknown config key 'epohcs'"]),
            (#"{\#(Self.base), "grid": {"epochs": [1]}, "folds": 1}"#, ["\"folds\" must be an integer from 2 to 100, got 1"]),
            ("[1, 2]", ["not a JSON object"]),
        ]
        for (i, (text, fragments)) in cases.enumerated() {
            try write(text, "\(dir)/g\(i).json")
            let r = run(["sweep", "\(dir)/g\(i).json", fixture, "--out", "\(dir)/s\(i)"])
            XCTAssertEqual(r.code, 1, text)
            for f in fragments { XCTAssertTrue(r.err.contains(f), "\(text): \(r.err)") }
        }
    }

    func testFitAccumulatesPartsAndChecksTheCount() throws {
        let dir = try folder()
        let r = run(["fit", fixture] + FitCLITests.quick + ["--epochs", "2", "--accumulate", "2", "--out", "\(dir)/a"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("accumulate 2"), r.out)
        let config = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/a/config.json")))
        XCTAssertEqual(config.accumulate, 2)
        let bad = run(["fit", fixture] + FitCLITests.quick + ["--accumulate", "5", "--out", "\(dir)/b"])
        XCTAssertEqual(bad.code, 1)
        XCTAssertTrue(bad.err.contains("accumulate' must be in [1, batchSize] = [1, 4], got 5"), bad.err)
    }
}

/// Issue 38 finding 2: one diverging candidate (`learningRate` 1e30) ended the sweep with exit 1
/// after four scored trials, writing nothing and naming no candidate; there was no --resume.
extension SweepCLITests {
    func trials(_ dir: String) throws -> [[String: Any]] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/sweep.json"))) as! [String: Any]
        XCTAssertEqual(json["schemaVersion"] as? Int, 2)
        return json["trials"] as! [[String: Any]]
    }

    func testAFailedTrialIsRecordedWithItsReasonAndTheSweepGoesOn() throws {
        let dir = try folder()
        try write(#"{\#(Self.base), "grid": {"learningRate": [0.001, 0.003, 1e30]}, "folds": 2}"#, "\(dir)/grid.json")
        let r = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/sweep"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("rank 0: learningRate=1e+30, fold 1, seed +0: failed: training diverged"), r.out)
        let rows = try trials("\(dir)/sweep")
        XCTAssertEqual(rows.count, 6)
        XCTAssertEqual(rows.filter { $0["failure"] != nil }.map { $0["candidate"] as! String }, ["learningRate=1e+30", "learningRate=1e+30"])
        XCTAssertEqual(rows.filter { $0["accuracy"] != nil }.count, 4)
        let table = try String(contentsOfFile: "\(dir)/sweep/sweep.md", encoding: .utf8)
        XCTAssertTrue(table.contains("Failed trials (2 of 6; their candidates have no mean and are never chosen):"), table)
        XCTAssertTrue(table.contains("- learningRate=1e+30, fold 2, seed +0: training diverged"), table)
        let chosen = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/sweep/chosen.json")))
        XCTAssertTrue([0.001, 0.003].contains(chosen.learningRate), "\(chosen.learningRate)")
        // Every candidate failing: the trials are still written, nothing is chosen, exit 1.
        try write(#"{\#(Self.base), "grid": {"learningRate": [1e30]}, "folds": 2}"#, "\(dir)/bad.json")
        let bad = run(["sweep", "\(dir)/bad.json", fixture, "--out", "\(dir)/bad"])
        XCTAssertEqual(bad.code, 1)
        XCTAssertTrue(bad.err.hasPrefix("error: sweep: every candidate has a failed trial, so none is chosen (first: rank 0: learningRate=1e+30, fold 1, seed +0: failed: training diverged"), bad.err)
        XCTAssertEqual(try trials("\(dir)/bad").count, 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/bad/chosen.json"))
    }

    func testAnInterruptedSweepResumesFromItsTrialLog() throws {
        let dir = try folder()
        try write(#"{\#(Self.base), "grid": {"learningRate": [0.001, 0.01]}, "folds": 2}"#, "\(dir)/grid.json")
        let whole = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/a"])
        XCTAssertEqual(whole.code, 0, whole.err)
        let expected = try trials("\(dir)/a").map { $0["accuracy"] as! Double }
        // A sweep killed during its fourth trial: the log's header, three trials and a line cut short.
        let log = try String(contentsOfFile: "\(dir)/a/\(SweepTrialLog.fileName)", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(log.count, 5, "the header and one line per trial")
        try FileManager.default.createDirectory(atPath: "\(dir)/b", withIntermediateDirectories: false)
        try write(log[0...3].joined(separator: "\n") + "\n" + log[4].prefix(20), "\(dir)/b/\(SweepTrialLog.fileName)")
        let resumed = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/b", "--resume"])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertTrue(resumed.out.contains("sweep: resuming \(dir)/b: 3 trials already run"), resumed.out)
        XCTAssertEqual(resumed.out.components(separatedBy: "(from the trial log)").count - 1, 3, resumed.out)
        XCTAssertEqual(try trials("\(dir)/b").map { $0["accuracy"] as! Double }, expected, "the uninterrupted sweep's table")
        let hash = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(log[0].utf8)) as? [String: String])["datasetHash"]!
        XCTAssertEqual(try SweepTrialLog.read("\(dir)/b/\(SweepTrialLog.fileName)", datasetHash: hash).count, 4, "the cut line is left out, the new trial logged")
        // Refusals.
        let both = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/b", "--resume", "--force"])
        XCTAssertEqual(both.code, 2)
        XCTAssertEqual(both.err, "error: --resume continues a sweep folder and --force replaces one: give one of them\n")
        try FileManager.default.createDirectory(atPath: "\(dir)/c", withIntermediateDirectories: false)
        let none = run(["sweep", "\(dir)/grid.json", fixture, "--out", "\(dir)/c", "--resume"])
        XCTAssertEqual(none.code, 1)
        XCTAssertEqual(none.err, "error: \(dir)/c/\(SweepTrialLog.fileName): no trial log of an earlier sweep to resume; start a new sweep without --resume\n")
    }
}

/// Issue 38 findings 14 and 15: a key given twice in a grid or a config was accepted (a decoder
/// kept one of the two silently: `{"epochs": 2, ..., "epochs": 1}` trained 2 epochs), and `8.0`
/// was taken as an integer.
extension SweepCLITests {
    func testAKeyGivenTwiceOrANonIntegerIntegerIsRefusedInGridsAndConfigs() throws {
        let dir = try folder()
        let grids: [(String, String)] = [
            (#"{"grid": {"learningRate": [0.1]}, "grid": {"dropout": [0.1]}}"#, #"the key "grid" appears twice in the object"#),
            (#"{"grid": {"learningRate": [0.1], "learningRate": [0.2]}}"#, #"the key "learningRate" appears twice in grid"#),
            (#"{"config": {"epochs": 2, "epochs": 1}, "grid": {"learningRate": [0.1]}}"#, #"the key "epochs" appears twice in config"#),
            (#"{"candidates": [{"hidden": [8], "hidden": [16]}]}"#, #"the key "hidden" appears twice in candidates[0]"#),
            (#"{"grid": {"epochs": [2.0]}}"#, "grid: config key 'epochs' expects an integer, got 2.0"),
            (#"{"grid": {"epochs": [2]}, "folds": 3.0}"#, "\"folds\" must be an integer from 2 to 100, got 3.0"),
        ]
        for (i, (text, message)) in grids.enumerated() {
            try write(text, "\(dir)/g\(i).json")
            let r = run(["sweep", "\(dir)/g\(i).json", fixture, "--out", "\(dir)/s\(i)"])
            XCTAssertEqual(r.code, 1, text)
            XCTAssertTrue(r.err.hasPrefix("error: \(dir)/g\(i).json") && r.err.contains(message), "\(text): \(r.err)")
        }
        let configs: [(String, String)] = [
            (#"{"epochs": 2, "recipe": "none", "epochs": 1}"#, #"not a JSON object of config keys (line 1, column 33: the key "epochs" appears twice in the object; give each key once)"#),
            (#"{"augmentation": {"rotation": 0.1, "rotation": 0.2}}"#, #"the key "rotation" appears twice in augmentation"#),
            (#"{"epochs": 8.0}"#, "config key 'epochs' expects an integer, got 8.0"),
            (#"{"hidden": [16, 8e0]}"#, "config key 'hidden' expects a list of integers"),
        ]
        for (i, (text, message)) in configs.enumerated() {
            try write(text, "\(dir)/c\(i).json")
            let r = run(["fit", fixture, "--config", "\(dir)/c\(i).json", "--out", "\(dir)/f\(i)"])
            XCTAssertEqual(r.code, 1, text)
            XCTAssertTrue(r.err.hasPrefix("error: \(dir)/c\(i).json: ") && r.err.contains(message), "\(text): \(r.err)")
        }
    }
}
