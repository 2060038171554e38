import Foundation
import PoseCore

/// Dataset checks before training: statistics (`Lint.inspect`) and typed warnings
/// (`Lint.check`) about problems that make a model learn an artefact or mix train and test
/// data. Nothing here throws: a dataset that loaded can always be inspected.
public enum Lint {
    /// Thresholds and facts the dataset may not carry.
    public struct Options: Sendable {
        /// Image size `[width, height]` in pixels; overrides the dataset's.
        public var imageSize: [Double]?
        /// Window length in frames: sequences shorter than this are reported (they get padded).
        public var windowFrames: Int?
        /// Joints absent in more than this share of frames are reported.
        public var missingRateThreshold: Double = 0.5
        /// Empty frames (nobody in view) above this share of all frames are reported.
        public var emptyFrameThreshold: Double = 0.1
        /// A largest/smallest class size ratio above this is reported.
        public var imbalanceRatio: Double = 5

        public init(imageSize: [Double]? = nil, windowFrames: Int? = nil) {
            self.imageSize = imageSize
            self.windowFrames = windowFrames
        }
    }

    /// The warnings of `inspect`.
    public static func check(_ dataset: Dataset, options: Options = Options()) -> [LintWarning] {
        inspect(dataset, options: options).warnings
    }

    /// Statistics and warnings for a dataset (one pass over the data, plus hashing for
    /// duplicates).
    public static func inspect(_ d: Dataset, options: Options = Options()) -> DatasetInspection {
        let noSplit = DatasetInspection.noSplit
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        var warnings: [LintWarning] = []
        let seqs = d.sequences
        if seqs.isEmpty { warnings.append(.noSequences) }

        // Classes per split.
        let splitNames = DatasetInspection.ordered(Set(seqs.map { $0.split ?? noSplit }))
        var counts: [String: [String: Int]] = [:]  // class -> split -> count
        var unlabeled: [String] = []
        for s in seqs {
            guard let l = s.label else {
                unlabeled.append(s.id)
                continue
            }
            counts[l, default: [:]][s.split ?? noSplit, default: 0] += 1
        }
        let classNames = d.classes + counts.keys.filter { !d.classes.contains($0) }.sorted()
        let classRows = classNames.map { c in
            DatasetInspection.ClassRow(name: c, total: counts[c]?.values.reduce(0, +) ?? 0, perSplit: counts[c] ?? [:])
        }
        if let first = unlabeled.first { warnings.append(.unlabeled(count: unlabeled.count, example: first)) }
        for row in classRows where row.total == 0 { warnings.append(.classWithoutSequences(class: row.name)) }
        for split in splitNames where split != noSplit {
            for row in classRows where row.total > 0 && row.perSplit[split] == nil {
                warnings.append(.classMissingFromSplit(class: row.name, split: split))
            }
        }
        let sizes = classRows.filter { $0.total > 0 }
        if let big = sizes.max(by: { $0.total < $1.total }), let small = sizes.min(by: { $0.total < $1.total }),
            Double(big.total) > options.imbalanceRatio * Double(small.total)
        {
            warnings.append(
                .classImbalance(largest: big.name, largestCount: big.total, smallest: small.name, smallestCount: small.total))
        }

        // Ids.
        var idCounts: [String: Int] = [:]
        for s in seqs { idCounts[s.id, default: 0] += 1 }
        for (id, n) in idCounts.sorted(by: { $0.key < $1.key }) where n > 1 { warnings.append(.duplicateIds(id: id, count: n)) }

        // Frames, joints, values.
        var missing = [Int](repeating: 0, count: J)
        var totalFrames = 0, emptyFrames = 0, nonFinite = 0
        var firstNonFinite: (String, Int, Int)? = nil
        var emptySequences: [String] = []
        let imageSize = options.imageSize ?? d.imageSize
        let checksImage = D == 2 && d.skeleton.units == .pixels && imageSize?.count == 2
        var outOfImage = 0, presentPoints = 0
        var firstOutside: (String, Int, Int)? = nil
        var rates: [Double] = []
        var shortest = Int.max, short = 0
        for s in seqs {
            let n = s.frameCount
            totalFrames += n
            if n == 0 { emptySequences.append(s.id) }
            if let w = options.windowFrames, n < w {
                short += 1
                shortest = min(shortest, n)
            }
            for f in 0..<n {
                var seen = false
                for j in 0..<J {
                    let i = f * J + j
                    guard s.present[i] != 0 else {
                        missing[j] += 1
                        continue
                    }
                    seen = true
                    presentPoints += 1
                    var finite = true
                    for k in 0..<D where !s.coordinates[i * D + k].isFinite {
                        nonFinite += 1
                        finite = false
                    }
                    if !finite && firstNonFinite == nil { firstNonFinite = (s.id, f, j) }
                    if checksImage && finite {
                        let x = Double(s.coordinates[i * D]), y = Double(s.coordinates[i * D + 1])
                        if x < 0 || y < 0 || x > imageSize![0] || y > imageSize![1] {
                            outOfImage += 1
                            if firstOutside == nil { firstOutside = (s.id, f, j) }
                        }
                    }
                }
                if !seen { emptyFrames += 1 }
            }
            for e in s.events where e < 0 || e >= n {
                warnings.append(.eventOutOfRange(sequence: s.id, event: e, frames: n))
            }
            if let ts = s.timestamps, n > 1 {
                var deltas: [Double] = []
                var equal = 0
                for f in 1..<n {
                    let dt = ts[f] - ts[f - 1]
                    if !dt.isFinite {
                        warnings.append(.badTimestamps(sequence: s.id, frame: f, reason: "NaN or infinite timestamp"))
                        break
                    }
                    if dt < 0 {
                        warnings.append(.badTimestamps(sequence: s.id, frame: f, reason: "timestamps go backwards"))
                        break
                    }
                    if dt == 0 { equal += 1 } else { deltas.append(dt) }
                }
                if equal > 0 {
                    warnings.append(
                        .badTimestamps(sequence: s.id, frame: 0, reason: "\(equal) frames repeat the previous frame's timestamp"))
                }
                if !deltas.isEmpty { rates.append(1 / median(deltas)) }
            }
        }
        if let (id, f, j) = firstNonFinite {
            warnings.append(.nonFinite(count: nonFinite, sequence: id, frame: f, joint: d.skeleton.joints[j]))
        }
        if let (id, f, j) = firstOutside {
            warnings.append(
                .outOfImage(
                    count: outOfImage, fraction: Double(outOfImage) / Double(max(presentPoints, 1)), sequence: id, frame: f,
                    joint: d.skeleton.joints[j]))
        }
        if let first = emptySequences.first { warnings.append(.emptySequences(count: emptySequences.count, example: first)) }
        let emptyShare = Double(emptyFrames) / Double(max(totalFrames, 1))
        if emptyFrames > 0 && emptyShare > options.emptyFrameThreshold {
            warnings.append(.emptyFrames(count: emptyFrames, fraction: emptyShare))
        }
        let jointRows = (0..<J).map { j in
            DatasetInspection.JointRow(
                name: d.skeleton.joints[j], missing: missing[j], missingRate: Double(missing[j]) / Double(max(totalFrames, 1)))
        }
        if totalFrames > 0 {
            let never = jointRows.filter { $0.missing == totalFrames }.map(\.name)
            if !never.isEmpty { warnings.append(.jointsNeverSeen(joints: never)) }
            for row in jointRows where row.missing < totalFrames && row.missingRate > options.missingRateThreshold {
                warnings.append(.jointOftenMissing(joint: row.name, rate: row.missingRate))
            }
        }
        if short > 0, let w = options.windowFrames {
            warnings.append(.shorterThanWindow(count: short, window: w, shortest: shortest))
        }

        // Duplicates (same frames, same presence), and groups across splits.
        let duplicates = findDuplicates(seqs)
        for dup in duplicates {
            warnings.append(.duplicateSequences(ids: dup.ids, splits: dup.splits, labels: dup.labels))
        }
        var groupSplits: [String: Set<String>] = [:]
        for s in seqs { if let g = s.group { groupSplits[g, default: []].insert(s.split ?? noSplit) } }
        let leaks = groupSplits.filter { $0.value.count > 1 }.keys.sorted().map {
            DatasetInspection.GroupLeak(group: $0, splits: groupSplits[$0]!.sorted())
        }
        for l in leaks { warnings.append(.groupInSeveralSplits(group: l.group, splits: l.splits)) }

        let space = CoordinateSpace.measure(d)
        for p in space.problems { warnings.append(.coordinateSpace(p)) }

        let lengths = seqs.map { Double($0.frameCount) }
        return DatasetInspection(
            name: d.name, skeleton: d.skeleton.name, jointCount: J, dimensions: D, units: d.skeleton.units.rawValue,
            sequences: seqs.count, frames: totalFrames, groups: groupSplits.count, splits: splitNames, classes: classRows,
            framesPerSequence: DatasetInspection.Summary(lengths), declaredFrameRate: d.frameRate,
            timestampFrameRate: DatasetInspection.Summary(rates), joints: jointRows, nonFiniteValues: nonFinite,
            imageSize: imageSize, outOfImagePoints: checksImage ? outOfImage : nil, emptyFrames: emptyFrames,
            emptySequences: emptySequences.count, duplicates: duplicates, groupLeaks: leaks, space: space, warnings: warnings)
    }

    /// Sequences with identical frames and presence (at least one frame), in groups of ids.
    static func findDuplicates(_ seqs: [PoseSequence]) -> [DatasetInspection.Duplicate] {
        var buckets: [Int: [Int]] = [:]
        for (i, s) in seqs.enumerated() where s.frameCount > 0 {
            var h = Hasher()
            h.combine(s.frameCount)
            h.combine(s.jointCount)
            for v in s.coordinates { h.combine(v.bitPattern) }
            h.combine(s.present)
            buckets[h.finalize(), default: []].append(i)
        }
        var out: [DatasetInspection.Duplicate] = []
        for members in buckets.values where members.count > 1 {
            var remaining = members
            while let a = remaining.first {
                let same = remaining.filter {
                    seqs[$0].frameCount == seqs[a].frameCount && seqs[$0].present == seqs[a].present
                        && seqs[$0].coordinates.elementsEqual(seqs[a].coordinates) { $0.bitPattern == $1.bitPattern }
                }
                remaining.removeAll { same.contains($0) }
                if same.count > 1 {
                    out.append(
                        DatasetInspection.Duplicate(
                            ids: same.map { seqs[$0].id },
                            splits: Array(Set(same.map { seqs[$0].split ?? DatasetInspection.noSplit })).sorted(),
                            labels: Array(Set(same.map { seqs[$0].label ?? "" })).sorted()))
                }
            }
        }
        return out.sorted { $0.ids.lexicographicallyPrecedes($1.ids) }
    }

    static func median(_ v: [Double]) -> Double {
        let s = v.sorted()
        let m = s.count / 2
        return s.count % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2
    }
}

/// A problem found by `Lint`. Training can proceed, but the model may learn an artefact or
/// be evaluated on data it has seen. `description` says what to do.
public enum LintWarning: Equatable, Sendable, CustomStringConvertible, Encodable {
    case noSequences
    case unlabeled(count: Int, example: String)
    case classWithoutSequences(class: String)
    case classMissingFromSplit(class: String, split: String)
    case classImbalance(largest: String, largestCount: Int, smallest: String, smallestCount: Int)
    case duplicateIds(id: String, count: Int)
    case emptySequences(count: Int, example: String)
    case nonFinite(count: Int, sequence: String, frame: Int, joint: String)
    case outOfImage(count: Int, fraction: Double, sequence: String, frame: Int, joint: String)
    case emptyFrames(count: Int, fraction: Double)
    case jointsNeverSeen(joints: [String])
    case jointOftenMissing(joint: String, rate: Double)
    case eventOutOfRange(sequence: String, event: Int, frames: Int)
    case badTimestamps(sequence: String, frame: Int, reason: String)
    case shorterThanWindow(count: Int, window: Int, shortest: Int)
    case duplicateSequences(ids: [String], splits: [String], labels: [String])
    case groupInSeveralSplits(group: String, splits: [String])
    /// The coordinates contradict the skeleton's units or the Pose contract (`CoordinateSpace`).
    case coordinateSpace(CoordinateProblem)

    /// A stable kebab-case name for scripts.
    public var code: String {
        switch self {
        case .noSequences: return "no-sequences"
        case .unlabeled: return "unlabeled"
        case .classWithoutSequences: return "class-without-sequences"
        case .classMissingFromSplit: return "class-missing-from-split"
        case .classImbalance: return "class-imbalance"
        case .duplicateIds: return "duplicate-ids"
        case .emptySequences: return "empty-sequences"
        case .nonFinite: return "non-finite"
        case .outOfImage: return "out-of-image"
        case .emptyFrames: return "empty-frames"
        case .jointsNeverSeen: return "joints-never-seen"
        case .jointOftenMissing: return "joint-often-missing"
        case .eventOutOfRange: return "event-out-of-range"
        case .badTimestamps: return "bad-timestamps"
        case .shorterThanWindow: return "shorter-than-window"
        case .duplicateSequences: return "duplicate-sequences"
        case .groupInSeveralSplits: return "group-leak"
        case .coordinateSpace(let p): return p.code
        }
    }

    /// True for warnings that mean train and test data may be mixed.
    public var isLeakage: Bool {
        switch self {
        case .groupInSeveralSplits: return true
        case .duplicateSequences(_, let splits, _): return splits.count > 1
        default: return false
        }
    }

    public var description: String {
        func pct(_ x: Double) -> String { String(format: "%.1f%%", x * 100) }
        switch self {
        case .noSequences:
            return "the dataset has no sequences"
        case .unlabeled(let n, let example):
            return "\(n) sequence(s) have no label (e.g. '\(example)'); training needs a label on every sequence"
        case .classWithoutSequences(let c):
            return "class '\(c)' has no sequences; remove it from the class list or add data"
        case .classMissingFromSplit(let c, let split):
            return "class '\(c)' has no sequences in split '\(split)'; its metrics there will be empty"
        case .classImbalance(let big, let nb, let small, let ns):
            return "classes are imbalanced: '\(big)' has \(nb) sequences, '\(small)' only \(ns); consider class weights or more data"
        case .duplicateIds(let id, let n):
            return "sequence id '\(id)' is used \(n) times; ids should be unique"
        case .emptySequences(let n, let example):
            return "\(n) sequence(s) have no frames (e.g. '\(example)'); they give no windows"
        case .nonFinite(let n, let s, let f, let j):
            return "\(n) NaN or infinite coordinate(s), first in sequence '\(s)' frame \(f) joint '\(j)'; mark unseen joints as absent instead"
        case .outOfImage(let n, let fraction, let s, let f, let j):
            return "\(n) point(s) (\(pct(fraction)) of present points) lie outside the image, first in sequence '\(s)' frame \(f) joint '\(j)'; check the image size and coordinate convention (pixels, origin top-left)"
        case .emptyFrames(let n, let fraction):
            return "\(n) frames (\(pct(fraction))) are empty (nobody in view); a class with more of them can be learned from emptiness alone"
        case .jointsNeverSeen(let joints):
            return "joint(s) \(joints.map { "'\($0)'" }.joined(separator: ", ")) are never present; their channels are always zero (use a skeleton without them?)"
        case .jointOftenMissing(let j, let rate):
            return "joint '\(j)' is missing in \(pct(rate)) of frames"
        case .eventOutOfRange(let s, let e, let n):
            return "sequence '\(s)': event frame \(e) is outside its \(n) frames"
        case .badTimestamps(let s, let f, let why):
            return "sequence '\(s)' frame \(f): \(why)"
        case .shorterThanWindow(let n, let w, let shortest):
            return "\(n) sequence(s) are shorter than the \(w)-frame window (shortest \(shortest)); they are padded"
        case .duplicateSequences(let ids, let splits, let labels):
            var s = "sequences \(ids.map { "'\($0)'" }.joined(separator: ", ")) are identical"
            if splits.count > 1 { s += " and sit in different splits (\(splits.joined(separator: ", "))): test data leaks into training" }
            if labels.count > 1 { s += "; they carry different labels (\(labels.joined(separator: ", ")))" }
            return s
        case .groupInSeveralSplits(let g, let splits):
            return "group '\(g)' appears in splits \(splits.joined(separator: ", ")): the same subject/session is on both sides, so test results are optimistic"
        case .coordinateSpace(let p):
            return p.description
        }
    }

    private enum Keys: String, CodingKey {
        case code, message, count, example, `class`, split, largest, largestCount, smallest, smallestCount, id
        case sequence, frame, joint, joints, fraction, rate, event, frames, reason, window, shortest, ids, splits, labels, group
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(code, forKey: .code)
        try c.encode(description, forKey: .message)
        switch self {
        case .noSequences, .coordinateSpace: break
        case .unlabeled(let n, let e), .emptySequences(let n, let e):
            try c.encode(n, forKey: .count)
            try c.encode(e, forKey: .example)
        case .classWithoutSequences(let cl):
            try c.encode(cl, forKey: .class)
        case .classMissingFromSplit(let cl, let s):
            try c.encode(cl, forKey: .class)
            try c.encode(s, forKey: .split)
        case .classImbalance(let b, let nb, let s, let ns):
            try c.encode(b, forKey: .largest)
            try c.encode(nb, forKey: .largestCount)
            try c.encode(s, forKey: .smallest)
            try c.encode(ns, forKey: .smallestCount)
        case .duplicateIds(let id, let n):
            try c.encode(id, forKey: .id)
            try c.encode(n, forKey: .count)
        case .nonFinite(let n, let s, let f, let j):
            try c.encode(n, forKey: .count)
            try c.encode(s, forKey: .sequence)
            try c.encode(f, forKey: .frame)
            try c.encode(j, forKey: .joint)
        case .outOfImage(let n, let fr, let s, let f, let j):
            try c.encode(n, forKey: .count)
            try c.encode(fr, forKey: .fraction)
            try c.encode(s, forKey: .sequence)
            try c.encode(f, forKey: .frame)
            try c.encode(j, forKey: .joint)
        case .emptyFrames(let n, let fr):
            try c.encode(n, forKey: .count)
            try c.encode(fr, forKey: .fraction)
        case .jointsNeverSeen(let joints):
            try c.encode(joints, forKey: .joints)
        case .jointOftenMissing(let j, let r):
            try c.encode(j, forKey: .joint)
            try c.encode(r, forKey: .rate)
        case .eventOutOfRange(let s, let e, let n):
            try c.encode(s, forKey: .sequence)
            try c.encode(e, forKey: .event)
            try c.encode(n, forKey: .frames)
        case .badTimestamps(let s, let f, let r):
            try c.encode(s, forKey: .sequence)
            try c.encode(f, forKey: .frame)
            try c.encode(r, forKey: .reason)
        case .shorterThanWindow(let n, let w, let sh):
            try c.encode(n, forKey: .count)
            try c.encode(w, forKey: .window)
            try c.encode(sh, forKey: .shortest)
        case .duplicateSequences(let ids, let splits, let labels):
            try c.encode(ids, forKey: .ids)
            try c.encode(splits, forKey: .splits)
            try c.encode(labels, forKey: .labels)
        case .groupInSeveralSplits(let g, let splits):
            try c.encode(g, forKey: .group)
            try c.encode(splits, forKey: .splits)
        }
    }
}

/// What `actiontrain inspect` reports about a dataset (its `--json` form, keys sorted).
public struct DatasetInspection: Encodable, Sendable {
    /// The split name used for sequences without one.
    public static let noSplit = "(none)"

    /// Split names in reading order: train, validation, test, others sorted, then `(none)`.
    static func ordered(_ names: Set<String>) -> [String] {
        let known = ["train", "validation", "test"]
        return known.filter(names.contains) + names.subtracting(known + [noSplit]).sorted()
            + (names.contains(noSplit) ? [noSplit] : [])
    }

    public struct ClassRow: Encodable, Sendable, Equatable {
        public var name: String
        public var total: Int
        /// Sequences per split name (`(none)` for sequences without a split).
        public var perSplit: [String: Int]
        public init(name: String, total: Int, perSplit: [String: Int]) {
            self.name = name
            self.total = total
            self.perSplit = perSplit
        }
    }
    public struct Summary: Encodable, Sendable, Equatable {
        public var min: Double
        public var median: Double
        public var max: Double
        init?(_ values: [Double]) {
            guard !values.isEmpty else { return nil }
            self.min = values.min()!
            self.max = values.max()!
            self.median = Lint.median(values)
        }
    }
    public struct JointRow: Encodable, Sendable, Equatable {
        public var name: String
        /// Frames in which the joint is absent.
        public var missing: Int
        /// `missing` / all frames.
        public var missingRate: Double
    }
    public struct Duplicate: Encodable, Sendable, Equatable {
        public var ids: [String]
        public var splits: [String]
        public var labels: [String]
        public init(ids: [String], splits: [String], labels: [String]) {
            self.ids = ids
            self.splits = splits
            self.labels = labels
        }
    }
    public struct GroupLeak: Encodable, Sendable, Equatable {
        public var group: String
        public var splits: [String]
        public init(group: String, splits: [String]) {
            self.group = group
            self.splits = splits
        }
    }

    public var name: String
    public var skeleton: String
    public var jointCount: Int
    public var dimensions: Int
    public var units: String
    public var sequences: Int
    public var frames: Int
    /// Distinct group ids.
    public var groups: Int
    /// Split names present, sorted (`(none)` for sequences without a split).
    public var splits: [String]
    public var classes: [ClassRow]
    public var framesPerSequence: Summary?
    /// The dataset's declared frame rate, if any.
    public var declaredFrameRate: Double?
    /// Per-sequence frame rates from timestamps (1 / median frame interval), if any.
    public var timestampFrameRate: Summary?
    public var joints: [JointRow]
    /// NaN or infinite coordinate values of present joints.
    public var nonFiniteValues: Int
    public var imageSize: [Double]?
    /// Present 2D points outside `[0, width] x [0, height]`; nil when the image size is unknown
    /// or the skeleton is not 2D pixels.
    public var outOfImagePoints: Int?
    /// Frames with no present joint.
    public var emptyFrames: Int
    /// Sequences with no frames.
    public var emptySequences: Int
    public var duplicates: [Duplicate]
    public var groupLeaks: [GroupLeak]
    /// The coordinate space measured from the data.
    public var space: CoordinateSpaceReport
    /// How the file's joint names matched the skeleton when not by its own names
    /// (`JointNameMatch` descriptions, e.g. "alias table vision-raw"); set by the caller that
    /// read the file.
    public var jointNames: [String] = []
    public var warnings: [LintWarning]

    private enum CodingKeys: String, CodingKey {
        case name, skeleton, jointCount, dimensions, units, sequences, frames, groups, splits, classes
        case framesPerSequence, declaredFrameRate, timestampFrameRate, joints, nonFiniteValues, imageSize
        case outOfImagePoints, emptyFrames, emptySequences, duplicates, groupLeaks, space, jointNames, warnings
    }

    /// Every key is written, `null` when a value is unknown.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(skeleton, forKey: .skeleton)
        try c.encode(jointCount, forKey: .jointCount)
        try c.encode(dimensions, forKey: .dimensions)
        try c.encode(units, forKey: .units)
        try c.encode(sequences, forKey: .sequences)
        try c.encode(frames, forKey: .frames)
        try c.encode(groups, forKey: .groups)
        try c.encode(splits, forKey: .splits)
        try c.encode(classes, forKey: .classes)
        try c.encode(framesPerSequence, forKey: .framesPerSequence)
        try c.encode(declaredFrameRate, forKey: .declaredFrameRate)
        try c.encode(timestampFrameRate, forKey: .timestampFrameRate)
        try c.encode(joints, forKey: .joints)
        try c.encode(nonFiniteValues, forKey: .nonFiniteValues)
        try c.encode(imageSize, forKey: .imageSize)
        try c.encode(outOfImagePoints, forKey: .outOfImagePoints)
        try c.encode(emptyFrames, forKey: .emptyFrames)
        try c.encode(emptySequences, forKey: .emptySequences)
        try c.encode(duplicates, forKey: .duplicates)
        try c.encode(groupLeaks, forKey: .groupLeaks)
        try c.encode(space, forKey: .space)
        try c.encode(jointNames, forKey: .jointNames)
        try c.encode(warnings, forKey: .warnings)
    }
}
