import Foundation
import PoseCore

/// The subset of the zip format that `numpy.savez` / `savez_compressed` write: a central
/// directory (ZIP64 when large: numpy forces ZIP64 entries), entries stored (method 0) or
/// deflated (method 8), no encryption. Entries are read through the file with `pread`, so
/// an archive is never loaded whole; every entry's CRC-32 is checked.
struct ZipArchive {
    struct Entry {
        let name: String
        let method: Int
        let compressedSize: Int
        let size: Int
        let crc: UInt32
        let localHeaderOffset: Int
    }

    let file: String
    let handle: FileReader
    let entries: [Entry]

    func location(_ entry: String? = nil) -> SourceLocation {
        SourceLocation(file: file, record: entry, recordKind: "entry")
    }

    init(path: String) throws {
        try self.init(reader: try FileReader(path: path))
    }

    init(reader: FileReader) throws {
        let path = reader.path
        file = path
        handle = reader
        let size = handle.size
        func corrupt(_ why: String) -> DatasetError { .corruptArchive(SourceLocation(file: path), problem: why) }
        // End of central directory: 22 bytes plus a comment of up to 65535 bytes.
        let tailLength = min(size, 22 + 65535)
        let tail = try handle.read(at: size - tailLength, count: tailLength)
        var eocd = -1
        var k = tailLength - 22
        while k >= 0 {
            if tail[k] == 0x50 && tail[k + 1] == 0x4B && tail[k + 2] == 0x05 && tail[k + 3] == 0x06 {
                eocd = k
                break
            }
            k -= 1
        }
        guard eocd >= 0 else { throw corrupt("no end-of-central-directory record (not a zip file, or truncated)") }
        var count = Int(le16(tail, eocd + 10))
        var directorySize = Int(le32(tail, eocd + 12))
        var directoryOffset = Int(le32(tail, eocd + 16))
        if count == 0xFFFF || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF {
            // ZIP64: the locator sits just before the EOCD record.
            guard eocd >= 20, le32(tail, eocd - 20) == 0x0706_4B50 else { throw corrupt("ZIP64 locator missing") }
            let recordOffset = Int(le64(tail, eocd - 20 + 8))
            guard recordOffset >= 0, recordOffset + 56 <= size else { throw corrupt("ZIP64 record offset out of range") }
            let record = try handle.read(at: recordOffset, count: 56)
            guard le32(record, 0) == 0x0606_4B50 else { throw corrupt("bad ZIP64 end record signature") }
            count = Int(clamping: le64(record, 32))
            directorySize = Int(clamping: le64(record, 40))
            directoryOffset = Int(clamping: le64(record, 48))
        }
        guard directoryOffset >= 0, directorySize >= 0, directoryOffset <= size, directorySize <= size - directoryOffset,
            count <= directorySize / 46 + 1
        else { throw corrupt("the central directory lies outside the file (truncated?)") }
        let dir = try handle.read(at: directoryOffset, count: directorySize)
        var entries: [Entry] = []
        var p = 0
        for _ in 0..<count {
            guard p + 46 <= dir.count, le32(dir, p) == 0x0201_4B50 else { throw corrupt("bad central directory entry") }
            let flags = le16(dir, p + 8)
            let method = Int(le16(dir, p + 10))
            let crc = le32(dir, p + 16)
            var compressed = Int(le32(dir, p + 20))
            var uncompressed = Int(le32(dir, p + 24))
            let nameLength = Int(le16(dir, p + 28))
            let extraLength = Int(le16(dir, p + 30))
            let commentLength = Int(le16(dir, p + 32))
            var offset = Int(le32(dir, p + 42))
            guard p + 46 + nameLength + extraLength + commentLength <= dir.count else { throw corrupt("bad central directory entry") }
            let name = String(decoding: dir[(p + 46)..<(p + 46 + nameLength)], as: UTF8.self)
            // ZIP64 extended information replaces the fields that are 0xFFFFFFFF, in order.
            var e = p + 46 + nameLength
            let extraEnd = e + extraLength
            while e + 4 <= extraEnd {
                let id = le16(dir, e), len = Int(le16(dir, e + 2))
                guard e + 4 + len <= extraEnd else { break }
                if id == 1 {
                    var q = e + 4
                    func next() -> Int? {
                        guard q + 8 <= e + 4 + len else { return nil }
                        defer { q += 8 }
                        return Int(clamping: le64(dir, q))
                    }
                    if uncompressed == 0xFFFF_FFFF, let v = next() { uncompressed = v }
                    if compressed == 0xFFFF_FFFF, let v = next() { compressed = v }
                    if offset == 0xFFFF_FFFF, let v = next() { offset = v }
                }
                e += 4 + len
            }
            guard flags & 1 == 0 else { throw DatasetError.corruptArchive(SourceLocation(file: path, record: name, recordKind: "entry"), problem: "the entry is encrypted") }
            entries.append(Entry(name: name, method: method, compressedSize: compressed, size: uncompressed, crc: crc, localHeaderOffset: offset))
            p += 46 + nameLength + extraLength + commentLength
        }
        self.entries = entries
    }

    func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    /// Streams an entry's uncompressed bytes to `sink` in order, checking sizes and CRC-32.
    func read(_ entry: Entry, sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        func corrupt(_ why: String) -> DatasetError { .corruptArchive(location(entry.name), problem: why) }
        guard entry.localHeaderOffset >= 0, entry.localHeaderOffset <= handle.size - 30 else { throw corrupt("local header out of range") }
        let local = try handle.read(at: entry.localHeaderOffset, count: 30)
        guard le32(local, 0) == 0x0403_4B50 else { throw corrupt("bad local header signature") }
        let dataStart = entry.localHeaderOffset + 30 + Int(le16(local, 26)) + Int(le16(local, 28))
        guard entry.compressedSize >= 0, dataStart <= handle.size, entry.compressedSize <= handle.size - dataStart else {
            throw corrupt("the entry's data runs past the end of the file (truncated?)")
        }
        var crc: UInt32 = 0
        var total = 0
        try withoutActuallyEscaping(sink) { sink in
            let checkedSink: (UnsafeBufferPointer<UInt8>) throws -> Void = { chunk in
                crc = CRC32.checksum(UnsafeRawBufferPointer(chunk), continuing: crc)
                total += chunk.count
                try sink(chunk)
            }
            switch entry.method {
            case 0:
                guard entry.compressedSize == entry.size else { throw corrupt("stored entry sizes disagree") }
                try handle.stream(at: dataStart, count: entry.size, sink: checkedSink)
            case 8:
                let compressed = try handle.read(at: dataStart, count: entry.compressedSize)
                do {
                    try compressed.withUnsafeBufferPointer { b in
                        try Inflate.decompress(b, maxOutput: entry.size, sink: checkedSink)
                    }
                } catch let e as Inflate.InflateError {
                    throw corrupt("deflate stream: \(e.reason)")
                }
            default:
                throw DatasetError.corruptArchive(
                    location(entry.name), problem: "compression method \(entry.method) is not supported (only stored and deflate)")
            }
        }
        guard total == entry.size else { throw corrupt("the entry has \(total) bytes, the directory says \(entry.size)") }
        guard crc == entry.crc else { throw corrupt("CRC-32 mismatch (the data is damaged)") }
    }
}

/// Positioned reads from a file (`pread`), closing it when released; or from bytes in memory
/// (tests and fuzzing), with the same bounds checks.
final class FileReader {
    let path: String
    let fd: Int32
    let size: Int
    private let memory: [UInt8]?

    init(bytes: [UInt8], name: String) {
        path = name
        fd = -1
        size = bytes.count
        memory = bytes
    }

    init(path: String) throws {
        self.path = path
        memory = nil
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw DatasetError.cannotRead(file: path, reason: String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw DatasetError.cannotRead(file: path, reason: String(cString: strerror(errno)))
        }
        if (Int(st.st_mode) & Int(S_IFMT)) == Int(S_IFDIR) {
            close(fd)
            throw DatasetError.cannotRead(file: path, reason: "is a directory; pass a file")
        }
        size = Int(st.st_size)
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Reads exactly `count` bytes at `offset` into `buffer`.
    func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws {
        guard offset >= 0, offset <= size, buffer.count <= size - offset else {
            throw DatasetError.truncated(SourceLocation(file: path), what: "the data (the file is shorter than its header says)")
        }
        if let memory {
            memory.withUnsafeBytes { m in buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: m[offset..<(offset + buffer.count)])) }
            return
        }
        var done = 0
        while done < buffer.count {
            let r = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if r < 0 && errno == EINTR { continue }
            guard r > 0 else {
                throw DatasetError.truncated(
                    SourceLocation(file: path), what: r == 0 ? "the data (the file is shorter than its header says)" : String(cString: strerror(errno)))
            }
            done += r
        }
    }

    func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { try read(at: offset, into: $0) }
        return out
    }

    /// Streams `count` bytes from `offset` in 4 MiB chunks.
    func stream(at offset: Int, count: Int, chunk: Int = 1 << 22, sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        var buffer = [UInt8](repeating: 0, count: min(chunk, max(count, 1)))
        var done = 0
        while done < count {
            let n = min(buffer.count, count - done)
            try buffer.withUnsafeMutableBytes { try read(at: offset + done, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<n])) }
            try buffer.withUnsafeBufferPointer { try sink(UnsafeBufferPointer(rebasing: $0[0..<n])) }
            done += n
        }
    }
}

@inline(__always) func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
@inline(__always) func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}
@inline(__always) func le64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(le32(b, i)) | UInt64(le32(b, i + 4)) << 32 }
