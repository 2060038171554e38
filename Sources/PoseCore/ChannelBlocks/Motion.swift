/// `motion`, `J·D` values: the frame difference `c'[f, j]_d − c'[f−1, j]_d` at `q = j·D + d`
/// if joint j is present at f and at f−1, else 0; all 0 at f = 0 (DD-Net's slow motion).
public struct MotionBlock: ChannelBlockKind {
    public static let name = "motion"
    let D: Int

    public static func width(for input: InputSpec) -> Int { input.skeleton.jointCount * input.skeleton.dimensions }
    public init(input: InputSpec) throws { D = input.skeleton.dimensions }
    public var valuesPerJoint: Int { D }

    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        writeFrameDifferences(Dim.self, w, lag: 1, into: out, stride: C)
    }

    public func mirrorImage(_ sigma: [Int]) throws -> [(channel: Int, sign: Float)] { jointMirrorImage(sigma, values: D, vectors: true) }

    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String { g.frameDifferences(x, lag: 1, name: "pre.motion") }
}

extension ChannelBlock {
    public static let motion = ChannelBlock(MotionBlock.self)
}

/// Differences `lag` frames apart: `c'[f, j]_d − c'[f−lag, j]_d` at `q = j·D + d` where joint j
/// is present at both frames, else 0; all 0 at frames `f < lag`.
@inline(__always)
func writeFrameDifferences<Dim: StaticDimensions>(
    _: Dim.Type, _ w: BlockWindow, lag: Int, into out: UnsafeMutablePointer<Float>, stride C: Int
) {
    let F = w.frames, J = w.joints, D = Dim.count, JD = J &* D, back = lag &* J, backD = lag &* JD
    for f in 0..<min(lag, F) { (out + f &* C).update(repeating: 0, count: JD) }
    for f in lag..<max(F, lag) {
        let row = out + f &* C, p = w.present + f &* J, x = w.coordinates + f &* JD
        for j in 0..<J {
            let both = p[j] != 0 && p[j &- back] != 0
            for d in 0..<D {
                let k = j &* D &+ d
                row[k] = both ? x[k] - x[k &- backD] : 0
            }
        }
    }
}

extension OpGraph {
    /// `writeFrameDifferences` as operators: the differences of the frames from `lag` on, where
    /// both are present, after `lag` frames of zeros.
    func frameDifferences(_ x: BlockGraphInput, lag: Int, name: String) -> String {
        let F = x.frames, X = x.coordinates, P = x.present
        guard F > lag else { return frameRows(node("Mul", [X, constant(0)], name: name)) }
        let both = node("Mul", [slice(P, axis: 1, lag, F), slice(P, axis: 1, 0, F - lag)], name: name)
        let d = node("Mul", [node("Sub", [slice(X, axis: 1, lag, F), slice(X, axis: 1, 0, F - lag)], name: name), both], name: name)
        let first = node("Mul", [slice(X, axis: 1, 0, lag), constant(0)], name: name)
        return frameRows(node("Concat", [first, d], attributes: [("axis", .int(1))], name: name))
    }
}
