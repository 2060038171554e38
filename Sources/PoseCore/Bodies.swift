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

    /// One body of a skeleton of M copies (`bodies(M)`, `bodyCount` M > 1): the joints of body
    /// 1 without their `p1.` prefix, with body 1's mirror pairs, bones, centre and torso, named
    /// as before `bodies(M)` (the built-in skeleton, whose alias tables then apply); `self`
    /// for one body.
    public var oneBody: Skeleton {
        let m = bodyCount
        guard m > 1 else { return self }
        let prefix = "p1\(Skeleton.bodySeparator)"
        func first(_ names: [String]) -> [String] { names.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } }
        func firstLists(_ lists: [[String]]) -> [[String]] { lists.filter { $0.allSatisfy { $0.hasPrefix(prefix) } }.map(first) }
        let base = name.hasSuffix("x\(m)") ? String(name.dropLast("x\(m)".count)) : name
        if let builtIn = Skeleton.builtIn[base], builtIn.bodies(m) == self { return builtIn }
        return Skeleton(
            name: base, joints: first(joints), dimensions: dimensions, units: units, mirrorPairs: firstLists(mirrorPairs),
            bones: firstLists(bones), centre: first(centre), torsoUpper: first(torsoUpper), torsoLower: first(torsoLower))
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

extension Skeleton {
    /// How many bodies the skeleton holds: M when its joints are exactly M blocks named
    /// `p1.<joint>` ... `pM.<joint>` over the same joint names (`bodies(M)`), else 1.
    public var bodyCount: Int {
        guard let first = joints.first, first.hasPrefix("p1\(Skeleton.bodySeparator)") else { return 1 }
        let base = joints.prefix { $0.hasPrefix("p1\(Skeleton.bodySeparator)") }.map { $0.dropFirst(3) }
        guard !base.isEmpty, joints.count % base.count == 0 else { return 1 }
        let m = joints.count / base.count
        for b in 0..<m {
            for (j, name) in base.enumerated() where joints[b * base.count + j] != "p\(b + 1)\(Skeleton.bodySeparator)\(name)" {
                return 1
            }
        }
        return m
    }
}

extension PoseSequence {
    /// M bodies of one sequence side by side (the layout of `Skeleton.bodies(M)`): body b's
    /// joint j is joint `b·J + j`; a nil body is absent in every frame. The bodies must have
    /// the same frames, joints and dimensions; metadata is `bodies`' first non-nil one's.
    /// This is how a runtime feeds an interaction model (input.bodies = M) the people it tracks.
    public static func stackingBodies(_ bodies: [PoseSequence?]) -> PoseSequence {
        let some = bodies.compactMap { $0 }
        precondition(!some.isEmpty, "at least one body")
        let first = some[0]
        let m = bodies.count, J = first.jointCount, D = first.dimensions, F = first.frameCount
        precondition(some.allSatisfy { $0.jointCount == J && $0.dimensions == D && $0.frameCount == F }, "bodies of one shape")
        let hasConfidence = some.contains { $0.confidence != nil }
        var coords = [Float](repeating: 0, count: F * m * J * D)
        var present = [UInt8](repeating: 0, count: F * m * J)
        var conf: [Float]? = hasConfidence ? [Float](repeating: 0, count: F * m * J) : nil
        for (b, body) in bodies.enumerated() {
            guard let s = body else { continue }
            for f in 0..<F {
                for j in 0..<J where s.present[f * J + j] != 0 {
                    let dst = (f * m + b) * J + j
                    present[dst] = 1
                    conf?[dst] = s.confidence?[f * J + j] ?? 1
                    for c in 0..<D { coords[dst * D + c] = s.coordinates[(f * J + j) * D + c] }
                }
            }
        }
        return PoseSequence(
            id: first.id, label: first.label, group: first.group, split: first.split, jointCount: m * J, dimensions: D,
            frameCount: F, coordinates: coords, present: present, confidence: conf, timestamps: first.timestamps,
            events: first.events, imageSize: first.imageSize, bodyHeight: first.bodyHeight, heightEstimation: first.heightEstimation)
    }
}
