/// `relativePositions`, `P·D` values: for the k-th pair `(a, b)` of the input's pairs (every
/// `(i, j)` with `i < j`, row by row, when `pairs` is absent), the relative position
/// `c'[f, b]_d − c'[f, a]_d` at `q = k·D + d` if both joints are present, else 0 (the `mask`
/// block says which were). After the steps, so in the body size they measure (EigenJoints,
/// Actionlet ensembles' relative positions).
public struct RelativePositionsBlock: ChannelBlockKind {
    public static let name = "relativePositions"
    let pairs: JointPairList, D: Int, joints: [String]

    public static let readsPairs = true
    public static func width(for input: InputSpec) -> Int { input.pairCount * input.skeleton.dimensions }

    public init(input: InputSpec) throws {
        pairs = try input.checkedPairIndices(for: Self.name)
        D = input.skeleton.dimensions
        joints = input.skeleton.joints
    }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        pairs.writeDifferences(Dim.self, w, into: out, stride: C)
    }

    /// Pair (a, b) takes (σa, σb) with x negated, or the reversed pair with the other axes negated.
    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] {
        try pairs.mirrorImage(sigma, values: D, vectors: true) { pairs.missingMirror($0, sigma: sigma, joints: joints) }
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String {
        g.frameRows(g.pairDifferences(x, pairs, name: "pre.relativePositions"))
    }
}

extension ChannelBlock {
    public static let relativePositions = ChannelBlock(RelativePositionsBlock.self)
}
