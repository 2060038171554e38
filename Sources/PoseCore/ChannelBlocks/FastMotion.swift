/// `fastMotion`, `J·D` values: differences two frames apart, `c'[f, j]_d − c'[f−2, j]_d` at
/// `q = j·D + d` if joint j is present at f and at f−2, else 0; all 0 at frames 0 and 1. With
/// `motion` it gives motion at two time scales (DD-Net's slow and fast motion, Yang et al. 2019).
public struct FastMotionBlock: ChannelBlockKind {
    public static let name = "fastMotion"
    let D: Int

    public static func width(for input: InputSpec) -> Int { input.skeleton.jointCount * input.skeleton.dimensions }
    public init(input: InputSpec) throws { D = input.skeleton.dimensions }
    public var valuesPerJoint: Int { D }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        writeFrameDifferences(Dim.self, w, lag: 2, into: out, stride: C)
    }

    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] { jointMirrorImage(sigma, values: D, vectors: true) }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameDifferences(x, lag: 2, name: "pre.fastMotion") }
}

extension ChannelBlock {
    public static let fastMotion = ChannelBlock(FastMotionBlock.self)
}
