import Foundation
import PoseCore

/// DEFLATE decompression (RFC 1951), written here so that `.npz` files made by
/// `numpy.savez_compressed` load without zlib.
///
/// Decoding is table-driven, as in zlib's `inflate_fast`: the next bits of the stream index a
/// primary table of 2^10 entries (literal/length code) or 2^8 (distance code); a code longer
/// than that links to a sub-table indexed by the following bits. Each entry gives the code
/// length and what it means (literal, length or distance base plus extra bits, end of block,
/// or invalid). Bits come from a 64-bit buffer refilled 8 bytes at a time; after a refill it
/// holds at least 56 bits, enough for a whole length/distance pair (15 + 5 + 15 + 13 = 48).
/// Matches are copied 8 bytes at a time (a period shorter than 8 is first widened to a
/// multiple of itself of at least 8 bytes).
///
/// Every table and symbol is validated: over-subscribed code lengths, incomplete ones (only a
/// single one-bit code or no distance code at all is allowed, as in zlib), invalid codes,
/// length symbols 286-287 and distance symbols 30-31, back-references before the start of
/// the output, stored-length mismatches and truncated input throw `InflateError`. Near the
/// end of the input the bit buffer is padded with zero bytes; any decision taken on padding
/// bits is reported as "the stream ends early" (the error a byte-at-a-time reader would give),
/// so the decoder never reads or writes out of bounds and its work is bounded by the input
/// and `maxOutput`.
///
/// Output is streamed: the decoder keeps a 32 KiB history window plus a buffer of 1 MiB (less
/// for an input too short to expand that far) and hands full buffers to `sink`, so a large
/// entry is never held in memory twice. `maxOutput` is checked at each hand-over, so at most
/// 1 MiB more than `maxOutput` is ever decoded.
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
        // A stream of n bytes yields at most 1032 n bytes (a 258-byte match takes at least 2
        // bits), so a small stream gets a small buffer; any chunk size works the same way.
        let bound = input.count < Int.max / 2048 ? (input.count + 16) * 1032 : Int.max
        let chunk = min(State.flushAt, max(4096, min(bound, maxOutput)))
        var buffer = [UInt8](repeating: 0, count: State.window + chunk + State.slack)
        try buffer.withUnsafeMutableBufferPointer { out in
            var s = State(input: input, out: out.baseAddress!, flushLimit: State.window + chunk, maxOutput: maxOutput)
            try s.run(sink)
        }
    }

    /// Convenience: the whole output as one array.
    public static func decompress(_ input: [UInt8], maxOutput: Int = Int.max) throws -> [UInt8] {
        var out: [UInt8] = []
        try input.withUnsafeBufferPointer { b in
            try decompress(b, maxOutput: maxOutput) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// A decoding table for one canonical Huffman code. An entry (`UInt32`) is
    ///
    ///     bits 0-3    code length in bits (0 for an invalid code)
    ///     bits 4-7    kind: `symbol`, `baseExtra`, `endOfBlock`, `link`, or one of the invalid kinds
    ///     bits 8-11   extra bits to read after the code (`baseExtra`), or a sub-table's index bits (`link`)
    ///     bits 16-31  the literal or code-length symbol, the length/distance base, or a sub-table's offset
    ///
    /// The primary table has 2^`rootBits` entries indexed by the next `rootBits` stream bits
    /// (codes are stored bit-reversed since deflate packs them from the most significant bit);
    /// a code of length L <= rootBits fills every 2^L-th entry from its reversed code. Codes
    /// longer than `rootBits` that share their first `rootBits` bits share a sub-table of
    /// 2^(longest - rootBits) entries appended after the primary table, indexed by the bits
    /// that follow. Unfilled entries (unused codes of an incomplete set) are `invalidCode`.
    struct Table {
        static let symbol: UInt32 = 0 << 4
        static let baseExtra: UInt32 = 1 << 4
        static let endOfBlock: UInt32 = 2 << 4
        static let link: UInt32 = 3 << 4
        static let invalidCode: UInt32 = 4 << 4
        static let invalidLength: UInt32 = 5 << 4
        static let invalidDistance: UInt32 = 6 << 4
        static let kindMask: UInt32 = 0xF0

        var entries: [UInt32]
        let rootBits: Int

        /// Builds the table for the code lengths `lengths` (0 = unused symbol, else 1...15) of
        /// symbols 0..<lengths.count; `meaning[s]` is symbol s's entry without its length.
        /// Throws on an over-subscribed set, and on an incomplete one unless `allowIncomplete`
        /// and the set has no code or a single code of one bit (RFC 1951 3.2.7; zlib's rule).
        init(lengths: ArraySlice<UInt8>, rootBits: Int, meaning: [UInt32], allowIncomplete: Bool) throws {
            self.rootBits = rootBits
            var counts = [Int](repeating: 0, count: 16)
            for l in lengths { counts[Int(l)] += 1 }
            var left = 1
            for len in 1...15 {
                left <<= 1
                left -= counts[len]
                if left < 0 { throw InflateError(reason: "over-subscribed Huffman code lengths") }
            }
            let used = lengths.count - counts[0]
            if left > 0 && !(allowIncomplete && (used == 0 || (used == 1 && counts[1] == 1))) {
                throw InflateError(reason: "incomplete Huffman code lengths")
            }
            // Symbols in canonical order: by code length, then by symbol.
            var offsets = [Int](repeating: 0, count: 16)
            for len in 1..<15 { offsets[len + 1] = offsets[len] + counts[len] }
            var sorted = [Int](repeating: 0, count: used)
            for (symbol, l) in zip(0..., lengths) where l != 0 {
                sorted[offsets[Int(l)]] = symbol
                offsets[Int(l)] += 1
            }
            /// The `len`-bit code with its bits in reverse order.
            func reversed(_ code: Int, _ len: Int) -> Int {
                var v = UInt16(truncatingIfNeeded: code << (16 - len))
                v = (v >> 1 & 0x5555) | (v & 0x5555) << 1
                v = (v >> 2 & 0x3333) | (v & 0x3333) << 2
                v = (v >> 4 & 0x0F0F) | (v & 0x0F0F) << 4
                return Int(v.byteSwapped)
            }
            // Pass 1: the sub-table size behind each primary index (from its longest code; the
            // codes are visited by increasing length) and the sub-tables' offsets.
            let rootSize = 1 << rootBits
            var subBits = [Int](repeating: 0, count: rootSize)
            var code = 0
            for len in 1...15 {
                for _ in 0..<counts[len] {
                    if len > rootBits { subBits[reversed(code, len) & (rootSize - 1)] = len - rootBits }
                    code += 1
                }
                code <<= 1
            }
            var table = [UInt32](repeating: Table.invalidCode, count: rootSize)
            var size = rootSize
            for prefix in 0..<rootSize where subBits[prefix] > 0 {
                table[prefix] = Table.link | UInt32(subBits[prefix]) << 8 | UInt32(size) << 16
                size += 1 << subBits[prefix]
            }
            table += [UInt32](repeating: Table.invalidCode, count: size - rootSize)
            // Pass 2: fill the entries.
            code = 0
            var k = 0
            for len in 1...15 {
                for _ in 0..<counts[len] {
                    let entry = meaning[sorted[k]] | UInt32(len)
                    let r = reversed(code, len)
                    if len <= rootBits {
                        for i in stride(from: r, to: rootSize, by: 1 << len) { table[i] = entry }
                    } else {
                        let link = table[r & (rootSize - 1)]
                        let offset = Int(link >> 16), subSize = 1 << Int(link >> 8 & 15)
                        for i in stride(from: r >> rootBits, to: subSize, by: 1 << (len - rootBits)) { table[offset + i] = entry }
                    }
                    code += 1
                    k += 1
                }
                code <<= 1
            }
            entries = table
        }
    }

    static let lengthBase: [UInt32] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [UInt32] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [UInt32] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
        8193, 12289, 16385, 24577,
    ]
    static let distanceExtra: [UInt32] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    /// Order of the code-length code lengths in a dynamic block header.
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// Table meanings of literal/length symbols 0...287, distance symbols 0...31 and
    /// code-length symbols 0...18.
    static let literalLengthMeaning: [UInt32] = (0..<288).map { s in
        if s < 256 { return Table.symbol | UInt32(s) << 16 }
        if s == 256 { return Table.endOfBlock }
        if s < 286 { return Table.baseExtra | lengthExtra[s - 257] << 8 | lengthBase[s - 257] << 16 }
        return Table.invalidLength
    }
    static let distanceMeaning: [UInt32] = (0..<32).map { s in
        s < 30 ? Table.baseExtra | distanceExtra[s] << 8 | distanceBase[s] << 16 : Table.invalidDistance
    }
    static let codeLengthMeaning: [UInt32] = (0..<19).map { Table.symbol | UInt32($0) << 16 }

    static let literalRootBits = 10, distanceRootBits = 8

    /// The fixed codes of block type 1 (RFC 1951 3.2.6).
    static let fixed: (Table, Table) = {
        var lengths = [UInt8](repeating: 8, count: 288)
        for k in 144..<256 { lengths[k] = 9 }
        for k in 256..<280 { lengths[k] = 7 }
        // Constant, valid code lengths: these cannot throw.
        let lit = try! Table(lengths: lengths[...], rootBits: literalRootBits, meaning: literalLengthMeaning, allowIncomplete: false)
        let dist = try! Table(
            lengths: [UInt8](repeating: 5, count: 32)[...], rootBits: distanceRootBits, meaning: distanceMeaning, allowIncomplete: false)
        return (lit, dist)
    }()

    typealias Sink = (UnsafeBufferPointer<UInt8>) throws -> Void

    struct State {
        static let window = 32768
        /// The most output handed to the sink at once (less for a stream that cannot make that much).
        static let flushAt = 1 << 20
        /// Room in the output buffer after `flushLimit`: one match (258) + 8 bytes that a word
        /// copy may write past its end, rounded up.
        static let slack = 320

        let input: UnsafeBufferPointer<UInt8>
        let inputBits: Int
        /// Next input byte to load into `bitBuffer`; past `input.count` it counts zero padding.
        var pos = 0
        /// Stream bits, next bit lowest. The low `bitCount` bits are valid; the bits above
        /// them are zero or the stream's following bits (loaded ahead by a word refill).
        var bitBuffer: UInt64 = 0
        var bitCount = 0
        let maxOutput: Int
        /// The output buffer, of `flushLimit + slack` bytes; it is handed over when it holds
        /// `flushLimit` (= window + chunk) bytes, keeping the window.
        let out: UnsafeMutablePointer<UInt8>
        let flushLimit: Int
        /// Bytes in `out`; the last min(window, total) of them are the history.
        var outCount = 0
        /// Bytes already handed to the sink and dropped from `out` (total output = dropped + outCount).
        var dropped = 0

        init(input: UnsafeBufferPointer<UInt8>, out: UnsafeMutablePointer<UInt8>, flushLimit: Int, maxOutput: Int) {
            precondition(flushLimit > State.window, "a hand-over must free room")
            self.input = input
            inputBits = input.count * 8
            self.out = out
            self.flushLimit = flushLimit
            self.maxOutput = maxOutput
        }

        static let endsEarly = InflateError(reason: "the stream ends early")

        /// Bits taken from the stream so far; beyond `inputBits` they were padding.
        var consumed: Int { pos * 8 - bitCount }

        /// `reason`, unless bits beyond the input were used (`consumed` of them so far): then
        /// the stream ended early.
        func fail(_ reason: String, at consumed: Int) -> InflateError {
            consumed > inputBits ? State.endsEarly : InflateError(reason: reason)
        }

        /// An unused code of an incomplete set met after `consumed` bits: a bit-by-bit reader
        /// tries all 15 bits before giving up.
        func invalidCode(at consumed: Int) -> InflateError {
            consumed + 15 > inputBits ? State.endsEarly : InflateError(reason: "invalid Huffman code")
        }

        /// Tops the buffer up to at least 56 valid bits.
        @inline(__always)
        mutating func refill() throws {
            if pos <= input.count - 8 {
                let word = UInt64(littleEndian: UnsafeRawPointer(input.baseAddress! + pos).loadUnaligned(as: UInt64.self))
                bitBuffer |= word &<< UInt64(bitCount)
                pos += 7 - (bitCount >> 3)
                bitCount |= 56
            } else {
                try refillTail()
            }
        }

        /// Byte-wise refill near the end of the input, padding with zeros. Throws once padding
        /// bits have been consumed, so decoding past the end stops within one refill.
        mutating func refillTail() throws {
            guard consumed <= inputBits else { throw State.endsEarly }
            while bitCount < 56 {
                if pos < input.count { bitBuffer |= UInt64(input[pos]) &<< UInt64(bitCount) }
                pos += 1
                bitCount += 8
            }
        }

        /// Takes `n` <= bitCount bits.
        @inline(__always)
        mutating func take(_ n: Int) -> Int {
            let v = Int(truncatingIfNeeded: bitBuffer & ((1 &<< UInt64(n)) &- 1))
            bitBuffer &>>= UInt64(n)
            bitCount -= n
            return v
        }

        /// `n` <= 32 bits from the input; throws if the input has fewer left.
        mutating func bits(_ n: Int) throws -> Int {
            if bitCount < n { try refill() }
            guard consumed + n <= inputBits else { throw State.endsEarly }
            return take(n)
        }

        /// Decodes one symbol of a code with no sub-tables (the code-length code), strictly
        /// within the input.
        mutating func decodeSymbol(_ t: Table) throws -> Int {
            if bitCount < t.rootBits { try refill() }
            let e = t.entries[Int(truncatingIfNeeded: bitBuffer) & ((1 << t.rootBits) - 1)]
            guard e & Table.kindMask == Table.symbol else { throw invalidCode(at: consumed) }
            let n = Int(e & 15)
            guard consumed + n <= inputBits else { throw State.endsEarly }
            _ = take(n)
            return Int(e >> 16)
        }

        mutating func flush(_ sink: Sink, keep: Int) throws {
            guard consumed <= inputBits else { throw State.endsEarly }
            guard dropped + outCount <= maxOutput else { throw InflateError(reason: "the output exceeds the declared size") }
            let give = outCount - keep
            if give <= 0 { return }
            try sink(UnsafeBufferPointer(start: out, count: give))
            memmove(out, out + give, keep)
            outCount = keep
            dropped += give
        }

        mutating func run(_ sink: Sink) throws {
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

        mutating func stored(_ sink: Sink) throws {
            // Discard the bits up to the byte boundary and give back the whole bytes loaded ahead.
            pos -= bitCount >> 3
            bitBuffer = 0
            bitCount = 0
            guard pos <= input.count - 4 else { throw State.endsEarly }
            let len = Int(input[pos]) | Int(input[pos + 1]) << 8
            let nlen = Int(input[pos + 2]) | Int(input[pos + 3]) << 8
            pos += 4
            guard len == ~nlen & 0xFFFF else { throw InflateError(reason: "stored block length check failed") }
            guard len <= input.count - pos else { throw State.endsEarly }
            var done = 0
            while done < len {
                if outCount >= flushLimit { try flush(sink, keep: State.window) }
                let n = min(len - done, flushLimit - outCount)
                (out + outCount).update(from: input.baseAddress! + pos + done, count: n)
                outCount += n
                done += n
            }
            pos += len
            if outCount >= flushLimit { try flush(sink, keep: State.window) }
        }

        mutating func dynamic(_ sink: Sink) throws {
            let nlen = try bits(5) + 257
            let ndist = try bits(5) + 1
            let ncode = try bits(4) + 4
            guard nlen <= 286 && ndist <= 30 else { throw InflateError(reason: "too many length or distance codes") }
            var lengths = [UInt8](repeating: 0, count: 320)
            for k in 0..<ncode { lengths[Inflate.codeLengthOrder[k]] = UInt8(try bits(3)) }
            let lencode = try Table(lengths: lengths[0..<19], rootBits: 7, meaning: Inflate.codeLengthMeaning, allowIncomplete: false)
            var index = 0
            while index < nlen + ndist {
                var symbol = try decodeSymbol(lencode)
                if symbol < 16 {
                    lengths[index] = UInt8(symbol)
                    index += 1
                    continue
                }
                var value: UInt8 = 0
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
            let lit = try Table(
                lengths: lengths[0..<nlen], rootBits: Inflate.literalRootBits, meaning: Inflate.literalLengthMeaning, allowIncomplete: true)
            let dist = try Table(
                lengths: lengths[nlen..<(nlen + ndist)], rootBits: Inflate.distanceRootBits, meaning: Inflate.distanceMeaning,
                allowIncomplete: true)
            try codes(lit, dist, sink)
        }

        mutating func codes(_ lit: Table, _ dist: Table, _ sink: Sink) throws {
            try lit.entries.withUnsafeBufferPointer { l in
                try dist.entries.withUnsafeBufferPointer { d in
                    try codes(l.baseAddress!, d.baseAddress!, sink)
                }
            }
        }

        /// The entry of `t` for the low bits of `buffer`, following a link. Indices stay inside
        /// the table: the primary index is masked to `rootBits` bits, and a link's offset and
        /// index bits describe a sub-table the builder appended.
        @inline(__always)
        static func entry(_ t: UnsafePointer<UInt32>, _ rootBits: Int, _ buffer: UInt64) -> UInt32 {
            let e = t[Int(truncatingIfNeeded: buffer) & ((1 &<< rootBits) &- 1)]
            guard e & Table.kindMask == Table.link else { return e }
            let sub = Int(truncatingIfNeeded: buffer &>> UInt64(rootBits)) & ((1 &<< Int(e >> 8 & 15)) &- 1)
            return t[Int(e >> 16) &+ sub]
        }

        /// Decodes literal/length and distance codes up to the end of the block. Each round
        /// starts with at least 48 bits in the buffer (a whole length/distance pair) and at
        /// least `slack` = 258 + 8 bytes of room in `out`. The bit buffer, input position and output
        /// count live in locals here (stores through `out` could otherwise alias them) and are
        /// written back before anything else reads them: a flush, a tail refill, an error.
        mutating func codes(_ lit: UnsafePointer<UInt32>, _ dist: UnsafePointer<UInt32>, _ sink: Sink) throws {
            let litRoot = Inflate.literalRootBits, distRoot = Inflate.distanceRootBits
            let out = self.out
            let flushLimit = self.flushLimit
            let lastWord = input.count - 8  // a word refill may read input[pos ..< pos + 8]
            var buffer = bitBuffer, count = bitCount, p = pos, o = outCount
            defer { (bitBuffer, bitCount, pos, outCount) = (buffer, count, p, o) }
            @inline(__always) func take(_ n: UInt32) -> Int {
                let v = Int(truncatingIfNeeded: buffer & ((1 &<< UInt64(n)) &- 1))
                buffer &>>= UInt64(n)
                count &-= Int(n)
                return v
            }
            while true {
                if o >= flushLimit {
                    (bitBuffer, bitCount, pos, outCount) = (buffer, count, p, o)
                    try flush(sink, keep: State.window)
                    o = outCount
                }
                if count < 48 {
                    if p <= lastWord {
                        let word = UInt64(littleEndian: UnsafeRawPointer(input.baseAddress! + p).loadUnaligned(as: UInt64.self))
                        buffer |= word &<< UInt64(count)
                        p &+= 7 &- (count &>> 3)
                        count |= 56
                    } else {
                        (bitBuffer, bitCount, pos, outCount) = (buffer, count, p, o)
                        try refillTail()
                        (buffer, count, p) = (bitBuffer, bitCount, pos)
                    }
                }
                var e = State.entry(lit, litRoot, buffer)
                if e & Table.kindMask == Table.symbol {
                    // Up to three literals from the 48 bits (3 x 15 = 45).
                    _ = take(e & 15)
                    out[o] = UInt8(truncatingIfNeeded: e >> 16)
                    e = State.entry(lit, litRoot, buffer)
                    guard e & Table.kindMask == Table.symbol else {
                        o &+= 1
                        continue
                    }
                    _ = take(e & 15)
                    out[o &+ 1] = UInt8(truncatingIfNeeded: e >> 16)
                    e = State.entry(lit, litRoot, buffer)
                    guard e & Table.kindMask == Table.symbol else {
                        o &+= 2
                        continue
                    }
                    _ = take(e & 15)
                    out[o &+ 2] = UInt8(truncatingIfNeeded: e >> 16)
                    o &+= 3
                    continue
                }
                let kind = e & Table.kindMask
                if kind == Table.endOfBlock {
                    _ = take(e & 15)
                    return
                }
                if kind != Table.baseExtra {
                    if kind == Table.invalidCode { throw invalidCode(at: p &* 8 &- count) }
                    _ = take(e & 15)
                    throw fail("invalid length symbol", at: p &* 8 &- count)
                }
                _ = take(e & 15)
                let length = Int(e >> 16) &+ take(e >> 8 & 15)
                let d = State.entry(dist, distRoot, buffer)
                if d & Table.kindMask != Table.baseExtra {
                    if d & Table.kindMask == Table.invalidCode { throw invalidCode(at: p &* 8 &- count) }
                    _ = take(d & 15)
                    throw fail("invalid distance symbol", at: p &* 8 &- count)
                }
                _ = take(d & 15)
                let distance = Int(d >> 16) &+ take(d >> 8 & 15)
                guard distance <= dropped &+ o else {
                    throw fail("a back-reference points before the start of the output", at: p &* 8 &- count)
                }
                State.copyMatch(to: out + o, distance: distance, length: length)
                o &+= length
            }
        }

        /// LZ77 copy of `length` bytes from `distance` bytes back, byte-for-byte equivalent to
        /// `for k in 0..<length { dst[k] = dst[k - distance] }`. Copies 8-byte words, which is
        /// exact once the words do not overlap their source (distance >= 8); a shorter period
        /// is first written byte by byte up to its smallest multiple >= 8, which then serves
        /// as the distance. Writes up to 7 bytes past `dst + length` (inside `slack`).
        @inline(__always)
        static func copyMatch(to dst: UnsafeMutablePointer<UInt8>, distance: Int, length: Int) {
            var step = distance
            var k = 0
            if distance < 8 {
                step = (8 + distance - 1) / distance * distance
                let first = min(step, length)
                while k < first {
                    dst[k] = dst[k - distance]
                    k += 1
                }
            }
            let raw = UnsafeMutableRawPointer(dst)
            while k < length {
                raw.storeBytes(of: raw.loadUnaligned(fromByteOffset: k - step, as: UInt64.self), toByteOffset: k, as: UInt64.self)
                k += 8
            }
        }
    }
}
