#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files written whole or not at all: the bytes go to a temporary file beside the target, which
/// is flushed to disk (fsync) and renamed over it, then the folder is flushed. A crash or kill
/// at any moment leaves the previous file or the new one, never a mix.
///
/// The temporary file has a recognisable name of its own, `.<name>.<pid>-<random>.tmp`
/// (`.model.atm.4711-9f3a0c1e.tmp` for `model.atm`), created exclusively (`O_EXCL`): two
/// processes (or threads) writing the same file never share a temporary file, so each rename
/// puts one whole file in place. `removeStaleTemporaries(in:)` clears a folder of those a killed
/// process left (fit does on resume, holding the run folder's `FolderLock`). Earlier versions
/// used `.<name>.tmp`, and Foundation's atomic writes `.dat.nosync<hex>.<6 characters>`; those
/// are cleared too. POSIX calls only (no Foundation), so every module can use it.
///
/// Only regular files are replaced (`target`): a path through a link writes the file the link
/// names and keeps the link; a FIFO or a character device (`/dev/null`, `/dev/stdout` on a
/// terminal) is written into as a stream, never replaced; a folder, a block device or a socket
/// is refused. So `--json /dev/null` run as root leaves the system's `/dev/null` in place.
public enum AtomicWrite {
    /// Why a write failed: the file and the system's reason.
    public struct WriteError: Error, Equatable, CustomStringConvertible {
        public var path: String
        public var reason: String

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        public var description: String { "\(path): cannot write: \(reason)" }
    }

    /// `path` split at its last `/`: the folder (`.` when there is none) and the name.
    /// The write of `path` would fail for its folder (missing, or not a folder): said before
    /// any work that would come first, in the words the write itself would use; nil otherwise.
    public static func folderProblem(_ path: String) -> WriteError? {
        let folder = split(path).folder
        var st = stat()
        guard stat(folder, &st) == 0 else { return WriteError(path: path, reason: missingFolder(folder)) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { return WriteError(path: path, reason: notAFolder(folder)) }
        return nil
    }

    static func missingFolder(_ folder: String) -> String { "the folder \(folder) does not exist; create it first" }
    static func notAFolder(_ folder: String) -> String { "\(folder) is not a folder" }

    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }

    /// The temporary file a write of `path` goes through, tagged `tag`: `.<name>.<tag>.tmp`
    /// beside it.
    public static func temporaryPath(for path: String, tag: String) -> String {
        let (folder, name) = split(path)
        return path.contains("/") ? "\(folder == "/" ? "" : folder)/.\(name).\(tag).tmp" : ".\(name).\(tag).tmp"
    }

    /// This process's tag for a new temporary file: its pid and 32 random bits.
    public static func uniqueTag() -> String {
        let random = String(UInt32.random(in: .min ... .max), radix: 16)
        return "\(getpid())-\(String(repeating: "0", count: 8 - random.count))\(random)"
    }

    /// What a path names, for a writer (links followed).
    public enum Target: Equatable, Sendable {
        /// Nothing yet: the file is created.
        case absent
        /// A regular file: replaced whole, atomically (through a link: the file it names).
        case regularFile
        /// A FIFO or a character device (`/dev/null`, a terminal): written into as a stream,
        /// never replaced. The associated text says which.
        case stream(String)
        /// A folder: refused.
        case folder
        /// A block device or a socket: refused, as a writer writes regular files only.
        case refused(String)
    }

    /// What `path` names now (`stat`, following links).
    public static func target(_ path: String) -> Target {
        var st = stat()
        guard stat(path, &st) == 0 else { return .absent }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return .regularFile
        case S_IFDIR: return .folder
        case S_IFIFO: return .stream("a FIFO")
        case S_IFCHR: return .stream("a character device")
        case S_IFBLK: return .refused("a block device")
        case S_IFSOCK: return .refused("a socket")
        default: return .refused("not a regular file")
        }
    }

    /// Writes `bytes` to `path`: a regular file (or a new one) atomically, as the type's comment
    /// says; a link to a regular file writes the file it names, the link kept; a FIFO or a
    /// character device as a stream, never replaced (a FIFO must have a reader: none is an
    /// error, not a wait). A folder, a block device, a socket and an empty path are refused.
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws {
        guard !path.isEmpty else { throw WriteError(path: "\"\"", reason: "the path is empty; give a file name") }
        switch target(path) {
        case .absent:
            guard !path.hasSuffix("/") else { throw WriteError(path: path, reason: "the path ends with '/'; give a file name") }
            try replace(bytes, at: path)
        case .regularFile:
            var link = stat()
            if lstat(path, &link) == 0 && (link.st_mode & S_IFMT) == S_IFLNK, let real = realpath(path, nil) {
                defer { free(real) }
                try replace(bytes, at: String(cString: real))
            } else {
                try replace(bytes, at: path)
            }
        case .stream(let kind): try stream(bytes, into: path, kind)
        case .folder: throw WriteError(path: path, reason: "it is a folder; give a file path")
        case .refused(let kind):
            throw WriteError(path: path, reason: "it is \(kind); actiontrain writes regular files (or streams into a FIFO or a character device), never replaces a special file")
        }
    }

    /// Streams `bytes` into a FIFO or character device at `path`, as `cat > path` would.
    static func stream(_ bytes: UnsafeRawBufferPointer, into path: String, _ kind: String) throws {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = errno == ENXIO ? "it is \(kind) that no process is reading; start the reader first" : "cannot open \(kind): \(errnoText())"
            throw WriteError(path: path, reason: reason)
        }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var done = 0
        while done < bytes.count {
            let n = posixWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw WriteError(path: path, reason: "write into \(kind) failed: \(n < 0 ? errnoText() : "no progress")") }
            done += n
        }
    }

    /// The atomic replacement of a regular file (or the creation of a new one).
    private static func replace(_ bytes: UnsafeRawBufferPointer, at path: String) throws {
        var temp = temporaryPath(for: path, tag: uniqueTag())
        var fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        while fd < 0 && errno == EEXIST {
            temp = temporaryPath(for: path, tag: uniqueTag())
            fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        }
        guard fd >= 0 else { throw WriteError(path: path, reason: cannotCreate(in: split(path).folder, temp)) }
        var done = 0
        var failure: String?
        while done < bytes.count {
            let n = posixWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                failure = "write failed: \(n < 0 ? errnoText() : "no progress")"
                break
            }
            done += n
        }
        if failure == nil && fsync(fd) != 0 { failure = "fsync failed: \(errnoText())" }
        close(fd)
        if let failure {
            unlink(temp)
            throw WriteError(path: path, reason: failure)
        }
        guard rename(temp, path) == 0 else {
            let reason = errnoText()
            unlink(temp)
            throw WriteError(path: path, reason: "cannot rename the temporary file into place: \(reason)")
        }
        let dfd = open(split(path).folder, O_RDONLY)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    public static func write(_ bytes: [UInt8], to path: String) throws {
        try bytes.withUnsafeBytes { try write($0, to: path) }
    }

    /// True for the name of a temporary file an interrupted atomic write leaves: ours
    /// (`.<name>.<tag>.tmp`, or `.<name>.tmp` of earlier versions) or Foundation's
    /// (`.dat.nosync<hex>.<6 characters>`).
    public static func isTemporaryName(_ name: String) -> Bool {
        if name.hasPrefix(".") && name.hasSuffix(".tmp") && name.count > 5 { return true }
        guard name.hasPrefix(".dat.nosync") else { return false }
        let rest = name.dropFirst(".dat.nosync".count).split(separator: ".", omittingEmptySubsequences: false)
        return rest.count == 2 && !rest[0].isEmpty && rest[0].allSatisfy(\.isHexDigit) && rest[1].count == 6
    }

    /// Removes the temporary files that interrupted writes left in `folder` (regular files only,
    /// not its subfolders); returns their names, sorted. A folder that cannot be read has none.
    @discardableResult
    public static func removeStaleTemporaries(in folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if isTemporaryName(name) { names.append(name) }
        }
        closedir(dir)
        var removed: [String] = []
        for name in names.sorted() {
            let path = "\(folder)/\(name)"
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    /// Why a file cannot be created in `folder`, from `errno` after `open` failed: a missing
    /// folder is named as such (not by the temporary file's name).
    static func cannotCreate(in folder: String, _ file: String) -> String {
        let error = errno
        var st = stat()
        if error == ENOENT && stat(folder, &st) != 0 { return missingFolder(folder) }
        if error == ENOTDIR { return notAFolder(folder) }
        if error == EACCES || error == EROFS { return "cannot create a file in \(folder): \(String(cString: strerror(error)))" }
        return "cannot create \(file): \(String(cString: strerror(error)))"
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }

    private static func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int {
        #if canImport(Glibc)
            return Glibc.write(fd, p, n)
        #else
            return Darwin.write(fd, p, n)
        #endif
    }
}
