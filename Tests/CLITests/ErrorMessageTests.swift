import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// Issue 38 finding 11: errors that misled. `bodies=9` did not state the limit of 8; a frame
/// rate out of range was reported as "centring/scaling/channels"; too many folds as "only class
/// 'wave'"; exporting a model whose outputs overflow gave "NSCocoaErrorDomain 3840" (and
/// `inspect` accepted the file). (`--out ""`: OutputTargetTests.)
final class ErrorMessageTests: XCTestCase {
    static let fixture = FitCLITests.fixture

    func testLimitsAndCausesAreNamed() throws {
        let dir = try scratchFolder()
        let bodies = runCLI(["fit", Self.fixture, "--people", "bodies=9", "--out", "\(dir)/b"])
        XCTAssertEqual(bodies.code, 2)
        XCTAssertEqual(bodies.err, "error: --people expects split, largest, central, longest, confident or bodies=M (M from 1 to 8), got 'bodies=9'\n")
        let rate = runCLI(["fit", Self.fixture, "--frame-rate", "1e9", "--out", "\(dir)/r"])
        XCTAssertEqual(rate.code, 1)
        XCTAssertEqual(rate.err, "error: config field 'frameRate' must be 0.01 to 10000 frames per second, got 1000000000.0\n")
        let folds = runCLI(["tune", Self.fixture, "--folds", "50", "--out", "\(dir)/t", "--epochs", "1"])
        XCTAssertEqual(folds.code, 1)
        XCTAssertTrue(folds.err.hasPrefix("error: tiny-natops: with "), folds.err)
        XCTAssertTrue(folds.err.contains("holds out 1 sequence, all of class '"), folds.err)
        XCTAssertTrue(folds.err.hasSuffix("a fold needs two classes to be scored: give fewer folds\n"), folds.err)
        XCTAssertFalse(folds.out.contains("fold 1"), "refused before any trial: \(folds.out)")
    }

    func testAModelWhoseOutputsOverflowIsRefusedByExportAndInspect() throws {
        // Every output overflows float32 (StreamCLITests.writeOverflowingModel).
        let dir = try scratchFolder()
        let path = "\(dir)/huge.atm"
        try StreamCLITests.writeOverflowingModel(to: path)
        for format in ["onnx", "coreml"] {
            let r = runCLI(["export", path, "--format", format, "--out", "\(dir)/m.\(format)"])
            XCTAssertEqual(r.code, 1, format)
            XCTAssertTrue(r.err.hasPrefix("error: \(path): the network's output for class"), r.err)
            XCTAssertTrue(r.err.contains("not a finite number, on a plain pose: its weights overflow float32"), r.err)
            XCTAssertFalse(r.err.contains("NSCocoaErrorDomain"), r.err)
            XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/m.\(format)"), "nothing written")
        }
        for json in [[], ["--json"]] {
            let r = runCLI(["inspect", path] + json)
            XCTAssertEqual(r.code, 1)
            XCTAssertFalse(r.out.isEmpty, "the file is still described")
            XCTAssertTrue(r.err.hasPrefix("error: \(path): the network's output for class"), r.err)
            XCTAssertTrue(r.err.hasSuffix("; eval, predict and export refuse this model\n"), r.err)
        }
    }
}
