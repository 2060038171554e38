/// Turns an exact-length window of poses into the network input `[frames, channelsPerFrame]`.
///
/// Shapes: F = frames, J = joints, D = dimensions, B = bones, C = channels per frame.
/// Only present joints are transformed; absent joints become zeros in every block, and the
/// `mask` block says which they were. Nothing is interpolated.
public struct FeatureExtractor: Sendable {
    public let spec: InputSpec
    private let steps: [ResolvedStep]
    private let bones: [(parent: Int, child: Int)]

    private enum ResolvedStep {
        case centre([Int], perFrame: Bool)
        case scaleByTorso(upper: [Int], lower: [Int])
        case divide([Float])
    }

    public init(_ spec: InputSpec) throws {
        try spec.validate()
        self.spec = spec
        let s = spec.skeleton
        func idx(_ names: [String]) -> [Int] { names.map { s.index(of: $0)! } }
        steps = spec.steps.map { step in
            switch step {
            case .centre(let joints, let perFrame): return .centre(idx(joints), perFrame: perFrame)
            case .scaleByTorso(let upper, let lower): return .scaleByTorso(upper: idx(upper), lower: idx(lower))
            case .divide(let by): return .divide(by)
            }
        }
        bones = s.bones.map { (s.index(of: $0[0])!, s.index(of: $0[1])!) }
    }

    /// Writes the features of `window` (exactly `spec.window.frames` frames) to
    /// `out[0 ..< spec.valuesPerWindow]`.
    public func extract(_ window: PoseSequence, into out: UnsafeMutablePointer<Float>) {
        let F = spec.window.frames, J = window.jointCount, D = window.dimensions
        precondition(window.frameCount == F, "window has \(window.frameCount) frames, expected \(F)")
        precondition(J == spec.skeleton.jointCount && D == spec.skeleton.dimensions, "window skeleton mismatch")
        var xyz = window.coordinates  // [F, J, D], transformed in place
        let present = window.present  // [F, J]
        for step in steps {
            switch step {
            case .centre(let joints, let perFrame):
                centre(&xyz, present, F: F, J: J, D: D, joints: joints, perFrame: perFrame)
            case .scaleByTorso(let upper, let lower):
                let s = torsoScale(xyz, present, F: F, J: J, D: D, upper: upper, lower: lower)
                if s > 0 && s.isFinite {
                    let inv = 1 / s
                    for i in 0..<xyz.count { xyz[i] *= inv }
                }
            case .divide(let by):
                for i in 0..<(F * J) where present[i] != 0 {
                    for d in 0..<min(D, by.count) where by[d] != 0 { xyz[i * D + d] /= by[d] }
                }
            }
        }
        let C = spec.channelsPerFrame
        var o = 0  // offset of the current block inside a frame
        for block in spec.channels {
            switch block {
            case .coordinates:
                for f in 0..<F {
                    for k in 0..<(J * D) {
                        out[f * C + o + k] = present[f * J + k / D] != 0 ? xyz[f * J * D + k] : 0
                    }
                }
            case .confidence:
                for f in 0..<F {
                    for j in 0..<J {
                        let i = f * J + j
                        out[f * C + o + j] = present[i] == 0 ? 0 : (window.confidence?[i] ?? 1)
                    }
                }
            case .mask:
                for f in 0..<F {
                    for j in 0..<J { out[f * C + o + j] = present[f * J + j] != 0 ? 1 : 0 }
                }
            case .motion:
                for f in 0..<F {
                    for j in 0..<J {
                        let both = f > 0 && present[f * J + j] != 0 && present[(f - 1) * J + j] != 0
                        for d in 0..<D {
                            out[f * C + o + j * D + d] =
                                both ? xyz[(f * J + j) * D + d] - xyz[((f - 1) * J + j) * D + d] : 0
                        }
                    }
                }
            case .bones:
                for f in 0..<F {
                    for (b, bone) in bones.enumerated() {
                        let both = present[f * J + bone.parent] != 0 && present[f * J + bone.child] != 0
                        for d in 0..<D {
                            out[f * C + o + b * D + d] =
                                both ? xyz[(f * J + bone.child) * D + d] - xyz[(f * J + bone.parent) * D + d] : 0
                        }
                    }
                }
            }
            o += block.width(spec.skeleton)
        }
    }

    /// Convenience: the features of one window as a new array.
    public func extract(_ window: PoseSequence) -> [Float] {
        var out = [Float](repeating: 0, count: spec.valuesPerWindow)
        out.withUnsafeMutableBufferPointer { extract(window, into: $0.baseAddress!) }
        return out
    }

    // MARK: - Steps

    /// Mean of the present joints among `joints` at frame f, or nil.
    private func meanOf(
        _ joints: [Int], frame f: Int, _ xyz: [Float], _ present: [UInt8], J: Int, D: Int
    ) -> [Float]? {
        var sum = [Float](repeating: 0, count: D)
        var n = 0
        for j in joints where present[f * J + j] != 0 {
            for d in 0..<D { sum[d] += xyz[(f * J + j) * D + d] }
            n += 1
        }
        guard n > 0 else { return nil }
        return sum.map { $0 / Float(n) }
    }

    private func centre(
        _ xyz: inout [Float], _ present: [UInt8], F: Int, J: Int, D: Int, joints: [Int], perFrame: Bool
    ) {
        let perFrameCentres = (0..<F).map { meanOf(joints, frame: $0, xyz, present, J: J, D: D) }
        var windowCentre = [Float](repeating: 0, count: D)
        let seen = perFrameCentres.compactMap { $0 }
        if !seen.isEmpty {
            for c in seen { for d in 0..<D { windowCentre[d] += c[d] } }
            for d in 0..<D { windowCentre[d] /= Float(seen.count) }
        } else {
            // No centre joint anywhere in the window: fall back to the mean of all present joints.
            var n = 0
            for i in 0..<(F * J) where present[i] != 0 {
                for d in 0..<D { windowCentre[d] += xyz[i * D + d] }
                n += 1
            }
            if n > 0 { for d in 0..<D { windowCentre[d] /= Float(n) } }
        }
        for f in 0..<F {
            let c = perFrame ? (perFrameCentres[f] ?? windowCentre) : windowCentre
            for j in 0..<J where present[f * J + j] != 0 {
                for d in 0..<D { xyz[(f * J + j) * D + d] -= c[d] }
            }
        }
    }

    private func torsoScale(
        _ xyz: [Float], _ present: [UInt8], F: Int, J: Int, D: Int, upper: [Int], lower: [Int]
    ) -> Float {
        var lengths: [Float] = []
        for f in 0..<F {
            guard let u = meanOf(upper, frame: f, xyz, present, J: J, D: D),
                let l = meanOf(lower, frame: f, xyz, present, J: J, D: D)
            else { continue }
            var s: Float = 0
            for d in 0..<D { s += (u[d] - l[d]) * (u[d] - l[d]) }
            lengths.append(s.squareRoot())
        }
        if !lengths.isEmpty {
            lengths.sort()
            let m = lengths.count / 2
            let median = lengths.count % 2 == 1 ? lengths[m] : (lengths[m - 1] + lengths[m]) / 2
            if median > 0 { return median }
        }
        // No torso in the window: RMS distance of the present joints from their mean.
        var mean = [Float](repeating: 0, count: D)
        var n = 0
        for i in 0..<(F * J) where present[i] != 0 {
            for d in 0..<D { mean[d] += xyz[i * D + d] }
            n += 1
        }
        guard n > 0 else { return 0 }
        for d in 0..<D { mean[d] /= Float(n) }
        var ss: Float = 0
        for i in 0..<(F * J) where present[i] != 0 {
            for d in 0..<D { ss += (xyz[i * D + d] - mean[d]) * (xyz[i * D + d] - mean[d]) }
        }
        return (ss / Float(n)).squareRoot()
    }
}
