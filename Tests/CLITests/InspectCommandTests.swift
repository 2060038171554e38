import ActionRuntime
@testable import actiontrain
import Foundation
import PoseCore
import TestSupport
import XCTest

final class InspectCommandTests: XCTestCase {
    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    /// "a" and "b" are the same frames in train and test, both of subject p1; "c" has a point
    /// outside the 100 x 100 image; "nose" is missing in 2 of 5 frames.
    func fixture() throws -> String {
        let lines = [
            #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "imageSize": [100, 100], "classes": ["wave", "idle"]}"#,
            #"{"id": "a", "label": "wave", "group": "p1", "split": "train", "frames": [{"pose": {"nose": [10, 20], "leftEye": [11, 19]}}, {"pose": {"leftEye": [12, 19]}}]}"#,
            #"{"id": "b", "label": "wave", "group": "p1", "split": "test", "frames": [{"pose": {"nose": [10, 20], "leftEye": [11, 19]}}, {"pose": {"leftEye": [12, 19]}}]}"#,
            #"{"id": "c", "label": "idle", "group": "p2", "split": "test", "frames": [{"pose": {"nose": [150, 20], "leftEye": [1, 1]}}]}"#,
            #"{"id": "d", "label": "idle", "group": "p3", "split": "train", "frames": [{"pose": {"nose": [5, 5], "leftEye": [2, 2]}}, {"pose": {}}, {"pose": {"nose": [6, 5]}}]}"#,
        ]
        let path = try temporaryDirectory().appendingPathComponent("clips.jsonl").path
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func testJSONReportsMissingRatesDuplicatesAndLeakage() throws {
        let r = run(["inspect", try fixture(), "--json"])
        XCTAssertEqual(r.code, 0, r.err)
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        XCTAssertEqual(obj["sequences"] as? Int, 4)
        XCTAssertEqual(obj["frames"] as? Int, 8)
        XCTAssertEqual(obj["outOfImagePoints"] as? Int, 1)
        XCTAssertEqual(obj["emptyFrames"] as? Int, 1)
        let joints = try XCTUnwrap(obj["joints"] as? [[String: Any]])
        XCTAssertEqual(joints[0]["name"] as? String, "nose")
        XCTAssertEqual(joints[0]["missing"] as? Int, 3)  // frame 2 of a and b, the empty frame of d
        XCTAssertEqual(try XCTUnwrap(joints[0]["missingRate"] as? Double), 3.0 / 8, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(joints[1]["missingRate"] as? Double), 2.0 / 8, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(joints[2]["missingRate"] as? Double), 1, accuracy: 1e-12)
        XCTAssertEqual((obj["duplicates"] as? [[String: Any]])?.first?["ids"] as? [String], ["a", "b"])
        XCTAssertEqual((obj["groupLeaks"] as? [[String: Any]])?.first?["group"] as? String, "p1")
        let codes = (obj["warnings"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? []
        XCTAssertTrue(codes.contains("group-leak") && codes.contains("duplicate-sequences") && codes.contains("out-of-image"), "\(codes)")
        XCTAssertEqual(codes.filter { $0 == "joints-never-seen" }.count, 1, "one warning lists the 15 joints never seen")
    }

    func testTableAndStrictMode() throws {
        let path = try fixture()
        let r = run(["inspect", path])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("class   train   test   total\nwave        1      1       2\n"), r.out)
        XCTAssertTrue(r.out.contains("groups in several splits  1\n"), r.out)
        XCTAssertTrue(r.out.contains("[group-leak] group 'p1' appears in splits test, train"), r.out)
        let strict = run(["inspect", path, "--strict"])
        XCTAssertEqual(strict.code, 1)
        XCTAssertTrue(strict.err.hasPrefix("error: \(path): "), strict.err)
        XCTAssertTrue(strict.err.contains("warning(s) (--strict)"), strict.err)
    }

    /// Empty, random and wrong-magic `.atm` files are reported as broken model files (before
    /// this, as "unknown dataset format").
    func testBrokenModelFilesAreReportedAsModelFiles() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var g = SeededGenerator(seed: 1)
        let cases: [(String, [UInt8], String)] = [
            ("empty.atm", [], "not an actiontrain model file (the file is empty)"),
            ("random.atm", (0..<300).map { _ in UInt8(truncatingIfNeeded: g.nextInt(below: 256) | 1) }, "not an actiontrain model file (wrong magic bytes: the file starts with "),
            ("config.atm", Array(#"{"epochs": 3}"#.utf8), "wrong magic bytes: the file starts with 7B 22 65 70 6F 63 68 73, JSON text"),
            ("cut", Array(ModelFile.magic) + [1, 0, 0, 0], "model file is truncated: it should have 64 bytes but has 12"),
        ]
        for (name, bytes, message) in cases {
            let path = dir.appendingPathComponent(name).path
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            let r = run(["inspect", path])
            XCTAssertEqual(r.code, 1, name)
            XCTAssertTrue(r.err.hasPrefix("error: \(path): "), r.err)
            XCTAssertTrue(r.err.contains(message), "\(name): \(r.err)")
            XCTAssertFalse(r.err.contains("dataset format"), r.err)
        }
    }

    func testBadOptionsAreUsageErrors() throws {
        let path = try fixture()
        let r = run(["inspect", path, "--image-size", "100"])
        XCTAssertEqual(r.code, 2)
        XCTAssertEqual(r.err, "error: --image-size expects W,H in pixels, e.g. 1920,1080; got '100'\n")
        XCTAssertEqual(run(["inspect", "/nonexistent/x.jsonl"]).code, 1)
    }
}
