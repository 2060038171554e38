import ActionRuntime
import ActionTrain
import PoseCore

/// Ensembles of separately trained networks (`TrainingConfig.ensemble`): `FitRun` trains
/// member m as a complete run of its own on the run's split, with everything random
/// (initialisation, shuffling, augmentation, dropout) drawn from `seed(_:member:)`, and writes
/// one model that averages the members' class probabilities (`network(_:)`).
public enum Ensemble {
    /// Member m's seed: the run's seed for member 0, so that member 0 is the network a run with
    /// `ensemble` 1 trains, bit for bit; for m > 0, `SeededGenerator.derive(seed ^ 0xE45E_4B1E, m)`
    /// (one SplitMix64 step from the seed mixed with m, as the trainer derives its epochs' seeds).
    public static func seed(_ seed: UInt64, member m: Int) -> UInt64 {
        m == 0 ? seed : SeededGenerator.derive(seed ^ 0xE45E_4B1E, UInt64(m))
    }

    /// The config member m trains with: `config` with the member's seed (the split stays the
    /// run's: it is drawn once, from the run's seed).
    public static func config(_ config: TrainingConfig, member m: Int) -> TrainingConfig {
        var c = config
        c.seed = seed(config.seed, member: m)
        return c
    }

    /// One network of trained members: the member itself when there is one, else one
    /// `averageProbabilities` layer whose members are the members' layers, holding their
    /// parameters in member order.
    public static func network(_ members: [Network]) throws -> Network {
        guard members.count > 1 else { return members[0] }
        let network = try Network(layers: [.averageProbabilities(members.map(\.specs))], input: members[0].inputShape)
        var values: [Float] = []
        values.reserveCapacity(network.parameterCount)
        for m in members { values += UnsafeBufferPointer(start: m.parameters, count: m.parameterCount) }
        values.withUnsafeBufferPointer { network.load(parameters: $0) }
        return network
    }
}
