import ActionRuntime
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
        // The event thresholds too: calibrated on the stream windows the conversion wrote.
        XCTAssertGreaterThan(shards.manifest.shards.filter { $0.role == .stream }.count, 0)
        XCTAssertEqual(try ActionModel(bytes: memory).header.streaming?.enter?.count, 3)
        // A key that does not touch the windows may change; the models then differ.
        let other = try ShardRun(directory: dir) { c in
            var c = c
            c.learningRate *= 2
            return c
        }
        try other.train()
        XCTAssertNotEqual(try other.modelBytes(), memory)
    }

    /// Mixed members with an ftp (whose standardize is calibrated on the shards' windows) and
    /// filled gaps: the same model as in memory, on one rank and on each of two.
    func testAnFTPFitFromShardsCalibratesAsInMemory() throws {
        var config = FTPFitTests.mixed
        config.augmentation = AugmentationConfig()
        config.accumulate = 2
        let (dir, _) = try convert(config)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
        let memory = try run.finish().modelBytes
        let shards = try ShardRun(directory: dir)
        XCTAssertEqual(try shards.train(), .finished)
        XCTAssertEqual(try shards.modelBytes(), memory)
        let results = ThreadGroup.run(2) { group in
            let ranks = try ShardRun(directory: dir, group: group)
            try ranks.train()
            return try ranks.modelBytes()
        }
        for (r, result) in results.enumerated() { XCTAssertEqual(try result.get(), memory, "rank \(r)") }
    }

    func testTwoRanksTrainingFromShardsGiveTheModelOfOneProcessInMemory() throws {
        let (dir, _) = try convert()
        var config = FitRunTests.quick
        config.accumulate = 2
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: nil)
        XCTAssertEqual(try run.train(), .finished)
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
                c.fillGaps = true
                c.members = [.init(architecture: .ftp, channels: [.coordinates])]
                return c
            }
        ) { error in
            XCTAssertEqual(
                error as? ShardError, .configMismatch(manifest: "\(dir)/manifest.json", keys: ["fillGaps", "members", "seed", "windowFrames"]))
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
        wrong.totals = ShardManifest.totals(of: wrong.shards)
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

    // MARK: issue 26 item 7

    func testManifestsAreVerifiedBeforeAnyShardIsRead() throws {
        let (dir, manifest) = try convert()
        let train = manifest.shards.filter { $0.role == .train }, validation = manifest.shards.filter { $0.role == .validation }
        XCTAssertGreaterThan(train.count, 2)
        XCTAssertFalse(validation.isEmpty)
        XCTAssertEqual(manifest.totals?.train, .init(shards: train.count, windows: train.reduce(0) { $0 + $1.windows }))
        let path = "\(dir)/manifest.json"
        func refused(_ edit: (inout ShardManifest) -> Void, _ fragment: String, line: UInt = #line) {
            var m = manifest
            edit(&m)
            XCTAssertThrowsError(try TrainingData(shards: dir, manifest: m), line: line) {
                guard case .manifestMismatch(path, let why) = $0 as? ShardError else { return XCTFail("\($0)", line: line) }
                XCTAssertTrue(why.contains(fragment), why, line: line)
            }
        }
        // Entries dropped, repeated or reordered: the old reader trained on what was left.
        refused({ $0.shards.remove(at: 1) }, "entry 1 is 'train-00002.shard' where train shard 1 should be 'train-00001.shard'")
        refused({ $0.shards.insert($0.shards[0], at: 1) }, "entry 1 is 'train-00000.shard' where train shard 1 should be 'train-00001.shard'")
        refused({ $0.shards.swapAt(0, 1) }, "entry 0 is 'train-00001.shard' where train shard 0 should be 'train-00000.shard'")
        refused({ $0.shards.swapAt(train.count - 1, train.count) }, "a train shard after the validation shards")
        // The last training entry dropped: the totals say so, and without them the file left behind does.
        refused({ $0.shards.remove(at: train.count - 1) }, "\(train.count - 1) train shards of")
        refused(
            {
                $0.shards.remove(at: train.count - 1)
                $0.totals = nil
            }, "the directory holds \(train.last!.file), which the manifest does not list")
        // Every validation shard removed, entries and files: the old reader trained without validation.
        refused({ $0.shards.removeAll { $0.role == .validation } }, "0 validation shards of 0 windows are listed, the conversion wrote \(validation.count)")
        // A path out of the directory.
        refused({ $0.shards[0].file = "../outside.shard" }, "entry 0 names '../outside.shard', a path")
        refused({ $0.shards[0].file = "sub/train-00000.shard" }, "a path")
        XCTAssertNoThrow(try TrainingData(shards: dir, manifest: manifest))
        XCTAssertNoThrow(try TrainingData(shards: dir, manifest: try ShardManifest.read(dir)))
    }

    func testOnlyRegularFilesAreReadAsShards() throws {
        let (dir, manifest) = try convert()
        let shard = "\(dir)/\(manifest.shards[0].file)"
        // A FIFO in a shard's place: opening it waited for a writer for ever.
        try FileManager.default.removeItem(atPath: shard)
        XCTAssertEqual(mkfifo(shard, 0o644), 0)
        let done = expectation(description: "the shards are opened")
        let failure = LockedValue<Error?>(nil)
        Thread.detachNewThread {
            do { _ = try TrainingData(shards: dir, manifest: manifest) } catch { failure.set(error) }
            done.fulfill()
        }
        if XCTWaiter.wait(for: [done], timeout: 20) != .completed {
            let writer = open(shard, O_WRONLY | O_NONBLOCK)  // lets the blocked reader go
            XCTFail("opening a FIFO as a shard hangs")
            wait(for: [done], timeout: 20)
            close(writer)
        }
        guard case .unreadable(shard, let why)? = failure.get() as? ShardError else { return XCTFail("\(String(describing: failure.get()))") }
        XCTAssertTrue(why.contains("not a regular file"), why)
        // A link (here to a copy outside the directory) is not followed.
        try FileManager.default.removeItem(atPath: shard)
        let outside = try temporaryDirectory().path + "/train-00000.shard"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: (outside as NSString).deletingLastPathComponent) }
        let (other, _) = try convert()
        try FileManager.default.copyItem(atPath: "\(other)/\(manifest.shards[0].file)", toPath: outside)
        try FileManager.default.createSymbolicLink(atPath: shard, withDestinationPath: outside)
        XCTAssertThrowsError(try TrainingData(shards: dir, manifest: manifest)) {
            guard case .unreadable(shard, let why) = $0 as? ShardError else { return XCTFail("\($0)") }
            XCTAssertTrue(why.contains("symbolic link"), why)
        }
    }

    /// `path` with float `index` of its features set to `value`, its CRC (and the manifest's,
    /// returned) kept right: bad data that is not damage.
    func writeFeature(_ value: Float, window: Int, in path: String, manifest: inout ShardManifest) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let header = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
        let dataOffset = (12 + header + 63) / 64 * 64
        let at = dataOffset + 4 * (window * manifest.frames * manifest.channels + 3)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.replaceSubrange(at..<(at + 4), with: $0) }
        let crc = CRC32.checksum(Array(bytes[..<(bytes.count - 4)]))
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((bytes.count - 4)..., with: $0) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let k = manifest.shards.firstIndex { path.hasSuffix("/" + $0.file) }!
        manifest.shards[k].crc32 = crc
    }

    func testBadValuesAreRefusedWhenOpenedNamingTheShardAndWindow() throws {
        // NaN in a training shard was "diverged: lower the learning rate"; 1e38 in a validation
        // shard trained to the end and then wrote nothing.
        for (value, role) in [(Float.nan, ShardManifest.Role.train), (1e38, .validation), (-.infinity, .train), (2e9, .train)] {
            var (dir, manifest) = try convert()
            let entry = manifest.shards.last { $0.role == role }!
            let shard = "\(dir)/\(entry.file)"
            try writeFeature(value, window: entry.windows - 1, in: shard, manifest: &manifest)
            XCTAssertThrowsError(try TrainingData(shards: dir, manifest: manifest)) {
                guard case .badValue(shard, let window, let found) = $0 as? ShardError else { return XCTFail("\($0)") }
                XCTAssertEqual(window, entry.windows - 1)
                XCTAssertEqual(found.bitPattern, value.bitPattern)
                XCTAssertTrue("\($0)".contains("\(shard): window \(entry.windows - 1) holds the feature \(value), which preprocessing never gives"), "\($0)")
            }
        }
        // The bound itself is a feature.
        var (dir, manifest) = try convert()
        try writeFeature(ShardFile.maxFeature, window: 0, in: "\(dir)/\(manifest.shards[0].file)", manifest: &manifest)
        XCTAssertNoThrow(try TrainingData(shards: dir, manifest: manifest))
    }

    func testAShardWrittenToDuringAFitStopsIt() throws {
        let (dir, manifest) = try convert()
        let shard = "\(dir)/\(manifest.shards[0].file)"
        let run = try ShardRun(directory: dir)
        // Written in place (same file, same size): NaN where a feature was. (A moment first, so
        // that the change time, kept at the clock's granularity, moves.)
        usleep(20_000)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: shard))
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: shard)))[8..<12].reversed().reduce(0) { $0 << 8 | Int($1) }
        try handle.seek(toOffset: UInt64((12 + header + 63) / 64 * 64))
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 64))
        try handle.close()
        XCTAssertThrowsError(try run.train()) { XCTAssertEqual($0 as? ShardError, .changed(file: shard)) }
        XCTAssertLessThan(run.training.records.count, FitRunTests.quick.epochs, "stopped early")
    }
}

/// A value shared with another thread.
final class LockedValue<T>: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func set(_ v: T) { lock.withLock { value = v } }
    func get() -> T { lock.withLock { value } }
}

extension ShardTests {
    func testAClassListedTwiceInAManifestIsRefusedBeforeTraining() throws {
        // Issue 38 finding 15: it failed only when the model file was written, after training.
        let (dir, manifest) = try convert()
        var twice = manifest
        twice.classes[1] = twice.classes[0]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(twice).write(to: URL(fileURLWithPath: "\(dir)/manifest.json"))
        XCTAssertThrowsError(try ShardRun(directory: dir)) {
            XCTAssertEqual($0 as? ShardError, .corrupt(file: "\(dir)/manifest.json", reason: "the class '\(manifest.classes[0])' is listed twice; the classes must be distinct"))
        }
    }
}
