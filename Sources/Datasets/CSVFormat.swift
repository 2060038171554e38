import Foundation
import PoseCore

/// How the columns of a pose CSV map onto sequences and joints: by header convention or by a
/// small JSON mapping file (docs/datasets.md, "CSV").
///
/// Header convention (names compared without case, `_` and `-`): the sequence id column is
/// `sequence`, `sequence_id`, `seq_id`, `id`, `clip` or `video`; `label` (or `action`,
/// `class`); optional `group` (or `subject`, `session`, `person`), `split`, `frame` (a frame
/// number that must increase) and `t` (or `time`, `timestamp`, seconds). Joint columns are
/// `<joint>_x`, `<joint>_y`, `<joint>_z` (3D) and `<joint>_c` (or `_conf`, `_confidence`,
/// `_score`, `_visibility`), where `<joint>` is a skeleton joint name in any case, with or
/// without `_` (`leftShoulder_x` and `left_shoulder_x` both work), or an alias of one
/// (`Skeleton.resolveJoint`: Vision's raw keys, OpenPose's and the Kinect SDK's names). Other
/// columns are ignored.
public struct CSVMapping: Sendable, Equatable {
    public var skeleton: Skeleton?
    public var idColumn: String?
    public var labelColumn: String?
    public var groupColumn: String?
    public var splitColumn: String?
    /// The column of person (track) ids when a frame holds several people: rows of one frame
    /// share the frame number (or time).
    public var trackColumn: String?
    /// What to do with sequences where several tracks appear (nil refuses them).
    public var people: PeoplePolicy?
    /// With `bodies=M`: the body order to apply (a model's); nil decides it from the file
    /// (`BodyOrder`). Not a mapping file field.
    public var bodyOrder: BodyOrderRule?
    /// Every row belongs to one sequence with this id (one file per clip); no id column.
    public var fileSequenceId: String?
    public var frameColumn: String?
    public var timeColumn: String?
    /// Joint name to its column names: `[x, y]`, `[x, y, c]` (2D) or `[x, y, z]`, `[x, y, z, c]`
    /// (3D). Empty = by header convention.
    public var joints: [String: [String]] = [:]
    public var classes: [String]?
    public var frameRate: Double?
    public var imageSize: [Double]?
    /// A point whose confidence is at or below this is absent (Pose contract). Default 0.
    public var minConfidence: Float = 0
    /// Keep low-confidence points present (with their confidence) instead of absent.
    public var keepLowConfidence = false

    public init() {}

    static let fields: Set<String> = [
        "skeleton", "columns", "joints", "classes", "frameRate", "imageSize", "minConfidence", "keepLowConfidence",
    ]
    static let columnRoles: Set<String> = ["id", "label", "group", "split", "frame", "time", "track"]

    /// Reads a JSON mapping file:
    ///
    ///     {"skeleton": "penn-action-13",
    ///      "columns": {"id": "seq_id", "label": "action", "frame": "frame"},
    ///      "joints": {"head": ["x1", "y1", "v1"], "leftShoulder": ["x2", "y2", "v2"]},
    ///      "classes": ["squat", "pushup"], "frameRate": 30, "imageSize": [480, 270]}
    public static func load(_ path: String) throws -> CSVMapping {
        let value = try JSONValue.parse(file: path)
        let at = SourceLocation(file: path)
        func fail(_ problem: String, _ fix: String) -> DatasetError { .invalidValue(at, problem: problem, fix: fix) }
        guard let obj = value.object else { throw fail("a mapping file must be a JSON object", "see docs/datasets.md, CSV") }
        for key in obj.keys.sorted() where !fields.contains(key) {
            throw fail("unknown field \"\(key)\"", "the fields are \(fields.sorted().joined(separator: ", "))")
        }
        var m = CSVMapping()
        if let s = obj["skeleton"] {
            if let name = s.string { m.skeleton = try SkeletonFile.resolve(name) } else { m.skeleton = try SkeletonFile.decode(s, at: at) }
        }
        if let c = obj["columns"] {
            guard let cols = c.object else { throw fail("\"columns\" must be an object {role: column}", "e.g. {\"id\": \"seq_id\"}") }
            for (role, v) in cols {
                guard columnRoles.contains(role) else {
                    throw fail("unknown column role \"\(role)\"", "roles are \(columnRoles.sorted().joined(separator: ", "))")
                }
                guard let name = v.string else { throw fail("column for \"\(role)\" must be a header name string", "quote it") }
                switch role {
                case "id": m.idColumn = name
                case "label": m.labelColumn = name
                case "group": m.groupColumn = name
                case "split": m.splitColumn = name
                case "frame": m.frameColumn = name
                case "track": m.trackColumn = name
                default: m.timeColumn = name
                }
            }
        }
        if let j = obj["joints"] {
            guard let joints = j.object else { throw fail("\"joints\" must be an object {joint: [x, y, ...]}", "see docs/datasets.md") }
            for (name, v) in joints {
                guard let cols = v.array?.compactMap(\.string), cols.count == v.array?.count, cols.count >= 2 else {
                    throw fail("joint '\(name)' must map to a list of column names [x, y(, z)(, c)]", "fix the mapping")
                }
                m.joints[name] = cols
            }
        }
        if let c = obj["classes"] {
            guard let list = c.array?.compactMap(\.string), list.count == c.array?.count else {
                throw fail("\"classes\" must be a list of strings", "fix the mapping")
            }
            m.classes = list
        }
        if let r = obj["frameRate"] {
            guard let v = r.number, v > 0, v.isFinite else { throw fail("\"frameRate\" must be a positive number", "fix the mapping") }
            m.frameRate = v
        }
        if let s = obj["imageSize"] { m.imageSize = try NativeHeader.imageSize(s, at: at) }
        if let c = obj["minConfidence"] {
            guard let v = c.number, v.isFinite else { throw fail("\"minConfidence\" must be a number", "fix the mapping") }
            m.minConfidence = Float(v)
        }
        if let k = obj["keepLowConfidence"] {
            guard case .bool(let b) = k else { throw fail("\"keepLowConfidence\" must be true or false", "fix the mapping") }
            m.keepLowConfidence = b
        }
        return m
    }
}

/// Pose CSV: one row per frame, rows of a sequence contiguous and in time order.
/// Empty or `NaN` cells mark a joint absent in that frame; a confidence at or below the
/// mapping's `minConfidence` (default 0) does too. Infinite values are errors.
public enum CSVFormat {
    public static func read(_ path: String, mapping: CSVMapping = CSVMapping()) throws -> Dataset {
        try readReporting(path, mapping: mapping).dataset
    }

    /// The dataset and how the header's joint names matched the skeleton.
    public static func readReporting(_ path: String, mapping: CSVMapping = CSVMapping()) throws -> ReadReport {
        var reader = CSVReader(file: path, mapping: mapping)
        try LineSplitter.forEachLine(ofFile: path) { line, number in try reader.consume(line, number) }
        return ReadReport(dataset: try reader.finish(), jointNames: reader.jointNames)
    }

    public static func parse(_ bytes: [UInt8], file: String, mapping: CSVMapping = CSVMapping()) throws -> Dataset {
        var reader = CSVReader(file: file, mapping: mapping)
        try bytes.withUnsafeBufferPointer { b in
            try LineSplitter.forEachLine(in: b, file: file) { line, number in try reader.consume(line, number) }
        }
        return try reader.finish()
    }

    /// Joint-name key for header matching: lower case without `_`, `-` and spaces.
    static func normalised(_ s: String) -> String {
        String(s.lowercased().filter { $0 != "_" && $0 != "-" && $0 != " " })
    }

    static let idNames = ["sequence", "sequenceid", "seqid", "id", "clip", "video"]
    static let labelNames = ["label", "action", "class"]
    static let groupNames = ["group", "subject", "session", "person"]
    static let splitNames = ["split"]
    static let frameNames = ["frame", "frameindex", "framenumber"]
    static let timeNames = ["t", "time", "timestamp"]
    static let trackNames = ["track", "trackid", "personid", "body", "bodyid", "instance", "instanceid"]
    /// Suffix (normalised, with the separator) to coordinate index; 3 = confidence.
    static let suffixes: [(String, Int)] = [
        ("_x", 0), ("_y", 1), ("_z", 2), ("_c", 3), ("_conf", 3), ("_confidence", 3), ("_score", 3), ("_visibility", 3),
    ]

    /// The dimension a mapping's `joints` give when it names no skeleton: 2 for `[x, y]`, 3 for
    /// `[x, y, z, confidence]`; `[a, b, c]` is `x, y, z` or `x, y, confidence`, told by the
    /// third columns' names (ending in z, or in c, conf, confidence, score, visibility, vis or v,
    /// digits aside), else by the built-in skeletons the joint names fit, else refused.
    static func mappingDimensions(_ joints: [String: [String]], at: SourceLocation) throws -> Int {
        let counts = Set(joints.values.map(\.count))
        if counts.contains(4) { return 3 }
        guard counts.contains(3) else { return 2 }
        let thirds = joints.values.filter { $0.count == 3 }.map { cols -> Int? in
            var name = Substring(normalised(cols[2]))
            while name.last?.isNumber == true { name = name.dropLast() }
            if name.hasSuffix("z") { return 3 }
            return ["c", "conf", "confidence", "score", "visibility", "vis", "v"].contains(where: name.hasSuffix) ? 2 : nil
        }
        if let first = thirds.first, let d = first, thirds.allSatisfy({ $0 == d }) { return d }
        let fits = Set(Skeleton.builtIn.values.filter { s in joints.keys.allSatisfy { s.resolveJoint($0) != nil } }.map(\.dimensions))
        if fits.count == 1 { return fits.first! }
        throw DatasetError.invalidValue(
            at, problem: "the mapping gives joints three columns, which are x, y, z or x, y, confidence, and their names do not tell which",
            fix: "name the skeleton in the mapping (\"skeleton\": a built-in name or a schema), or end the third columns' names in z or c")
    }
}

/// Streaming CSV state: the column roles from the header, then one sequence at a time.
struct CSVReader {
    enum Role {
        case ignore, id, label, group, split, frame, time, track
        case coordinate(joint: Int, axis: Int)
        case confidence(joint: Int)
    }

    let file: String
    var mapping: CSVMapping
    var roles: [Role] = []
    var headerNames: [String] = []
    var delimiter: UInt8 = UInt8(ascii: ",")
    var skeleton: Skeleton!
    var hasConfidence = false
    /// How header joint names other than the skeleton's own matched.
    var jointNames: [JointNameMatch] = []
    var sequences: [PoseSequence] = []
    /// With `bodies=M`: the sequences until the end of the file decides their body order.
    var stacker: BodyStacker?
    var seenIds: [String: Int] = [:]
    var headerDone = false
    /// Stop (throwing `LimitReached`) when a row of sequence `limit + 1` arrives.
    var limit: Int?
    struct LimitReached: Error {}

    // Current sequence.
    var currentId: [UInt8]?
    var currentIdString = ""
    var currentLabel: String?
    var currentGroup: String?
    var currentSplit: String?
    var firstLine = 0
    var coords: [Float] = []
    var present: [UInt8] = []
    var conf: [Float] = []
    var times: [Double] = []
    var lastFrameNumber: Double?
    /// Rows of the current sequence (its frames when there is no track column).
    var frames = 0
    // With a track column: the current row's track and frame key, and each track's rows.
    var trackColumn: Int?
    var rowTrack = ""
    var rowKey = 0.0
    var rowTime: Double?
    /// Rows are matched into frames by time (no frame column) or by frame number.
    var keyIsTime = false
    var trackRows: [TrackRows] = []

    /// One track's rows: per row the frame key (frame number, else time), the time, the joints.
    struct TrackRows {
        var id: String
        var keys: [Double] = []
        var times: [Double] = []
        var coords: [Float] = []
        var present: [UInt8] = []
        var conf: [Float] = []
    }
    // Per-row scratch.
    var idColumn = 0
    var scratch: CSVRowScratch!

    init(file: String, mapping: CSVMapping) {
        self.file = file
        self.mapping = mapping
    }

    func location(_ line: Int, column: Int? = nil, frame: Int? = nil, joint: String? = nil) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column, record: currentId == nil ? nil : currentIdString, frame: frame, joint: joint)
    }

    mutating func consume(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        if LineSplitter.isBlank(line) { return }
        if !headerDone {
            try parseHeader(line, number)
            headerDone = true
            return
        }
        try parseRow(line, number)
    }

    mutating func finish() throws -> Dataset {
        guard headerDone else { throw DatasetError.empty(file: file) }
        try closeSequence()
        var bodyOrder: BodyOrder?
        if var stacker {
            bodyOrder = stacker.finish(&sequences)
            self.stacker = nil
        }
        guard !sequences.isEmpty else { throw DatasetError.empty(file: file) }
        var skeleton = self.skeleton!
        if case .bodies(let m) = mapping.people { skeleton = skeleton.bodies(m) }
        var d = Dataset(
            name: URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent, skeleton: skeleton,
            sequences: sequences, classes: mapping.classes ?? Dataset.classesInOrderOfAppearance(sequences), frameRate: mapping.frameRate,
            imageSize: mapping.imageSize)
        d.bodyOrder = bodyOrder
        return d
    }

    // MARK: header

    private mutating func parseHeader(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        // The delimiter is the most frequent of , ; and tab in the header.
        var counts: [UInt8: Int] = [UInt8(ascii: ","): 0, UInt8(ascii: ";"): 0, 9: 0]
        for b in line where counts[b] != nil { counts[b]! += 1 }
        delimiter = counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }!.key
        var names: [String] = []
        try forEachField(line, number) { p, start, end, _ in
            names.append(unquoted(p, start, end).trimmingCharacters(in: .whitespaces))
        }
        headerNames = names
        let at = SourceLocation(file: file, line: number)
        func columnIndex(_ name: String, role: String) throws -> Int {
            guard let k = names.firstIndex(of: name) else {
                throw DatasetError.invalidValue(
                    at, problem: "the mapping's \(role) column '\(name)' is not in the header",
                    fix: "the header has \(names.joined(separator: ", "))")
            }
            return k
        }
        roles = Array(repeating: .ignore, count: names.count)
        let normalisedNames = names.map(CSVFormat.normalised)
        // Sequence-level columns: the mapping's, else the first conventional name found.
        let conventions: [(WritableKeyPath<CSVMapping, String?>, [String], Role, String)] = [
            (\.idColumn, CSVFormat.idNames, .id, "id"), (\.labelColumn, CSVFormat.labelNames, .label, "label"),
            (\.groupColumn, CSVFormat.groupNames, .group, "group"), (\.splitColumn, CSVFormat.splitNames, .split, "split"),
            (\.frameColumn, CSVFormat.frameNames, .frame, "frame"), (\.timeColumn, CSVFormat.timeNames, .time, "time"),
            (\.trackColumn, CSVFormat.trackNames, .track, "track"),
        ]
        for (path, conventional, role, roleName) in conventions {
            if let given = mapping[keyPath: path] {
                roles[try columnIndex(given, role: roleName)] = role
            } else if let k = conventional.lazy.compactMap({ normalisedNames.firstIndex(of: $0) }).first {
                if case .ignore = roles[k] { roles[k] = role }
            }
        }
        guard mapping.fileSequenceId != nil || roles.contains(where: { if case .id = $0 { return true } else { return false } }) else {
            throw DatasetError.invalidValue(
                at, problem: "no sequence id column (header: \(names.joined(separator: ", ")))",
                fix: "name one column 'sequence' (or seq_id, id, clip, video), or give a mapping file with \"columns\": {\"id\": ...}")
        }
        // Joint columns.
        var jointColumns: [(name: String, axis: Int, column: Int)] = []
        if mapping.joints.isEmpty {
            for (k, name) in names.enumerated() {
                if case .ignore = roles[k] {} else { continue }
                let lower = name.lowercased()
                guard let (suffix, axis) = CSVFormat.suffixes.first(where: { lower.hasSuffix($0.0) && lower.count > $0.0.count }) else { continue }
                jointColumns.append((String(name.dropLast(suffix.count)), axis, k))
            }
        } else {
            let dims = try mapping.skeleton?.dimensions ?? CSVFormat.mappingDimensions(mapping.joints, at: at)
            for (joint, cols) in mapping.joints.sorted(by: { $0.key < $1.key }) {
                guard cols.count == dims || cols.count == dims + 1 else {
                    throw DatasetError.invalidValue(
                        at, problem: "joint '\(joint)' maps to \(cols.count) columns",
                        fix: "give \(dims) coordinate columns and an optional confidence column")
                }
                for (axis, c) in cols.enumerated() {
                    jointColumns.append((joint, axis == dims ? 3 : axis, try columnIndex(c, role: "joint '\(joint)'")))
                }
            }
        }
        guard !jointColumns.isEmpty else {
            throw DatasetError.invalidValue(
                at, problem: "no joint columns found",
                fix: "name coordinate columns <joint>_x, <joint>_y (e.g. leftWrist_x), or give a mapping file with \"joints\"")
        }
        let skeleton = try mapping.skeleton ?? inferSkeleton(jointColumns.map(\.name), uses3D: jointColumns.contains { $0.axis == 2 }, at: at)
        self.skeleton = skeleton
        mapping.people = try PeoplePolicy.applied(mapping.people, to: skeleton, at: at)
        if case .bodies(let m) = mapping.people { stacker = BodyStacker(bodies: m, skeleton: skeleton, given: mapping.bodyOrder) }
        var axesSeen = Array(repeating: Set<Int>(), count: skeleton.jointCount)
        for (name, axis, column) in jointColumns {
            guard let (j, how) = skeleton.resolveJoint(name) else {
                throw DatasetError.jointNotInSkeleton(
                    SourceLocation(file: file, line: number, column: column + 1), joint: name, skeleton: skeleton.name,
                    known: skeleton.joints)
            }
            if axis == 2 && skeleton.dimensions == 2 {
                throw DatasetError.invalidValue(
                    SourceLocation(file: file, line: number, column: column + 1),
                    problem: "column '\(names[column])' is a z coordinate but skeleton '\(skeleton.name)' is 2D",
                    fix: "drop the z columns or use a 3D skeleton")
            }
            guard axesSeen[j].insert(axis).inserted else {
                throw DatasetError.invalidValue(
                    SourceLocation(file: file, line: number, column: column + 1),
                    problem: "joint '\(skeleton.joints[j])' has two \(axis == 3 ? "confidence" : "coordinate \(axis)") columns",
                    fix: "keep one column per joint coordinate")
            }
            if how != .exact && !jointNames.contains(how) { jointNames.append(how) }
            roles[column] = axis == 3 ? .confidence(joint: j) : .coordinate(joint: j, axis: axis)
            if axis == 3 { hasConfidence = true }
        }
        for (j, axes) in axesSeen.enumerated() where !axes.isEmpty {
            for a in 0..<skeleton.dimensions where !axes.contains(a) {
                throw DatasetError.invalidValue(
                    at, problem: "joint '\(skeleton.joints[j])' has no \(["x", "y", "z"][a]) column",
                    fix: "add the column \(skeleton.joints[j])_\(["x", "y", "z"][a])")
            }
        }
        idColumn = roles.firstIndex { if case .id = $0 { return true } else { return false } } ?? -1
        trackColumn = roles.firstIndex { if case .track = $0 { return true } else { return false } }
        keyIsTime = !roles.contains { if case .frame = $0 { return true } else { return false } }
        if trackColumn != nil && keyIsTime && !roles.contains(where: { if case .time = $0 { return true } else { return false } }) {
            throw DatasetError.invalidValue(
                at, problem: "the track column '\(names[trackColumn!])' needs a frame or time column to tell which rows share a frame",
                fix: "add a frame number column (frame) or a time column (t)")
        }
        scratch = CSVRowScratch(roles: roles, joints: skeleton.jointCount, dimensions: skeleton.dimensions)
    }

    /// The built-in skeleton whose joints are exactly the named ones (by name, alias table or
    /// loose match: `Skeleton.resolveJoint`). A subset of several (or of one) is not guessed:
    /// the user names the skeleton.
    private func inferSkeleton(_ jointNames: [String], uses3D: Bool, at: SourceLocation) throws -> Skeleton {
        let candidates = Skeleton.builtIn.values.filter { s in
            (s.dimensions == 3) == uses3D && jointNames.allSatisfy { s.resolveJoint($0) != nil }
        }
        if let exact = candidates.first(where: { s in Set(jointNames.compactMap { s.resolveJoint($0)?.index }).count == s.jointCount }) {
            return exact
        }
        throw DatasetError.invalidValue(
            at,
            problem: candidates.isEmpty
                ? "the joint columns (\(jointNames.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }.joined(separator: ", "))) match no built-in skeleton"
                : "the joint columns are a subset of \(candidates.map(\.name).sorted().joined(separator: ", ")), not all of its joints",
            fix: "name a skeleton: a built-in name or a schema file (joints without columns are then absent)")
    }

    // MARK: rows

    /// Calls `body(p, start, end, column)` for each field of the line, quotes included.
    @inline(__always)
    private func forEachField(
        _ line: UnsafeBufferPointer<UInt8>, _ number: Int, _ body: (UnsafePointer<UInt8>, Int, Int, Int) throws -> Void
    ) throws {
        guard let p = line.baseAddress else {
            try body(UnsafePointer(bitPattern: 1)!, 0, 0, 0)
            return
        }
        let n = line.count
        var i = 0
        var column = 0
        let d = delimiter
        while true {
            let start = i
            if i < n && p[i] == UInt8(ascii: "\"") {
                i += 1
                while true {
                    guard i < n else {
                        throw DatasetError.syntax(
                            SourceLocation(file: file, line: number, column: start + 1),
                            expected: "a closing '\"' (quoted fields cannot span lines)")
                    }
                    if p[i] == UInt8(ascii: "\"") {
                        if i + 1 < n && p[i + 1] == UInt8(ascii: "\"") { i += 2; continue }
                        i += 1
                        break
                    }
                    i += 1
                }
                while i < n && p[i] != d { i += 1 }
            } else {
                while i < n && p[i] != d { i += 1 }
            }
            try body(p, start, i, column)
            column += 1
            if i >= n { return }
            i += 1
        }
    }

    /// A field's text without surrounding quotes and with `""` unescaped.
    private func unquoted(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> String {
        var s = start, e = end
        while s < e && (p[s] == 0x20 || p[s] == 0x09) { s += 1 }
        while e > s && (p[e - 1] == 0x20 || p[e - 1] == 0x09) { e -= 1 }
        if e - s >= 2 && p[s] == UInt8(ascii: "\"") && p[e - 1] == UInt8(ascii: "\"") {
            let inner = String(decoding: UnsafeBufferPointer(start: p + s + 1, count: e - s - 2), as: UTF8.self)
            return inner.replacingOccurrences(of: "\"\"", with: "\"")
        }
        return String(decoding: UnsafeBufferPointer(start: p + s, count: e - s), as: UTF8.self)
    }

    private mutating func parseRow(_ line: UnsafeBufferPointer<UInt8>, _ number: Int) throws {
        let J = skeleton.jointCount, D = skeleton.dimensions
        let columns = roles.count
        let sc = scratch!
        let p = line.baseAddress!
        let n = line.count
        // 1. Field offsets (a plain byte scan unless the line has quotes).
        var fieldCount = 0
        if memchr(p, Int32(UInt8(ascii: "\"")), n) == nil {
            let d = delimiter
            var start = 0
            var i = 0
            while i < n {
                if p[i] == d {
                    if fieldCount < columns {
                        sc.starts[fieldCount] = start
                        sc.ends[fieldCount] = i
                    }
                    fieldCount += 1
                    start = i + 1
                }
                i += 1
            }
            if fieldCount < columns {
                sc.starts[fieldCount] = start
                sc.ends[fieldCount] = n
            }
            fieldCount += 1
        } else {
            try forEachField(line, number) { _, start, end, column in
                if column < columns {
                    sc.starts[column] = start
                    sc.ends[column] = end
                }
                fieldCount += 1
            }
        }
        guard fieldCount == columns else {
            throw DatasetError.columnCount(location(number), expected: columns, got: fieldCount)
        }
        // 2. A new id closes the current sequence before this row is stored. Ids are compared
        // as bytes first, then (when the bytes differ) as values: "a" and a are one id.
        if let id = mapping.fileSequenceId {
            if currentId == nil {
                currentId = Array(id.utf8)
                currentIdString = id
                firstLine = number
            }
        } else if idColumn >= 0, case (let idStart, let idEnd) = (sc.starts[idColumn], sc.ends[idColumn]),
            currentId == nil || currentId!.count != idEnd - idStart || memcmp(currentId!, p + idStart, idEnd - idStart) != 0,
            currentId == nil || unquoted(p, idStart, idEnd) != currentIdString
        {
            try closeSequence()
            if let limit, sequences.count >= limit { throw LimitReached() }
            let id = unquoted(p, idStart, idEnd)
            guard !id.isEmpty else {
                throw DatasetError.invalidValue(
                    SourceLocation(file: file, line: number, column: idColumn + 1), problem: "the sequence id is empty",
                    fix: "give every row its sequence id")
            }
            if let earlier = seenIds[id] {
                throw DatasetError.invalidValue(
                    SourceLocation(file: file, line: number, record: id),
                    problem: "the rows of this sequence are not together (it also has rows from line \(earlier), before other sequences)",
                    fix: "sort the rows by sequence id, keeping frame order")
            }
            currentId = Array(UnsafeBufferPointer(start: p + idStart, count: idEnd - idStart))
            currentIdString = id
            firstLine = number
        }
        // 3. The row's values into the scratch frame.
        let f = frames
        sc.resetRow()
        let minConfidence = mapping.minConfidence, keepLow = mapping.keepLowConfidence
        for column in 0..<columns {
            let start = sc.starts[column], end = sc.ends[column]
            switch sc.kinds[column] {
            case CSVRowScratch.ignore:
                continue
            case CSVRowScratch.coordinate:
                let j = sc.joints[column]
                var s = start, e = end
                if s < e && (p[s] == 0x20 || p[s] == 0x22) || e > s && (p[e - 1] == 0x20 || p[e - 1] == 0x22) {
                    s = trimmedStart(p, start, end)
                    e = trimmedEnd(p, start, end)
                }
                if let (v, next) = NumberParser.parseDouble(p, s, e), next == e, abs(v) <= Double(PoseBounds.maxCoordinate) {
                    sc.coords[j * D + sc.axes[column]] = NumberParser.float(v, p, s, e)
                } else if let v = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: true) {
                    guard abs(v) <= Double(PoseBounds.maxCoordinate) else {
                        throw PoseBounds.outOfRange(v, at: location(number, column: column + 1, frame: f, joint: skeleton.joints[j]))
                    }
                    let ts = trimmedStart(p, start, end)
                    sc.coords[j * D + sc.axes[column]] = NumberParser.float(v, p, ts, trimmedEnd(p, start, end))
                } else {
                    sc.missing[j] = true
                }
            case CSVRowScratch.confidence:
                let j = sc.joints[column]
                let s = trimmedStart(p, start, end), e = trimmedEnd(p, start, end)
                let c: Float
                if let (v, next) = NumberParser.parseDouble(p, s, e), next == e, v.isFinite {
                    c = Float(v)
                } else if let v = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: true) {
                    c = Float(v)
                } else {
                    sc.missing[j] = true
                    continue
                }
                sc.conf[j] = c
                if c <= minConfidence && !keepLow { sc.missing[j] = true }
            default:
                try rowField(column, p, start, end, number, f)
            }
        }
        // 4. Presence, then append the frame (to its track's rows when there is a track column).
        for j in 0..<J {
            if sc.missing[j] {
                for k in 0..<D { sc.coords[j * D + k] = 0 }
                sc.conf[j] = 0
            } else if sc.jointHasColumns[j] {
                sc.present[j] = 1
            } else {
                sc.conf[j] = 0
            }
        }
        if trackColumn != nil {
            try appendTrackRow(number)
            return
        }
        coords.append(contentsOf: UnsafeBufferPointer(start: sc.coords, count: J * D))
        present.append(contentsOf: UnsafeBufferPointer(start: sc.present, count: J))
        if hasConfidence { conf.append(contentsOf: UnsafeBufferPointer(start: sc.conf, count: J)) }
        if times.count > 0 && times.count != f + 1 {
            throw DatasetError.invalidValue(location(number, frame: f), problem: "the time is missing", fix: "give a time on every row")
        }
        frames += 1
    }

    /// With a track column: the scratch row appended to its track's rows, whose frame keys
    /// must increase. Rows of one frame (same key) may come in any track order.
    private mutating func appendTrackRow(_ number: Int) throws {
        let J = skeleton.jointCount, D = skeleton.dimensions
        let sc = scratch!
        let k: Int
        if let found = trackRows.firstIndex(where: { $0.id == rowTrack }) {
            k = found
        } else {
            guard trackRows.count < 1000 else {
                throw DatasetError.invalidValue(location(number), problem: "more than 1000 tracks in one sequence", fix: "split the sequence")
            }
            trackRows.append(TrackRows(id: rowTrack))
            k = trackRows.count - 1
        }
        if let last = trackRows[k].keys.last, rowKey <= last {
            throw DatasetError.notIncreasing(
                location(number), what: "the frame numbers (or times) of track '\(rowTrack)'", previous: last, value: rowKey)
        }
        trackRows[k].keys.append(rowKey)
        if let t = rowTime { trackRows[k].times.append(t) }
        trackRows[k].coords.append(contentsOf: UnsafeBufferPointer(start: sc.coords, count: J * D))
        trackRows[k].present.append(contentsOf: UnsafeBufferPointer(start: sc.present, count: J))
        trackRows[k].conf.append(contentsOf: UnsafeBufferPointer(start: sc.conf, count: J))
        frames += 1
    }

    /// The tracks' rows aligned on the union of their frame keys, absent where a track has no
    /// row; then the people policy.
    private mutating func closeTracks(_ base: PoseSequence) throws {
        let J = skeleton.jointCount, D = skeleton.dimensions
        var keyTimes: [Double: Double] = [:]
        for t in trackRows {
            for (i, key) in t.keys.enumerated() where i < t.times.count && keyTimes[key] == nil { keyTimes[key] = t.times[i] }
        }
        let keys = Array(Set(trackRows.flatMap(\.keys))).sorted()
        let frameOf = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let F = keys.count
        var tracks: [(id: String, sequence: PoseSequence)] = []
        for t in trackRows {
            var c = [Float](repeating: 0, count: F * J * D), pr = [UInt8](repeating: 0, count: F * J), cf = [Float](repeating: 0, count: F * J)
            for (row, key) in t.keys.enumerated() {
                let f = frameOf[key]!
                for i in 0..<(J * D) { c[f * J * D + i] = t.coords[row * J * D + i] }
                for j in 0..<J {
                    pr[f * J + j] = t.present[row * J + j]
                    cf[f * J + j] = t.conf[row * J + j]
                }
            }
            tracks.append(
                (
                    t.id,
                    PoseSequence(
                        id: base.id, label: base.label, jointCount: J, dimensions: D, frameCount: F, coordinates: c, present: pr,
                        confidence: hasConfidence ? cf : nil)
                ))
        }
        let times = keys.compactMap { keyTimes[$0] }
        let frame = PoseSequence(
            id: base.id, label: base.label, group: base.group, split: base.split, jointCount: J, dimensions: D, frameCount: F,
            coordinates: Array(repeating: 0, count: F * J * D), present: Array(repeating: 0, count: F * J),
            timestamps: times.count == F && F > 0 ? times : nil)
        let tracked = TrackedSequence(base: frame, tracks: tracks)
        if stacker != nil {
            sequences.append(stacker!.add(tracked))
        } else {
            sequences += try People.resolve(
                tracked, policy: mapping.people, skeleton: skeleton, imageSize: mapping.imageSize,
                at: SourceLocation(file: file, line: firstLine, record: base.id))
        }
        trackRows.removeAll()
    }

    /// The sequence-level and time columns of a row (not per joint, so not on the hot path).
    private mutating func rowField(_ column: Int, _ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, _ number: Int, _ f: Int) throws {
        if trackColumn != nil {
            // Frame keys are checked per track (appendTrackRow).
            switch roles[column] {
            case .track:
                rowTrack = unquoted(p, start, end)
                guard !rowTrack.isEmpty else {
                    throw DatasetError.invalidValue(location(number, column: column + 1), problem: "the track id is empty", fix: "give every row its track id")
                }
                return
            case .frame:
                rowKey = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: false)!
                return
            case .time:
                let v = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: false)!
                rowTime = v
                if keyIsTime { rowKey = v }
                return
            default: break
            }
        }
        switch roles[column] {
        case .frame:
            guard let v = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: false) else { return }
            if let last = lastFrameNumber, v <= last {
                throw DatasetError.notIncreasing(location(number, column: column + 1, frame: f), what: "frame numbers", previous: last, value: v)
            }
            lastFrameNumber = v
        case .time:
            guard let v = try cellNumber(p, start, end, column, line: number, frame: f, allowEmpty: false) else { return }
            if let last = times.last, v <= last {
                throw DatasetError.notIncreasing(location(number, column: column + 1, frame: f), what: "times", previous: last, value: v)
            }
            times.append(v)
        case .label, .group, .split:
            let role = roles[column]
            let s = trimmedStart(p, start, end), e = trimmedEnd(p, start, end)
            if f > 0 {
                // Compare bytes with the value of the sequence's first row (no allocation).
                let before: String?
                switch role {
                case .label: before = currentLabel
                case .group: before = currentGroup
                default: before = currentSplit
                }
                var same = false
                if var b = before {
                    same = b.withUTF8 { u in u.count == e - s && memcmp(u.baseAddress!, p + s, e - s) == 0 }
                } else {
                    same = s == e
                }
                if same && memchr(p + start, 0x22, end - start) == nil { return }
            }
            let value = unquoted(p, start, end)
            let v: String? = value.isEmpty ? nil : value
            if f == 0 {
                switch role {
                case .label: currentLabel = v
                case .group: currentGroup = v
                default:
                    if let v, !NativeFormat.splits.contains(v) {
                        throw DatasetError.invalidValue(
                            SourceLocation(file: file, line: number, column: column + 1, record: currentIdString),
                            problem: "split '\(v)' is not one of train, validation, test", fix: "rename it")
                    }
                    currentSplit = v
                }
            } else {
                let before: String?
                switch role {
                case .label: before = currentLabel
                case .group: before = currentGroup
                default: before = currentSplit
                }
                if before != v {
                    throw DatasetError.invalidValue(
                        SourceLocation(file: file, line: number, column: column + 1, record: currentIdString, frame: f),
                        problem: "\(headerNames[column]) changes within the sequence ('\(before ?? "")' then '\(v ?? "")')",
                        fix: "give one \(headerNames[column]) per sequence id")
                }
            }
        default:
            return
        }
    }

    /// Field bounds without surrounding spaces, tabs and quotes; `start <= end` always.
    @inline(__always)
    private func trimmedStart(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        var s = start
        while s < end && (p[s] == 0x20 || p[s] == 0x09 || p[s] == UInt8(ascii: "\"")) { s += 1 }
        return s
    }

    @inline(__always)
    private func trimmedEnd(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        let s = trimmedStart(p, start, end)
        var e = end
        while e > s && (p[e - 1] == 0x20 || p[e - 1] == 0x09 || p[e - 1] == UInt8(ascii: "\"")) { e -= 1 }
        return e
    }

    /// The number in a field; nil for an empty or NaN cell when `allowEmpty`.
    @inline(__always)
    private func cellNumber(
        _ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, _ column: Int, line: Int, frame: Int, allowEmpty: Bool
    ) throws -> Double? {
        let s = trimmedStart(p, start, end), e = trimmedEnd(p, start, end)
        if s == e || NumberParser.isNaNWord(p, s, e) {
            if allowEmpty { return nil }
            throw DatasetError.invalidValue(
                location(line, column: column + 1, frame: frame), problem: "\(headerNames[column]) is empty",
                fix: "give a \(headerNames[column]) on every row")
        }
        guard let (v, next) = NumberParser.parseDouble(p, s, e), next == e else {
            let text = String(decoding: UnsafeBufferPointer(start: p + s, count: e - s), as: UTF8.self)
            let lower = text.lowercased()
            if ["inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"].contains(lower) {
                throw DatasetError.nonFinite(location(line, column: column + 1, frame: frame), what: headerNames[column])
            }
            throw DatasetError.invalidValue(
                location(line, column: column + 1, frame: frame), problem: "\(headerNames[column]) '\(text)' is not a number",
                fix: "write numbers like 12.5 or -3e-2; leave the cell empty for a joint that was not seen")
        }
        guard v.isFinite else { throw DatasetError.nonFinite(location(line, column: column + 1, frame: frame), what: headerNames[column]) }
        return v
    }

    private mutating func closeSequence() throws {
        guard currentId != nil else { return }
        if let label = currentLabel, let classes = mapping.classes, !classes.contains(label) {
            throw DatasetError.labelNotInClasses(SourceLocation(file: file, line: firstLine, record: currentIdString), label: label, classes: classes)
        }
        seenIds[currentIdString] = firstLine
        let J = skeleton.jointCount, D = skeleton.dimensions
        // With a track column the rows are in `trackRows`: the sequence carries the metadata.
        let sequence = PoseSequence(
            id: currentIdString, label: currentLabel, group: currentGroup, split: currentSplit, jointCount: J,
            dimensions: D, frameCount: trackColumn == nil ? frames : 0, coordinates: coords.exactCopy(), present: present.exactCopy(),
            confidence: hasConfidence ? conf.exactCopy() : nil, timestamps: times.isEmpty ? nil : times.exactCopy())
        if trackColumn != nil {
            try closeTracks(sequence)
        } else if stacker != nil {
            sequences.append(stacker!.add(TrackedSequence(base: sequence, tracks: [("0", sequence)])))
        } else {
            sequences.append(sequence)
        }
        coords.removeAll(keepingCapacity: true)
        present.removeAll(keepingCapacity: true)
        conf.removeAll(keepingCapacity: true)
        times.removeAll(keepingCapacity: true)
        lastFrameNumber = nil
        frames = 0
        currentLabel = nil
        currentGroup = nil
        currentSplit = nil
        currentId = nil
    }
}

/// Per-row scratch of the CSV reader: field offsets, one frame of values, and the column
/// roles flattened for the hot loop. Allocated once per file.
final class CSVRowScratch {
    static let ignore: UInt8 = 0, coordinate: UInt8 = 1, confidence: UInt8 = 2, other: UInt8 = 3
    let columns: Int, J: Int, D: Int
    let starts: UnsafeMutablePointer<Int>
    let ends: UnsafeMutablePointer<Int>
    let kinds: UnsafeMutablePointer<UInt8>
    let joints: UnsafeMutablePointer<Int>
    let axes: UnsafeMutablePointer<Int>
    let coords: UnsafeMutablePointer<Float>
    let present: UnsafeMutablePointer<UInt8>
    let conf: UnsafeMutablePointer<Float>
    let missing: UnsafeMutablePointer<Bool>
    let jointHasColumns: UnsafeMutablePointer<Bool>

    init(roles: [CSVReader.Role], joints J: Int, dimensions D: Int) {
        columns = roles.count
        self.J = J
        self.D = D
        starts = .allocate(capacity: columns)
        ends = .allocate(capacity: columns)
        kinds = .allocate(capacity: columns)
        joints = .allocate(capacity: columns)
        axes = .allocate(capacity: columns)
        coords = .allocate(capacity: J * D)
        present = .allocate(capacity: J)
        conf = .allocate(capacity: J)
        missing = .allocate(capacity: J)
        jointHasColumns = .allocate(capacity: J)
        jointHasColumns.initialize(repeating: false, count: J)
        for (c, r) in roles.enumerated() {
            joints[c] = 0
            axes[c] = 0
            switch r {
            case .ignore, .id: kinds[c] = CSVRowScratch.ignore
            case .coordinate(let j, let a):
                kinds[c] = CSVRowScratch.coordinate
                joints[c] = j
                axes[c] = a
                jointHasColumns[j] = true
            case .confidence(let j):
                kinds[c] = CSVRowScratch.confidence
                joints[c] = j
            default: kinds[c] = CSVRowScratch.other
            }
        }
    }

    @inline(__always)
    func resetRow() {
        coords.update(repeating: 0, count: J * D)
        present.update(repeating: 0, count: J)
        conf.update(repeating: 1, count: J)
        missing.update(repeating: false, count: J)
    }

    deinit {
        for p in [starts, ends, joints, axes] as [UnsafeMutablePointer<Int>] { p.deallocate() }
        kinds.deallocate()
        coords.deallocate()
        present.deallocate()
        conf.deallocate()
        missing.deallocate()
        jointHasColumns.deallocate()
    }
}
