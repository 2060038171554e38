import Dispatch
import Foundation
import PoseCore

/// The CRC-32 of a buffer, and the offset of its first float32 that is NaN or infinite
/// (`ModelFile.firstNonFinite`, run on each block right after its CRC, while it is in cache),
/// started on a helper thread while the caller does other work (a model file's header checks),
/// which the caller then joins: the helper takes blocks from the front, the caller from the
/// back, until they meet; the two parts are joined with `CRC32.combine`.
/// Whoever is free computes, so the split adapts to how long the caller's own work took and to
/// when (or whether) the helper got a core.
///
/// The caller never waits for a helper that has not started: once every block is taken it
/// waits only for a block the helper is computing, then the helper is told to stop, and a
/// late helper finds nothing left and never reads the buffer. So the buffer may go as soon as
/// `finish()` or `cancel()` returns.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`, and `base` is only
/// read (by the helper only for the blocks it took under the lock, before it reports them).
final class BackgroundChecksum: @unchecked Sendable {
    private let base: UnsafeRawPointer
    /// 256 KiB: about 45 µs of CRC, and at most 11 blocks (11 combines) for a 2.8 MB file.
    private let block = 1 << 18
    private let condition = NSCondition()
    // Guarded by `condition`: the bytes taken from each end, whether the helper is computing a
    // block, its CRC of the bytes it finished (`[0, front)` when it is not computing), and
    // whether it must stop.
    private var front = 0
    private var back: Int
    private var helperBusy = false
    private var frontCRC: UInt32 = 0
    /// The first non-finite float in the helper's blocks (they come in order, so the first
    /// found is the first).
    private var frontNonFinite: Int?
    private var stopped = false

    /// What the pass found: the CRC-32 of the buffer, and the byte offset of its first float32
    /// (4-byte words from the start) that is NaN or infinite, if any.
    struct Result: Equatable {
        var crc: UInt32
        var firstNonFinite: Int?
    }

    /// Starts the helper on `bytes`, when they are at least two blocks long (below that a
    /// thread costs more than it saves, and `finish()` computes everything).
    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 64)!
        back = bytes.count
        if bytes.count >= 2 * block { Self.startThread(self) }
    }

    /// Runs the helper on a new thread: in a new process its first block starts about 100 µs
    /// sooner than on Dispatch's first worker thread (docs/benchmarks.md).
    private static func startThread(_ checksum: BackgroundChecksum) {
        #if canImport(Glibc)
            let context = Unmanaged.passRetained(checksum).toOpaque()
            var thread = pthread_t()
            let started = pthread_create(
                &thread, nil,
                { context in
                    Unmanaged<BackgroundChecksum>.fromOpaque(context!).takeRetainedValue().runHelper()
                    return nil
                }, context)
            if started == 0 {
                pthread_detach(thread)
                return
            }
            Unmanaged<BackgroundChecksum>.fromOpaque(context).release()
        #endif
        DispatchQueue.global(qos: .userInitiated).async { checksum.runHelper() }
    }

    private func runHelper() {
        condition.lock()
        while !stopped && front < back {
            let start = front, end = min(front + block, back)
            front = end
            helperBusy = true
            condition.unlock()
            let bytes = UnsafeRawBufferPointer(start: base + start, count: end - start)
            let piece = CRC32.checksum(bytes)
            let bad = frontNonFinite == nil ? ModelFile.firstNonFinite(bytes).map { start + $0 } : nil
            condition.lock()
            frontCRC = start == 0 ? piece : CRC32.combine(frontCRC, piece, lengthB: end - start)
            if frontNonFinite == nil { frontNonFinite = bad }
            helperBusy = false
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Computes what the helper has not taken, waits for the block it is computing (if any),
    /// and returns the CRC of the buffer and its first non-finite float.
    func finish() -> Result {
        var backCRC: UInt32 = 0, backLength = 0
        var backNonFinite: Int?  // blocks come from the back: the last found is the first
        condition.lock()
        while back > front {
            let end = back, start = max(back - block, front)
            back = start
            condition.unlock()
            let bytes = UnsafeRawBufferPointer(start: base + start, count: end - start)
            let crc = CRC32.checksum(bytes)
            if let bad = ModelFile.firstNonFinite(bytes) { backNonFinite = start + bad }
            backCRC = backLength == 0 ? crc : CRC32.combine(crc, backCRC, lengthB: backLength)
            backLength += end - start
            condition.lock()
        }
        while helperBusy { condition.wait() }
        stopped = true
        let (frontLength, crc) = (front, frontCRC)
        let nonFinite = frontNonFinite ?? backNonFinite
        condition.unlock()
        if backLength == 0 { return Result(crc: crc, firstNonFinite: nonFinite) }
        return Result(
            crc: frontLength == 0 ? backCRC : CRC32.combine(crc, backCRC, lengthB: backLength), firstNonFinite: nonFinite)
    }

    /// Stops the helper after the block it is computing, and waits for that block.
    func cancel() {
        condition.lock()
        stopped = true
        while helperBusy { condition.wait() }
        condition.unlock()
    }
}
