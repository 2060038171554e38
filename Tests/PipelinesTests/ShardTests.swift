import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Shard directories (docs/datasets.md "Shards"): the format round trip, damaged and
/// mismatched inputs, and a fit from shards against the same fit in memory.
final class ShardTests: XCTestCase {
    func dataset() throws -> Dataset { try DatasetLoader.load(FitRunTests.fixture) }

    /// The tiny fixture converted with `config`, 5 windows a shard (so several shards).
    func convert(_ config: TrainingConfig = FitRunTests.quick) throws -> (dir: String, manifest: ShardManifest) {
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let manifest = try Shards.convert(
            dataset: try dataset(), dataPath: FitRunTests.fixture, config: config, to: dir, windowsPerShard: 5)
        return (dir, manifest)
    }

    func testShardsHoldExactlyTheWindowsFitCutsInMemory() throws {
        let (dir, manifest) = try convert()
        XCTAssertEqual(try ShardManifest.read(dir), manifest)
        XCTAssertGreaterThan(manifest.shards.filter { $0.role == .train }.count, 1)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: FitRunTests.quick, folder: nil)
        let memory = try XCTUnwrap(run.data.train as? TensorSet)
        let shards = try TrainingData(shards: dir, manifest: manifest)
        XCTAssertEqual(shards.trainLabels, memory.labels)
        XCTAssertEqual((shards.train as? ShardBatches)?.tensors().features, memory.features)
        XCTAssertEqual(shards.validation?.features, run.data.validation?.features)
        XCTAssertEqual(shards.validation?.labels, run.data.validation?.labels)
        XCTAssertEqual(shards.input, run.data.input)
        // A batch in shuffled order gives the rows asked for.
        let source = try XCTUnwrap(shards.train as? ShardBatches)
        let order = [7, 0, 13, 5]
        let V = source.valuesPerWindow
        var x = [Float](repeating: 0, count: order.count * V), y = [Int32](repeating: -1, count: order.count)
        x.withUnsafeMutableBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { source.fill(indices: order[...], epoch: 1, features: xp.baseAddress!, labels: $0.baseAddress!) }
        }
        for (k, i) in order.enumerated() {
            XCTAssertEqual(Array(x[(k * V)..<((k + 1) * V)]), Array(memory.features[(i * V)..<((i + 1) * V)]))
            XCTAssertEqual(y[k], memory.labels[i])
        }
    }

    func testAFitFromShardsGivesTheModelOfTheFitInMemory() throws {
        let (dir, _) = try convert()
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: FitRunTests.quick, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        let memory = try run.finish().modelBytes
        let shards = try ShardRun(directory: dir)
        XCTAssertEqual(try shards.train(), .finished)
        XCTAssertEqual(try shards.modelBytes(), memory)
        // A key that does not touch the windows may change; the models then differ.
        let other = try ShardRun(directory: dir) { c in
            var c = c
            c.learningRate *= 2
            return c
        }
        try other.train()
        XCTAssertNotEqual(try other.modelBytes(), memory)
    }

    func testTwoRanksTrainingFromShardsGiveTheModelOfOneProcessInMemory() throws {
        let (dir, _) = try convert()
        var config = FitRunTests.quick
        config.accumulate = 2
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: nil)
        try run.train()
        let memory = try run.finish().modelBytes
        let results = ThreadGroup.run(2) { group in
            let shards = try ShardRun(directory: dir, group: group) { c in
                var c = c
                c.accumulate = 2  // not a window key
                return c
            }
            try shards.train()
            return try shards.modelBytes()
        }
        for (r, result) in results.enumerated() { XCTAssertEqual(try result.get(), memory, "rank \(r)") }
    }

    func testAConfigThatCutsOtherWindowsIsRefusedNamingTheKeys() throws {
        let (dir, _) = try convert()
        XCTAssertThrowsError(
            try ShardRun(directory: dir) { c in
                var c = c
                c.windowFrames = 8
                c.seed = 9
                return c
            }
        ) { error in
            XCTAssertEqual(error as? ShardError, .configMismatch(manifest: "\(dir)/manifest.json", keys: ["seed", "windowFrames"]))
        }
        var augmenting = FitRunTests.quick
        augmenting.augmentation.jitterProbability = 1
        augmenting.augmentation.jitterStandardDeviation = 0.01
        XCTAssertThrowsError(try convert(augmenting)) { XCTAssertEqual($0 as? ShardError, .augmentationNeedsPoses) }
    }

    /// With the recipe on, small data (where it augments a fit) converts without augmentation,
    /// and the rest of the recipe's choices are the fit's.
    func testTheRecipeDoesNotAugmentShards() throws {
        var c = FitRunTests.quick
        c.recipe = .auto
        let d = try dataset()
        let fit = try FitPipeline.resolve(c, for: d, explicit: ["architecture", "hidden", "batchSize", "seed", "threads", "epochs"])
        XCTAssertTrue(fit.config.augmentation.isEnabled, "the fixture is small: a fit augments")
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let manifest = try Shards.convert(
            dataset: d, dataPath: FitRunTests.fixture, config: c, explicit: ["architecture", "hidden", "batchSize", "seed", "threads", "epochs"],
            to: dir)
        XCTAssertFalse(manifest.config.augmentation.isEnabled)
        var expected = fit.config
        expected.augmentation = AugmentationConfig()
        XCTAssertEqual(manifest.config, expected)
    }

    /// Rewrites byte `offset` of `file` to `value`.
    func poke(_ path: String, at offset: Int, _ value: UInt8) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[offset] = value
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func testDamagedShardsAndManifestsAreTypedErrorsNamingTheFile() throws {
        let (dir, manifest) = try convert()
        let shard = "\(dir)/\(manifest.shards[1].file)"
        let open = { _ = try TrainingData(shards: dir, manifest: manifest) }
        let original = try Data(contentsOf: URL(fileURLWithPath: shard))

        try poke(shard, at: original.count - 100, original[original.count - 100] ^ 1)  // a feature bit
        XCTAssertThrowsError(try open()) {
            guard case .checksum(let file, _, _) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, shard)
        }
        try poke(shard, at: 0, UInt8(ascii: "X"))
        try poke(shard, at: original.count - 100, original[original.count - 100])
        XCTAssertThrowsError(try open()) {
            guard case .corrupt(let file, let why) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, shard)
            XCTAssertTrue(why.contains("magic"), why)
        }
        try original.prefix(original.count - 9).write(to: URL(fileURLWithPath: shard))
        XCTAssertThrowsError(try open()) {
            guard case .manifestMismatch(let file, let why) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, shard)
            XCTAssertTrue(why.contains("truncated"), why)
        }
        try original.write(to: URL(fileURLWithPath: shard))
        XCTAssertNoThrow(try open())

        var wrong = manifest
        wrong.shards[1].windows += 1
        XCTAssertThrowsError(try TrainingData(shards: dir, manifest: wrong)) {
            XCTAssertEqual($0 as? ShardError, .manifestMismatch(file: shard, reason: "5 windows, the manifest lists 6"))
        }
        // A shard truncated after it was opened: training stops with an error naming it.
        let run = try ShardRun(directory: dir)
        try original.prefix(100).write(to: URL(fileURLWithPath: shard))
        XCTAssertThrowsError(try run.train()) {
            guard case .corrupt(let file, let why) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, shard)
            XCTAssertTrue(why.contains("truncated"), why)
        }
        XCTAssertLessThan(run.training.records.count, FitRunTests.quick.epochs, "stopped early")
        try Data("{\"format\": \"actiontrain-shards\"}".utf8).write(to: URL(fileURLWithPath: "\(dir)/manifest.json"))
        XCTAssertThrowsError(try ShardManifest.read(dir)) {
            guard case .corrupt(let file, _) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertEqual(file, "\(dir)/manifest.json")
        }
    }
}
