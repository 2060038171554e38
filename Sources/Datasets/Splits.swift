import PoseCore

/// Train/validation/test splits of sequence indices.
public enum Splits {
    /// A seeded, stratified split of `indices` of `dataset` into two parts, `fraction` of each
    /// class going to the second part. When sequences have groups (subjects, sessions), whole
    /// groups are assigned so that no group lands on both sides.
    public static func stratified(
        _ dataset: Dataset, indices: [Int], fraction: Double, seed: UInt64
    ) -> (first: [Int], second: [Int]) {
        var g = SeededGenerator(seed: seed)
        let hasGroups = indices.contains { dataset.sequences[$0].group != nil }
        if hasGroups {
            // Assign groups, ordered by their majority class, round-robin by target share.
            var groups: [String: [Int]] = [:]
            for i in indices { groups[dataset.sequences[i].group ?? "#\(i)", default: []].append(i) }
            var names = groups.keys.sorted()
            names.seededShuffle(using: &g)
            let target = Int((Double(indices.count) * fraction).rounded())
            var second: [Int] = [], first: [Int] = []
            for name in names {
                let members = groups[name]!
                if second.count + members.count / 2 < target { second += members } else { first += members }
            }
            return (first.sorted(), second.sorted())
        }
        var byClass: [String: [Int]] = [:]
        for i in indices { byClass[dataset.sequences[i].label ?? "", default: []].append(i) }
        var first: [Int] = [], second: [Int] = []
        for label in byClass.keys.sorted() {
            var members = byClass[label]!
            members.seededShuffle(using: &g)
            let k = Int((Double(members.count) * fraction).rounded())
            second += members.prefix(k)
            first += members.dropFirst(k)
        }
        return (first.sorted(), second.sorted())
    }
}
