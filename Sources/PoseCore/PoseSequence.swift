/// One point of a pose, per the Pose contract: image pixels (origin top-left, y down) for
/// 2D skeletons, metres for 3D ones; `confidence` is optional.
public struct PosePoint: Hashable, Sendable {
    /// The largest coordinate magnitude accepted anywhere: the dataset readers refuse a file
    /// with a coordinate beyond it, a stream session ignores such a frame. Pose coordinates are
    /// pixels (at most tens of thousands), metres or millimetres; a value beyond this is a unit
    /// or writing error, and its square would overflow Float in feature extraction.
    public static let maxCoordinate: Float = 1e6

    public var x: Float
    public var y: Float
    public var z: Float
    public var confidence: Float?

    public init(x: Float, y: Float, z: Float = 0, confidence: Float? = nil) {
        self.x = x
        self.y = y
        self.z = z
        self.confidence = confidence
    }
}

/// One frame: the joints that were seen, by name. A joint that is absent was not seen
/// (never measured, never penalised). An empty pose is a real frame: the person left the view.
public struct Pose: Hashable, Sendable {
    public var points: [String: PosePoint]
    /// Seconds since the start of the sequence, when known.
    public var time: Double?

    public init(points: [String: PosePoint] = [:], time: Double? = nil) {
        self.points = points
        self.time = time
    }
}

/// A sequence of poses in dense storage: `frames x joints x dimensions` coordinates with a
/// presence mask, so that windows can be cut and normalised without dictionaries.
///
/// Shapes (row-major): `coordinates[F, J, D]`, `present[F, J]`, `confidence[F, J]`.
/// Absent joints have zero coordinates, `present == 0` and zero confidence.
public struct PoseSequence: Sendable, Equatable {
    public var id: String
    /// The class label, or nil for unlabeled data (prediction).
    public var label: String?
    /// Subject or session; a group never lands on both sides of a split.
    public var group: String?
    /// A split given by the data (`train`, `validation`, `test`), if any.
    public var split: String?
    public let jointCount: Int
    public let dimensions: Int
    public private(set) var frameCount: Int
    public var coordinates: [Float]
    public var present: [UInt8]
    /// Per-joint confidence, or nil when the source has none.
    public var confidence: [Float]?
    /// Per-frame timestamps in seconds, or nil (then frames are evenly spaced at the dataset's rate).
    public var timestamps: [Double]?
    /// Labeled event frames (e.g. the release frame of a throw), for centred windows.
    public var events: [Int]
    /// Labelled stretches of a recording (the actions of a stream, for `eval --events`), in
    /// order of start; empty for a clip whose `label` covers it all.
    public var segments: [LabeledSegment] = []
    /// Image size `[width, height]` in pixels of this sequence's video, when it differs per
    /// sequence (Penn Action); nil means the dataset's `imageSize`, if any.
    public var imageSize: [Double]?
    /// The person's height in metres as Vision 3D estimates it (`bodyHeight`), when known.
    public var bodyHeight: Double?
    /// How `bodyHeight` was obtained: `measured` (from depth) or `reference` (Vision's default
    /// 1.8 m when it cannot measure).
    public var heightEstimation: String?

    public init(
        id: String, label: String?, group: String? = nil, split: String? = nil,
        jointCount: Int, dimensions: Int, frameCount: Int,
        coordinates: [Float], present: [UInt8], confidence: [Float]? = nil,
        timestamps: [Double]? = nil, events: [Int] = [], imageSize: [Double]? = nil,
        bodyHeight: Double? = nil, heightEstimation: String? = nil
    ) {
        precondition(coordinates.count == frameCount * jointCount * dimensions, "coordinates shape")
        precondition(present.count == frameCount * jointCount, "present shape")
        precondition(confidence == nil || confidence!.count == frameCount * jointCount, "confidence shape")
        precondition(timestamps == nil || timestamps!.count == frameCount, "timestamps shape")
        self.id = id
        self.label = label
        self.group = group
        self.split = split
        self.jointCount = jointCount
        self.dimensions = dimensions
        self.frameCount = frameCount
        self.coordinates = coordinates
        self.present = present
        self.confidence = confidence
        self.timestamps = timestamps
        self.events = events
        self.imageSize = imageSize
        self.bodyHeight = bodyHeight
        self.heightEstimation = heightEstimation
    }

    /// An empty sequence to which frames are appended.
    public init(id: String, label: String?, jointCount: Int, dimensions: Int, hasConfidence: Bool) {
        self.init(
            id: id, label: label, jointCount: jointCount, dimensions: dimensions, frameCount: 0,
            coordinates: [], present: [], confidence: hasConfidence ? [] : nil)
    }

    /// Builds a sequence from poses keyed by joint name. Points of joints the skeleton does
    /// not know throw `PoseError.unknownJoint`.
    public init(id: String, label: String?, poses: [Pose], skeleton: Skeleton) throws {
        let hasConfidence = poses.contains { $0.points.values.contains { $0.confidence != nil } }
        self.init(
            id: id, label: label, jointCount: skeleton.jointCount, dimensions: skeleton.dimensions,
            hasConfidence: hasConfidence)
        var index: [String: Int] = [:]
        for (i, j) in skeleton.joints.enumerated() { index[j] = i }
        let hasTime = !poses.isEmpty && poses.allSatisfy { $0.time != nil }
        for pose in poses {
            var frame = [PosePoint?](repeating: nil, count: jointCount)
            for (name, p) in pose.points {
                guard let i = index[name] else { throw PoseError.unknownJoint(name, skeleton: skeleton.name) }
                frame[i] = p
            }
            appendFrame(frame, time: hasTime ? pose.time : nil)
        }
    }

    /// Appends one frame given as optional points in skeleton order (nil = absent).
    public mutating func appendFrame(_ points: [PosePoint?], time: Double? = nil) {
        precondition(points.count == jointCount, "frame has \(points.count) joints, expected \(jointCount)")
        for p in points {
            if let p {
                coordinates.append(p.x)
                coordinates.append(p.y)
                if dimensions == 3 { coordinates.append(p.z) }
                present.append(1)
                confidence?.append(p.confidence ?? 1)
            } else {
                for _ in 0..<dimensions { coordinates.append(0) }
                present.append(0)
                confidence?.append(0)
            }
        }
        if let time {
            if timestamps == nil && frameCount == 0 { timestamps = [] }
            timestamps?.append(time)
        } else {
            timestamps = nil
        }
        frameCount += 1
    }

    /// The pose at frame `f`, keyed by joint name (absent joints omitted).
    public func pose(at f: Int, skeleton: Skeleton) -> Pose {
        var points: [String: PosePoint] = [:]
        for j in 0..<jointCount where present[f * jointCount + j] != 0 {
            let base = (f * jointCount + j) * dimensions
            points[skeleton.joints[j]] = PosePoint(
                x: coordinates[base], y: coordinates[base + 1],
                z: dimensions == 3 ? coordinates[base + 2] : 0,
                confidence: confidence?[f * jointCount + j])
        }
        return Pose(points: points, time: timestamps?[f])
    }

    /// Frames `[start, start + count)` as a new sequence (same id, label and group).
    public func slice(_ start: Int, count: Int) -> PoseSequence {
        precondition(start >= 0 && count >= 0 && start + count <= frameCount, "slice out of range")
        let jd = jointCount * dimensions
        let sliced = PoseSequence(
            id: id, label: label, group: group, split: split,
            jointCount: jointCount, dimensions: dimensions, frameCount: count,
            coordinates: Array(coordinates[start * jd..<(start + count) * jd]),
            present: Array(present[start * jointCount..<(start + count) * jointCount]),
            confidence: confidence.map { Array($0[start * jointCount..<(start + count) * jointCount]) },
            timestamps: timestamps.map { Array($0[start..<start + count]) },
            events: events.filter { $0 >= start && $0 < start + count }.map { $0 - start },
            imageSize: imageSize, bodyHeight: bodyHeight, heightEstimation: heightEstimation)
        var out = sliced
        out.segments = segments.compactMap { g in
            let a = max(g.start, start), b = min(g.end, start + count - 1)
            return a <= b ? LabeledSegment(label: g.label, start: a - start, end: b - start) : nil
        }
        return out
    }
}

/// A labelled stretch of a recording: frames `start ... end` (0-based, both included) show the
/// action `label` (docs/datasets.md, "Segments").
public struct LabeledSegment: Hashable, Sendable, Codable {
    public var label: String
    public var start: Int
    public var end: Int

    public init(label: String, start: Int, end: Int) {
        self.label = label
        self.start = start
        self.end = end
    }
}
