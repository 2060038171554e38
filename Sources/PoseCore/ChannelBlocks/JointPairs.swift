/// Joint pairs: the `pairs` of an input (the relational blocks `relativePositions` and
/// `distances` read them) and the pieces those blocks and `bones` share.
extension InputSpec {
    /// The most joint pairs an input may have: given in `pairs`, or all pairs of the skeleton's
    /// joints when it has none (up to 362 joints).
    public static let maxPairs = 65_536

    /// The number of pairs the relational blocks read: `pairs.count`, or `J·(J−1)/2`.
    public var pairCount: Int {
        let J = skeleton.jointCount
        return pairs?.count ?? J * (J - 1) / 2
    }

    /// Checks `pairs`: at most `maxPairs`, each two distinct joints of the skeleton, no pair
    /// twice (in either order).
    func validatePairs() throws {
        guard let pairs else { return }
        guard !pairs.isEmpty else { throw InputSpecError.pairs("lists no pair; leave pairs out for every pair of the skeleton's joints") }
        guard pairs.count <= Self.maxPairs else { throw InputSpecError.pairs("lists \(pairs.count) pairs; at most \(Self.maxPairs)") }
        let index = jointIndex()
        var seen = Set<[Int]>()
        for (k, p) in pairs.enumerated() {
            guard p.count == 2 else { throw InputSpecError.pairs("pair \(k) must name 2 joints [a, b], got \(p)") }
            guard let a = index[p[0]], let b = index[p[1]] else {
                let name = index[p[0]] == nil ? p[0] : p[1]
                throw InputSpecError.pairs("pair \(k) \(p) names joint '\(name)', which is not in skeleton '\(skeleton.name)'")
            }
            guard a != b else { throw InputSpecError.pairs("pair \(k) \(p) names the same joint twice") }
            guard seen.insert([min(a, b), max(a, b)]).inserted else { throw InputSpecError.pairs("pair \(k) \(p) is listed twice (in some order)") }
        }
    }

    /// The pairs as joint indices `(a, b)` (the value is `c[b] − c[a]`): those of `pairs`, or
    /// every `(i, j)` with `i < j`, row by row. `pairs` has been validated.
    func pairIndices() -> JointPairList {
        guard let pairs else {
            let J = skeleton.jointCount
            var list = JointPairList(firsts: [], seconds: [])
            for i in 0..<J {
                for j in (i + 1)..<max(J, i + 1) {
                    list.firsts.append(i)
                    list.seconds.append(j)
                }
            }
            return list
        }
        let index = jointIndex()
        return JointPairList(firsts: pairs.map { index[$0[0]]! }, seconds: pairs.map { index[$0[1]]! })
    }

    private func jointIndex() -> [String: Int] {
        Dictionary(skeleton.joints.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
    }
}

/// Pairs of joints `(firsts[k], seconds[k])`, each giving `c[second] − c[first]`: the bones
/// (parent, child) or the input's pairs.
struct JointPairList: Sendable {
    var firsts: [Int], seconds: [Int]
    var count: Int { firsts.count }

    /// Per frame and pair k, `c'[f, second]_d − c'[f, first]_d` at `q = k·D + d` when both are
    /// present, else 0.
    @inline(__always)
    func writeDifferences<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let J = w.joints, D = Dim.count, xyz = w.coordinates, present = w.present
        firsts.withUnsafeBufferPointer { a in
            seconds.withUnsafeBufferPointer { b in
                for f in 0..<w.frames {
                    let row = out + f &* C
                    for k in 0..<a.count {
                        let i = f &* J &+ a[k], j = f &* J &+ b[k]
                        let both = present[i] != 0 && present[j] != 0
                        for d in 0..<D { row[k &* D &+ d] = both ? xyz[j &* D &+ d] - xyz[i &* D &+ d] : 0 }
                    }
                }
            }
        }
    }

    /// The mirror image of per-pair values (`values` per pair, vectors when `vectors`): pair
    /// k = (a, b) takes the pair (σa, σb) with x negated, or when only (σb, σa) is a pair that
    /// one reversed (the other axes negated); scalars take either with sign 1. Throws
    /// `missing(k)` for the first pair whose mirror is not a pair.
    func mirrorImage(_ sigma: [Int], values n: Int, vectors: Bool, missing: (Int) -> String) throws -> [(channel: Int, sign: Float)] {
        var at: [Int: Int] = [:]  // a · 2^32 + b → k
        for k in 0..<count where at[firsts[k] << 32 | seconds[k]] == nil { at[firsts[k] << 32 | seconds[k]] = k }
        var out: [(channel: Int, sign: Float)] = []
        out.reserveCapacity(count * n)
        for k in 0..<count {
            let a = sigma[firsts[k]], b = sigma[seconds[k]]
            if let same = at[a << 32 | b] {
                for d in 0..<n { out.append((same * n + d, vectors && d == 0 ? -1 : 1)) }
            } else if let reversed = at[b << 32 | a] {
                for d in 0..<n { out.append((reversed * n + d, vectors && d != 0 ? -1 : 1)) }
            } else {
                throw InputSpecError.channels(missing(k))
            }
        }
        return out
    }
}

extension JointPairList {
    /// The error of a pair (of the input's `pairs`) whose mirror image is not a pair.
    func missingMirror(_ k: Int, sigma: [Int], joints: [String]) -> String {
        let a = firsts[k], b = seconds[k]
        return "the mirror image of pair [\(joints[a]), \(joints[b])] is [\(joints[sigma[a]]), \(joints[sigma[b]])], which is not among the input's pairs (add it)"
    }
}

extension InputSpec {
    /// `pairIndices()` for a block that reads them, after checking that there is at least one
    /// pair and at most `maxPairs`.
    func checkedPairIndices(for block: String) throws -> JointPairList {
        let n = pairCount
        guard n > 0 else { throw InputSpecError.channels("block '\(block)' is empty for skeleton '\(skeleton.name)' (it has one joint: no pairs)") }
        guard n <= Self.maxPairs else {
            throw InputSpecError.channels(
                "block '\(block)' reads \(n) joint pairs (every pair of \(skeleton.jointCount) joints); at most \(Self.maxPairs): give pairs")
        }
        return pairIndices()
    }
}

extension OpGraph {
    /// `JointPairList.writeDifferences` as operators: `[B, F, pairs, D]`.
    func pairDifferences(_ x: BlockGraphInput, _ pairs: JointPairList, name: String) -> String {
        let both = node("Mul", [gather(x.present, pairs.seconds, axis: 2), gather(x.present, pairs.firsts, axis: 2)], name: name)
        let d = node("Sub", [gather(x.coordinates, pairs.seconds, axis: 2), gather(x.coordinates, pairs.firsts, axis: 2)], name: name)
        return node("Mul", [d, both], name: name)
    }
}
