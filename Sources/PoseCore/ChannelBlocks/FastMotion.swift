/// `fastMotion`, `J·D` values: differences two frames apart, `c'[f, j]_d − c'[f−2, j]_d` at
/// `q = j·D + d` if joint j is present at f and at f−2, else 0; all 0 at frames 0 and 1. With
/// `motion` it gives motion at two time scales (DD-Net's slow and fast motion, Yang et al. 2019).
public struct FastMotionBlock: FrameDifferenceBlock {
    public static let name = "fastMotion"
    public static let lag = 2
    public let dimensions: Int
    public init(dimensions: Int) { self.dimensions = dimensions }
}

extension ChannelBlock {
    public static let fastMotion = ChannelBlock(FastMotionBlock.self)
}
