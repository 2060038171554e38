/// IEEE 754 half precision (binary16) written by hand: Swift's `Float16` type does not exist on
/// Intel Macs, and the Core ML package writer must build there too.
enum HalfPrecision {
    /// The largest finite half-precision value.
    static let greatestFiniteMagnitude: Float = 65504

    /// The bits of `f` in half precision, rounded to nearest, ties to even (what `Float16(f)`
    /// gives): beyond the range ±infinity, below it subnormals and then ±0; NaN stays a quiet NaN.
    static func bits(_ f: Float) -> UInt16 {
        let x = f.bitPattern
        let sign = UInt16(truncatingIfNeeded: (x >> 16) & 0x8000)
        let exponent = Int((x >> 23) & 0xff)
        let mantissa = x & 0x7f_ffff
        if exponent == 0xff { return sign | 0x7c00 | (mantissa == 0 ? 0 : 0x200 | UInt16(truncatingIfNeeded: mantissa >> 13)) }
        let e = exponent - 127 + 15  // the half's biased exponent
        if e >= 31 { return sign | 0x7c00 }
        // Normal halves keep the top 10 of the 23 mantissa bits; subnormal ones (e <= 0) the
        // significand with its leading 1, shifted 14 - e places. Round the dropped bits to nearest even.
        let (significand, shift): (UInt32, UInt32) = e > 0 ? (UInt32(e) << 23 | mantissa, 13) : (mantissa | 0x80_0000, UInt32(14 - e))
        guard shift < 32 else { return sign }
        var half = significand >> shift
        let dropped = significand & ((1 << shift) - 1)
        let tie = UInt32(1) << (shift - 1)
        if dropped > tie || (dropped == tie && half & 1 == 1) { half += 1 }  // a carry into the exponent is right
        return sign | UInt16(truncatingIfNeeded: half)
    }
}
