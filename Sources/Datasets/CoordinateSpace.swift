import Foundation
import PoseCore

/// What a dataset's coordinates and times look like, measured from the data alone, beside what
/// the dataset declares (the skeleton's units, the Pose contract's y-down image axes, seconds).
/// `Lint` turns the contradictions into warnings, `DatasetLoader.read` into warnings or, with
/// `strict`, refusals; `CoordinateFix` repairs what can be repaired.
///
/// The measurements (docs/datasets.md, "Coordinate space and units"):
/// - **body size**: per frame with at least two present joints, the largest extent over the
///   axes, `max_d (max_j x_jd − min_j x_jd)`; the median over frames. A person is about 0.3-2
///   metres, tens to hundreds of pixels, 0.1-1 of a normalised image.
/// - **unit square**: the share of present 2D points with `0 ≤ x, y ≤ 1` (± 0.1).
/// - **vertical**: per frame, the mean of the head joints (names containing head, nose, eye,
///   ear or neck) minus the mean of the foot joints (ankle, foot, heel, toe, paw; else knee;
///   else hip), on each axis. Frames where the separation is under a tenth of the body size are
///   not counted. The axis whose separation is largest in most frames is vertical, and its sign
///   says which way is up.
/// - **frame interval**: the median over sequences of each sequence's median timestamp step.
public struct CoordinateSpaceReport: Equatable, Sendable, Encodable {
    /// The scale the data measures as.
    public enum Scale: String, Equatable, Sendable, Encodable {
        /// 2D values in [0, 1] with bodies under 1.5 across: fractions of the image.
        case normalised
        /// 2D bodies at least 8 units across.
        case pixels
        /// 2D bodies under 8 units across that are not in the unit square: metres or some
        /// other small unit, too small for pixels.
        case small
        /// 3D bodies 0.05-5 units across.
        case metres
        /// 3D bodies 100-5000 units across (millimetres, or pixels with a depth).
        case millimetres
        /// Too little data, or a size that fits nothing above.
        case unknown
    }

    /// The vertical axis and which way is up, e.g. "y down" (the image convention), "y up"
    /// (Vision's normalised points, Kinect), "z up".
    public struct Vertical: Equatable, Sendable, Encodable, CustomStringConvertible {
        /// 0 x, 1 y, 2 z.
        public var axis: Int
        /// True when larger values are higher (y up), false when larger values are lower.
        public var upIsPositive: Bool
        /// Frames whose head-to-feet separation points this way, and frames counted.
        public var agreeing: Int
        public var counted: Int
        public var description: String { "\(["x", "y", "z"][axis]) \(upIsPositive ? "up" : "down")" }
    }

    public var declaredUnits: Skeleton.Units
    public var dimensions: Int
    /// Present points measured.
    public var points: Int
    /// Median body size (see the type's notes), nil without a frame of two present joints.
    public var bodySize: Double?
    /// Share of present 2D points inside the unit square (± 0.1); nil for 3D.
    public var unitSquareShare: Double?
    public var scale: Scale
    /// Nil when the skeleton has no head or foot joints or too few frames show both.
    public var vertical: Vertical?
    /// Median frame interval of the timestamped sequences, in the file's time unit.
    public var frameInterval: Double?
    /// What contradicts the declaration, most serious first.
    public var problems: [CoordinateProblem]

    private enum CodingKeys: String, CodingKey {
        case declaredUnits, dimensions, points, bodySize, unitSquareShare, scale, vertical, frameInterval, problems
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(declaredUnits, forKey: .declaredUnits)
        try c.encode(dimensions, forKey: .dimensions)
        try c.encode(points, forKey: .points)
        try c.encode(bodySize, forKey: .bodySize)
        try c.encode(unitSquareShare, forKey: .unitSquareShare)
        try c.encode(scale, forKey: .scale)
        try c.encode(vertical.map(\.description), forKey: .vertical)
        try c.encode(frameInterval, forKey: .frameInterval)
        try c.encode(problems.map(\.description), forKey: .problems)
    }
}

/// A contradiction between what a dataset declares and what its values measure.
public enum CoordinateProblem: Equatable, Sendable, CustomStringConvertible {
    /// Declared pixels, but the points lie in the unit square: Vision or MediaPipe normalised
    /// coordinates written as they come.
    case normalisedAsPixels(share: Double, bodySize: Double)
    /// Declared pixels, but bodies are a few units across and not in the unit square.
    case tooSmallForPixels(bodySize: Double)
    /// Declared metres, but bodies are far larger (millimetres or pixels) or far smaller.
    case notMetres(bodySize: Double, scale: CoordinateSpaceReport.Scale)
    /// 2D data whose heads are below their feet in most frames: a y-up origin (bottom-left)
    /// declared as the image convention (y down).
    case yUp(frames: Int, of: Int)
    /// Timestamps stepping by 2-200 units per frame: milliseconds written as seconds.
    case millisecondsAsSeconds(interval: Double)
    /// Timestamps stepping by less than 0.1 ms per frame (over 10,000 fps, the most a model
    /// file holds): nanoseconds or microseconds, or a clock's ticks, would be read as seconds
    /// and resample a sequence to a frame or two.
    case tooFastForSeconds(interval: Double)

    /// A stable kebab-case name for scripts.
    public var code: String {
        switch self {
        case .normalisedAsPixels: return "normalised-as-pixels"
        case .tooSmallForPixels: return "too-small-for-pixels"
        case .notMetres: return "not-metres"
        case .yUp: return "y-up"
        case .millisecondsAsSeconds: return "milliseconds"
        case .tooFastForSeconds: return "too-fast-timestamps"
        }
    }

    public var description: String {
        func n(_ x: Double) -> String { String(format: x < 10 ? "%.2f" : "%.0f", x) }
        switch self {
        case .normalisedAsPixels(let share, let size):
            return String(format: "%.1f%%", share * 100)
                + " of the points lie in [0, 1] and bodies measure \(n(size)) across, but the skeleton says pixels: normalised coordinates (Vision, MediaPipe)? "
                + "Convert them to pixels with the image size (convert's from-normalized repair; origin bottom-left for Vision)"
        case .tooSmallForPixels(let size):
            return "bodies measure \(n(size)) across, far too small for pixels: are these metres or another unit? Declare a skeleton with \"units\": \"metres\" or \"unitless\""
        case .notMetres(let size, let scale):
            let guess = scale == .millimetres ? " (millimetres? divide by 1000)" : ""
            return "bodies measure \(n(size)) across, but the skeleton says metres (a person is about 0.3-2 m)\(guess); fix the units or declare \"units\": \"unitless\""
        case .yUp(let frames, let total):
            return "heads are below feet in \(frames) of \(total) frames: the data has y pointing up (origin bottom-left), the Pose contract is y down. "
                + "Flip it with the image height (convert's origin bottom-left repair)"
        case .millisecondsAsSeconds(let interval):
            return "timestamps step by \(n(interval)) per frame (\(n(1000 / interval)) fps if milliseconds, \(String(format: "%.3f", 1 / interval)) fps if seconds): write \"t\" in seconds"
        case .tooFastForSeconds(let interval):
            return "timestamps step by \(String(format: "%g", interval)) s per frame (\(String(format: "%g", 1 / interval)) fps, beyond the 10000 fps a model holds): are they nanoseconds or clock ticks? Write \"t\" in seconds"
        }
    }
}

public enum CoordinateSpace {
    /// Measures `dataset` (every present point; one pass) and lists what contradicts its
    /// declaration. Nothing here throws: any dataset can be measured.
    public static func measure(_ dataset: Dataset) -> CoordinateSpaceReport {
        let skeleton = dataset.skeleton
        let J = skeleton.jointCount, D = skeleton.dimensions
        let (upper, lower) = headAndFeet(skeleton)
        var points = 0, inUnit = 0
        var sizes: [Double] = []
        // Per axis: frames whose head-minus-feet separation is positive / negative.
        var positive = [Int](repeating: 0, count: D), negative = [Int](repeating: 0, count: D)
        var counted = 0
        var largestAxis = [Int](repeating: 0, count: D)
        var lo = [Float](repeating: 0, count: D), hi = [Float](repeating: 0, count: D)
        var up = [Double](repeating: 0, count: D), down = [Double](repeating: 0, count: D)
        var intervals: [Double] = []
        for s in dataset.sequences {
            for f in 0..<s.frameCount {
                var seen = 0
                var nu = 0, nd = 0
                for k in 0..<D {
                    lo[k] = .infinity
                    hi[k] = -.infinity
                    up[k] = 0
                    down[k] = 0
                }
                for j in 0..<J where s.present[f * J + j] != 0 {
                    seen += 1
                    let base = (f * J + j) * D
                    var unit = true
                    for k in 0..<D {
                        let v = s.coordinates[base + k]
                        lo[k] = min(lo[k], v)
                        hi[k] = max(hi[k], v)
                        if v < -0.1 || v > 1.1 { unit = false }
                    }
                    if D == 2 && unit { inUnit += 1 }
                    if upper[j] {
                        nu += 1
                        for k in 0..<D { up[k] += Double(s.coordinates[base + k]) }
                    } else if lower[j] {
                        nd += 1
                        for k in 0..<D { down[k] += Double(s.coordinates[base + k]) }
                    }
                }
                points += seen
                guard seen >= 2 else { continue }
                var size: Double = 0
                for k in 0..<D { size = max(size, Double(hi[k] - lo[k])) }
                sizes.append(size)
                guard nu > 0 && nd > 0 && size > 0 else { continue }
                // The axis with the largest separation in this frame, if clear enough.
                var best = 0, bestMagnitude = 0.0, bestSign = 0.0
                for k in 0..<D {
                    let separation = up[k] / Double(nu) - down[k] / Double(nd)
                    if abs(separation) > bestMagnitude {
                        bestMagnitude = abs(separation)
                        best = k
                        bestSign = separation
                    }
                }
                guard bestMagnitude > 0.1 * size else { continue }
                counted += 1
                largestAxis[best] += 1
                if bestSign > 0 { positive[best] += 1 } else { negative[best] += 1 }
            }
            if let ts = s.timestamps, ts.count > 1 {
                intervals.append(Lint.median((1..<ts.count).map { ts[$0] - ts[$0 - 1] }))
            }
        }
        let bodySize = sizes.isEmpty ? nil : Lint.median(sizes)
        let unitShare = D == 2 && points > 0 ? Double(inUnit) / Double(points) : nil
        var scale = CoordinateSpaceReport.Scale.unknown
        if let size = bodySize, sizes.count >= 3 {
            if D == 2 {
                if (unitShare ?? 0) >= 0.95 && size < 1.5 {
                    scale = .normalised
                } else {
                    scale = size >= 8 ? .pixels : .small
                }
            } else if size >= 0.05 && size <= 5 {
                scale = .metres
            } else if size >= 100 && size <= 5000 {
                scale = .millimetres
            }
        }
        var vertical: CoordinateSpaceReport.Vertical? = nil
        if counted >= 3, let axis = largestAxis.indices.max(by: { largestAxis[$0] < largestAxis[$1] }) {
            let upPositive = positive[axis] >= negative[axis]
            let agreeing = upPositive ? positive[axis] : negative[axis]
            if Double(agreeing) >= 0.6 * Double(counted) {
                vertical = .init(axis: axis, upIsPositive: upPositive, agreeing: agreeing, counted: counted)
            }
        }
        let interval = intervals.isEmpty ? nil : Lint.median(intervals)

        var problems: [CoordinateProblem] = []
        if let size = bodySize, sizes.count >= 3 {
            switch (skeleton.units, scale) {
            case (.pixels, .normalised): problems.append(.normalisedAsPixels(share: unitShare ?? 0, bodySize: size))
            case (.pixels, .small): problems.append(.tooSmallForPixels(bodySize: size))
            case (.metres, .millimetres), (.metres, .unknown): problems.append(.notMetres(bodySize: size, scale: scale))
            default: break
            }
        }
        // The Pose contract fixes y down for 2D points; a 3D skeleton may have any vertical axis.
        if D == 2, let v = vertical, v.axis == 1, v.upIsPositive {
            problems.append(.yUp(frames: v.agreeing, of: v.counted))
        }
        if let interval, interval >= 2, interval <= 200 {
            problems.append(.millisecondsAsSeconds(interval: interval))
        }
        if let interval, interval > 0, interval < 1e-4 {
            problems.append(.tooFastForSeconds(interval: interval))
        }
        return CoordinateSpaceReport(
            declaredUnits: skeleton.units, dimensions: D, points: points, bodySize: bodySize, unitSquareShare: unitShare,
            scale: scale, vertical: vertical, frameInterval: interval, problems: problems)
    }

    /// One line for reports: "coordinates: measured pixels (bodies 212 across), y down;
    /// declared pixels".
    public static func summary(_ r: CoordinateSpaceReport) -> String {
        var s = "coordinates: measured \(r.scale.rawValue)"
        if let size = r.bodySize { s += String(format: size < 10 ? " (bodies %.2f across)" : " (bodies %.0f across)", size) }
        s += ", vertical " + (r.vertical.map { "\($0) (\($0.agreeing) of \($0.counted) frames)" } ?? "unknown")
        s += "; declared \(r.declaredUnits.rawValue)"
        if r.dimensions == 2 && r.declaredUnits == .pixels { s += ", y down" }
        return s
    }

    /// Per joint: whether it is a head joint and whether it is a foot joint (see the notes of
    /// `CoordinateSpaceReport`). Feet are ankles, feet, heels, toes and paws; without any,
    /// knees; without those, hips.
    static func headAndFeet(_ skeleton: Skeleton) -> (upper: [Bool], lower: [Bool]) {
        let names = skeleton.joints.map { $0.lowercased() }
        func has(_ words: [String]) -> [Bool] { names.map { n in words.contains { n.contains($0) } } }
        let upper = has(["head", "nose", "eye", "ear", "neck"])
        var lower = has(["ankle", "foot", "heel", "toe", "paw"])
        if !lower.contains(true) { lower = has(["knee"]) }
        if !lower.contains(true) { lower = has(["hip"]) }
        return (upper, zip(upper, lower).map { !$0 && $1 })
    }
}

/// Repairs of a dataset's coordinate space, as `actiontrain convert` applies them
/// (`--from-normalized`, `--origin bottom-left`, `--mirror`). Each returns a new dataset; the
/// image size of a sequence is its own when it has one, else `imageSize` when given, else the
/// dataset's; a given `imageSize` becomes the dataset's.
public enum CoordinateFix {
    /// Where the data's origin is.
    public enum Origin: String, Sendable, CaseIterable {
        /// The image convention: y grows downwards.
        case topLeft = "top-left"
        /// Vision's convention: y grows upwards.
        case bottomLeft = "bottom-left"
    }

    public enum FixError: Error, Equatable, CustomStringConvertible {
        case needsImageSize(String)
        case wrongDimensions(String)

        public var description: String {
            switch self {
            case .needsImageSize(let why), .wrongDimensions(let why): return why
            }
        }
    }

    /// Normalised 2D points (fractions of the image) to pixels: `x_px = x · W` and
    /// `y_px = y · H` (`origin` top-left) or `(1 − y) · H` (bottom-left, Vision).
    public static func fromNormalised(_ d: Dataset, imageSize: [Double]?, origin: Origin) throws -> Dataset {
        try transform(d, imageSize: imageSize, what: "converting normalised points") { x, y, size in
            (x * Float(size[0]), (origin == .bottomLeft ? 1 - y : y) * Float(size[1]))
        }
    }

    /// Pixels with the origin at the bottom-left to the image convention: `y → H − y`.
    public static func flipVertically(_ d: Dataset, imageSize: [Double]?) throws -> Dataset {
        try transform(d, imageSize: imageSize, what: "flipping a bottom-left origin") { x, y, size in (x, Float(size[1]) - y) }
    }

    /// A front-camera (mirrored) capture to anatomical sides: every left/right pair of the
    /// skeleton swapped and x mirrored, `x → W − x` for 2D pixels (needs the image width),
    /// `x → −x` otherwise.
    public static func mirrored(_ d: Dataset, imageSize: [Double]?) throws -> Dataset {
        let perm = d.skeleton.mirrorPermutation
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        let pixels = D == 2 && d.skeleton.units == .pixels
        var out = d
        if let imageSize { out.imageSize = imageSize }
        for k in out.sequences.indices {
            var s = out.sequences[k]
            let size = s.imageSize ?? out.imageSize
            if pixels && size == nil {
                throw FixError.needsImageSize("sequence '\(s.id)': mirroring pixels needs the image width; give the image size")
            }
            let old = s
            for f in 0..<s.frameCount {
                for j in 0..<J {
                    let src = f * J + perm[j], dst = f * J + j
                    s.present[dst] = old.present[src]
                    s.confidence?[dst] = old.confidence![src]
                    for c in 0..<D { s.coordinates[dst * D + c] = old.coordinates[src * D + c] }
                    if s.present[dst] != 0 {
                        let x = s.coordinates[dst * D]
                        s.coordinates[dst * D] = pixels ? Float(size![0]) - x : -x
                    }
                }
            }
            out.sequences[k] = s
        }
        return out
    }

    /// 3D sequences with a Vision `bodyHeight` scaled so that every person is `reference`
    /// metres tall (Vision's reference height is 1.8 m): coordinates times
    /// `reference / bodyHeight`. The scaled person is `reference` tall, which the sequence then
    /// records (`bodyHeight` = `reference`, `heightEstimation` "reference"), so that running
    /// this again on the result changes nothing. Sequences without a height, or already at
    /// `reference`, are left as they are (`HeightCounts` says how many of each).
    public static func normalisingHeight(_ d: Dataset, reference: Double = 1.8) throws -> Dataset {
        guard d.skeleton.dimensions == 3 else {
            throw FixError.wrongDimensions("height normalisation is for 3D metres; skeleton '\(d.skeleton.name)' is 2D")
        }
        var out = d
        for k in out.sequences.indices {
            guard let h = out.sequences[k].bodyHeight, h != reference else { continue }
            let factor = Float(reference / h)
            for i in out.sequences[k].coordinates.indices { out.sequences[k].coordinates[i] *= factor }
            out.sequences[k].bodyHeight = reference
            out.sequences[k].heightEstimation = "reference"
        }
        return out
    }

    /// What `normalisingHeight(d, reference:)` does to `d`'s sequences: how many it scales,
    /// how many are already `reference` tall, how many have no height.
    public struct HeightCounts: Equatable, Sendable {
        public var scaled = 0, alreadyAtReference = 0, withoutHeight = 0
        public init(_ d: Dataset, reference: Double) {
            for s in d.sequences {
                switch s.bodyHeight {
                case nil: withoutHeight += 1
                case reference?: alreadyAtReference += 1
                default: scaled += 1
                }
            }
        }
    }

    /// The repairs `actiontrain convert` asks for, applied in a fixed order: normalised to
    /// pixels (or a bottom-left origin flipped), then mirroring, then height normalisation.
    public struct Plan: Sendable, Equatable {
        /// The points are fractions of the image (`fromNormalised`).
        public var normalised = false
        /// The data's origin; `bottomLeft` without `normalised` flips pixels vertically.
        public var origin: Origin = .topLeft
        public var mirror = false
        public var imageSize: [Double]?
        /// Scale 3D people to this height in metres (`normalisingHeight`).
        public var heightReference: Double?

        public init() {}

        public var isEmpty: Bool { !normalised && origin == .topLeft && !mirror && heightReference == nil }

        public func apply(to d: Dataset) throws -> Dataset {
            var out = d
            if normalised {
                out = try CoordinateFix.fromNormalised(out, imageSize: imageSize, origin: origin)
            } else if origin == .bottomLeft {
                out = try CoordinateFix.flipVertically(out, imageSize: imageSize)
            }
            if mirror { out = try CoordinateFix.mirrored(out, imageSize: imageSize) }
            if let heightReference { out = try CoordinateFix.normalisingHeight(out, reference: heightReference) }
            return out
        }
    }

    /// Applies `f(x, y, [width, height]) -> (x, y)` to every present 2D point.
    private static func transform(
        _ d: Dataset, imageSize: [Double]?, what: String, _ f: (Float, Float, [Double]) -> (Float, Float)
    ) throws -> Dataset {
        guard d.skeleton.dimensions == 2 else {
            throw FixError.wrongDimensions("\(what) is for 2D points; skeleton '\(d.skeleton.name)' is 3D")
        }
        var out = d
        if let imageSize { out.imageSize = imageSize }
        let J = d.skeleton.jointCount
        for k in out.sequences.indices {
            var s = out.sequences[k]
            guard let size = s.imageSize ?? out.imageSize else {
                throw FixError.needsImageSize("sequence '\(s.id)': \(what) needs the image size; give it")
            }
            for i in 0..<(s.frameCount * J) where s.present[i] != 0 {
                (s.coordinates[2 * i], s.coordinates[2 * i + 1]) = f(s.coordinates[2 * i], s.coordinates[2 * i + 1], size)
            }
            out.sequences[k] = s
        }
        return out
    }
}
