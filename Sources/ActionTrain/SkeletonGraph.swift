import Datasets
import PoseCore

/// The joint graph an `stgcn` network convolves over: undirected edges between joints, and
/// the adjacency matrices of its graph convolutions.
///
/// The edges are the config's `graph` (joint-name pairs) or, when that is empty, the
/// skeleton's bones. For a skeleton that names no bones, `fit`'s recipe infers a tree from the
/// training data (`inferred(_:indices:)`): the joint pairs whose distance changes least
/// relative to its length are the rigid ones, i.e. bones.
///
/// Partitions (Yan, Xiong & Lin, 2018, "Spatial Temporal Graph Convolutional Networks for
/// Skeleton-Based Action Recognition", spatial configuration partitioning): a joint's own
/// features, the mean of its neighbours nearer the graph's centre, and the mean of its
/// neighbours farther from it. Each is a row-normalised `J x J` matrix, so a graph
/// convolution learns one weight matrix per partition.
public struct SkeletonGraph: Equatable, Sendable {
    public let joints: Int
    /// Undirected edges as joint-index pairs, as given (no self loops, no duplicates).
    public let edges: [[Int]]
    /// Hops from the centre joint for every joint (`Int.max` when unreachable).
    public let depth: [Int]

    /// The graph of `names` (`[[a, b], ...]`) over `skeleton`'s joints, or of its bones when
    /// `names` is empty. Errors say which pair is wrong; the config key is `graph`.
    public init(skeleton: Skeleton, edges names: [[String]]) throws {
        let pairs = names.isEmpty ? skeleton.bones : names
        guard !pairs.isEmpty else {
            throw TrainingError.invalidConfig(
                field: "graph",
                reason:
                    "is needed by architecture stgcn: skeleton '\(skeleton.name)' names no bones; give the edges as joint-name pairs, or leave recipe auto to infer them from the data")
        }
        var edges: [[Int]] = []
        for p in pairs {
            guard p.count == 2, let a = skeleton.index(of: p[0]), let b = skeleton.index(of: p[1]) else {
                throw TrainingError.invalidConfig(field: "graph", reason: "has \(p), not a pair of joints of skeleton '\(skeleton.name)'")
            }
            guard a != b else { throw TrainingError.invalidConfig(field: "graph", reason: "links joint '\(p[0])' to itself") }
            if !edges.contains([a, b]) && !edges.contains([b, a]) { edges.append([a, b]) }
        }
        let centre = skeleton.centre.compactMap(skeleton.index(of:)).first
        self.init(joints: skeleton.jointCount, edges: edges, centre: centre)
    }

    /// The graph over `joints` with `edges`, its centre `centre` or, when nil, the joint whose
    /// farthest joint is nearest (ties: the lowest index).
    init(joints J: Int, edges: [[Int]], centre: Int?) {
        joints = J
        self.edges = edges
        var neighbours = [[Int]](repeating: [], count: J)
        for e in edges {
            neighbours[e[0]].append(e[1])
            neighbours[e[1]].append(e[0])
        }
        let root =
            centre
            ?? (0..<J).min { a, b in
                let (ea, eb) = (Self.hops(from: a, neighbours: neighbours).max()!, Self.hops(from: b, neighbours: neighbours).max()!)
                return ea != eb ? ea < eb : a < b
            }!
        depth = Self.hops(from: root, neighbours: neighbours)
    }

    /// The number of edges from `root` to each joint (breadth first over `neighbours`, each
    /// joint's adjacent joints), `Int.max` for a joint `root` does not reach.
    static func hops(from root: Int, neighbours: [[Int]]) -> [Int] {
        var d = [Int](repeating: .max, count: neighbours.count)
        d[root] = 0
        var queue = [root], head = 0
        while head < queue.count {
            let u = queue[head]
            head += 1
            for v in neighbours[u] where d[v] == .max {
                d[v] = d[u] + 1
                queue.append(v)
            }
        }
        return d
    }

    /// The three partition matrices, each `J x J` row-major: identity; for each joint, the mean
    /// over its neighbours nearer the centre; the mean over its neighbours as far or farther
    /// (joints unreachable from the centre count as farther). Rows without such neighbours are 0.
    public var partitions: [[Float]] {
        let J = joints
        var inward = [Float](repeating: 0, count: J * J), outward = inward
        for e in edges {
            for (u, v) in [(e[0], e[1]), (e[1], e[0])] {
                if depth[v] < depth[u] { inward[u * J + v] = 1 } else { outward[u * J + v] = 1 }
            }
        }
        func rowNormalised(_ m: [Float]) -> [Float] {
            var m = m
            for r in 0..<J {
                let sum = m[(r * J)..<(r * J + J)].reduce(0, +)
                if sum > 0 { for c in 0..<J { m[r * J + c] /= sum } }
            }
            return m
        }
        return [identity, rowNormalised(inward), rowNormalised(outward)]
    }

    /// The `J x J` identity: the adjacency of a per-joint temporal convolution.
    public var identity: [Float] {
        var m = [Float](repeating: 0, count: joints * joints)
        for j in 0..<joints { m[j * joints + j] = 1 }
        return m
    }

    /// A tree over the skeleton's joints inferred from the sequences at `indices`: the minimum
    /// spanning tree of the joint pairs weighted by the mean times the standard deviation of
    /// their distance, each frame's distances divided by that frame's body size (the RMS distance
    /// of its present joints from their mean). Bones are short and keep their length, so they
    /// weigh least: on the shared datasets the minimum tree holds 18 of UTKinect's 19 bones (19
    /// after the swap below) and 12 of Penn Action's 14 (a tree has 12 edges there), measured in
    /// docs/training.md. At most `maxFrames` frames (spread evenly) are read; pairs never seen
    /// together weigh most. The result has `joints - 1` edges as `[parent, child]` names, grown
    /// from joint 0. When the skeleton names no mirror pairs, a bone that costs little more and
    /// lets the tree mirror itself replaces one that does not (`MirrorPairs.symmetricTree`: on
    /// UTKinect the spine to shoulder-centre bone, so that both shoulders hang from the shoulder
    /// centre).
    public static func inferred(_ dataset: Dataset, indices: [Int], maxFrames: Int = 20_000) -> [[String]] {
        let sk = dataset.skeleton
        return inferredTree(dataset, indices: indices, maxFrames: maxFrames).edges.map { [sk.joints[$0[0]], sk.joints[$0[1]]] }
    }

    /// `inferred`'s tree as `[parent, child]` indices, with each edge's mean length (in body
    /// sizes: each frame's distance divided by that frame's body size). For a skeleton that names
    /// no mirror pairs the minimum spanning tree then takes the single-edge swaps of
    /// `MirrorPairs.symmetricTree` (a bone at most 1.5 times heavier that lets more joints pair).
    static func inferredTree(_ dataset: Dataset, indices: [Int], maxFrames: Int = 20_000) -> (edges: [[Int]], lengths: [Double]) {
        let sk = dataset.skeleton
        let J = sk.jointCount, D = sk.dimensions
        guard J > 1 else { return ([], []) }
        var n = [Double](repeating: 0, count: J * J), sum = n, squares = n
        func squaredDistance(_ p: [Double], _ q: [Double]) -> Double { zip(p, q).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) } }
        DatasetProfile.forEachSampledFrame(dataset, indices, maxFrames: maxFrames) { s, f in
            let present = (0..<J).filter { s.present[f * J + $0] != 0 }
            guard present.count >= 2 else { return }
            let points = present.map { j in (0..<D).map { Double(s.coordinates[(f * J + j) * D + $0]) } }
            let centre = (0..<D).map { x in points.reduce(0) { $0 + $1[x] } / Double(points.count) }
            let size = (points.reduce(0) { $0 + squaredDistance($1, centre) } / Double(points.count)).squareRoot()
            guard size > 0 && size.isFinite else { return }
            for (u, a) in present.enumerated() {
                for v in (u + 1)..<present.count {
                    let b = present[v]
                    let d = squaredDistance(points[u], points[v]).squareRoot() / size
                    n[a * J + b] += 1
                    sum[a * J + b] += d
                    squares[a * J + b] += d * d
                }
            }
        }
        func weight(_ a: Int, _ b: Int) -> Double {
            let (lo, hi) = (min(a, b), max(a, b))
            let c = n[lo * J + hi]
            guard c >= 2 else { return .infinity }
            let mean = sum[lo * J + hi] / c
            return mean * (max(0, squares[lo * J + hi] / c - mean * mean)).squareRoot()
        }
        func length(_ a: Int, _ b: Int) -> Double {
            let (lo, hi) = (min(a, b), max(a, b))
            return n[lo * J + hi] > 0 ? sum[lo * J + hi] / n[lo * J + hi] : .infinity
        }
        // Prim's algorithm from joint 0; ties go to the lower indices.
        var inTree = [Bool](repeating: false, count: J)
        var best = [Double](repeating: .infinity, count: J), parent = [Int](repeating: 0, count: J)
        inTree[0] = true
        for v in 1..<J { best[v] = weight(0, v) }
        var edges: [[Int]] = []
        for _ in 1..<J {
            var next = -1
            for v in 0..<J where !inTree[v] && (next < 0 || best[v] < best[next]) { next = v }
            inTree[next] = true
            edges.append([parent[next], next])
            for v in 0..<J where !inTree[v] {
                let w = weight(next, v)
                if w < best[v] {
                    best[v] = w
                    parent[v] = next
                }
            }
        }
        // A skeleton that names no mirror pairs: the near-equal choices that let more of the tree
        // mirror itself (`MirrorPairs.symmetricTree`).
        if sk.mirrorPairs.isEmpty { edges = MirrorPairs.symmetricTree(joints: J, edges: edges, weight: weight, length: length) }
        return (edges, edges.map { length($0[0], $0[1]) })
    }
}
