/// `coordinates`, `J·D` values: the transformed coordinates joint-major (`x0 y0 x1 y1 ...`),
/// `c'[f, j]_d` at `q = j·D + d`; 0 for absent joints.
public struct CoordinatesBlock: JointVectorBlock {
    public static let name = "coordinates"
    public let dimensions: Int
    public init(dimensions: Int) { self.dimensions = dimensions }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let JD = w.joints &* Dim.count
        for f in 0..<w.frames { (out + f &* C).update(from: w.coordinates + f &* JD, count: JD) }
    }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameRows(x.coordinates) }
}

extension ChannelBlock {
    public static let coordinates = ChannelBlock(CoordinatesBlock.self)
}
