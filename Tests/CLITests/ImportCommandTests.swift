@testable import actiontrain
import Foundation
import TestSupport
import XCTest

final class ImportCommandTests: XCTestCase {
    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    func testImportNpzWritesNativeAndRefusesToOverwrite() throws {
        let out = try temporaryDirectory().appendingPathComponent("coco.jsonl").path
        let src = fixtures.appendingPathComponent("coco_small.npz").path
        let r = run(["import", "npz", src, "--out", out])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertEqual(r.out, "import: wrote 3 sequences (test 1, train 2), 2 classes, 9 frames, skeleton coco-17 to \(out)\n")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix(#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 30.0, "imageSize": [640.0, 480.0], "classes": ["wave", "clap"]}"#), text)
        let again = run(["import", "npz", src, "--out", out])
        XCTAssertEqual(again.code, 1)
        XCTAssertEqual(again.err, "error: \(out) exists; pass --force to overwrite it\n")
        XCTAssertEqual(run(["import", "npz", src, "--out", out, "--force"]).code, 0)
    }

    func testImportCreateMLAndConvertRoundTrip() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("cml.jsonl").path
        let r = run(["import", "createml", fixtures.appendingPathComponent("createml.npz").path, "--out", out])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("skeleton vision-body-2d"), r.out)
        let copy = dir.appendingPathComponent("copy.jsonl").path
        XCTAssertEqual(run(["convert", copy, out]).code, 0)
        XCTAssertEqual(FileManager.default.contents(atPath: copy), FileManager.default.contents(atPath: out))
    }

    func testUsageAndInputErrors() {
        let bad = run(["import", "nptz", "x.npz", "--out", "/tmp/never.jsonl"])
        XCTAssertEqual(bad.code, 2)
        XCTAssertEqual(bad.err, "error: unknown KIND 'nptz'; use one of natops, penn-action, utkinect, csv, npz, createml, pyskl. Did you mean 'npz'?\n")
        XCTAssertEqual(run(["import", "npz", "x.npz"]).code, 2, "--out is required")
        let dtype = run(["import", "npz", fixtures.appendingPathComponent("bad_dtype.npz").path, "--out", "/tmp/never-written.jsonl"])
        XCTAssertEqual(dtype.code, 1)
        XCTAssertTrue(dtype.err.contains("entry 'X.npy': X has dtype '<i4'; save the poses as float32 or float64"), dtype.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/never-written.jsonl"))
    }
}
