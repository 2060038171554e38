/// `bones`, `B·D` values: for the b-th bone `[parent, child]` of the skeleton,
/// `c'[f, child]_d − c'[f, parent]_d` at `q = b·D + d` if both are present, else 0.
public struct BonesBlock: ChannelBlockKind {
    public static let name = "bones"
    let bones: JointPairList, D: Int, names: [[String]], skeleton: String

    public static func width(for input: InputSpec) -> Int { input.skeleton.bones.count * input.skeleton.dimensions }

    public init(input: InputSpec) throws {
        let s = input.skeleton
        guard !s.bones.isEmpty else { throw InputSpecError.channels("block 'bones' is empty for skeleton '\(s.name)' (it has no bones)") }
        bones = JointPairList(firsts: s.bones.map { s.index(of: $0[0])! }, seconds: s.bones.map { s.index(of: $0[1])! })  // validated
        D = s.dimensions
        names = s.bones
        skeleton = s.name
    }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        bones.writeDifferences(Dim.self, w, into: out, stride: C)
    }

    /// A bone takes its mirror bone, or the reversed one (a skeleton whose mirrored bone is not
    /// a bone either way has no mirror image).
    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] {
        try bones.mirrorImage(sigma, values: D, vectors: true) { "the mirror image of bone \(names[$0]) is not a bone of skeleton '\(skeleton)'" }
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameRows(g.pairDifferences(x, bones, name: "pre.bones")) }
}

extension ChannelBlock {
    public static let bones = ChannelBlock(BonesBlock.self)
}
