@testable import PoseCore
import XCTest

final class CRC32Tests: XCTestCase {
    /// Bit-at-a-time CRC-32, straight from the definition.
    func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        }
        return ~c
    }

    func testCheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([]), 0)
    }

    /// Lengths around the slicing step and the four-lane threshold (4 · 4096 bytes).
    func testMatchesTheBitwiseDefinitionAtEveryPathLength() {
        var g = SeededGenerator(seed: 9)
        for n in [1, 7, 8, 9, 63, 64, 1000, 16383, 16384, 16385, 16391, 16392, 40000, 100_003] {
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            XCTAssertEqual(CRC32.checksum(bytes), reference(bytes), "length \(n)")
        }
    }

    func testParallelChecksumEqualsTheSerialOne() {
        var g = SeededGenerator(seed: 11)
        for n in [10, 262_143, 600_001] {
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            let serial = CRC32.checksum(bytes)
            for parts in [1, 2, 3] {
                XCTAssertEqual(bytes.withUnsafeBytes { CRC32.parallelChecksum($0, parts: parts) }, serial, "length \(n), \(parts) parts")
            }
        }
        XCTAssertEqual(
            CRC32.checksum((0..<600_001).map { UInt8(truncatingIfNeeded: $0 &* 7) }),
            reference((0..<600_001).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
    }

    func testContinuingOverPieces() {
        var g = SeededGenerator(seed: 12)
        let bytes = (0..<200_000).map { _ in UInt8(truncatingIfNeeded: g.next()) }
        var crc: UInt32 = 0, start = 0
        for piece in [0, 1, 63, 70_000, 5, 100_000, 29_931] {
            crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(start + piece)]), continuing: crc) }
            start += piece
        }
        XCTAssertEqual(start, bytes.count)
        XCTAssertEqual(crc, reference(bytes))
    }

    func testCombine() {
        var g = SeededGenerator(seed: 10)
        for (na, nb) in [(0, 5), (5, 0), (13, 1), (100, 333), (4096, 17)] {
            let a = (0..<na).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            let b = (0..<nb).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            XCTAssertEqual(CRC32.combine(CRC32.checksum(a), CRC32.checksum(b), lengthB: nb), reference(a + b), "\(na) + \(nb)")
        }
    }

    /// Slicing-by-8 CRC-32 against the bit-by-bit definition, at every alignment and length
    /// up to 40 bytes, and in pieces (the zip reader continues it chunk by chunk).
    func testCRC32MatchesBitwiseDefinition() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for b in bytes {
                c ^= UInt32(b)
                for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            }
            return ~c
        }
        var g = SeededGenerator(seed: 5)
        let data = (0..<5000).map { _ in UInt8(truncatingIfNeeded: g.next()) }
        for start in 0..<8 {
            for count in 0...40 {
                let c = data[start..<(start + count)].withUnsafeBytes { CRC32.checksum($0) }
                XCTAssertEqual(c, bitwise(data[start..<(start + count)]), "start \(start), \(count) bytes")
            }
        }
        var pieces: UInt32 = 0
        var k = 0
        for size in [1, 7, 8, 9, 100, 1000, 3875] {
            pieces = data[k..<(k + size)].withUnsafeBytes { CRC32.checksum($0, continuing: pieces) }
            k += size
        }
        XCTAssertEqual(k, data.count)
        XCTAssertEqual(pieces, bitwise(data[...]), "in pieces")
    }
}
