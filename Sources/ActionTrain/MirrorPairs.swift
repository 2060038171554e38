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

    /// A bone brought into the inferred tree by `symmetricTree` may weigh this many times the one
    /// it replaces (weights as `SkeletonGraph.inferredTree`'s: mean times standard deviation of
    /// the distance). On UTKinect with anonymous joints the swap that hangs the second shoulder
    /// from the shoulder centre costs 1.27; the cheapest swaps that pair anything else there or
    /// on Penn Action cost 1.8 or more (a head with a shoulder, Penn's arms with the hips
    /// re-hung), and the first false pairs (a hip with an ankle) 2.1.
    public static let swapRatio = 1.5

    /// At most this many candidate trees are read by `symmetricTree`, so that a skeleton of
    /// hundreds of joints stays quick (UTKinect's 20 joints read about 30).
    static let swapBudget = 20_000

    /// The spanning tree `edges` (`[parent, child]` indices over `joints` joints, the minimum one
    /// of `weight`) with single-edge swaps that pair more joints (`inferred`, with the mean
    /// lengths `length`): while one exists, the cheapest swap (a tree edge out, an edge joining its
    /// two sides in, weighing at most `ratio` times the one out) whose tree keeps every pair found
    /// and pairs more replaces it. A symmetric body whose minimum tree hangs one limb off a joint
    /// beside its mirror's (a shoulder from the spine, its mirror from the shoulder centre,
    /// because a noisy shoulder centre weighs a little more) gets them hung from one joint; an
    /// asymmetric one keeps its tree. Edges keep their places; the new one, and those whose
    /// direction changed, point away from joint 0. The tree is returned as given when nothing
    /// pairs more.
    public static func symmetricTree(
        joints J: Int, edges: [[Int]], weight: (Int, Int) -> Double, length: (Int, Int) -> Double, ratio: Double = swapRatio,
        tolerance: Double = lengthTolerance
    ) -> [[Int]] {
        guard J > 2, edges.count == J - 1 else { return edges }
        func pairSet(_ tree: [[Int]]) -> Set<[Int]> {
            Set(inferred(joints: J, edges: tree, lengths: tree.map { length($0[0], $0[1]) }, tolerance: tolerance).map { [min($0.left, $0.right), max($0.left, $0.right)] })
        }
        var tree = edges, found = pairSet(tree), budget = swapBudget
        improving: while budget > 0 {
            // Every swap within the ratio, cheapest first (ties: the earlier tree edge, the lower joints).
            var swaps: [(cost: Double, out: Int, a: Int, b: Int)] = []
            for (k, e) in tree.enumerated() {
                let w = weight(e[0], e[1])
                guard w.isFinite else { continue }
                var side = [Bool](repeating: false, count: J)
                side[e[0]] = true
                var stack = [e[0]]
                while let u = stack.popLast() {
                    for (i, f) in tree.enumerated() where i != k && (f[0] == u || f[1] == u) {
                        let v = f[0] == u ? f[1] : f[0]
                        if !side[v] {
                            side[v] = true
                            stack.append(v)
                        }
                    }
                }
                for a in 0..<J where side[a] {
                    for b in 0..<J where !side[b] && !(a == e[0] && b == e[1]) {
                        let c = weight(a, b)
                        if c.isFinite && c <= ratio * w { swaps.append((w > 0 ? c / w : .infinity, k, a, b)) }
                    }
                }
            }
            swaps.sort { $0.cost != $1.cost ? $0.cost < $1.cost : ($0.out, $0.a, $0.b) < ($1.out, $1.a, $1.b) }
            for s in swaps {
                guard budget > 0 else { break improving }
                budget -= 1
                var t = tree
                t[s.out] = [s.a, s.b]
                let p = pairSet(t)
                if p.count > found.count && p.isSuperset(of: found) {
                    tree = t
                    found = p
                    continue improving
                }
            }
            break
        }
        guard tree != edges else { return edges }
        // Each edge as [parent, child] from joint 0.
        var neighbours = [[Int]](repeating: [], count: J)
        for e in tree {
            neighbours[e[0]].append(e[1])
            neighbours[e[1]].append(e[0])
        }
        let depth = SkeletonGraph.hops(from: 0, neighbours: neighbours)
        return tree.map { depth[$0[0]] <= depth[$0[1]] ? $0 : [$0[1], $0[0]] }
    }

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
        let adjacent = neighbours.map { $0.map(\.joint) }
        let eccentricity = (0..<J).map { SkeletonGraph.hops(from: $0, neighbours: adjacent).max()! }  // .max: not connected
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
