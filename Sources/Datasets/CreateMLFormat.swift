import Foundation
import PoseCore

/// Create ML's action-classifier keypoint layout: per frame, the `[3, 18]` MLMultiArray that
/// Vision's `VNHumanBodyPoseObservation.keypointsMultiArray()` returns (x row, y row,
/// confidence row; 18 joints in the order of `jointOrder`), stacked into an `.npz`:
///
/// | array | shape | meaning |
/// |---|---|---|
/// | `poses` | `[N, frames, 3, 18]` float32/64 | the stacked keypoint arrays |
/// | `image_size` or `image_sizes` | `[2]` or `[N, 2]` | video width and height in pixels |
/// | `y`, `label_names`, `groups`, `split`, `lengths`, `ids`, `frame_rate` | | as in `NumpyFormat` |
///
/// Vision's points are normalised to [0, 1] with the origin at the bottom-left of the image
/// (y up). They are converted to the Pose contract on the `vision-body-2d` skeleton:
/// `x_px = x · width`, `y_px = (1 − y) · height` (origin top-left, y down). A confidence of 0
/// (Vision's "not detected", also used for padding frames) makes the joint absent. Vision's
/// 19th joint, `root`, is not in the Create ML layout and is always absent.
public enum CreateMLFormat {
    /// The 18 keypoints in Create ML's order (`Skeleton.createMLKeypointOrder`, where the
    /// evidence is).
    public static let jointOrder = Skeleton.createMLKeypointOrder

    /// `minConfidence`: a point whose confidence is at or below it is absent (default 0);
    /// `classes`: the class order when the archive has no `label_names`.
    public static func read(_ path: String, minConfidence: Float = 0, classes: [String]? = nil) throws -> Dataset {
        try read(try NumpySource(path: path), minConfidence: minConfidence, classes: classes)
    }

    /// Reads an archive held in memory (tests).
    public static func parseArchive(_ bytes: [UInt8], file: String, minConfidence: Float = 0) throws -> Dataset {
        try read(NumpySource(archive: ZipArchive(reader: FileReader(bytes: bytes, name: file))), minConfidence: minConfidence, classes: nil)
    }

    static func read(_ source: NumpySource, minConfidence: Float, classes: [String]?) throws -> Dataset {
        let meta = try source.small(except: source.first(of: ["poses", "X", "x"]) ?? "poses")
        var sizes: (Int) -> [Double]? = { _ in nil }
        var single: [Double]? = nil
        if let s = meta["image_size"] {
            let v = s.doubles()
            guard s.header.isNumeric, v.count == 2, v.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw DatasetError.numpy(source.location("image_size"), problem: "'image_size' must be [width, height] in pixels", fix: "e.g. numpy.array([1920, 1080])")
            }
            single = v
            sizes = { _ in v }
        } else if let s = meta["image_sizes"] {
            let v = s.doubles()
            guard s.header.isNumeric, s.shape.count == 2, s.shape[1] == 2, v.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw DatasetError.numpy(source.location("image_sizes"), problem: "'image_sizes' must be [N, 2] widths and heights", fix: "fix it")
            }
            sizes = { n in n < s.shape[0] ? [v[2 * n], v[2 * n + 1]] : nil }
        }
        var options = NumpyFormat.Options()
        options.minConfidence = minConfidence
        options.classes = classes
        var d = try NumpyFormat.read(source, options: options, layout: .createML(imageSizes: sizes))
        if let single {
            d.imageSize = single
            for k in d.sequences.indices { d.sequences[k].imageSize = nil }
        }
        return d
    }
}

/// Create ML's folder-per-label layout with one pose file per clip (docs/datasets.md, "Create
/// ML"): `DIR/<label>/<clip>.json` or `.csv`, Vision keypoints normalised with the origin at
/// the bottom-left, made pixels on `vision-body-2d` with the clip's (or the given) image size.
///
/// A clip's JSON is `{"imageSize": [W, H], "frameRate": 30, "frames": [...]}` or just the array
/// of frames. A frame is Vision's `keypointsMultiArray()` as nested arrays `[[x × 18], [y ×
/// 18], [confidence × 18]]` (Create ML's joint order, `CreateMLFormat.jointOrder`), or an object
/// of joints by any name `vision-body-2d` resolves (`leftWrist`, `left_hand_joint`) to `[x, y,
/// confidence]` or `{"x": ..., "y": ..., "confidence": ...}`; `null` or `{}` is a frame with
/// nobody in view. A clip's CSV has one row per frame with `<joint>_x`, `<joint>_y`,
/// `<joint>_c` columns (the CSV header convention, aliases included).
///
/// `write` produces the same layout from a 2D dataset, so the data can be trained on and
/// compared in Create ML (`MLActionClassifier.DataSource.labeledKeypointsDataFrame`).
public enum CreateMLFolder {
    public struct Options: Sendable {
        /// The image size of clips that do not give one.
        public var imageSize: [Double]?
        public var minConfidence: Float = 0
        public var frameRate: Double?
        public init(imageSize: [Double]? = nil) { self.imageSize = imageSize }
    }

    /// Reads every `<label>/<clip>.json|csv` of `dir` (labels and clips in name order).
    public static func read(_ dir: String, options: Options = Options()) throws -> Dataset {
        try readReporting(dir, options: options).dataset
    }

    /// `read` with its warnings: label folders without clips, which are left out of the classes,
    /// and hidden ones (a name starting with `.`: a label folder, or a `.json`/`.csv` clip), which
    /// are skipped (other hidden files, such as `.DS_Store`, are skipped without a word).
    /// Symbolic links are not followed (a link could lead out of the folder, or around in a
    /// loop): a linked label folder or clip is an error naming it.
    public static func readReporting(_ dir: String, options: Options = Options()) throws -> ReadReport {
        let names = try contents(dir)
        var labels: [String] = []
        var hidden: [(path: String, what: String)] = []
        for name in try hiddenNames(dir) {
            let path = (dir as NSString).appendingPathComponent(name)
            if (try? kind(path)) == .directory { hidden.append((path, "a label folder")) }
        }
        for name in names {
            let path = (dir as NSString).appendingPathComponent(name)
            switch try kind(path) {
            case .directory: labels.append(name)
            case .link: throw linked(path)
            case .file: continue
            }
        }
        var sequences: [PoseSequence] = []
        var frameRate = options.frameRate
        var imageSizes = Set<[Double]>()
        var empty: [String] = []
        for label in labels {
            let folder = (dir as NSString).appendingPathComponent(label)
            let before = sequences.count
            for name in try hiddenNames(folder) where ["json", "csv"].contains((name as NSString).pathExtension.lowercased()) {
                hidden.append(((folder as NSString).appendingPathComponent(name), "a clip"))
            }
            for name in try contents(folder) {
                let path = (folder as NSString).appendingPathComponent(name)
                let ext = (name as NSString).pathExtension.lowercased()
                guard ext == "json" || ext == "csv" else { continue }
                switch try kind(path) {
                case .link: throw linked(path)
                case .directory: continue
                case .file: break
                }
                let id = "\(label)/\((name as NSString).deletingPathExtension)"
                var clip =
                    ext == "json"
                    ? try parseClip(try DatasetLoader.contents(of: path), file: path, id: id, options: options)
                    : try csvClip(path, id: id, options: options)
                clip.sequence.label = label
                sequences.append(clip.sequence)
                if frameRate == nil { frameRate = clip.frameRate }
                if let s = clip.sequence.imageSize { imageSizes.insert(s) }
            }
            if sequences.count == before { empty.append(label) }
        }
        guard !sequences.isEmpty else {
            throw DatasetError.cannotRead(
                file: dir, reason: "no clips: expected one folder per label holding .json or .csv pose files (docs/datasets.md, Create ML)")
        }
        // One image size for all clips is the dataset's.
        var imageSize: [Double]? = nil
        if imageSizes.count == 1 {
            imageSize = imageSizes.first
            for k in sequences.indices { sequences[k].imageSize = nil }
        }
        let dataset = Dataset(
            name: URL(fileURLWithPath: dir).lastPathComponent, skeleton: .visionBody2D, sequences: sequences,
            classes: labels.filter { !empty.contains($0) }, frameRate: frameRate, imageSize: imageSize)
        let warnings =
            empty.map {
                DatasetWarning(
                    SourceLocation(file: (dir as NSString).appendingPathComponent($0)),
                    "the label folder holds no .json or .csv clip; it is not a class (add its clips, or remove the folder)")
            }
            + hidden.map {
                DatasetWarning(
                    SourceLocation(file: $0.path), "\($0.what) whose name starts with '.' (hidden) is skipped; rename it to read it")
            }
        return ReadReport(dataset: dataset, warnings: warnings)
    }

    enum Kind { case file, directory, link }

    /// What `path` is, without following a link.
    static func kind(_ path: String) throws -> Kind {
        guard let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType else {
            throw DatasetError.cannotRead(file: path, reason: "cannot be read")
        }
        switch type {
        case .typeSymbolicLink: return .link
        case .typeDirectory: return .directory
        default: return .file
        }
    }

    static func linked(_ path: String) -> DatasetError {
        .cannotRead(
            file: path, reason: "is a symbolic link, which import does not follow (it could lead out of the folder or round in a loop); copy the files into the folder")
    }

    static func contents(_ dir: String) throws -> [String] {
        try allNames(dir).filter { !$0.hasPrefix(".") }
    }

    /// The names in `dir` that start with `.`, sorted.
    static func hiddenNames(_ dir: String) throws -> [String] {
        try allNames(dir).filter { $0.hasPrefix(".") }
    }

    static func allNames(_ dir: String) throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        } catch {
            throw DatasetError.cannotRead(file: dir, reason: "not a readable folder")
        }
    }

    /// One clip's JSON as a sequence (id `id`, no label) in pixels, and its frame rate.
    public static func parseClip(_ bytes: [UInt8], file: String, id: String, options: Options = Options()) throws
        -> (sequence: PoseSequence, frameRate: Double?)
    {
        var text = bytes
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }
        let value: JSONValue
        do { value = try JSONValue.parse(text) } catch let e as JSONSyntaxError {
            // A location prints its column only after a line: both, from the offset.
            let before = text[..<min(e.offset, text.count)]
            let start = before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
            let at = SourceLocation(file: file, line: before.filter { $0 == 0x0A }.count + 1, column: e.offset - start + 1)
            if text[min(e.offset, text.count)...].allSatisfy({ [0x20, 0x0A, 0x0D, 0x09].contains($0) }) {
                throw DatasetError.truncated(at, what: "the clip's JSON")
            }
            throw DatasetError.syntax(at, expected: e.expected)
        }
        let at = SourceLocation(file: file, record: id, recordKind: "clip")
        func fail(_ problem: String, _ fix: String) -> DatasetError { .invalidValue(at, problem: problem, fix: fix) }
        var frames: [JSONValue]
        var size = options.imageSize
        var frameRate: Double? = nil
        switch value {
        case .array(let a): frames = a
        case .object(let o):
            for key in o.keys.sorted() where !["imageSize", "frameRate", "frames"].contains(key) {
                throw fail("unknown key \"\(key)\"", "the keys are imageSize, frameRate, frames")
            }
            guard let a = o["frames"]?.array else { throw fail("no \"frames\" array", "write {\"imageSize\": [W, H], \"frames\": [...]}") }
            frames = a
            if let s = o["imageSize"] { size = try NativeHeader.imageSize(s, at: at) }
            if let r = o["frameRate"] {
                guard let v = r.number, v > 0, v.isFinite, v < 1e6 else { throw fail("\"frameRate\" must be a positive number", "fix it") }
                frameRate = v
            }
        default:
            throw fail("a clip must be a JSON array of frames or an object with \"frames\"", "see docs/datasets.md, Create ML")
        }
        guard let size else {
            throw fail("no image size: Vision's points are fractions of the image", "give \"imageSize\": [W, H] in the file, or the image size when importing")
        }
        let skeleton = Skeleton.visionBody2D
        var sequence = PoseSequence(id: id, label: nil, jointCount: skeleton.jointCount, dimensions: 2, hasConfidence: true)
        let order = CreateMLFormat.jointOrder.map { skeleton.index(of: $0)! }
        for (f, frame) in frames.enumerated() {
            var points = [PosePoint?](repeating: nil, count: skeleton.jointCount)
            var frameAt = at
            frameAt.frame = f
            func point(_ x: Double?, _ y: Double?, _ c: Double?, joint: String) throws -> PosePoint? {
                guard let x, let y else { throw DatasetError.invalidValue(withJoint(frameAt, joint), problem: "x and y must be numbers", fix: "write [x, y, confidence]") }
                let c = c ?? 1
                for v in [x, y, c] where !v.isFinite { throw DatasetError.nonFinite(withJoint(frameAt, joint), what: "a value") }
                let (px, py) = (x * size[0], (1 - y) * size[1])
                for v in [px, py] where abs(v) > Double(PoseBounds.maxCoordinate) { throw PoseBounds.outOfRange(v, at: withJoint(frameAt, joint)) }
                guard Float(c) > options.minConfidence else { return nil }
                return PosePoint(x: Float(px), y: Float(py), confidence: Float(c))
            }
            switch frame {
            case .null: break
            case .array(let rows):
                guard rows.count == 3, let xs = rows[0].array, let ys = rows[1].array, let cs = rows[2].array,
                    xs.count == 18, ys.count == 18, cs.count == 18
                else {
                    throw DatasetError.invalidValue(frameAt, problem: "a frame array must be [[x × 18], [y × 18], [confidence × 18]]", fix: "write keypointsMultiArray() as nested arrays, or an object of joints")
                }
                for k in 0..<18 {
                    points[order[k]] = try point(xs[k].number, ys[k].number, cs[k].number, joint: CreateMLFormat.jointOrder[k])
                }
            case .object(let joints):
                for (name, v) in joints.sorted(by: { $0.key < $1.key }) {
                    guard let (j, _) = skeleton.resolveJoint(name) else {
                        throw DatasetError.jointNotInSkeleton(frameAt, joint: name, skeleton: skeleton.name, known: skeleton.joints)
                    }
                    guard points[j] == nil else {
                        throw DatasetError.invalidValue(withJoint(frameAt, skeleton.joints[j]), problem: "the joint is given twice in one frame", fix: "keep one point per joint")
                    }
                    switch v {
                    case .array(let a) where a.count == 2 || a.count == 3:
                        points[j] = try point(a[0].number, a[1].number, a.count == 3 ? a[2].number : nil, joint: skeleton.joints[j])
                    case .object(let o):
                        points[j] = try point(o["x"]?.number, o["y"]?.number, o["confidence"]?.number, joint: skeleton.joints[j])
                    default:
                        throw DatasetError.invalidValue(withJoint(frameAt, skeleton.joints[j]), problem: "a point must be [x, y, confidence] or {\"x\", \"y\", \"confidence\"}", fix: "fix the point")
                    }
                }
            default:
                throw DatasetError.invalidValue(frameAt, problem: "a frame must be an array, an object or null", fix: "see docs/datasets.md, Create ML")
            }
            sequence.appendFrame(points)
        }
        sequence.imageSize = size
        return (sequence, frameRate)
    }

    static func withJoint(_ at: SourceLocation, _ joint: String) -> SourceLocation {
        var a = at
        a.joint = joint
        return a
    }

    /// One clip's CSV (header convention, normalised bottom-left points) as a sequence in pixels.
    static func csvClip(_ path: String, id: String, options: Options) throws -> (sequence: PoseSequence, frameRate: Double?) {
        guard let size = options.imageSize else {
            throw DatasetError.invalidValue(
                SourceLocation(file: path, record: id, recordKind: "clip"), problem: "no image size: Vision's points are fractions of the image",
                fix: "give the image size when importing (a CSV clip has no imageSize key)")
        }
        var mapping = CSVMapping()
        mapping.skeleton = .visionBody2D
        mapping.fileSequenceId = id
        mapping.minConfidence = options.minConfidence
        let d = try CoordinateFix.fromNormalised(try CSVFormat.read(path, mapping: mapping), imageSize: size, origin: .bottomLeft)
        var s = d.sequences[0]
        s.imageSize = size
        return (s, nil)
    }

    /// Writes a 2D `vision-body-2d` dataset as `dir/<label>/<id>.json` clips: the object form
    /// with the image size, the frame rate and per frame the `[3, 18]` keypoint array
    /// (normalised, origin bottom-left, absent joints `0, 0, 0`). Sequence ids become file
    /// names (`/` and other unsafe characters replaced by `_`). Returns the files written.
    @discardableResult
    public static func write(_ d: Dataset, to dir: String) throws -> [String] {
        guard d.skeleton.joints == Skeleton.visionBody2D.joints else {
            throw DatasetError.invalidValue(
                SourceLocation(file: dir), problem: "Create ML's keypoints are Vision's 2D body joints; this dataset's skeleton is '\(d.skeleton.name)'",
                fix: "convert data on vision-body-2d")
        }
        let fm = FileManager.default
        let J = d.skeleton.jointCount
        let order = CreateMLFormat.jointOrder.map { d.skeleton.index(of: $0)! }
        var written: [String] = []
        var used = Set<String>()
        for s in d.sequences {
            guard let label = s.label else {
                throw DatasetError.invalidValue(SourceLocation(file: dir, record: s.id), problem: "the sequence has no label", fix: "Create ML's folders are labels; label every sequence")
            }
            guard let size = s.imageSize ?? d.imageSize else {
                throw DatasetError.invalidValue(SourceLocation(file: dir, record: s.id), problem: "no image size to normalise the points with", fix: "give the image size")
            }
            let folder = (dir as NSString).appendingPathComponent(safe(label))
            try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var name = safe(s.id.hasPrefix(label + "/") ? String(s.id.dropFirst(label.count + 1)) : s.id)
            while !used.insert("\(label)/\(name)").inserted { name += "_" }
            var out = "{\"imageSize\": [\(size[0]), \(size[1])]"
            if let r = d.frameRate { out += ", \"frameRate\": \(r)" }
            out += ", \"frames\": ["
            for f in 0..<s.frameCount {
                var rows = [[Float]](repeating: [Float](repeating: 0, count: 18), count: 3)
                for (k, j) in order.enumerated() where s.present[f * J + j] != 0 {
                    rows[0][k] = s.coordinates[2 * (f * J + j)] / Float(size[0])
                    rows[1][k] = 1 - s.coordinates[2 * (f * J + j) + 1] / Float(size[1])
                    rows[2][k] = s.confidence?[f * J + j] ?? 1
                }
                out += (f > 0 ? ", " : "") + "[" + rows.map { "[" + $0.map { "\($0)" }.joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
            }
            out += "]}\n"
            let path = (folder as NSString).appendingPathComponent(name + ".json")
            do { try AtomicWrite.write(Array(out.utf8), to: path) } catch let e as AtomicWrite.WriteError {
                throw DatasetError.cannotRead(file: path, reason: "cannot write: \(e.reason)")
            }
            written.append(path)
        }
        return written
    }

    static func safe(_ name: String) -> String {
        let s = String(name.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return s.isEmpty || s.hasPrefix(".") ? "_" + s : s
    }
}
