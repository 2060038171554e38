@testable import actiontrain
import Foundation
import TestSupport
import XCTest

/// `fit` fails early rather than late, warns when it learned nothing, and leaves no temporary
/// files behind an interrupted write (issue 16 items 5, 8 and 11), on the tiny fixture (kept
/// apart from FitCLITests.swift, which others change).
extension FitCLITests {
    /// Two validation sequences without frames: refused before the first epoch (before, fit
    /// trained every epoch and then failed on "metric 'validationAccuracy' is -nan").
    func testValidationWithoutWindowsFailsBeforeTraining() throws {
        let dir = try folder()
        var lines = try String(contentsOfFile: Self.fixture, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.append(#"{"id": "v0", "label": "raise", "split": "validation", "frames": []}"#)
        lines.append(#"{"id": "v1", "label": "wave", "split": "validation", "frames": []}"#)
        let data = "\(dir)/empty-validation.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: data, atomically: true, encoding: .utf8)
        let r = run(["fit", data, "--out", "\(dir)/run", "--epochs", "2"] + Self.quick)
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(
            r.err.hasSuffix(
                "error: empty-validation: the 2 validation sequences give no windows of 10 frames (are they empty?); give validation "
                    + "sequences with frames, or train without validation (validationFraction 0 and no validation split)\n"), r.err)
        XCTAssertFalse(r.out.contains("epoch"), r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/run/checkpoint.atc"))
    }

    /// A learning rate of 1e6: the run ends at chance level and says so, naming the rate
    /// (before, exit 0 without a word).
    func testChanceLevelAccuracyIsWarnedAbout() throws {
        let dir = try folder()
        let r = run(["fit", Self.fixture, "--out", "\(dir)/run", "--epochs", "3", "--learning-rate", "1e6"] + Self.quick)
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.err.contains("warning: [chance-level] the final validation accuracy "), r.err)
        XCTAssertTrue(r.err.contains("is not above chance level (always answering the most frequent label scores "), r.err)
        XCTAssertTrue(r.err.contains("The learning rate 1e+06 is likely too high"), r.err)
    }

    /// The files fit writes go through recognisable temporary files; those a killed write left
    /// (and Foundation's, from earlier versions) are removed when the run is resumed.
    func testResumeRemovesTheTemporaryFilesOfAnInterruptedWrite() throws {
        let dir = try folder()
        let runDir = "\(dir)/run"
        let first = run(["fit", Self.fixture, "--out", runDir, "--epochs", "1"] + Self.quick)
        XCTAssertEqual(first.code, 0, first.err)
        let written = try FileManager.default.contentsOfDirectory(atPath: runDir)
        XCTAssertEqual(written.filter { $0.hasPrefix(".") }, [], "no temporary file after a clean run")
        for name in [".model.atm.tmp", ".dat.nosync2A1F.kX93bQ"] {
            try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: "\(runDir)/\(name)"))
        }
        let resumed = run(["fit", "--resume", runDir])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertTrue(
            resumed.err.contains(
                "warning: [temporary-files] removed \(runDir)/.dat.nosync2A1F.kX93bQ, \(runDir)/.model.atm.tmp, left by an interrupted write\n"), resumed.err)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: runDir).filter { $0.hasPrefix(".") }, [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(runDir)/model.atm"))
    }
}
