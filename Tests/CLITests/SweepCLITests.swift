@testable import ActionRuntime
@testable import ActionTrain
@testable import actiontrain
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
        XCTAssertTrue(bad.err.contains("config key 'people' expects split, largest, central, longest, confident or bodies=M (as --people), got"), bad.err)
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
            (#"{\#(Self.base), "grid": {"epochs": [1]}, "folds": 1}"#, ["\"folds\" must be an integer ≥ 2"]),
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
