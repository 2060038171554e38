import Dispatch
import Foundation
import PoseCore

/// The CRC-32 of a buffer, started on a helper thread while the caller does other work (a model
/// file's header checks), which the caller then joins: the helper takes blocks from the front,
/// the caller from the back, until they meet; the two parts are joined with `CRC32.combine`.
/// Whoever is free computes, so the split adapts to how long the caller's own work took.
///
/// The buffer must stay valid until `finish()` (or `cancel()`) returns, which waits for the
/// helper to stop.
final class BackgroundChecksum: @unchecked Sendable {
    private let base: UnsafeRawPointer
    private let count: Int
    /// 128 KiB: about 25 µs of CRC, so the two ends meet within that of each other.
    private let block = 1 << 17
    private let lock = NSLock()
    private let helperDone = DispatchSemaphore(value: 0)
    // Guarded by `lock`: the bytes claimed from each end, and cancellation.
    private var front = 0
    private var back: Int
    private var cancelled = false
    /// The helper's CRC of `[0, front)`; read only after `helperDone`.
    private var frontCRC: UInt32 = 0

    /// Starts the helper on `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 64)!
        count = bytes.count
        back = bytes.count
        DispatchQueue.global(qos: .userInitiated).async { self.runHelper() }
    }

    private func runHelper() {
        var crc: UInt32 = 0
        while true {
            lock.lock()
            let start = front, end = min(front + block, back)
            if cancelled || start >= end {
                lock.unlock()
                break
            }
            front = end
            lock.unlock()
            let piece = CRC32.checksum(UnsafeRawBufferPointer(start: base + start, count: end - start))
            crc = start == 0 ? piece : CRC32.combine(crc, piece, lengthB: end - start)
        }
        frontCRC = crc
        helperDone.signal()
    }

    /// Computes what the helper has not taken, waits for it, and returns the CRC of the buffer.
    func finish() -> UInt32 {
        var backCRC: UInt32 = 0, backLength = 0
        while true {
            lock.lock()
            let end = back, start = max(back - block, front)
            if start >= end {
                lock.unlock()
                break
            }
            back = start
            lock.unlock()
            let crc = CRC32.checksum(UnsafeRawBufferPointer(start: base + start, count: end - start))
            backCRC = backLength == 0 ? crc : CRC32.combine(crc, backCRC, lengthB: backLength)
            backLength += end - start
        }
        helperDone.wait()
        return backLength == 0 ? frontCRC : CRC32.combine(frontCRC, backCRC, lengthB: backLength)
    }

    /// Stops the helper after its current block and waits for it.
    func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
        helperDone.wait()
    }
}
