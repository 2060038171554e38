/// FNV-1a 64, the package's one content hash (a dataset's and a training config's, in a
/// model's provenance): stable across runs and machines, not cryptographic. Written as
/// `fnv1a64:<16 hex digits>`.
public struct FNV1a64 {
    public var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    /// Mixes in `bytes`, in order.
    @inlinable
    public mutating func mix<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        var h = value
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        value = h
    }

    /// `fnv1a64:` and the value as 16 lower-case hex digits.
    public var text: String {
        let hex = String(value, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The hash of `bytes` as text.
    public static func text<Bytes: Sequence>(of bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var h = FNV1a64()
        h.mix(bytes)
        return h.text
    }
}
