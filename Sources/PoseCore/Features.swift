/// Turns an exact-length window of poses into the network input `[frames, channelsPerFrame]`.
///
/// Shapes: F = frames, J = joints, D = dimensions, B = bones, C = channels per frame.
/// The steps of the `InputSpec` transform the coordinates of present joints in order; then
/// each channel block is written at its offset in every frame. Absent joints have zero
/// coordinates throughout and are zero in every block; the `mask` (and `confidence`) block
/// says which they were. Nothing is interpolated. The exact maths is in
/// docs/preprocessing.md; all arithmetic is float32, sums in joint order.
///
/// Speed: `extract(..., workspace:)` allocates nothing; keep one `Workspace` per thread.
public struct FeatureExtractor: Sendable {
    public let spec: InputSpec
    private let steps: [ResolvedStep]
    private let boneParents: [Int]
    private let boneChildren: [Int]
    private let layout: [(block: ChannelBlock, offset: Int)]

    private enum ResolvedStep {
        case centre([Int], perFrame: Bool)
        case scaleByTorso(upper: [Int], lower: [Int])
        case divide([Float])
    }

    public init(_ spec: InputSpec) throws {
        try spec.validate()
        self.spec = spec
        let s = spec.skeleton
        func idx(_ names: [String]) -> [Int] { names.map { s.index(of: $0)! } }  // validated above
        steps = spec.steps.map { step in
            switch step {
            case .centre(let joints, let perFrame): return .centre(idx(joints), perFrame: perFrame)
            case .scaleByTorso(let upper, let lower): return .scaleByTorso(upper: idx(upper), lower: idx(lower))
            case .divide(let by): return .divide(by)
            }
        }
        boneParents = s.bones.map { s.index(of: $0[0])! }
        boneChildren = s.bones.map { s.index(of: $0[1])! }
        layout = spec.channelLayout.map { ($0.block, $0.offset) }
    }

    /// Scratch memory for one extraction at a time: the transformed coordinates `[F, J, D]`,
    /// per-frame centres `[F, D]` and per-frame torso lengths `[F]`. Not thread-safe.
    public final class Workspace {
        let frames: Int
        let xyz: UnsafeMutablePointer<Float>
        let centres: UnsafeMutablePointer<Float>
        let hasCentre: UnsafeMutablePointer<Bool>
        let lengths: UnsafeMutablePointer<Float>

        init(frames F: Int, joints J: Int, dimensions D: Int) {
            frames = F
            xyz = .allocate(capacity: max(1, F * J * D))
            centres = .allocate(capacity: max(1, F * D))
            hasCentre = .allocate(capacity: max(1, F))
            lengths = .allocate(capacity: max(1, F))
        }

        deinit {
            xyz.deallocate()
            centres.deallocate()
            hasCentre.deallocate()
            lengths.deallocate()
        }
    }

    public func makeWorkspace() -> Workspace {
        Workspace(frames: spec.window.frames, joints: spec.skeleton.jointCount, dimensions: spec.skeleton.dimensions)
    }

    /// Writes the features of `window` (exactly `spec.window.frames` frames of the spec's
    /// skeleton) to `out[0 ..< spec.valuesPerWindow]`.
    public func extract(_ window: PoseSequence, into out: UnsafeMutablePointer<Float>, workspace: Workspace) {
        let F = spec.window.frames
        precondition(window.frameCount == F, "window has \(window.frameCount) frames, expected \(F)")
        precondition(
            window.jointCount == spec.skeleton.jointCount && window.dimensions == spec.skeleton.dimensions,
            "window skeleton mismatch")
        window.coordinates.withUnsafeBufferPointer { c in
            window.present.withUnsafeBufferPointer { p in
                if let confidence = window.confidence {
                    confidence.withUnsafeBufferPointer { k in
                        extract(
                            coordinates: c.baseAddress!, present: p.baseAddress!, confidence: k.baseAddress!, into: out,
                            workspace: workspace)
                    }
                } else {
                    extract(coordinates: c.baseAddress!, present: p.baseAddress!, confidence: nil, into: out, workspace: workspace)
                }
            }
        }
    }

    /// Writes the features of `window` to `out[0 ..< spec.valuesPerWindow]` (allocates a workspace).
    public func extract(_ window: PoseSequence, into out: UnsafeMutablePointer<Float>) {
        extract(window, into: out, workspace: makeWorkspace())
    }

    /// Convenience: the features of one window as a new array.
    public func extract(_ window: PoseSequence) -> [Float] {
        var out = [Float](repeating: 0, count: spec.valuesPerWindow)
        out.withUnsafeMutableBufferPointer { extract(window, into: $0.baseAddress!) }
        return out
    }

    /// The kernel: a window given as `coordinates [F, J, D]`, `present [F, J]` and optional
    /// `confidence [F, J]` (nil: 1 for present joints). Coordinates of absent joints are
    /// ignored. Writes `out [F, C]`.
    public func extract(
        coordinates: UnsafePointer<Float>, present: UnsafePointer<UInt8>, confidence: UnsafePointer<Float>?,
        into out: UnsafeMutablePointer<Float>, workspace ws: Workspace
    ) {
        let F = spec.window.frames, J = spec.skeleton.jointCount, D = spec.skeleton.dimensions
        precondition(ws.frames == F, "workspace made for another spec")
        let xyz = ws.xyz
        for i in 0..<(F * J) {
            if present[i] != 0 {
                for d in 0..<D { xyz[i * D + d] = coordinates[i * D + d] }
            } else {
                for d in 0..<D { xyz[i * D + d] = 0 }
            }
        }
        for step in steps {
            switch step {
            case .centre(let joints, let perFrame):
                centre(xyz, present, F: F, J: J, D: D, joints: joints, perFrame: perFrame, ws: ws)
            case .scaleByTorso(let upper, let lower):
                let s = torsoScale(xyz, present, F: F, J: J, D: D, upper: upper, lower: lower, ws: ws)
                if s > 0 && s.isFinite {
                    for i in 0..<(F * J) where present[i] != 0 {
                        for d in 0..<D { xyz[i * D + d] /= s }
                    }
                }
            case .divide(let by):
                for i in 0..<(F * J) where present[i] != 0 {
                    for d in 0..<D { xyz[i * D + d] /= by[d] }
                }
            }
        }
        writeBlocks(xyz, present, confidence, out, F: F, J: J, D: D)
    }

    // MARK: - Channel blocks

    private func writeBlocks(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, _ confidence: UnsafePointer<Float>?,
        _ out: UnsafeMutablePointer<Float>, F: Int, J: Int, D: Int
    ) {
        let C = spec.channelsPerFrame, JD = J * D
        for (block, o) in layout {
            switch block {
            case .coordinates:
                for f in 0..<F { (out + f * C + o).update(from: xyz + f * JD, count: JD) }
            case .confidence:
                for f in 0..<F {
                    let row = out + f * C + o
                    for j in 0..<J {
                        let i = f * J + j
                        row[j] = present[i] == 0 ? 0 : (confidence?[i] ?? 1)
                    }
                }
            case .mask:
                for f in 0..<F {
                    let row = out + f * C + o
                    for j in 0..<J { row[j] = present[f * J + j] != 0 ? 1 : 0 }
                }
            case .motion:
                (out + o).update(repeating: 0, count: JD)  // frame 0
                for f in 1..<max(F, 1) {
                    let row = out + f * C + o
                    for j in 0..<J {
                        let i = f * J + j
                        if present[i] != 0 && present[i - J] != 0 {
                            for d in 0..<D { row[j * D + d] = xyz[i * D + d] - xyz[(i - J) * D + d] }
                        } else {
                            for d in 0..<D { row[j * D + d] = 0 }
                        }
                    }
                }
            case .bones:
                for f in 0..<F {
                    let row = out + f * C + o
                    for b in boneParents.indices {
                        let p = f * J + boneParents[b], c = f * J + boneChildren[b]
                        if present[p] != 0 && present[c] != 0 {
                            for d in 0..<D { row[b * D + d] = xyz[c * D + d] - xyz[p * D + d] }
                        } else {
                            for d in 0..<D { row[b * D + d] = 0 }
                        }
                    }
                }
            }
        }
    }

    // MARK: - Steps

    /// Mean of the present joints among `joints` at frame f into `mean[0..<D]`; false when
    /// none is present.
    @inline(__always)
    private func meanOf(
        _ joints: [Int], frame f: Int, _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, J: Int,
        D: Int, into mean: UnsafeMutablePointer<Float>
    ) -> Bool {
        for d in 0..<D { mean[d] = 0 }
        var n = 0
        for j in joints where present[f * J + j] != 0 {
            for d in 0..<D { mean[d] += xyz[(f * J + j) * D + d] }
            n += 1
        }
        guard n > 0 else { return false }
        for d in 0..<D { mean[d] /= Float(n) }
        return true
    }

    /// Window mean of all present joints into `mean[0..<D]`; the count of present joints.
    @inline(__always)
    private func meanOfAll(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int, D: Int,
        into mean: UnsafeMutablePointer<Float>
    ) -> Int {
        for d in 0..<D { mean[d] = 0 }
        var n = 0
        for i in 0..<(F * J) where present[i] != 0 {
            for d in 0..<D { mean[d] += xyz[i * D + d] }
            n += 1
        }
        if n > 0 { for d in 0..<D { mean[d] /= Float(n) } }
        return n
    }

    private func centre(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int, D: Int, joints: [Int],
        perFrame: Bool, ws: Workspace
    ) {
        var windowCentre: (Float, Float, Float) = (0, 0, 0)
        withUnsafeMutableBytes(of: &windowCentre) { raw in
            let wc = raw.baseAddress!.assumingMemoryBound(to: Float.self)
            var seen = 0
            for f in 0..<F {
                let c = ws.centres + f * D
                ws.hasCentre[f] = meanOf(joints, frame: f, xyz, present, J: J, D: D, into: c)
                if ws.hasCentre[f] {
                    for d in 0..<D { wc[d] += c[d] }
                    seen += 1
                }
            }
            if seen > 0 {
                for d in 0..<D { wc[d] /= Float(seen) }
            } else {
                // No centre joint anywhere in the window: the mean of all present joints.
                _ = meanOfAll(xyz, present, F: F, J: J, D: D, into: wc)
            }
            for f in 0..<F {
                let c = perFrame && ws.hasCentre[f] ? UnsafePointer(ws.centres + f * D) : UnsafePointer(wc)
                for j in 0..<J where present[f * J + j] != 0 {
                    for d in 0..<D { xyz[(f * J + j) * D + d] -= c[d] }
                }
            }
        }
    }

    private func torsoScale(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int, D: Int, upper: [Int],
        lower: [Int], ws: Workspace
    ) -> Float {
        var buffers: (Float, Float, Float, Float, Float, Float) = (0, 0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &buffers) { raw -> Float in
            let u = raw.baseAddress!.assumingMemoryBound(to: Float.self), l = u + 3
            var count = 0
            for f in 0..<F {
                guard meanOf(upper, frame: f, xyz, present, J: J, D: D, into: u),
                    meanOf(lower, frame: f, xyz, present, J: J, D: D, into: l)
                else { continue }
                var s: Float = 0
                for d in 0..<D { s += (u[d] - l[d]) * (u[d] - l[d]) }
                ws.lengths[count] = s.squareRoot()
                count += 1
            }
            if count > 0 {
                let median = Self.median(ws.lengths, count)
                if median > 0 && median.isFinite { return median }
            }
            // No torso in the window: RMS distance of the present joints from their mean.
            let n = meanOfAll(xyz, present, F: F, J: J, D: D, into: u)
            guard n > 0 else { return 0 }
            var ss: Float = 0
            for i in 0..<(F * J) where present[i] != 0 {
                for d in 0..<D { ss += (xyz[i * D + d] - u[d]) * (xyz[i * D + d] - u[d]) }
            }
            return (ss / Float(n)).squareRoot()
        }
    }

    /// Median of `v[0..<n]` (mean of the two middle values for even n); sorts in place.
    static func median(_ v: UnsafeMutablePointer<Float>, _ n: Int) -> Float {
        if n <= 64 {
            for i in 1..<max(n, 1) {
                let x = v[i]
                var k = i - 1
                while k >= 0 && v[k] > x {
                    v[k + 1] = v[k]
                    k -= 1
                }
                v[k + 1] = x
            }
        } else {
            var b = UnsafeMutableBufferPointer(start: v, count: n)
            b.sort()
        }
        let m = n / 2
        return n % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2
    }
}
