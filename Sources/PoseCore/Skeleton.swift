/// A skeleton schema: the ordered joints of a pose, their dimensionality and units,
/// and the anatomy that normalisation and augmentation need.
///
/// Joint order is always explicit: a dataset carries its skeleton, and a model file
/// carries the skeleton it was trained on, so a runtime can never feed joints in
/// another order without noticing.
public struct Skeleton: Codable, Hashable, Sendable {
    /// Units of the coordinates.
    public enum Units: String, Codable, Hashable, Sendable {
        /// Image pixels, origin top-left, y down (the Pose contract for 2D).
        case pixels
        /// Metres (3D bodies; origin at the root for Vision 3D).
        case metres
        /// Already normalised or of unknown scale; used as given.
        case unitless
    }

    /// A short identifier, e.g. `vision-body-2d` or `natops-8`.
    public var name: String
    /// Ordered joint names. Sides are anatomical: `leftElbow` is the person's left.
    public var joints: [String]
    /// 2 (x, y) or 3 (x, y, z).
    public var dimensions: Int
    public var units: Units
    /// Anatomical left/right pairs, swapped by a horizontal flip.
    public var mirrorPairs: [[String]]
    /// Bones as `[parent, child]` pairs (for bone features and drawings).
    public var bones: [[String]]
    /// Joints whose mean is the body centre (e.g. `["root"]` or both hips).
    public var centre: [String]
    /// Torso length = distance between the mean of `torsoUpper` and the mean of
    /// `torsoLower`; used to scale 2D poses. Empty when the skeleton has no torso.
    public var torsoUpper: [String]
    public var torsoLower: [String]

    public init(
        name: String, joints: [String], dimensions: Int, units: Units,
        mirrorPairs: [[String]] = [], bones: [[String]] = [], centre: [String] = [],
        torsoUpper: [String] = [], torsoLower: [String] = []
    ) {
        self.name = name
        self.joints = joints
        self.dimensions = dimensions
        self.units = units
        self.mirrorPairs = mirrorPairs
        self.bones = bones
        self.centre = centre
        self.torsoUpper = torsoUpper
        self.torsoLower = torsoLower
    }

    public var jointCount: Int { joints.count }

    /// Index of a joint by name, or nil.
    public func index(of joint: String) -> Int? { joints.firstIndex(of: joint) }

    /// Checks internal consistency: unique joints, known names in pairs/bones/centre/torso,
    /// dimensionality 2 or 3. Throws the first problem of `problems()`.
    public func validate() throws {
        if let (field, why) = problems().first {
            throw PoseError.invalidSkeleton(name: name, reason: "\(field): \(why)")
        }
    }

    /// Every consistency problem as `(field, what is wrong and what to do)`, in field order.
    public func problems() -> [(field: String, problem: String)] {
        var out: [(String, String)] = []
        if name.isEmpty { out.append(("name", "the name is empty; give a short identifier such as \"my-rig-12\"")) }
        if joints.isEmpty { out.append(("joints", "there are no joints; list the joint names in order")) }
        if dimensions != 2 && dimensions != 3 {
            out.append(("dimensions", "must be 2 (x, y) or 3 (x, y, z), not \(dimensions)"))
        }
        var seen = Set<String>()
        for (k, j) in joints.enumerated() {
            if j.isEmpty { out.append(("joints", "joint \(k) has an empty name")) } else if !seen.insert(j).inserted { out.append(("joints", "joint '\(j)' is listed twice (indices must be unique)")) }
        }
        let groups: [(String, [[String]])] = [
            ("mirrorPairs", mirrorPairs), ("bones", bones),
            ("centre", [centre]), ("torsoUpper", [torsoUpper]), ("torsoLower", [torsoLower]),
        ]
        for (field, lists) in groups {
            for list in lists {
                for j in list where !seen.contains(j) {
                    out.append((field, "names joint '\(j)', which is not in \"joints\"; fix the spelling or add the joint"))
                }
            }
        }
        var paired = Set<String>()
        for p in mirrorPairs {
            if p.count != 2 { out.append(("mirrorPairs", "each pair must name 2 joints [left, right], got \(p)")); continue }
            if p[0] == p[1] { out.append(("mirrorPairs", "pair \(p) names the same joint twice")) }
            for j in p where !paired.insert(j).inserted {
                out.append(("mirrorPairs", "joint '\(j)' is in two pairs; a joint has at most one mirror"))
            }
        }
        for b in bones where b.count != 2 {
            out.append(("bones", "each bone must name 2 joints [parent, child], got \(b)"))
        }
        if torsoUpper.isEmpty != torsoLower.isEmpty {
            out.append(("torsoUpper", "give both torsoUpper and torsoLower, or neither"))
        }
        return out
    }

    /// The left and right members of the mirror pairs that define the body's sides: the hip
    /// and shoulder pairs when there are any (they move least with the action), otherwise
    /// every pair. In a pair, the joint whose name contains "right" (any case) is the right one
    /// when exactly one does; otherwise the pair is taken as `[left, right]`. Used by the
    /// `alignFacing` preprocessing step.
    public var sideJoints: (left: [String], right: [String]) {
        let trunk = mirrorPairs.filter { p in p.allSatisfy { $0.lowercased().contains("hip") || $0.lowercased().contains("shoulder") } }
        let pairs = (trunk.isEmpty ? mirrorPairs : trunk).filter { $0.count == 2 }.map { p -> [String] in
            p[0].lowercased().contains("right") && !p[1].lowercased().contains("right") ? [p[1], p[0]] : p
        }
        return (pairs.map { $0[0] }, pairs.map { $0[1] })
    }

    /// For each joint index, the index of its mirror (itself when unpaired).
    public var mirrorPermutation: [Int] {
        var perm = Array(0..<joints.count)
        for pair in mirrorPairs {
            if let a = index(of: pair[0]), let b = index(of: pair[1]) {
                perm[a] = b
                perm[b] = a
            }
        }
        return perm
    }
}

/// Errors about poses, skeletons and feature pipelines.
public enum PoseError: Error, Equatable, CustomStringConvertible {
    case invalidSkeleton(name: String, reason: String)
    case unknownSkeleton(String, known: [String])
    case shapeMismatch(what: String, expected: Int, got: Int)
    case unknownJoint(String, skeleton: String)

    public var description: String {
        switch self {
        case .invalidSkeleton(let name, let reason):
            return "skeleton '\(name)' is invalid: \(reason)"
        case .unknownSkeleton(let name, let known):
            return "unknown skeleton '\(name)'; built-in skeletons are \(known.joined(separator: ", ")), or give a schema file"
        case .shapeMismatch(let what, let expected, let got):
            return "\(what): expected \(expected) values, got \(got)"
        case .unknownJoint(let joint, let skeleton):
            return "joint '\(joint)' is not in skeleton '\(skeleton)'"
        }
    }
}
