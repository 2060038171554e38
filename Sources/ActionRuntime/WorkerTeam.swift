import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Helper threads that run the parts of `BLAS.parallel` with little hand-off latency.
///
/// `DispatchQueue.concurrentPerform` wakes a pool thread for every call, which costs 20-40 µs
/// on the reference machine: as much as a whole batch-1 convolution. These helpers instead
/// spin (yielding the CPU) for up to `spinSeconds` after each job before they block, like
/// OpenBLAS's own threads, so back-to-back jobs (the layers of one step, consecutive steps,
/// a stream of batch-1 calls) start within a microsecond. The caller runs parts too, and
/// parts are claimed in order from a counter; which thread runs a part never changes its
/// result. One job at a time: a caller that finds the team busy (another thread's job) runs
/// its parts itself.
///
/// `@unchecked Sendable` because its state is shared between threads in ways the compiler
/// cannot see: `state`, `finished` and `busy` are atomics; `sleepers` and `helpers` are only
/// touched with `lock` held; `body` is written by the one caller that won `busy` before it
/// publishes the job (a releasing store of `state`) and cleared only after every part has
/// reported `finished` (acquiring loads), so helpers read it only while it is valid. The parts
/// themselves capture non-`Sendable` pointers and buffers on `BLAS.parallel`'s contract that
/// each part writes only its own outputs.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
final class WorkerTeam: @unchecked Sendable {
    static let shared = WorkerTeam()

    /// How long an idle helper spins before it blocks.
    static let spinSeconds = 0.002

    /// The current job and its claims, in one word so that a claim is valid only for the job
    /// it was made for: `job << 32 | parts << 16 | claimed`.
    private let state = Atomic<Int>(0)
    private let finished = Atomic<Int>(0)  // parts of the current job done
    private let busy = Atomic<Bool>(false)
    private var body: ((Int) -> Void)?  // written before the job is published
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var sleepers = 0  // guarded by lock
    private var helpers = 0  // guarded by lock

    private init() {
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
    }

    /// Runs `body(p)` for `p` in `0..<parts` (at most 2^15), on the caller and up to
    /// `parts − 1` helpers.
    func run(_ parts: Int, _ body: (Int) -> Void) {
        guard parts > 1, parts < 1 << 15,
            busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else {
            for p in 0..<parts { body(p) }
            return
        }
        withoutActuallyEscaping(body) { body in
            self.body = body
            finished.store(0, ordering: .relaxed)
            let job = (state.load(ordering: .relaxed) >> 32) &+ 1
            pthread_mutex_lock(lock)
            while helpers < parts - 1 { startHelper() }
            state.store(job << 32 | parts << 16, ordering: .releasing)
            if sleepers > 0 { pthread_cond_broadcast(wake) }
            pthread_mutex_unlock(lock)
            work(job: job)
            var spins = 0
            while finished.load(ordering: .acquiring) < parts {
                spins += 1
                if spins & 63 == 0 { sched_yield() }
            }
            self.body = nil
        }
        busy.store(false, ordering: .releasing)
    }

    /// Claims and runs parts of `job` until none are left (or another job replaced it).
    private func work(job: Int) {
        while true {
            let s = state.load(ordering: .acquiring)
            let parts = (s >> 16) & 0xFFFF, p = s & 0xFFFF
            guard s >> 32 == job, p < parts else { return }
            guard state.compareExchange(expected: s, desired: s + 1, ordering: .acquiringAndReleasing).exchanged else {
                continue
            }
            // The claim succeeded, so the job is not finished and its caller is waiting.
            body!(p)
            finished.add(1, ordering: .releasing)
        }
    }

    /// Called with `lock` held.
    private func startHelper() {
        helpers += 1
        let seen = state.load(ordering: .relaxed) >> 32
        let thread = Thread { [unowned self] in self.helperLoop(seen: seen) }
        thread.name = "actiontrain-worker"
        thread.start()
    }

    private func helperLoop(seen start: Int) {
        var seen = start
        while true {
            var spins = 0
            var spinStart: UInt64 = 0
            while state.load(ordering: .acquiring) >> 32 == seen {
                spins += 1
                guard spins & 63 == 0 else { continue }
                let now = DispatchTime.now().uptimeNanoseconds
                if spinStart == 0 { spinStart = now }
                if Double(now - spinStart) / 1e9 < WorkerTeam.spinSeconds {
                    sched_yield()
                    continue
                }
                pthread_mutex_lock(lock)
                while state.load(ordering: .acquiring) >> 32 == seen {
                    sleepers += 1
                    pthread_cond_wait(wake, lock)
                    sleepers -= 1
                }
                pthread_mutex_unlock(lock)
            }
            seen = state.load(ordering: .acquiring) >> 32
            work(job: seen)
        }
    }
}
