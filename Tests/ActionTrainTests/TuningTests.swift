@testable import ActionTrain
import Datasets
import PoseCore
import TestSupport
import XCTest

/// The search logic of `tune`, with a scoring function whose answers are known.
final class TuningTests: XCTestCase {
    let folds = [Fold(name: "1", train: [0, 1], test: [2]), Fold(name: "2", train: [1, 2], test: [0])]

    /// Changes that set the epochs, dropout and kernel; the score rewards some of them.
    func changes() -> [Tuning.Change] {
        [
            Tuning.Change("epochs 100", keys: ["epochs"]) { $0.epochs = 100 },
            Tuning.Change("dropout 0.3", keys: ["dropout"]) { $0.dropout = 0.3 },
            Tuning.Change("kernel 3", keys: ["kernel"]) { $0.kernel = 3 },
        ]
    }

    /// 0.8, + 0.05 for 100 epochs, + 0.03 for dropout 0.3, − 0.1 for kernel 3; fold 2 scores
    /// 0.01 lower than fold 1.
    func score(_ c: TrainingConfig, _ f: Fold) -> Double {
        0.8 + (c.epochs == 100 ? 0.05 : 0) + (c.dropout == 0.3 ? 0.03 : 0) - (c.kernel == 3 ? 0.1 : 0) - (f.name == "2" ? 0.01 : 0)
    }

    func testSingleChangesThenTheWinnersTogether() throws {
        var trials: [(String, Int)] = []
        var seeds: [UInt64] = []
        let out = try Tuning.search(
            base: TrainingConfig(), changes: changes(), explicit: [], folds: folds, budget: nil,
            onEvent: { if case .trial(let name, let fold, _, _, _) = $0 { trials.append((name, fold)) } },
            run: { c, f in
                seeds.append(c.seed)
                return self.score(c, f)
            })
        XCTAssertEqual(out.results.map(\.candidate.name), ["recipe", "epochs 100", "dropout 0.3", "kernel 3", "epochs 100, dropout 0.3"])
        XCTAssertEqual(trials.count, 10, "every candidate on every fold")
        XCTAssertEqual(seeds, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1], "fold k trains with seed + k")
        assertClose(out.results[0].score!, 0.795, absolute: 1e-12)
        assertClose(out.results[0].spread!, (0.00005).squareRoot(), absolute: 1e-12)
        XCTAssertEqual(out.results[out.chosen].candidate.name, "epochs 100, dropout 0.3")
        XCTAssertEqual(out.results[out.chosen].candidate.config.epochs, 100)
        XCTAssertEqual(out.results[out.chosen].candidate.config.dropout, 0.3)
        XCTAssertFalse(out.stoppedByBudget)
    }

    func testTiesGoToTheSimplerConfigAndExplicitKeysAreNotSearched() throws {
        let out = try Tuning.search(
            base: TrainingConfig(), changes: changes(), explicit: ["epochs"], folds: folds, budget: nil, margin: 0.04,
            run: score)
        XCTAssertFalse(out.results.contains { $0.candidate.name.contains("epochs") }, "the user set epochs")
        // dropout gains 0.03 < margin 0.04: the recipe stays.
        XCTAssertEqual(out.results[out.chosen].candidate.name, "recipe")
    }

    func testTheBudgetStopsBeforeACandidateThatCannotFinish() throws {
        var calls = 0
        let out = try Tuning.search(
            base: TrainingConfig(), changes: changes(), explicit: [], folds: folds, budget: 0.05,
            run: { c, f in
                calls += 1
                Thread.sleep(forTimeInterval: 0.02)
                return self.score(c, f)
            })
        XCTAssertEqual(calls, 2, "after the recipe's two folds (0.04 s), two more would pass the 0.05 s budget")
        XCTAssertTrue(out.stoppedByBudget)
        XCTAssertEqual(out.results.count, 1)
        XCTAssertEqual(out.chosen, 0)
    }
}
