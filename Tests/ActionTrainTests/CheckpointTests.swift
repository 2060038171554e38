@testable import ActionTrain
import PoseCore
import TestSupport
import XCTest

final class CheckpointTests: XCTestCase {
    func sample() throws -> Checkpoint {
        var c = Toy.config(epochs: 2)
        c.classWeights = .explicit([1, 2, 0.5])
        let t = try Toy.trainer(c)
        try t.fit(train: Toy.train, validation: Toy.validation)
        return Checkpoint(config: c, state: t.state(), metadata: ["dataset": "toy.jsonl"])
    }

    func testRoundTrip() throws {
        let c = try sample()
        let bytes = try c.encode()
        XCTAssertEqual(Array(bytes[0..<8]), Checkpoint.magic)
        let back = try Checkpoint.decode(bytes, source: "x")
        XCTAssertEqual(back, c)
        XCTAssertNotNil(back.state.bestParameters)
        XCTAssertEqual(back.state.optimizer.buffers.map(\.name), ["m", "v"])
        XCTAssertEqual(try back.encode(), bytes)
    }

    func testEveryTornPrefixIsRejectedWithATypedError() throws {
        let bytes = try sample().encode()
        var cuts = Array(stride(from: 0, to: bytes.count, by: 97)) + [8, 12, 23, 24, 25, bytes.count - 1]
        cuts = cuts.filter { $0 < bytes.count }
        for cut in cuts {
            XCTAssertThrowsError(try Checkpoint.decode(Array(bytes[0..<cut]), source: "torn.atc"), "cut at \(cut)") { e in
                guard let e = e as? CheckpointError else { return XCTFail("untyped error \(e) at cut \(cut)") }
                switch e {
                case .notACheckpoint, .truncated, .checksumMismatch: break
                default: XCTFail("cut \(cut): \(e)")
                }
            }
        }
        // Extra bytes are rejected too.
        assertThrows(["torn.atc: the checkpoint is truncated or torn (\(bytes.count) bytes expected, \(bytes.count + 1) found)"]) {
            _ = try Checkpoint.decode(bytes + [0], source: "torn.atc")
        }
    }

    func testAFlippedByteAnywhereAfterThePreambleIsDetected() throws {
        let bytes = try sample().encode()
        for at in [24, 30, bytes.count / 2, bytes.count - 1] {
            var bad = bytes
            bad[at] ^= 0x10
            XCTAssertThrowsError(try Checkpoint.decode(bad, source: "bad.atc")) { e in
                let text = String(describing: e)
                XCTAssertTrue(
                    e as? CheckpointError == .checksumMismatch("bad.atc") || text.contains("bad.atc:"), "\(at): \(text)")
            }
        }
        var data = bytes
        data[bytes.count - 5] ^= 0x01  // inside the last float: header intact, checksum catches it
        assertThrows(["bad.atc: the checkpoint is damaged (checksum mismatch); it cannot be resumed"]) {
            _ = try Checkpoint.decode(data, source: "bad.atc")
        }
    }

    func testOtherFilesAndVersionsAreRejected() throws {
        assertThrows(["m.atm: not an actiontrain checkpoint"]) { _ = try Checkpoint.decode(Array("hello world, this is text".utf8), source: "m.atm") }
        var bytes = try sample().encode()
        bytes[8] = 2
        assertThrows(["checkpoint version 2 is not supported"]) { _ = try Checkpoint.decode(bytes, source: "v2.atc") }
        assertThrows(["/nonexistent/c.atc: cannot read the checkpoint"]) { _ = try Checkpoint.read("/nonexistent/c.atc") }
    }

    func testAtomicWriteReplacesAndLeavesNoTemporaryFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("checkpoint.atc").path
        let first = try sample()
        try first.write(to: path)
        var second = first
        second.state.progress.epoch = 9
        try second.write(to: path)
        XCTAssertEqual(try Checkpoint.read(path), second)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["checkpoint.atc"])
        assertThrows(["/nonexistent/dir/c.atc: cannot write the checkpoint: the folder /nonexistent/dir does not exist"]) { try first.write(to: "/nonexistent/dir/c.atc") }
    }
}
