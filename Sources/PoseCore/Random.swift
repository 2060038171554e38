/// A small, fast, seedable generator (SplitMix64) so that every random choice in
/// actiontrain (initialisation, shuffling, splits, augmentation, dropout) is reproducible
/// from a seed on every platform. Not for cryptography.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The whole state: saving and restoring it resumes the stream exactly.
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// What each `next()` adds to the state (SplitMix64's golden-ratio step): after k draws the
    /// state is the start plus k·`increment` (wrapping), so a stream can be split into parts.
    public static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    @inlinable
    public mutating func next() -> UInt64 {
        state &+= SeededGenerator.increment
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 random bits.
    @inlinable
    public mutating func nextUnitFloat() -> Float { Float(next() >> 40) * 0x1p-24 }

    /// Uniform in [0, 1) with 53 random bits.
    @inlinable
    public mutating func nextUnitDouble() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in [-bound, bound).
    public mutating func nextSymmetric(_ bound: Float) -> Float { (nextUnitFloat() * 2 - 1) * bound }

    /// Standard normal (Box-Muller).
    public mutating func nextGaussian() -> Float {
        let u1 = max(nextUnitDouble(), 1e-300), u2 = nextUnitDouble()
        return Float((-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2))
    }

    /// Two fast approximately standard normal values (Irwin-Hall) from one 64-bit draw: each
    /// is `(b_1 + b_2 + b_3 + b_4 + 2) / 256 * sqrt(3) - 2 sqrt(3)` of four of its bytes, i.e. the
    /// sum of four uniforms on a 256-level grid, centred and scaled to mean 0 and variance 1
    /// (0.99998). Bell-shaped and bounded by ±2·sqrt(3) ≈ ±3.46. About 20x cheaper than
    /// `nextGaussian`; used for augmentation jitter.
    @inlinable
    public mutating func nextApproximateGaussianPair() -> (Float, Float) {
        let r = next()
        // Byte sums of each 32-bit half: add bytes pairwise within the word, then the pairs.
        let pairs = (r & 0x00FF_00FF_00FF_00FF) &+ ((r >> 8) & 0x00FF_00FF_00FF_00FF)
        let quads = (pairs & 0x0000_FFFF_0000_FFFF) &+ ((pairs >> 16) & 0x0000_FFFF_0000_FFFF)
        let a = Float(quads & 0xFFFF_FFFF), b = Float(quads >> 32)
        let k: Float = 1.7320508 / 256, offset: Float = 2 * 1.7320508 - 2 * 1.7320508 / 256
        return (a * k - offset, b * k - offset)
    }

    /// One value of `nextApproximateGaussianPair` (the first).
    public mutating func nextApproximateGaussian() -> Float { nextApproximateGaussianPair().0 }

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
