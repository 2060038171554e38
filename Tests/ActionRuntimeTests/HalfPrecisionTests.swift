@testable import ModelExport
import XCTest

/// The hand-written half precision of the Core ML package writer against Swift's own `Float16`
/// (which Linux and Apple silicon have): the same bits for every value that matters.
final class HalfPrecisionTests: XCTestCase {
    func expectSame(_ f: Float, file: StaticString = #filePath, line: UInt = #line) {
        let want = Float16(f).bitPattern
        XCTAssertEqual(HalfPrecision.bits(f), want, "\(f) (bits \(String(f.bitPattern, radix: 16)))", file: file, line: line)
    }

    func testEdgesMatchFloat16() {
        let edges: [Float] = [
            0, -0, 1, -1, 0.5, 2, 1.0 / 3, 65504, -65504, 65519, 65520, 1e6, -1e6, .infinity, -.infinity,
            6.1035156e-5,  // the smallest normal half
            6.0975552e-5,  // the largest subnormal half
            5.9604645e-8,  // the smallest subnormal half
            2.9802322e-8,  // half of it: a tie, to even (0)
            2.9802326e-8,  // just above the tie: the smallest subnormal
            8.940697e-8,  // 1.5 x the smallest: a tie, to even (2 x)
            1e-10, -1e-10, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            1.0009766,  // 1 + 2^-10: exactly representable
            1.0004883,  // 1 + 2^-11: a tie, to even (1)
            1.0014648,  // 1 + 3 x 2^-11: a tie, to even (1 + 2^-9)
            2047.0, 2049.0, 4095.0,  // ties at integers
        ]
        for f in edges { expectSame(f) }
        XCTAssertTrue(Float16(bitPattern: HalfPrecision.bits(.nan)).isNaN)
    }

    func testEveryHalfAndTheMidpointsBetweenThemMatchFloat16() {
        // Every finite half value, and the floats just below, at and just above each midpoint
        // between neighbours: where rounding decides.
        for b in UInt16(0)..<0x7c00 {
            for sign in [Float(1), -1] {
                let v = Float(Float16(bitPattern: b)) * sign
                expectSame(v)
                let next = Float(Float16(bitPattern: b + 1)) * sign
                let mid = (v + next) / 2
                expectSame(mid)
                expectSame(mid.nextUp)
                expectSame(mid.nextDown)
            }
        }
    }

    func testASweepOfFloatsMatchesFloat16() {
        // Every 997th float from 2^-31 to 2^16 (the subnormal halves to past the largest), both signs.
        for pattern in stride(from: UInt32(0x3000_0000), to: 0x4780_0000, by: 997) {
            expectSame(Float(bitPattern: pattern))
            expectSame(-Float(bitPattern: pattern))
        }
    }
}
