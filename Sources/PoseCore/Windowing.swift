/// Cutting sequences into exact-length windows: resampling to a frame rate, sampling at
/// fractional frame positions, padding (docs/format.md 5.3-5.5).
///
/// Shapes: n = frames of the source sequence, F = frames of a window, J = joints,
/// D = dimensions. A window is described by F source positions `p[i]` (fractional frame
/// indices); sliding windows use `p[i] = start + i`, `fit` windows `p[i] = i (n-1)/(F-1)`.

/// Errors while cutting windows. Each names the sequence and says what to fix.
public enum WindowError: Error, Equatable, CustomStringConvertible {
    case invalidFrameRate(Double)
    case unknownFrameRate(sequence: String)
    case badTimestamps(sequence: String, frame: Int, reason: String)
    case tooManyFrames(sequence: String, frames: Double, frameRate: Double)
    case eventOutOfRange(sequence: String, event: Int, frames: Int)
    case nonFinite(sequence: String, frame: Int, joint: Int)

    public var description: String {
        switch self {
        case .invalidFrameRate(let r):
            return "frame rate must be a positive number of frames per second, got \(r)"
        case .unknownFrameRate(let s):
            return "sequence '\(s)' has no timestamps and the dataset declares no frame rate, so it cannot be resampled; give \"frameRate\" in the dataset header or do not set a frame rate"
        case .badTimestamps(let s, let f, let why):
            return "sequence '\(s)' frame \(f): \(why); fix the timestamps"
        case .tooManyFrames(let s, let frames, let r):
            return "sequence '\(s)': resampling to \(r) fps would give \(frames) frames (more than \(PoseSequence.maxResampledFrames)); check its timestamps are in seconds"
        case .eventOutOfRange(let s, let e, let n):
            return "sequence '\(s)': event frame \(e) is outside its \(n) frames; fix or drop the event"
        case .nonFinite(let s, let f, let j):
            return "sequence '\(s)' frame \(f) joint \(j): NaN or infinite coordinate; mark joints that were not seen as absent"
        }
    }
}

extension PoseSequence {
    /// The most frames resampling may produce from one sequence.
    public static let maxResampledFrames = 1_000_000

    /// Writes one frame per position (F = `positions.count`) into `coordinates [F, J, D]`,
    /// `present [F, J]` and, when given, `confidence [F, J]`.
    ///
    /// A position within 1e-6 of an integer is that integer. Inside `[0, n-1]`, with
    /// `f0 = floor(p)`, `f1 = f0 + 1`, `w = p - f0`: a joint present in both frames is
    /// `(1-w) c[f0] + w c[f1]` (confidence likewise); otherwise it is the nearer frame's joint
    /// (`f0` when `w < 0.5`), present or absent, so absent joints are never invented.
    /// Outside `[0, n-1]` (or when the sequence is empty): an empty frame for `.empty`
    /// padding, the nearest end frame for `.edge`. Sources without confidence give 1 for
    /// present joints. Absent joints get zero coordinates and confidence.
    public func sample(
        at positions: UnsafeBufferPointer<Double>, padding: WindowSpec.Padding,
        coordinates out: UnsafeMutablePointer<Float>, present outPresent: UnsafeMutablePointer<UInt8>,
        confidence outConfidence: UnsafeMutablePointer<Float>?
    ) {
        coordinates.withUnsafeBufferPointer { c in
            present.withUnsafeBufferPointer { p in
                if let confidence {
                    confidence.withUnsafeBufferPointer { k in
                        Self.sampleKernel(
                            n: frameCount, J: jointCount, D: dimensions, src: c.baseAddress, srcPresent: p.baseAddress,
                            srcConfidence: k.baseAddress, positions: positions, padding: padding, out: out,
                            outPresent: outPresent, outConfidence: outConfidence)
                    }
                } else {
                    Self.sampleKernel(
                        n: frameCount, J: jointCount, D: dimensions, src: c.baseAddress, srcPresent: p.baseAddress,
                        srcConfidence: nil, positions: positions, padding: padding, out: out, outPresent: outPresent,
                        outConfidence: outConfidence)
                }
            }
        }
    }

    /// `sample(at:padding:...)` on frames held elsewhere: `n` frames of `J` joints in `D`
    /// dimensions at `coordinates [n, J, D]`, `present [n, J]` and, when given,
    /// `confidence [n, J]` (a live session's ring of frames uses it, so that its windows are
    /// cut by the same code as offline ones).
    public static func sample(
        frames n: Int, joints J: Int, dimensions D: Int, coordinates src: UnsafePointer<Float>, present srcPresent: UnsafePointer<UInt8>,
        confidence srcConfidence: UnsafePointer<Float>?, at positions: UnsafeBufferPointer<Double>, padding: WindowSpec.Padding,
        into out: UnsafeMutablePointer<Float>, present outPresent: UnsafeMutablePointer<UInt8>, confidence outConfidence: UnsafeMutablePointer<Float>?
    ) {
        sampleKernel(
            n: n, J: J, D: D, src: src, srcPresent: srcPresent, srcConfidence: srcConfidence, positions: positions, padding: padding,
            out: out, outPresent: outPresent, outConfidence: outConfidence)
    }

    private static func sampleKernel(
        n: Int, J: Int, D: Int, src: UnsafePointer<Float>?, srcPresent: UnsafePointer<UInt8>?,
        srcConfidence: UnsafePointer<Float>?, positions: UnsafeBufferPointer<Double>, padding: WindowSpec.Padding,
        out: UnsafeMutablePointer<Float>, outPresent: UnsafeMutablePointer<UInt8>, outConfidence: UnsafeMutablePointer<Float>?
    ) {
        if D == 2 {
            sampleKernel(
                Dimensions2.self, n: n, J: J, src: src, srcPresent: srcPresent, srcConfidence: srcConfidence,
                positions: positions, padding: padding, out: out, outPresent: outPresent, outConfidence: outConfidence)
        } else {
            sampleKernel(
                Dimensions3.self, n: n, J: J, src: src, srcPresent: srcPresent, srcConfidence: srcConfidence,
                positions: positions, padding: padding, out: out, outPresent: outPresent, outConfidence: outConfidence)
        }
    }

    @inline(__always)
    private static func sampleKernel<Dim: StaticDimensions>(
        _: Dim.Type, n: Int, J: Int, src: UnsafePointer<Float>?, srcPresent: UnsafePointer<UInt8>?,
        srcConfidence: UnsafePointer<Float>?, positions: UnsafeBufferPointer<Double>, padding: WindowSpec.Padding,
        out: UnsafeMutablePointer<Float>, outPresent: UnsafeMutablePointer<UInt8>, outConfidence: UnsafeMutablePointer<Float>?
    ) {
        let D = Dim.count, JD = J &* D
        // Fast path: consecutive whole frames inside the sequence are one block copy.
        if let first = positions.first, let src, let srcPresent, first >= 0, first == first.rounded(),
            first + Double(positions.count - 1) <= Double(n - 1),
            positions.indices.allSatisfy({ positions[$0] == first + Double($0) })
        {
            let f0 = Int(first), F = positions.count
            out.update(from: src + f0 &* JD, count: F &* JD)
            outPresent.update(from: srcPresent + f0 &* J, count: F &* J)
            if let outConfidence {
                if let srcConfidence {
                    outConfidence.update(from: srcConfidence + f0 &* J, count: F &* J)
                } else {
                    let p = srcPresent + f0 &* J
                    for i in 0..<(F &* J) { outConfidence[i] = p[i] != 0 ? 1 : 0 }
                }
            }
            return
        }
        for (i, raw) in positions.enumerated() {
            let o = out + i &* JD, oP = outPresent + i &* J, oC = outConfidence.map { $0 + i &* J }
            var p = raw
            let r = p.rounded()
            if abs(p - r) < 1e-6 { p = r }
            let outside = !(p >= 0 && p <= Double(n - 1))  // also NaN
            guard n > 0, !p.isNaN, !(outside && padding == .empty), let src, let srcPresent else {
                o.update(repeating: 0, count: JD)
                oP.update(repeating: 0, count: J)
                oC?.update(repeating: 0, count: J)
                continue
            }
            p = min(max(p, 0), Double(n - 1))
            let f0 = Int(p.rounded(.down))
            let w = Float(p - Double(f0))
            if w == 0 {
                // A whole frame: a copy (absent joints are zero in the source).
                o.update(from: src + f0 &* JD, count: JD)
                oP.update(from: srcPresent + f0 &* J, count: J)
                if let oC {
                    if let srcConfidence {
                        oC.update(from: srcConfidence + f0 &* J, count: J)
                    } else {
                        let sp = srcPresent + f0 &* J
                        for j in 0..<J { oC[j] = sp[j] != 0 ? 1 : 0 }
                    }
                }
                continue
            }
            let f1 = f0 + 1
            for j in 0..<J {
                let a = f0 &* J &+ j, b = f1 &* J &+ j
                let pa = srcPresent[a] != 0, pb = srcPresent[b] != 0
                if pa && pb {
                    for d in 0..<D { o[j &* D &+ d] = src[a &* D &+ d] * (1 - w) + src[b &* D &+ d] * w }
                    oP[j] = 1
                    if let oC { oC[j] = srcConfidence.map { $0[a] * (1 - w) + $0[b] * w } ?? 1 }
                } else {
                    let k = w < 0.5 ? a : b
                    let seen = srcPresent[k] != 0
                    for d in 0..<D { o[j &* D &+ d] = seen ? src[k &* D &+ d] : 0 }
                    oP[j] = seen ? 1 : 0
                    if let oC { oC[j] = seen ? (srcConfidence?[k] ?? 1) : 0 }
                }
            }
        }
    }

    /// The frames at `positions` as a new sequence (same id, label, group and split; no
    /// timestamps), sampled as `sample(at:padding:...)` does. An event `e` of this sequence
    /// is kept, at the index of the position nearest to it, when it lies within half a frame
    /// of the sampled span.
    public func sampled(at positions: [Double], padding: WindowSpec.Padding) -> PoseSequence {
        let F = positions.count
        var c = [Float](repeating: 0, count: F * jointCount * dimensions)
        var p = [UInt8](repeating: 0, count: F * jointCount)
        var k: [Float]? = confidence == nil ? nil : [Float](repeating: 0, count: F * jointCount)
        positions.withUnsafeBufferPointer { pos in
            c.withUnsafeMutableBufferPointer { cOut in
                p.withUnsafeMutableBufferPointer { pOut in
                    if k != nil {
                        k!.withUnsafeMutableBufferPointer { kOut in
                            sample(
                                at: pos, padding: padding, coordinates: cOut.baseAddress!, present: pOut.baseAddress!,
                                confidence: kOut.baseAddress!)
                        }
                    } else {
                        sample(at: pos, padding: padding, coordinates: cOut.baseAddress!, present: pOut.baseAddress!, confidence: nil)
                    }
                }
            }
        }
        var windowEvents: [Int] = []
        if let lo = positions.min(), let hi = positions.max() {
            for e in events where Double(e) >= lo - 0.5 && Double(e) <= hi + 0.5 {
                var best = 0
                for i in positions.indices where abs(positions[i] - Double(e)) < abs(positions[best] - Double(e)) { best = i }
                windowEvents.append(best)
            }
        }
        return PoseSequence(
            id: id, label: label, group: group, split: split, jointCount: jointCount, dimensions: dimensions,
            frameCount: F, coordinates: c, present: p, confidence: k, timestamps: nil, events: windowEvents)
    }

    /// Samples the sequence at fractional frame positions, clamped to the sequence
    /// (`sampled(at:padding: .edge)`): a joint is interpolated only when it is present in both
    /// neighbouring frames, otherwise the nearer frame's value (present or absent) is taken.
    public func resampled(at positions: [Double]) -> PoseSequence {
        sampled(at: positions, padding: .edge)
    }

    /// Appends `count` padding frames: empty poses or copies of the last frame.
    public mutating func pad(count: Int, with padding: WindowSpec.Padding) {
        guard count > 0 else { return }
        let last: [PosePoint?]? =
            (padding == .edge && frameCount > 0)
            ? (0..<jointCount).map { j -> PosePoint? in
                let i = (frameCount - 1) * jointCount + j
                guard present[i] != 0 else { return nil }
                let c = i * dimensions
                return PosePoint(
                    x: coordinates[c], y: coordinates[c + 1], z: dimensions == 3 ? coordinates[c + 2] : 0,
                    confidence: confidence?[i])
            } : nil
        let empty = [PosePoint?](repeating: nil, count: jointCount)
        for _ in 0..<count { appendFrame(last ?? empty) }
    }

    /// The first present joint with a NaN or infinite coordinate, as (frame, joint), or nil.
    public func firstNonFinite() -> (frame: Int, joint: Int)? {
        for i in 0..<(frameCount * jointCount) where present[i] != 0 {
            for d in 0..<dimensions where !coordinates[i * dimensions + d].isFinite {
                return (i / jointCount, i % jointCount)
            }
        }
        return nil
    }
}

extension WindowSpec {
    /// Resamples to `frameRate` when one is set; returns the sequence unchanged when no rate
    /// is set, when it has fewer than 2 frames, or when it has no timestamps and
    /// `sourceFrameRate` equals the target.
    ///
    /// Times are the sequence's timestamps or, without them, `i / sourceFrameRate`. Output
    /// frame k is at time `t_k = t_0 + k / frameRate` for `k = 0 ... floor((t_last - t_0) *
    /// frameRate + 1e-6)`. Its source position is `i + (t_k - t_i) / (t_{i+1} - t_i)` where i
    /// is the last frame with `t_i <= t_k` (at most n-2); it is sampled as `sample` does.
    /// Frames with equal timestamps: a sample at exactly that time takes the last of them.
    /// Events move to the output frame nearest their time. The result has no timestamps.
    ///
    /// Throws for NaN, infinite or decreasing timestamps, a span of zero, more than
    /// `PoseSequence.maxResampledFrames` output frames, or no time base at all.
    public func retimed(_ seq: PoseSequence, sourceFrameRate: Double?) throws -> PoseSequence {
        guard let target = frameRate else { return seq }
        guard target.isFinite && target > 0 else { throw WindowError.invalidFrameRate(target) }
        let n = seq.frameCount
        guard n > 1 else { return seq }
        let times: [Double]
        if let ts = seq.timestamps {
            for f in 0..<n {
                guard ts[f].isFinite else {
                    throw WindowError.badTimestamps(sequence: seq.id, frame: f, reason: "timestamp is NaN or infinite")
                }
                if f > 0 && ts[f] < ts[f - 1] {
                    throw WindowError.badTimestamps(
                        sequence: seq.id, frame: f, reason: "timestamps go backwards (\(ts[f]) after \(ts[f - 1]))")
                }
            }
            times = ts
        } else if let r = sourceFrameRate {
            guard r.isFinite && r > 0 else { throw WindowError.invalidFrameRate(r) }
            if r == target { return seq }
            times = (0..<n).map { Double($0) / r }
        } else {
            throw WindowError.unknownFrameRate(sequence: seq.id)
        }
        let first = times[0], span = times[n - 1] - first
        guard span > 0 else {
            throw WindowError.badTimestamps(sequence: seq.id, frame: n - 1, reason: "all \(n) timestamps are equal")
        }
        let countD = (span * target + 1e-6).rounded(.down) + 1
        guard countD.isFinite && countD <= Double(PoseSequence.maxResampledFrames) else {
            throw WindowError.tooManyFrames(sequence: seq.id, frames: countD, frameRate: target)
        }
        let count = Int(countD)
        var positions = [Double](repeating: 0, count: count)
        var i = 0
        for k in 0..<count {
            let t = first + Double(k) / target
            while i + 1 < n - 1 && times[i + 1] <= t { i += 1 }
            let dt = times[i + 1] - times[i]
            let frac = dt > 0 ? min(max((t - times[i]) / dt, 0), 1) : (t >= times[i + 1] ? 1 : 0)
            positions[k] = Double(i) + frac
        }
        var out = seq.sampled(at: positions, padding: .edge)
        out.events = seq.events.compactMap { e in
            guard e >= 0 && e < n else { return nil }
            return min(max(Int(((times[e] - first) * target).rounded()), 0), count - 1)
        }
        return out
    }

    /// Start frames of the sliding windows of a sequence of `frameCount` frames: every
    /// `stride` frames from 0, plus a last window ending at the last frame when the stride
    /// does not land there. A sequence no longer than a window yields one window at 0
    /// (padded); `fit` mode yields one window.
    public func starts(frameCount: Int, stride: Int) -> [Int] {
        if mode == .fit || frameCount <= frames { return [0] }
        let step = max(1, stride)
        var s = Array(Swift.stride(from: 0, through: frameCount - frames, by: step))
        if let last = s.last, last != frameCount - frames { s.append(frameCount - frames) }
        return s
    }

    /// First frame of the window centred on `event`: `event - frames / 2` (integer division,
    /// so the event is at index `frames / 2`), moved inside the sequence when that window would
    /// run past either end (the event is then off-centre), and 0 when the sequence is shorter
    /// than a window (then padded at the end).
    public func start(centredOn event: Int, frameCount: Int) -> Int {
        min(max(event - frames / 2, 0), max(frameCount - frames, 0))
    }

    /// The source positions of a window as `first + i * step`, `i = 0 ..< frames`: the
    /// window at `start` for `sliding` (step 1); the whole sequence for `fit`
    /// (`step = (n-1)/(frames-1)`, or the middle frame when `frames == 1`).
    public func placement(frameCount n: Int, start: Int) -> (first: Double, step: Double) {
        switch mode {
        case .sliding:
            return (Double(start), 1)
        case .fit:
            let last = Double(max(n - 1, 0))
            return frames == 1 ? (last / 2, 0) : (0, last / Double(frames - 1))
        }
    }

    /// The source positions of the window at `start` of a sequence of `n` frames
    /// (`placement`): `first + i · step`, `i = 0 ..< frames`.
    public func positions(frameCount n: Int, start: Int) -> [Double] {
        let (first, step) = placement(frameCount: n, start: start)
        return (0..<frames).map { first + Double($0) * step }
    }

    /// The window starting at `start`, exactly `frames` frames long (padded or resampled).
    public func window(of seq: PoseSequence, start: Int) -> PoseSequence {
        seq.sampled(at: positions(frameCount: seq.frameCount, start: start), padding: padding)
    }

    /// The window of `frames` frames around frame `event` (see `start(centredOn:frameCount:)`).
    public func window(of seq: PoseSequence, centredOn event: Int) -> PoseSequence {
        var sliding = self
        sliding.mode = .sliding
        return sliding.window(of: seq, start: start(centredOn: event, frameCount: seq.frameCount))
    }
}
