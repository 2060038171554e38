/// `mask`, `J` values: `p[f, j]`, 1 for a present joint and 0 for an absent one. It is also
/// what says which values of the other blocks are measured: a joint's coordinates and motion,
/// a bone or a pair are measured exactly when their joints' mask values are 1.
public struct MaskBlock: ChannelBlockKind {
    public static let name = "mask"

    public static func width(for input: InputSpec) -> Int { input.skeleton.jointCount }
    public init(input: InputSpec) throws {}
    public var valuesPerJoint: Int { 1 }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let J = w.joints
        for f in 0..<w.frames {
            let row = out + f &* C, p = w.present + f &* J
            for j in 0..<J { row[j] = p[j] != 0 ? 1 : 0 }
        }
    }

    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] { jointMirrorImage(sigma, values: 1, vectors: false) }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameRows(x.present) }
}

extension ChannelBlock {
    public static let mask = ChannelBlock(MaskBlock.self)
}
