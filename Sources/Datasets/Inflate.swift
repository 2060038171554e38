import Foundation

/// DEFLATE decompression (RFC 1951), written here so that `.npz` files made by
/// `numpy.savez_compressed` load without zlib. Decoding follows the canonical-Huffman scheme
/// of zlib's reference decoder `puff.c`: codes are read one bit at a time against per-length
/// symbol counts, which keeps the decoder short and easy to check. Every length, distance
/// and table is validated: corrupt input throws `InflateError`, it never reads or writes out
/// of bounds, and the work is bounded by the input and `maxOutput`.
///
/// Output is streamed: the decoder keeps a 32 KiB history window plus a 1 MiB buffer and hands
/// full buffers to `sink`, so a large entry is never held in memory twice.
public enum Inflate {
    public struct InflateError: Error, Equatable {
        public let reason: String
    }

    /// Decompresses a raw deflate stream (no zlib or gzip header), calling `sink` with the
    /// output in order. Throws if the output would exceed `maxOutput` bytes.
    static func decompress(
        _ input: UnsafeBufferPointer<UInt8>, maxOutput: Int = Int.max,
        sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        var s = State(input: input, maxOutput: maxOutput)
        try s.run(sink)
    }

    /// Convenience: the whole output as one array.
    public static func decompress(_ input: [UInt8], maxOutput: Int = Int.max) throws -> [UInt8] {
        var out: [UInt8] = []
        try input.withUnsafeBufferPointer { b in
            try decompress(b, maxOutput: maxOutput) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// A canonical Huffman code: `counts[len]` codes of each length 1...15 and the symbols in
    /// code order.
    struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int]

        /// Builds the code from code lengths; fails on an over-subscribed set. An incomplete
        /// set is allowed only for a single code (RFC 1951 3.2.7 allows one distance code).
        init(lengths: ArraySlice<Int>) throws {
            symbols = [Int](repeating: 0, count: lengths.count)
            for l in lengths { counts[l] += 1 }
            var left = 1
            for len in 1...15 {
                left <<= 1
                left -= counts[len]
                if left < 0 { throw InflateError(reason: "over-subscribed Huffman code lengths") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for len in 1..<15 { offsets[len + 1] = offsets[len] + counts[len] }
            for (symbol, l) in zip(0..., lengths) where l != 0 {
                symbols[offsets[l]] = symbol
                offsets[l] += 1
            }
        }
    }

    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
        8193, 12289, 16385, 24577,
    ]
    static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    /// Order of the code-length code lengths in a dynamic block header.
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    static let fixed: (Huffman, Huffman) = {
        var lengths = [Int](repeating: 8, count: 288)
        for k in 144..<256 { lengths[k] = 9 }
        for k in 256..<280 { lengths[k] = 7 }
        let lit = try! Huffman(lengths: lengths[...])
        let dist = try! Huffman(lengths: [Int](repeating: 5, count: 30)[...])
        return (lit, dist)
    }()

    struct State {
        let input: UnsafeBufferPointer<UInt8>
        var pos = 0
        var bitBuffer: UInt64 = 0
        var bitCount = 0
        let maxOutput: Int
        static let window = 32768
        static let flushAt = 1 << 20
        var out: [UInt8]
        var outCount = 0
        var totalOut = 0

        init(input: UnsafeBufferPointer<UInt8>, maxOutput: Int) {
            self.input = input
            self.maxOutput = maxOutput
            out = [UInt8](repeating: 0, count: State.flushAt + State.window + 300)
        }

        @inline(__always)
        mutating func bits(_ n: Int) throws -> Int {
            while bitCount < n {
                guard pos < input.count else { throw InflateError(reason: "the stream ends early") }
                bitBuffer |= UInt64(input[pos]) << UInt64(bitCount)
                pos += 1
                bitCount += 8
            }
            let v = Int(bitBuffer & ((1 << UInt64(n)) - 1))
            bitBuffer >>= UInt64(n)
            bitCount -= n
            return v
        }

        @inline(__always)
        mutating func decode(_ h: Huffman) throws -> Int {
            var code = 0, first = 0, index = 0
            for len in 1...15 {
                code |= try bits(1)
                let count = h.counts[len]
                if code - count < first { return h.symbols[index + (code - first)] }
                index += count
                first += count
                first <<= 1
                code <<= 1
            }
            throw InflateError(reason: "invalid Huffman code")
        }

        @inline(__always)
        mutating func emit(_ b: UInt8, _ sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            out[outCount] = b
            outCount += 1
            totalOut += 1
            if outCount >= State.flushAt + State.window { try flush(sink, keep: State.window) }
        }

        mutating func flush(_ sink: (UnsafeBufferPointer<UInt8>) throws -> Void, keep: Int) throws {
            guard totalOut <= maxOutput else { throw InflateError(reason: "the output exceeds the declared size") }
            let give = outCount - keep
            if give <= 0 { return }
            try out.withUnsafeBufferPointer { try sink(UnsafeBufferPointer(rebasing: $0[0..<give])) }
            out.withUnsafeMutableBufferPointer { b in
                _ = memmove(b.baseAddress!, b.baseAddress! + give, keep)
            }
            outCount = keep
        }

        mutating func run(_ sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            var last = 0
            repeat {
                last = try bits(1)
                switch try bits(2) {
                case 0: try stored(sink)
                case 1: try codes(Inflate.fixed.0, Inflate.fixed.1, sink)
                case 2: try dynamic(sink)
                default: throw InflateError(reason: "invalid block type 3")
                }
            } while last == 0
            try flush(sink, keep: 0)
        }

        mutating func stored(_ sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            bitBuffer = 0  // discard to the byte boundary
            bitCount = 0
            guard pos + 4 <= input.count else { throw InflateError(reason: "the stream ends early") }
            let len = Int(input[pos]) | Int(input[pos + 1]) << 8
            let nlen = Int(input[pos + 2]) | Int(input[pos + 3]) << 8
            pos += 4
            guard len == ~nlen & 0xFFFF else { throw InflateError(reason: "stored block length check failed") }
            guard pos + len <= input.count else { throw InflateError(reason: "the stream ends early") }
            for k in 0..<len { try emit(input[pos + k], sink) }
            pos += len
        }

        mutating func dynamic(_ sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            let nlen = try bits(5) + 257
            let ndist = try bits(5) + 1
            let ncode = try bits(4) + 4
            guard nlen <= 286 && ndist <= 30 else { throw InflateError(reason: "too many length or distance codes") }
            var lengths = [Int](repeating: 0, count: 320)
            for k in 0..<ncode { lengths[Inflate.codeLengthOrder[k]] = try bits(3) }
            let lencode = try Huffman(lengths: lengths[0..<19])
            var index = 0
            while index < nlen + ndist {
                var symbol = try decode(lencode)
                if symbol < 16 {
                    lengths[index] = symbol
                    index += 1
                    continue
                }
                var value = 0
                if symbol == 16 {
                    guard index > 0 else { throw InflateError(reason: "repeat with no previous length") }
                    value = lengths[index - 1]
                    symbol = 3 + (try bits(2))
                } else if symbol == 17 {
                    symbol = 3 + (try bits(3))
                } else {
                    symbol = 11 + (try bits(7))
                }
                guard index + symbol <= nlen + ndist else { throw InflateError(reason: "too many code lengths") }
                for _ in 0..<symbol {
                    lengths[index] = value
                    index += 1
                }
            }
            guard lengths[256] != 0 else { throw InflateError(reason: "no end-of-block code") }
            let lit = try Huffman(lengths: lengths[0..<nlen])
            let dist = try Huffman(lengths: lengths[nlen..<(nlen + ndist)])
            try codes(lit, dist, sink)
        }

        mutating func codes(_ lit: Huffman, _ dist: Huffman, _ sink: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
            while true {
                var symbol = try decode(lit)
                if symbol < 256 {
                    try emit(UInt8(symbol), sink)
                } else if symbol == 256 {
                    return
                } else {
                    symbol -= 257
                    guard symbol < 29 else { throw InflateError(reason: "invalid length symbol") }
                    let length = Inflate.lengthBase[symbol] + (try bits(Inflate.lengthExtra[symbol]))
                    let dsym = try decode(dist)
                    guard dsym < 30 else { throw InflateError(reason: "invalid distance symbol") }
                    let distance = Inflate.distanceBase[dsym] + (try bits(Inflate.distanceExtra[dsym]))
                    guard distance <= totalOut && distance <= State.window else {
                        throw InflateError(reason: "a back-reference points before the start of the output")
                    }
                    for _ in 0..<length {
                        try emit(out[outCount - distance], sink)
                    }
                }
            }
        }
    }
}

/// CRC-32 (IEEE, reflected 0xEDB88320) as zip uses it; slicing-by-4 tables.
struct CRC32 {
    static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 4)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<4 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()

    private(set) var value: UInt32 = 0
    private var state: UInt32 = 0xFFFF_FFFF

    mutating func update(_ b: UnsafeRawBufferPointer) {
        var c = state
        let n = b.count
        var i = 0
        CRC32.tables[0].withUnsafeBufferPointer { t0 in
            CRC32.tables[1].withUnsafeBufferPointer { t1 in
                CRC32.tables[2].withUnsafeBufferPointer { t2 in
                    CRC32.tables[3].withUnsafeBufferPointer { t3 in
                        while i + 4 <= n {
                            c ^= UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
                            c = t3[Int(c & 0xFF)] ^ t2[Int((c >> 8) & 0xFF)] ^ t1[Int((c >> 16) & 0xFF)] ^ t0[Int(c >> 24)]
                            i += 4
                        }
                        while i < n {
                            c = t0[Int((c ^ UInt32(b[i])) & 0xFF)] ^ (c >> 8)
                            i += 1
                        }
                    }
                }
            }
        }
        state = c
        value = ~c
    }
}
