import Foundation
import PoseCore
import TestSupport
import XCTest

/// Atomic writes whose temporary files are recognisable, the writer's own, and cleared from a
/// folder (issue 16 item 8, issue 26 item 2); folder locks.
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
        // A temporary file left by a killed write is not touched by the next write.
        try Data(repeating: 9, count: 100).write(to: URL(fileURLWithPath: "\(dir)/.model.atm.tmp"))
        try AtomicWrite.write([6], to: path)
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data([6]))
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), ["model.atm", ".model.atm.tmp"])
        // Issue 26 item 9: a missing folder is named, not the temporary file in it.
        XCTAssertThrowsError(try AtomicWrite.write([1], to: "\(dir)/missing/x.json")) {
            XCTAssertEqual(
                "\($0)", "\(dir)/missing/x.json: cannot write: the folder \(dir)/missing does not exist; create it first")
        }
    }

    func testTemporaryFilesAreEachWritersOwn() throws {
        // Issue 26 item 2: every writer of one file used `.<name>.tmp`, so two processes (or
        // threads) truncated and renamed each other's temporary file: "cannot rename the
        // temporary file into place", or one file's bytes under the other's name. Four threads
        // each write a 256 KiB file of their own byte 40 times; every write succeeds and the
        // file is always one writer's whole file.
        let dir = try folder()
        let path = "\(dir)/model.atm"
        let failures = LockedList()
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            let bytes = [UInt8](repeating: UInt8(t + 1), count: 1 << 18)
            for _ in 0..<40 {
                do { try AtomicWrite.write(bytes, to: path) } catch { failures.append("\(error)") }
                if let data = FileManager.default.contents(atPath: path),
                    data.count != bytes.count || Set(data).count != 1
                {
                    failures.append("a mixed file: \(data.count) bytes of \(Set(data).sorted())")
                }
            }
        }
        XCTAssertEqual(failures.items, [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["model.atm"])
    }

    func testStaleTemporaryFilesAreRecognisedAndRemoved() throws {
        let dir = try folder()
        let stale = [".model.atm.tmp", ".report.json.tmp", ".dat.nosync1E33.1xVHdR", ".model.atm.4711-09af33c1.tmp"]
        let kept = ["model.atm", "notes.tmp", ".hidden", ".dat.nosyncXYZ.abcdef", ".dat.nosync12.short", ".tmp", FolderLock.fileName]
        for name in stale + kept { try Data([0]).write(to: URL(fileURLWithPath: "\(dir)/\(name)")) }
        try FileManager.default.createDirectory(atPath: "\(dir)/.folder.tmp", withIntermediateDirectories: false)
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: dir), stale.sorted())
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), Set(kept + [".folder.tmp"]))
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: dir), [])
        XCTAssertEqual(AtomicWrite.removeStaleTemporaries(in: "\(dir)/nonexistent"), [])
    }

    func testTemporaryPaths() {
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "/r/model.atm", tag: "7-1"), "/r/.model.atm.7-1.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "/model.atm", tag: "7-1"), "/.model.atm.7-1.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "model.atm", tag: "7-1"), ".model.atm.7-1.tmp")
        XCTAssertEqual(AtomicWrite.temporaryPath(for: "runs/a/report.json", tag: "7-1"), "runs/a/.report.json.7-1.tmp")
        let tag = AtomicWrite.uniqueTag()
        XCTAssertTrue(tag.hasPrefix("\(getpid())-"), tag)
        XCTAssertEqual(tag.split(separator: "-").last?.count, 8)
        XCTAssertNotEqual(AtomicWrite.uniqueTag(), AtomicWrite.uniqueTag())
    }

    func testAFolderHasOneWriterAndNamesIt() throws {
        // Issue 26 item 2: a second writer of a folder is refused, naming the holder; the lock is
        // the kernel's (flock), so it ends with its holder however that ends.
        let dir = try folder()
        var first: FolderLock? = try FolderLock(dir, command: "fit")
        XCTAssertEqual(first?.isHeld, true)
        XCTAssertThrowsError(try FolderLock(dir, command: "eval")) {
            guard let busy = $0 as? FolderLock.Busy else { return XCTFail("\($0)") }
            XCTAssertEqual(busy.folder, dir)
            XCTAssertTrue(busy.holder.hasPrefix("pid \(getpid()) on "), busy.holder)
            XCTAssertTrue(busy.holder.contains(", actiontrain fit, since 20"), busy.holder)
            XCTAssertTrue("\(busy)".hasPrefix("\(dir) is being written by another actiontrain process (pid "), "\(busy)")
        }
        first = nil
        XCTAssertNoThrow(try FolderLock(dir, command: "eval"), "released with its holder")
        // A lock file a killed process left (its record, no flock) is taken over.
        try Data("pid 999999 on elsewhere, actiontrain fit, since 2020-01-01T00:00:00Z\n".utf8).write(
            to: URL(fileURLWithPath: "\(dir)/\(FolderLock.fileName)"))
        let taken = try FolderLock(dir, command: "sweep")
        let record = try String(contentsOfFile: "\(dir)/\(FolderLock.fileName)", encoding: .utf8)
        XCTAssertTrue(record.hasPrefix("pid \(getpid()) on ") && record.contains("actiontrain sweep"), record)
        withExtendedLifetime(taken) {}
        // A missing folder is created, parents too; the lock file goes with its holder.
        var created: FolderLock? = try FolderLock.creatingFolder("\(dir)/a/b", command: "eval")
        XCTAssertEqual(created?.isHeld, true)
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/a/b/\(FolderLock.fileName)"))
        created = nil
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/a/b"), [])
    }
}

/// Strings appended from several threads.
final class LockedList: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ s: String) { lock.withLock { list.append(s) } }
    var items: [String] { lock.withLock { list } }
}

/// Issue 38 finding 1: writers replaced a FIFO or a device node (anything of size 0, or with
/// --force); run as root, `--json /dev/null` would have replaced the system's /dev/null. Only a
/// regular file is replaced; a FIFO or character device is written into as a stream.
final class WriteTargetTests: XCTestCase {
    func folder() throws -> String {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }

    func kind(_ path: String, link: Bool = false) -> mode_t {
        var st = stat()
        guard (link ? lstat(path, &st) : stat(path, &st)) == 0 else { return 0 }
        return st.st_mode & S_IFMT
    }

    func testAFIFOIsWrittenIntoAsAStreamAndKept() throws {
        let dir = try folder()
        let fifo = "\(dir)/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(AtomicWrite.target(fifo), .stream("a FIFO"))
        // No reader: an error at once (not a wait), naming what is missing.
        XCTAssertThrowsError(try AtomicWrite.write([1, 2, 3], to: fifo)) {
            XCTAssertEqual("\($0)", "\(fifo): cannot write: it is a FIFO that no process is reading; start the reader first")
        }
        // With a reader: the bytes arrive through it, and it stays a FIFO.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        try AtomicWrite.write([1, 2, 3], to: fifo)
        var got = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(read(reader, &got, 16), 3)
        XCTAssertEqual(Array(got.prefix(3)), [1, 2, 3])
        XCTAssertEqual(kind(fifo), S_IFIFO)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["fifo"], "no temporary file left")
    }

    func testADeviceBehindALinkIsKeptAndSoIsTheLink() throws {
        let dir = try folder()
        // A link to /dev/null (the old writer renamed its temporary file over the link; over
        // /dev/null itself, as root, it would have replaced the system's).
        let null = "\(dir)/null"
        XCTAssertEqual(symlink("/dev/null", null), 0)
        XCTAssertEqual(AtomicWrite.target(null), .stream("a character device"))
        try AtomicWrite.write([UInt8](repeating: 7, count: 100_000), to: null)
        XCTAssertEqual(kind(null, link: true), S_IFLNK)
        XCTAssertEqual(kind("/dev/null"), S_IFCHR)
        // A link to a regular file: the file it names gets the bytes, the link stays a link.
        let real = "\(dir)/real.json", link = "\(dir)/link.json"
        try Data([9]).write(to: URL(fileURLWithPath: real))
        XCTAssertEqual(symlink(real, link), 0)
        try AtomicWrite.write([4, 5], to: link)
        XCTAssertEqual(kind(link, link: true), S_IFLNK)
        XCTAssertEqual(FileManager.default.contents(atPath: real), Data([4, 5]))
    }

    func testFoldersBlockDevicesSocketsAndEmptyPathsAreRefused() throws {
        let dir = try folder()
        XCTAssertThrowsError(try AtomicWrite.write([1], to: dir)) { XCTAssertEqual("\($0)", "\(dir): cannot write: it is a folder; give a file path") }
        XCTAssertThrowsError(try AtomicWrite.write([1], to: "")) { XCTAssertEqual("\($0)", "\"\": cannot write: the path is empty; give a file name") }
        XCTAssertThrowsError(try AtomicWrite.write([1], to: "\(dir)/new/")) {
            XCTAssertEqual("\($0)", "\(dir)/new/: cannot write: the path ends with '/'; give a file name")
        }
        // A socket (bound in the folder).
        let socketPath = "\(dir)/s"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (k, b) in socketPath.utf8.enumerated() where k < raw.count - 1 { raw[k] = b }
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(AtomicWrite.target(socketPath), .refused("a socket"))
        XCTAssertThrowsError(try AtomicWrite.write([1], to: socketPath)) { XCTAssertTrue("\($0)".contains("it is a socket; actiontrain writes regular files"), "\($0)") }
        XCTAssertEqual(kind(socketPath), S_IFSOCK)
        // A block device (a node of one, where this process may make it).
        let block = "\(dir)/block"
        guard mknod(block, S_IFBLK | 0o600, dev_t(7 << 8)) == 0 else { return }
        XCTAssertThrowsError(try AtomicWrite.write([1], to: block)) { XCTAssertTrue("\($0)".contains("it is a block device"), "\($0)") }
        XCTAssertEqual(kind(block), S_IFBLK)
    }
}
