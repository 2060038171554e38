/// The processes of one job and the exchanges the library needs between them: a data-parallel
/// fit (`Trainer`) gathers every rank's gradient sum each step, a sweep gathers its results.
///
/// The default package knows one implementation, `SingleProcess`; the MPI one lives in the
/// `MPICollective` target, built only when asked (docs/distributed.md, "Building"). The
/// exchanges move data and never add: the caller sums what it receives in rank order, so the
/// result is the same bits on every rank and equal to what one process summing the same parts
/// in the same order gets, whatever algorithms the transport uses.
///
/// Every rank must make the same calls in the same order. A failed exchange throws
/// `CollectiveError`; the caller then ends the whole job (a rank that returns alone would
/// leave the others waiting).
public protocol Collective: AnyObject {
    /// This process's index, 0 ..< size. Rank 0 alone writes files.
    var rank: Int { get }
    var size: Int { get }
    /// Every rank gives `count` floats; `receive [size, count]` gets rank r's at `r * count`.
    func allGather(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) throws
    /// Every rank gives `size` blocks of `count` floats, block j for rank j; `receive [size,
    /// count]` gets rank r's block for this rank at `r * count`.
    func allToAll(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) throws
    /// Every rank gives some bytes (any length); every rank gets all of them, in rank order.
    func allGather(bytes: [UInt8]) throws -> [[UInt8]]
}

/// The job of one process: the exchanges copy.
public final class SingleProcess: Collective {
    public init() {}
    public var rank: Int { 0 }
    public var size: Int { 1 }
    public func allGather(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) {
        receive.update(from: send, count: count)
    }
    public func allToAll(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) {
        receive.update(from: send, count: count)
    }
    public func allGather(bytes: [UInt8]) -> [[UInt8]] { [bytes] }
}

public enum CollectiveError: Error, Equatable, CustomStringConvertible {
    /// An exchange failed (a rank died or the network failed); `reason` is the transport's.
    case exchangeFailed(rank: Int, operation: String, reason: String)
    /// The ranks do not run the same job (different config, data or code): what differs.
    case ranksDisagree(String)

    public var description: String {
        switch self {
        case .exchangeFailed(let rank, let operation, let reason):
            return "rank \(rank): the \(operation) exchange failed (\(reason)); another rank has probably died. The job stops; resume it from the last checkpoint with the same number of ranks"
        case .ranksDisagree(let what): return "the ranks do not run the same job: \(what)"
        }
    }
}

extension Collective {
    /// Checks that every rank gives the same `value` (e.g. a hash of the config and data);
    /// throws `CollectiveError.ranksDisagree` naming `what` and the first rank that differs.
    public func requireSame(_ value: String, what: String) throws {
        let all = try allGather(bytes: Array(value.utf8)).map { String(decoding: $0, as: UTF8.self) }
        if let r = all.firstIndex(where: { $0 != all[0] }) {
            throw CollectiveError.ranksDisagree("\(what) is '\(all[0])' on rank 0 and '\(all[r])' on rank \(r)")
        }
    }

}
