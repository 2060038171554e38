import Datasets

/// The pickle reader's memo and nesting paths (issue 26): each input byte is one opcode of a
/// small alphabet (lists, dicts, tuples with and without marks, APPEND / SETITEM, memo PUT and
/// GET, DUP, POP, a repeat of the previous piece, a small array), so that mutations build
/// shared and deeply nested graphs instead of failing at the first unknown opcode. The reader
/// must throw or return, never crash or hang, and a tree it returns must be within its limits:
/// at most `Pickle.maxDepth` levels, `Pickle.Limits.values` values and
/// `Pickle.Limits.arrayBytes` bytes of arrays (each place counted).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPickleMemo(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let program = Array(UnsafeBufferPointer(start: data, count: size))
    let bytes = assemble(program)
    if let value = try? Pickle.load(bytes) {
        var walk = Walk(limit: bytes.count)
        walk.visit(value, depth: 1)
    }
    // The same value as an unused key beside a valid annotation (the shape of the memory bomb).
    let clip: [UInt8] =
        [0x7D, 0x28] + short("frame_dir") + short("clip") + short("keypoint")
        + array([UInt8](repeating: 0x41, count: 4 * 34), dtype: "f4", shape: [1, 1, 17, 2]) + [0x75]
    let body = bytes.dropFirst(2).dropLast()
    let file = [0x80, 2, 0x7D, 0x28] + short("annotations") + [0x5D, 0x28] + clip + [0x65] + short("junk") + body + [0x75, 0x2E]
    _ = try? PysklFormat.parseReporting(file, file: "fuzz.pkl")
    return 0
}

/// Checks a returned tree against the reader's limits.
struct Walk {
    let limit: Int
    var values = 0, arrayBytes = 0

    init(limit: Int) { self.limit = limit }

    mutating func visit(_ v: Pickle.Value, depth: Int) {
        values += 1
        precondition(values <= Pickle.Limits.values(for: limit), "more values than the limit")
        switch v {
        case .list(let items), .tuple(let items):
            precondition(depth <= Pickle.maxDepth, "nested deeper than the limit")
            for x in items { visit(x, depth: depth + 1) }
        case .dict(let pairs):
            precondition(depth <= Pickle.maxDepth, "nested deeper than the limit")
            for p in pairs {
                visit(p.key, depth: depth + 1)
                visit(p.value, depth: depth + 1)
            }
        case .array(let a):
            arrayBytes += a.data.count
            precondition(arrayBytes <= Pickle.Limits.arrayBytes(for: limit), "more array bytes than the limit")
        default: break
        }
    }
}

func short(_ s: String) -> [UInt8] { [0x8C, UInt8(s.utf8.count)] + Array(s.utf8) }

/// `numpy.core.numeric._frombuffer(data, dtype, shape, 'C')`.
func array(_ data: [UInt8], dtype: String, shape: [Int]) -> [UInt8] {
    var b = Array("cnumpy.core.numeric\n_frombuffer\n".utf8) + [0x28]
    b += [0x42] + withUnsafeBytes(of: UInt32(data.count).littleEndian, Array.init) + data
    b += short(dtype) + [0x28] + shape.flatMap { [0x4A] + withUnsafeBytes(of: Int32($0).littleEndian, Array.init) } + [0x74]
    return b + short("C") + [0x74, 0x52]
}

/// The program as a protocol 2 pickle (`PROTO 2`, the pieces, `STOP`).
func assemble(_ program: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x80, 2]
    var previous: [UInt8] = []
    var k = 0
    func argument() -> UInt8 {
        defer { k += 1 }
        return k < program.count ? program[k] : 0
    }
    while k < program.count {
        let op = program[k] % 26
        k += 1
        var piece: [UInt8]
        switch op {
        case 0: piece = [0x5D]  // EMPTY_LIST
        case 1: piece = [0x28]  // MARK
        case 2: piece = [0x65]  // APPENDS
        case 3: piece = [0x61]  // APPEND
        case 4: piece = [0x7D]  // EMPTY_DICT
        case 5: piece = [0x73]  // SETITEM
        case 6: piece = [0x75]  // SETITEMS
        case 7: piece = [0x74]  // TUPLE
        case 8: piece = [0x29]  // EMPTY_TUPLE
        case 9: piece = [0x85]  // TUPLE1
        case 10: piece = [0x86]  // TUPLE2
        case 11: piece = [0x87]  // TUPLE3
        case 12: piece = [0x71, argument() % 16]  // BINPUT
        case 13: piece = [0x68, argument() % 16]  // BINGET
        case 14: piece = [0x94]  // MEMOIZE
        case 15: piece = [0x32]  // DUP
        case 16: piece = [0x30]  // POP
        case 17: piece = [0x4E]  // NONE
        case 18: piece = [0x4B, argument()]  // BININT1
        case 19: piece = [0x6C]  // LIST
        case 20: piece = [0x64]  // DICT
        case 21: piece = [0x31]  // POP_MARK
        case 22:  // the previous piece again, up to 256 times
            let times = Int(argument()) + 1
            piece = Array(repeating: previous, count: times).flatMap { $0 }
            out += piece
            continue  // a repeat is not itself repeated
        case 23:
            let n = Int(argument()) * 64
            piece = array([UInt8](repeating: 1, count: n), dtype: "u1", shape: [n])
        case 24: piece = short("key\(argument() % 4)")
        default: piece = [0x2E]  // STOP
        }
        out += piece
        previous = piece
    }
    return out + [0x2E]
}
