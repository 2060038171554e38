import Foundation
import PoseCore

/// A labeled collection of pose sequences sharing one skeleton.
public struct Dataset: Sendable, Equatable {
    public var name: String
    public var skeleton: Skeleton
    public var sequences: [PoseSequence]
    /// Ordered class list. Given by the file when it declares one, otherwise the sorted labels.
    public var classes: [String]
    /// Frames per second of sequences without timestamps, if known.
    public var frameRate: Double?
    /// Image size `[width, height]` in pixels for 2D data, if known.
    public var imageSize: [Double]?
    /// Read with `bodies=M` (M > 1): the order the bodies were placed in and why (a model
    /// trained on it keeps its roles, `InputSpec.bodyRoles`); nil otherwise.
    public var bodyOrder: BodyOrder?

    public init(
        name: String, skeleton: Skeleton, sequences: [PoseSequence], classes: [String]? = nil,
        frameRate: Double? = nil, imageSize: [Double]? = nil
    ) {
        self.name = name
        self.skeleton = skeleton
        self.sequences = sequences
        self.classes = classes ?? Array(Set(sequences.compactMap(\.label) + sequences.flatMap { $0.segments.map(\.label) })).sorted()
        self.frameRate = frameRate
        self.imageSize = imageSize
    }

    /// The distinct labels of `sequences` in order of first appearance: the class order of
    /// the formats that do not declare one (CSV, NumPy string labels, Create ML, PYSKL).
    public static func classesInOrderOfAppearance(_ sequences: [PoseSequence]) -> [String] {
        var seen = Set<String>()
        return sequences.compactMap(\.label).filter { seen.insert($0).inserted }
    }

    /// Sequences whose data-given split is `split`.
    public func sequences(inSplit split: String) -> [PoseSequence] {
        sequences.filter { $0.split == split }
    }

    /// The subset of sequences at `indices`, same skeleton and classes.
    public func subset(_ indices: [Int]) -> Dataset {
        var d = self
        d.sequences = indices.map { sequences[$0] }
        return d
    }

    /// Checks that every label is in the class list and the dataset is not empty.
    public func validateLabels(file: String) throws {
        guard !sequences.isEmpty else { throw DatasetError.empty(file: file) }
        let known = Set(classes)
        for s in sequences {
            if let l = s.label, !known.contains(l) {
                throw DatasetError.unknownLabel(file: file, record: s.id, label: l, classes: classes)
            }
            if let g = s.segments.first(where: { !known.contains($0.label) }) {
                throw DatasetError.unknownLabel(file: file, record: s.id, label: g.label, classes: classes)
            }
        }
    }

    /// A stable content hash (FNV-1a 64 over ids, labels and coordinates), for provenance.
    public var contentHash: String {
        var h = FNV1a64()
        func mix<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { h.mix($0) } }
        func mix(_ s: String) {
            for b in s.utf8 { mix(b) }
            mix(UInt8(0))
        }
        mix(skeleton.name)
        for s in sequences {
            mix(s.id)
            mix(s.label ?? "")
            mix(s.group ?? "")
            mix(s.split ?? "")
            for v in s.coordinates { mix(v.bitPattern) }
            for v in s.present { mix(v) }
            for g in s.segments {  // (none: the hash of a dataset without segments is as before)
                mix(g.label)
                mix(Int64(g.start))
                mix(Int64(g.end))
            }
        }
        return h.text
    }

    /// What `contentHash` leaves out (left out so that the hashes models, reports and logs
    /// already record stay valid): the class list in order (the model's outputs), the frame
    /// rate, the image sizes and each sequence's timestamps and confidences. A resumed fit
    /// checks both, so that a header edited between the runs (classes reordered, another
    /// frame rate) is not trained on as if it were the same data (docs/bad-input.md).
    public var detailHash: String {
        var h = FNV1a64()
        func mix<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { h.mix($0) } }
        func mix(_ d: Double?) { mix(d?.bitPattern ?? UInt64.max) }
        for c in classes { for b in c.utf8 { mix(b) }; mix(UInt8(0)) }
        mix(Int64(classes.count))
        mix(frameRate)
        for v in imageSize ?? [] { mix(v) }
        for s in sequences {
            mix(Int64(s.timestamps?.count ?? -1))
            for t in s.timestamps ?? [] { mix(t) }
            mix(Int64(s.confidence?.count ?? -1))
            for c in s.confidence ?? [] { mix(c.bitPattern) }
            mix(Int64(s.imageSize?.count ?? -1))
            for v in s.imageSize ?? [] { mix(v) }
        }
        return h.text
    }
}

/// Where in an input a problem is: the file and, when known, the line (1-based), the column
/// (1-based byte), the record (sequence id, array or archive entry), the frame index (0-based)
/// and the joint. Printed as `file:line:column: sequence 's1' frame 4 joint 'nose'`.
public struct SourceLocation: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var column: Int?
    public var record: String?
    public var frame: Int?
    public var joint: String?
    /// What a record is called in this format ("sequence", "entry", "segment", ...).
    public var recordKind: String

    public init(
        file: String, line: Int? = nil, column: Int? = nil, record: String? = nil, frame: Int? = nil,
        joint: String? = nil, recordKind: String = "sequence"
    ) {
        self.file = file
        self.line = line
        self.column = column
        self.record = record
        self.frame = frame
        self.joint = joint
        self.recordKind = recordKind
    }

    public var description: String {
        var s = file
        if let line {
            s += ":\(line)"
            if let column { s += ":\(column)" }
        }
        var parts: [String] = []
        if let record { parts.append("\(recordKind) '\(record)'") }
        if let frame { parts.append("frame \(frame)") }
        if let joint { parts.append("joint '\(joint)'") }
        return parts.isEmpty ? s : s + ": " + parts.joined(separator: " ")
    }
}

/// Errors reading or using a dataset. Each names the file and, where there is one, the line
/// or record, and says what to do.
public enum DatasetError: Error, Equatable, CustomStringConvertible {
    case cannotRead(file: String, reason: String)
    case parse(file: String, line: Int, reason: String)
    case unknownLabel(file: String, record: String, label: String, classes: [String])
    case unknownJoint(file: String, line: Int, joint: String, skeleton: String)
    case empty(file: String)
    case unknownFormat(file: String)
    case split(String)
    /// Malformed text: `expected` says what should have been there.
    case syntax(SourceLocation, expected: String)
    /// The input ends in the middle of a record.
    case truncated(SourceLocation, what: String)
    /// A row with the wrong number of fields.
    case columnCount(SourceLocation, expected: Int, got: Int)
    /// A joint name the skeleton does not have.
    case jointNotInSkeleton(SourceLocation, joint: String, skeleton: String, known: [String])
    /// A label that is not in the declared class list.
    case labelNotInClasses(SourceLocation, label: String, classes: [String])
    /// A NaN or infinite coordinate, confidence or time.
    case nonFinite(SourceLocation, what: String)
    /// Timestamps (or frame numbers) that do not increase.
    case notIncreasing(SourceLocation, what: String, previous: Double, value: Double)
    /// A value of the wrong kind, shape or range; `fix` says what to do.
    case invalidValue(SourceLocation, problem: String, fix: String)
    /// A NumPy array with an unsupported dtype, layout or shape.
    case numpy(SourceLocation, problem: String, fix: String)
    /// A damaged zip archive or deflate stream.
    case corruptArchive(SourceLocation, problem: String)
    /// A skeleton schema field that is missing or wrong.
    case invalidSkeleton(SourceLocation, field: String, problem: String)
    /// Several people (tracks) in a sequence, and no people policy (`ReadOptions.people`).
    case severalPeople(SourceLocation, tracks: [String])
    /// The policy `bodies=M` (`asked`) for data that already holds `held` bodies per frame.
    case bodiesHeld(SourceLocation, held: Int, skeleton: String, asked: Int)

    /// How to choose a people policy, for the messages of `severalPeople`: the library's
    /// option, or a caller's (the command line's flag).
    public static func choosePeople(_ option: String) -> String {
        "choose what to do with several people, a people policy (\(option)): \(PeoplePolicy.choices) (docs/datasets.md, \"Several people per frame\")"
    }

    /// The message of `severalPeople` and `bodiesHeld` with `option` named as the way to give
    /// the policy (`ReadOptions.people` in `description`).
    public func peopleMessage(option: String) -> String? {
        switch self {
        case .severalPeople(let at, let tracks):
            return "\(at): \(tracks.count) people appear (tracks \(tracks.map { "'\($0)'" }.joined(separator: ", "))); " + Self.choosePeople(option)
        case .bodiesHeld(let at, let held, let skeleton, let asked):
            return "\(at): the data already holds \(held) bodies per frame (skeleton '\(skeleton)', joints p1.<joint> ... p\(held).<joint>), "
                + "not \(asked): read it with the people policy bodies=\(held) or none (\(option)), as it is, or stack the original data with bodies=\(asked)"
        default:
            return nil
        }
    }

    public var description: String {
        if let people = peopleMessage(option: "ReadOptions.people") { return people }
        switch self {
        case .severalPeople, .bodiesHeld:
            preconditionFailure("described above")
        case .cannotRead(let file, let reason):
            // The writers (NativeFormat.write, Create ML folders) report through this case too.
            return reason.hasPrefix("cannot write") ? "\(file): \(reason)" : "\(file): cannot read: \(reason)"
        case .parse(let file, let line, let reason):
            return "\(file):\(line): \(reason)"
        case .unknownLabel(let file, let record, let label, let classes):
            return "\(file): sequence '\(record)' has label '\(label)', which is not in the class list [\(classes.joined(separator: ", "))]; add it to \"classes\" or fix the label"
        case .unknownJoint(let file, let line, let joint, let skeleton):
            return "\(file):\(line): joint '\(joint)' is not in skeleton '\(skeleton)'; rename it or declare a custom skeleton"
        case .empty(let file):
            return "\(file): the dataset has no sequences; add sequences or check that you passed the right file"
        case .unknownFormat(let file):
            return "\(file): unknown dataset format; use a .jsonl (native), .ts (UEA), .csv, .npz, .npy or .pkl (PYSKL) file, or 'actiontrain import' for the public datasets and Create ML folders"
        case .split(let why):
            return why
        case .syntax(let at, let expected):
            return "\(at): expected \(expected)"
        case .truncated(let at, let what):
            return "\(at): the input ends in the middle of \(what); the file looks cut short (an interrupted copy or write?): regenerate or re-download it"
        case .columnCount(let at, let expected, let got):
            return "\(at): expected \(expected) fields as in the header, found \(got); check the delimiter, quoting and that every row has every column"
        case .jointNotInSkeleton(let at, let joint, let skeleton, let known):
            return "\(at): joint '\(joint)' is not in skeleton '\(skeleton)' (\(known.joined(separator: ", "))); rename it or declare a custom skeleton"
        case .labelNotInClasses(let at, let label, let classes):
            return "\(at): label '\(label)' is not in the class list [\(classes.joined(separator: ", "))]; add it to the classes or fix the label"
        case .nonFinite(let at, let what):
            return "\(at): \(what) is NaN or infinite; omit joints that were not seen (an absent joint is simply left out)"
        case .notIncreasing(let at, let what, let previous, let value):
            return "\(at): \(what) must increase, but \(value) follows \(previous); sort the frames and drop duplicates"
        case .invalidValue(let at, let problem, let fix):
            return "\(at): \(problem); \(fix)"
        case .numpy(let at, let problem, let fix):
            return "\(at): \(problem); \(fix)"
        case .corruptArchive(let at, let problem):
            return "\(at): corrupt archive: \(problem); re-create it with numpy.savez or numpy.savez_compressed"
        case .invalidSkeleton(let at, let field, let problem):
            return "\(at): skeleton field \"\(field)\": \(problem)"
        }
    }
}

/// A problem that does not stop loading (e.g. a segment skipped because its bounds are NaN),
/// printed by the CLI in the style of lint warnings.
public struct DatasetWarning: Equatable, Sendable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String

    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    public var description: String { "warning: \(location): \(message)" }
}
