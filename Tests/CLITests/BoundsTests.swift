import ActionRuntime
import Foundation
import TestSupport
import XCTest

@testable import actiontrain

/// Issue 38 finding 4: counts from flags and configs had no upper bound, so that a grid of 10
/// keys x 10 values built 10^10 candidates (3.6 GB, then an abort), "seeds" 1e9 allocated 24 GB,
/// --threads 1000000 crashed, --parity-windows 3000000 allocated 12 GB and --max-tracks 1000000
/// with 100k ids reached 1.55 GB. Each is now refused before any work, naming the bound.
final class BoundsTests: XCTestCase {
    static let fixture = FitCLITests.fixture, golden = ModelCommandsTests.golden
    static let base = SweepCLITests.base

    func testAGridIsCountedBeforeItIsBuilt() throws {
        let dir = try scratchFolder()
        let keys = ["dropout", "learningRate", "momentum", "beta1", "beta2", "weightDecay", "labelSmoothing", "minDelta", "gamma", "epsilon"]
        let grid = keys.map { k in "\"\(k)\": [" + (1...10).map { "0.0\($0 - 1)1" }.joined(separator: ", ") + "]" }.joined(separator: ", ")
        let cases: [(String, String)] = [
            (
                #"{"grid": {\#(grid)}}"#,
                "the grid (10 beta1 x 10 beta2 x 10 dropout x 10 epsilon x 10 gamma x 10 labelSmoothing x 10 learningRate x 10 minDelta x 10 momentum x 10 weightDecay) makes 10000000000 candidates x 3 folds x 1 seeds; a sweep takes at most 1000 candidates and 10000 trials: split it into several sweeps"
            ),
            (
                #"{"grid": {"learningRate": [0.1, 0.2]}, "seeds": 1000000000}"#,
                "\"seeds\" must be an integer from 1 to 100, got 1000000000"
            ),
            (#"{"grid": {"learningRate": [0.1]}, "folds": 101}"#, "\"folds\" must be an integer from 2 to 100, got 101"),
            (
                #"{"grid": {"learningRate": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}, "folds": 100, "seeds": 11}"#,
                "the grid (10 learningRate) makes 10 candidates x 100 folds x 11 seeds; a sweep takes at most 1000 candidates and 10000 trials"
            ),
            (
                #"{"candidates": [\#(Array(repeating: "{}", count: 1001).joined(separator: ", "))]}"#,
                "the list makes 1001 candidates x 3 folds x 1 seeds; a sweep takes at most 1000 candidates"
            ),
        ]
        for (i, (text, message)) in cases.enumerated() {
            try text.write(toFile: "\(dir)/g\(i).json", atomically: true, encoding: .utf8)
            let r = runCLI(["sweep", "\(dir)/g\(i).json", Self.fixture, "--out", "\(dir)/s\(i)"])
            XCTAssertEqual(r.code, 1, text)
            XCTAssertTrue(r.err.hasPrefix("error: \(dir)/g\(i).json: \(message)"), r.err)
            XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/s\(i)"), "refused before the folder is made")
        }
    }

    func testConfigCountsHaveUpperBounds() throws {
        let dir = try scratchFolder()
        let cases: [([String], String)] = [
            (["--threads", "1000000"], "config field 'threads' must be at most 256, got 1000000"),
            (["--epochs", "100001"], "config field 'epochs' must be at most 100000, got 100001"),
            (["--batch-size", "65537"], "config field 'batchSize' must be at most 65536, got 65537"),
            (["--window-frames", "100001"], "config field 'windowFrames' must be at most 100000, got 100001"),
            (["--hidden", "65537"], "config field 'hidden' widths must be at most 65536, got 65537"),
            (["--widths", Array(repeating: "8", count: 65).joined(separator: ",")], "config field 'widths' may list at most 64 widths, got 65"),
        ]
        for (flags, message) in cases {
            let r = runCLI(["fit", Self.fixture, "--out", "\(dir)/run"] + flags)
            XCTAssertEqual(r.code, 1, "\(flags)")
            XCTAssertTrue(r.err.contains(message), "\(flags): \(r.err)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/run"), "refused before the run folder is made")
        }
    }

    func testFlagCountsHaveUpperBounds() throws {
        let dir = try scratchFolder()
        let cases: [([String], String)] = [
            (["export", Self.golden, "--out", "\(dir)/m.onnx", "--parity-windows", "3000000"], "--parity-windows must be 0 to 4096, got 3000000"),
            (["predict", Self.golden, "-", "--stream", "--max-tracks", "1000000"], "--max-tracks must be 1 to 1024, got 1000000"),
            (["predict", Self.golden, "-", "--stream", "--events", "--smoothing", "1000001"], "--smoothing must be 1 to 1000 windows, got 1000001"),
            (["eval", Self.golden, Self.fixture, "--bootstrap", "100001"], "--bootstrap must be 0 to 100000, got 100001"),
            (["tune", Self.fixture, "--folds", "101", "--out", "\(dir)/t"], "--folds must be 2 to 100, got 101"),
            (["convert", "\(dir)/shards", Self.fixture, "--to", "shards", "--shard-windows", "1048577"], "--shard-windows must be 1 to 1048576, got 1048577"),
        ]
        for (args, message) in cases {
            let r = runCLI(args)
            XCTAssertEqual(r.code, 2, "\(args): \(r.err)")
            XCTAssertEqual(r.err, "error: \(message)\n")
            XCTAssertEqual(r.out, "")
        }
        // The library refuses the same track count.
        let model = try ActionModel(contentsOf: Self.golden)
        XCTAssertThrowsError(try TrackedStream(model: model, options: StreamOptions(stride: 1), events: EventOptions(), maximumTracks: 1_000_000)) {
            XCTAssertEqual("\($0)", "stream options: at most 1024 tracks may be followed at once, got 1000000")
        }
    }
}

/// Issue 38 finding 7: large numbers crashed (exit 132) where a Double was converted to an Int
/// (`--max-jump 1e18`, `--stride-seconds 1e300`, `tune --minutes 1e308`, `fit --window-seconds
/// 1e300`), `tune --minutes 1e-9` crashed on an empty table, and `--min-confidence nan` passed
/// into a stream unchecked. Each is now a one-line error before any work.
extension BoundsTests {
    func testHugeAndTinyNumbersAreErrorsNotCrashes() throws {
        let dir = try scratchFolder()
        let stream = ["predict", Self.golden, "-", "--stream"]
        let cases: [([String], Int32, String)] = [
            (stream + ["--max-jump", "1e18"], 1, "stream options: a jump limit of 1e+18 s would let one frame make 3e+19 frames at 30.0 fps (at most 1000000)"),
            (stream + ["--stride-seconds", "1e300"], 2, "--stride-seconds 1e+300 is 3e+301 frames at the model's 30.0 fps; the stride is at most 100000 frames"),
            (stream + ["--min-confidence", "nan"], 2, "--min-confidence must be in [0, 1), got nan"),
            (stream + ["--stride", "100001"], 2, "--stride must be 1 to 100000 frames, got 100001"),
            (["tune", Self.fixture, "--minutes", "1e308", "--out", "\(dir)/t"], 2, "--minutes must be a positive number of minutes, at most 525600 (a year), got 1e+308"),
            (["fit", Self.fixture, "--window-seconds", "1e300", "--out", "\(dir)/f"], 1, "tiny-natops: 1e+300 s at 10.0 fps is 1e+301 frames"),
        ]
        for (args, code, message) in cases {
            let r = runCLI(args)
            XCTAssertEqual(r.code, code, "\(args): \(r.err)")
            XCTAssertTrue(r.err.hasPrefix("error: \(message)"), "\(args): \(r.err)")
        }
        // A budget too small for any trial: an error saying so, not an index out of range.
        let t = runCLI(["tune", Self.fixture, "--minutes", "1e-9", "--out", "\(dir)/tiny", "--epochs", "2", "--recipe", "none", "--architecture", "mlp"])
        XCTAssertEqual(t.code, 1, t.err)
        XCTAssertTrue(t.err.contains("error: tune: --minutes 1e-09 ran out before the first trial (the recipe's first rung) could start; nothing was scored or trained"), t.err)
    }
}
