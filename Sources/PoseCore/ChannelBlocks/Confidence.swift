/// `confidence`, `J` values: `k[f, j]` for a present joint (1 when the source gives no
/// confidence), 0 for an absent one; after `fillGaps`, 0 for a filled point (it reads `seen`).
public struct ConfidenceBlock: JointValueBlock {
    public static let name = "confidence"
    public init() {}

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let J = w.joints
        for f in 0..<w.frames {
            let row = out + f &* C, p = w.seen + f &* J
            if let k = w.confidence.map({ $0 + f &* J }) {
                for j in 0..<J { row[j] = p[j] != 0 ? k[j] : 0 }
            } else {
                for j in 0..<J { row[j] = p[j] != 0 ? 1 : 0 }
            }
        }
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String {
        g.frameRows(g.node("Mul", [x.confidence, x.seen], name: "pre.confidence"))
    }
}

extension ChannelBlock {
    public static let confidence = ChannelBlock(ConfidenceBlock.self)
}
