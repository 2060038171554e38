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

    public init(
        name: String, skeleton: Skeleton, sequences: [PoseSequence], classes: [String]? = nil,
        frameRate: Double? = nil, imageSize: [Double]? = nil
    ) {
        self.name = name
        self.skeleton = skeleton
        self.sequences = sequences
        self.classes = classes ?? Array(Set(sequences.compactMap(\.label))).sorted()
        self.frameRate = frameRate
        self.imageSize = imageSize
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
        }
    }

    /// A stable content hash (FNV-1a 64 over ids, labels and coordinates), for provenance.
    public var contentHash: String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix<T: FixedWidthInteger>(_ v: T) {
            withUnsafeBytes(of: v.littleEndian) { for b in $0 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 } }
        }
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
        }
        return String(format: "fnv1a64:%016llx", h)
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

    public var description: String {
        switch self {
        case .cannotRead(let file, let reason):
            return "\(file): cannot read: \(reason)"
        case .parse(let file, let line, let reason):
            return "\(file):\(line): \(reason)"
        case .unknownLabel(let file, let record, let label, let classes):
            return "\(file): sequence '\(record)' has label '\(label)', which is not in the class list [\(classes.joined(separator: ", "))]; add it to \"classes\" or fix the label"
        case .unknownJoint(let file, let line, let joint, let skeleton):
            return "\(file):\(line): joint '\(joint)' is not in skeleton '\(skeleton)'; rename it or declare a custom skeleton"
        case .empty(let file):
            return "\(file): the dataset has no sequences"
        case .unknownFormat(let file):
            return "\(file): unknown dataset format; use a .jsonl (native), .ts (UEA) file, or pass --format"
        case .split(let why):
            return why
        }
    }
}

/// Reads a dataset file, choosing the reader from the extension.
public enum DatasetLoader {
    public static func load(_ path: String) throws -> Dataset {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file; check the path")
        }
        if isDirectory.boolValue {
            throw DatasetError.cannotRead(file: path, reason: "is a directory; pass a dataset file")
        }
        switch url.pathExtension.lowercased() {
        case "jsonl", "json": return try NativeFormat.read(path)
        case "ts": return try UEAFormat.read(path)
        default: throw DatasetError.unknownFormat(file: path)
        }
    }

    /// Reads a whole file, with a dataset error on failure.
    static func contents(of path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file or not readable")
        }
        return [UInt8](data)
    }
}
