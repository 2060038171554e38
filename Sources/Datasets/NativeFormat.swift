import Foundation
import PoseCore

/// The native dataset format: JSON Lines, UTF-8 (specified in docs/datasets.md).
///
/// The first non-blank line is the header; every further non-blank line is one sequence:
///
///     {"actiontrain": "poses", "version": 1, "skeleton": "vision-body-2d", "frameRate": 30,
///      "imageSize": [1920, 1080], "classes": ["squat", "other"]}
///     {"id": "clip-1", "label": "squat", "group": "subject-3", "split": "train",
///      "frames": [{"t": 0.0, "pose": {"nose": [412.5, 96.0, 0.91], "neck": [410.0, 150.2]}},
///                 {"t": 0.033, "pose": {}}]}
///
/// Points are `[x, y]` or `[x, y, confidence]` for 2D skeletons (image pixels, origin
/// top-left, y down) and `[x, y, z]` or `[x, y, z, confidence]` for 3D ones (metres).
/// Absent joints are omitted; an empty `pose` is a frame with nobody in view.
///
/// The reader is a hand-written byte-level parser: files are streamed in 4 MiB chunks (memory
/// is one chunk plus the parsed data), numbers are parsed in place without allocation and
/// joint names are matched as bytes. Every error names the file, line and column and, when
/// known, the sequence id, frame index and joint.
public enum NativeFormat {
    public static let formatName = "poses"
    public static let version = 1
    /// Values allowed for a sequence's `"split"`.
    public static let splits = ["train", "validation", "test"]

    /// Per-sequence keys the reader knows; others are kept out of the dataset with a warning.
    public static let sequenceKeys = ["id", "label", "group", "split", "events", "segments", "imageSize", "bodyHeight", "heightEstimation", "frames"]

    public struct Options: Sendable {
        /// A point whose confidence is at or below this is absent (the one confidence rule,
        /// docs/datasets.md). Default 0: Vision's "not detected".
        public var minConfidence: Float = 0
        /// What to do with sequences where several people appear (`"people"` frames); nil
        /// refuses them.
        public var people: PeoplePolicy?
        /// With `bodies=M`: the body order to apply (a model's, `BodyOrderRule(modelInput:)`);
        /// nil decides it from the file (`BodyOrder`).
        public var bodyOrder: BodyOrderRule?
        public init(minConfidence: Float = 0, people: PeoplePolicy? = nil, bodyOrder: BodyOrderRule? = nil) {
            self.minConfidence = minConfidence
            self.people = people
            self.bodyOrder = bodyOrder
        }
    }

    public static func read(_ path: String, options: Options = Options()) throws -> Dataset {
        try readReporting(path, options: options).dataset
    }

    /// The dataset, the reader's warnings (unknown per-sequence keys) and how joint names
    /// matched.
    public static func readReporting(_ path: String, options: Options = Options()) throws -> ReadReport {
        var reader = NativeReader(file: path, options: options)
        let endsWithNewline = try LineSplitter.forEachLine(ofFile: path) { line, number in
            try reader.consume(line, number)
        }
        return reader.report(try reader.finish(endsWithNewline: endsWithNewline))
    }

    /// Parses a whole file held in memory (tests, fuzzing). `file` names it in errors.
    public static func parse(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> Dataset {
        try parseReporting(bytes, file: file, options: options).dataset
    }

    public static func parseReporting(_ bytes: [UInt8], file: String, options: Options = Options()) throws -> ReadReport {
        var reader = NativeReader(file: file, options: options)
        try bytes.withUnsafeBufferPointer { b in
            try LineSplitter.forEachLine(in: b, file: file) { line, number in try reader.consume(line, number) }
        }
        return reader.report(try reader.finish(endsWithNewline: bytes.last == 0x0A))
    }

    /// Writes a dataset in the native format. Coordinates are written with the shortest
    /// representation that reads back to the same Float. The output for a given dataset is
    /// byte-stable (the shipped data/natops.jsonl is reproduced exactly by `convert`).
    public static func write(_ d: Dataset, to path: String) throws {
        var out = ""
        out.reserveCapacity(1 << 20)
        let skeletonJSON: String
        if Skeleton.builtIn(named: d.skeleton.name) == d.skeleton {
            skeletonJSON = jsonString(d.skeleton.name)
        } else {
            let enc = JSONEncoder()
            enc.outputFormatting = [.sortedKeys]
            skeletonJSON = String(decoding: try enc.encode(d.skeleton), as: UTF8.self)
        }
        out += "{\"actiontrain\": \"poses\", \"version\": 1, \"skeleton\": \(skeletonJSON)"
        if let r = d.frameRate { out += ", \"frameRate\": \(r)" }
        if let s = d.imageSize { out += ", \"imageSize\": [\(s.map { "\($0)" }.joined(separator: ", "))]" }
        out += ", \"classes\": [\(d.classes.map(jsonString).joined(separator: ", "))]}\n"
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        for s in d.sequences {
            out += "{\"id\": \(jsonString(s.id))"
            if let l = s.label { out += ", \"label\": \(jsonString(l))" }
            if let g = s.group { out += ", \"group\": \(jsonString(g))" }
            if let sp = s.split { out += ", \"split\": \(jsonString(sp))" }
            if !s.events.isEmpty { out += ", \"events\": [\(s.events.map(String.init).joined(separator: ", "))]" }
            if !s.segments.isEmpty {
                out += ", \"segments\": [" + s.segments.map { "{\"label\": \(jsonString($0.label)), \"start\": \($0.start), \"end\": \($0.end)}" }.joined(separator: ", ") + "]"
            }
            if let size = s.imageSize { out += ", \"imageSize\": [\(size.map { "\($0)" }.joined(separator: ", "))]" }
            if let h = s.bodyHeight { out += ", \"bodyHeight\": \(h)" }
            if let e = s.heightEstimation { out += ", \"heightEstimation\": \(jsonString(e))" }
            out += ", \"frames\": ["
            for f in 0..<s.frameCount {
                if f > 0 { out += ", " }
                out += "{"
                if let t = s.timestamps?[f] { out += "\"t\": \(t), " }
                out += "\"pose\": {"
                var firstJoint = true
                for j in 0..<J where s.present[f * J + j] != 0 {
                    if !firstJoint { out += ", " }
                    firstJoint = false
                    out += "\(jsonString(d.skeleton.joints[j])): ["
                    for k in 0..<D {
                        if k > 0 { out += ", " }
                        out += "\(s.coordinates[(f * J + j) * D + k])"
                    }
                    if let c = s.confidence?[f * J + j] { out += ", \(c)" }
                    out += "]"
                }
                out += "}}"
            }
            out += "]}\n"
        }
        do { try AtomicWrite.write(Array(out.utf8), to: path) } catch let e as AtomicWrite.WriteError {
            throw DatasetError.cannotRead(file: path, reason: "cannot write: \(e.reason)")
        }
    }

    static func jsonString(_ s: String) -> String { JSONText.quote(s) }
}

/// Joint names as bytes for allocation-free lookup of JSON keys. A name that is not the
/// skeleton's own is resolved once through `Skeleton.resolveJoint` (alias tables, loose
/// matching) and then remembered as bytes too, in a second table searched only when the
/// skeleton's own names miss.
final class JointTable {
    let skeleton: Skeleton
    let names: [String]
    private let bytes: UnsafeMutablePointer<UInt8>
    private let offsets: [Int]  // names[k] is bytes[offsets[k]..<offsets[k+1]]
    /// Names seen that are not the skeleton's own, as bytes, with their joints.
    private var aliases: [(name: [UInt8], joint: Int)] = []
    /// How names other than the skeleton's own matched (`JointNameMatch`), in order of first use.
    private(set) var matches: [JointNameMatch] = []

    init(_ skeleton: Skeleton) {
        self.skeleton = skeleton
        names = skeleton.joints
        var all: [UInt8] = []
        var offs = [0]
        for n in names {
            all += Array(n.utf8)
            offs.append(all.count)
        }
        bytes = .allocate(capacity: max(all.count, 1))
        bytes.initialize(from: all, count: all.count)
        offsets = offs
    }

    deinit { bytes.deallocate() }

    /// Index of the joint whose name is `p[start..<start+count]`, trying joint `hint` first.
    @inline(__always)
    func index(_ p: UnsafePointer<UInt8>, _ start: Int, _ count: Int, hint: Int) -> Int? {
        if hint < names.count && nameMatches(hint, p, start, count) { return hint }
        for k in 0..<names.count where k != hint && nameMatches(k, p, start, count) { return k }
        return alias(p, start, count)
    }

    /// Joint index of a decoded name.
    func index(of name: String) -> Int? {
        if let k = names.firstIndex(of: name) { return k }
        return alias(Array(name.utf8))
    }

    /// A name that is not the skeleton's own: looked up among the aliases seen, else resolved
    /// and remembered.
    private func alias(_ p: UnsafePointer<UInt8>, _ start: Int, _ count: Int) -> Int? {
        for a in aliases where a.name.count == count && a.name.withUnsafeBufferPointer({ memcmp($0.baseAddress!, p + start, count) == 0 }) {
            return a.joint
        }
        return alias(Array(UnsafeBufferPointer(start: p + start, count: count)))
    }

    private func alias(_ name: [UInt8]) -> Int? {
        if let a = aliases.first(where: { $0.name == name }) { return a.joint }
        guard aliases.count < 4096, let (k, how) = skeleton.resolveJoint(String(decoding: name, as: UTF8.self)) else { return nil }
        aliases.append((name, k))
        if !matches.contains(how) { matches.append(how) }
        return k
    }

    @inline(__always)
    private func nameMatches(_ k: Int, _ p: UnsafePointer<UInt8>, _ start: Int, _ count: Int) -> Bool {
        let o = offsets[k]
        return offsets[k + 1] - o == count && memcmp(bytes + o, p + start, count) == 0
    }
}

/// The dataset-level fields of a native header.
struct NativeHeader {
    var skeleton: Skeleton
    var frameRate: Double?
    var imageSize: [Double]?
    var classes: [String]?

    static func decode(_ value: JSONValue, at: SourceLocation) throws -> NativeHeader {
        func fail(_ problem: String, _ fix: String) -> DatasetError { .invalidValue(at, problem: problem, fix: fix) }
        guard let h = value.object, h["actiontrain"]?.string == NativeFormat.formatName else {
            throw fail(
                "the first line is not an actiontrain header",
                "start the file with {\"actiontrain\": \"poses\", \"version\": 1, \"skeleton\": \"<name>\"} (docs/datasets.md)")
        }
        guard let version = h["version"]?.integer, version == NativeFormat.version else {
            throw fail(
                "unsupported version \(h["version"]?.text ?? "(missing)")",
                "this reader knows version \(NativeFormat.version); set \"version\": 1 or update actiontrain")
        }
        let skeleton: Skeleton
        switch h["skeleton"] {
        case .string(let name)?:
            guard let s = Skeleton.builtIn(named: name) else {
                throw fail(
                    "unknown skeleton '\(name)'",
                    "use a built-in name (\(Skeleton.builtIn.keys.sorted().joined(separator: ", "))) or embed a schema object")
            }
            skeleton = s
        case .object?:
            skeleton = try SkeletonFile.decode(h["skeleton"]!, at: at)
        default:
            throw fail("\"skeleton\" is missing or not a name or schema object", "give a built-in name or a schema object")
        }
        var header = NativeHeader(skeleton: skeleton)
        if let r = h["frameRate"], r != .null {
            guard let v = r.number, v.isFinite, v > 0 else { throw fail("\"frameRate\" must be a positive number of frames per second", "fix or remove it") }
            header.frameRate = v
        }
        if let s = h["imageSize"], s != .null { header.imageSize = try imageSize(s, at: at) }
        if let c = h["classes"], c != .null {
            guard let list = c.array else { throw fail("\"classes\" must be a list of label strings", "fix or remove it") }
            var seen = Set<String>()
            var classes: [String] = []
            for v in list {
                guard let name = v.string else { throw fail("\"classes\" entries must be strings, found \(v.kind)", "quote the class names") }
                guard seen.insert(name).inserted else { throw fail("class '\(name)' is listed twice in \"classes\"", "list each class once") }
                classes.append(name)
            }
            header.classes = classes
        }
        return header
    }

    static func imageSize(_ v: JSONValue, at: SourceLocation) throws -> [Double] {
        guard let a = v.array, a.count == 2, let w = a[0].number, let h = a[1].number, w.isFinite, h.isFinite, w > 0, h > 0 else {
            throw DatasetError.invalidValue(at, problem: "\"imageSize\" must be [width, height] in pixels", fix: "write e.g. [1920, 1080]")
        }
        return [w, h]
    }
}

/// Streaming state of one native-format read: the header, the sequences so far, reusable
/// scratch buffers for the sequence being parsed, and the location for error messages.
struct NativeReader {
    let file: String
    let options: NativeFormat.Options
    var header: NativeHeader?
    /// Unknown per-sequence keys: the first line and the count of sequences with each.
    var unknownKeys: [String: (line: Int, count: Int)] = [:]
    var unknownKeyOrder: [String] = []
    var joints: JointTable?
    /// The people policy for this file's skeleton (`PeoplePolicy.applied`).
    var people: PeoplePolicy?
    /// With `bodies=M`: the sequences until the end of the file decides their body order.
    var stacker: BodyStacker?
    var sequences: [PoseSequence] = []
    var idLines: [String: Int] = [:]
    /// A line that ended before its JSON object did; reported as truncation if it was the
    /// file's unterminated last line, else as a syntax error.
    var endOfLineError: (line: Int, context: Context)?

    // Scratch for the current sequence, reused across lines: the frames of track "0" (a
    // frame's "pose", or the first untracked person of its "people").
    var coords: [Float] = []
    var present: [UInt8] = []
    var conf: [Float] = []
    var times: [Double] = []
    /// The other tracks of the current sequence, in order of first appearance.
    var tracks: [Track] = []
    /// Whether track "0" was given in the current sequence.
    var mainTrackUsed = false

    /// One person's frames (same layout as the scratch buffers).
    struct Track {
        var id: String
        var coords: [Float]
        var present: [UInt8]
        var conf: [Float]
    }

    /// What is being parsed, for error messages.
    struct Context {
        var id: String?
        var frame: Int?
        var joint: String?
    }
    var context = Context()

    init(file: String, options: NativeFormat.Options = .init()) {
        self.file = file
        self.options = options
    }

    func report(_ d: Dataset) -> ReadReport {
        ReadReport(dataset: d, warnings: warnings, jointNames: joints?.matches ?? [])
    }

    /// One warning per unknown per-sequence key, in order of first appearance.
    var warnings: [DatasetWarning] {
        unknownKeyOrder.map { key in
            let (line, count) = unknownKeys[key]!
            return DatasetWarning(
                SourceLocation(file: file, line: line),
                "unknown sequence key \"\(key)\" (in \(count) sequence\(count == 1 ? "" : "s")) is ignored; the keys are \(NativeFormat.sequenceKeys.joined(separator: ", "))")
        }
    }

    func location(_ line: Int, column: Int? = nil) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column, record: context.id, frame: context.frame, joint: context.joint)
    }

    mutating func consume(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        if LineSplitter.isBlank(line) { return }
        if let pending = endOfLineError {
            context = pending.context
            throw DatasetError.syntax(
                location(pending.line, column: nil),
                expected: "the rest of the JSON object on the same line (each sequence is one line of JSON Lines; do not pretty-print)")
        }
        context = Context()
        do {
            if header == nil {
                try parseHeader(line, number)
            } else {
                try parseSequence(line, number)
            }
        } catch let e as JSONSyntaxError {
            if e.offset >= line.count {
                endOfLineError = (number, context)
                return
            }
            throw DatasetError.syntax(location(number, column: e.offset + 1), expected: e.expected)
        }
    }

    mutating func finish(endsWithNewline: Bool) throws -> Dataset {
        if let pending = endOfLineError {
            context = pending.context
            if !endsWithNewline {
                throw DatasetError.truncated(location(pending.line), what: context.id == nil ? "the header" : "a sequence")
            }
            throw DatasetError.syntax(location(pending.line), expected: "the rest of the JSON object on the same line (the line ends early)")
        }
        guard let header else { throw DatasetError.empty(file: file) }
        var bodyOrder: BodyOrder?
        if var stacker {
            bodyOrder = stacker.finish(&sequences)
            self.stacker = nil
        }
        guard !sequences.isEmpty else { throw DatasetError.empty(file: file) }
        var skeleton = header.skeleton
        if case .bodies(let m) = people { skeleton = skeleton.bodies(m) }
        var d = Dataset(
            name: URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent, skeleton: skeleton,
            sequences: sequences, classes: header.classes, frameRate: header.frameRate, imageSize: header.imageSize)
        d.bodyOrder = bodyOrder
        return d
    }

    private mutating func parseHeader(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        var s = JSONScanner(line)
        let value = try s.value(depth: 0)
        s.skipSpace()
        guard s.i == s.end else { throw JSONSyntaxError(offset: s.i, expected: "the end of the line after the header object") }
        let h = try NativeHeader.decode(value, at: SourceLocation(file: file, line: number))
        header = h
        joints = JointTable(h.skeleton)
        people = try PeoplePolicy.applied(options.people, to: h.skeleton, at: SourceLocation(file: file, line: number))
        if case .bodies(let m) = people { stacker = BodyStacker(bodies: m, skeleton: h.skeleton, given: options.bodyOrder) }
    }

    private mutating func parseSequence(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        let header = header!
        let table = joints!
        let J = header.skeleton.jointCount, D = header.skeleton.dimensions
        var s = JSONScanner(line)
        coords.removeAll(keepingCapacity: true)
        present.removeAll(keepingCapacity: true)
        conf.removeAll(keepingCapacity: true)
        times.removeAll(keepingCapacity: true)
        tracks.removeAll()
        mainTrackUsed = false
        var frameCount = 0
        var anyConfidence = false
        var framesWithTime = 0
        var sawFrames = false
        var id: String?
        var label: String?
        var group: String?
        var split: String?
        var events: [Int] = []
        var segments: [LabeledSegment] = []
        var imageSize: [Double]?
        var bodyHeight: Double?
        var heightEstimation: String?

        func invalid(_ problem: String, _ fix: String) -> DatasetError {
            .invalidValue(location(number), problem: problem, fix: fix)
        }

        try s.expect(UInt8(ascii: "{"), "'{' (each line after the header is one sequence object)")
        if !s.take(UInt8(ascii: "}")) {
            repeat {
                let key = try s.rawString()
                try s.expect(UInt8(ascii: ":"), "':' after the key")
                switch keyName(s.p, key) {
                case .id:
                    s.skipSpace()
                    if s.i < s.end && s.p[s.i] == UInt8(ascii: "\"") {
                        id = try s.string()
                    } else {
                        let v = try s.number("a string (or integer) sequence id")
                        guard v.rounded() == v, abs(v) < 1e15 else { throw invalid("the id \(v) is not an integer", "quote ids that are not integers") }
                        id = String(Int(v))
                    }
                    context.id = id
                case .label: label = try optionalString(&s, "a label string or null")
                case .group:
                    s.skipSpace()
                    if s.i < s.end && s.p[s.i] != UInt8(ascii: "\"") && s.p[s.i] != UInt8(ascii: "n") {
                        let v = try s.number("a group string, integer or null")
                        guard v.rounded() == v, abs(v) < 1e15 else { throw invalid("the group \(v) is not an integer", "quote groups that are not integers") }
                        group = String(Int(v))
                    } else {
                        group = try optionalString(&s, "a group string, integer or null")
                    }
                case .split:
                    split = try optionalString(&s, "a split string (\"train\", \"validation\" or \"test\") or null")
                    if let sp = split, !NativeFormat.splits.contains(sp) {
                        throw invalid("split '\(sp)' is not one of train, validation, test", "rename it (e.g. 'val' to 'validation')")
                    }
                case .events:
                    try s.expect(UInt8(ascii: "["), "'[' starting the list of event frame indices")
                    if !s.take(UInt8(ascii: "]")) {
                        repeat {
                            let v = try s.number("an event frame index")
                            guard v.rounded() == v, v >= 0, v < 1e9 else { throw invalid("event \(v) is not a frame index", "give 0-based integer frame indices") }
                            events.append(Int(v))
                        } while s.take(UInt8(ascii: ","))
                        try s.expect(UInt8(ascii: "]"), "',' or ']' in \"events\"")
                    }
                case .segments:
                    segments = try Self.segments(try s.value(depth: 1), invalid: invalid)
                case .imageSize:
                    imageSize = try NativeHeader.imageSize(try s.value(depth: 1), at: location(number))
                case .frames:
                    guard !sawFrames else { throw JSONSyntaxError(offset: key.start, expected: "\"frames\" once per sequence") }
                    sawFrames = true
                    try s.expect(UInt8(ascii: "["), "'[' starting the list of frames")
                    if !s.take(UInt8(ascii: "]")) {
                        repeat {
                            context.frame = frameCount
                            try parseFrame(&s, table: table, J: J, D: D, anyConfidence: &anyConfidence, framesWithTime: &framesWithTime, number)
                            frameCount += 1
                        } while s.take(UInt8(ascii: ","))
                        try s.expect(UInt8(ascii: "]"), "',' or ']' between frames")
                        context.frame = nil
                    }
                case .bodyHeight:
                    let v = try s.number("\"bodyHeight\": a height in metres")
                    guard v.isFinite, v > 0, v < 10 else { throw invalid("bodyHeight \(v) is not a height in metres", "give Vision's bodyHeight (metres) or leave it out") }
                    bodyHeight = v
                case .heightEstimation:
                    let v = try optionalString(&s, "\"heightEstimation\": \"measured\" or \"reference\"")
                    guard v == nil || v == "measured" || v == "reference" else {
                        throw invalid("heightEstimation '\(v!)' is not measured or reference", "write Vision's estimation technique: measured or reference")
                    }
                    heightEstimation = v
                default:
                    let name = key.decoded ?? String(decoding: UnsafeBufferPointer(start: s.p + key.start, count: key.count), as: UTF8.self)
                    if let seen = unknownKeys[name] {
                        unknownKeys[name] = (seen.line, seen.count + 1)
                    } else {
                        unknownKeys[name] = (number, 1)
                        unknownKeyOrder.append(name)
                    }
                    try s.skipValue(depth: 1)  // unknown keys are metadata: ignored, with a warning
                }
            } while s.take(UInt8(ascii: ","))
            try s.expect(UInt8(ascii: "}"), "',' or '}' in the sequence object")
        }
        s.skipSpace()
        guard s.i == s.end else { throw JSONSyntaxError(offset: s.i, expected: "the end of the line after the sequence object") }

        guard let id else { throw invalid("the sequence has no \"id\"", "give every sequence a unique \"id\" string") }
        guard !id.allSatisfy(\.isWhitespace) else {
            throw DatasetError.invalidValue(
                SourceLocation(file: file, line: number), problem: "the sequence's id is empty", fix: "give every sequence a unique id that is not empty")
        }
        if let first = idLines.updateValue(number, forKey: id) {
            throw invalid("the id '\(id)' is also used on line \(first)", "give every sequence a unique id")
        }
        guard sawFrames else { throw invalid("the sequence has no \"frames\"", "add \"frames\": [{\"pose\": {...}}, ...]") }
        guard framesWithTime == 0 || framesWithTime == frameCount else {
            throw invalid("\"t\" is given on \(framesWithTime) of \(frameCount) frames", "give \"t\" on every frame or on none")
        }
        for e in events where e >= frameCount {
            throw invalid("event frame \(e) is outside the sequence's \(frameCount) frames", "use 0-based frame indices below \(frameCount)")
        }
        for g in segments where g.end >= frameCount {
            throw invalid(
                "segment '\(g.label)' (frames \(g.start) to \(g.end)) ends outside the sequence's \(frameCount) frames", "use 0-based frame indices below \(frameCount)")
        }
        if let label, let classes = header.classes, !classes.contains(label) {
            throw DatasetError.labelNotInClasses(location(number), label: label, classes: classes)
        }
        if let classes = header.classes, let g = segments.first(where: { !classes.contains($0.label) }) {
            throw DatasetError.labelNotInClasses(location(number), label: g.label, classes: classes)
        }
        var sequence = PoseSequence(
            id: id, label: label, group: group, split: split, jointCount: J, dimensions: D, frameCount: frameCount,
            coordinates: coords.exactCopy(), present: present.exactCopy(), confidence: anyConfidence ? conf.exactCopy() : nil,
            timestamps: framesWithTime > 0 ? times.exactCopy() : nil, events: events, imageSize: imageSize,
            bodyHeight: bodyHeight, heightEstimation: heightEstimation)
        sequence.segments = segments
        if tracks.isEmpty && people == nil {
            sequences.append(sequence)
            return
        }
        // Several people (or a policy that stacks bodies): every track as a sequence, then the policy.
        var all: [(id: String, sequence: PoseSequence)] = mainTrackUsed || tracks.isEmpty ? [("0", sequence)] : []
        for t in tracks {
            let track = PoseSequence(
                id: id, label: label, jointCount: J, dimensions: D, frameCount: frameCount, coordinates: t.coords, present: t.present,
                confidence: anyConfidence ? t.conf : nil)
            all.append((t.id, track))
        }
        let tracked = TrackedSequence(base: sequence, tracks: all)
        if stacker != nil {
            sequences.append(stacker!.add(tracked))
            return
        }
        sequences += try People.resolve(tracked, policy: people, skeleton: header.skeleton, imageSize: header.imageSize, at: location(number))
    }

    /// One `{"t": ..., "pose": {...}}` object, appended to the scratch buffers.
    private mutating func parseFrame(
        _ s: inout JSONScanner, table: JointTable, J: Int, D: Int, anyConfidence: inout Bool, framesWithTime: inout Int,
        _ number: Int
    ) throws {
        let base = coords.count
        let jbase = present.count
        coords.append(contentsOf: repeatElement(0, count: J * D))
        present.append(contentsOf: repeatElement(0, count: J))
        conf.append(contentsOf: repeatElement(0, count: J))
        for k in tracks.indices {
            tracks[k].coords.append(contentsOf: repeatElement(0, count: J * D))
            tracks[k].present.append(contentsOf: repeatElement(0, count: J))
            tracks[k].conf.append(contentsOf: repeatElement(0, count: J))
        }
        var sawPose = false
        try s.expect(UInt8(ascii: "{"), "'{' starting a frame object {\"pose\": {...}}")
        if !s.take(UInt8(ascii: "}")) {
            repeat {
                let key = try s.rawString()
                try s.expect(UInt8(ascii: ":"), "':' after the key")
                switch keyName(s.p, key) {
                case .t:
                    let t = try s.number("\"t\": a time in seconds")
                    guard t.isFinite else { throw DatasetError.nonFinite(location(number), what: "the time \"t\"") }
                    if let last = times.last, t <= last {
                        throw DatasetError.notIncreasing(location(number), what: "frame times \"t\"", previous: last, value: t)
                    }
                    times.append(t)
                    framesWithTime += 1
                case .pose:
                    guard !sawPose else { throw JSONSyntaxError(offset: key.start, expected: "one of \"pose\" or \"people\" per frame") }
                    sawPose = true
                    mainTrackUsed = true
                    try parsePose(&s, table: table, J: J, D: D, base: base, jbase: jbase, anyConfidence: &anyConfidence, number)
                case .people:
                    guard !sawPose else { throw JSONSyntaxError(offset: key.start, expected: "one of \"pose\" or \"people\" per frame") }
                    sawPose = true
                    try parsePeople(&s, table: table, J: J, D: D, base: base, jbase: jbase, anyConfidence: &anyConfidence, number)
                default:
                    try s.skipValue(depth: 3)
                }
            } while s.take(UInt8(ascii: ","))
            try s.expect(UInt8(ascii: "}"), "',' or '}' in the frame object")
        }
        guard sawPose else {
            throw DatasetError.invalidValue(
                location(number), problem: "the frame has no \"pose\"", fix: "write {\"pose\": {}} for a frame with nobody in view")
        }
    }

    /// `[{"track": "a", "pose": {...}}, ...]`: each person into its track's frame. A person
    /// without `"track"` is track `"<position in the list>"`. An integer track and the string of
    /// its digits are one track (`7` and `"7"`), as a live stream's `PersonID(parsing:)` has it.
    private mutating func parsePeople(
        _ s: inout JSONScanner, table: JointTable, J: Int, D: Int, base: Int, jbase: Int, anyConfidence: inout Bool,
        _ number: Int
    ) throws {
        try s.expect(UInt8(ascii: "["), "'[' starting the list of people [{\"track\": ..., \"pose\": {...}}, ...]")
        if s.take(UInt8(ascii: "]")) { return }
        var seen: Set<String> = []
        var position = 0
        repeat {
            try s.expect(UInt8(ascii: "{"), "'{' starting a person {\"track\": ..., \"pose\": {...}}")
            var track: String?
            var pose: (start: Int, end: Int)?
            if !s.take(UInt8(ascii: "}")) {
                repeat {
                    let key = try s.rawString()
                    try s.expect(UInt8(ascii: ":"), "':' after the key")
                    let name = key.decoded ?? String(decoding: UnsafeBufferPointer(start: s.p + key.start, count: key.count), as: UTF8.self)
                    switch name {
                    case "track", "person":  // a live stream line's spelling too
                        guard track == nil else {
                            throw JSONSyntaxError(offset: key.start, expected: "one \"track\" (or \"person\") per person")
                        }
                        s.skipSpace()
                        if s.i < s.end && s.p[s.i] == UInt8(ascii: "\"") {
                            track = try s.string()  // well-formed: the reader checks the file's UTF-8 first
                        } else {
                            let v = try s.number("a track id string or integer")
                            guard v.rounded() == v, abs(v) < 1e15 else { throw JSONSyntaxError(offset: s.i, expected: "an integer track id") }
                            track = String(Int(v))
                        }
                    case "pose":
                        s.skipSpace()
                        let start = s.i
                        try s.skipValue(depth: 4)
                        pose = (start, s.i)
                    default:
                        try s.skipValue(depth: 4)
                    }
                } while s.take(UInt8(ascii: ","))
                try s.expect(UInt8(ascii: "}"), "',' or '}' in the person object")
            }
            let id = track ?? String(position)
            position += 1
            guard seen.insert(id).inserted else {
                throw DatasetError.invalidValue(location(number), problem: "track '\(id)' appears twice in one frame", fix: "give each person in a frame its own track id")
            }
            guard let pose else {
                throw DatasetError.invalidValue(location(number), problem: "a person has no \"pose\"", fix: "write {\"track\": ..., \"pose\": {...}}")
            }
            // Parse the pose into its track's frame: track "0" is the scratch itself; another
            // track's buffers are swapped in for the parse.
            let end = s.i
            s.i = pose.start
            if id == "0" {
                mainTrackUsed = true
                try parsePose(&s, table: table, J: J, D: D, base: base, jbase: jbase, anyConfidence: &anyConfidence, number)
            } else {
                var k = tracks.firstIndex { $0.id == id }
                if k == nil {
                    guard tracks.count < 1000 else {
                        throw DatasetError.invalidValue(location(number), problem: "more than 1000 tracks in one sequence", fix: "split the sequence")
                    }
                    tracks.append(
                        Track(
                            id: id, coords: Array(repeating: 0, count: coords.count), present: Array(repeating: 0, count: present.count),
                            conf: Array(repeating: 0, count: conf.count)))
                    k = tracks.count - 1
                }
                swap(&coords, &tracks[k!].coords)
                swap(&present, &tracks[k!].present)
                swap(&conf, &tracks[k!].conf)
                defer {
                    swap(&coords, &tracks[k!].coords)
                    swap(&present, &tracks[k!].present)
                    swap(&conf, &tracks[k!].conf)
                }
                try parsePose(&s, table: table, J: J, D: D, base: base, jbase: jbase, anyConfidence: &anyConfidence, number)
            }
            s.i = end
        } while s.take(UInt8(ascii: ","))
        try s.expect(UInt8(ascii: "]"), "',' or ']' in the list of people")
    }

    /// `{"joint": [x, y(, z)(, c)], ...}` into the frame at `base` (coordinates) and `jbase`.
    private mutating func parsePose(
        _ s: inout JSONScanner, table: JointTable, J: Int, D: Int, base: Int, jbase: Int, anyConfidence: inout Bool,
        _ number: Int
    ) throws {
        try s.expect(UInt8(ascii: "{"), "'{' starting the pose object {\"joint\": [x, y], ...}")
        if s.take(UInt8(ascii: "}")) { return }
        var hint = 0
        repeat {
            let key = try s.rawString()
            let j: Int
            if let decoded = key.decoded {
                guard let k = table.index(of: decoded) else { throw unknownJoint(decoded, number) }
                j = k
            } else {
                guard let k = table.index(s.p, key.start, key.count, hint: hint) else {
                    throw unknownJoint(String(decoding: UnsafeBufferPointer(start: s.p + key.start, count: key.count), as: UTF8.self), number)
                }
                j = k
            }
            hint = j + 1
            context.joint = table.names[j]
            guard present[jbase + j] == 0 else {
                throw DatasetError.invalidValue(location(number), problem: "the joint is given twice in one frame", fix: "keep one point per joint")
            }
            try s.expect(UInt8(ascii: ":"), "':' after the joint name")
            try s.expect(UInt8(ascii: "["), "'[' starting the point [x, y, ...]")
            var values: (Float, Float, Float, Float) = (0, 0, 0, 0)
            var count = 0
            if !s.take(UInt8(ascii: "]")) {
                repeat {
                    s.skipSpace()
                    guard let (v, next) = NumberParser.parseDouble(s.p, s.i, s.end) else {
                        if s.end - s.i >= 4, "null".utf8.enumerated().allSatisfy({ s.p[s.i + $0.offset] == $0.element }) {
                            throw DatasetError.invalidValue(
                                location(number), problem: "value \(count + 1) of the point is null",
                                fix: "omit joints that were not seen (an absent joint is simply left out)")
                        }
                        if s.i < s.end, [UInt8(ascii: "N"), UInt8(ascii: "I"), UInt8(ascii: "n"), UInt8(ascii: "-")].contains(s.p[s.i]) {
                            throw DatasetError.nonFinite(location(number), what: "value \(count + 1) of the point")
                        }
                        throw JSONSyntaxError(offset: s.i, expected: "a number in the point [x, y, ...]")
                    }
                    guard v.isFinite else { throw DatasetError.nonFinite(location(number), what: "value \(count + 1) of the point") }
                    if count < D && abs(v) > Double(PoseBounds.maxCoordinate) { throw PoseBounds.outOfRange(v, at: location(number)) }
                    let f = NumberParser.float(v, s.p, s.i, next)
                    s.i = next
                    switch count {
                    case 0: values.0 = f
                    case 1: values.1 = f
                    case 2: values.2 = f
                    case 3: values.3 = f
                    default: break
                    }
                    count += 1
                } while s.take(UInt8(ascii: ","))
                try s.expect(UInt8(ascii: "]"), "',' or ']' in the point")
            }
            guard count == D || count == D + 1 else {
                let shape = D == 2 ? "[x, y] or [x, y, confidence]" : "[x, y, z] or [x, y, z, confidence]"
                throw DatasetError.invalidValue(
                    location(number), problem: "expected \(D) coordinates and an optional confidence, got \(count) values",
                    fix: "write \(shape)")
            }
            if count == D + 1 {
                anyConfidence = true
                // The one confidence rule: at or below minConfidence (default 0) is absent.
                let confidence = D == 2 ? values.2 : values.3
                if confidence <= options.minConfidence {
                    context.joint = nil
                    continue
                }
                conf[jbase + j] = confidence
            } else {
                conf[jbase + j] = 1
            }
            let c = base + j * D
            coords[c] = values.0
            coords[c + 1] = values.1
            if D == 3 { coords[c + 2] = values.2 }
            present[jbase + j] = 1
            context.joint = nil
        } while s.take(UInt8(ascii: ","))
        try s.expect(UInt8(ascii: "}"), "',' or '}' in the pose object")
    }

    private func unknownJoint(_ name: String, _ number: Int) -> DatasetError {
        let h = header!
        return .jointNotInSkeleton(location(number), joint: name, skeleton: h.skeleton.name, known: h.skeleton.joints)
    }

    private mutating func optionalString(_ s: inout JSONScanner, _ what: String) throws -> String? {
        s.skipSpace()
        if s.i + 4 <= s.end && s.p[s.i] == UInt8(ascii: "n") {
            _ = try s.value(depth: 1)
            return nil
        }
        guard s.i < s.end && s.p[s.i] == UInt8(ascii: "\"") else { throw JSONSyntaxError(offset: s.i, expected: what) }
        return try s.string()
    }

    enum Key { case id, label, group, split, events, segments, imageSize, bodyHeight, heightEstimation, frames, t, pose, people, other }

    /// `"segments": [{"label": L, "start": F, "end": F}, ...]`: 0-based frames, both included,
    /// `start ≤ end`, in order of start.
    static func segments(_ v: JSONValue, invalid: (String, String) -> DatasetError) throws -> [LabeledSegment] {
        let fix = "give \"segments\": [{\"label\": \"wave\", \"start\": 12, \"end\": 57}, ...] with 0-based frames in order"
        guard let list = v.array else { throw invalid("\"segments\" is not a list", fix) }
        var out: [LabeledSegment] = []
        for item in list {
            guard let o = item.object, let label = o["label"]?.string, let a = o["start"]?.number, let b = o["end"]?.number else {
                throw invalid("a segment is not an object with a \"label\" string and \"start\" and \"end\" frames", fix)
            }
            guard a.rounded() == a, b.rounded() == b, a >= 0, b >= a, b < 1e9 else {
                throw invalid("segment '\(label)' runs from frame \(a) to \(b)", "give 0-based integer frames with start <= end")
            }
            if let unknown = o.keys.sorted().first(where: { !["label", "start", "end"].contains($0) }) {
                throw invalid("segment '\(label)' has the key '\(unknown)'", fix)
            }
            if let last = out.last, Int(a) < last.start {
                throw invalid("segment '\(label)' (frame \(Int(a))) starts before the one before it (frame \(last.start))", "list segments in order of start")
            }
            out.append(LabeledSegment(label: label, start: Int(a), end: Int(b)))
        }
        return out
    }

    /// The key as one of the known names (no allocation).
    @inline(__always)
    private func keyName(_ p: UnsafePointer<UInt8>, _ key: (start: Int, count: Int, decoded: String?)) -> Key {
        if key.decoded != nil { return .other }
        let q = p + key.start
        switch key.count {
        case 1: return q[0] == UInt8(ascii: "t") ? .t : .other
        case 2: return memcmp(q, "id", 2) == 0 ? .id : .other
        case 4: return memcmp(q, "pose", 4) == 0 ? .pose : .other
        case 5:
            if memcmp(q, "label", 5) == 0 { return .label }
            if memcmp(q, "group", 5) == 0 { return .group }
            if memcmp(q, "split", 5) == 0 { return .split }
            return .other
        case 6:
            if memcmp(q, "frames", 6) == 0 { return .frames }
            if memcmp(q, "events", 6) == 0 { return .events }
            if memcmp(q, "people", 6) == 0 { return .people }
            return .other
        case 8: return memcmp(q, "segments", 8) == 0 ? .segments : .other
        case 9: return memcmp(q, "imageSize", 9) == 0 ? .imageSize : .other
        case 10: return memcmp(q, "bodyHeight", 10) == 0 ? .bodyHeight : .other
        case 16: return memcmp(q, "heightEstimation", 16) == 0 ? .heightEstimation : .other
        default: return .other
        }
    }
}
