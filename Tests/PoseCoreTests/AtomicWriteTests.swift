import Foundation
import PoseCore
import TestSupport
import XCTest

/// Atomic writes whose temporary files are recognisable, replaced by the next write and
/// cleared from a folder (issue 16 item 8).
final class AtomicFileTests: XCTestCase {
    func folder() throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }

    func testAtomicWritesLeaveNoTemporaryFile() throws {
        let dir = try folder()
        let path = "\(dir)/model.atm"
        try AtomicWrite.write([1, 2, 3], to: path)
        try AtomicWrite.write([4, 5], to: path)
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data([4, 5]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["model.atm"])
        XCTAssertEqual(AtomicWrite.temporaryPath(for: path), "\(dir)/.model.atm.tmp")
        // A temporary file left by a killed write is replaced by the next write of the same file.
        try Data(repeating: 9, count: 100).write(to: URL(fileURLWithPath: "\(dir)/.model.atm.tmp"))
        try AtomicWrite.write([6], to: path)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["model.atm"])
        assertThrows(["\(dir)/missing/x.json: cannot write: cannot create \(dir)/missing/.x.json.tmp"]) {
            try AtomicWrite.write([1], to: "\(dir)/missing/x.json")
        }
    }

    func testStaleTemporaryFilesAreRecognisedAndRemoved() throws {
        let dir = try folder()
        let stale = [".model.atm.tmp", ".report.json.tmp", ".dat.nosync1E33.1xVHdR"]
        let kept = ["model.atm", "notes.tmp", ".hidden", ".dat.nosyncXYZ.abcdef", ".dat.nosync12.short", ".tmp"]
        for name in stale + kept { try Data([0]).write(to: URL(fileURLWithPath: "\(dir)/\(name)")) }
        try FileManager.default.createDirectory(atPath: "\(dir)/.folder.tmp", withIntermediateDirectories: false)
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: dir), stale.sorted())
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), Set(kept + [".folder.tmp"]))
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: dir), [])
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: "\(dir)/nonexistent"), [])
    }

    func testTemporaryPaths() {
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "/r/model.atm"), "/r/.model.atm.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "/model.atm"), "/.model.atm.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "model.atm"), ".model.atm.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "runs/a/report.json"), "runs/a/.report.json.tmp")
    }
}
