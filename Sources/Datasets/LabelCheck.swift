extension Dataset {
    /// The labels of sequences (of `split`, or all) that are not among `classes` (a model's,
    /// say), each with its number of sequences, sorted by label. Unlabeled sequences are skipped.
    public func labels(outside classes: [String], split: String? = nil) -> [(label: String, sequences: Int)] {
        let known = Set(classes)
        var counts: [String: Int] = [:]
        for s in sequences where split == nil || s.split == split {
            if let label = s.label, !known.contains(label) { counts[label, default: 0] += 1 }
            for label in Set(s.segments.map(\.label)) where !known.contains(label) { counts[label, default: 0] += 1 }
        }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
