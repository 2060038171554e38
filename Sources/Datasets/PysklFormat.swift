import Foundation
import PoseCore

/// MMAction2 / PYSKL skeleton annotation pickles (docs/datasets.md, "MMAction2 / PYSKL"), read
/// through the restricted `Pickle` reader (never executed):
///
///     {"split": {"xsub_train": [frame_dir, ...], "xsub_val": [...]},
///      "annotations": [{"frame_dir": "S001C001P001R001A001", "label": 0,
///                       "keypoint": ndarray [M, T, V, C], "keypoint_score": ndarray [M, T, V],
///                       "img_shape": (h, w), "total_frames": T}, ...]}
///
/// or the list of annotations alone. Each annotation is one sequence with id `frame_dir`;
/// its M bodies are tracks (`PeoplePolicy`); a body whose coordinates are all 0 in a frame is
/// absent there (PYSKL's padding) and a score at or below the minimum confidence makes a joint
/// absent. The skeleton comes from `skeleton` or (V, C): 17 × 2 `coco-17` (PYSKL's HRNet 2D),
/// 18 × 2 `openpose-coco-18`, 25 × 3 `kinect-v2-25` (NTU RGB+D 3D); 2D points are pixels and
/// 3D points metres, as PYSKL stores them.
public enum PysklFormat {
    public struct Options: Sendable {
        public var skeleton: Skeleton?
        public var minConfidence: Float = 0
        public var people: PeoplePolicy?
        /// With `bodies=M`: the body order to apply (a model's); nil decides it from the file
        /// (`BodyOrder`; the tracks are the keypoint array's people axis, `"0"`, `"1"`, ...).
        public var bodyOrder: BodyOrderRule?
        /// Class names for the integer labels (index = label); default their numbers.
        public var classes: [String]?
        /// The `split` dictionary's keys to split names; by default a pair `<x>train`,
        /// `<x>val` (or `test`) becomes train and test.
        public var splitNames: [String: String] = [:]
        public init() {}
    }

    public static func read(_ path: String, options: Options = Options()) throws -> Dataset {
        try readReporting(path, options: options).dataset
    }

    /// The dataset with the reader's warnings (annotations whose keypoints are all NaN).
    public static func readReporting(_ path: String, options: Options = Options()) throws -> ReadReport {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file or not readable")
        }
        return try parseReporting([UInt8](data), file: path, options: options)
    }

    /// Reads a pickle held in memory (tests, fuzzing).
    public static func parse(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> Dataset {
        try parseReporting(bytes, file: file, options: options).dataset
    }

    /// `parse` with the reader's warnings.
    public static func parseReporting(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> ReadReport {
        let root: Pickle.Value
        // NumPy's files start with bytes a pickle could not ("byte 0: opcode 0x50 is not read").
        for (magic, what) in [([0x50, 0x4B, 0x03, 0x04], "a zip archive (a NumPy .npz?)"), ([0x93] + Array("NUMPY".utf8), "a NumPy .npy array")]
        where bytes.starts(with: magic) {
            throw DatasetError.invalidValue(
                SourceLocation(file: file), problem: "is \(what), not a pickle", fix: "read NumPy files as npz (actiontrain import npz), or give the annotations' .pkl")
        }
        do { root = try Pickle.load(bytes) } catch let e as Pickle.Failure {
            // A binary pickle (protocol 2 and later, what pickle.dump writes) starts with 0x80;
            // protocol 0 and 1 are text, so text that does not read is most likely not a pickle.
            let head = bytes.prefix(40)
            if bytes.first != 0x80, !head.isEmpty, head.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                let text = String(decoding: head.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
                throw DatasetError.invalidValue(
                    SourceLocation(file: file),
                    problem: "is not a binary pickle (protocol 2 or later starts with byte 0x80) and does not read as a text one (byte \(e.offset): \(e.problem)): "
                        + "it starts with the text '\(text)'",
                    fix: "give the annotations' .pkl as pickle.dump wrote it")
            }
            throw DatasetError.invalidValue(
                SourceLocation(file: file), problem: "byte \(e.offset): \(e.problem)", fix: "save the annotations with pickle.dump of dicts, lists and NumPy arrays")
        }
        let at = SourceLocation(file: file)
        func fail(_ problem: String, _ fix: String, record: String? = nil) -> DatasetError {
            .invalidValue(SourceLocation(file: file, record: record, recordKind: "annotation"), problem: problem, fix: fix)
        }
        guard let annotations = (root["annotations"] ?? root).items else {
            throw DatasetError.invalidValue(at, problem: "the pickle holds \(root.kind), not annotations", fix: "give a dict with \"annotations\" (and \"split\"), or the list of annotations")
        }
        guard !annotations.isEmpty else { throw DatasetError.empty(file: file) }

        // split: name -> frame_dirs, mapped to train / validation / test.
        var splitOf: [String: String] = [:]
        var listed: [(name: String, ids: [String])] = []
        if let split = root["split"] {
            guard case .dict(let d) = split else { throw DatasetError.invalidValue(at, problem: "\"split\" is \(split.kind), not a dict", fix: "save {name: [frame_dir, ...]}") }
            let names = d.compactMap { $0.key.string }
            let mapping = try splitNames(names, given: options.splitNames, at: at)
            for (key, value) in d {
                guard let name = key.string, let target = mapping[name] else { continue }
                guard let ids = value.items else { throw DatasetError.invalidValue(at, problem: "split '\(name)' is \(value.kind), not a list of frame_dir", fix: "fix the pickle") }
                listed.append((name, ids.compactMap(\.string)))
                for id in listed.last!.ids { splitOf[id] = target }
            }
        }

        var skeleton = options.skeleton
        var sequences: [PoseSequence] = []
        /// With `bodies=M`: the annotations until the last decides their body order.
        var stacker: BodyStacker?
        var seen = Set<String>()
        var labels = Set<Int>()
        /// Annotations with frames whose keypoints are all NaN: no joint was ever seen.
        var allNaN: [String] = []
        /// Annotations with no frames or no people (a keypoint of shape [0, T, V, C] or
        /// [M, 0, V, C]): sequences of no frames, which give no window.
        var empty: [String] = []
        for (n, a) in annotations.enumerated() {
            guard case .dict = a else { throw fail("annotation \(n) is \(a.kind), not a dict", "each annotation is a dict with frame_dir, label, keypoint") }
            guard let id = a["frame_dir"]?.string ?? a["frame_dir"]?.integer.map(String.init) else {
                throw fail("annotation \(n) has no string \"frame_dir\"", "give every annotation its frame_dir (the sequence id)")
            }
            guard seen.insert(id).inserted else { throw fail("frame_dir '\(id)' appears twice", "give every annotation a unique frame_dir", record: id) }
            guard case .array(let kp)? = a["keypoint"], kp.dtype.isNumeric, kp.shape.count == 4 else {
                throw fail("\"keypoint\" is \(a["keypoint"]?.kind ?? "missing"), not an array [M, T, V, C]", "save keypoint as a float array [people, frames, joints, channels]", record: id)
            }
            let (M, T, V, C) = (kp.shape[0], kp.shape[1], kp.shape[2], kp.shape[3])
            if skeleton == nil {
                switch (V, C) {
                case (17, 2): skeleton = .coco17
                case (18, 2): skeleton = .openPoseCOCO18
                case (25, 3): skeleton = .kinectV2
                default:
                    throw fail("keypoint has \(V) joints and \(C) channels, which names no skeleton", "name the skeleton (a built-in name or a schema file)", record: id)
                }
            }
            let s = skeleton!
            guard V == s.jointCount, C == s.dimensions else {
                throw fail("keypoint has shape \(kp.shape), but skeleton '\(s.name)' has \(s.jointCount) joints in \(s.dimensions)D", "name the matching skeleton", record: id)
            }
            var score: Pickle.ArrayBox? = nil
            if let sc = a["keypoint_score"] {
                guard case .array(let box) = sc, box.dtype.isNumeric, box.shape == [M, T, V] else {
                    throw fail("\"keypoint_score\" is \(sc.kind), not an array [\(M), \(T), \(V)]", "save one score per keypoint", record: id)
                }
                score = box
            }
            var label: String? = nil
            if let l = a["label"] {
                guard let k = l.integer else { throw fail("\"label\" is \(l.kind), not a class index", "save integer labels", record: id) }
                guard k >= 0, k < 1_000_000 else { throw fail("\"label\" is \(k), not a class index from 0 to 999999", "save each label as its class's index", record: id) }
                if let classes = options.classes {
                    guard k < classes.count else {
                        throw DatasetError.labelNotInClasses(SourceLocation(file: file, record: id, recordKind: "annotation"), label: String(k), classes: classes)
                    }
                    label = classes[k]
                } else {
                    label = String(k)
                }
                labels.insert(k)
            }
            var imageSize: [Double]? = nil
            if let shape = a["img_shape"]?.items, shape.count == 2, let h = shape[0].number, let w = shape[1].number {
                guard h > 0, w > 0, h.isFinite, w.isFinite else {
                    throw fail("\"img_shape\" is (\(String(format: "%g, %g", h, w))), not an image's (height, width) in pixels", "save the frames' size, or leave img_shape out", record: id)
                }
                imageSize = [w, h]
            }
            if M == 0 || T == 0 { empty.append(id) }
            var tracks: [(id: String, sequence: PoseSequence)] = []
            var sawNaN = false, sawPoint = false
            // With no frames the array holds nothing whatever M says (M × 0 × V × C values).
            for m in 0..<(T == 0 ? min(M, 1) : M) {
                var frame = [PosePoint?](repeating: nil, count: V)
                var body = PoseSequence(id: id, label: label, jointCount: V, dimensions: C, hasConfidence: score != nil)
                for t in 0..<T {
                    var allZero = true
                    for j in 0..<V {
                        let o = ((m * T + t) * V + j) * C
                        var p = PosePoint(x: 0, y: 0)
                        var values = [Double](repeating: 0, count: C)
                        for c in 0..<C { values[c] = kp.double(o + c) }
                        let conf = score.map { $0.double((m * T + t) * V + j) }
                        frame[j] = nil
                        if values.contains(where: { $0 != 0 }) { allZero = false }
                        if values.contains(where: \.isNaN) || conf?.isNaN == true {
                            sawNaN = true
                            continue
                        }
                        guard values.allSatisfy(\.isFinite), conf?.isFinite ?? true else {
                            throw DatasetError.nonFinite(SourceLocation(file: file, record: id, frame: t, joint: s.joints[j], recordKind: "annotation"), what: "a keypoint or score")
                        }
                        for v in values where abs(v) > Double(PoseBounds.maxCoordinate) {
                            throw PoseBounds.outOfRange(v, at: SourceLocation(file: file, record: id, frame: t, joint: s.joints[j], recordKind: "annotation"))
                        }
                        if let conf, Float(conf) <= options.minConfidence { continue }
                        p.x = Float(values[0])
                        p.y = Float(values[1])
                        if C == 3 { p.z = Float(values[2]) }
                        p.confidence = conf.map(Float.init)
                        frame[j] = p
                        sawPoint = true
                    }
                    if allZero { for j in 0..<V { frame[j] = nil } }  // padding: the body is not there
                    body.appendFrame(frame)
                }
                tracks.append((String(m), body))
            }
            if sawNaN && !sawPoint { allNaN.append(id) }
            var base = tracks.first?.sequence ?? PoseSequence(id: id, label: label, jointCount: V, dimensions: C, hasConfidence: false)
            base.split = splitOf[id]
            base.imageSize = imageSize
            if M <= 1 && options.people == nil {
                sequences.append(base)
            } else if case .bodies(let m) = options.people {
                if stacker == nil { stacker = BodyStacker(bodies: m, skeleton: s, given: options.bodyOrder) }
                sequences.append(stacker!.add(TrackedSequence(base: base, tracks: tracks)))
            } else {
                sequences += try People.resolve(
                    TrackedSequence(base: base, tracks: tracks), policy: options.people, skeleton: s, imageSize: imageSize,
                    at: SourceLocation(file: file, record: id, recordKind: "annotation"))
            }
        }
        var bodyOrder: BodyOrder?
        if var st = stacker { bodyOrder = st.finish(&sequences) }
        var classes = options.classes ?? labels.sorted().map(String.init)
        if options.classes == nil && labels.isEmpty { classes = [] }
        var out = Dataset(
            name: URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent, skeleton: skeleton!, sequences: sequences,
            classes: classes)
        out.bodyOrder = bodyOrder
        // One image size for every sequence is the dataset's.
        let sizes = Set(sequences.compactMap(\.imageSize))
        if sizes.count == 1 && sequences.allSatisfy({ $0.imageSize != nil }) {
            out.imageSize = sizes.first
            for k in out.sequences.indices { out.sequences[k].imageSize = nil }
        }
        if case .bodies(let m) = options.people { out.skeleton = out.skeleton.bodies(m) }
        var warnings: [DatasetWarning] = []
        func some(_ ids: [String]) -> String { ids.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (ids.count > 5 ? ", ..." : "") }
        for (name, ids) in listed.sorted(by: { $0.name < $1.name }) {
            let missing = ids.filter { !seen.contains($0) }
            guard !missing.isEmpty else { continue }
            warnings.append(
                DatasetWarning(
                    SourceLocation(file: file),
                    "split '\(name)' lists \(missing.count) frame_dir\(missing.count == 1 ? "" : "s") (of its \(ids.count)) that no annotation has (\(some(missing))): "
                        + "there is nothing to read for \(missing.count == 1 ? "it" : "them"); check that the split lists and the annotations come from the same file"))
        }
        let unlisted = annotations.compactMap { $0["frame_dir"]?.string ?? $0["frame_dir"]?.integer.map(String.init) }.filter { splitOf[$0] == nil }
        if !listed.isEmpty && !unlisted.isEmpty {
            warnings.append(
                DatasetWarning(
                    SourceLocation(file: file),
                    "\(unlisted.count) annotation\(unlisted.count == 1 ? " is" : "s are") in none of the split lists \(listed.map(\.name).sorted().joined(separator: ", ")) "
                        + "(\(some(unlisted))): \(unlisted.count == 1 ? "it has" : "they have") no split"))
        }
        if !allNaN.isEmpty {
            let names = allNaN.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (allNaN.count > 5 ? ", ..." : "")
            warnings.append(
                DatasetWarning(
                    SourceLocation(file: file),
                    "\(allNaN.count) annotation\(allNaN.count == 1 ? "" : "s") (\(names)) \(allNaN.count == 1 ? "holds" : "hold") only NaN keypoints: no joint is seen in any frame "
                        + "(NaN marks a joint as not seen), so \(allNaN.count == 1 ? "it is a sequence" : "they are sequences") of empty frames; "
                        + "check how the keypoints were saved, or leave \(allNaN.count == 1 ? "it" : "them") out"))
        }
        if !empty.isEmpty {
            let names = empty.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (empty.count > 5 ? ", ..." : "")
            warnings.append(
                DatasetWarning(
                    SourceLocation(file: file),
                    "\(empty.count) annotation\(empty.count == 1 ? "" : "s") (\(names)) \(empty.count == 1 ? "has" : "have") a keypoint array of no frames or no people "
                        + "(shape [M, T, V, C] with M or T 0), so \(empty.count == 1 ? "it is a sequence" : "they are sequences") of no frames, which give no window; "
                        + "leave \(empty.count == 1 ? "it" : "them") out, or check how the keypoints were saved"))
        }
        return ReadReport(dataset: out, warnings: warnings)
    }

    /// The split dictionary's names to train / validation / test: `given`, else one pair of
    /// names ending in `train` and `val` (or `test`), which become train and test (PYSKL's
    /// `val` is the evaluation split of the published protocols).
    static func splitNames(_ names: [String], given: [String: String], at: SourceLocation) throws -> [String: String] {
        if !given.isEmpty {
            for (k, v) in given where !names.contains(k) {
                throw DatasetError.invalidValue(at, problem: "the split names map '\(k)' (\(v)), which is not in the split dictionary (\(names.sorted().joined(separator: ", ")))", fix: "use its keys")
            }
            return given
        }
        let train = names.filter { $0.hasSuffix("train") }
        let test = names.filter { $0.hasSuffix("val") || $0.hasSuffix("test") }
        if train.count == 1 && test.count == 1 && names.count == 2 {
            return [train[0]: "train", test[0]: "test"]
        }
        guard names.isEmpty else {
            throw DatasetError.invalidValue(
                at, problem: "the split dictionary has \(names.sorted().joined(separator: ", ")), which is more than one protocol",
                fix: "choose one by mapping its keys to split names, e.g. \(train.first ?? "xsub_train")=train,\(test.first ?? "xsub_val")=test")
        }
        return [:]
    }
}
