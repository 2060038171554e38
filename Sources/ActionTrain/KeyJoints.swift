import Datasets
import Foundation
import PoseCore

/// The joint pairs of the relational channel blocks (`relativePositions`, `distances`) for a
/// large skeleton, so that their width stays near that of a 20-joint body: every pair of a
/// body's key joints, and for several bodies the pairs between their key joints' ends.
///
/// A body's key joints are found from the data: starting with all of its joints, the joint
/// whose mean distance (over sampled frames, both present) to the nearest other kept joint is
/// smallest is dropped, one at a time, until `perBody` remain. Clustered points (a face's eyes
/// and ears, a foot's toes and heel, a hand's fingers) go first; the head, the limbs' joints
/// and their ends stay. The ends are the `between` key joints farthest on average from their
/// body's mean.
public enum KeyJoints {
    /// Skeletons with more joints per body than this get key joints (a Kinect v1 body of 20
    /// joints gives 190 pairs and keeps them all).
    public static let allPairsUpTo = 20
    /// Key joints kept per body, and joints per body paired with the other bodies'.
    public static let perBody = 15, between = 6

    /// The pairs for `dataset`'s skeleton, or nil when every pair is kept (one body of at most
    /// `allPairsUpTo` joints).
    public static func pairs(_ dataset: Dataset, indices: [Int], maxFrames: Int = 5_000) -> [[String]]? {
        let sk = dataset.skeleton
        let M = max(1, sk.bodyCount), Jb = sk.jointCount / M
        guard Jb > allPairsUpTo || M > 1 else { return nil }
        let D = sk.dimensions
        // Mean distance between every two joints of a body (over frames where both are present),
        // and each joint's mean distance from its body's mean.
        var sum = [Double](repeating: 0, count: M * Jb * Jb), count = [Int](repeating: 0, count: M * Jb * Jb)
        var spread = [Double](repeating: 0, count: M * Jb), spreadCount = [Int](repeating: 0, count: M * Jb)
        DatasetProfile.forEachSampledFrame(dataset, indices, maxFrames: maxFrames) { s, f in
            let J = s.jointCount
            for b in 0..<M {
                var mean = [Double](repeating: 0, count: D), n = 0
                for i in 0..<Jb where s.present[f * J + b * Jb + i] != 0 {
                    for a in 0..<D { mean[a] += Double(s.coordinates[(f * J + b * Jb + i) * D + a]) }
                    n += 1
                }
                guard n > 0 else { continue }
                for a in 0..<D { mean[a] /= Double(n) }
                for i in 0..<Jb where s.present[f * J + b * Jb + i] != 0 {
                    let pi = (f * J + b * Jb + i) * D
                    var r = 0.0
                    for a in 0..<D { r += pow(Double(s.coordinates[pi + a]) - mean[a], 2) }
                    spread[b * Jb + i] += r.squareRoot()
                    spreadCount[b * Jb + i] += 1
                    for j in (i + 1)..<Jb where s.present[f * J + b * Jb + j] != 0 {
                        let pj = (f * J + b * Jb + j) * D
                        var d2 = 0.0
                        for a in 0..<D { d2 += pow(Double(s.coordinates[pi + a] - s.coordinates[pj + a]), 2) }
                        let k = (b * Jb + i) * Jb + j
                        sum[k] += d2.squareRoot()
                        count[k] += 1
                    }
                }
            }
        }
        // Joints of body 1 (the bodies are copies of one skeleton: one choice for all, from the
        // distances pooled over the bodies).
        func distance(_ i: Int, _ j: Int) -> Double {
            let (a, c) = (min(i, j), max(i, j))
            var s = 0.0, n = 0
            for b in 0..<M {
                s += sum[(b * Jb + a) * Jb + c]
                n += count[(b * Jb + a) * Jb + c]
            }
            return n > 0 ? s / Double(n) : .infinity  // never seen together: not a cluster
        }
        var kept = Array(0..<Jb)
        while kept.count > min(perBody, Jb) {
            var worst = 0, nearest = Double.infinity
            for (x, i) in kept.enumerated() {
                let d = kept.lazy.filter { $0 != i }.map { distance(i, $0) }.min() ?? .infinity
                if d < nearest {
                    nearest = d
                    worst = x
                }
            }
            kept.remove(at: worst)
        }
        let names = sk.joints
        var pairs: [[String]] = []
        for b in 0..<M {
            for x in 0..<kept.count {
                for y in (x + 1)..<kept.count { pairs.append([names[b * Jb + kept[x]], names[b * Jb + kept[y]]]) }
            }
        }
        if M > 1 {
            let pooledSpread = (0..<Jb).map { i in
                let s = (0..<M).reduce(0.0) { $0 + spread[$1 * Jb + i] }, n = (0..<M).reduce(0) { $0 + spreadCount[$1 * Jb + i] }
                return n > 0 ? s / Double(n) : 0
            }
            let ends = kept.sorted { pooledSpread[$0] != pooledSpread[$1] ? pooledSpread[$0] > pooledSpread[$1] : $0 < $1 }.prefix(between).sorted()
            for b in 0..<M {
                for c in (b + 1)..<M {
                    for i in ends { for j in ends { pairs.append([names[b * Jb + i], names[c * Jb + j]]) } }
                }
            }
        }
        return pairs
    }
}
