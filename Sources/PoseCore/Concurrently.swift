import Dispatch

/// Runs `body(i)` for every `i` in `0..<iterations` on Dispatch's threads and returns when all
/// have run: the package's one wrapper of `DispatchQueue.concurrentPerform`.
///
/// Unlike Dispatch's, `body` need not be `@Sendable`: it may capture pointers, buffers and
/// classes, on the caller's contract that call `i` writes only what belongs to `i` (its slice
/// of an output, its own scratch) and reads only what no call writes. That contract, which the
/// compiler cannot check, is what makes it race-free; `concurrentPerform` returns only after
/// every call has finished, so the caller sees all their writes.
public func concurrentlyPerform(iterations: Int, _ body: (Int) -> Void) {
    withoutActuallyEscaping(body) { body in
        let work = DisjointWork(body: body)
        DispatchQueue.concurrentPerform(iterations: iterations) { work.body($0) }
    }
}

/// `@unchecked Sendable`: see `concurrentlyPerform` (each call touches only its own part).
private struct DisjointWork: @unchecked Sendable {
    let body: (Int) -> Void
}
