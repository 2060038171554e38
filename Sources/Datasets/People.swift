import Foundation
import PoseCore

/// What a reader does with a sequence in which several people (or animals) appear, each a
/// track with its own id (docs/datasets.md, "Several people per frame").
public enum PeoplePolicy: Sendable, Equatable, CustomStringConvertible {
    /// One sequence per track, id `<sequence>#<track>`, label, split and events of the
    /// sequence, and its group (the sequence id when it has none), so that a split can never
    /// put two tracks of one clip on both sides.
    case split
    /// One track for the whole sequence (never a switch between people mid-sequence).
    case pick(PersonChoice)
    /// Interaction models: `M` bodies per frame on a skeleton of M copies (`Skeleton.bodies`),
    /// the M longest tracks, in one order for the whole file (`BodyOrderRule`: tracks named by
    /// role keep their role's body, else first appearance); a missing body is absent (masked).
    case bodies(Int)

    /// Parses `split`, `largest`, `central`, `longest`, `confident` or `bodies=M`.
    public init?(argument: String) {
        if argument == "split" {
            self = .split
        } else if let c = PersonChoice(rawValue: argument) {
            self = .pick(c)
        } else if argument.hasPrefix("bodies="), let m = Int(argument.dropFirst(7)), m >= 1, m <= Self.maximumBodies {
            self = .bodies(m)
        } else {
            return nil
        }
    }

    /// The most bodies an interaction model takes (`bodies=M`).
    public static let maximumBodies = 8

    public static let choices = "split, largest, central, longest, confident or bodies=M (M from 1 to \(maximumBodies))"

    /// The policy a reader applies to data of `skeleton`: `policy`, except that `bodies=M` on
    /// data that already holds M bodies (a skeleton of M copies, `p1.<joint>` ... `pM.<joint>`,
    /// as `convert --people bodies=M` writes it) is nothing to do: its frames are read as they
    /// are, never stacked again. `bodies=M` on data of another number of bodies is refused.
    public static func applied(_ policy: PeoplePolicy?, to skeleton: Skeleton, at: SourceLocation) throws -> PeoplePolicy? {
        let held = skeleton.bodyCount
        guard held > 1, case .bodies(let m) = policy else { return policy }
        guard m == held else { throw DatasetError.bodiesHeld(at, held: held, skeleton: skeleton.name, asked: m) }
        return nil
    }

    /// The policy a model's input implies: `bodies(M)` for an interaction model
    /// (`InputSpec.bodies` = M > 1), else nil (the reader's own choice).
    public init?(modelInput input: InputSpec) {
        guard let m = input.bodies, m > 1 else { return nil }
        self = .bodies(m)
    }

    public var description: String {
        switch self {
        case .split: return "split"
        case .pick(let c): return c.rawValue
        case .bodies(let m): return "bodies=\(m)"
        }
    }
}

/// How `PeoplePolicy.pick` chooses a track. Ties go to the track that appears first.
public enum PersonChoice: String, Sendable, CaseIterable {
    /// The largest mean body: bounding-box area in 2D, largest extent in 3D, over the frames
    /// where the track has two or more joints.
    case largest
    /// The smallest mean distance of the track's centre (the mean of its present points) from
    /// the image centre (2D with a known image size), else from the centre of every track's
    /// points.
    case central
    /// The track present (any joint) in the most frames.
    case longest
    /// The highest mean confidence of its present points (1 without confidence).
    case confident
}

/// One sequence's tracks as a reader collects them: every track has the sequence's frame
/// count, with absent joints in the frames where the person is not seen.
struct TrackedSequence {
    /// The sequence's metadata and frame count (its own frames are ignored).
    var base: PoseSequence
    /// Tracks in order of first appearance.
    var tracks: [(id: String, sequence: PoseSequence)]
}

public enum People {
    /// Applies `policy` to a sequence with several tracks. A single track is the sequence; with
    /// more and no policy the reader refuses, naming the sequence and its tracks. `bodies=M`
    /// needs the whole file before any sequence is stacked: readers give its sequences to a
    /// `BodyStacker` instead.
    static func resolve(
        _ t: TrackedSequence, policy: PeoplePolicy?, skeleton: Skeleton, imageSize: [Double]?, at: SourceLocation
    ) throws -> [PoseSequence] {
        let live = t.tracks.filter { $0.sequence.present.contains { $0 != 0 } }
        let tracks = live.isEmpty ? Array(t.tracks.prefix(1)) : live
        if case .bodies = policy { preconditionFailure("bodies=M is read through BodyStacker (one body order for the file)") }
        if tracks.count <= 1 {
            return [merge(t.base, tracks.first?.sequence)]
        }
        guard let policy else {
            throw DatasetError.severalPeople(at, tracks: tracks.map(\.id))
        }
        switch policy {
        case .split:
            return tracks.map { id, s in
                var out = merge(t.base, s)
                out.id = "\(t.base.id)#\(id)"
                out.group = t.base.group ?? t.base.id
                return out
            }
        case .pick(let choice):
            let k = choose(tracks.map(\.sequence), by: choice, skeleton: skeleton, imageSize: t.base.imageSize ?? imageSize)
            return [merge(t.base, tracks[k].sequence)]
        case .bodies:
            preconditionFailure("handled above")
        }
    }

    /// `base`'s metadata with the frames of `frames` (or `base`'s own when nil).
    static func merge(_ base: PoseSequence, _ frames: PoseSequence?) -> PoseSequence {
        guard let f = frames else { return base }
        var out = PoseSequence(
            id: base.id, label: base.label, group: base.group, split: base.split, jointCount: f.jointCount,
            dimensions: f.dimensions, frameCount: f.frameCount, coordinates: f.coordinates, present: f.present,
            confidence: f.confidence, timestamps: base.timestamps ?? f.timestamps, events: base.events, imageSize: base.imageSize,
            bodyHeight: base.bodyHeight, heightEstimation: base.heightEstimation)
        out.segments = base.segments
        return out
    }

    /// The index of the track `choice` picks (see `PersonChoice`); the first on ties.
    public static func choose(_ tracks: [PoseSequence], by choice: PersonChoice, skeleton: Skeleton, imageSize: [Double]?) -> Int {
        let J = skeleton.jointCount, D = skeleton.dimensions
        func score(_ s: PoseSequence) -> Double {
            switch choice {
            case .longest:
                return Double((0..<s.frameCount).filter { f in (0..<J).contains { s.present[f * J + $0] != 0 } }.count)
            case .confident:
                var sum = 0.0, n = 0
                for i in s.present.indices where s.present[i] != 0 {
                    sum += Double(s.confidence?[i] ?? 1)
                    n += 1
                }
                return n == 0 ? -1 : sum / Double(n)
            case .largest:
                var sum = 0.0, n = 0
                for f in 0..<s.frameCount {
                    var lo = [Float](repeating: .infinity, count: D), hi = [Float](repeating: -.infinity, count: D)
                    var seen = 0
                    for j in 0..<J where s.present[f * J + j] != 0 {
                        seen += 1
                        for c in 0..<D {
                            lo[c] = min(lo[c], s.coordinates[(f * J + j) * D + c])
                            hi[c] = max(hi[c], s.coordinates[(f * J + j) * D + c])
                        }
                    }
                    guard seen >= 2 else { continue }
                    let extents = (0..<D).map { Double(hi[$0] - lo[$0]) }
                    sum += D == 2 ? extents[0] * extents[1] : extents.max()!
                    n += 1
                }
                return n == 0 ? -1 : sum / Double(n)
            case .central:
                preconditionFailure("scored below")
            }
        }
        if choice == .central {
            let centres = tracks.map { meanPoint($0, J: J, D: D) }
            let target: [Double]
            if D == 2, let size = imageSize, size.count == 2 {
                target = [size[0] / 2, size[1] / 2]
            } else {
                let known = centres.compactMap { $0 }
                target = (0..<D).map { c in known.map { $0[c] }.reduce(0, +) / Double(max(known.count, 1)) }
            }
            let distances = centres.map { p -> Double in
                guard let p else { return .infinity }
                return (0..<D).map { (p[$0] - target[$0]) * (p[$0] - target[$0]) }.reduce(0, +)
            }
            return distances.indices.min { distances[$0] < distances[$1] || (distances[$0] == distances[$1] && $0 < $1) } ?? 0
        }
        return argmax(tracks.map(score))
    }

    /// The mean of a track's per-frame mean points (nil when it is never present).
    static func meanPoint(_ s: PoseSequence, J: Int, D: Int) -> [Double]? {
        var sum = [Double](repeating: 0, count: D), frames = 0
        for f in 0..<s.frameCount {
            var frame = [Double](repeating: 0, count: D), n = 0
            for j in 0..<J where s.present[f * J + j] != 0 {
                for c in 0..<D { frame[c] += Double(s.coordinates[(f * J + j) * D + c]) }
                n += 1
            }
            guard n > 0 else { continue }
            for c in 0..<D { sum[c] += frame[c] / Double(n) }
            frames += 1
        }
        return frames == 0 ? nil : sum.map { $0 / Double(frames) }
    }

    /// `base`'s metadata with its tracks side by side on `skeleton.bodies(M)`
    /// (`PoseSequence.stackingBodies`): body k is `tracks[slots[k]]`, absent when nil (every
    /// body absent: `base`'s own frames, which then hold no joint).
    static func stack(_ base: PoseSequence, _ tracks: [PoseSequence], slots: [Int?]) -> PoseSequence {
        var bodies: [PoseSequence?] = slots.map { $0.map { tracks[$0] } }
        if bodies.allSatisfy({ $0 == nil }) { bodies[0] = base }
        var out = PoseSequence.stackingBodies(bodies)
        out.id = base.id
        out.label = base.label
        out.group = base.group
        out.split = base.split
        out.timestamps = base.timestamps
        out.events = base.events
        out.segments = base.segments
        out.imageSize = base.imageSize
        out.bodyHeight = base.bodyHeight
        out.heightEstimation = base.heightEstimation
        return out
    }

    /// Moves the bodies of a stacked sequence: the track in body j (`from[j]`, an index into the
    /// sequence's chosen tracks; nil: absent) goes to the body k where `to[k]` names it.
    static func moveBodies(_ s: inout PoseSequence, from: [Int?], to: [Int?]) {
        let m = from.count, F = s.frameCount, J = s.jointCount / m, D = s.dimensions
        let source = to.map { t in t.flatMap { from.firstIndex(of: $0) } }  // body k's old body
        var coordinates = [Float](repeating: 0, count: s.coordinates.count)
        var present = [UInt8](repeating: 0, count: s.present.count)
        var confidence = s.confidence.map { [Float](repeating: 0, count: $0.count) }
        for f in 0..<F {
            for (k, j) in source.enumerated() {
                guard let j else { continue }
                let dst = (f * m + k) * J, src = (f * m + j) * J
                for i in 0..<J {
                    present[dst + i] = s.present[src + i]
                    confidence?[dst + i] = s.confidence![src + i]
                    for c in 0..<D { coordinates[(dst + i) * D + c] = s.coordinates[(src + i) * D + c] }
                }
            }
        }
        s.coordinates = coordinates
        s.present = present
        s.confidence = confidence
    }

    /// Which of a sequence's chosen tracks (`ids`, in order of first appearance) goes in each of
    /// the `m` bodies under `rule` (nil: a free body): with `roles`, the track whose id is
    /// `roles[k]` takes body k; the other tracks take the free bodies, lowest first, in order of
    /// first appearance (with `appearance`, all of them: bodies 1, 2, ... in that order).
    static func slots(_ ids: [String], rule: BodyOrderRule, bodies m: Int) -> [Int?] {
        var slots = [Int?](repeating: nil, count: m)
        var placed = Set<Int>()
        if case .roles(let roles) = rule {
            for (k, role) in roles.prefix(m).enumerated() {
                if let i = ids.firstIndex(of: role) {
                    slots[k] = i
                    placed.insert(i)
                }
            }
        }
        var free = slots.indices.filter { slots[$0] == nil }.makeIterator()
        for i in ids.indices where !placed.contains(i) {
            guard let k = free.next() else { break }
            slots[k] = i
        }
        return slots
    }

    /// Where each body of a sequence sits and how much it moves, in units that no camera or
    /// data unit changes: its mean centre (the mean over frames of its present joints' mean)
    /// minus the mean of the bodies' centres, divided by the bodies' mean size (the RMS distance
    /// of a frame's present joints from their mean, averaged over frames), D values; then the
    /// log of its mean joint speed (frame to frame, over joints present in both frames) over the
    /// bodies' mean speed. Nil when a body is never seen or the bodies have no size.
    static func bodyDescriptors(_ tracks: [PoseSequence], J: Int, D: Int) -> [[Double]]? {
        var centres: [[Double]] = [], sizes: [Double] = [], speeds: [Double] = []
        for s in tracks {
            guard let centre = meanPoint(s, J: J, D: D) else { return nil }
            centres.append(centre)
            var size = 0.0, sized = 0, speed = 0.0, moved = 0
            for f in 0..<s.frameCount {
                var mean = [Double](repeating: 0, count: D), n = 0
                for j in 0..<J where s.present[f * J + j] != 0 {
                    for c in 0..<D { mean[c] += Double(s.coordinates[(f * J + j) * D + c]) }
                    n += 1
                }
                if n >= 2 {
                    var squares = 0.0
                    for j in 0..<J where s.present[f * J + j] != 0 {
                        for c in 0..<D {
                            let d = Double(s.coordinates[(f * J + j) * D + c]) - mean[c] / Double(n)
                            squares += d * d
                        }
                    }
                    size += (squares / Double(n)).squareRoot()
                    sized += 1
                }
                guard f > 0 else { continue }
                var distance = 0.0, both = 0
                for j in 0..<J where s.present[f * J + j] != 0 && s.present[(f - 1) * J + j] != 0 {
                    var squares = 0.0
                    for c in 0..<D {
                        let d = Double(s.coordinates[(f * J + j) * D + c]) - Double(s.coordinates[((f - 1) * J + j) * D + c])
                        squares += d * d
                    }
                    distance += squares.squareRoot()
                    both += 1
                }
                if both > 0 {
                    speed += distance / Double(both)
                    moved += 1
                }
            }
            sizes.append(sized > 0 ? size / Double(sized) : 0)
            speeds.append(moved > 0 ? speed / Double(moved) : 0)
        }
        let n = Double(tracks.count)
        let scale = sizes.reduce(0, +) / n
        guard scale > 0, scale.isFinite else { return nil }
        let middle = (0..<D).map { c in centres.map { $0[c] }.reduce(0, +) / n }
        let meanSpeed = speeds.reduce(0, +) / n, floor = 1e-3 * scale
        return tracks.indices.map { t in
            (0..<D).map { (centres[t][$0] - middle[$0]) / scale } + [log((speeds[t] + floor) / (meanSpeed + floor))]
        }
    }

    static func presentFrames(_ s: PoseSequence, J: Int) -> Int {
        (0..<s.frameCount).filter { f in (0..<J).contains { s.present[f * J + $0] != 0 } }.count
    }
}
