import ActionTrain
import Foundation

#if ACTIONTRAIN_MPI
    import MPICollective
#endif

/// The ranks this process runs with: one, or those `mpirun` / `srun` started when the tool was
/// built with `ACTIONTRAIN_MPI=1` (docs/distributed.md). Rank 0 prints; the others print only
/// their errors, prefixed with their rank. An error on any rank of several ends them all.
enum Job {
    /// `nonisolated(unsafe)`: set once by `start`, on the main thread before any work starts,
    /// and only read afterwards.
    nonisolated(unsafe) private(set) static var group: Collective = SingleProcess()

    /// The rank count a launcher announced in the environment: `mpirun` (Open MPI), PMI-2
    /// (`srun --mpi=pmi2`, MPICH); 1 when started directly.
    static var launchedRanks: Int {
        let env = ProcessInfo.processInfo.environment
        return ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].lazy.compactMap { env[$0].flatMap(Int.init) }.first ?? 1
    }

    /// True when a launcher started this process: a known rank count above 1, or a PMIx rank
    /// (`srun --mpi=pmix`), whose count MPI tells.
    static var launched: Bool { launchedRanks > 1 || ProcessInfo.processInfo.environment["PMIX_RANK"] != nil }

    /// Joins the launcher's ranks; returns an error message when that is impossible.
    static func start(out: inout Output) -> String? {
        guard launched else { return nil }
        #if ACTIONTRAIN_MPI
            do {
                group = try MPIGroup()
            } catch {
                return "cannot start MPI: \(error)"
            }
            if group.rank > 0 {
                let prefix = "rank \(group.rank): "
                let note = out.note
                out.write = { _ in }
                out.note = { if $0.hasPrefix("error:") || $0.hasPrefix("interrupted") { note(prefix + $0) } }
                out.isTerminal = false
            }
            return nil
        #else
            guard launchedRanks > 1 else { return nil }
            return "started as one of \(launchedRanks) MPI ranks, but this actiontrain was built without MPI; "
                + "build it with ACTIONTRAIN_MPI=1 (docs/distributed.md), or run it without mpirun"
        #endif
    }

    /// Commands that share their work between ranks; the others would only repeat it.
    static let distributedCommands: Set<String> = ["fit", "sweep"]

    /// Why `command` cannot run on this job's ranks, or nil when it can.
    static func refuse(_ command: String?) -> String? {
        guard group.size > 1, let command, !distributedCommands.contains(command) else { return nil }
        return "'\(command)' runs in one process; of the commands only fit and sweep use several MPI ranks. Run it without mpirun"
    }

    /// Ends the job: normally, or, after an error on this rank of several, every rank with `code`.
    static func end(code: Int32) -> Never {
        #if ACTIONTRAIN_MPI
            if let mpi = group as? MPIGroup {
                if code != 0 && mpi.size > 1 { mpi.abort(code: code) }
                mpi.finish()
            }
        #endif
        exit(code)
    }
}
