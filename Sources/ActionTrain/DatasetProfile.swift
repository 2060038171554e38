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
    /// (`SkeletonGraph.inferred`), as `[parent, child]` names; empty when the skeleton has bones.
    public var inferredBones: [[String]]

    public struct Lengths: Equatable, Sendable {
        public var min: Int, median: Int, p90: Int, max: Int
    }

    /// The median duration of a sequence in seconds, when the frame rate is known.
    public var medianSeconds: Double? { frameRate.map { Double(frames.median) / $0 } }

    /// Profiles the labeled sequences at `indices` of `dataset`. At most `maxFrames` frames
    /// (spread evenly over the sequences) are measured for the body size, offset and spread.
    public init(_ dataset: Dataset, indices: [Int], maxFrames: Int = 20_000) {
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
        inferredBones = skeleton.bones.isEmpty ? SkeletonGraph.inferred(dataset, indices: labeled, maxFrames: maxFrames) : []
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
