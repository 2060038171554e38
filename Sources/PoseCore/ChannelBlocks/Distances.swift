/// `distances`, `P` values: for the k-th pair `(a, b)` of the input's pairs (as
/// `relativePositions`), the distance `√(Σ_d (c'[f, b]_d − c'[f, a]_d)²)` (summed in axis
/// order) at `q = k` if both joints are present, else 0 (the `mask` block says which were).
/// After the steps, so in the body size they measure (DD-Net's joint collection distances).
public struct DistancesBlock: ChannelBlockKind {
    public static let name = "distances"
    let pairs: JointPairList, joints: [String]

    public static let readsPairs = true
    public static func width(for input: InputSpec) -> Int { input.pairCount }

    public init(input: InputSpec) throws {
        pairs = try input.checkedPairIndices(for: Self.name)
        joints = input.skeleton.joints
    }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let J = w.joints, D = Dim.count, xyz = w.coordinates, present = w.present
        pairs.firsts.withUnsafeBufferPointer { a in
            pairs.seconds.withUnsafeBufferPointer { b in
                for f in 0..<w.frames {
                    let row = out + f &* C
                    for k in 0..<a.count {
                        let i = f &* J &+ a[k], j = f &* J &+ b[k]
                        var s: Float = 0
                        for d in 0..<D {
                            let v = xyz[j &* D &+ d] - xyz[i &* D &+ d]
                            s += v * v
                        }
                        row[k] = present[i] != 0 && present[j] != 0 ? s.squareRoot() : 0
                    }
                }
            }
        }
    }

    /// Pair (a, b) takes (σa, σb), or (σb, σa): the same distance.
    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] {
        try pairs.mirrorImage(sigma, values: 1, vectors: false) { pairs.missingMirror($0, sigma: sigma, joints: joints) }
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String {
        let d = g.pairDifferences(x, pairs, name: "pre.distances")
        return g.frameRows(g.node("Sqrt", [g.sum(g.node("Mul", [d, d], name: "pre.distances"), [3])], name: "pre.distances"))
    }
}

extension ChannelBlock {
    public static let distances = ChannelBlock(DistancesBlock.self)
}
