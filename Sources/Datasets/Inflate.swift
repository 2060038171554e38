import CZlib

/// DEFLATE decompression (RFC 1951) of a raw stream (no zlib or gzip header), as the deflated
/// entries of `.npz` archives (`numpy.savez_compressed`) hold it, by zlib's `inflate`.
///
/// Output is streamed: zlib writes into a buffer of at most 1 MiB (less for an input too short
/// to expand that far), which is handed to `sink` each time zlib stops, so a large entry is
/// never held in memory twice. `maxOutput` is checked before each hand-over, so nothing past
/// it reaches the sink and at most 1 MiB more than `maxOutput` is ever decoded. zlib's own
/// checks (invalid and incomplete codes, distances too far back, stored-length mismatches)
/// give the error reason; a stream that stops before its final block is "the stream ends early".
public enum Inflate {
    public struct InflateError: Error, Equatable {
        public let reason: String
    }

    /// The most output handed to the sink at once.
    static let chunk = 1 << 20

    /// Decompresses a raw deflate stream, calling `sink` with the output in order. Throws if
    /// the output would exceed `maxOutput` bytes.
    static func decompress(
        _ input: UnsafeBufferPointer<UInt8>, maxOutput: Int = Int.max,
        sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        var stream = z_stream()
        // Window bits -15: a raw stream with a 32 KiB window (what zip and numpy write).
        guard inflateInit2_(&stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw InflateError(reason: "zlib could not start (out of memory)")
        }
        defer { inflateEnd(&stream) }
        // A stream of n bytes yields at most 1032 n bytes (a 258-byte match takes at least 2
        // bits), so a small stream gets a small buffer; any size works the same way.
        let bound = input.count < Int.max / 2048 ? (input.count + 16) * 1032 : Int.max
        var buffer = [UInt8](repeating: 0, count: min(chunk, max(4096, min(bound, maxOutput))))
        var unread = input.count  // not yet given to zlib, whose counts are 32-bit
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        var produced = 0
        try buffer.withUnsafeMutableBufferPointer { out in
            var status = Z_OK
            while status != Z_STREAM_END {
                if stream.avail_in == 0 && unread > 0 {
                    stream.avail_in = UInt32(min(unread, Int(UInt32.max)))
                    unread -= Int(stream.avail_in)
                }
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                status = inflate(&stream, Z_NO_FLUSH)
                switch status {
                case Z_OK, Z_STREAM_END: break
                // No progress possible with output room left: the input is used up.
                case Z_BUF_ERROR: throw InflateError(reason: "the stream ends early")
                case Z_MEM_ERROR: throw InflateError(reason: "zlib ran out of memory")
                default: throw InflateError(reason: stream.msg.map { String(cString: $0) } ?? "invalid deflate data (zlib status \(status))")
                }
                let count = out.count - Int(stream.avail_out)
                guard count <= maxOutput - produced else { throw InflateError(reason: "the output exceeds the declared size") }
                produced += count
                if count > 0 { try sink(UnsafeBufferPointer(rebasing: out[0..<count])) }
            }
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
}
