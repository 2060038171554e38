import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files written whole or not at all: the bytes go to a temporary file beside the target, which
/// is flushed to disk (fsync) and renamed over it, then the folder is flushed. A crash or kill
/// at any moment leaves the previous file or the new one, never a mix.
///
/// The temporary file has a fixed, recognisable name, `.<name>.tmp` (`.model.atm.tmp` for
/// `model.atm`): the next write of the same file replaces one left by a killed process, and
/// `removeStaleTemporaries(in:)` clears a folder of them (fit does on resume). Foundation's
/// atomic writes, which earlier versions used, leave `.dat.nosync<hex>.<6 characters>` files
/// instead; those are cleared too.
public enum AtomicFile {
    /// Why a write failed: the file and the system's reason.
    public struct WriteError: Error, Equatable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path): cannot write: \(reason)" }
    }

    /// The temporary file a write of `path` goes through.
    public static func temporaryPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp").path
    }

    /// Writes `bytes` to `path` atomically (see the type's comment).
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String) throws {
        let temp = temporaryPath(for: path)
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw WriteError(path: path, reason: "cannot create \(temp): \(errnoText())") }
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
        let dfd = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    public static func write(_ bytes: [UInt8], to path: String) throws {
        try bytes.withUnsafeBytes { try write($0, to: path) }
    }

    public static func write(_ data: Data, to path: String) throws {
        try data.withUnsafeBytes { try write($0, to: path) }
    }

    /// True for the name of a temporary file an interrupted atomic write leaves: ours
    /// (`.<name>.tmp`) or Foundation's (`.dat.nosync<hex>.<6 characters>`).
    public static func isTemporaryName(_ name: String) -> Bool {
        if name.hasPrefix(".") && name.hasSuffix(".tmp") && name.count > 5 { return true }
        guard name.hasPrefix(".dat.nosync") else { return false }
        let rest = name.dropFirst(".dat.nosync".count).split(separator: ".", omittingEmptySubsequences: false)
        return rest.count == 2 && !rest[0].isEmpty && rest[0].allSatisfy(\.isHexDigit) && rest[1].count == 6
    }

    /// Removes the temporary files that interrupted writes left in `dir` (not its subfolders);
    /// returns their names, sorted. A folder that cannot be listed has none.
    @discardableResult
    public static func removeStaleTemporaries(in dir: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        var removed: [String] = []
        for name in names.sorted() where isTemporaryName(name) {
            var isDirectory: ObjCBool = false
            let path = URL(fileURLWithPath: dir).appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
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
