/// Several bodies in one pose, for interaction models (two people in NTU RGB+D's mutual
/// actions, two animals): M copies of a skeleton side by side.
extension Skeleton {
    /// The separator between a body's prefix and the joint name: `p2.leftWrist`.
    public static let bodySeparator: Character = "."

    /// M copies of this skeleton: joints `p1.<joint>` ... `pM.<joint>`, body-major (body b's
    /// joint j is joint `b·J + j`, 0-based b), named `<name>x<M>`. Each body keeps its own
    /// mirror pairs and bones (a horizontal flip swaps sides, never people); the centre and the
    /// torso are every body's (their mean over the bodies present). `bodies(1)` is `self`.
    public func bodies(_ m: Int) -> Skeleton {
        precondition(m >= 1, "at least one body")
        guard m > 1 else { return self }
        func prefixed(_ names: [String]) -> [String] {
            (1...m).flatMap { b in names.map { "p\(b)\(Skeleton.bodySeparator)\($0)" } }
        }
        func perBody(_ lists: [[String]]) -> [[String]] {
            (1...m).flatMap { b in lists.map { $0.map { "p\(b)\(Skeleton.bodySeparator)\($0)" } } }
        }
        return Skeleton(
            name: "\(name)x\(m)", joints: prefixed(joints), dimensions: dimensions, units: units,
            mirrorPairs: perBody(mirrorPairs), bones: perBody(bones), centre: prefixed(centre),
            torsoUpper: prefixed(torsoUpper), torsoLower: prefixed(torsoLower))
    }

    /// A built-in skeleton by name, or M copies of one as `<name>x<M>` (`kinect-v2-25x2`).
    public static func builtIn(named name: String) -> Skeleton? {
        if let s = builtIn[name] { return s }
        guard let x = name.lastIndex(of: "x"), let m = Int(name[name.index(after: x)...]), m > 1, m <= 8,
            let base = builtIn[String(name[..<x])]
        else { return nil }
        return base.bodies(m)
    }
}
