/// A small, fast, seedable generator (SplitMix64) so that every random choice in
/// actiontrain (initialisation, shuffling, splits, augmentation, dropout) is reproducible
/// from a seed on every platform. Not for cryptography.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 random bits.
    public mutating func nextUnitFloat() -> Float { Float(next() >> 40) * 0x1p-24 }

    /// Uniform in [0, 1) with 53 random bits.
    public mutating func nextUnitDouble() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in [-bound, bound).
    public mutating func nextSymmetric(_ bound: Float) -> Float { (nextUnitFloat() * 2 - 1) * bound }

    /// Standard normal (Box-Muller).
    public mutating func nextGaussian() -> Float {
        let u1 = max(nextUnitDouble(), 1e-300), u2 = nextUnitDouble()
        return Float((-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2))
    }

    /// A fast approximately standard normal value (Irwin-Hall): the four 16-bit quarters of
    /// one 64-bit draw as uniforms `u_k` in [0, 1), `(u_1 + u_2 + u_3 + u_4 - 2) * sqrt(3)`.
    /// Mean 0 and variance 1 (up to the 16-bit grid), bell-shaped, bounded by ±2·sqrt(3) ≈
    /// ±3.46. About 10x cheaper than `nextGaussian`; used for augmentation jitter.
    public mutating func nextApproximateGaussian() -> Float {
        let r = next()
        let s = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48)
        // Each quarter is uniform on {0, ..., 65535}; (q + 0.5) / 65536 centres the grid.
        return (Float(s) + 2) * (1 / 65536 as Float) * 1.7320508 - 2 * 1.7320508
    }

    /// Uniform integer in [0, n) without modulo bias (Lemire's method).
    public mutating func nextInt(below n: Int) -> Int {
        precondition(n > 0)
        return Int(truncatingIfNeeded: next(upperBound: UInt64(n)))
    }

    /// A seed derived from this one for an independent stream (e.g. one per epoch).
    public static func derive(_ seed: UInt64, _ stream: UInt64) -> UInt64 {
        var g = SeededGenerator(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
        return g.next()
    }
}

#if canImport(Glibc)
    import Glibc
    private func _log(_ x: Double) -> Double { Glibc.log(x) }
    private func _cos(_ x: Double) -> Double { Glibc.cos(x) }
#elseif canImport(Darwin)
    import Darwin
    private func _log(_ x: Double) -> Double { Darwin.log(x) }
    private func _cos(_ x: Double) -> Double { Darwin.cos(x) }
#else
    import Foundation
    private func _log(_ x: Double) -> Double { Foundation.log(x) }
    private func _cos(_ x: Double) -> Double { Foundation.cos(x) }
#endif

extension Array {
    /// Fisher-Yates shuffle driven by a seeded generator (same order on every platform).
    public mutating func seededShuffle(using g: inout SeededGenerator) {
        guard count > 1 else { return }
        for i in stride(from: count - 1, to: 0, by: -1) {
            let j = g.nextInt(below: i + 1)
            if i != j { swapAt(i, j) }
        }
    }
}
