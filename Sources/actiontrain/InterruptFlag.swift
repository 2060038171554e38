import Foundation

/// Set from a SIGINT handler, read by the training loop between batches.
///
/// The handler is a plain C signal handler that only counts (async-signal-safe: a store to a
/// global, `write`, `_exit`). A dispatch signal source is not used: libdispatch installs its
/// own handler once per process, and restoring the previous disposition after a run left later
/// runs in the same process deaf to Ctrl-C.
///
/// `@unchecked Sendable`: it has no stored state. The count is a global that the signal
/// handler increments and a run resets before it installs the handler, an `Int32` whose loads
/// and stores do not tear, as a C signal handler's flag is used.
final class InterruptFlag: @unchecked Sendable {
    var isRaised: Bool { sigintCount > 0 }

    /// Routes SIGINT to this flag until `stopWatching`. A second Ctrl-C exits at once (the
    /// last checkpoint on disk is complete: writes are atomic).
    func watchSIGINT() -> SignalWatch {
        sigintCount = 0
        return SignalWatch(previous: signal(SIGINT, handleSIGINT))
    }

    struct SignalWatch {
        let previous: (@convention(c) (Int32) -> Void)?
    }

    /// Puts back the SIGINT handler found before.
    static func stopWatching(_ watch: SignalWatch) {
        signal(SIGINT, watch.previous)
    }
}

/// SIGINTs received while a run watches; written only by `handleSIGINT`.
nonisolated(unsafe) private var sigintCount: Int32 = 0

private func handleSIGINT(_: Int32) {
    sigintCount &+= 1
    let message: StaticString =
        sigintCount > 1
        ? "\nactiontrain: second Ctrl-C, exiting without a new checkpoint\n"
        : "\nactiontrain: Ctrl-C, saving a checkpoint after this batch...\n"
    _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    if sigintCount > 1 { _exit(130) }
}
