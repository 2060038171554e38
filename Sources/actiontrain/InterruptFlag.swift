import Foundation

/// Set from a signal handler (Ctrl-C's SIGINT, and for a live stream SIGTERM, SIGHUP and SIGQUIT too), read by the
/// training loop between batches and by `predict --stream` between lines.
///
/// The handler is a plain C signal handler that only counts (async-signal-safe: a store to a
/// global, `write`, `_exit`). A dispatch signal source is not used: libdispatch installs its
/// own handler once per process, and restoring the previous disposition after a run left later
/// runs in the same process deaf to Ctrl-C.
///
/// `@unchecked Sendable`: it has no stored state. The count and the two messages are globals
/// that a run sets before it installs the handler and the handler only reads (the count is an
/// `Int32` whose loads and stores do not tear, as a C signal handler's flag is used).
final class InterruptFlag: @unchecked Sendable {
    var isRaised: Bool { signalCount > 0 }

    /// Routes SIGINT to this flag until `stopWatching`. A second Ctrl-C exits at once (the
    /// last checkpoint on disk is complete: writes are atomic). Interrupted system calls restart.
    func watchSIGINT() -> SignalWatch {
        watch(
            [SIGINT], restartCalls: true, first: "\nactiontrain: Ctrl-C, saving a checkpoint after this batch...\n",
            second: "\nactiontrain: second Ctrl-C, exiting without a new checkpoint\n")
    }

    /// Routes `signals` to this flag until `stopWatching`: the first prints `first`, a second
    /// prints `second` and exits with 130 at once. Without `restartCalls` a system call the
    /// signal interrupts fails with EINTR (a read of stdin waiting for a line returns).
    func watch(_ signals: [Int32], restartCalls: Bool, first: StaticString, second: StaticString) -> SignalWatch {
        signalCount = 0
        (firstMessage, secondMessage) = (first, second)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handleSignal
        sigemptyset(&action.sa_mask)
        action.sa_flags = restartCalls ? Int32(SA_RESTART) : 0
        return SignalWatch(
            previous: signals.map { s in
                var old = sigaction()
                sigaction(s, &action, &old)
                return (s, old)
            })
    }

    struct SignalWatch {
        let previous: [(signal: Int32, action: sigaction)]
    }

    /// Puts back the handlers found before.
    static func stopWatching(_ watch: SignalWatch) {
        for var p in watch.previous { sigaction(p.signal, &p.action, nil) }
    }
}

/// Signals received while a run watches; written only by `handleSignal`.
nonisolated(unsafe) private var signalCount: Int32 = 0
/// What the handler writes at the first and second signal (set before it is installed).
nonisolated(unsafe) private var firstMessage: StaticString = ""
nonisolated(unsafe) private var secondMessage: StaticString = ""

private func handleSignal(_: Int32) {
    signalCount &+= 1
    let message = signalCount > 1 ? secondMessage : firstMessage
    _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    if signalCount > 1 { _exit(130) }
}
