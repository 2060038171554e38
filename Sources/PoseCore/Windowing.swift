import Foundation

extension PoseSequence {
    /// Samples the sequence at fractional frame positions. A joint is interpolated linearly
    /// only when it is present in both neighbouring frames; otherwise the nearer frame's value
    /// (present or absent) is taken, so absent joints are never invented.
    public func resampled(at positions: [Double]) -> PoseSequence {
        var out = PoseSequence(
            id: id, label: label, jointCount: jointCount, dimensions: dimensions,
            hasConfidence: confidence != nil)
        out.group = group
        out.split = split
        guard frameCount > 0 else { return out }
        var frame = [PosePoint?](repeating: nil, count: jointCount)
        for p in positions {
            let clamped = min(max(p, 0), Double(frameCount - 1))
            let f0 = Int(clamped.rounded(.down))
            let f1 = min(f0 + 1, frameCount - 1)
            let w = Float(clamped - Double(f0))
            for j in 0..<jointCount {
                let a = f0 * jointCount + j, b = f1 * jointCount + j
                let pa = present[a] != 0, pb = present[b] != 0
                if pa && pb {
                    let ca = a * dimensions, cb = b * dimensions
                    func lerp(_ k: Int) -> Float { coordinates[ca + k] * (1 - w) + coordinates[cb + k] * w }
                    frame[j] = PosePoint(
                        x: lerp(0), y: lerp(1), z: dimensions == 3 ? lerp(2) : 0,
                        confidence: confidence.map { $0[a] * (1 - w) + $0[b] * w })
                } else {
                    let n = w < 0.5 ? a : b
                    if present[n] != 0 {
                        let c = n * dimensions
                        frame[j] = PosePoint(
                            x: coordinates[c], y: coordinates[c + 1],
                            z: dimensions == 3 ? coordinates[c + 2] : 0,
                            confidence: confidence?[n])
                    } else {
                        frame[j] = nil
                    }
                }
            }
            out.appendFrame(frame)
        }
        out.events = events.compactMap { e in
            positions.indices.min { abs(positions[$0] - Double(e)) < abs(positions[$1] - Double(e)) }
        }
        return out
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
}

extension WindowSpec {
    /// Resamples to `frameRate` when one is set, using the sequence's timestamps or, without
    /// them, `sourceFrameRate`. Returns the sequence unchanged when no rate is set or known.
    public func retimed(_ seq: PoseSequence, sourceFrameRate: Double?) -> PoseSequence {
        guard let target = frameRate, target > 0, seq.frameCount > 1 else { return seq }
        let times: [Double]
        if let ts = seq.timestamps {
            times = ts
        } else if let r = sourceFrameRate, r > 0 {
            times = (0..<seq.frameCount).map { Double($0) / r }
        } else {
            return seq
        }
        if seq.timestamps == nil, let r = sourceFrameRate, abs(r - target) < 1e-9 { return seq }
        // Timestamps are checked by the readers; a non-finite span here would never end.
        guard let first = times.first, let last = times.last, (last - first).isFinite, last >= first else {
            return seq
        }
        var positions: [Double] = []
        var k = 0
        var t = first
        while t <= last + 1e-9 {
            while k + 1 < times.count - 1 && times[k + 1] < t { k += 1 }
            let span = times[k + 1] - times[k]
            let frac = span > 0 ? (t - times[k]) / span : 0
            positions.append(Double(k) + min(max(frac, 0), 1))
            t += 1 / target
        }
        var out = seq.resampled(at: positions)
        out.timestamps = nil
        return out
    }

    /// Start frames of the windows of a sequence of `frameCount` frames. A sequence shorter
    /// than a window yields one window at 0 (padded later); `fit` mode yields one window.
    public func starts(frameCount: Int, stride: Int) -> [Int] {
        if mode == .fit || frameCount <= frames { return [0] }
        let step = max(1, stride)
        var s = Array(Swift.stride(from: 0, through: frameCount - frames, by: step))
        if let last = s.last, last != frameCount - frames { s.append(frameCount - frames) }
        return s
    }

    /// The window starting at `start`, exactly `frames` frames long (padded or resampled).
    public func window(of seq: PoseSequence, start: Int) -> PoseSequence {
        switch mode {
        case .fit:
            let n = seq.frameCount
            let positions: [Double] =
                frames == 1
                ? [Double(n - 1) / 2]
                : (0..<frames).map { Double($0) * Double(max(n - 1, 0)) / Double(frames - 1) }
            return seq.resampled(at: positions)
        case .sliding:
            let count = min(frames, max(seq.frameCount - start, 0))
            var w = seq.slice(start, count: count)
            w.pad(count: frames - count, with: padding)
            return w
        }
    }

    /// The window of `frames` frames centred on frame `event` (clamped to the sequence;
    /// padded when the sequence is shorter than a window).
    public func window(of seq: PoseSequence, centredOn event: Int) -> PoseSequence {
        let start = min(max(event - frames / 2, 0), max(seq.frameCount - frames, 0))
        var sliding = self
        sliding.mode = .sliding
        return sliding.window(of: seq, start: start)
    }
}
