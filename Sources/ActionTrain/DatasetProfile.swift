import Datasets
import Foundation
import PoseCore

/// What `fit` reads from the training sequences before it chooses a recipe (`Recipe`): the
/// facts each choice depends on, measured once. Cheap: one pass over the coordinates.
public struct DatasetProfile: Equatable, Sendable {
    public var skeleton: Skeleton
    /// Training sequences with a label, and the classes among them.
    public var sequences: Int
    public var classes: Int
    /// Fewest and median labeled training sequences of a class.
    public var smallestClass: Int
    public var medianClass: Int
    /// Frames per sequence: shortest, median, 90th percentile and longest.
    public var frames: Lengths
    /// Frames per second: the dataset's, else from the timestamps (median step), else nil.
    public var frameRate: Double?
    /// Share of training sequences with labeled events.
    public var eventShare: Double
    /// The typical body size in data units: the median over sampled frames of the RMS distance
    /// of the present joints from their mean. 0 when no frame has two present joints.
    public var bodySize: Double
    /// How far bodies sit from the origin, in body sizes: the median over sampled frames of
    /// |mean of the present joints| / bodySize. About 0 for body-centred data (Vision 3D, NATOPS),
    /// large for camera or image coordinates.
    public var offset: Double
    /// Standard deviation of each axis of the joints about their frame's mean (pooled over the
    /// sampled frames), in data units.
    public var axisSpread: [Double]
    /// For a skeleton that names no bones: a tree of the most rigid joint pairs
    /// (`SkeletonGraph.inferred`; when it names no mirror pairs either, with the swaps that let the
    /// tree mirror itself, `MirrorPairs.symmetricTree`), as `[parent, child]` names; empty when the
    /// skeleton has bones.
    public var inferredBones: [[String]]
    /// For a skeleton that names neither bones nor mirror pairs: the left/right pairs of the
    /// inferred tree (`MirrorPairs.inferred`) as `[left, right]` names, the sides of different
    /// limbs (legs, arms) agreeing in the data; empty otherwise. `facingSpread` and `laterality`
    /// read them like named pairs.
    public var inferredMirrorPairs: [[String]]
    /// 3D skeletons with left/right hips or shoulders: how much the direction the bodies face
    /// varies between training sequences, in degrees: the circular standard deviation of each
    /// sequence's mean side vector (right minus left, projected on the horizontal plane of
    /// `verticalAxis`). Small for people facing one camera, large for views that vary. Nil
    /// without such joints or fewer than two measurable sequences.
    public var facingSpread: Double?
    /// Skeletons with mirror pairs: how consistently each class moves one side of the body more
    /// than the other (`Laterality`). Nil without mirror pairs or moving joints.
    public var laterality: Laterality?
    /// The share of joints absent (not seen) in the training frames, 0 to 1.
    public var absentShare: Double
    /// The joint pairs of the relational channel blocks for a large skeleton (`KeyJoints`), or
    /// nil when every pair is kept.
    public var keyPairs: [[String]]?
    /// Data read with `bodies=M` (M > 1): the order its bodies were placed in and why
    /// (`Dataset.bodyOrder`, decided from the whole file by its reader).
    public var bodyOrder: BodyOrder?

    /// Left/right asymmetry of the movement. Per sequence `a = (L − R) / (L + R)`, with L and R
    /// the summed frame-to-frame displacements of the left and right joints of the mirror pairs.
    public struct Laterality: Equatable, Sendable {
        /// Mean |a| over the sequences: 0 when both sides move alike, 1 when only one moves.
        public var asymmetry: Double
        /// `Σ_classes |Σ_{s ∈ class} a_s| / Σ_s |a_s|`: 1 when every class moves the same side
        /// in all its sequences (a mirror image would change the class: "wave the left hand"),
        /// 0 when sides are mixed within classes (left- and right-handed performers: a mirror
        /// image keeps the class).
        public var consistency: Double
    }

    public struct Lengths: Equatable, Sendable {
        public var min: Int, median: Int, p90: Int, max: Int
    }

    /// The median duration of a sequence in seconds, when the frame rate is known.
    public var medianSeconds: Double? { frameRate.map { Double(frames.median) / $0 } }

    /// Profiles the labeled sequences at `indices` of `dataset`. At most `maxFrames` frames
    /// (spread evenly over the sequences) are measured for the body size, offset and spread.
    public init(_ dataset: Dataset, indices: [Int], maxFrames: Int = 20_000, verticalAxis: Int = 1) {
        skeleton = dataset.skeleton
        let labeled = indices.filter { dataset.sequences[$0].label != nil }
        sequences = labeled.count
        var perClass: [String: Int] = [:]
        for i in labeled { perClass[dataset.sequences[i].label!, default: 0] += 1 }
        classes = perClass.count
        let counts = perClass.values.sorted()
        smallestClass = counts.first ?? 0
        medianClass = counts.isEmpty ? 0 : counts[counts.count / 2]
        let lengths = labeled.map { dataset.sequences[$0].frameCount }.sorted()
        func quantile(_ q: Double) -> Int { lengths.isEmpty ? 0 : lengths[min(lengths.count - 1, Int(q * Double(lengths.count)))] }
        frames = Lengths(min: lengths.first ?? 0, median: quantile(0.5), p90: quantile(0.9), max: lengths.last ?? 0)
        frameRate = dataset.frameRate ?? Self.timestampRate(dataset, labeled)
        eventShare = labeled.isEmpty ? 0 : Double(labeled.filter { !dataset.sequences[$0].events.isEmpty }.count) / Double(labeled.count)
        (bodySize, offset, axisSpread) = Self.geometry(dataset, labeled, maxFrames: maxFrames)
        let tree: (edges: [[Int]], lengths: [Double]) = skeleton.bones.isEmpty ? SkeletonGraph.inferredTree(dataset, indices: labeled, maxFrames: maxFrames) : ([], [])
        let names = skeleton.joints
        inferredBones = tree.edges.map { [names[$0[0]], names[$0[1]]] }
        inferredMirrorPairs =
            skeleton.mirrorPairs.isEmpty
            ? Self.oriented(MirrorPairs.inferred(joints: skeleton.jointCount, edges: tree.edges, lengths: tree.lengths), dataset, labeled, maxFrames: maxFrames)
                .map { [names[$0.left], names[$0.right]] } : []
        var paired = dataset
        if !inferredMirrorPairs.isEmpty {
            paired.skeleton.mirrorPairs = inferredMirrorPairs
            paired.skeleton.bones = inferredBones
        }
        facingSpread = Self.facingSpread(paired, labeled, verticalAxis: verticalAxis, inferred: !inferredMirrorPairs.isEmpty)
        laterality = Self.laterality(paired, labeled)
        var absent = 0, total = 0
        for i in labeled {
            let q = dataset.sequences[i]
            total += q.present.count
            absent += q.present.reduce(0) { $0 + ($1 == 0 ? 1 : 0) }
        }
        absentShare = total > 0 ? Double(absent) / Double(total) : 0
        keyPairs = KeyJoints.pairs(dataset, indices: labeled)
        bodyOrder = dataset.bodyOrder
    }

    /// `pairs` with the limbs (`MirrorPairs.Pair.limb`) after the first swapped where their root
    /// pair's right-minus-left points against the first limb's in the sampled frames (on average),
    /// so that "left" is one side of the body in every limb.
    static func oriented(_ pairs: [MirrorPairs.Pair], _ d: Dataset, _ indices: [Int], maxFrames: Int) -> [MirrorPairs.Pair] {
        let roots = pairs.filter(\.root)
        guard let first = roots.first, roots.count > 1 else { return pairs }
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        var agreement = [Double](repeating: 0, count: roots.count)
        DatasetProfile.forEachSampledFrame(d, indices, maxFrames: maxFrames) { s, f in
            func side(_ p: MirrorPairs.Pair) -> [Double]? {
                guard s.present[f * J + p.left] != 0 && s.present[f * J + p.right] != 0 else { return nil }
                return (0..<D).map { Double(s.coordinates[(f * J + p.right) * D + $0] - s.coordinates[(f * J + p.left) * D + $0]) }
            }
            guard let a = side(first) else { return }
            for (k, r) in roots.enumerated().dropFirst() {
                guard let b = side(r) else { continue }
                let dot = zip(a, b).reduce(0) { $0 + $1.0 * $1.1 }
                agreement[k] += dot > 0 ? 1 : dot < 0 ? -1 : 0
            }
        }
        let swapped = Set(roots.indices.filter { agreement[$0] < 0 }.map { roots[$0].limb })
        return pairs.map { p in swapped.contains(p.limb) ? MirrorPairs.Pair(left: p.right, right: p.left, limb: p.limb, root: p.root) : p }
    }

    /// The hip and shoulder joints of each side (`Recipe.hasFacingPairs`'s joints), as indices;
    /// for pairs inferred from the tree (joints without names), `MirrorPairs.sideJoints`.
    static func facingJoints(_ sk: Skeleton, inferred: Bool = false) -> (left: [Int], right: [Int]) {
        if inferred {
            let (l, r) = MirrorPairs.sideJoints(sk)
            return (l.compactMap(sk.index(of:)), r.compactMap(sk.index(of:)))
        }
        var left: [Int] = [], right: [Int] = []
        for pair in sk.mirrorPairs where pair.count == 2 {
            let name = pair[0].lowercased()
            guard name.contains("hip") || name.contains("shoulder"), let l = sk.index(of: pair[0]), let r = sk.index(of: pair[1]) else { continue }
            left.append(l)
            right.append(r)
        }
        return (left, right)
    }

    /// `facingSpread`: per sequence the sum over frames of (mean right − mean left) of the
    /// facing joints on the two horizontal axes, its angle, then the circular standard
    /// deviation `√(−2 ln R)` of the angles (R the length of their mean unit vector), in degrees.
    static func facingSpread(_ d: Dataset, _ indices: [Int], verticalAxis v: Int, inferred: Bool = false) -> Double? {
        let sk = d.skeleton
        guard sk.dimensions == 3, (0..<3).contains(v) else { return nil }
        let (left, right) = facingJoints(sk, inferred: inferred)
        guard !left.isEmpty else { return nil }
        let h1 = v == 0 ? 1 : 0, h2 = v == 2 ? 1 : 2
        var c = 0.0, s = 0.0, n = 0
        for i in indices {
            let q = d.sequences[i], J = q.jointCount
            var a1 = 0.0, a2 = 0.0
            for f in 0..<q.frameCount {
                func mean(_ joints: [Int], _ axis: Int) -> Double? {
                    var sum = 0.0, k = 0
                    for j in joints where q.present[f * J + j] != 0 {
                        sum += Double(q.coordinates[(f * J + j) * 3 + axis])
                        k += 1
                    }
                    return k > 0 ? sum / Double(k) : nil
                }
                guard let r1 = mean(right, h1), let l1 = mean(left, h1), let r2 = mean(right, h2), let l2 = mean(left, h2) else { continue }
                a1 += r1 - l1
                a2 += r2 - l2
            }
            let norm = (a1 * a1 + a2 * a2).squareRoot()
            guard norm > 0 && norm.isFinite else { continue }
            c += a1 / norm
            s += a2 / norm
            n += 1
        }
        guard n >= 2 else { return nil }
        let R = min(1, (c * c + s * s).squareRoot() / Double(n))
        guard R > 0 else { return 180 }
        return (-2 * log(R)).squareRoot() * 180 / .pi
    }

    /// `laterality` over the labeled sequences at `indices`.
    static func laterality(_ d: Dataset, _ indices: [Int]) -> Laterality? {
        let sk = d.skeleton, D = sk.dimensions
        let pairs = sk.mirrorPairs.compactMap { p -> (Int, Int)? in
            guard p.count == 2, let l = sk.index(of: p[0]), let r = sk.index(of: p[1]) else { return nil }
            return (l, r)
        }
        guard !pairs.isEmpty else { return nil }
        var byClass: [String: Double] = [:]
        var total = 0.0, count = 0
        for i in indices {
            let q = d.sequences[i], J = q.jointCount
            guard let label = q.label else { continue }
            var L = 0.0, R = 0.0
            for f in 1..<max(q.frameCount, 1) {
                func step(_ j: Int) -> Double {
                    guard q.present[f * J + j] != 0 && q.present[(f - 1) * J + j] != 0 else { return 0 }
                    var ss = 0.0
                    for a in 0..<D {
                        let v = Double(q.coordinates[(f * J + j) * D + a] - q.coordinates[((f - 1) * J + j) * D + a])
                        ss += v * v
                    }
                    return ss.squareRoot()
                }
                for (l, r) in pairs {
                    L += step(l)
                    R += step(r)
                }
            }
            guard L + R > 0 && (L + R).isFinite else { continue }
            let a = (L - R) / (L + R)
            byClass[label, default: 0] += a
            total += abs(a)
            count += 1
        }
        guard count > 0 && total > 0 else { return nil }
        return Laterality(asymmetry: total / Double(count), consistency: byClass.values.reduce(0) { $0 + abs($1) } / total)
    }

    /// The median frame step of the timestamps of (at most 200 of) the sequences at `indices`,
    /// as frames per second; nil without timestamps.
    public static func timestampRate(_ d: Dataset, _ indices: [Int]) -> Double? {
        var steps: [Double] = []
        for i in indices.prefix(200) {
            guard let t = d.sequences[i].timestamps, t.count > 1 else { continue }
            for k in 1..<t.count { steps.append(t[k] - t[k - 1]) }
        }
        guard !steps.isEmpty else { return nil }
        steps.sort()
        let step = steps[steps.count / 2]
        return step > 0 ? 1 / step : nil
    }

    /// Calls `body(sequence, frame)` for at most about `maxFrames` frames spread evenly over the
    /// sequences at `indices` (every (total / maxFrames)-th frame, counted across them in order).
    static func forEachSampledFrame(_ d: Dataset, _ indices: [Int], maxFrames: Int, _ body: (PoseSequence, Int) -> Void) {
        let total = indices.reduce(0) { $0 + d.sequences[$1].frameCount }
        let every = max(1, total / maxFrames)
        var k = 0
        for i in indices {
            let s = d.sequences[i]
            for f in 0..<s.frameCount {
                k += 1
                if k % every == 0 { body(s, f) }
            }
        }
    }

    /// Body size, offset and per-axis spread over frames sampled evenly from the sequences.
    static func geometry(_ d: Dataset, _ indices: [Int], maxFrames: Int) -> (Double, Double, [Double]) {
        let D = d.skeleton.dimensions
        var sizes: [Double] = [], offsets: [Double] = []
        var squares = [Double](repeating: 0, count: D)
        var points = 0
        forEachSampledFrame(d, indices, maxFrames: maxFrames) { s, f in
            let J = s.jointCount
            var mean = [Double](repeating: 0, count: D)
            var n = 0
            for j in 0..<J where s.present[f * J + j] != 0 {
                for a in 0..<D { mean[a] += Double(s.coordinates[(f * J + j) * D + a]) }
                n += 1
            }
            guard n >= 2 else { return }
            for a in 0..<D { mean[a] /= Double(n) }
            var sq = 0.0
            for j in 0..<J where s.present[f * J + j] != 0 {
                for a in 0..<D {
                    let v = Double(s.coordinates[(f * J + j) * D + a]) - mean[a]
                    sq += v * v
                    squares[a] += v * v
                }
            }
            points += n
            let size = (sq / Double(n)).squareRoot()
            sizes.append(size)
            offsets.append(size > 0 ? (mean.reduce(0) { $0 + $1 * $1 }).squareRoot() / size : 0)
        }
        guard !sizes.isEmpty else { return (0, 0, [Double](repeating: 0, count: D)) }
        sizes.sort()
        offsets.sort()
        return (sizes[sizes.count / 2], offsets[offsets.count / 2], squares.map { ($0 / Double(points)).squareRoot() })
    }
}
