/// Turns an exact-length window of poses into the network input `[frames, channelsPerFrame]`.
///
/// Shapes: F = frames, J = joints, D = dimensions, C = channels per frame.
/// The steps of the `InputSpec` transform the coordinates of present joints in order; then
/// each channel block (its own kernel, Sources/PoseCore/ChannelBlocks) is written at its offset
/// in every frame. Absent joints have zero coordinates throughout and are zero in every block;
/// the `mask` (and `confidence`) block says which they were. Nothing is interpolated, unless
/// the first step is `fillGaps`: then a joint's gaps inside the window are filled in time and
/// count as present for the later steps and blocks, while `mask` and `confidence` still read
/// the window's own presence (`seen`: a filled point was not seen). The exact maths is in
/// docs/format.md section 5; all arithmetic is float32, sums in joint order.
///
/// Speed: `extract(..., workspace:)` allocates nothing; keep one `Workspace` per thread.
public struct FeatureExtractor: Sendable {
    public let spec: InputSpec
    private let steps: [ResolvedStep]
    /// The channel blocks (each its own kernel: `ChannelBlockKind.write`) at their offsets.
    private let blocks: [(block: any ChannelBlockKind, offset: Int)]
    /// Channels per frame.
    private let C: Int

    private enum ResolvedStep {
        case fillGaps
        case centre([Int], perFrame: Bool)
        case scaleByTorso(upper: [Int], lower: [Int])
        case divide([Float])
        case alignFacing(left: [Int], right: [Int], verticalAxis: Int)
    }

    public init(_ spec: InputSpec) throws {
        blocks = try spec.resolvedBlocks()  // validates the spec
        self.spec = spec
        let s = spec.skeleton
        func idx(_ names: [String]) -> [Int] { names.map { s.index(of: $0)! } }  // validated above
        steps = spec.steps.map { step in
            switch step {
            case .centre(let joints, let perFrame): return .centre(idx(joints), perFrame: perFrame)
            case .scaleByTorso(let upper, let lower): return .scaleByTorso(upper: idx(upper), lower: idx(lower))
            case .divide(let by): return .divide(by)
            case .alignFacing(let left, let right, let v): return .alignFacing(left: idx(left), right: idx(right), verticalAxis: v)
            case .fillGaps: return .fillGaps
            }
        }
        C = spec.channelsPerFrame
    }

    /// Scratch memory for one extraction at a time: the transformed coordinates `[F, J, D]`,
    /// the presence after `fillGaps` `[F, J]`, per-frame centres `[F, D]` and per-frame torso
    /// lengths `[F]`. Not thread-safe.
    public final class Workspace {
        let frames: Int
        let xyz: UnsafeMutablePointer<Float>
        let filled: UnsafeMutablePointer<UInt8>
        let centres: UnsafeMutablePointer<Float>
        let hasCentre: UnsafeMutablePointer<Bool>
        let lengths: UnsafeMutablePointer<Float>
        /// 6 floats: the window centre, or the upper and lower torso means.
        let windowCentre: UnsafeMutablePointer<Float>

        init(frames F: Int, joints J: Int, dimensions D: Int) {
            frames = F
            windowCentre = .allocate(capacity: 6)
            xyz = .allocate(capacity: max(1, F * J * D))
            filled = .allocate(capacity: max(1, F * J))
            centres = .allocate(capacity: max(1, F * D))
            hasCentre = .allocate(capacity: max(1, F))
            lengths = .allocate(capacity: max(1, F))
        }

        deinit {
            xyz.deallocate()
            filled.deallocate()
            centres.deallocate()
            hasCentre.deallocate()
            lengths.deallocate()
            windowCentre.deallocate()
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
        precondition(ws.frames == spec.window.frames, "workspace made for another spec")
        if spec.skeleton.dimensions == 2 {
            kernel(Dimensions2.self, coordinates, present, confidence, out, ws)
        } else {
            kernel(Dimensions3.self, coordinates, present, confidence, out, ws)
        }
    }

    // Kernels are generic over the dimensionality so that the inner `d` loops unroll; index
    // arithmetic wraps (`&*`, `&+`: the shapes were validated) so that loops vectorise.

    @inline(__always)
    private func kernel<Dim: StaticDimensions>(
        _: Dim.Type, _ coordinates: UnsafePointer<Float>, _ present: UnsafePointer<UInt8>,
        _ confidence: UnsafePointer<Float>?, _ out: UnsafeMutablePointer<Float>, _ ws: Workspace
    ) {
        let F = spec.window.frames, J = spec.skeleton.jointCount, D = Dim.count, FJ = F &* J
        let xyz = ws.xyz
        let seen = present
        var present = present  // after fillGaps, the filled presence
        for i in 0..<FJ {
            let keep = present[i] != 0
            for d in 0..<D { xyz[i &* D &+ d] = keep ? coordinates[i &* D &+ d] : 0 }
        }
        for step in steps {
            switch step {
            case .fillGaps:
                Self.fillGaps(Dim.self, xyz, seen, F: F, J: J, filled: ws.filled)
                present = UnsafePointer(ws.filled)
            case .centre(let joints, let perFrame):
                joints.withUnsafeBufferPointer { centre(Dim.self, xyz, present, F: F, J: J, joints: $0, perFrame: perFrame, ws: ws) }
            case .scaleByTorso(let upper, let lower):
                let s = upper.withUnsafeBufferPointer { u in
                    lower.withUnsafeBufferPointer { l in
                        Self.torsoScale(Dim.self, xyz, present, F: F, J: J, upper: u, lower: l, ends: ws.windowCentre, lengths: ws.lengths)
                    }
                }
                if s > 0 && s.isFinite {
                    for v in 0..<(FJ &* D) { xyz[v] /= s }  // absent joints are 0 and stay 0
                }
            case .divide(let by):
                by.withUnsafeBufferPointer { b in
                    for i in 0..<FJ {
                        for d in 0..<D { xyz[i &* D &+ d] /= b[d] }
                    }
                }
            case .alignFacing(let left, let right, let v):
                left.withUnsafeBufferPointer { l in
                    right.withUnsafeBufferPointer { r in alignFacing(xyz, present, F: F, J: J, left: l, right: r, verticalAxis: v, ws: ws) }
                }
            }
        }
        let window = BlockWindow(
            frames: F, joints: J, dimensions: D, coordinates: xyz, present: present, seen: seen, confidence: confidence)
        for (block, o) in blocks { block.write(window, into: out + o, stride: C) }
    }

    // MARK: - Steps

    /// `PreprocessingStep.fillGaps` on `xyz [F, J, D]` (absent joints 0) with the window's
    /// presence `seen [F, J]`: per joint, the frames between two present frames p < q take
    /// `c[p] + w·(c[q] − c[p])`, `w = (f − p)/(q − p)`; those before the first (after the last)
    /// present frame its value; `filled [F, J]` is 1 wherever the joint is present somewhere in
    /// the window.
    @inline(__always)
    static func fillGaps<Dim: StaticDimensions>(
        _: Dim.Type, _ xyz: UnsafeMutablePointer<Float>, _ seen: UnsafePointer<UInt8>, F: Int, J: Int,
        filled: UnsafeMutablePointer<UInt8>
    ) {
        let D = Dim.count
        for j in 0..<J {
            var previous = -1  // the last present frame so far
            for f in 0..<F where seen[f &* J &+ j] != 0 {
                let q = (f &* J &+ j) &* D
                if previous < 0 {
                    for g in 0..<f {  // before the first present frame: its value
                        for d in 0..<D { xyz[(g &* J &+ j) &* D &+ d] = xyz[q &+ d] }
                    }
                } else if f > previous &+ 1 {
                    let p = (previous &* J &+ j) &* D, span = Float(f &- previous)
                    for g in (previous &+ 1)..<f {
                        let w = Float(g &- previous) / span
                        for d in 0..<D { xyz[(g &* J &+ j) &* D &+ d] = xyz[p &+ d] + w * (xyz[q &+ d] - xyz[p &+ d]) }
                    }
                }
                previous = f
            }
            if previous >= 0 {
                let p = (previous &* J &+ j) &* D
                for g in (previous &+ 1)..<F {  // after the last present frame: its value
                    for d in 0..<D { xyz[(g &* J &+ j) &* D &+ d] = xyz[p &+ d] }
                }
            }
            let present: UInt8 = previous >= 0 ? 1 : 0
            for f in 0..<F { filled[f &* J &+ j] = present }
        }
    }

    /// Mean of the present joints among `joints` at frame f into `mean[0..<D]`; false when
    /// none is present.
    @inline(__always)
    private static func meanOf<Dim: StaticDimensions>(
        _: Dim.Type, _ joints: UnsafeBufferPointer<Int>, frame f: Int, _ xyz: UnsafeMutablePointer<Float>,
        _ present: UnsafePointer<UInt8>, J: Int, into mean: UnsafeMutablePointer<Float>
    ) -> Bool {
        let D = Dim.count
        for d in 0..<D { mean[d] = 0 }
        var n = 0
        for j in joints where present[f &* J &+ j] != 0 {
            for d in 0..<D { mean[d] += xyz[(f &* J &+ j) &* D &+ d] }
            n += 1
        }
        guard n > 0 else { return false }
        for d in 0..<D { mean[d] /= Float(n) }
        return true
    }

    /// Window mean of all present joints into `mean[0..<D]`; the count of present joints.
    @inline(__always)
    private static func meanOfAll<Dim: StaticDimensions>(
        _: Dim.Type, _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, count FJ: Int,
        into mean: UnsafeMutablePointer<Float>
    ) -> Int {
        let D = Dim.count
        for d in 0..<D { mean[d] = 0 }
        var n = 0
        for i in 0..<FJ where present[i] != 0 {
            for d in 0..<D { mean[d] += xyz[i &* D &+ d] }
            n += 1
        }
        if n > 0 { for d in 0..<D { mean[d] /= Float(n) } }
        return n
    }

    @inline(__always)
    private func centre<Dim: StaticDimensions>(
        _: Dim.Type, _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int,
        joints: UnsafeBufferPointer<Int>, perFrame: Bool, ws: Workspace
    ) {
        let D = Dim.count
        let wc = ws.windowCentre
        for d in 0..<D { wc[d] = 0 }
        var seen = 0
        for f in 0..<F {
            let c = ws.centres + f &* D
            ws.hasCentre[f] = Self.meanOf(Dim.self, joints, frame: f, xyz, present, J: J, into: c)
            if ws.hasCentre[f] {
                for d in 0..<D { wc[d] += c[d] }
                seen += 1
            }
        }
        if seen > 0 {
            for d in 0..<D { wc[d] /= Float(seen) }
        } else {
            // No centre joint anywhere in the window: the mean of all present joints.
            _ = Self.meanOfAll(Dim.self, xyz, present, count: F &* J, into: wc)
        }
        for f in 0..<F {
            let c = perFrame && ws.hasCentre[f] ? ws.centres + f &* D : wc
            let x = xyz + f &* J &* D, p = present + f &* J
            for j in 0..<J {
                let m: Float = p[j] != 0 ? 1 : 0  // absent joints stay 0
                for d in 0..<D { x[j &* D &+ d] -= c[d] * m }
            }
        }
    }

    /// The body scale `scaleByTorso` divides by (docs/format.md 5.6), for others that need
    /// the same measure (augmentation's jitter): the median over frames of the distance between
    /// the means of the present `upper` and `lower` joints; without a positive one, the RMS
    /// distance of the present joints from their mean; 0 without present joints.
    /// `xyz [frames, joints, dimensions]` (2 or 3), `present [frames, joints]`; `lengths` is
    /// scratch for `frames` values.
    public static func torsoScale(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, frames F: Int, joints J: Int, dimensions D: Int,
        upper: UnsafeBufferPointer<Int>, lower: UnsafeBufferPointer<Int>, lengths: UnsafeMutablePointer<Float>
    ) -> Float {
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 6) { ends in
            D == 3
                ? torsoScale(Dimensions3.self, xyz, present, F: F, J: J, upper: upper, lower: lower, ends: ends.baseAddress!, lengths: lengths)
                : torsoScale(Dimensions2.self, xyz, present, F: F, J: J, upper: upper, lower: lower, ends: ends.baseAddress!, lengths: lengths)
        }
    }

    /// `ends`: scratch for 6 values.
    @inline(__always)
    private static func torsoScale<Dim: StaticDimensions>(
        _: Dim.Type, _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int,
        upper: UnsafeBufferPointer<Int>, lower: UnsafeBufferPointer<Int>, ends: UnsafeMutablePointer<Float>,
        lengths: UnsafeMutablePointer<Float>
    ) -> Float {
        let D = Dim.count
        let u = ends, l = ends + 3
        var count = 0
        for f in 0..<F {
            guard meanOf(Dim.self, upper, frame: f, xyz, present, J: J, into: u),
                meanOf(Dim.self, lower, frame: f, xyz, present, J: J, into: l)
            else { continue }
            var s: Float = 0
            for d in 0..<D { s += (u[d] - l[d]) * (u[d] - l[d]) }
            lengths[count] = s.squareRoot()
            count += 1
        }
        if count > 0 {
            let median = Self.median(lengths, count)
            if median > 0 && median.isFinite { return median }
        }
        // No torso in the window: RMS distance of the present joints from their mean.
        let n = meanOfAll(Dim.self, xyz, present, count: F &* J, into: u)
        guard n > 0 else { return 0 }
        var ss: Float = 0
        for i in 0..<(F &* J) where present[i] != 0 {
            for d in 0..<D { ss += (xyz[i &* D &+ d] - u[d]) * (xyz[i &* D &+ d] - u[d]) }
        }
        return (ss / Float(n)).squareRoot()
    }

    /// Rotation about the vertical axis that puts the window's mean right-minus-left side
    /// vector on the first horizontal axis (3D only; `PreprocessingStep.alignFacing`).
    private func alignFacing(
        _ xyz: UnsafeMutablePointer<Float>, _ present: UnsafePointer<UInt8>, F: Int, J: Int,
        left: UnsafeBufferPointer<Int>, right: UnsafeBufferPointer<Int>, verticalAxis v: Int, ws: Workspace
    ) {
        let h1 = v == 0 ? 1 : 0, h2 = v == 2 ? 1 : 2
        let l = ws.windowCentre, r = ws.windowCentre + 3
        var a1: Float = 0, a2: Float = 0
        for f in 0..<F {
            guard Self.meanOf(Dimensions3.self, left, frame: f, xyz, present, J: J, into: l),
                Self.meanOf(Dimensions3.self, right, frame: f, xyz, present, J: J, into: r)
            else { continue }
            a1 += r[h1] - l[h1]
            a2 += r[h2] - l[h2]
        }
        let norm = (a1 * a1 + a2 * a2).squareRoot()
        guard norm > 0 && norm.isFinite else { return }
        let c = a1 / norm, s = a2 / norm  // cos θ, sin θ
        for i in 0..<(F &* J) where present[i] != 0 {
            let p = xyz + i &* 3
            let x1 = p[h1], x2 = p[h2]
            p[h1] = c * x1 + s * x2
            p[h2] = -s * x1 + c * x2
        }
    }

    /// Median of `v[0..<n]` (mean of the two middle values for even n); sorts in place.
    public static func median(_ v: UnsafeMutablePointer<Float>, _ n: Int) -> Float {
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
