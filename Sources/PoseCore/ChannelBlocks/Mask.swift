/// `mask`, `J` values: `p[f, j]`, 1 for a present joint and 0 for an absent one. It is also
/// what says which values of the other blocks are measured: a joint's coordinates and motion,
/// a bone or a pair are measured exactly when their joints' mask values are 1. After
/// `fillGaps` it still reports the window's own presence (`seen`): a filled point is 0.
public struct MaskBlock: JointValueBlock {
    public static let name = "mask"
    public init() {}

    /// The `confidence` block of a source without confidence.
    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let presence = BlockWindow(
            frames: w.frames, joints: w.joints, dimensions: w.dimensions, coordinates: w.coordinates, present: w.present, seen: w.seen, confidence: nil)
        ConfidenceBlock().write(Dim.self, presence, into: out, stride: C)
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameRows(x.seen) }
}

extension ChannelBlock {
    public static let mask = ChannelBlock(MaskBlock.self)
}
