@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Writes deflate streams bit by bit (RFC 1951 3.1.1: values least significant bit first,
/// Huffman codes most significant bit first) and keeps the output a decoder must produce
/// (`expected`, by the byte-at-a-time LZ77 rule), for hand-made valid and corrupt streams.
/// Its tables are transcribed from RFC 1951 3.2.5, independently of zlib's.
struct DeflateWriter {
    var bytes: [UInt8] = []
    var bitCount = 0
    var expected: [UInt8] = []

    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
        8193, 12289, 16385, 24577,
    ]
    static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
    /// RFC 1951 3.2.6.
    static let fixedLengths: [Int] = (0..<288).map { $0 < 144 ? 8 : $0 < 256 ? 9 : $0 < 280 ? 7 : 8 }
    /// A complete code-length code: symbols 0-12 get 4 bits, 13-18 get 5 (13/16 + 6/32 = 1).
    static let codeLengthLengths: [Int] = (0..<19).map { $0 < 13 ? 4 : 5 }

    /// Canonical Huffman codes for code lengths (RFC 1951 3.2.2); 0 = unused symbol.
    static func canonicalCodes(_ lengths: [Int]) -> [Int] {
        var count = [Int](repeating: 0, count: 16)
        for l in lengths where l > 0 { count[l] += 1 }
        var next = [Int](repeating: 0, count: 16)
        var code = 0
        for len in 1...15 {
            code = (code + count[len - 1]) << 1
            next[len] = code
        }
        return lengths.map { l in
            guard l > 0 else { return 0 }
            defer { next[l] += 1 }
            return next[l]
        }
    }

    mutating func bits(_ value: Int, _ n: Int) {
        for k in 0..<n {
            if bitCount % 8 == 0 { bytes.append(0) }
            if value >> k & 1 != 0 { bytes[bytes.count - 1] |= UInt8(1 << (bitCount % 8)) }
            bitCount += 1
        }
    }

    /// A Huffman code, most significant bit first.
    mutating func code(_ code: Int, _ len: Int) {
        for k in stride(from: len - 1, through: 0, by: -1) { bits(code >> k & 1, 1) }
    }

    mutating func header(final: Bool, type: Int) {
        bits(final ? 1 : 0, 1)
        bits(type, 2)
    }

    /// A stored block (header, padding to the byte boundary, LEN, NLEN, the bytes).
    mutating func stored(_ data: [UInt8], final: Bool, nlen: Int? = nil) {
        header(final: final, type: 0)
        bitCount = bytes.count * 8
        bits(data.count, 16)
        bits(nlen ?? (~data.count & 0xFFFF), 16)
        bytes += data
        bitCount = bytes.count * 8
        expected += data
    }

    /// Writes symbol `s` of the code with `lengths`.
    mutating func symbol(_ s: Int, _ lengths: [Int]) {
        precondition(lengths[s] > 0, "symbol \(s) has no code")
        code(DeflateWriter.canonicalCodes(lengths)[s], lengths[s])
    }

    mutating func literal(_ b: UInt8, _ lit: [Int] = DeflateWriter.fixedLengths) {
        symbol(Int(b), lit)
        expected.append(b)
    }

    /// A length/distance pair with the given codes (the fixed ones by default: 5-bit distances).
    mutating func match(length: Int, distance: Int, _ lit: [Int] = DeflateWriter.fixedLengths, _ dist: [Int] = [Int](repeating: 5, count: 30)) {
        let l = DeflateWriter.lengthBase.lastIndex { $0 <= length }!
        symbol(257 + l, lit)
        bits(length - DeflateWriter.lengthBase[l], DeflateWriter.lengthExtra[l])
        let d = DeflateWriter.distanceBase.lastIndex { $0 <= distance }!
        symbol(d, dist)
        bits(distance - DeflateWriter.distanceBase[d], DeflateWriter.distanceExtra[d])
        guard distance <= expected.count else { return }  // a corrupt stream: no expected output
        for _ in 0..<length { expected.append(expected[expected.count - distance]) }
    }

    /// A dynamic block header: HLIT, HDIST, all 19 code-length code lengths `cl`, then the
    /// code-length symbols `(symbol, extra bits value)` as given (which may be corrupt).
    mutating func dynamicHeader(final: Bool, nlen: Int, ndist: Int, cl: [Int] = DeflateWriter.codeLengthLengths, symbols: [(Int, Int)]) {
        header(final: final, type: 2)
        bits(nlen - 257, 5)
        bits(ndist - 1, 5)
        bits(19 - 4, 4)
        for k in 0..<19 { bits(cl[DeflateWriter.codeLengthOrder[k]], 3) }
        for (s, extra) in symbols {
            symbol(s, cl)
            if s >= 16 { bits(extra, [2, 3, 7][s - 16]) }
        }
    }

    /// A dynamic block header for these literal/length and distance code lengths, each length
    /// written as its own code-length symbol.
    mutating func dynamicHeader(final: Bool, lit: [Int], dist: [Int]) {
        dynamicHeader(final: final, nlen: lit.count, ndist: dist.count, symbols: (lit + dist).map { ($0, 0) })
    }
}

/// Runs `python3 -c script args`; throws `missingPrerequisite` when python3 is missing, and
/// fails when the script does.
func runPython3(_ script: String, _ args: [String]) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", script] + args
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { throw missingPrerequisite("python3", fix: "install python3, to compare with its zlib") }
    p.waitUntilExit()
    struct ScriptFailed: Error {}
    guard p.terminationStatus == 0 else { throw ScriptFailed() }
}

/// Round trips against Python's zlib (raw deflate, `wbits = -15`), and hand-made streams:
/// every kind of block, long and overlapping matches, the largest distance, the 1 MiB output
/// hand-over, and one corrupt stream per error with its reason (zlib's message, or ours for a
/// stream that ends early or outgrows `maxOutput`).
final class InflateStreamTests: XCTestCase {
    /// Compresses each `(name, data, level, strategy)` with `zlib.compressobj(level,
    /// zlib.DEFLATED, -15, 9, strategy)`; skips the test without python3.
    func zlibCompress(_ cases: [(String, [UInt8], Int, String)]) throws -> [String: [UInt8]] {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var list = ""
        for (name, data, level, strategy) in cases {
            try Data(data).write(to: dir.appendingPathComponent(name + ".bin"))
            list += "\(name) \(level) \(strategy)\n"
        }
        try list.write(to: dir.appendingPathComponent("cases.txt"), atomically: true, encoding: .utf8)
        let script = """
            import os, sys, zlib
            d = sys.argv[1]
            strategies = {"default": zlib.Z_DEFAULT_STRATEGY, "fixed": zlib.Z_FIXED, "huffman": zlib.Z_HUFFMAN_ONLY, "rle": zlib.Z_RLE}
            for line in open(os.path.join(d, "cases.txt")):
                name, level, strategy = line.split()
                c = zlib.compressobj(int(level), zlib.DEFLATED, -15, 9, strategies[strategy])
                data = open(os.path.join(d, name + ".bin"), "rb").read()
                open(os.path.join(d, name + ".deflate"), "wb").write(c.compress(data) + c.flush())
            """
        try runPython3(script, [dir.path])
        var out: [String: [UInt8]] = [:]
        for (name, _, _, _) in cases { out[name] = [UInt8](try Data(contentsOf: dir.appendingPathComponent(name + ".deflate"))) }
        return out
    }

    /// zlib's own output for a raw stream (nil when python3 is missing), to check the
    /// hand-made streams are what zlib reads too.
    func zlibDecompress(_ stream: [UInt8]) throws -> [UInt8]? {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.deflate"), output = dir.appendingPathComponent("out.bin")
        try Data(stream).write(to: input)
        do {
            try runPython3(
                "import sys, zlib; open(sys.argv[2], 'wb').write(zlib.decompressobj(-15).decompress(open(sys.argv[1], 'rb').read()))",
                [input.path, output.path])
        } catch is XCTSkip { return nil }
        return [UInt8](try Data(contentsOf: output))
    }

    /// Type of the first block (bits 1-2 of the first byte).
    func firstBlockType(_ s: [UInt8]) -> Int { Int(s[0] >> 1 & 3) }

    func reason(_ stream: [UInt8], maxOutput: Int = Int.max) -> String? {
        do {
            _ = try Inflate.decompress(stream, maxOutput: maxOutput)
            return nil
        } catch {
            return (error as? Inflate.InflateError)?.reason ?? "\(error)"
        }
    }

    // MARK: zlib round trips

    /// Text with repeats, random bytes, single-byte runs (distance 1, length 258), periods of
    /// 2-7 bytes (overlapping matches, distance < length), a 30,000-byte block repeated
    /// (distances near zlib's largest, 32,506) and float32 data.
    static func mixed(_ count: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        var out = [UInt8]()
        out.reserveCapacity(count + 70_000)
        let words = ["squat ", "wave ", "jump ", "clap ", "left_elbow ", "right_knee ", "0.5 ", "NaN "]
        while out.count < count {
            switch g.next() % 6 {
            case 0:
                for _ in 0..<(200 + Int(g.next() % 2000)) { out += Array(words[Int(g.next() % 8)].utf8) }
            case 1:
                for _ in 0..<(1 + Int(g.next() % 5000)) { out.append(UInt8(truncatingIfNeeded: g.next())) }
            case 2:
                out += [UInt8](repeating: UInt8(truncatingIfNeeded: g.next()), count: 1 + Int(g.next() % 3000))
            case 3:
                let period = (0..<(2 + Int(g.next() % 6))).map { _ in UInt8(truncatingIfNeeded: g.next()) }
                for _ in 0..<(1 + Int(g.next() % 400)) { out += period }
            case 4:
                let block = (0..<30_000).map { _ in UInt8(truncatingIfNeeded: g.next()) }
                out += block + block
            default:
                var x = Float(g.next() % 1000)
                for _ in 0..<(100 + Int(g.next() % 3000)) {
                    x += Float(Int(g.next() % 200) - 100) / 100
                    withUnsafeBytes(of: (x * 100).rounded() / 100) { out += $0 }
                }
            }
        }
        return Array(out.prefix(count))
    }

    func testZlibStoredFixedAndDynamicBlocksAtSeveralLevels() throws {
        let small = InflateStreamTests.mixed(300_000, seed: 1)
        let text = Array(String(repeating: "actiontrain inflate round trip ", count: 3000).utf8)
        var cases: [(String, [UInt8], Int, String)] = []
        for level in [1, 6, 9] {
            cases.append(("dynamic\(level)", small, level, "default"))
            cases.append(("fixed\(level)", small, level, "fixed"))
        }
        cases.append(("stored", small, 0, "default"))  // several stored blocks of at most 65,535 bytes
        cases.append(("huffman", small, 6, "huffman"))  // literals only
        cases.append(("rle", small, 6, "rle"))  // distance-1 matches only
        cases.append(("text9", text, 9, "default"))
        cases.append(("empty", [], 6, "default"))
        let streams = try zlibCompress(cases)
        for (name, data, level, strategy) in cases {
            let stream = streams[name]!
            XCTAssertEqual(try Inflate.decompress(stream), data, name)
            let expectedType = level == 0 ? 0 : strategy == "fixed" || data.isEmpty ? 1 : 2
            if data == small || data.isEmpty { XCTAssertEqual(firstBlockType(stream), expectedType, "\(name): first block type") }
            XCTAssertEqual(reason(Array(stream.dropLast())), "the stream ends early", "\(name) without its last byte")
        }
    }

    func testZlibLongAndOverlappingMatches() throws {
        var runs = [UInt8](repeating: 0x41, count: 100_000)  // distance 1, length 258 over and over
        for period in 2...7 { for k in 0..<5000 { runs.append(UInt8(k % period) &+ UInt8(period * 16)) } }
        var g = SeededGenerator(seed: 3)
        let far = (0..<32_000).map { _ in UInt8(truncatingIfNeeded: g.next()) }
        runs += far + far  // distance 32,000 matches
        let streams = try zlibCompress([("runs", runs, 9, "default"), ("runsFixed", runs, 9, "fixed"), ("rle", runs, 9, "rle")])
        for (name, stream) in streams {
            XCTAssertEqual(try Inflate.decompress(stream), runs, name)
            // Z_RLE finds distance-1 matches only: the repeated random block stays literals.
            XCTAssertLessThan(stream.count, name == "rle" ? 100_000 : 42_000, "\(name): the runs and the repeated block are matches")
        }
    }

    /// Several MB of random and repetitive data: crosses the 1 MiB hand-over to the sink a few
    /// times, with history kept across it.
    func testZlibMultiMegabyteStreamsInChunks() throws {
        let data = InflateStreamTests.mixed(3_500_000, seed: 2)
        let streams = try zlibCompress([("big1", data, 1, "default"), ("big6", data, 6, "default")])
        for (name, stream) in streams.sorted(by: { $0.key < $1.key }) {
            var out: [UInt8] = []
            var chunks = 0
            try stream.withUnsafeBufferPointer { b in
                try Inflate.decompress(b, maxOutput: data.count) { chunk in
                    XCTAssertLessThanOrEqual(chunk.count, (1 << 20) + 258, "\(name): chunks are the 1 MiB buffer (+ the last match)")
                    out.append(contentsOf: chunk)
                    chunks += 1
                }
            }
            XCTAssertEqual(out.count, data.count, name)
            XCTAssertTrue(out == data, "\(name): output differs")
            XCTAssertEqual(chunks, 4, "\(name): 3.5 MB arrives as 3 full buffers and the rest")
            XCTAssertEqual(reason(stream, maxOutput: data.count - 1), "the output exceeds the declared size", name)
        }
    }

    // MARK: hand-made streams

    /// The largest distance, 32,768, after more than 1 MiB of stored output (the history then
    /// lives across the buffer hand-over), matches of every length 3...258, and periods < 8.
    func testHandMadeMaxDistanceAndMatchShapes() throws {
        var g = SeededGenerator(seed: 4)
        var w = DeflateWriter()
        for _ in 0..<17 { w.stored((0..<65_535).map { _ in UInt8(truncatingIfNeeded: g.next()) }, final: false) }
        w.header(final: false, type: 1)
        w.match(length: 258, distance: 32_768)
        w.match(length: 3, distance: 32_768)
        for length in 3...258 { w.match(length: length, distance: 1 + length % 40) }  // distance < length from 4 on
        for distance in 1...9 {
            w.literal(UInt8(distance))
            w.match(length: 100 + distance, distance: distance)
        }
        w.symbol(256, DeflateWriter.fixedLengths)
        w.header(final: true, type: 1)
        w.match(length: 258, distance: 32_768)  // a second block still sees the history
        w.literal(0x7A)
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertGreaterThan(w.expected.count, (1 << 20) + 32_768)
        let out = try Inflate.decompress(w.bytes)
        XCTAssertEqual(out.count, w.expected.count)
        XCTAssertTrue(out == w.expected, "hand-made stream output differs")
        if let z = try zlibDecompress(w.bytes) { XCTAssertTrue(z == w.expected, "zlib reads the hand-made stream differently") }
    }

    /// A dynamic block with sub-table codes (lengths up to 15) for literals and distances.
    func testHandMadeDynamicBlockWithLongCodes() throws {
        // Literal/length codes of 1...13 bits for 'a'...'m', 14 for the end of block, 15 for
        // lengths 3 and 258 (complete: 1 - 2^-13 + 2^-14 + 2 * 2^-15 = 1); distance codes of
        // 1...15 bits for distance symbols 0...14 and 15 bits for 15 (complete). The codes
        // longer than 10 (literals) or 8 (distances) bits live in sub-tables.
        var lit = [Int](repeating: 0, count: 286)
        for k in 0..<13 { lit[97 + k] = k + 1 }
        lit[256] = 14
        lit[257] = 15
        lit[285] = 15
        var dist = [Int](repeating: 0, count: 30)
        for d in 0..<15 { dist[d] = d + 1 }
        dist[15] = 15
        var w = DeflateWriter()
        w.dynamicHeader(final: true, lit: lit, dist: dist)
        for b in Array("abcdefghijklm".utf8) { w.literal(b, lit) }
        w.match(length: 258, distance: 1, lit, dist)
        for d in [1, 2, 3, 5, 7, 9, 13, 100, 150, 200] { w.match(length: 3, distance: d, lit, dist) }
        for b in Array("mlkmla".utf8) { w.literal(b, lit) }
        w.symbol(256, lit)
        XCTAssertEqual(try Inflate.decompress(w.bytes), w.expected)
        if let z = try zlibDecompress(w.bytes) { XCTAssertEqual(z, w.expected, "zlib reads the hand-made stream the same") }
    }

    /// Every strict prefix of a stream is truncated: "the stream ends early", never another
    /// error from the zero bits the decoder pads the end with.
    func testEveryTruncationEndsEarly() throws {
        var w = DeflateWriter()
        w.stored(Array("stored".utf8), final: false)
        w.header(final: false, type: 1)
        for b in Array("fixed block ".utf8) { w.literal(b) }
        w.match(length: 30, distance: 12)
        w.symbol(256, DeflateWriter.fixedLengths)
        var lit = [Int](repeating: 0, count: 286)
        for b in Array("dynamic ".utf8) { lit[Int(b)] = 4 }  // 8 distinct bytes of 4 bits: 1/2
        lit[256] = 2
        lit[260] = 2  // length 6
        let dist = [3, 3, 3, 3, 2, 2]  // distance 8 is symbol 5
        w.dynamicHeader(final: true, lit: lit, dist: dist)
        for b in Array("dynamic ".utf8) { w.literal(b, lit) }
        w.match(length: 6, distance: 8, lit, dist)
        w.symbol(256, lit)
        // A block whose all-zero code is a length and whose all-zero distance code is the
        // largest one: the zero padding past a cut decodes as a back-reference far before the
        // start, which must still be reported as the truncation it is.
        var zeroLit = [Int](repeating: 0, count: 258)
        zeroLit[257] = 1  // code 0: length 3
        zeroLit[97] = 2
        zeroLit[256] = 2
        var zeroDist = [Int](repeating: 0, count: 30)
        zeroDist[29] = 1  // code 0: distance 24,577 + 13 extra bits
        zeroDist[0] = 2
        zeroDist[1] = 2
        var z = DeflateWriter()
        z.dynamicHeader(final: true, lit: zeroLit, dist: zeroDist)
        for _ in 0..<5 { z.literal(97, zeroLit) }
        for _ in 0..<5 { z.match(length: 3, distance: 1, zeroLit, zeroDist) }
        z.symbol(256, zeroLit)
        var padded = z.bytes
        padded.insert(contentsOf: [0, 0, 0, 0], at: padded.count - 2)
        XCTAssertEqual(reason(padded), "invalid distance too far back", "zeros decode as a far back-reference")
        for s in [w, z] {
            let stream = s.bytes
            XCTAssertEqual(try Inflate.decompress(stream), s.expected)
            for n in 0..<stream.count {
                XCTAssertEqual(reason(Array(stream.prefix(n))), "the stream ends early", "prefix of \(n) of \(stream.count) bytes")
            }
        }
    }

    // MARK: corrupt streams, one per error

    func testCorruptBlockHeaders() {
        XCTAssertEqual(reason([0x07]), "invalid block type")
        var w = DeflateWriter()
        w.stored([1, 2, 3, 4, 5], final: true, nlen: 0)
        XCTAssertEqual(reason(w.bytes), "invalid stored block lengths")
        w = DeflateWriter()
        w.stored([1, 2, 3, 4, 5], final: true)
        XCTAssertEqual(reason(Array(w.bytes.dropLast())), "the stream ends early", "stored data cut short")
        XCTAssertEqual(reason(Array(w.bytes.prefix(4))), "the stream ends early", "LEN/NLEN cut short")
        XCTAssertEqual(reason([]), "the stream ends early")
        w = DeflateWriter()
        w.stored([1], final: false)
        XCTAssertEqual(reason(w.bytes), "the stream ends early", "no final block")
    }

    func testCorruptDynamicHeaders() {
        var w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 287, ndist: 1, symbols: [])
        XCTAssertEqual(reason(w.bytes), "too many length or distance symbols")
        w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 257, ndist: 31, symbols: [])
        XCTAssertEqual(reason(w.bytes), "too many length or distance symbols")

        // Code-length code: three 1-bit codes; then a single 1-bit code (incomplete, and zlib
        // requires this code to be complete).
        var cl = [Int](repeating: 0, count: 19)
        cl[0] = 1
        cl[1] = 1
        cl[2] = 1
        w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 257, ndist: 1, cl: cl, symbols: [])
        XCTAssertEqual(reason(w.bytes), "invalid code lengths set")
        cl = [Int](repeating: 0, count: 19)
        cl[0] = 1
        w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 257, ndist: 1, cl: cl, symbols: [])
        XCTAssertEqual(reason(w.bytes), "invalid code lengths set")

        w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 257, ndist: 1, symbols: [(16, 0)])
        XCTAssertEqual(reason(w.bytes), "invalid bit length repeat")
        w = DeflateWriter()
        w.dynamicHeader(final: true, nlen: 257, ndist: 1, symbols: [(18, 127), (18, 116)])  // 138 + 127 > 258
        XCTAssertEqual(reason(w.bytes), "invalid bit length repeat")

        var lit = [Int](repeating: 0, count: 257)
        lit[97] = 1
        lit[98] = 1
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: lit, dist: [1])
        XCTAssertEqual(reason(w.bytes), "invalid code -- missing end-of-block")

        func literalLengths(_ a: Int, _ b: Int, _ c: Int, _ end: Int, _ d: Int = 0) -> [Int] {
            var lit = [Int](repeating: 0, count: 257)
            (lit[97], lit[98], lit[99], lit[256], lit[100]) = (a, b, c, end, d)
            return lit
        }
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: literalLengths(2, 2, 3, 3), dist: [1])  // 1/4 + 1/4 + 1/8 + 1/8 < 1
        XCTAssertEqual(reason(w.bytes), "invalid literal/lengths set", "literal/length code")
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: literalLengths(1, 2, 3, 3), dist: [2, 2])  // complete, then 1/4 + 1/4
        XCTAssertEqual(reason(w.bytes), "invalid distances set", "distance code of two 2-bit codes")
        lit = literalLengths(2, 2, 3, 3, 1)  // 3/4 + 1/2 > 1
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: lit, dist: [1])
        XCTAssertEqual(reason(w.bytes), "invalid literal/lengths set", "literal/length code")
    }

    /// A single one-bit distance code and no distance code at all are allowed (RFC 1951
    /// 3.2.7); the unused codes are invalid when met, or the stream ended early if fewer than
    /// 15 bits were left (a bit-by-bit decoder reads 15 before giving up).
    func testIncompleteDistanceCodes() throws {
        var lit = [Int](repeating: 0, count: 258)
        lit[97] = 1
        lit[256] = 2
        lit[257] = 2  // 'a', end of block, length 3
        func stream(dist: [Int], distanceBits: Int, padding: Int) -> [UInt8] {
            var w = DeflateWriter()
            w.dynamicHeader(final: true, lit: lit, dist: dist)
            w.literal(97, lit)
            w.symbol(257, lit)
            if distanceBits >= 0 { w.code(distanceBits, 1) }
            w.bits(0, padding)
            return w.bytes
        }
        var w = DeflateWriter()
        w.dynamicHeader(final: true, lit: lit, dist: [1])
        w.literal(97, lit)
        w.match(length: 3, distance: 1, lit, [1])
        w.symbol(256, lit)
        XCTAssertEqual(try Inflate.decompress(w.bytes), Array("aaaa".utf8), "the single distance code")
        XCTAssertEqual(reason(stream(dist: [1], distanceBits: 1, padding: 24)), "invalid distance code", "the unused 1-bit distance code")
        XCTAssertEqual(reason(stream(dist: [0], distanceBits: -1, padding: 24)), "invalid distance code", "no distance codes")
        XCTAssertEqual(reason(stream(dist: [0], distanceBits: -1, padding: 0)), "invalid distance code", "no distance codes: invalid whatever bits follow")
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: lit, dist: [0])
        w.literal(97, lit)
        w.symbol(256, lit)
        XCTAssertEqual(try Inflate.decompress(w.bytes), [97], "literals only with no distance code")
        // Incomplete literal/length code with a single 1-bit code: only the end of block.
        var only = [Int](repeating: 0, count: 257)
        only[256] = 1
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: only, dist: [0])
        w.symbol(256, only)
        XCTAssertEqual(try Inflate.decompress(w.bytes), [])
        w = DeflateWriter()
        w.dynamicHeader(final: true, lit: only, dist: [0])
        w.code(1, 1)
        w.bits(0, 16)
        XCTAssertEqual(reason(w.bytes), "invalid literal/length code", "the unused 1-bit literal/length code")
    }

    func testCorruptSymbolsAndDistances() throws {
        var w = DeflateWriter()
        w.header(final: true, type: 1)
        w.symbol(286, DeflateWriter.fixedLengths)
        XCTAssertEqual(reason(w.bytes), "invalid literal/length code", "fixed code 286")
        w = DeflateWriter()
        w.header(final: true, type: 1)
        w.symbol(287, DeflateWriter.fixedLengths)
        w.bits(0, 20)
        XCTAssertEqual(reason(w.bytes), "invalid literal/length code", "fixed code 287")

        w = DeflateWriter()
        w.header(final: true, type: 1)
        w.literal(1)
        w.symbol(257, DeflateWriter.fixedLengths)
        w.code(30, 5)
        w.bits(0, 20)
        XCTAssertEqual(reason(w.bytes), "invalid distance code", "fixed distance code 30")
        w = DeflateWriter()
        w.header(final: true, type: 1)
        w.literal(1)
        w.symbol(258, DeflateWriter.fixedLengths)
        w.code(31, 5)
        XCTAssertEqual(reason(w.bytes), "invalid distance code", "fixed distance code 31")

        // Distance = output so far is fine; one more points before the start.
        w = DeflateWriter()
        w.header(final: true, type: 1)
        w.literal(1)
        w.literal(2)
        w.match(length: 5, distance: 2)
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertEqual(try Inflate.decompress(w.bytes), [1, 2, 1, 2, 1, 2, 1])
        w = DeflateWriter()
        w.header(final: true, type: 1)
        w.literal(1)
        w.literal(2)
        w.match(length: 5, distance: 3)
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertEqual(reason(w.bytes), "invalid distance too far back")
        // Across blocks the output so far counts, and the largest distance needs 32,768 bytes.
        w = DeflateWriter()
        w.stored([UInt8](repeating: 7, count: 32_767), final: false)
        w.header(final: true, type: 1)
        w.match(length: 3, distance: 32_768)
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertEqual(reason(w.bytes), "invalid distance too far back")
        w = DeflateWriter()
        w.stored([UInt8](repeating: 7, count: 32_768), final: false)
        w.header(final: true, type: 1)
        w.match(length: 3, distance: 32_768)
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertEqual(try Inflate.decompress(w.bytes), [UInt8](repeating: 7, count: 32_771))
    }

    /// `maxOutput` bounds the work of a stream that expands a lot (a "zip bomb").
    func testMaxOutput() throws {
        var w = DeflateWriter()
        w.header(final: true, type: 1)
        w.literal(0)
        for _ in 0..<4500 { w.match(length: 258, distance: 1) }  // 1.16 MB (> 1 MiB + 32 KiB) from 1.7 kB
        w.symbol(256, DeflateWriter.fixedLengths)
        XCTAssertEqual(reason(w.bytes, maxOutput: w.expected.count - 1), "the output exceeds the declared size")
        XCTAssertEqual(reason(w.bytes, maxOutput: 100), "the output exceeds the declared size")
        XCTAssertEqual(try Inflate.decompress(w.bytes, maxOutput: w.expected.count).count, w.expected.count)
        var produced = 0
        XCTAssertThrowsError(
            try w.bytes.withUnsafeBufferPointer { b in try Inflate.decompress(b, maxOutput: 100) { produced += $0.count } })
        XCTAssertEqual(produced, 0, "nothing reaches the sink once the limit is passed")
    }
}
