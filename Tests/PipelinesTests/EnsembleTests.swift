import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// `ensemble`: separately seeded members trained in turn and written as one model averaging
/// their probabilities, on the tiny fixture.
final class EnsembleTests: XCTestCase {
    func dataset() throws -> Dataset { try DatasetLoader.load(FitRunTests.fixture) }

    func fit(_ config: TrainingConfig, folder: RunFolder? = nil, group: Collective = SingleProcess()) throws -> (FitRun, FitResult) {
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: folder, group: group)
        XCTAssertEqual(try run.train(), .finished)
        return (run, try run.finish())
    }

    func parameters(_ n: Network) -> [Float] { Array(UnsafeBufferPointer(start: n.parameters, count: n.parameterCount)) }

    /// Plain, and with augmentation (re-drawn per member), streams or mixed members (each
    /// member an average of its own) and test-time flips (wrapping the whole ensemble): member 0 is the single
    /// network's run bit for bit, the members differ, and the model's probabilities are the mean
    /// of the members' models' probabilities.
    func testMemberZeroIsTheSingleRunAndTheModelAveragesTheMembersModels() throws {
        var flipped = FitRunTests.quick
        flipped.augmentation = Recipe.standardAugmentation
        flipped.testTimeFlip = true
        flipped.centring = .mean
        flipped.architecture = .tcn
        flipped.widths = [6]
        flipped.kernel = 3
        flipped.streams = [[.coordinates], [.motion, .mask]]
        var mixed = flipped  // members of two architectures, an ftp among them (its standardize calibrated per member)
        mixed.streams = []
        mixed.members = [.init(architecture: .tcn, channels: [.coordinates]), .init(architecture: .ftp, channels: [.relativePositions, .mask])]
        mixed.fillGaps = true
        mixed.linearPenalty = 10  // a soft ftp head: on this easy fixture a cross-validated one saturates every probability
        for var single in [FitRunTests.quick, flipped, mixed] {
            single.calibration = .none  // the single run's model is compared with member 0's network as trained
            var config = single
            config.ensemble = 2
            let (run, result) = try fit(config)
            let (alone, aloneResult) = try fit(single)
            XCTAssertEqual(run.members.count, 2)
            XCTAssertEqual(parameters(run.members[0].network), parameters(alone.training.network), "member 0 is the ensemble-1 run")
            XCTAssertEqual(run.members[0].records.map(\.trainLoss), alone.training.records.map(\.trainLoss))
            XCTAssertNotEqual(parameters(run.members[1].network), parameters(run.members[0].network))
            XCTAssertEqual(result.members.map(\.seed), [3, Ensemble.seed(3, member: 1)])
            XCTAssertNotEqual(Ensemble.seed(3, member: 1), 3)

            let model = try ActionModel(bytes: result.modelBytes)
            let members = try result.members.map { try ActionModel(bytes: $0.modelBytes) }
            let one = try ActionModel(bytes: aloneResult.modelBytes)
            let P = one.network.parameterCount
            XCTAssertEqual(model.network.parameterCount, 2 * P)
            XCTAssertEqual(Array(parameters(model.network)[..<P]), parameters(one.network), "member 0's parameters come first")
            XCTAssertEqual(parameters(members[0].network), parameters(one.network))
            let body = single.testTimeFlip ? try XCTUnwrap(model.header.layers.first?.kind as? FlipAverageKind).body : model.header.layers
            let ensemble = try XCTUnwrap(body.first?.kind as? AverageProbabilitiesKind)
            XCTAssertEqual(ensemble.members.count, 2)
            if !single.streams.isEmpty || !single.members.isEmpty {
                XCTAssertEqual((ensemble.members[1].first?.kind as? any MemberCombinationKind)?.members.count, 2, "a member's streams")
            }

            let validation = try XCTUnwrap(run.data.validation)
            let n = validation.count, x = validation.features
            let p = try members.map { try $0.probabilities(features: x, count: n) }
            let mean = zip(p[0], p[1]).map { ($0 + $1) / 2 }
            XCTAssertGreaterThan(zip(p[0], p[1]).map { abs($0 - $1) }.max()!, 1e-3, "the members disagree somewhere")
            assertClose(try model.probabilities(features: x, count: n), mean, absolute: 1e-6, relative: 0)
            XCTAssertEqual(result.validationAccuracy, model.header.provenance.metrics["validationAccuracy"])
        }
    }

    func testTheRunFolderHoldsEachMembersFilesAndAStopInAnyMemberResumesToTheSameModel() throws {
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        var config = FitRunTests.quick
        config.ensemble = 2
        let folder = try RunFolder.create(dir + "/run", replacing: false)
        let (straight, result) = try fit(config, folder: folder)
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        XCTAssertEqual(
            files, ["config.json", "model.atm", "calibration.json", "report.json", "report.txt", "member1", "member2", FolderLock.fileName],
            "(locked while `folder` lives; calibrated on the validation windows)")
        for m in 0..<2 {
            let member = folder.member(m).path
            XCTAssertEqual(
                Set(try FileManager.default.contentsOfDirectory(atPath: member)), ["log.jsonl", "curves.svg", "checkpoint.atc", "model.atm"])
            let log = try String(contentsOfFile: "\(member)/log.jsonl", encoding: .utf8)
            XCTAssertEqual(log.split(separator: "\n").count, config.epochs)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: "\(member)/model.atm")), Data(result.members[m].modelBytes))
            XCTAssertEqual(result.members[m].modelPath, "\(member)/model.atm")
        }
        XCTAssertEqual(RunFolder.run(ofCheckpoint: folder.member(1).checkpointPath), folder.path)
        XCTAssertEqual(RunFolder.run(ofCheckpoint: folder.checkpointPath), folder.path)
        XCTAssertTrue(try FitRun.resume(folder: folder).isFinished)

        // Stopped in member 1 (batch 5) or member 2 (batch 20; 5 batches an epoch): resumed
        // from the members' checkpoints: the same model, and whole logs.
        for stopAt in [5, 20] {
            let path = dir + "/stopped\(stopAt)"
            var events: [FitRun.MemberEvent] = []
            do {  // (the stopped run, which holds the folder's lock, ends here)
                let run = try FitRun.start(
                    dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: try RunFolder.create(path, replacing: false))
                var batches = 0
                let outcome = try run.train(shouldStop: { batches >= stopAt }, onMember: { events.append($0) }, onBatch: { _ in batches += 1 })
                guard case .interrupted = outcome else { return XCTFail("\(outcome)") }
                XCTAssertEqual(events, stopAt == 5 ? [.started(0)] : [.started(0), .finished(0, .finished), .started(1)])
                XCTAssertEqual(run.checkpointPath, RunFolder(existing: path).member(events.count / 2).checkpointPath)
            }
            let resumed = try FitRun.resume(folder: RunFolder(existing: path))
            XCTAssertEqual(resumed.members.count, events.count / 2 + 1)
            XCTAssertFalse(resumed.isFinished)
            XCTAssertEqual(try resumed.train(), .finished)
            for m in 0..<2 {
                XCTAssertEqual(resumed.members[m].records.map(\.trainLoss), straight.members[m].records.map(\.trainLoss), "member \(m + 1)")
                XCTAssertTrue(parameters(resumed.members[m].network) == parameters(straight.members[m].network), "member \(m + 1)")
            }
            XCTAssertTrue(try resumed.finish().modelBytes == result.modelBytes, "stopped at batch \(stopAt)")
            for m in 0..<2 {
                let log = try String(contentsOfFile: RunFolder(existing: path).member(m).logPath, encoding: .utf8)
                XCTAssertEqual(log.split(separator: "\n").count, config.epochs, "member \(m + 1)'s log, every epoch once")
            }
        }
    }

    func testRanksTrainEveryMemberAsOneProcessDoes() throws {
        var config = DistributedTests.busy
        config.accumulate = 2
        config.ensemble = 2
        let (_, single) = try fit(config)
        XCTAssertEqual(single.members.count, 2)
        for result in ThreadGroup.run(2, { group in try self.fit(config, group: group).1.modelBytes }) {
            XCTAssertEqual(try result.get(), single.modelBytes)
        }
    }

    func testTheKeyIsCheckedAndShardsRefuseIt() throws {
        for bad in [0, 17] {
            var c = FitRunTests.quick
            c.ensemble = bad
            assertThrows(["'ensemble'", "[1, 16]", "got \(bad)"]) { try c.validate() }
        }
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        try Shards.convert(dataset: try dataset(), dataPath: FitRunTests.fixture, config: FitRunTests.quick, to: dir)
        XCTAssertThrowsError(
            try ShardRun(directory: dir) { c in
                var c = c
                c.ensemble = 3
                return c
            }
        ) { XCTAssertEqual($0 as? ShardError, .ensembleNeedsPoses(members: 3)) }
    }
}
