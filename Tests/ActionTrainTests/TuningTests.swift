@testable import ActionTrain
import Datasets
import PoseCore
import TestSupport
import XCTest

/// The search logic of `tune`, with a scoring function whose answers are known.
final class TuningTests: XCTestCase {
    let folds = [Fold(name: "1", train: [0, 1], test: [2]), Fold(name: "2", train: [1, 2], test: [0])]
    let other = [Fold(name: "1", train: [0, 2], test: [1]), Fold(name: "2", train: [1, 2], test: [0])]

    /// Seven changes; the score rewards dropout, 100 epochs and kernel 7 and punishes kernel 3.
    func changes() -> [Tuning.Change] {
        [
            Tuning.Change("epochs 180", keys: ["epochs"]) { $0.epochs = 180 },
            Tuning.Change("dropout 0.3", keys: ["dropout"]) { $0.dropout = 0.3 },
            Tuning.Change("kernel 3", keys: ["kernel"]) { $0.kernel = 3 },
            Tuning.Change("kernel 7", keys: ["kernel"]) { $0.kernel = 7 },
            Tuning.Change("batch 32", keys: ["batchSize"]) { $0.batchSize = 32 },
            Tuning.Change("lr 0.002", keys: ["learningRate"]) { $0.learningRate = 0.002 },
            Tuning.Change("gelu", keys: ["activation"]) { $0.activation = .gelu },
        ]
    }

    /// 0.8, + 0.05 for 180 epochs (the base has 90), + 0.03 for dropout 0.3, + 0.02 for kernel 7,
    /// − 0.1 for kernel 3, + 0.001 for batch 32; fold 2 scores 0.01 lower than fold 1. Shorter
    /// training (a screening rung) scores 0.1 lower, whatever the config.
    func score(_ c: TrainingConfig, _ f: Fold) -> Double {
        let full = c.epochs >= 90
        return 0.8 + (c.epochs == 180 || c.epochs == 20 || c.epochs == 60 ? 0.05 : 0) + (c.dropout == 0.3 ? 0.03 : 0)
            + (c.kernel == 7 ? 0.02 : 0) - (c.kernel == 3 ? 0.1 : 0) + (c.batchSize == 32 ? 0.001 : 0) - (f.name == "2" ? 0.01 : 0)
            - (full ? 0 : 0.1)
    }

    func base() -> TrainingConfig {
        var c = TrainingConfig()
        c.epochs = 90
        c.warmupEpochs = 9
        return c
    }

    /// Three rungs: a ninth, a third, all the epochs.
    let threeRungs = Tuning.Plan(rungs: [1.0 / 9, 1.0 / 3, 1], keep: 1.0 / 3, minimumEpochs: 4)

    func testEveryCandidateIsScreenedThenTheBetterThirdGoesOnAndTheTwoBestAreComparedAtFullLength() throws {
        var trials: [(String, Int)] = []
        var epochs: [String: [Int]] = [:]
        let out = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, plan: threeRungs, budget: nil,
            onEvent: { if case .trial(let name, let rung, _, _, _, _, _, _) = $0 { trials.append((name, rung)) } },
            run: { c, f in
                epochs[c.seed == 0 ? "\(c.epochs)" : "", default: []].append(c.warmupEpochs)
                return self.score(c, f)
            })
        let byRung = (0..<3).map { r in out.results.filter { $0.rung == r }.map(\.candidate.name) }
        XCTAssertEqual(byRung[0].count, 8, "the recipe and every change, screened")
        XCTAssertEqual(byRung[1], ["recipe", "epochs 180", "dropout 0.3", "kernel 7"], "the best third of 7 (3) go on, in score order")
        XCTAssertEqual(
            byRung[2], ["recipe", "epochs 180", "dropout 0.3", "epochs 180, dropout 0.3"],
            "the two best at full length, and together (both beat the recipe)")
        XCTAssertEqual(trials.count, 2 * out.results.count, "every candidate on every fold")
        XCTAssertEqual(Set(out.results.filter { $0.rung == 0 }.map(\.epochs)), [10, 20], "a ninth of 90 or of 180 epochs")
        XCTAssertEqual(out.results.filter { $0.rung == 1 }.map(\.epochs), [30, 60, 30, 30])
        XCTAssertEqual(Set(epochs["10"] ?? []), [1], "the warm-up is scaled with the epochs")
        XCTAssertEqual(out.results[out.chosen].candidate.name, "epochs 180, dropout 0.3")
        XCTAssertEqual(out.results[out.chosen].rung, 2)
        XCTAssertEqual(out.results[out.chosen].candidate.config.epochs, 180)
        XCTAssertEqual(out.results[out.chosen].candidate.config.dropout, 0.3)
        XCTAssertFalse(out.stoppedByBudget)
        XCTAssertTrue(out.verdict.contains("no confirmation folds"), out.verdict)
        // 8 candidates cost 8/9 + 4/3 + 4 full-length fits per fold instead of 8.
        let fullFits = out.results.reduce(0.0) { $0 + Double($1.epochs) / Double($1.candidate.config.epochs) }
        XCTAssertEqual(fullFits, 8.0 / 9 + 4.0 / 3 + 4, accuracy: 0.01)

        // One screening rung: the two best of it go to full length.
        let one = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, plan: Tuning.Plan(rungs: [1.0 / 3, 1], keep: 0.5, minimumEpochs: 1),
            budget: nil, run: score)
        XCTAssertEqual(one.results.filter { $0.rung == 1 }.map(\.candidate.name), ["recipe", "epochs 180", "dropout 0.3", "epochs 180, dropout 0.3"])
        XCTAssertEqual(one.results[one.chosen].candidate.name, "epochs 180, dropout 0.3")
    }

    /// A budget too small to screen every candidate still ends with the full-length comparison
    /// of the two best screened and its confirmation: the screening stops where they would no
    /// longer fit. The clock is the search's own: a trial costs a millisecond per epoch.
    func testTheScreeningLeavesTimeForTheTwoBestAtFullLengthAndTheirConfirmation() throws {
        var now = 0.0
        var ran: [(String, Int, Bool)] = []
        let plan = Tuning.Plan(rungs: [1.0 / 3, 1], keep: 1.0 / 3, minimumEpochs: 1)
        let out = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, confirmationFolds: other, plan: plan, budget: 1.6,
            clock: { now },
            run: { c, f in
                now += Double(c.epochs) * 0.001
                ran.append((c.dropout == 0.3 ? "dropout" : "\(c.epochs)", c.epochs, c.seed >= 1000))
                return self.score(c, f)
            })
        XCTAssertLessThanOrEqual(now, 1.6, "within the budget")
        XCTAssertFalse(out.stoppedByBudget, "nothing was cut off the comparison")
        let screened = out.results.filter { $0.rung == 0 }.map(\.candidate.name)
        XCTAssertLessThan(screened.count, 8, "the budget could not screen every candidate: \(screened)")
        XCTAssertGreaterThanOrEqual(screened.count, 3, "the recipe and at least two challengers: \(screened)")
        XCTAssertEqual(
            Set(out.skipped.filter { $0.rung == 0 }.map(\.name)), Set(changes().map(\.name)).subtracting(screened),
            "the candidates left unscreened are listed")
        let full = out.results.filter { $0.rung == 1 && !$0.confirmation }
        XCTAssertEqual(full.count, 3, "the recipe and the two best screened at full length: \(full.map(\.candidate.name))")
        XCTAssertEqual(full.first?.candidate.name, "recipe")
        let confirmed = out.results.filter(\.confirmation).map(\.candidate.name)
        XCTAssertEqual(confirmed.first, "recipe", "the best challenger was confirmed on other folds: \(out.verdict)")
        XCTAssertEqual(confirmed.count, 2)
        XCTAssertEqual(out.results[out.chosen].rung, 1)
        // The chosen one is the best of the two finalists, which beat the recipe twice.
        let best = full.dropFirst().max { ($0.score ?? 0) < ($1.score ?? 0) }!
        XCTAssertEqual(out.results[out.chosen].candidate.name, best.candidate.name, out.verdict)
    }

    func testTheWinnerMustWinAgainOnOtherFolds() throws {
        // dropout wins on the search folds but loses on the confirmation folds.
        let changes = [Tuning.Change("dropout 0.3", keys: ["dropout"]) { $0.dropout = 0.3 }]
        func score(_ c: TrainingConfig, _ f: Fold) -> Double {
            let confirming = f.test == [1]
            return 0.8 + (c.dropout == 0.3 ? (confirming || c.seed >= 1000 ? -0.02 : 0.05) : 0)
        }
        let out = try Tuning.search(
            base: base(), changes: changes, explicit: [], folds: folds, confirmationFolds: other, budget: nil, run: score)
        XCTAssertEqual(out.results[out.chosen].candidate.name, "recipe")
        XCTAssertEqual(out.results.filter(\.confirmation).map(\.candidate.name), ["recipe", "dropout 0.3"])
        XCTAssertTrue(out.verdict.contains("on other folds"), out.verdict)
        // Winning on both: chosen.
        let both = try Tuning.search(
            base: base(), changes: changes, explicit: [], folds: folds, confirmationFolds: other, budget: nil,
            run: { c, _ in 0.8 + (c.dropout == 0.3 ? 0.05 : 0) })
        XCTAssertEqual(both.results[both.chosen].candidate.name, "dropout 0.3")
        XCTAssertFalse(both.results[both.chosen].confirmation, "the chosen result is the search folds' one")
    }

    func testTiesGoToTheRecipeAndExplicitKeysAreNotSearched() throws {
        let out = try Tuning.search(
            base: base(), changes: changes(), explicit: ["epochs"], folds: folds, plan: .exhaustive, budget: nil, margin: 0.04,
            run: score)
        XCTAssertFalse(out.results.contains { $0.candidate.name.contains("epochs") }, "the user set epochs")
        // dropout gains 0.03 < margin 0.04: the recipe stays.
        XCTAssertEqual(out.results[out.chosen].candidate.name, "recipe")
        XCTAssertEqual(out.results.count, 7, "exhaustive: every candidate at full length, no screening")
    }

    func testTheBudgetStopsBeforeATrialThatCannotFinishAndSaysWhatItLeftOut() throws {
        // Each trial takes 0.02 s of the search's own clock (no real sleep: a loaded machine
        // cannot change what the test sees).
        var calls = 0, now = 0.0
        let out = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, plan: .exhaustive, budget: 0.05, clock: { now },
            run: { c, f in
                calls += 1
                now += 0.02
                return self.score(c, f)
            })
        XCTAssertEqual(calls, 2, "after the recipe's two folds (0.04 s), two more would pass the 0.05 s budget")
        XCTAssertTrue(out.stoppedByBudget)
        XCTAssertEqual(out.results.count, 1)
        XCTAssertEqual(out.chosen, 0)
        XCTAssertEqual(out.skipped.map(\.name), changes().map(\.name), "every change that did not run is listed")
        for s in out.skipped {
            let epochs = s.name == "epochs 180" ? 2.0 : 1.0
            XCTAssertEqual(s.seconds, 0.04 * epochs, accuracy: 0.03 * epochs, "two folds at the recipe's measured pace per epoch")
        }
    }

    func testKnownTrialsAreNotRunAgain() throws {
        var known: [String: Double] = [:]
        let first = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, confirmationFolds: other, budget: nil,
            onEvent: { if case .trial(_, _, _, _, let s, _, let key, _) = $0 { known[key] = s } }, run: score)
        var runs = 0
        let again = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, confirmationFolds: other, budget: nil, known: known,
            run: { c, f in
                runs += 1
                return self.score(c, f)
            })
        XCTAssertEqual(runs, 0, "a resumed search runs no trial twice")
        XCTAssertEqual(again.results.map(\.foldScores), first.results.map(\.foldScores))
        XCTAssertEqual(again.chosen, first.chosen)
        // A partial log: the rest runs.
        let half = Dictionary(uniqueKeysWithValues: known.sorted { $0.key < $1.key }.prefix(known.count / 2).map { ($0.key, $0.value) })
        runs = 0
        _ = try Tuning.search(
            base: base(), changes: changes(), explicit: [], folds: folds, confirmationFolds: other, budget: nil, known: half,
            run: { c, f in
                runs += 1
                return self.score(c, f)
            })
        XCTAssertEqual(runs, known.count - half.count)
    }

    /// With the recipe's two members, the channel and architecture changes act on the network
    /// member, the ftp member stays, and one candidate is the network alone.
    func testChangesOfAModelOfMembersActOnItsNetwork() throws {
        var base = TrainingConfig()
        base.members = [.init(architecture: .tcn, channels: [.coordinates, .mask]), .init(architecture: .ftp, channels: [.relativePositions])]
        (base.fillGaps, base.pairs) = (true, [["hip", "head"]])
        let changes = Tuning.changes(for: RecipeTests.stick, base: base)
        func applied(_ name: String) throws -> TrainingConfig {
            var c = base
            try XCTUnwrap(changes.first { $0.name == name }, "\(changes.map(\.name))").apply(&c)
            return c
        }
        let distances = try applied("+ distances")
        XCTAssertEqual(distances.members.map(\.channels), [[.coordinates, .mask, .distances], [.relativePositions]])
        XCTAssertEqual(distances.channels, base.channels, "channels is not what a model of members reads")
        XCTAssertEqual(try applied("mlp").members.map(\.architecture), [.mlp, .ftp])
        let alone = try applied("tcn alone")
        XCTAssertEqual(alone.members, [])
        XCTAssertEqual(alone.architecture, .tcn)
        XCTAssertEqual(alone.channels, [.coordinates, .mask])
        XCTAssertFalse(alone.fillGaps)
        XCTAssertEqual(alone.pairs, [])
        let ftp = try applied("ftp alone")
        XCTAssertEqual(ftp.members, [])
        XCTAssertEqual(ftp.architecture, .ftp)
        XCTAssertEqual(ftp.channels, [.relativePositions])
        XCTAssertTrue(ftp.fillGaps, "the pyramid keeps its filled gaps")
        XCTAssertEqual(ftp.pairs, [["hip", "head"]], "and its pairs")
        XCTAssertEqual(Set(changes.first { $0.name == "+ distances" }!.keys), ["members"], "a user's members are never searched")
        // Without members the same changes act on the config's own keys.
        let plain = Tuning.changes(for: RecipeTests.stick, base: TrainingConfig())
        XCTAssertFalse(plain.contains { $0.name.hasSuffix(" alone") })
        var c = TrainingConfig()
        try XCTUnwrap(plain.first { $0.name == "+ distances" }).apply(&c)
        XCTAssertEqual(c.channels.last, .distances)
    }

    /// Turned bodies are turned back only when the cameras stay where they were: folds of the
    /// training cameras cannot measure a new camera. Unturned bodies may always be turned.
    func testTurningBackIsSearchedOnlyWithTheSameViews() {
        var base = TrainingConfig()
        base.alignFacing = true
        XCTAssertFalse(Tuning.changes(for: RecipeTests.stick, base: base).contains { $0.name.contains("alignFacing") })
        base.views = .same
        XCTAssertTrue(Tuning.changes(for: RecipeTests.stick, base: base).contains { $0.name == "no alignFacing" })
        base.alignFacing = false
        base.views = .auto
        XCTAssertTrue(Tuning.changes(for: RecipeTests.stick, base: base).contains { $0.name == "alignFacing" })
    }
}
