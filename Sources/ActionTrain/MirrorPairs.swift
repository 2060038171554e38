import PoseCore

/// Left/right mirror pairs of a skeleton that names none, read off its bone tree (the recipe's
/// inferred one, `SkeletonGraph.inferred`): a symmetric body's tree, rooted at its centre (on the
/// symmetry axis), has pairs of children whose subtrees have the same shape and the same bone
/// lengths (a hip-like pair with the legs below it, a shoulder-like pair with the arms), and those
/// subtrees pair joint by joint.
public enum MirrorPairs {
    /// Two mirrored bones' mean lengths may differ by this share of the longer one: three times
    /// the largest left/right difference on the named development sets (NATOPS's hand tips 5.2%,
    /// its wrists and thumbs 4.4%, UTKinect's legs at most 2.7%, measured on the inferred trees'
    /// mean lengths relative to the body size), and below the 21% between a thigh and a shin.
    public static let lengthTolerance = 0.15

    /// One pair of joint indices, `left < right` within a limb, and `limb`, the index of the
    /// mirrored subtree pair (one per limb pair: legs, arms) it belongs to.
    public struct Pair: Equatable, Sendable {
        public var left: Int, right: Int
        public var limb: Int
        /// Whether it is the limb's first pair (its joints hang from the symmetry axis, like hips
        /// and shoulders; or it is the central pair of a tree whose centre is an edge).
        public var root: Bool
    }

    /// The mirror pairs of the tree over `joints` joints with `edges` (`[a, b]` indices) whose mean
    /// lengths are `lengths` (one per edge, any unit), or none when the edges are not a tree.
    ///
    /// The tree is rooted at its centre (the joint whose farthest joint is nearest; a tree has one
    /// or two). Two centres whose halves mirror each other form a pair and their halves pair
    /// below them; else the lower-indexed centre is the root. From the root, each joint's children
    /// are grouped by their subtree's canonical encoding (Aho, Hopcroft & Ullman: the sorted
    /// encodings of the children in parentheses): a group of exactly two whose bones have lengths
    /// within `tolerance` pairs child to child, recursively; a group of one is on the axis and is
    /// searched below; groups of three or more, or two whose lengths differ, pair nothing. Inside
    /// a pair of subtrees, two children of the same shape are told apart by their lengths, or left
    /// unpaired. In each limb the side of the lower-indexed root joint is the left.
    public static func inferred(joints J: Int, edges: [[Int]], lengths: [Double], tolerance: Double = lengthTolerance) -> [Pair] {
        guard J > 1, edges.count == J - 1, lengths.count == edges.count, edges.allSatisfy({ $0.count == 2 && $0.allSatisfy { (0..<J).contains($0) } && $0[0] != $0[1] })
        else { return [] }
        var neighbours = [[(joint: Int, length: Double)]](repeating: [], count: J)
        for (e, l) in zip(edges, lengths) {
            neighbours[e[0]].append((e[1], l))
            neighbours[e[1]].append((e[0], l))
        }
        func hops(from root: Int) -> [Int] {
            var d = [Int](repeating: -1, count: J)
            d[root] = 0
            var queue = [root], head = 0
            while head < queue.count {
                let u = queue[head]
                head += 1
                for (v, _) in neighbours[u] where d[v] < 0 {
                    d[v] = d[u] + 1
                    queue.append(v)
                }
            }
            return d
        }
        let eccentricity = (0..<J).map { j -> Int in
            let d = hops(from: j)
            return d.contains(-1) ? .max : d.max()!
        }
        guard eccentricity[0] != .max, let least = eccentricity.min() else { return [] }  // not connected
        let centres = (0..<J).filter { eccentricity[$0] == least }

        // Children, the length of the bone to the parent, and the canonical encodings, rooted at
        // `root` with `cut` (the other centre) left out.
        var children = [[Int]](repeating: [], count: J)
        var boneLength = [Double](repeating: 0, count: J)
        var code = [String](repeating: "", count: J)
        func root(_ r: Int, cut: Int?) {
            var order = [r], parent = [Int](repeating: -1, count: J), head = 0
            parent[r] = r
            if let cut { parent[cut] = cut }
            while head < order.count {
                let u = order[head]
                head += 1
                children[u] = []
                for (v, l) in neighbours[u] where parent[v] < 0 {
                    parent[v] = u
                    boneLength[v] = l
                    children[u].append(v)
                    order.append(v)
                }
            }
            for u in order.reversed() { code[u] = "(" + children[u].map { code[$0] }.sorted().joined() + ")" }
        }
        func close(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= tolerance * max(a, b) }
        /// The pairs mapping the subtree of `a` onto that of `b` (same encoding), nil when a
        /// bone's lengths differ.
        func match(_ a: Int, _ b: Int) -> [(Int, Int)]? {
            var out = [(a, b)]
            let groupsA = Dictionary(grouping: children[a]) { code[$0] }, groupsB = Dictionary(grouping: children[b]) { code[$0] }
            for (c, xs) in groupsA.sorted(by: { $0.key < $1.key }) {
                let ys = groupsB[c] ?? []
                guard ys.count == xs.count else { return nil }
                if xs.count == 1 {
                    guard close(boneLength[xs[0]], boneLength[ys[0]]), let m = match(xs[0], ys[0]) else { return nil }
                    out += m
                } else if xs.count == 2 {
                    // Two children of one shape: the assignment whose lengths agree, if only one does.
                    let straight = close(boneLength[xs[0]], boneLength[ys[0]]) && close(boneLength[xs[1]], boneLength[ys[1]])
                    let crossed = close(boneLength[xs[0]], boneLength[ys[1]]) && close(boneLength[xs[1]], boneLength[ys[0]])
                    guard straight != crossed else { continue }
                    let (y0, y1) = straight ? (ys[0], ys[1]) : (ys[1], ys[0])
                    guard let m0 = match(xs[0], y0), let m1 = match(xs[1], y1) else { return nil }
                    out += m0 + m1
                }
            }
            return out
        }
        var pairs: [Pair] = []
        func add(_ m: [(Int, Int)]) {
            let flip = m[0].0 > m[0].1
            let limb = pairs.last.map { $0.limb + 1 } ?? 0
            for (k, (a, b)) in m.enumerated() {
                pairs.append(Pair(left: flip ? b : a, right: flip ? a : b, limb: limb, root: k == 0))
            }
        }
        func walk(_ v: Int) {
            for (_, group) in Dictionary(grouping: children[v], by: { code[$0] }).sorted(by: { $0.value.min()! < $1.value.min()! }) {
                if group.count == 1 {
                    walk(group[0])
                } else if group.count == 2, close(boneLength[group[0]], boneLength[group[1]]), let m = match(group[0], group[1]) {
                    add(m)
                }
            }
        }
        if centres.count == 2 {
            // Each half rooted at its centre, the other cut off: the halves are disjoint, so both
            // stay in the tables.
            let (a, b) = (centres[0], centres[1])
            root(a, cut: b)
            root(b, cut: a)
            if code[a] == code[b], let m = match(a, b) {
                add(m)
                return pairs
            }
        }
        root(centres[0], cut: nil)
        walk(centres[0])
        return pairs
    }

    /// The left and right joints that turn a window to face one way (`alignFacing`) for a
    /// skeleton whose mirror pairs are not named (`TrainingConfig.mirrorPairs`), as
    /// `Skeleton.sideJoints` picks the hips and shoulders of a named one: the pairs whose joints
    /// hang from the symmetry axis (their neighbour nearer the centre of `bones` is in no pair),
    /// else every pair (a tree with no joint on the axis, such as NATOPS's two arms).
    public static func sideJoints(_ sk: Skeleton) -> (left: [String], right: [String]) {
        let pairs = sk.mirrorPairs.compactMap { p -> (Int, Int)? in
            guard p.count == 2, let a = sk.index(of: p[0]), let b = sk.index(of: p[1]) else { return nil }
            return (a, b)
        }
        var trunk = pairs
        if let graph = try? SkeletonGraph(skeleton: sk, edges: []) {
            let paired = Set(pairs.flatMap { [$0.0, $0.1] })
            trunk = pairs.filter { a, b in
                let nearer = graph.edges.compactMap { e -> Int? in
                    let other = e[0] == a ? e[1] : e[1] == a ? e[0] : -1
                    return other >= 0 && graph.depth[other] < graph.depth[a] ? other : nil
                }
                return !nearer.isEmpty && nearer.allSatisfy { !paired.contains($0) }
            }
            if trunk.isEmpty { trunk = pairs }
        }
        return (trunk.map { sk.joints[$0.0] }, trunk.map { sk.joints[$0.1] })
    }
}
