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
    /// the M longest tracks in order of first appearance; a missing body is absent (masked).
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
    /// more and no policy the reader refuses, naming the sequence and its tracks.
    static func resolve(
        _ t: TrackedSequence, policy: PeoplePolicy?, skeleton: Skeleton, imageSize: [Double]?, at: SourceLocation
    ) throws -> [PoseSequence] {
        let live = t.tracks.filter { $0.sequence.present.contains { $0 != 0 } }
        let tracks = live.isEmpty ? Array(t.tracks.prefix(1)) : live
        if case .bodies(let m) = policy {
            return [stack(t.base, live.map(\.sequence), bodies: m, skeleton: skeleton)]
        }
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

    /// The M longest tracks (present in the most frames; ties: the one listed first), side by
    /// side on `skeleton.bodies(m)` (`PoseSequence.stackingBodies`) in order of first
    /// appearance: the first frame in which a track has a joint present, then the order the
    /// tracks were first listed (a live stream pairs people the same way: ActionRuntime's
    /// `BodyPairing`); missing bodies are absent.
    static func stack(_ base: PoseSequence, _ tracks: [PoseSequence], bodies m: Int, skeleton: Skeleton) -> PoseSequence {
        let J = skeleton.jointCount
        let lengths = tracks.map { presentFrames($0, J: J) }
        let firstSeen = tracks.map { s in (0..<s.frameCount).first { f in (0..<J).contains { s.present[f * J + $0] != 0 } } ?? s.frameCount }
        let chosen = tracks.indices.sorted { lengths[$0] > lengths[$1] || (lengths[$0] == lengths[$1] && $0 < $1) }.prefix(m)
            .sorted { firstSeen[$0] < firstSeen[$1] || (firstSeen[$0] == firstSeen[$1] && $0 < $1) }
        var bodies: [PoseSequence?] = chosen.map { tracks[$0] }
        bodies += Array(repeating: nil, count: m - bodies.count)
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

    static func presentFrames(_ s: PoseSequence, J: Int) -> Int {
        (0..<s.frameCount).filter { f in (0..<J).contains { s.present[f * J + $0] != 0 } }.count
    }
}
