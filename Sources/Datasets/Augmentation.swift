import PoseCore

/// Training-time augmentation: probabilities and magnitudes, all off by default
/// (docs/preprocessing.md, "Augmentation"). Each transform is applied to a window with its
/// probability; magnitudes are drawn uniformly in the stated range.
///
/// JSON: an object with any of the keys below (missing keys are 0); an unknown key is an
/// error naming it, so a typo never silently turns an augmentation off.
public struct AugmentationConfig: Codable, Hashable, Sendable {
    /// Horizontal flip: x mirrored and anatomical left/right joints swapped. Only for classes
    /// that do not depend on the side.
    public var flipProbability: Double = 0
    /// Rotation by an angle uniform in ±`maxRotationDegrees` (image plane for 2D, about the
    /// vertical y axis for 3D).
    public var rotationProbability: Double = 0
    public var maxRotationDegrees: Double = 0
    /// Isotropic scale by a factor uniform in `1 ± maxScaleChange` (< 1).
    public var scaleProbability: Double = 0
    public var maxScaleChange: Double = 0
    /// Independent noise on each coordinate of each present joint, standard deviation
    /// `jitterStandardDeviation` × the window's body scale (`FeatureExtractor.torsoScale`).
    public var jitterProbability: Double = 0
    public var jitterStandardDeviation: Double = 0
    /// Playback speed factor uniform in `1 ± maxSpeedChange` (< 1): above 1 the action runs
    /// faster (the window spans more source frames).
    public var speedProbability: Double = 0
    public var maxSpeedChange: Double = 0
    /// Smooth non-uniform time warp of strength uniform in ±`maxTimeWarp` (< 1): one half of
    /// the window plays faster and the other slower; the ends stay.
    public var timeWarpProbability: Double = 0
    public var maxTimeWarp: Double = 0
    /// Dropped frames: each source frame is skipped with probability `frameDropRate` (< 1),
    /// as when a camera or detector drops frames.
    public var frameDropProbability: Double = 0
    public var frameDropRate: Double = 0
    /// Joint dropout: each present joint of each frame becomes absent with probability
    /// `jointDropoutRate` (< 1). Never makes a joint present.
    public var jointDropoutProbability: Double = 0
    public var jointDropoutRate: Double = 0
    /// 2D only: the camera moved about the body by a yaw θ uniform in ±`maxViewDegrees` (≤ 90),
    /// as far as a 2D skeleton allows: each joint's x about the window centre is foreshortened
    /// by cos θ and moved by sin θ times a guess of its depth from its bones' foreshortening,
    /// each limb toward the camera or away (`Augmenter.drawSides`). 3D windows are unchanged
    /// (rotation turns them).
    public var viewProbability: Double = 0
    public var maxViewDegrees: Double = 0
    /// 3D only: the camera tilted by an angle uniform in ±`maxTiltDegrees` (≤ 90) about a
    /// horizontal axis of uniform direction (a camera looking down or up, or rolled), so that the
    /// body's vertical is no longer the y axis. 2D windows are unchanged.
    public var tiltProbability: Double = 0
    public var maxTiltDegrees: Double = 0

    public init() {}

    /// True when at least one transform can change a window.
    public var isEnabled: Bool {
        flipProbability > 0 || (rotationProbability > 0 && maxRotationDegrees > 0)
            || (scaleProbability > 0 && maxScaleChange > 0)
            || (jitterProbability > 0 && jitterStandardDeviation > 0) || (speedProbability > 0 && maxSpeedChange > 0)
            || (timeWarpProbability > 0 && maxTimeWarp > 0) || (frameDropProbability > 0 && frameDropRate > 0)
            || (jointDropoutProbability > 0 && jointDropoutRate > 0) || (viewProbability > 0 && maxViewDegrees > 0)
            || (tiltProbability > 0 && maxTiltDegrees > 0)
    }

    /// Checks ranges; the error names the field.
    public func validate() throws {
        func check(_ name: String, _ v: Double, below limit: Double, inclusive: Bool) throws {
            guard v.isFinite && v >= 0 && (inclusive ? v <= limit : v < limit) else {
                throw AugmentationError.invalid(
                    field: name, reason: "must be in [0, \(limit.formatted)\(inclusive ? "]" : ")"), got \(v)")
            }
        }
        for (name, p) in [
            ("flipProbability", flipProbability), ("rotationProbability", rotationProbability),
            ("scaleProbability", scaleProbability), ("jitterProbability", jitterProbability),
            ("speedProbability", speedProbability), ("timeWarpProbability", timeWarpProbability),
            ("frameDropProbability", frameDropProbability), ("jointDropoutProbability", jointDropoutProbability),
            ("viewProbability", viewProbability), ("tiltProbability", tiltProbability),
        ] {
            try check(name, p, below: 1, inclusive: true)
        }
        try check("maxRotationDegrees", maxRotationDegrees, below: 180, inclusive: true)
        try check("maxScaleChange", maxScaleChange, below: 1, inclusive: false)
        try check("jitterStandardDeviation", jitterStandardDeviation, below: 1, inclusive: true)
        try check("maxSpeedChange", maxSpeedChange, below: 1, inclusive: false)
        try check("maxTimeWarp", maxTimeWarp, below: 1, inclusive: false)
        try check("frameDropRate", frameDropRate, below: 0.9, inclusive: true)
        try check("jointDropoutRate", jointDropoutRate, below: 1, inclusive: false)
        try check("maxViewDegrees", maxViewDegrees, below: 90, inclusive: true)
        try check("maxTiltDegrees", maxTiltDegrees, below: 90, inclusive: true)
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The JSON keys, sorted.
    public static var keyNames: [String] { keys.keys.sorted() }

    /// Computed: key paths are not `Sendable`, so a stored table would be shared mutable state
    /// to the compiler.
    private static var keys: [String: WritableKeyPath<AugmentationConfig, Double>] {
        [
            "flipProbability": \.flipProbability, "rotationProbability": \.rotationProbability,
            "maxRotationDegrees": \.maxRotationDegrees, "scaleProbability": \.scaleProbability,
            "maxScaleChange": \.maxScaleChange, "jitterProbability": \.jitterProbability,
            "jitterStandardDeviation": \.jitterStandardDeviation, "speedProbability": \.speedProbability,
            "maxSpeedChange": \.maxSpeedChange, "timeWarpProbability": \.timeWarpProbability,
            "maxTimeWarp": \.maxTimeWarp, "frameDropProbability": \.frameDropProbability,
            "frameDropRate": \.frameDropRate, "jointDropoutProbability": \.jointDropoutProbability,
            "jointDropoutRate": \.jointDropoutRate, "viewProbability": \.viewProbability, "maxViewDegrees": \.maxViewDegrees,
            "tiltProbability": \.tiltProbability, "maxTiltDegrees": \.maxTiltDegrees,
        ]
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: AnyKey.self)
        for key in c.allKeys {
            guard let path = Self.keys[key.stringValue] else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: c,
                    debugDescription: "unknown augmentation key '\(key.stringValue)'; known keys: \(Self.keys.keys.sorted().joined(separator: ", "))"
                )
            }
            self[keyPath: path] = try c.decode(Double.self, forKey: key)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: AnyKey.self)
        for (name, path) in Self.keys.sorted(by: { $0.key < $1.key }) {
            try c.encode(self[keyPath: path], forKey: AnyKey(stringValue: name))
        }
    }
}

extension Double {
    fileprivate var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}

public enum AugmentationError: Error, Equatable, CustomStringConvertible {
    case invalid(field: String, reason: String)

    public var description: String {
        switch self {
        case .invalid(let field, let reason): return "augmentation '\(field)' \(reason)"
        }
    }
}

/// Applies an `AugmentationConfig` to windows, driven by a `SeededGenerator`.
///
/// Conventions (docs/preprocessing.md): 2D coordinates are image pixels, y down; 3D
/// coordinates are y up (Vision 3D, Kinect), x to the side, z depth. For one window:
///
/// 1. Time (source positions, before sampling): frame drop, then time warp, then speed,
///    about the window's middle.
/// 2. Sampling from the source sequence at those positions (real neighbouring frames; the
///    window's padding policy beyond the sequence).
/// 3. One affine map about the window centre c (mean of all present joints): flip
///    (`x -> 2 c_x - x`, or `W - x` with a known image width W, and left/right joints
///    swapped), rotation (2D: `x' = cos·x - sin·y, y' = sin·x + cos·y` about c, clockwise on
///    screen for positive angles since y is down; 3D: about the vertical y axis,
///    `x' = cos·x + sin·z, z' = -sin·x + cos·z`), then scale.
/// 4. Jitter on present joints only (approximately Gaussian, `nextApproximateGaussianPair`);
/// 5. joint dropout of present joints only.
///
/// Absent joints stay absent with zero coordinates; no transform makes a joint present.
public struct Augmenter: Sendable {
    public let config: AugmentationConfig
    public let skeleton: Skeleton
    /// Image width in pixels for 2D flips (`x -> W - x`), or nil to mirror about the window centre.
    public let imageWidth: Float?
    /// Mirror pairs `(a, b)`, `a < b`, as joint indices.
    let mirrorPairs: [(Int, Int)]
    let torsoUpper: [Int]
    let torsoLower: [Int]
    /// The bones `(parent, child)` as joint indices, each child once, parents before their
    /// children (breadth first from the joints that are no bone's child): the depth guess of a
    /// view change walks them.
    let depthBones: [(parent: Int, child: Int)]
    /// For each of `depthBones`, whether it starts a limb (its parent is a root or a branch
    /// point, a joint with other than one child): a limb's bones share one depth side.
    let limbStarts: [Bool]

    public init(config: AugmentationConfig, skeleton: Skeleton, imageWidth: Double? = nil) throws {
        try config.validate()
        try skeleton.validate()
        if let w = imageWidth {
            guard w.isFinite && w > 0 else {
                throw AugmentationError.invalid(field: "imageWidth", reason: "must be a positive number of pixels, got \(w)")
            }
        }
        self.config = config
        self.skeleton = skeleton
        self.imageWidth = skeleton.dimensions == 2 && skeleton.units == .pixels ? imageWidth.map { Float($0) } : nil
        let perm = skeleton.mirrorPermutation
        mirrorPairs = perm.indices.filter { perm[$0] > $0 }.map { ($0, perm[$0]) }
        torsoUpper = skeleton.torsoUpper.compactMap { skeleton.index(of: $0) }
        torsoLower = skeleton.torsoLower.compactMap { skeleton.index(of: $0) }
        depthBones = Self.depthOrder(skeleton)
        limbStarts = Self.limbStarts(depthBones, joints: skeleton.jointCount)
    }

    /// `limbStarts` of `bones` (in `depthOrder`).
    static func limbStarts(_ bones: [(parent: Int, child: Int)], joints J: Int) -> [Bool] {
        var children = [Int](repeating: 0, count: J), isChild = [Bool](repeating: false, count: J)
        for (a, c) in bones {
            children[a] += 1
            isChild[c] = true
        }
        return bones.map { !isChild[$0.parent] || children[$0.parent] != 1 }
    }

    /// `depthBones` of `skeleton`: breadth first from every joint that is no bone's child, in
    /// joint order; a bone to a joint already reached is left out (a tree of the bones).
    static func depthOrder(_ skeleton: Skeleton) -> [(parent: Int, child: Int)] {
        let J = skeleton.jointCount
        var children = [[Int]](repeating: [], count: J)
        var isChild = [Bool](repeating: false, count: J)
        for b in skeleton.bones {
            guard b.count == 2, let a = skeleton.index(of: b[0]), let c = skeleton.index(of: b[1]), a != c else { continue }
            children[a].append(c)
            isChild[c] = true
        }
        var reached = isChild.map { !$0 }
        var queue = (0..<J).filter { reached[$0] }
        var order: [(parent: Int, child: Int)] = []
        var head = 0
        while head < queue.count {
            let a = queue[head]
            head += 1
            for c in children[a] where !reached[c] {
                reached[c] = true
                order.append((a, c))
                queue.append(c)
            }
        }
        return order
    }

    /// Buffers for one window of `frames` frames: the augmented window is left in
    /// `coordinates [F, J, D]`, `present [F, J]` and `confidence [F, J]`. Not thread-safe.
    public final class Workspace {
        public let frames: Int
        public let coordinates: UnsafeMutablePointer<Float>
        public let present: UnsafeMutablePointer<UInt8>
        /// Nil when the workspace was made without confidence (features that do not use it).
        public let confidence: UnsafeMutablePointer<Float>?
        let positions: UnsafeMutablePointer<Double>
        let lengths: UnsafeMutablePointer<Float>
        /// A view change's depth guess `[F, J]`, each joint's bone length `[J]` and the side of
        /// the body its bone points to `[J]` (+1 toward the camera, -1 away; +1 until a view
        /// change draws them).
        let depth: UnsafeMutablePointer<Float>
        let reach: UnsafeMutablePointer<Float>
        let side: UnsafeMutablePointer<Float>

        public init(frames F: Int, skeleton: Skeleton, confidence withConfidence: Bool = true) {
            frames = F
            let J = skeleton.jointCount, D = skeleton.dimensions
            coordinates = .allocate(capacity: max(1, F * J * D))
            present = .allocate(capacity: max(1, F * J))
            confidence = withConfidence ? .allocate(capacity: max(1, F * J)) : nil
            positions = .allocate(capacity: max(1, F))
            lengths = .allocate(capacity: max(1, F))
            depth = .allocate(capacity: max(1, F * J))
            reach = .allocate(capacity: max(1, J))
            side = .allocate(capacity: max(1, J))
            side.initialize(repeating: 1, count: max(1, J))
        }

        deinit {
            coordinates.deallocate()
            present.deallocate()
            confidence?.deallocate()
            positions.deallocate()
            lengths.deallocate()
            depth.deallocate()
            reach.deallocate()
            side.deallocate()
        }
    }

    /// A new window from `window`: time transforms take frames from the window itself, with
    /// `padding` beyond its ends. Same id, label, group and split.
    public func augment(
        _ window: PoseSequence, padding: WindowSpec.Padding = .edge, using g: inout SeededGenerator
    ) -> PoseSequence {
        let F = window.frameCount, J = window.jointCount, D = window.dimensions
        precondition(J == skeleton.jointCount && D == skeleton.dimensions, "window skeleton mismatch")
        let ws = Workspace(frames: F, skeleton: skeleton)
        augment(source: window, first: 0, step: 1, padding: padding, workspace: ws, using: &g)
        let coordinates = Array(UnsafeBufferPointer(start: ws.coordinates, count: F * J * D))
        let present = Array(UnsafeBufferPointer(start: ws.present, count: F * J))
        let confidence = window.confidence == nil ? nil : Array(UnsafeBufferPointer(start: ws.confidence!, count: F * J))
        return PoseSequence(
            id: window.id, label: window.label, group: window.group, split: window.split, jointCount: J, dimensions: D,
            frameCount: F, coordinates: coordinates, present: present, confidence: confidence)
    }

    /// The core: augments the window of `workspace.frames` frames whose un-augmented source
    /// positions in `source` are `first + i * step`, leaving it in the workspace. Allocates
    /// nothing. Random draws, in order: drop (coin, then one per candidate frame), warp (coin,
    /// strength), speed (coin, factor), flip (coin), view (2D only: coin, angle), rotation (coin, angle), scale (coin,
    /// factor), jitter (coin, then one 64-bit draw per present joint in 2D, two in 3D),
    /// dropout (coin, then one per present joint). A coin is drawn only for a transform whose
    /// magnitude is > 0 and whose probability is strictly between 0 and 1.
    public func augment(
        source: PoseSequence, first: Double, step: Double, padding: WindowSpec.Padding, workspace ws: Workspace,
        using g: inout SeededGenerator
    ) {
        let F = ws.frames
        let c = config
        func coin(_ p: Double) -> Bool { p >= 1 || (p > 0 && g.nextUnitDouble() < p) }

        // 1. Time: u[i] is a (fractional) frame index of the un-augmented window.
        let u = ws.positions
        for i in 0..<F { u[i] = Double(i) }
        if c.frameDropRate > 0 && coin(c.frameDropProbability) {
            var kept = 0, candidate = 0
            let limit = F * 16
            while kept < F {
                if candidate >= limit || g.nextUnitDouble() >= c.frameDropRate {
                    u[kept] = Double(candidate)
                    kept += 1
                }
                candidate += 1
            }
            // Centre the longer span on the window (integer shift: no interpolation).
            let shift = ((u[0] + u[F - 1] - Double(F - 1)) / 2).rounded(.down)
            for i in 0..<F { u[i] -= shift }
        }
        let middle = Double(F - 1) / 2
        if c.maxTimeWarp > 0 && F > 2 && coin(c.timeWarpProbability) {
            let s = (g.nextUnitDouble() * 2 - 1) * c.maxTimeWarp
            let period = Double(F - 1)
            for i in 0..<F { u[i] += s * period / (2 * Double.pi) * _sin(2 * Double.pi * u[i] / period) }
        }
        var speed = 1.0
        if c.maxSpeedChange > 0 && coin(c.speedProbability) {
            speed = 1 + (g.nextUnitDouble() * 2 - 1) * c.maxSpeedChange
        }
        for i in 0..<F { u[i] = first + (middle + (u[i] - middle) * speed) * step }

        // 2. Sampling.
        source.sample(
            at: UnsafeBufferPointer(start: u, count: F), padding: padding, coordinates: ws.coordinates,
            present: ws.present, confidence: ws.confidence)

        // 3-5. Space.
        if skeleton.dimensions == 2 {
            spatial(Two.self, ws, using: &g)
        } else {
            spatial(Three.self, ws, using: &g)
        }
    }

    /// Steps 3-5 on the sampled window in `ws`; generic over the dimensionality so that inner
    /// loops unroll (index arithmetic wraps: the shapes are fixed by the workspace).
    @inline(__always)
    private func spatial<Dim: AugmentDimensions>(_: Dim.Type, _ ws: Workspace, using g: inout SeededGenerator) {
        let F = ws.frames, J = skeleton.jointCount, D = Dim.count, FJ = F &* J
        let c = config
        func coin(_ p: Double) -> Bool { p >= 1 || (p > 0 && g.nextUnitDouble() < p) }
        let xyz = ws.coordinates, present = ws.present, confidence = ws.confidence

        // 3. Affine map about the window centre.
        let flip = c.flipProbability > 0 && coin(c.flipProbability)
        var view: Float = 0
        if D == 2 && c.maxViewDegrees > 0 && coin(c.viewProbability) {
            view = Float((g.nextUnitDouble() * 2 - 1) * c.maxViewDegrees * Double.pi / 180)
        }
        var angle: Float = 0
        if c.maxRotationDegrees > 0 && coin(c.rotationProbability) {
            angle = Float((g.nextUnitDouble() * 2 - 1) * c.maxRotationDegrees * Double.pi / 180)
        }
        var scale: Float = 1
        if c.maxScaleChange > 0 && coin(c.scaleProbability) {
            scale = Float(1 + (g.nextUnitDouble() * 2 - 1) * c.maxScaleChange)
        }
        var centre: (Float, Float, Float) = (0, 0, 0)
        var n = 0
        for i in 0..<FJ where present[i] != 0 {
            centre.0 += xyz[i &* D]
            centre.1 += xyz[i &* D &+ 1]
            if D == 3 { centre.2 += xyz[i &* D &+ 2] }
            n += 1
        }
        guard n > 0 else { return }  // nothing seen: nothing to transform
        centre = (centre.0 / Float(n), centre.1 / Float(n), centre.2 / Float(n))
        if view != 0 {
            drawSides(ws, using: &g)
            turnView(ws, by: view, about: centre.0)
        }
        if flip || angle != 0 || scale != 1 {
            if flip {
                for f in 0..<F {
                    let x = xyz + f &* J &* D, p = present + f &* J, k = confidence.map { $0 + f &* J }
                    for (a, b) in mirrorPairs {
                        (p[a], p[b]) = (p[b], p[a])
                        if let k { (k[a], k[b]) = (k[b], k[a]) }
                        for d in 0..<D { (x[a &* D &+ d], x[b &* D &+ d]) = (x[b &* D &+ d], x[a &* D &+ d]) }
                    }
                }
            }
            // x' = outX + M (x - c) with M = scale * R * diag(sx, 1, 1); absent joints stay 0.
            let cosA = _cos(angle) * scale, sinA = _sin(angle) * scale
            let sx: Float = flip ? -1 : 1
            let outX = flip ? (imageWidth.map { $0 - centre.0 } ?? centre.0) : centre.0
            for i in 0..<FJ where present[i] != 0 {
                let v = xyz + i &* D
                let x = (v[0] - centre.0) * sx, y = v[1] - centre.1
                if D == 2 {
                    v[0] = outX + cosA * x - sinA * y
                    v[1] = centre.1 + sinA * x + cosA * y
                } else {
                    let z = v[2] - centre.2
                    v[0] = outX + cosA * x + sinA * z
                    v[1] = centre.1 + scale * y
                    v[2] = centre.2 - sinA * x + cosA * z
                }
            }
            centre.0 = outX
        }
        if D == 3 && c.maxTiltDegrees > 0 && coin(c.tiltProbability) {
            let a = Float((g.nextUnitDouble() * 2 - 1) * c.maxTiltDegrees * Double.pi / 180)
            let psi = Float(g.nextUnitDouble() * 2 * Double.pi)
            tilt(ws, by: a, axis: (_cos(psi), _sin(psi)), about: centre)
        }

        // 4. Jitter, scaled by the body size.
        if c.jitterStandardDeviation > 0 && coin(c.jitterProbability) {
            let sigma = Float(c.jitterStandardDeviation) * bodyScale(ws: ws, dimensions: D)
            if sigma > 0 && sigma.isFinite {
                var local = g  // a local copy keeps the state in registers
                for i in 0..<FJ where present[i] != 0 {
                    let v = xyz + i &* D
                    let (a, b) = local.nextApproximateGaussianPair()
                    v[0] += sigma * a
                    v[1] += sigma * b
                    if D == 3 { v[2] += sigma * local.nextApproximateGaussianPair().0 }
                }
                g = local
            }
        }

        // 5. Joint dropout.
        if c.jointDropoutRate > 0 && coin(c.jointDropoutProbability) {
            // Compare 53-bit uniforms with the rate as an integer threshold (same as
            // `nextUnitDouble() < rate`).
            let threshold = UInt64(c.jointDropoutRate * 0x1p53)
            for i in 0..<FJ where present[i] != 0 && (g.next() >> 11) < threshold {
                present[i] = 0
                confidence?[i] = 0
                for d in 0..<D { xyz[i &* D &+ d] = 0 }
            }
        }
    }

    /// Draws the depth side of each limb for a view change into `ws.side`: with even odds every
    /// limb toward the camera, else each limb (`limbStarts`) toward or away with even odds, its
    /// bones following their parent's. Foreshortening tells how far a bone points out of the
    /// image, not to which side: "toward" for every limb put a leg stepping back, or an arm drawn
    /// back to throw, on the wrong side of the body in the side view, and sides drawn for each
    /// limb alone made both arms pushing forward look like one thrown back half the time.
    func drawSides(_ ws: Workspace, using g: inout SeededGenerator) {
        let side = ws.side, each = g.next() >> 63 != 0
        for (k, (a, b)) in depthBones.enumerated() {
            side[b] = !limbStarts[k] ? side[a] : each && g.next() >> 63 != 0 ? -1 : 1
        }
    }

    /// A 2D window seen by a camera moved by `theta` about the vertical axis through x = `cx`:
    /// `x' = cx + cos θ (x - cx) + sin θ d`, y unchanged, where d is a guess of the joint's depth
    /// toward the camera (pixels) from its bones' foreshortening: a bone whose image length l is
    /// below its longest in the window L points out of the image by `sqrt(L² - l²)`, toward the
    /// camera or away as `ws.side` says of the bone's child (`drawSides`); d sums these from
    /// the joints that are no bone's child (depth 0) along `depthBones`. A joint whose bone has
    /// an absent end in a frame keeps its parent's depth there; a skeleton without bones gets
    /// d = 0 (cos θ alone). Present joints only: absent ones stay absent with zero coordinates.
    func turnView(_ ws: Workspace, by theta: Float, about cx: Float) {
        let F = ws.frames, J = skeleton.jointCount
        let xy = ws.coordinates, present = ws.present, depth = ws.depth, reach = ws.reach, side = ws.side
        let cosT = _cos(theta), sinT = _sin(theta)
        for (_, child) in depthBones { reach[child] = 0 }
        for (a, b) in depthBones {
            for f in 0..<F where present[f &* J &+ a] != 0 && present[f &* J &+ b] != 0 {
                let dx = xy[(f &* J &+ b) &* 2] - xy[(f &* J &+ a) &* 2], dy = xy[(f &* J &+ b) &* 2 &+ 1] - xy[(f &* J &+ a) &* 2 &+ 1]
                reach[b] = max(reach[b], dx * dx + dy * dy)
            }
        }
        for f in 0..<F {
            let d = depth + f &* J, p = present + f &* J, v = xy + f &* J &* 2
            for j in 0..<J { d[j] = 0 }
            for (a, b) in depthBones {
                var step: Float = 0
                if p[a] != 0 && p[b] != 0 {
                    let dx = v[b &* 2] - v[a &* 2], dy = v[b &* 2 &+ 1] - v[a &* 2 &+ 1]
                    step = side[b] * (max(0, reach[b] - (dx * dx + dy * dy))).squareRoot()
                }
                d[b] = d[a] + step
            }
            for j in 0..<J where p[j] != 0 { v[j &* 2] = cx + cosT * (v[j &* 2] - cx) + sinT * d[j] }
        }
    }

    /// A 3D window turned by `angle` about the horizontal axis (`axis.0`, 0, `axis.1`) (a unit
    /// vector) through `centre` (Rodrigues' formula): a camera tilted. Present joints only.
    func tilt(_ ws: Workspace, by angle: Float, axis: (Float, Float), about centre: (Float, Float, Float)) {
        let (ux, uz) = axis, cosA = _cos(angle), sinA = _sin(angle)
        let xyz = ws.coordinates, present = ws.present
        for i in 0..<(ws.frames &* skeleton.jointCount) where present[i] != 0 {
            let v = xyz + i &* 3
            let x = v[0] - centre.0, y = v[1] - centre.1, z = v[2] - centre.2
            let along = (ux * x + uz * z) * (1 - cosA)
            // u × v for u = (ux, 0, uz): (-uz y, uz x - ux z, ux y).
            v[0] = centre.0 + x * cosA - uz * y * sinA + ux * along
            v[1] = centre.1 + y * cosA + (uz * x - ux * z) * sinA
            v[2] = centre.2 + z * cosA + ux * y * sinA + uz * along
        }
    }

    /// The body scale of the window in the workspace, as `scaleByTorso` measures it.
    private func bodyScale(ws: Workspace, dimensions D: Int) -> Float {
        torsoUpper.withUnsafeBufferPointer { u in
            torsoLower.withUnsafeBufferPointer { l in
                FeatureExtractor.torsoScale(
                    ws.coordinates, ws.present, frames: ws.frames, joints: skeleton.jointCount, dimensions: D, upper: u, lower: l,
                    lengths: ws.lengths)
            }
        }
    }
}

/// A dimensionality known at compile time (2 or 3), so that the kernels specialise.
protocol AugmentDimensions { static var count: Int { get } }
private enum Two: AugmentDimensions { static var count: Int { 2 } }
private enum Three: AugmentDimensions { static var count: Int { 3 } }

#if canImport(Glibc)
    import Glibc
    private func _sin(_ x: Double) -> Double { Glibc.sin(x) }
    private func _sin(_ x: Float) -> Float { Glibc.sinf(x) }
    private func _cos(_ x: Float) -> Float { Glibc.cosf(x) }
#elseif canImport(Darwin)
    import Darwin
    private func _sin(_ x: Double) -> Double { Darwin.sin(x) }
    private func _sin(_ x: Float) -> Float { Darwin.sinf(x) }
    private func _cos(_ x: Float) -> Float { Darwin.cosf(x) }
#else
    import Foundation
    private func _sin(_ x: Double) -> Double { Foundation.sin(x) }
    private func _sin(_ x: Float) -> Float { Foundation.sin(x) }
    private func _cos(_ x: Float) -> Float { Foundation.cos(x) }
#endif
