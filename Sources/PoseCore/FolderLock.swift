#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One writer per folder: a process that writes into a folder of files that belong together (a
/// run folder, a report folder, a shard directory, a Create ML export) holds this lock while
/// it does, so that two processes never mix their files in one folder.
///
/// The lock is `flock(LOCK_EX)` on the file `.actiontrain.lock` in the folder, which holds the
/// holder's pid, host, command and start time so that a second writer can say who has it
/// (`Busy`). The kernel releases the lock when its process ends, however it ends, so a lock
/// left by a killed process is no lock (a stale lock file is detected by taking it): the file
/// stays, and the next writer takes it over and records itself. The lock file is kept (removing it would let a waiting process lock a file no longer in the folder); it is
/// hidden and counts as no content (`isLockName`). On a filesystem without `flock` the lock
/// is not taken (`isHeld` false) and the folder is written as before. POSIX calls only.
public final class FolderLock: @unchecked Sendable {  // immutable after init; the fd is only closed in deinit
    public static let fileName = ".actiontrain.lock"

    /// Another process holds the lock of `folder`; `holder` says who (pid, host, command,
    /// since when), as its lock file records.
    public struct Busy: Error, Equatable, CustomStringConvertible {
        public var folder: String
        public var holder: String
        public init(folder: String, holder: String) {
            self.folder = folder
            self.holder = holder
        }
        public var description: String {
            "\(folder) is being written by another actiontrain process (\(holder)); wait for it to finish, or choose another folder"
        }
    }

    public let folder: String
    /// False when the filesystem does not support the lock (it was not taken).
    public let isHeld: Bool
    private let fd: Int32

    /// Takes the lock of `folder` (which must exist) for `command` (e.g. "fit"), or throws
    /// `Busy` naming the holder; a folder where no file can be created throws
    /// `AtomicWrite.WriteError`.
    public init(_ folder: String, command: String) throws {
        self.folder = folder
        let path = "\(folder)/\(Self.fileName)"
        var fd: Int32
        while true {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw AtomicWrite.WriteError(path: path, reason: AtomicWrite.cannotCreate(in: folder, path)) }
            var locked = flock(fd, LOCK_EX | LOCK_NB)
            while locked != 0 && errno == EINTR { locked = flock(fd, LOCK_EX | LOCK_NB) }
            if locked != 0 {
                guard errno == EWOULDBLOCK else {
                    // No flock here (some network filesystems): write without the lock.
                    (self.fd, isHeld) = (fd, false)
                    return
                }
                let holder = Self.contents(fd)
                close(fd)
                throw Busy(folder: folder, holder: holder.isEmpty ? "it did not say which" : holder)
            }
            var mine = stat(), named = stat()
            if fstat(fd, &mine) == 0 && stat(path, &named) == 0 && mine.st_ino == named.st_ino && mine.st_dev == named.st_dev { break }
            close(fd)  // the holder removed the file as it let go: lock the one at the path now
        }
        var host = [CChar](repeating: 0, count: 256)
        _ = gethostname(&host, host.count - 1)
        let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let text = "pid \(getpid()) on \(name), actiontrain \(command), since \(Self.utc(time(nil)))\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        (self.fd, isHeld) = (fd, true)
    }

    /// Creates `folder` (and its parents) when missing, then takes its lock.
    public static func creatingFolder(_ folder: String, command: String) throws -> FolderLock {
        var st = stat()
        if stat(folder, &st) != 0 {
            var prefix = folder.hasPrefix("/") ? "/" : ""
            for part in folder.split(separator: "/") {
                prefix += part
                if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                    throw AtomicWrite.WriteError(path: folder, reason: "cannot create the folder \(prefix): \(String(cString: strerror(errno)))")
                }
                prefix += "/"
            }
        }
        return try FolderLock(folder, command: command)
    }

    /// Released: the file is removed (still locked, so no one else holds it), then closed.
    deinit {
        if isHeld { unlink("\(folder)/\(Self.fileName)") }
        close(fd)
    }

    /// True for the lock file's name (no content of the folder).
    public static func isLockName(_ name: String) -> Bool { name == fileName }

    private static func contents(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = pread(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return "" }
        return String(decoding: buffer[..<n], as: UTF8.self).trimmingTrailingNewlines()
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    private static func utc(_ t: time_t) -> String {
        var seconds = t
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while s.last == "\n" || s.last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
