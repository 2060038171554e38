/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), as zlib's `crc32` and Python's
/// `zlib.crc32`. Slicing-by-8 for speed.
public enum CRC32 {
    private static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()

    public static func checksum(_ bytes: UnsafeRawBufferPointer, initial: UInt32 = 0) -> UInt32 {
        var crc = ~initial
        let n = bytes.count
        guard n > 0, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return initial }
        tables.withUnsafeBufferPointer { t in
            let t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3], t4 = t[4], t5 = t[5], t6 = t[6], t7 = t[7]
            var i = 0
            while i + 8 <= n {
                let lo = crc ^ (UInt32(base[i]) | UInt32(base[i + 1]) << 8 | UInt32(base[i + 2]) << 16 | UInt32(base[i + 3]) << 24)
                crc =
                    t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)] ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                    ^ t3[Int(base[i + 4])] ^ t2[Int(base[i + 5])] ^ t1[Int(base[i + 6])] ^ t0[Int(base[i + 7])]
                i += 8
            }
            while i < n {
                crc = t0[Int((crc ^ UInt32(base[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        return ~crc
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
