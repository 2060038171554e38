import Foundation
import PoseCore

/// Pose datasets as NumPy arrays, the way Python pose pipelines save them
/// (docs/datasets.md, "NumPy"): an `.npz` archive (`numpy.savez` or `savez_compressed`) with
///
/// | array | shape, dtype | meaning |
/// |---|---|---|
/// | `X` | `[N, T, J, C]` float32/float64 | C = D coordinates (+ 1 confidence) |
/// | `y` | `[N]` ints or strings | labels; ints index `label_names` when given |
/// | `label_names` | `[K]` strings | class names (also the class order) |
/// | `groups` | `[N]` ints or strings | subject/session |
/// | `split` | `[N]` strings | `train` / `validation` / `test` |
/// | `n_train` | scalar | alternatively: rows `[0, n_train)` train, the rest validation |
/// | `lengths` | `[N]` ints | valid frames per row when sequences are padded to T |
/// | `ids` | `[N]` strings | sequence ids (default `<file>-<row>`) |
/// | `frame_rate`, `image_size`, `skeleton` | scalar, `[2]`, string | dataset metadata |
///
/// or a bare `.npy` holding `X` (labels from a second `.npy` file). A point is absent when any
/// of its coordinates is NaN or its confidence is at or below `minConfidence` (default 0),
/// as detectors write occluded joints; infinite values are errors. `X` is streamed row by
/// row, so memory stays near the size of the resulting dataset.
///
/// The Create ML layout (`[N, frames, 3, 18]`, Vision's `keypointsMultiArray()` per frame)
/// is read by `CreateMLFormat`, which shares this reader.
public enum NumpyFormat {
    public struct Options: Sendable {
        public var skeleton: Skeleton?
        /// A separate `.npy` of labels for a bare `X.npy`.
        public var labelsPath: String?
        public var minConfidence: Float = 0
        /// What to do with rows where several people appear (a 5-D `X`); nil refuses them.
        public var people: PeoplePolicy?
        /// With `bodies=M`: the body order to apply (a model's); nil decides it from the file
        /// (`BodyOrder`; the tracks are X's people axis, `"0"`, `"1"`, ...).
        public var bodyOrder: BodyOrderRule?
        /// The class order when the archive has no `label_names`: integer labels index it,
        /// string labels must be in it.
        public var classes: [String]?
        /// Renames split values, e.g. `["0": "train", "1": "test"]` for integer splits.
        public var splitNames: [String: String] = [:]
        public init(skeleton: Skeleton? = nil, labelsPath: String? = nil) {
            self.skeleton = skeleton
            self.labelsPath = labelsPath
        }
    }

    public static func read(_ path: String, options: Options = Options()) throws -> Dataset {
        let source = try NumpySource(path: path)
        return try read(source, options: options, layout: .framesJointsChannels)
    }

    /// Reads an `.npz` held in memory (tests, fuzzing).
    public static func parseArchive(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> Dataset {
        let source = NumpySource(archive: try ZipArchive(reader: FileReader(bytes: bytes, name: file)))
        return try read(source, options: options, layout: .framesJointsChannels)
    }

    /// How `X` is laid out per sequence.
    enum Layout {
        /// `[T, J, C]`: each frame's joints, each joint's channels.
        case framesJointsChannels
        /// Create ML `[T, 3, 18]`: per frame, the x row, the y row and the confidence row.
        case createML(imageSizes: (Int) -> [Double]?)
    }

    static func read(_ source: NumpySource, options: Options, layout: Layout) throws -> Dataset {
        let file = source.file
        let xName: String
        switch layout {
        case .framesJointsChannels: xName = source.first(of: ["X", "x", "data"]) ?? "X"
        case .createML: xName = source.first(of: ["poses", "X", "x"]) ?? "poses"
        }
        let xAt = source.location(xName)
        // Small arrays first.
        let meta = try source.small(except: xName)
        func array(_ names: [String]) -> (String, NPYArray)? {
            for n in names { if let a = meta[n] { return (n, a) } }
            return nil
        }
        var skeleton = options.skeleton
        if skeleton == nil, let (n, s) = array(["skeleton"]) {
            guard s.header.kind == .unicode || s.header.kind == .bytes, let name = s.strings().first else {
                throw DatasetError.numpy(source.location(n), problem: "'skeleton' must be a string", fix: "save numpy.array('coco-17')")
            }
            skeleton = try SkeletonFile.resolve(name)
        }
        if case .createML = layout { skeleton = .visionBody2D }

        // X's header decides N, T, J, C.
        var N = 0, T = 0, J = 0, C = 0, D = 0, M = 1
        var sequences: [PoseSequence] = []
        /// Per sequence: the row of X it came from, and the suffix `#<track>` of a split track.
        var origins: [(row: Int, suffix: String)] = []
        /// With `bodies=M`: the rows until the end of X decides their body order.
        var stacker: BodyStacker?
        var labels: [String?] = []
        var lengths: [Int]? = nil
        var hasConfidence = false
        var jointNames: [String] = []
        var createMLIndex: [Int] = []
        var sizes: (Int) -> [Double]? = { _ in nil }
        if case .createML(let f) = layout { sizes = f }

        // Labels.
        var classes: [String]? = options.classes
        if let (n, names) = array(["label_names", "classes", "class_names"]) {
            guard !names.header.isNumeric else {
                throw DatasetError.numpy(source.location(n), problem: "class names must be strings", fix: "save numpy.array(names, dtype=str)")
            }
            classes = names.strings()
            guard Set(classes!).count == classes!.count else {
                throw DatasetError.numpy(source.location(n), problem: "a class name is listed twice", fix: "list each class once")
            }
        }
        var yArray = array(["y", "labels", "label"])
        if yArray == nil, let lp = options.labelsPath { yArray = (lp, try NPYArray.read(lp)) }

        let stream = NPYStream(
            at: xAt,
            onHeader: { h in
                guard h.kind == .float else {
                    throw DatasetError.numpy(xAt, problem: "X has dtype '\(h.descr)'", fix: "save the poses as float32 or float64")
                }
                switch layout {
                case .framesJointsChannels:
                    guard h.shape.count == 4 || h.shape.count == 5 else {
                        throw DatasetError.numpy(
                            xAt, problem: "X has shape \(h.shape)",
                            fix: "save poses as [sequences, frames, joints, channels] (or [sequences, people, frames, joints, channels])")
                    }
                    let d = h.shape.count - 4
                    (N, T, J, C) = (h.shape[0], h.shape[1 + d], h.shape[2 + d], h.shape[3 + d])
                    M = d == 1 ? h.shape[1] : 1
                    guard M >= 1 && M <= 1000 else {
                        throw DatasetError.numpy(xAt, problem: "X has \(M) people per sequence", fix: "save between 1 and 1000 people per sequence")
                    }
                    if skeleton == nil {
                        let fits = Skeleton.builtIn.values.filter { $0.jointCount == J && (C == $0.dimensions || C == $0.dimensions + 1) }
                        guard fits.count == 1 else {
                            throw DatasetError.numpy(
                                xAt, problem: "X has \(J) joints and \(C) channels, which fits \(fits.isEmpty ? "no" : "several") built-in skeletons (\(fits.map(\.name).sorted().joined(separator: ", ")))",
                                fix: "name a skeleton (a built-in name or a schema file), or save a 'skeleton' string in the archive")
                        }
                        skeleton = fits[0]
                    }
                    D = skeleton!.dimensions
                    guard J == skeleton!.jointCount, C == D || C == D + 1 else {
                        throw DatasetError.numpy(
                            xAt, problem: "X has shape \(h.shape) but skeleton '\(skeleton!.name)' has \(skeleton!.jointCount) joints in \(D)D",
                            fix: "X must be [N, T, \(skeleton!.jointCount), \(D)] or [N, T, \(skeleton!.jointCount), \(D + 1)] (with confidence)")
                    }
                    hasConfidence = C == D + 1
                case .createML:
                    guard h.shape.count == 4, h.shape[2] == 3, h.shape[3] == 18 else {
                        throw DatasetError.numpy(xAt, problem: "poses have shape \(h.shape)", fix: "Create ML poses are [sequences, frames, 3, 18]")
                    }
                    (N, T) = (h.shape[0], h.shape[1])
                    (J, C, D) = (19, 3, 2)
                    hasConfidence = true
                    createMLIndex = CreateMLFormat.jointOrder.map { Skeleton.visionBody2D.index(of: $0)! }
                }
                jointNames = skeleton!.joints
                // Per-sequence arrays must have N rows.
                for (n, a) in meta where ["y", "labels", "label", "groups", "group", "split", "lengths", "ids", "image_sizes"].contains(n) {
                    guard a.shape.first == N else {
                        throw DatasetError.numpy(source.location(n), problem: "'\(n)' has shape \(a.shape) but X has \(N) sequences", fix: "save one entry per sequence")
                    }
                }
                if let (n, l) = array(["lengths"]) {
                    guard l.header.isNumeric, l.shape.count == 1 else { throw DatasetError.numpy(source.location(n), problem: "'lengths' must be [N] integers", fix: "fix the array") }
                    lengths = try l.doubles().enumerated().map { k, v in
                        guard v.rounded() == v, v >= 0, v <= Double(T) else {
                            throw DatasetError.numpy(SourceLocation(file: file, record: "\(n)[\(k)]", recordKind: "entry"), problem: "length \(v) is not a frame count in 0...\(T)", fix: "fix 'lengths'")
                        }
                        return Int(v)
                    }
                }
                labels = try decodeLabels(yArray, classes: classes, count: N, source: source)
                sequences.reserveCapacity(N)
                guard N > 0 else { throw DatasetError.empty(file: file) }
                guard T > 0 && J > 0 else { throw DatasetError.numpy(xAt, problem: "X has shape \(h.shape), with no frames or joints", fix: "save non-empty sequences") }
                return M * layoutRowElements(layout, T: T, J: J, C: C) * h.itemSize
            },
            onRow: { n, raw, h in
                guard let rawBase = raw.baseAddress else { return }
                let frames = lengths?[n] ?? T
                let id = "\(URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent)-\(n)"
                var size: [Double]? = nil
                if case .createML = layout {
                    size = sizes(n)
                    guard size != nil else {
                        throw DatasetError.numpy(
                            SourceLocation(file: file, record: id), problem: "no image size for this sequence",
                            fix: "save 'image_size' [width, height] (or 'image_sizes' [N, 2]) so normalised points become pixels")
                    }
                }
                // One body ([T, J, C]) at a time: several in a 5-D X ([N, M, T, J, C]).
                var bodies: [PoseSequence] = []
                for m in 0..<M {
                    let base = rawBase + m * T * layoutRowElements(layout, T: 1, J: J, C: C) * h.itemSize
                    var coords = [Float](repeating: 0, count: frames * J * D)
                    var present = [UInt8](repeating: 0, count: frames * J)
                    var conf: [Float]? = hasConfidence ? [Float](repeating: 0, count: frames * J) : nil
                    var fast = false
                    if case .framesJointsChannels = layout, h.kind == .float, h.itemSize == 4, !h.bigEndian { fast = true }
                    if fast {
                        // float32 little-endian [T, J, C]: straight loads, no per-element dispatch.
                        let minConfidence = options.minConfidence
                        for i in 0..<(frames * J) {
                            let e = i * C * 4
                            let x = base.loadUnaligned(fromByteOffset: e, as: Float.self)
                            let y = base.loadUnaligned(fromByteOffset: e + 4, as: Float.self)
                            let z: Float = D == 3 ? base.loadUnaligned(fromByteOffset: e + 8, as: Float.self) : 0
                            let c: Float = hasConfidence ? base.loadUnaligned(fromByteOffset: e + D * 4, as: Float.self) : 1
                            if x.isNaN || y.isNaN || z.isNaN || c.isNaN { continue }
                            guard x.isFinite && y.isFinite && z.isFinite && c.isFinite else {
                                throw DatasetError.nonFinite(
                                    SourceLocation(file: file, record: id, frame: i / J, joint: jointNames[i % J]), what: "a coordinate or confidence")
                            }
                            guard max(abs(x), abs(y), abs(z)) <= PoseBounds.maxCoordinate else {
                                throw PoseBounds.outOfRange(
                                    Double(max(abs(x), abs(y), abs(z))), at: SourceLocation(file: file, record: id, frame: i / J, joint: jointNames[i % J]))
                            }
                            if hasConfidence && c <= minConfidence { continue }
                            coords[i * D] = x
                            coords[i * D + 1] = y
                            if D == 3 { coords[i * D + 2] = z }
                            present[i] = 1
                            conf?[i] = c
                        }
                    }
                    for t in 0..<(fast ? 0 : frames) {
                        for j in 0..<(layoutJoints(layout, J: J)) {
                            var v: (Float, Float, Float, Float) = (0, 0, 0, 0)
                            let target: Int
                            switch layout {
                            case .framesJointsChannels:
                                let e = (t * J + j) * C
                                v.0 = h.float(base, e)
                                v.1 = h.float(base, e + 1)
                                if C > 2 { v.2 = h.float(base, e + 2) }
                                if C > 3 { v.3 = h.float(base, e + 3) }
                                target = j
                            case .createML:
                                let e = t * 54
                                let xn = h.float(base, e + j), yn = h.float(base, e + 18 + j)
                                v.2 = h.float(base, e + 36 + j)
                                v.0 = xn * Float(size![0])
                                v.1 = (1 - yn) * Float(size![1])
                                target = createMLIndex[j]
                            }
                            let coordsNaN = v.0.isNaN || v.1.isNaN || (D == 3 && v.2.isNaN)
                            let c: Float = hasConfidence ? (D == 2 ? v.2 : v.3) : 1
                            if coordsNaN || c.isNaN { continue }
                            guard v.0.isFinite && v.1.isFinite && (D == 2 || v.2.isFinite) && c.isFinite else {
                                throw DatasetError.nonFinite(
                                    SourceLocation(file: file, record: id, frame: t, joint: jointNames[target]), what: "a coordinate or confidence")
                            }
                            let largest = max(abs(v.0), abs(v.1), D == 3 ? abs(v.2) : 0)
                            guard largest <= PoseBounds.maxCoordinate else {
                                throw PoseBounds.outOfRange(Double(largest), at: SourceLocation(file: file, record: id, frame: t, joint: jointNames[target]))
                            }
                            if hasConfidence && c <= options.minConfidence { continue }
                            let o = (t * J + target) * D
                            coords[o] = v.0
                            coords[o + 1] = v.1
                            if D == 3 { coords[o + 2] = v.2 }
                            present[t * J + target] = 1
                            conf?[t * J + target] = c
                        }
                    }
                    if M > 1 {
                        // A frame whose coordinates are all exactly 0 is an absent body (zero padding).
                        for t in 0..<frames where (0..<(J * D)).allSatisfy({ coords[t * J * D + $0] == 0 }) {
                            for j in 0..<J { present[t * J + j] = 0 }
                        }
                    }
                    bodies.append(
                        PoseSequence(
                            id: id, label: labels.isEmpty ? nil : labels[n], jointCount: J, dimensions: D, frameCount: frames,
                            coordinates: coords, present: present, confidence: conf, imageSize: size))
                }
                let produced: [PoseSequence]
                if M == 1 && options.people == nil {
                    produced = [bodies[0]]
                } else if case .bodies(let m) = options.people {
                    if stacker == nil { stacker = BodyStacker(bodies: m, skeleton: skeleton!, given: options.bodyOrder) }
                    sequences.append(stacker!.add(TrackedSequence(base: bodies[0], tracks: bodies.enumerated().map { (String($0.offset), $0.element) })))
                    origins.append((n, ""))
                    return
                } else {
                    produced = try People.resolve(
                        TrackedSequence(base: bodies[0], tracks: bodies.enumerated().map { (String($0.offset), $0.element) }),
                        policy: options.people, skeleton: skeleton!, imageSize: nil, at: SourceLocation(file: file, record: id))
                }
                for s in produced { origins.append((n, String(s.id.dropFirst(id.count)))) }
                sequences += produced
            })
        try source.stream(xName, into: stream)
        try stream.finish()
        var bodyOrder: BodyOrder?
        if var st = stacker { bodyOrder = st.finish(&sequences) }
        guard !sequences.isEmpty else { throw DatasetError.empty(file: file) }

        // Per-sequence metadata, by the row each sequence came from (a split track keeps its
        // row's id with its "#<track>" suffix, and the row's group, else the row's id).
        if let (n, ids) = array(["ids", "id"]) {
            let list = ids.header.isNumeric ? ids.doubles().map(NumpyFormat.integerText) : ids.strings()
            guard Set(list).count == list.count else {
                throw DatasetError.numpy(source.location(n), problem: "sequence ids repeat", fix: "give every sequence a unique id")
            }
            for k in sequences.indices {
                sequences[k].id = list[origins[k].row] + origins[k].suffix
                if !origins[k].suffix.isEmpty { sequences[k].group = list[origins[k].row] }
            }
        }
        if let (_, g) = array(["groups", "group", "subjects"]) {
            let list = g.header.isNumeric ? g.doubles().map(NumpyFormat.integerText) : g.strings()
            for k in sequences.indices { sequences[k].group = list[origins[k].row] }
        }
        if let (n, s) = array(["split", "splits"]) {
            let raw = s.header.isNumeric ? s.doubles().map(NumpyFormat.integerText) : s.strings()
            if s.header.isNumeric && options.splitNames.isEmpty {
                let values = Array(Set(raw)).sorted()
                let example = values.count == 2 ? "np.where(\(n) == \(values[0]), 'train', 'test')" : "np.array(['train', 'test', ...])[\(n)]"
                throw DatasetError.numpy(
                    source.location(n), problem: "'\(n)' holds integers (\(values.joined(separator: ", "))), not split names",
                    fix: "give split names for the values, e.g. \(values.prefix(3).enumerated().map { "\($1)=\(["train", "test", "validation"][$0])" }.joined(separator: ",")) (your meaning of each value), or re-save it as strings: \(n)=\(example)")
            }
            for (k, value) in raw.enumerated() {
                let v = options.splitNames[value] ?? value
                guard NativeFormat.splits.contains(v) else {
                    throw DatasetError.numpy(
                        SourceLocation(file: file, record: "\(n)[\(k)]", recordKind: "entry"), problem: "split '\(value)' is not train, validation or test",
                        fix: options.splitNames.isEmpty ? "rename it, or give split names (\(value)=train, ...)" : "add it to the split names (\(value)=train, validation or test)")
                }
                for i in sequences.indices where origins[i].row == k { sequences[i].split = v }
            }
        } else if let (n, nt) = array(["n_train"]) {
            guard let v = nt.doubles().first, v >= 0, v <= Double(N), v.rounded() == v else {
                throw DatasetError.numpy(source.location(n), problem: "'n_train' must be an integer in 0...\(N)", fix: "fix it")
            }
            for k in sequences.indices { sequences[k].split = origins[k].row < Int(v) ? "train" : "validation" }
        }
        var frameRate: Double? = nil
        if let (n, r) = array(["frame_rate", "fps"]) {
            guard r.header.isNumeric, let v = r.doubles().first, v > 0, v.isFinite else {
                throw DatasetError.numpy(source.location(n), problem: "'\(n)' must be a positive number", fix: "fix it")
            }
            frameRate = v
        }
        var imageSize: [Double]? = nil
        if case .framesJointsChannels = layout, let (n, s) = array(["image_size"]) {
            let v = s.doubles()
            guard s.header.isNumeric, v.count == 2, v.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw DatasetError.numpy(source.location(n), problem: "'image_size' must be [width, height]", fix: "fix it")
            }
            imageSize = v
        }
        if case .bodies(let m) = options.people { skeleton = skeleton!.bodies(m) }
        // The class order: label_names or the declared classes, else (string labels) first
        // appearance, else (integer labels without names) numeric order.
        if classes == nil {
            classes = Dataset.classesInOrderOfAppearance(sequences)
            if let y = yArray?.1, y.header.isNumeric {
                classes = classes!.sorted { Double($0) ?? .infinity < Double($1) ?? .infinity }
            }
        }
        var d = Dataset(
            name: URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent, skeleton: skeleton!, sequences: sequences,
            classes: classes, frameRate: frameRate, imageSize: imageSize)
        d.bodyOrder = bodyOrder
        return d
    }

    /// An integral value as "12", anything else (fractions, NaN, huge) as Swift prints it.
    static func integerText(_ v: Double) -> String {
        v.rounded() == v && abs(v) < 9e15 ? String(Int(v)) : String(v)
    }

    static func layoutRowElements(_ layout: Layout, T: Int, J: Int, C: Int) -> Int {
        switch layout {
        case .framesJointsChannels: return T * J * C
        case .createML: return T * 54
        }
    }

    static func layoutJoints(_ layout: Layout, J: Int) -> Int {
        switch layout {
        case .framesJointsChannels: return J
        case .createML: return 18
        }
    }

    /// Labels from `y`: strings as given; integers mapped through `classes` when given.
    static func decodeLabels(_ y: (String, NPYArray)?, classes: [String]?, count: Int, source: NumpySource) throws -> [String?] {
        guard let (name, y) = y else { return [] }
        let at = name.hasSuffix(".npy") ? SourceLocation(file: name) : source.location(name)
        guard y.shape.count == 1, y.shape[0] == count else {
            throw DatasetError.numpy(at, problem: "labels have shape \(y.shape), X has \(count) sequences", fix: "save one label per sequence, shape [N]")
        }
        if !y.header.isNumeric {
            let list = y.strings()
            if let classes {
                for (k, l) in list.enumerated() where !classes.contains(l) {
                    throw DatasetError.labelNotInClasses(SourceLocation(file: at.file, record: "\(name)[\(k)]", recordKind: "entry"), label: l, classes: classes)
                }
            }
            return list
        }
        guard y.header.kind != .float || y.doubles().allSatisfy({ $0.rounded() == $0 }) else {
            throw DatasetError.numpy(at, problem: "labels are fractional numbers", fix: "save integer class indices or strings")
        }
        return try y.doubles().enumerated().map { k, v in
            guard let classes else { return integerText(v) }
            guard v >= 0, v < Double(classes.count) else {
                throw DatasetError.labelNotInClasses(
                    SourceLocation(file: at.file, record: "\(name)[\(k)]", recordKind: "entry"), label: integerText(v), classes: classes)
            }
            return classes[Int(v)]
        }
    }
}

/// Arrays from an `.npz` archive or a bare `.npy` file.
struct NumpySource {
    let file: String
    let archive: ZipArchive?
    let single: FileReader?

    init(path: String) throws {
        file = path
        let r = try FileReader(path: path)
        let magic = try r.read(at: 0, count: min(r.size, 6))
        if magic.starts(with: [0x93] + Array("NUMPY".utf8)) {
            single = r
            archive = nil
        } else if magic.starts(with: [0x50, 0x4B]) {
            archive = try ZipArchive(reader: r)
            single = nil
        } else if r.size == 0 {
            throw DatasetError.empty(file: path)
        } else {
            throw DatasetError.numpy(SourceLocation(file: path), problem: "neither a .npz (zip) nor a .npy file", fix: "save with numpy.savez or numpy.save")
        }
    }

    init(archive: ZipArchive) {
        file = archive.file
        self.archive = archive
        single = nil
    }

    func location(_ name: String) -> SourceLocation {
        archive == nil ? SourceLocation(file: file) : SourceLocation(file: file, record: name + ".npy", recordKind: "entry")
    }

    func first(of names: [String]) -> String? {
        guard let archive else { return nil }
        return names.first { n in archive.entry(named: n + ".npy") != nil }
    }

    /// Every array except `skip`, fully decoded (they are small).
    func small(except skip: String) throws -> [String: NPYArray] {
        guard let archive else { return [:] }
        var out: [String: NPYArray] = [:]
        for e in archive.entries where e.name.hasSuffix(".npy") && e.name != skip + ".npy" {
            let name = String(e.name.dropLast(4))
            var bytes: [UInt8] = []
            guard e.size < 1 << 30 else {
                throw DatasetError.numpy(location(name), problem: "the array is larger than 1 GiB", fix: "only X may be large")
            }
            try archive.read(e) { bytes.append(contentsOf: $0) }
            let at = location(name)
            let h = try NPYHeader.parse(Array(bytes.prefix(NPYHeader.needed(Array(bytes.prefix(12))))), at: at)
            guard bytes.count - h.dataOffset >= h.byteCount else { throw DatasetError.truncated(at, what: "the array data") }
            out[name] = NPYArray(header: h, data: Array(bytes[h.dataOffset..<(h.dataOffset + h.byteCount)]))
        }
        return out
    }

    /// Streams array `name` (the whole file for a bare `.npy`) into `stream`.
    func stream(_ name: String, into stream: NPYStream) throws {
        if let single {
            try single.stream(at: 0, count: single.size) { try stream.feed($0) }
            return
        }
        guard let entry = archive!.entry(named: name + ".npy") else {
            if archive!.entry(named: "poses.npy") != nil {
                throw DatasetError.numpy(
                    SourceLocation(file: file), problem: "this is a Create ML keypoints archive ('poses' [N, frames, 3, 18]), not an X array",
                    fix: "convert it first with actiontrain import createml")
            }
            throw DatasetError.numpy(
                SourceLocation(file: file), problem: "the archive has no '\(name)' array (\(archive!.entries.isEmpty ? "it is empty" : "it has \(archive!.entries.map(\.name).joined(separator: ", "))"))",
                fix: "save the poses as X=... (or poses=... for Create ML)")
        }
        try archive!.read(entry) { try stream.feed($0) }
    }
}
