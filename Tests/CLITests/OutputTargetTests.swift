import Foundation
import TestSupport
import XCTest

@testable import actiontrain

/// What the writing commands do with the path they are given (issue 38 findings 1 and 10):
/// only regular files are replaced; a FIFO or a character device is written into as a stream
/// (no --force needed, nothing recorded); a block device is refused even with --force; and an
/// output that is the command's own input is refused even with --force.
final class OutputTargetTests: XCTestCase {
    static let golden = ModelCommandsTests.golden
    static let fixture = FitCLITests.fixture

    static func kind(_ path: String, link: Bool = false) -> mode_t {
        var st = stat()
        guard (link ? lstat(path, &st) : stat(path, &st)) == 0 else { return 0 }
        return st.st_mode & S_IFMT
    }

    /// Runs `body` while a thread drains the FIFO at `path`; returns what came through it.
    static func draining(_ path: String, _ body: () -> Void) -> Data {
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        precondition(reader >= 0, "open the FIFO's read end")
        let received = LockedBytes(), finished = DispatchSemaphore(value: 0), done = LockedFlag()
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = read(reader, &buffer, buffer.count)
                if n > 0 {
                    received.append(buffer[..<n])
                } else if done.value {
                    break
                } else {
                    usleep(1000)
                }
            }
            close(reader)
            finished.signal()
        }
        body()
        done.set()
        finished.wait()
        return received.data
    }

    func testExportConvertAndImportWriteThroughDevicesAndNeverReplaceThem() throws {
        let dir = try scratchFolder()
        let null = "\(dir)/null"
        XCTAssertEqual(symlink("/dev/null", null), 0)
        let export = runCLI(["export", Self.golden, "--out", null, "--parity-windows", "0", "--force"])
        XCTAssertEqual(export.code, 0, export.err)
        XCTAssertEqual(runCLI(["convert", null, Self.fixture, "--force"]).code, 0)
        XCTAssertEqual(runCLI(["convert", null, Self.fixture]).code, 0, "a stream replaces nothing: no --force needed")
        XCTAssertEqual(Self.kind(null, link: true), S_IFLNK)
        XCTAssertEqual(Self.kind("/dev/null"), S_IFCHR)
        let block = "\(dir)/block"
        if mknod(block, S_IFBLK | 0o600, dev_t(7 << 8)) == 0 {
            for args in [["export", Self.golden, "--out", block, "--force"], ["convert", block, Self.fixture, "--force"]] {
                let r = runCLI(args)
                XCTAssertEqual(r.code, 1, "\(args)")
                XCTAssertTrue(r.err.contains("\(block) is a block device; actiontrain writes regular files only"), r.err)
                XCTAssertEqual(Self.kind(block), S_IFBLK)
            }
        }
        // Issue 38 finding 11: an empty --out is named as such.
        let empty = runCLI(["export", Self.golden, "--out", "", "--parity-windows", "0"])
        XCTAssertEqual(empty.code, 2)
        XCTAssertEqual(empty.err, "error: the output path is empty; give a file name\n")
    }

    func testAnOutputThatIsTheInputIsRefusedEvenWithForce() throws {
        // Issue 38 finding 10: `export MODEL --out MODEL --force` overwrote the model with its
        // ONNX export.
        let dir = try scratchFolder()
        let model = "\(dir)/m.atm"
        try FileManager.default.copyItem(atPath: Self.golden, toPath: model)
        let before = try Data(contentsOf: URL(fileURLWithPath: model))
        XCTAssertEqual(symlink(model, "\(dir)/link.onnx"), 0)
        XCTAssertEqual(link(model, "\(dir)/hard.onnx"), 0)
        for out in [model, "\(dir)/link.onnx", "\(dir)/hard.onnx", "\(dir)/./m.atm"] {
            let r = runCLI(["export", model, "--out", out, "--force", "--parity-windows", "0"])
            XCTAssertEqual(r.code, 1, out)
            XCTAssertEqual(r.err, "error: \(out) is the input \(model) (the same file); choose another output path, the input is never overwritten\n")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: model)), before)
        // convert and import: the output may not be one of the inputs either.
        let data = "\(dir)/d.jsonl"
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: data)
        let original = try Data(contentsOf: URL(fileURLWithPath: data))
        let c = runCLI(["convert", data, Self.fixture, data, "--force"])
        XCTAssertEqual(c.code, 1)
        XCTAssertEqual(c.err, "error: \(data) is the input \(data) (the same file); choose another output path, the input is never overwritten\n")
        let csv = "\(dir)/d.csv"
        try Data("sequence,frame,label,a_x,a_y\ns,0,x,1,2\n".utf8).write(to: URL(fileURLWithPath: csv))
        let i = runCLI(["import", "csv", csv, "--out", csv, "--force"])
        XCTAssertEqual(i.code, 1)
        XCTAssertTrue(i.err.contains("is the input \(csv) (the same file)"), i.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: data)), original)
    }
}

/// Bytes appended by one thread and read by another.
final class LockedBytes: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var bytes = Data()
    func append(_ b: ArraySlice<UInt8>) { lock.withLock { bytes.append(contentsOf: b) } }
    var data: Data { lock.withLock { bytes } }
}

/// A flag set by one thread and read by another.
final class LockedFlag: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var raised = false
    func set() { lock.withLock { raised = true } }
    var value: Bool { lock.withLock { raised } }
}

extension EvalCLITests {
    func testEvalStreamsItsJSONIntoAFIFOAndADeviceWithoutForceAndKeepsThem() throws {
        let dir = self.dir.path, data = try writeDataset("d.jsonl"), model = try writeModel("good.atm")
        let fifo = "\(dir)/report.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        var r: (code: Int32, out: String, err: String) = (0, "", "")
        let report = OutputTargetTests.draining(fifo) { r = run(["eval", model, data, "--json", fifo, "--bootstrap", "0"]) }
        XCTAssertEqual(r.code, 0, r.err)
        let object = try JSONSerialization.jsonObject(with: report) as? [String: Any]
        XCTAssertNotNil(object?["schema"], "the report came through the FIFO: \(report.count) bytes")
        XCTAssertEqual(OutputTargetTests.kind(fifo), S_IFIFO, "still a FIFO")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/\(OutputGuard.recordName)"), "a stream is not recorded")
        // A link to /dev/null: written through, the link and /dev/null kept.
        let null = "\(dir)/null.json"
        XCTAssertEqual(symlink("/dev/null", null), 0)
        XCTAssertEqual(run(["eval", model, data, "--json", null, "--bootstrap", "0"]).code, 0)
        XCTAssertEqual(OutputTargetTests.kind(null, link: true), S_IFLNK)
        XCTAssertEqual(OutputTargetTests.kind("/dev/null"), S_IFCHR)
        // A block device is refused, with --force too, before any work.
        let block = "\(dir)/block"
        if mknod(block, S_IFBLK | 0o600, dev_t(7 << 8)) == 0 {
            let b = run(["eval", model, data, "--json", block, "--bootstrap", "0", "--force"])
            XCTAssertEqual(b.code, 1)
            XCTAssertEqual(b.err, "error: \(block) is a block device; actiontrain writes regular files only (or streams into a FIFO or a character device)\n")
            XCTAssertEqual(b.out, "")
            XCTAssertEqual(OutputTargetTests.kind(block), S_IFBLK)
        }
    }

}
