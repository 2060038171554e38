import PoseCore

/// The checks of docs/format.md section 2 on the data section's values: its padding bytes are
/// zero (step 9) and every float32 is finite (step 10). The finiteness scan rides on the pass
/// that computes the data CRC (`BackgroundChecksum`, or the reading loader's per-tensor CRC),
/// block by block while the block is in cache; only a file that fails is scanned again, to
/// name the tensor.
extension ModelFile {
    /// The byte offset in `bytes` of the first float32 (4-byte words from the start, little-
    /// endian) that is NaN or infinite, or nil. A float is not finite exactly when its exponent
    /// bits are all ones: `(w & 0x7F80_0000) + 0x0080_0000` then carries into bit 31. The
    /// words are ORed in chunks (a loop the compiler vectorises), then the chunk that set
    /// bit 31 is searched.
    public static func firstNonFinite(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let words = bytes.count / 4, chunk = 1024
        var start = 0
        while start < words {
            let n = min(chunk, words - start)
            let p = base + 4 * start
            var any: UInt32 = 0
            for k in 0..<n {
                let w = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4 &* k, as: UInt32.self))
                any |= (w & 0x7F80_0000) &+ 0x0080_0000
            }
            if any & 0x8000_0000 != 0 {
                for k in 0..<n {
                    let w = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4 * k, as: UInt32.self))
                    if w & 0x7F80_0000 == 0x7F80_0000 { return 4 * (start + k) }
                }
            }
            start += n
        }
        return nil
    }

    /// True when `bytes` hold a non-finite float32: `firstNonFinite`, on two threads (halves
    /// at a 4-byte boundary) from 1 MiB, for the reading loader, which scans each tensor
    /// after its (two-thread) CRC. Measured in docs/benchmarks.md: a separate pass over a
    /// tensor is cheaper than riding on the CRC there (a helper thread per tensor waits for
    /// a core on a busy machine).
    static func anyNonFinite(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 1 << 20 else { return firstNonFinite(bytes) != nil }
        let half = bytes.count / 8 * 4
        let found = UnsafeMutableBufferPointer<Bool>.allocate(capacity: 2)
        defer { found.deallocate() }
        concurrentlyPerform(iterations: 2) { k in  // each half its own flag
            let part = k == 0 ? bytes[..<half] : bytes[half...]
            found[k] = firstNonFinite(UnsafeRawBufferPointer(rebasing: part)) != nil
        }
        return found[0] || found[1]
    }

    /// Steps 9 and 10 on a checked data section (tiling and CRC already checked):
    /// `firstNonFinite` is what the CRC pass found (`firstNonFinite(data)`).
    static func checkValues(_ tensors: [ModelHeader.Tensor], data: UnsafeRawBufferPointer, firstNonFinite: Int?) throws {
        for t in tensors {
            let end = t.offset + t.length
            for o in end..<align(end) where data[o] != 0 {
                throw ModelFileError.nonZeroPadding(after: t.name, offset: o)
            }
        }
        guard let offset = firstNonFinite else { return }
        throw nonFiniteError(tensors, data: data, at: offset)
    }

    /// The error for a non-finite value at byte `offset` of the data section (inside a tensor:
    /// the padding was checked to be zero): the tensor, how many of its values are not finite,
    /// and the first one's index and kind.
    static func nonFiniteError(_ tensors: [ModelHeader.Tensor], data: UnsafeRawBufferPointer, at offset: Int) -> ModelFileError {
        guard let t = tensors.first(where: { offset >= $0.offset && offset < $0.offset + $0.length }) else {
            return .badPreamble("a NaN or infinite value at data offset \(offset), outside every tensor")
        }
        return nonFiniteError(t, UnsafeRawBufferPointer(rebasing: data[t.offset..<(t.offset + t.length)]))
    }

    /// The error for a tensor whose bytes `values` hold a non-finite float32.
    static func nonFiniteError(_ t: ModelHeader.Tensor, _ values: UnsafeRawBufferPointer) -> ModelFileError {
        var count = 0, first = -1, kind = ""
        for i in 0..<(values.count / 4) {
            let v = Float(bitPattern: UInt32(littleEndian: values.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
            guard !v.isFinite else { continue }
            if first < 0 { (first, kind) = (i, v.isNaN ? "NaN" : v > 0 ? "+infinity" : "-infinity") }
            count += 1
        }
        var index: [Int] = [], rest = max(first, 0)
        for d in t.shape.reversed() {
            index.insert(rest % d, at: 0)
            rest /= d
        }
        return .nonFiniteValues(tensor: t.name, count: count, firstIndex: index, first: kind)
    }
}
