/// `motion`, `J·D` values: the frame difference `c'[f, j]_d − c'[f−1, j]_d` at `q = j·D + d`
/// if joint j is present at f and at f−1, else 0; all 0 at f = 0 (DD-Net's slow motion).
public struct MotionBlock: FrameDifferenceBlock {
    public static let name = "motion"
    public static let lag = 1
    public let dimensions: Int
    public init(dimensions: Int) { self.dimensions = dimensions }
}

extension ChannelBlock {
    public static let motion = ChannelBlock(MotionBlock.self)
}

/// Differences `lag` frames apart, a D-vector per joint: `c'[f, j]_d − c'[f−lag, j]_d` at
/// `q = j·D + d` where joint j is present at both frames, else 0; all 0 at frames `f < lag`.
public protocol FrameDifferenceBlock: JointVectorBlock {
    static var lag: Int { get }
}

extension FrameDifferenceBlock {
    @inline(__always)
    public func write<Dim: StaticDimensions>(_: Dim.Type, _ w: BlockWindow, into out: UnsafeMutablePointer<Float>, stride C: Int) {
        let lag = Self.lag, F = w.frames, J = w.joints, D = Dim.count, JD = J &* D, back = lag &* J, backD = lag &* JD
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

    /// The differences of the frames from `lag` on, where both are present, after `lag` frames of zeros.
    public func graph(_ g: OpGraph, _ x: BlockGraphInput) -> String {
        let lag = Self.lag, F = x.frames, X = x.coordinates, P = x.present, name = "pre." + Self.name
        guard F > lag else { return g.frameRows(g.node("Mul", [X, g.constant(0)], name: name)) }
        let both = g.node("Mul", [g.slice(P, axis: 1, lag, F), g.slice(P, axis: 1, 0, F - lag)], name: name)
        let d = g.node("Mul", [g.node("Sub", [g.slice(X, axis: 1, lag, F), g.slice(X, axis: 1, 0, F - lag)], name: name), both], name: name)
        let first = g.node("Mul", [g.slice(X, axis: 1, 0, lag), g.constant(0)], name: name)
        return g.frameRows(g.node("Concat", [first, d], attributes: [("axis", .int(1))], name: name))
    }
}
