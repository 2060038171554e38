import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Ranks as threads of this process: the same `Collective` contract as the MPI backend
/// (exchanges that block until every rank has given its part), so the data-parallel and sweep
/// code is tested without MPI. scripts/test-mpi runs the same equivalences under mpirun.
final class ThreadGroup: Collective, @unchecked Sendable {
    final class Shared: @unchecked Sendable {
        let condition = NSCondition()
        var parts: [[UInt8]]
        var gathered: [[UInt8]] = []
        var arrived = 0, round = 0
        init(size: Int) { parts = Array(repeating: [], count: size) }
    }

    let rank: Int, size: Int
    let shared: Shared

    init(rank: Int, shared: Shared) {
        self.rank = rank
        self.shared = shared
        size = shared.parts.count
    }

    func allGather(bytes: [UInt8]) -> [[UInt8]] {
        let s = shared
        s.condition.lock()
        defer { s.condition.unlock() }
        let round = s.round
        s.parts[rank] = bytes
        s.arrived += 1
        if s.arrived == size {
            s.gathered = s.parts
            s.arrived = 0
            s.round += 1
            s.condition.broadcast()
        } else {
            while s.round == round { s.condition.wait() }
        }
        return s.gathered
    }

    func allGather(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) {
        let mine = Array(UnsafeRawBufferPointer(start: send, count: count * 4))
        for (r, part) in allGather(bytes: mine).enumerated() {
            part.withUnsafeBytes { (receive + r * count).update(from: $0.bindMemory(to: Float.self).baseAddress!, count: count) }
        }
    }

    func allToAll(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) {
        let all = allGather(bytes: Array(UnsafeRawBufferPointer(start: send, count: size * count * 4)))
        for (r, blocks) in all.enumerated() {
            blocks.withUnsafeBytes {
                (receive + r * count).update(from: $0.bindMemory(to: Float.self).baseAddress! + rank * count, count: count)
            }
        }
    }

    /// Runs `body` on `size` ranks, each on its own thread, and returns their results by rank.
    static func run<T>(_ size: Int, _ body: @escaping (Collective) throws -> T) -> [Result<T, Error>] {
        let shared = Shared(size: size)
        let done = DispatchSemaphore(value: 0)
        let results = Results<T>(size), rankBody = RankBody(call: body)
        for r in 0..<size {
            let thread = Thread {
                let result = Result { try rankBody.call(ThreadGroup(rank: r, shared: shared)) }
                results.set(r, result)
                done.signal()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        for _ in 0..<size { done.wait() }
        return results.values.map { $0! }
    }

    /// `@unchecked Sendable`: the ranks run the body at once, as MPI processes would; a test's
    /// body reads what every rank is given and writes only through its own group.
    struct RankBody<T>: @unchecked Sendable {
        let call: (Collective) throws -> T
    }

    final class Results<T>: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var values: [Result<T, Error>?]
        init(_ n: Int) { values = Array(repeating: nil, count: n) }
        func set(_ i: Int, _ v: Result<T, Error>) { lock.withLock { values[i] = v } }
    }
}

/// Gradient accumulation and data-parallel fits (ranks as threads) on the tiny fixture, and
/// sweeps spread over ranks.
final class DistributedTests: XCTestCase {
    /// The quick fixture config with everything that could make ranks disagree switched on:
    /// dropout, augmentation (seeded per window), class weights, label smoothing.
    static var busy: TrainingConfig {
        var c = FitRunTests.quick
        c.dropout = 0.2
        c.augmentation = Recipe.standardAugmentation
        c.classWeights = .explicit([1, 3, 0.5])  // parts must be normalised by the batch's weight
        c.labelSmoothing = 0.1
        c.batchSize = 6
        return c
    }

    func fit(_ config: TrainingConfig, group: Collective = SingleProcess(), folder: RunFolder? = nil) throws -> (FitRun, FitResult) {
        let run = try FitRun.start(
            dataPath: FitRunTests.fixture, dataset: try DatasetLoader.load(FitRunTests.fixture), config: config, folder: folder,
            group: group)
        let outcome = try run.train()
        XCTAssertEqual(outcome, .finished)
        return (run, try run.finish())
    }

    func gradients(_ run: FitRun) -> [Float] {
        Array(UnsafeBufferPointer(start: run.training.network.gradients, count: run.training.network.parameterCount))
    }

    func testAccumulatedPartsEqualOneBatchWithinFloatRounding() throws {
        // One step over every training window, so the network keeps that step's gradient.
        var one = Self.busy
        one.dropout = 0  // masks are drawn per part, so dropout would differ by design
        one.epochs = 1
        one.batchSize = 32
        one.augmentation = AugmentationConfig()
        let (a, _) = try fit(one)
        XCTAssertEqual(a.progress.globalStep, 1)
        var parts = one
        parts.accumulate = 3  // uneven parts of the batch
        let (b, _) = try fit(parts)
        let ga = gradients(a), gb = gradients(b)
        let scale = ga.map(abs).max()!
        XCTAssertGreaterThan(scale, 1e-3)
        assertClose(gb, ga, absolute: 1e-6 * scale, relative: 0, "the parts' gradient against the batch's")
        assertClose(a.progress.records[0].trainLoss, b.progress.records[0].trainLoss, absolute: 1e-6, relative: 1e-6)
        XCTAssertEqual(a.progress.records[0].trainAccuracy, b.progress.records[0].trainAccuracy)
    }

    func testRanksGiveTheModelOfOneProcessAccumulatingAsManyPartsBitForBit() throws {
        for ranks in [2, 3] {
            var config = Self.busy
            config.accumulate = ranks
            let (_, single) = try fit(config)
            let results = ThreadGroup.run(ranks) { group in try self.fit(config, group: group).1.modelBytes }
            for (r, result) in results.enumerated() {
                XCTAssertEqual(try result.get(), single.modelBytes, "\(ranks) ranks, rank \(r)")
            }
        }
        // ... and the parts matter: another part count trains another model.
        var two = Self.busy
        two.accumulate = 2
        var one = Self.busy
        one.accumulate = 1
        XCTAssertNotEqual(try fit(two).1.modelBytes, try fit(one).1.modelBytes)
    }

    func testTwoPartsPerRankAreDeterministicAndRankZeroAloneWrites() throws {
        var config = Self.busy
        config.accumulate = 4
        let dirs = try (0..<2).map { _ in try temporaryDirectory().path }
        addTeardownBlock { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        let runs = ThreadGroup.run(2) { group in
            try self.fit(config, group: group, folder: try RunFolder.create(dirs[group.rank] + "/run", replacing: false)).1
        }
        let bytes = try runs.map { try $0.get().modelBytes }
        XCTAssertEqual(bytes[0], bytes[1])
        XCTAssertEqual(try runs[0].get().modelPath, dirs[0] + "/run/model.atm")
        XCTAssertNil(try runs[1].get().modelPath)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dirs[0] + "/run/model.atm")), Data(bytes[0]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dirs[1] + "/run"), [], "rank 1 writes nothing")
        XCTAssertNotNil(try runs[0].get().validationReport)
        // Two ranks summing two parts each: the same bits on a second run.
        let again = ThreadGroup.run(2) { group in try self.fit(config, group: group).1.modelBytes }
        XCTAssertEqual(try again[0].get(), bytes[0])
    }

    func testAStopAskedOnOneRankStopsBothAfterTheSameStepAndResumesToTheSameModel() throws {
        var config = Self.busy
        config.accumulate = 2
        let (_, straight) = try fit(config)
        let dirs = try (0..<2).map { _ in try temporaryDirectory().path + "/run" }
        addTeardownBlock { for d in dirs { try? FileManager.default.removeItem(atPath: (d as NSString).deletingLastPathComponent) } }
        let stopped = ThreadGroup.run(2) { group -> (TrainingOutcome, Int) in
            let run = try FitRun.start(
                dataPath: FitRunTests.fixture, dataset: try DatasetLoader.load(FitRunTests.fixture), config: config,
                folder: try RunFolder.create(dirs[group.rank], replacing: false), group: group)
            var steps = 0
            // Only rank 1 asks, during its 5th step's exchange: both finish that step, then stop.
            let outcome = try run.train(shouldStop: { group.rank == 1 && steps == 4 }, onBatch: { _ in steps += 1 })
            return (outcome, run.progress.globalStep)
        }
        let outcomes = try stopped.map { try $0.get() }
        XCTAssertEqual(outcomes[0].0, outcomes[1].0)
        XCTAssertEqual(outcomes.map(\.1), [5, 5], "both ranks did 5 steps")
        guard case .interrupted = outcomes[0].0 else { return XCTFail("\(outcomes[0].0)") }
        // Rank 0 saved the checkpoint; both ranks resume from it.
        let resumed = ThreadGroup.run(2) { group -> [UInt8] in
            let run = try FitRun.resume(folder: RunFolder(existing: dirs[0]), group: group)
            XCTAssertEqual(try run.train(), .finished)
            return try run.finish().modelBytes
        }
        for result in resumed { XCTAssertEqual(try result.get(), straight.modelBytes) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dirs[1]), [], "rank 1 wrote nothing")
    }

    func testRanksStopTogetherOnAMismatchOrAPartCountTheyCannotShare() throws {
        var config = Self.busy
        config.accumulate = 3
        for result in ThreadGroup.run(2, { group in try self.fit(config, group: group) }) {
            assertThrows(["accumulate", "multiple of the 2 ranks, got 3"]) { _ = try result.get() }
        }
        config.accumulate = 2
        let mismatched = ThreadGroup.run(2) { group -> FitRun in
            var c = config
            c.seed += UInt64(group.rank)  // rank 1 was given another config
            return try FitRun.start(
                dataPath: FitRunTests.fixture, dataset: try DatasetLoader.load(FitRunTests.fixture), config: c, folder: nil, group: group)
        }
        for result in mismatched {
            assertThrows(["ranks do not run the same job", "on rank 0", "on rank 1"]) { _ = try result.get() }
        }
    }

    func testAccumulateOutsideOneToBatchSizeIsRefused() {
        for bad in [0, 7] {
            var c = Self.busy
            c.accumulate = bad
            assertThrows(["accumulate", "[1, 6]", "got \(bad)"]) { try c.validate() }
        }
    }

    func testASweepGathersTheSameTableOnOneOrTwoRanksFromTuneRunsScores() throws {
        var d = try DatasetLoader.load(FitRunTests.fixture)
        for i in d.sequences.indices { d.sequences[i].split = "train" }
        var fast = FitRunTests.quick
        fast.epochs = 2
        var wide = fast
        wide.hidden = [32]
        let candidates = [
            Tuning.Candidate(name: "narrow", config: fast, changes: []), Tuning.Candidate(name: "wide", config: wide, changes: ["wide"]),
        ]
        let sweep = SweepRun(dataPath: FitRunTests.fixture, dataset: d, candidates: candidates, folds: 2, seeds: 2)
        let single = try sweep.run(foldSeed: 5)
        XCTAssertEqual(single.trials.count, 2 * 2 * 2)
        let two = ThreadGroup.run(2) { group in try sweep.run(group: group, foldSeed: 5) }
        for result in two {
            let outcome = try result.get()
            XCTAssertEqual(outcome.trials.map(\.accuracy), single.trials.map(\.accuracy))
            XCTAssertEqual(outcome.trials.map(\.rank), [0, 1, 0, 1, 0, 1, 0, 1])
            XCTAssertEqual(outcome.search?.outcome.chosen, single.search?.outcome.chosen)
            XCTAssertEqual(outcome.search?.markdown().split(separator: "|").count, single.search?.markdown().split(separator: "|").count)
        }
        // A trial's score is TuneRun's score of its config (seed + its seed index) on its fold.
        let trial = single.trials[7]
        XCTAssertEqual(trial.trial, SweepRun.Trial(candidate: 1, fold: 1, seed: 1))
        var config = wide
        config.seed += 1
        XCTAssertEqual(trial.accuracy, try sweep.tune.score(config, try sweep.tune.folds(seed: 5)[1]))
        // The table's fold score is the mean over the seeds, and the best mean is chosen.
        let search = try XCTUnwrap(single.search)
        let row = search.outcome.results[1]
        XCTAssertEqual(row.foldScores[1]!, (single.trials[6].accuracy! + single.trials[7].accuracy!) / 2, accuracy: 1e-12)
        let means = search.outcome.results.map { $0.score! }
        XCTAssertEqual(search.outcome.chosen, means[1] > means[0] ? 1 : 0)
    }
}
