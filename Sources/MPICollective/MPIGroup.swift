import ActionTrain
import CMPI

/// `Collective` over Open MPI's `MPI_COMM_WORLD`: the processes `mpirun` (or Slurm's `srun`)
/// started. Built only with `ACTIONTRAIN_MPI=1` (docs/distributed.md).
///
/// Exchanges are `MPI_Alltoall` and `MPI_Allgather(v)`, never MPI reductions: the caller sums
/// what it receives in rank order, so no reduction order inside MPI can change a result. Errors are returned
/// (`MPI_ERRORS_RETURN`), not fatal, and become `CollectiveError`; the caller then calls
/// `abort` so that no rank waits for a dead one. MPI calls come from one thread only
/// (`MPI_THREAD_FUNNELED`); the compute threads never call MPI.
public final class MPIGroup: Collective {
    public let rank: Int
    public let size: Int
    private let world = cmpi_world()

    /// Initialises MPI (once per process) and joins the world.
    public init() throws {
        var provided: Int32 = 0
        var ready: Int32 = 0
        MPI_Initialized(&ready)
        if ready == 0 {
            try Self.check(MPI_Init_thread(nil, nil, cmpi_thread_funneled(), &provided), rank: -1, "MPI_Init")
        }
        MPI_Comm_set_errhandler(world, cmpi_errors_return())
        var r: Int32 = 0, n: Int32 = 0
        try Self.check(MPI_Comm_rank(world, &r), rank: -1, "MPI_Comm_rank")
        try Self.check(MPI_Comm_size(world, &n), rank: Int(r), "MPI_Comm_size")
        rank = Int(r)
        size = Int(n)
    }

    public func allGather(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) throws {
        let c = Int32(count)
        try Self.check(MPI_Allgather(send, c, cmpi_float(), receive, c, cmpi_float(), world), rank: rank, "gradient")
    }

    public func allToAll(_ send: UnsafePointer<Float>, count: Int, into receive: UnsafeMutablePointer<Float>) throws {
        let c = Int32(count)
        try Self.check(MPI_Alltoall(send, c, cmpi_float(), receive, c, cmpi_float(), world), rank: rank, "gradient")
    }

    public func allGather(bytes: [UInt8]) throws -> [[UInt8]] {
        var mine = Int32(bytes.count)
        var counts = [Int32](repeating: 0, count: size)
        try Self.check(MPI_Allgather(&mine, 1, cmpi_int(), &counts, 1, cmpi_int(), world), rank: rank, "size")
        var offsets = [Int32](repeating: 0, count: size)
        for r in 1..<max(1, size) { offsets[r] = offsets[r - 1] + counts[r - 1] }
        var all = [UInt8](repeating: 0, count: Int(counts.reduce(0, +)))
        try bytes.withUnsafeBufferPointer { b in
            try Self.check(
                MPI_Allgatherv(b.baseAddress, mine, cmpi_byte(), &all, counts, offsets, cmpi_byte(), world), rank: rank, "results")
        }
        return (0..<size).map { r in Array(all[Int(offsets[r])..<Int(offsets[r] + counts[r])]) }
    }

    /// Ends MPI normally (every rank).
    public func finish() { MPI_Finalize() }

    /// Ends every rank of the job with `code` (after an error on this one).
    public func abort(code: Int32) -> Never {
        MPI_Abort(world, code)
        fatalError("MPI_Abort returned")
    }

    static func check(_ code: Int32, rank: Int, _ operation: String) throws {
        guard code != cmpi_success() else { return }
        var text = [CChar](repeating: 0, count: Int(cmpi_max_error_string()) + 1)
        var length: Int32 = 0
        MPI_Error_string(code, &text, &length)
        throw CollectiveError.exchangeFailed(rank: rank, operation: operation, reason: String(cString: text))
    }
}
