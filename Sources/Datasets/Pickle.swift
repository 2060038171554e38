import Foundation

/// A restricted reader of Python pickles (protocols 0-5) that understands data only: `None`,
/// booleans, integers, floats, strings, bytes, lists, tuples, dicts and NumPy arrays and
/// scalars. It is an interpreter of the pickle opcodes that never executes anything: a
/// pickle's calls (`GLOBAL` + `REDUCE`/`BUILD`) are recognised for a fixed list of NumPy
/// constructors (`_reconstruct`, `ndarray`, `dtype`, `scalar`, `_frombuffer`, protocol 2's
/// `_codecs.encode` of bytes, `collections.OrderedDict`) and built here from their arguments;
/// any other name is refused with an error naming it. Every length is checked against the
/// input, and containers, memo and nesting are bounded.
///
/// Limits (docs/datasets.md, "MMAction2 / PYSKL"): a pickle can refer to one memoised list,
/// tuple or dict many times, and the tree `load` returns copies it at each place, so what a
/// pickle expands to, not its size, is bounded: at most `Limits.values(for:)` values (each
/// place a value appears counts) and `Limits.arrayBytes(for:)` bytes of array data (a shared
/// array counts each time it appears). A pickle without shared containers never reaches
/// either, as every value it holds costs at least one byte of it. Containers nest at most
/// `maxDepth` levels, however they were built (marks, `APPEND`, `SETITEM`, tuples).
public enum Pickle {
    /// A decoded value: a tree (shared sub-values are copied, within `Limits`; a container that
    /// contains itself is refused).
    public indirect enum Value: CustomStringConvertible {
        case none
        case bool(Bool)
        case int(Int)
        case float(Double)
        case string(String)
        case bytes([UInt8])
        case tuple([Value])
        case list([Value])
        case dict([(key: Value, value: Value)])
        case array(ArrayBox)

        public var description: String {
            switch self {
            case .none: return "None"
            case .bool(let b): return b ? "True" : "False"
            case .int(let i): return String(i)
            case .float(let d): return String(d)
            case .string(let s): return "'\(s)'"
            case .bytes(let b): return "bytes(\(b.count))"
            case .tuple(let t): return "tuple(\(t.count))"
            case .list(let l): return "list(\(l.count))"
            case .dict(let d): return "dict(\(d.count))"
            case .array(let a): return "ndarray\(a.shape) \(a.dtype.descr)"
            }
        }

        /// A short kind name for error messages.
        public var kind: String {
            switch self {
            case .none: return "None"
            case .bool: return "a boolean"
            case .int: return "an integer"
            case .float: return "a float"
            case .string: return "a string"
            case .bytes: return "bytes"
            case .tuple: return "a tuple"
            case .list: return "a list"
            case .dict: return "a dict"
            case .array(let a): return "an array \(a.shape) of \(a.dtype.descr)"
            }
        }

        public var string: String? { if case .string(let s) = self { return s } else { return nil } }
        public var integer: Int? {
            switch self {
            case .int(let i): return i
            case .bool(let b): return b ? 1 : 0
            case .array(let a) where a.count == 1 && a.dtype.isInteger: return Int(exactly: a.double(0))
            default: return nil
            }
        }
        public var number: Double? {
            switch self {
            case .int(let i): return Double(i)
            case .float(let d): return d
            case .array(let a) where a.count == 1 && a.dtype.isNumeric: return a.double(0)
            default: return nil
            }
        }
        /// Items of a list or tuple.
        public var items: [Value]? {
            switch self {
            case .list(let l): return l
            case .tuple(let t): return t
            default: return nil
            }
        }
        /// A dict's value for a string key.
        public subscript(key: String) -> Value? {
            guard case .dict(let d) = self else { return nil }
            return d.first { if case .string(key) = $0.key { return true } else { return false } }?.value
        }
    }

    /// The machine's values: lists and dicts are shared objects, as in Python (a memoised list
    /// appended to later is the same list wherever the pickle refers to it).
    indirect enum Node {
        case value(Value)
        case tuple(TupleBox)
        case list(ListBox)
        case dict(DictBox)
        /// A NumPy dtype (`numpy.dtype(...)`, then `BUILD` sets the byte order).
        case dtype(DtypeBox)
        /// One of the allowed constructors, waiting for its arguments.
        case callable(Callable)

        var string: String? { if case .value(.string(let s)) = self { return s } else { return nil } }
        var integer: Int? { if case .value(let v) = self { return v.integer } else { return nil } }
        var kind: String {
            switch self {
            case .value(let v): return v.kind
            case .tuple: return "a tuple"
            case .list: return "a list"
            case .dict: return "a dict"
            case .dtype: return "a dtype"
            case .callable(let c): return "the function \(c.rawValue)"
            }
        }
    }

    final class ListBox { var items: [Node] = [] }
    final class DictBox { var items: [(key: Node, value: Node)] = [] }
    /// A tuple: a class too, so that its identity is known and a chain of nested tuples is freed
    /// without recursion (`Machine.release`).
    final class TupleBox {
        var items: [Node]
        init(_ items: [Node]) { self.items = items }
    }

    /// A NumPy dtype: kind letter (`f`, `i`, `u`, `b`), item size and byte order.
    public final class DtypeBox {
        public internal(set) var kind: UInt8
        public internal(set) var itemSize: Int
        public internal(set) var bigEndian = false
        init(kind: UInt8, itemSize: Int) {
            self.kind = kind
            self.itemSize = itemSize
        }
        public var descr: String { "\(bigEndian ? ">" : "<")\(Character(Unicode.Scalar(kind)))\(itemSize)" }
        public var isInteger: Bool { kind == UInt8(ascii: "i") || kind == UInt8(ascii: "u") || kind == UInt8(ascii: "b") }
        public var isNumeric: Bool { isInteger || kind == UInt8(ascii: "f") }
    }

    /// A NumPy array: C-order data of `dtype`, `shape`.
    public final class ArrayBox {
        public internal(set) var shape: [Int] = []
        public internal(set) var dtype = DtypeBox(kind: UInt8(ascii: "f"), itemSize: 8)
        public internal(set) var data: [UInt8] = []
        public var count: Int { shape.reduce(1, *) }

        /// Element `k` as Double (floats of 2, 4 or 8 bytes, integers, booleans).
        public func double(_ k: Int) -> Double {
            let n = dtype.itemSize, o = k * n
            var raw: UInt64 = 0
            for b in 0..<n { raw |= UInt64(data[o + (dtype.bigEndian ? n - 1 - b : b)]) << (8 * UInt64(b)) }
            switch (dtype.kind, n) {
            case (UInt8(ascii: "f"), 2): return Double(Pickle.half(UInt16(raw)))
            case (UInt8(ascii: "f"), 4): return Double(Float(bitPattern: UInt32(raw)))
            case (UInt8(ascii: "f"), 8): return Double(bitPattern: raw)
            case (UInt8(ascii: "i"), _):
                let shift = UInt64(64 - 8 * n)
                return Double(Int64(bitPattern: raw << shift) >> Int64(shift))
            default: return Double(raw)
            }
        }
    }

    /// The constructors a pickle may name (by module and name, numpy's old and new paths).
    public enum Callable: String {
        case reconstruct = "numpy.core.multiarray._reconstruct"
        case ndarray = "numpy.ndarray"
        case dtype = "numpy.dtype"
        case scalar = "numpy.core.multiarray.scalar"
        case frombuffer = "numpy.core.numeric._frombuffer"
        case encode = "_codecs.encode"
        case orderedDict = "collections.OrderedDict"

        init?(module: String, name: String) {
            let m = module.replacingOccurrences(of: "numpy._core", with: "numpy.core")
            self.init(rawValue: "\(m).\(name)")
        }
    }

    /// IEEE half precision to Float.
    static func half(_ h: UInt16) -> Float {
        let sign: Float = h & 0x8000 != 0 ? -1 : 1
        let e = Int((h >> 10) & 0x1F), m = Float(h & 0x3FF)
        switch e {
        case 0: return sign * m * 0x1p-24
        case 31: return m == 0 ? sign * .infinity : .nan
        default: return sign * (1 + m / 1024) * Float(sign: .plus, exponent: e - 15, significand: 1)
        }
    }

    /// A pickle that cannot be read: at byte `offset`, `problem`.
    public struct Failure: Error, Equatable {
        public var offset: Int
        public var problem: String
    }

    static let maxMemo = 1 << 24
    static let maxStack = 1 << 24
    /// Most levels of nested containers (lists, tuples, dicts) in the decoded tree.
    public static let maxDepth = 256

    /// What a pickle of `n` bytes may expand to in `load`'s tree.
    public enum Limits {
        /// Values in the tree, each place counted: the pickle's size in bytes, at least 2^20.
        public static func values(for n: Int) -> Int { max(1 << 20, n) }
        /// Bytes of array data in the tree, each place counted: the pickle's size, at least
        /// 16 MiB.
        public static func arrayBytes(for n: Int) -> Int { max(1 << 24, n) }
    }

    /// Decodes one pickle (its value at `STOP`).
    public static func load(_ bytes: [UInt8]) throws -> Value {
        var m = Machine(bytes)
        defer { m.release() }  // also on errors: a half-built graph may hold cycles
        let root = try m.run()
        var expansion = Expansion(inputBytes: bytes.count)
        return try expansion.tree(root, depth: 0, fail: { m.fail($0, at: bytes.count) })
    }

    /// The machine's graph as a tree, counted against `Limits`: each container is visited once
    /// per place it appears, with the containers on the path from the root in `open` (a
    /// container inside itself is refused), so the work is linear in what the tree holds.
    struct Expansion {
        let inputBytes: Int
        var values = 0, arrayBytes = 0
        var open = Set<ObjectIdentifier>()

        init(inputBytes: Int) { self.inputBytes = inputBytes }

        mutating func tree(_ n: Node, depth: Int, fail: (String) -> Failure) throws -> Value {
            values += 1
            guard values <= Limits.values(for: inputBytes) else {
                throw fail(
                    "the pickle expands to more than \(Limits.values(for: inputBytes)) values (a list, tuple or dict it refers to "
                        + "again counts each time; the limit is the file's size in bytes, at least 2^20)")
            }
            func enter(_ box: AnyObject, _ kind: String) throws -> ObjectIdentifier {
                guard depth < maxDepth else { throw fail("the pickle is nested deeper than \(maxDepth) levels") }
                let id = ObjectIdentifier(box)
                guard open.insert(id).inserted else { throw fail("a \(kind) contains itself") }
                return id
            }
            switch n {
            case .value(let v):
                if case .array(let a) = v {
                    arrayBytes += a.data.count
                    guard arrayBytes <= Limits.arrayBytes(for: inputBytes) else {
                        throw fail(
                            "the pickle's arrays expand to more than \(Limits.arrayBytes(for: inputBytes)) bytes (an array it refers "
                                + "to again counts each time; the limit is the file's size, at least 16 MiB)")
                    }
                }
                return v
            case .tuple(let t):
                let id = try enter(t, "tuple")
                defer { open.remove(id) }
                return .tuple(try t.items.map { try tree($0, depth: depth + 1, fail: fail) })
            case .list(let l):
                let id = try enter(l, "list")
                defer { open.remove(id) }
                return .list(try l.items.map { try tree($0, depth: depth + 1, fail: fail) })
            case .dict(let d):
                let id = try enter(d, "dict")
                defer { open.remove(id) }
                return .dict(try d.items.map { (try tree($0.key, depth: depth + 1, fail: fail), try tree($0.value, depth: depth + 1, fail: fail)) })
            case .dtype, .callable:
                throw fail("the pickle holds \(n.kind) where data was expected")
            }
        }
    }

    struct Machine {
        let b: [UInt8]
        var i = 0
        var stack: [Node] = []
        var marks: [Int] = []
        var memo: [Int: Node] = [:]
        /// Every list and dict made, emptied at the end so that cycles are freed.
        var boxes: [AnyObject] = []

        mutating func release() {
            for b in boxes {
                (b as? ListBox)?.items = []
                (b as? DictBox)?.items = []
                (b as? TupleBox)?.items = []
            }
            boxes = []
            memo = [:]
            stack = []
        }

        init(_ bytes: [UInt8]) { b = bytes }

        func fail(_ problem: String, at offset: Int? = nil) -> Failure { Failure(offset: offset ?? i, problem: problem) }

        mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, n <= b.count - i else { throw fail("the pickle ends in the middle of a value (it is cut short)") }
            defer { i += n }
            return b[i..<(i + n)]
        }
        mutating func byte() throws -> UInt8 { try take(1).first! }
        mutating func le(_ n: Int) throws -> UInt64 {
            var v: UInt64 = 0
            for (k, x) in try take(n).enumerated() { v |= UInt64(x) << (8 * UInt64(k)) }
            return v
        }
        mutating func length(_ n: Int) throws -> Int {
            let v = try le(n)
            guard v <= UInt64(b.count - i) else { throw fail("a length of \(v) bytes runs past the end of the pickle") }
            return Int(v)
        }
        mutating func line() throws -> String {
            guard let nl = b[i...].firstIndex(of: 0x0A) else { throw fail("the pickle ends in the middle of a value (it is cut short)") }
            defer { i = nl + 1 }
            return String(decoding: b[i..<nl], as: UTF8.self)
        }
        /// The rest of the line decoded as Python's `raw-unicode-escape` (protocol 0's `UNICODE`):
        /// bytes are Latin-1 characters, and `\uXXXX` or `\UXXXXXXXX` after an odd number of
        /// backslashes is that character.
        mutating func rawUnicodeEscaped(at: Int) throws -> String {
            let start = i
            _ = try line()
            let t = b[start..<(i - 1)]
            var out = String.UnicodeScalarView()
            var k = t.startIndex
            while k < t.endIndex {
                guard t[k] == UInt8(ascii: "\\") else {
                    out.append(Unicode.Scalar(t[k]))
                    k += 1
                    continue
                }
                var run = 0
                while k < t.endIndex && t[k] == UInt8(ascii: "\\") {
                    run += 1
                    k += 1
                }
                guard run % 2 == 1, k < t.endIndex, t[k] == UInt8(ascii: "u") || t[k] == UInt8(ascii: "U") else {
                    for _ in 0..<run { out.append("\\") }
                    continue
                }
                for _ in 0..<(run - 1) { out.append("\\") }
                let digits = t[k] == UInt8(ascii: "u") ? 4 : 8
                k += 1
                guard t.endIndex - k >= digits, t[k..<(k + digits)].allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
                    let v = UInt32(String(decoding: t[k..<(k + digits)], as: UTF8.self), radix: 16), let scalar = Unicode.Scalar(v)
                else { throw fail("a protocol 0 string has a damaged \\u escape", at: at) }
                out.append(scalar)
                k += digits
            }
            return String(out)
        }
        mutating func utf8(_ n: Int) throws -> String {
            let s = try take(n)
            guard let text = String(validating: s, as: UTF8.self) else { throw fail("a string is not valid UTF-8", at: i - n) }
            return text
        }

        mutating func push(_ v: Value) throws { try push(.value(v)) }

        mutating func push(_ v: Node) throws {
            guard stack.count < Pickle.maxStack else { throw fail("the pickle is too deeply nested") }
            stack.append(v)
        }
        mutating func pop() throws -> Node {
            guard let v = stack.popLast(), marks.last.map({ stack.count >= $0 }) ?? true else { throw fail("the stack is empty (a damaged pickle)") }
            return v
        }
        /// Items since the last mark, removing the mark.
        mutating func popMark() throws -> [Node] {
            guard let m = marks.popLast(), m <= stack.count else { throw fail("no mark on the stack (a damaged pickle)") }
            defer { stack.removeSubrange(m...) }
            return Array(stack[m...])
        }
        mutating func memoise(_ k: Int) throws {
            guard let top = stack.last else { throw fail("nothing to memoise") }
            guard memo.count < Pickle.maxMemo else { throw fail("too many memoised values") }
            memo[k] = top
        }
        mutating func get(_ k: Int) throws {
            guard let v = memo[k] else { throw fail("memo entry \(k) was never stored") }
            try push(v)
        }

        mutating func run() throws -> Node {
            while true {
                let at = i
                let op = try byte()
                switch op {
                case 0x80: _ = try byte()  // PROTO
                case 0x95: _ = try le(8)  // FRAME: a hint, the data follows inline
                case UInt8(ascii: "."):  // STOP
                    guard stack.count == 1, marks.isEmpty else { throw fail("the pickle ends with \(stack.count) values on the stack", at: at) }
                    return stack[0]
                case UInt8(ascii: "("): marks.append(stack.count)
                case UInt8(ascii: "0"): _ = try pop()
                case UInt8(ascii: "1"): _ = try popMark()
                case UInt8(ascii: "2"): guard let top = stack.last else { throw fail("nothing to duplicate") }; try push(top)
                case UInt8(ascii: "N"): try push(.none)
                case 0x88: try push(.bool(true))
                case 0x89: try push(.bool(false))
                case UInt8(ascii: "I"):  // INT (text)
                    let t = try line()
                    if t == "01" {
                        try push(.bool(true))
                    } else if t == "00" {
                        try push(.bool(false))
                    } else {
                        guard let v = Int(t) else { throw fail("'\(t)' is not an integer", at: at) }
                        try push(.int(v))
                    }
                case UInt8(ascii: "L"):
                    let t = try line()
                    guard let v = Int(t.hasSuffix("L") ? String(t.dropLast()) : t) else { throw fail("'\(t)' is not an integer that fits 64 bits", at: at) }
                    try push(.int(v))
                case UInt8(ascii: "J"): try push(.int(Int(Int32(bitPattern: UInt32(try le(4))))))
                case UInt8(ascii: "K"): try push(.int(Int(try byte())))
                case UInt8(ascii: "M"): try push(.int(Int(try le(2))))
                case 0x8A, 0x8B:  // LONG1, LONG4: little-endian two's complement
                    let n = try length(op == 0x8A ? 1 : 4)
                    guard n <= 8 else { throw fail("an integer of \(n) bytes does not fit 64 bits", at: at) }
                    var v: UInt64 = 0
                    let s = try take(n)
                    for (k, x) in s.enumerated() { v |= UInt64(x) << (8 * UInt64(k)) }
                    if n > 0 && n < 8 && s.last! & 0x80 != 0 { v |= ~0 << (8 * UInt64(n)) }
                    try push(.int(Int(bitPattern: UInt(v))))
                case UInt8(ascii: "G"):
                    var v: UInt64 = 0
                    for x in try take(8) { v = v << 8 | UInt64(x) }
                    try push(.float(Double(bitPattern: v)))
                case UInt8(ascii: "F"):
                    let t = try line()
                    guard let v = Double(t) else { throw fail("'\(t)' is not a float", at: at) }
                    try push(.float(v))
                case UInt8(ascii: "V"): try push(.string(try rawUnicodeEscaped(at: at)))  // protocol 0's str
                case UInt8(ascii: "S"):
                    throw fail(
                        "STRING (a Python 2 str in a protocol 0 or 1 pickle) is not read; load the pickle in Python 3 and save it again with protocol 2 or later",
                        at: at)
                case UInt8(ascii: "i"):  // INST: a class instantiated from a protocol 0 pickle
                    let module = try line(), name = try line()
                    throw fail("the pickle creates an instance of \(module).\(name), which is not run: only dicts, lists, strings, numbers and NumPy arrays are read", at: at)
                case UInt8(ascii: "X"): try push(.string(try utf8(try length(4))))
                case 0x8C: try push(.string(try utf8(try length(1))))
                case 0x8D: try push(.string(try utf8(try length(8))))
                case UInt8(ascii: "T"): try push(.bytes(Array(try take(try length(4)))))
                case UInt8(ascii: "U"): try push(.bytes(Array(try take(try length(1)))))
                case UInt8(ascii: "B"): try push(.bytes(Array(try take(try length(4)))))
                case UInt8(ascii: "C"): try push(.bytes(Array(try take(try length(1)))))
                case 0x8E, 0x96: try push(.bytes(Array(try take(try length(8)))))
                case UInt8(ascii: "]"): try push(.list(newList()))
                case UInt8(ascii: "l"):
                    let l = newList()
                    l.items = try popMark()
                    try push(.list(l))
                case UInt8(ascii: "a"):
                    let v = try pop()
                    guard case .list(let l)? = stack.last else { throw fail("APPEND to \(stack.last?.kind ?? "nothing"), not a list", at: at) }
                    l.items.append(v)
                case UInt8(ascii: "e"):
                    let items = try popMark()
                    guard case .list(let l)? = stack.last else { throw fail("APPENDS to \(stack.last?.kind ?? "nothing"), not a list", at: at) }
                    l.items += items
                case UInt8(ascii: ")"): try push(.tuple(newTuple([])))
                case UInt8(ascii: "t"): try push(.tuple(newTuple(try popMark())))
                case 0x85, 0x86, 0x87:
                    let n = Int(op - 0x84)
                    guard stack.count >= n + (marks.last ?? 0) else { throw fail("a tuple of \(n) needs \(n) values", at: at) }
                    let t = Array(stack.suffix(n))
                    stack.removeLast(n)
                    try push(.tuple(newTuple(t)))
                case UInt8(ascii: "}"): try push(.dict(newDict()))
                case UInt8(ascii: "d"):
                    let d = newDict()
                    try Machine.pairs(try popMark(), into: d, fail: fail("a dict needs key, value pairs", at: at))
                    try push(.dict(d))
                case UInt8(ascii: "s"):
                    let v = try pop(), k = try pop()
                    guard case .dict(let d)? = stack.last else { throw fail("SETITEM on \(stack.last?.kind ?? "nothing"), not a dict", at: at) }
                    d.items.append((k, v))
                case UInt8(ascii: "u"):
                    let items = try popMark()
                    guard case .dict(let d)? = stack.last else { throw fail("SETITEMS on \(stack.last?.kind ?? "nothing"), not a dict", at: at) }
                    try Machine.pairs(items, into: d, fail: fail("SETITEMS needs key, value pairs", at: at))
                case UInt8(ascii: "c"):
                    let module = try line(), name = try line()
                    try push(try callable(module, name, at: at))
                case 0x93:
                    let name = try pop(), module = try pop()
                    guard let n = name.string, let m = module.string else { throw fail("STACK_GLOBAL needs a module and a name", at: at) }
                    try push(try callable(m, n, at: at))
                case UInt8(ascii: "R"):
                    let args = try pop(), f = try pop()
                    guard case .callable(let c) = f, case .tuple(let a) = args else {
                        throw fail("REDUCE calls \(f.kind) with \(args.kind); only NumPy's array constructors are allowed", at: at)
                    }
                    let made = try Machine.call(c, a.items, fail: { self.fail($0, at: at) })
                    if case .dict(let d) = made { boxes.append(d) }
                    try push(made)
                case UInt8(ascii: "b"):
                    let state = try pop()
                    guard let target = stack.last else { throw fail("BUILD with nothing to build", at: at) }
                    try Machine.build(target, state, fail: { self.fail($0, at: at) })
                case UInt8(ascii: "p"): try memoise(Int(try line()) ?? -1)
                case UInt8(ascii: "q"): try memoise(Int(try byte()))
                case UInt8(ascii: "r"): try memoise(Int(try le(4)))
                case 0x94: try memoise(memo.count)
                case UInt8(ascii: "g"): try get(Int(try line()) ?? -1)
                case UInt8(ascii: "h"): try get(Int(try byte()))
                case UInt8(ascii: "j"): try get(Int(try le(4)))
                default:
                    throw fail(String(format: "opcode 0x%02X is not read (sets, objects, persistent ids and out-of-band buffers are refused)", op), at: at)
                }
                if marks.count > Pickle.maxDepth { throw fail("the pickle is nested deeper than \(Pickle.maxDepth) levels") }
            }
        }

        mutating func newList() -> ListBox {
            let l = ListBox()
            boxes.append(l)
            return l
        }

        mutating func newTuple(_ items: [Node]) -> TupleBox {
            let t = TupleBox(items)
            boxes.append(t)
            return t
        }

        mutating func newDict() -> DictBox {
            let d = DictBox()
            boxes.append(d)
            return d
        }

        func callable(_ module: String, _ name: String, at: Int) throws -> Node {
            guard let c = Callable(module: module, name: name) else {
                throw fail("the pickle calls \(module).\(name), which is not run: only dicts, lists, strings, numbers and NumPy arrays are read, and a pickle is never executed", at: at)
            }
            return .callable(c)
        }

        static func pairs(_ items: [Node], into d: DictBox, fail: Failure) throws {
            guard items.count % 2 == 0 else { throw fail }
            for k in stride(from: 0, to: items.count, by: 2) { d.items.append((items[k], items[k + 1])) }
        }

        static func dtype(_ spec: Node, fail: (String) -> Failure) throws -> DtypeBox {
            if case .dtype(let d) = spec { return d }
            guard let s = spec.string, let c = s.utf8.first(where: { !"<>=|".utf8.contains($0) }) else { throw fail("a dtype must be named by a string such as 'f4'") }
            var body = Substring(s)
            let big = body.first == ">"
            body = body.drop { "<>=|".contains($0) }
            guard let size = Int(body.dropFirst()), [UInt8(ascii: "f"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "b")].contains(c) else {
                throw fail("dtype '\(s)' is not read (object, string and structured arrays are refused); save numbers")
            }
            guard (c == UInt8(ascii: "f") && [2, 4, 8].contains(size)) || (c != UInt8(ascii: "f") && [1, 2, 4, 8].contains(size)) else {
                throw fail("dtype '\(s)' is not read")
            }
            let d = DtypeBox(kind: c, itemSize: size)
            d.bigEndian = big
            return d
        }

        static func shape(_ v: Node, fail: (String) -> Failure) throws -> [Int] {
            guard case .tuple(let t) = v else { throw fail("an array shape must be a tuple") }
            var count = 1
            return try t.items.map { d in
                guard let n = d.integer, n >= 0 else { throw fail("an array dimension must be a non-negative integer") }
                let (c, overflow) = count.multipliedReportingOverflow(by: n)
                guard !overflow, c < 1 << 40 else { throw fail("the array is too large") }
                count = c
                return n
            }
        }

        static func call(_ c: Callable, _ a: [Node], fail: (String) -> Failure) throws -> Node {
            switch c {
            case .reconstruct:  // _reconstruct(ndarray, (0,), b'b'): an empty array that BUILD fills
                guard a.count == 3, case .callable(.ndarray) = a[0] else { throw fail("_reconstruct builds only numpy.ndarray") }
                return .value(.array(ArrayBox()))
            case .dtype:
                guard let spec = a.first else { throw fail("dtype() needs a type") }
                return .dtype(try dtype(spec, fail: fail))
            case .scalar:  // scalar(dtype, bytes)
                guard a.count == 2, case .dtype(let d) = a[0], case .value(.bytes(let raw)) = a[1], raw.count == d.itemSize else {
                    throw fail("a NumPy scalar needs a dtype and its bytes")
                }
                let box = ArrayBox()
                box.dtype = d
                box.data = raw
                return .value(.array(box))
            case .frombuffer:  // _frombuffer(bytes, dtype, shape, order)
                guard a.count == 4, case .value(.bytes(let raw)) = a[0] else { throw fail("_frombuffer needs bytes, a dtype, a shape and an order") }
                guard a[3].string == "C" else { throw fail("the array is in Fortran order; save numpy.ascontiguousarray(a)") }
                let box = ArrayBox()
                box.dtype = try dtype(a[1], fail: fail)
                box.shape = try shape(a[2], fail: fail)
                guard raw.count == box.count * box.dtype.itemSize else { throw fail("the array data has \(raw.count) bytes, its shape needs \(box.count * box.dtype.itemSize)") }
                box.data = raw
                return .value(.array(box))
            case .encode:  // protocol 2 bytes: _codecs.encode(str, 'latin1')
                guard a.count == 2, let s = a[0].string, a[1].string == "latin1" || a[1].string == "latin-1" else {
                    throw fail("_codecs.encode is read only for latin1 bytes")
                }
                var out: [UInt8] = []
                out.reserveCapacity(s.unicodeScalars.count)
                for u in s.unicodeScalars {
                    guard u.value < 256 else { throw fail("latin1 bytes hold a character beyond U+00FF") }
                    out.append(UInt8(u.value))
                }
                return .value(.bytes(out))
            case .orderedDict:
                guard a.isEmpty else { throw fail("OrderedDict is read only when empty (then filled by SETITEMS)") }
                return .dict(DictBox())
            case .ndarray:
                throw fail("numpy.ndarray is called only through _reconstruct")
            }
        }

        static func build(_ target: Node, _ state: Node, fail: (String) -> Failure) throws {
            switch target {
            case .dtype(let d):  // (3, '<', None, None, None, -1, -1, 0)
                if case .tuple(let box) = state, box.items.count >= 2, let order = box.items[1].string { d.bigEndian = order == ">" }
            case .value(.array(let box)):  // (1, shape, dtype, is_fortran, data)
                guard case .tuple(let tuple) = state, case let t = tuple.items, t.count == 5, case .dtype(let d) = t[2] else {
                    throw fail("an array's state must be (version, shape, dtype, fortran, data)")
                }
                guard case .value(.bool(false)) = t[3] else { throw fail("the array is in Fortran order; save numpy.ascontiguousarray(a)") }
                box.shape = try shape(t[1], fail: fail)
                box.dtype = d
                guard case .value(.bytes(let raw)) = t[4] else {
                    throw fail("the array holds Python objects (dtype object), which are never unpickled; save numbers")
                }
                guard raw.count == box.count * d.itemSize else { throw fail("the array data has \(raw.count) bytes, its shape needs \(box.count * d.itemSize)") }
                box.data = raw
            default:
                throw fail("BUILD on \(target.kind) would set an object's state; only NumPy arrays and dtypes are built")
            }
        }
    }
}
