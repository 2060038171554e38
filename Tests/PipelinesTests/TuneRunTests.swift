import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// `tune` through the library on the tiny fixture: folds of the training split only, every
/// candidate scored on every fold, the fold score equal to an evaluation of the fold's model.
final class TuneRunTests: XCTestCase {
    /// The fixture with its first six sequences moved to a test split.
    func dataset() throws -> Dataset {
        var d = try DatasetLoader.load(FitRunTests.fixture)
        for i in 0..<6 { d.sequences[i].split = "test" }
        for i in 6..<d.sequences.count { d.sequences[i].split = "train" }
        return d
    }

    func testFoldsCoverTheTrainingSplitOnlyAndKeepGroupsTogether() throws {
        let d = try dataset()
        let tune = TuneRun(dataPath: FitRunTests.fixture, dataset: d, config: FitRunTests.quick, explicit: nil, options: .init(folds: 3))
        XCTAssertEqual(tune.trainingIndices, Array(6..<24))
        let folds = try tune.folds(seed: 0)
        XCTAssertEqual(folds.count, 3)
        XCTAssertEqual(folds.flatMap(\.test).sorted(), Array(6..<24), "every training sequence is tested once, no test sequence")
        for f in folds { XCTAssertTrue(Set(f.train).isDisjoint(with: f.test)) }

        var grouped = d
        for i in grouped.sequences.indices { grouped.sequences[i].group = "g\(i % 2)" }
        let two = TuneRun(dataPath: "", dataset: grouped, config: FitRunTests.quick, explicit: nil, options: .init(folds: 5))
        XCTAssertEqual(try two.folds(seed: 0).count, 2, "no more folds than groups")
        for i in grouped.sequences.indices { grouped.sequences[i].group = "one" }
        let one = TuneRun(dataPath: "", dataset: grouped, config: FitRunTests.quick, explicit: nil, options: .init())
        assertThrows(["cross-validation needs at least 2 groups", "found 1"]) { _ = try one.folds(seed: 0) }
    }

    func testEveryCandidateIsScoredOnEveryFoldAndTheTableSaysSo() throws {
        let d = try dataset()
        var config = FitRunTests.quick
        config.epochs = 2
        let keys: Set<String> = ["architecture", "windowFrames", "hidden", "batchSize", "seed", "threads", "epochs", "widths"]
        let tune = TuneRun(dataPath: FitRunTests.fixture, dataset: d, config: config, explicit: keys, options: .init(folds: 2, budget: nil))
        var trials = 0
        let search = try tune.search(onEvent: { if case .trial = $0 { trials += 1 } })
        let results = search.outcome.results
        XCTAssertGreaterThan(results.count, 2)
        XCTAssertEqual(trials, 2 * results.count)
        XCTAssertEqual(results[0].candidate.name, "recipe")
        XCTAssertFalse(results.contains { $0.candidate.name.contains("epochs") || $0.candidate.name.contains("widths") }, "keys the user set")
        XCTAssertFalse(search.recipe.isEmpty)
        XCTAssertEqual(search.chosen.epochs, 2)
        // A fold's score is the sequence accuracy of the model trained on the fold.
        let fold = search.outcome.folds[0]
        var foldConfig = results[0].candidate.config
        foldConfig.seed = results[0].candidate.config.seed &+ 0
        assertClose(try tune.score(foldConfig, fold), results[0].foldScores[0]!)
        let table = search.markdown()
        XCTAssertTrue(table.hasPrefix("| candidate | epochs | fold 1 | fold 2 | mean | sd | seconds |"), table)
        XCTAssertEqual(table.split(separator: "\n").count, 3 + results.count, "the rows and the verdict")
        XCTAssertTrue(table.contains("Chosen: "), table)
        XCTAssertTrue(table.contains("(chosen)"))
        let json = try JSONSerialization.jsonObject(with: try search.json()) as! [String: Any]
        XCTAssertEqual((json["candidates"] as! [Any]).count, results.count)
    }

    /// On small data the margin is two held-out sequences: a win by one is not a win.
    func testTheMarginIsAtLeastTwoHeldOutSequences() {
        XCTAssertEqual(TuneRun.margin(0.005, heldOut: 100), 0.02, accuracy: 1e-12)
        XCTAssertEqual(TuneRun.margin(0.005, heldOut: 180), 2.0 / 180, accuracy: 1e-12)
        XCTAssertEqual(TuneRun.margin(0.005, heldOut: 1258), 0.005, accuracy: 1e-12, "large data: the least margin")
        XCTAssertEqual(TuneRun.margin(0.005, heldOut: 0), 2, accuracy: 1e-12, "no held-out sequence: nothing can win")
    }
}
