import Foundation

/// A NumPy `.npy` header (format versions 1.0, 2.0 and 3.0):
///
///     \x93NUMPY <major> <minor> <header length: u16 LE (v1) or u32 LE (v2, v3)>
///     {'descr': '<f4', 'fortran_order': False, 'shape': (20000, 45, 19, 3), }
///
/// followed by the data in C order. Supported dtypes: floats `f4`/`f8`, integers `i1..i8`
/// and `u1..u8`, `b1`, and strings `U<n>` (UTF-32) and `S<n>` (bytes), in either byte order.
public struct NPYHeader: Equatable, Sendable {
    public enum Kind: Equatable, Sendable { case float, signed, unsigned, bool, unicode, bytes }
    public let descr: String
    public let kind: Kind
    /// Bytes per element.
    public let itemSize: Int
    public let bigEndian: Bool
    public let shape: [Int]
    /// Product of the shape (1 for a 0-d array).
    public let count: Int
    /// Offset of the data from the start of the `.npy` bytes.
    public let dataOffset: Int

    public var byteCount: Int { count * itemSize }
    public var isNumeric: Bool { kind != .unicode && kind != .bytes }

    /// Parses the header from the first bytes of a `.npy` (at least `dataOffset` of them;
    /// `needed(prefix)` says how many). `at` names the file or entry in errors.
    static func parse(_ b: [UInt8], at: SourceLocation) throws -> NPYHeader {
        func bad(_ problem: String, _ fix: String = "save it with numpy.save / numpy.savez") -> DatasetError {
            .numpy(at, problem: problem, fix: fix)
        }
        guard b.count >= 10, b[0] == 0x93, Array(b[1..<6]) == Array("NUMPY".utf8) else {
            throw bad("not a .npy array (no \\x93NUMPY magic)")
        }
        let major = b[6]
        let headerLength: Int
        let start: Int
        switch major {
        case 1:
            headerLength = Int(le16(b, 8))
            start = 10
        case 2, 3:
            guard b.count >= 12 else { throw DatasetError.truncated(at, what: "the .npy header") }
            headerLength = Int(le32(b, 8))
            start = 12
        default:
            throw bad("unsupported .npy format version \(major)", "save with a current numpy")
        }
        guard headerLength <= 1 << 20 else { throw bad("the header is implausibly long (\(headerLength) bytes)") }
        guard b.count >= start + headerLength else { throw DatasetError.truncated(at, what: "the .npy header") }
        let text = String(decoding: b[start..<(start + headerLength)], as: UTF8.self)
        var dict = try PythonLiteral.parseDict(text, at: at)
        guard case .string(let descr)? = dict.removeValue(forKey: "descr") else {
            throw bad("the header has no string 'descr' (structured dtypes are not supported)", "save a plain numeric or string array")
        }
        guard case .bool(let fortran)? = dict.removeValue(forKey: "fortran_order") else { throw bad("the header has no 'fortran_order'") }
        guard !fortran else { throw bad("the array is in Fortran order", "save numpy.ascontiguousarray(a) instead") }
        guard case .tuple(let shape)? = dict.removeValue(forKey: "shape") else { throw bad("the header has no 'shape' tuple") }
        var count = 1
        for d in shape {
            guard d >= 0 else { throw bad("negative dimension in shape \(shape)") }
            let (c, overflow) = count.multipliedReportingOverflow(by: d)
            guard !overflow, c < 1 << 46 else { throw bad("shape \(shape) is too large") }
            count = c
        }
        // descr: byte order (< > | =), kind letter, item size.
        let chars = Array(descr.utf8)
        if chars.count >= 2 && chars[1] == UInt8(ascii: "O") {
            throw bad("dtype 'object' (pickled Python objects) cannot be read safely", "save strings as numpy.array(names, dtype=str)")
        }
        guard chars.count >= 3, let size = Int(String(decoding: chars[2...], as: UTF8.self)), size > 0, size <= 1 << 20 else {
            throw bad("unsupported dtype '\(descr)'")
        }
        let kind: Kind
        var itemSize = size
        switch chars[1] {
        case UInt8(ascii: "f"):
            guard size == 4 || size == 8 else { throw bad("dtype '\(descr)' (float\(size * 8)) is not supported", "convert with a.astype(numpy.float32)") }
            kind = .float
        case UInt8(ascii: "i"):
            guard [1, 2, 4, 8].contains(size) else { throw bad("unsupported dtype '\(descr)'") }
            kind = .signed
        case UInt8(ascii: "u"):
            guard [1, 2, 4, 8].contains(size) else { throw bad("unsupported dtype '\(descr)'") }
            kind = .unsigned
        case UInt8(ascii: "b"):
            kind = .bool
        case UInt8(ascii: "U"):
            kind = .unicode
            itemSize = size * 4
        case UInt8(ascii: "S"):
            kind = .bytes
        case UInt8(ascii: "O"):
            throw bad("dtype 'object' (pickled Python objects) cannot be read safely", "save strings as numpy.array(names, dtype=str)")
        default:
            throw bad("unsupported dtype '\(descr)'", "use float32/float64, integers or str")
        }
        let (bytes, overflow) = count.multipliedReportingOverflow(by: itemSize)
        guard !overflow, bytes < 1 << 50 else { throw bad("shape \(shape) is too large") }
        return NPYHeader(
            descr: descr, kind: kind, itemSize: itemSize, bigEndian: chars[0] == UInt8(ascii: ">"), shape: shape,
            count: count, dataOffset: start + headerLength)
    }

    /// How many leading bytes are needed to parse the header, given what is known so far.
    static func needed(_ prefix: [UInt8]) -> Int {
        guard prefix.count >= 10 else { return 10 }
        if prefix[6] == 1 { return 10 + Int(le16(prefix, 8)) }
        guard prefix.count >= 12 else { return 12 }
        return 12 + min(Int(le32(prefix, 8)), 1 << 20 + 1)
    }

    // MARK: element access (data is little- or big-endian per `bigEndian`)

    @inline(__always)
    private func raw64(_ p: UnsafeRawPointer, _ k: Int) -> UInt64 {
        let q = p + k * itemSize
        var v: UInt64 = 0
        switch itemSize {
        case 1: v = UInt64(q.load(as: UInt8.self))
        case 2: let x = q.loadUnaligned(as: UInt16.self); v = UInt64(bigEndian ? x.byteSwapped : x)
        case 4: let x = q.loadUnaligned(as: UInt32.self); v = UInt64(bigEndian ? x.byteSwapped : x)
        default: let x = q.loadUnaligned(as: UInt64.self); v = bigEndian ? x.byteSwapped : x
        }
        return v
    }

    /// Element `k` of numeric data as Double.
    @inline(__always)
    func double(_ p: UnsafeRawPointer, _ k: Int) -> Double {
        let v = raw64(p, k)
        switch kind {
        case .float: return itemSize == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: v))) : Double(bitPattern: v)
        case .signed:
            let shift = UInt64(64 - itemSize * 8)
            return Double(Int64(bitPattern: v << shift) >> Int64(shift))
        case .unsigned, .bool: return Double(v)
        default: return .nan
        }
    }

    /// Element `k` of numeric data as Float (float32 data is read without a detour).
    @inline(__always)
    func float(_ p: UnsafeRawPointer, _ k: Int) -> Float {
        if kind == .float && itemSize == 4 && !bigEndian { return p.loadUnaligned(fromByteOffset: k * 4, as: Float.self) }
        return Float(double(p, k))
    }

    /// Element `k` of string data (trailing NULs removed).
    func string(_ p: UnsafeRawPointer, _ k: Int) -> String {
        let q = p + k * itemSize
        if kind == .bytes {
            var n = itemSize
            while n > 0 && q.load(fromByteOffset: n - 1, as: UInt8.self) == 0 { n -= 1 }
            return String(decoding: UnsafeRawBufferPointer(start: q, count: n), as: UTF8.self)
        }
        var scalars = String.UnicodeScalarView()
        for c in 0..<(itemSize / 4) {
            var u = q.loadUnaligned(fromByteOffset: c * 4, as: UInt32.self)
            if bigEndian { u = u.byteSwapped }
            if u == 0 { break }
            scalars.append(Unicode.Scalar(u) ?? "\u{FFFD}")
        }
        return String(scalars)
    }
}

/// A decoded small array: its header and data bytes.
public struct NPYArray: Sendable {
    public let header: NPYHeader
    public let data: [UInt8]
    public var shape: [Int] { header.shape }

    public func doubles() -> [Double] {
        data.withUnsafeBytes { p in (0..<header.count).map { header.double(p.baseAddress!, $0) } }
    }

    public func strings() -> [String] {
        data.withUnsafeBytes { p in (0..<header.count).map { header.string(p.baseAddress!, $0) } }
    }

    /// Reads a whole `.npy` file. Data is read straight into the array (disk speed).
    public static func read(_ path: String) throws -> NPYArray {
        let r = try FileReader(path: path)
        return try read(r, at: SourceLocation(file: path))
    }

    static func read(_ r: FileReader, at: SourceLocation) throws -> NPYArray {
        var prefix = try r.read(at: 0, count: min(r.size, 12))
        let need = NPYHeader.needed(prefix)
        guard need <= r.size else { throw DatasetError.truncated(at, what: "the .npy header") }
        prefix = try r.read(at: 0, count: need)
        let h = try NPYHeader.parse(prefix, at: at)
        guard r.size - h.dataOffset >= h.byteCount else {
            throw DatasetError.truncated(at, what: "the array data (\(r.size - h.dataOffset) of \(h.byteCount) bytes)")
        }
        return NPYArray(header: h, data: try r.read(at: h.dataOffset, count: h.byteCount))
    }
}

/// Push-parses a `.npy` byte stream (a file or a zip entry, possibly being inflated):
/// the header first, then the data in rows of `rowBytes` (the whole data when 0).
final class NPYStream {
    let at: SourceLocation
    private var prefix: [UInt8] = []
    private(set) var header: NPYHeader?
    private var rowBytes = 0
    private var row: [UInt8] = []
    private var fill = 0
    private(set) var rows = 0
    private var totalRows = 0
    private var extra = 0
    /// Called once with the header; returns the row size in bytes (0: collect everything).
    let onHeader: (NPYHeader) throws -> Int
    /// Called for each complete row with its index.
    let onRow: (Int, UnsafeRawBufferPointer, NPYHeader) throws -> Void

    init(at: SourceLocation, onHeader: @escaping (NPYHeader) throws -> Int, onRow: @escaping (Int, UnsafeRawBufferPointer, NPYHeader) throws -> Void) {
        self.at = at
        self.onHeader = onHeader
        self.onRow = onRow
    }

    func feed(_ chunk: UnsafeBufferPointer<UInt8>) throws {
        var i = 0
        while header == nil && i < chunk.count {
            let need = NPYHeader.needed(prefix)
            let take = min(need - prefix.count, chunk.count - i)
            prefix.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[i..<(i + take)]))
            i += take
            if prefix.count == need && need == NPYHeader.needed(prefix) {
                let h = try NPYHeader.parse(prefix, at: at)
                header = h
                let r = try onHeader(h)
                rowBytes = r > 0 ? r : h.byteCount
                totalRows = rowBytes == 0 ? 0 : h.byteCount / rowBytes
                row = [UInt8](repeating: 0, count: rowBytes)
            }
        }
        guard header != nil else { return }
        while i < chunk.count {
            if rows >= totalRows {
                extra += chunk.count - i
                return
            }
            let take = min(rowBytes - fill, chunk.count - i)
            row.withUnsafeMutableBytes { r in
                _ = memcpy(r.baseAddress! + fill, chunk.baseAddress! + i, take)
            }
            fill += take
            i += take
            if fill == rowBytes {
                try row.withUnsafeBytes { try onRow(rows, $0, header!) }
                rows += 1
                fill = 0
            }
        }
    }

    func finish() throws {
        guard let h = header else { throw DatasetError.truncated(at, what: "the .npy header") }
        guard rows == totalRows, fill == 0 else {
            throw DatasetError.truncated(at, what: "the array data (\(rows * rowBytes + fill) of \(h.byteCount) bytes)")
        }
        if totalRows == 0 && h.byteCount == 0 { try onRow(0, UnsafeRawBufferPointer(start: nil, count: 0), h) }
        _ = extra  // trailing bytes after the data are allowed (padding), as numpy allows
    }
}

/// The Python literal subset of `.npy` headers: a dict of string keys to strings, booleans
/// and tuples of integers.
enum PythonLiteral: Equatable {
    case string(String)
    case bool(Bool)
    case tuple([Int])

    static func parseDict(_ text: String, at: SourceLocation) throws -> [String: PythonLiteral] {
        let c = Array(text.utf8)
        var i = 0
        func bad() -> DatasetError {
            .numpy(at, problem: "the .npy header is not a Python dict literal (at byte \(i))", fix: "save the array with numpy.save")
        }
        func space() { while i < c.count && (c[i] == 0x20 || c[i] == 0x0A || c[i] == 0x09) { i += 1 } }
        func string() throws -> String {
            space()
            guard i < c.count, c[i] == UInt8(ascii: "'") || c[i] == UInt8(ascii: "\"") else { throw bad() }
            let q = c[i]
            i += 1
            let s = i
            while i < c.count && c[i] != q { i += 1 }
            guard i < c.count else { throw bad() }
            i += 1
            return String(decoding: c[s..<(i - 1)], as: UTF8.self)
        }
        space()
        guard i < c.count, c[i] == UInt8(ascii: "{") else { throw bad() }
        i += 1
        var out: [String: PythonLiteral] = [:]
        while true {
            space()
            guard i < c.count else { throw bad() }
            if c[i] == UInt8(ascii: "}") { break }
            let key = try string()
            space()
            guard i < c.count, c[i] == UInt8(ascii: ":") else { throw bad() }
            i += 1
            space()
            guard i < c.count else { throw bad() }
            if c[i] == UInt8(ascii: "'") || c[i] == UInt8(ascii: "\"") {
                out[key] = .string(try string())
            } else if c[i] == UInt8(ascii: "T") || c[i] == UInt8(ascii: "F") {
                let v = c[i] == UInt8(ascii: "T")
                let word = v ? "True" : "False"
                guard i + word.utf8.count <= c.count, Array(c[i..<(i + word.utf8.count)]) == Array(word.utf8) else { throw bad() }
                i += word.utf8.count
                out[key] = .bool(v)
            } else if c[i] == UInt8(ascii: "(") {
                i += 1
                var dims: [Int] = []
                while true {
                    space()
                    guard i < c.count else { throw bad() }
                    if c[i] == UInt8(ascii: ")") { i += 1; break }
                    var v = 0
                    var digits = 0
                    while i < c.count, c[i] >= 48, c[i] <= 57 {
                        guard v < 1 << 50 else { throw bad() }
                        v = v * 10 + Int(c[i] - 48)
                        i += 1
                        digits += 1
                    }
                    if i < c.count && c[i] == UInt8(ascii: "L") { i += 1 }
                    guard digits > 0 else { throw bad() }
                    dims.append(v)
                    space()
                    if i < c.count && c[i] == UInt8(ascii: ",") { i += 1 }
                }
                out[key] = .tuple(dims)
            } else {
                throw bad()
            }
            space()
            if i < c.count && c[i] == UInt8(ascii: ",") { i += 1 }
        }
        return out
    }
}
