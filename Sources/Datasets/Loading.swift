import Foundation
import PoseCore

/// How to read a dataset file, for every format (`DatasetLoader.read`). Options a format has
/// no use for are ignored by it (a `.ts` file has no confidence).
public struct ReadOptions: Sendable {
    /// The skeleton of formats that do not name one (CSV, NumPy, UEA).
    public var skeleton: Skeleton?
    /// The CSV column mapping.
    public var mapping: CSVMapping?
    /// A `.npy` of labels for a bare `X.npy`.
    public var labelsPath: String?
    /// The one confidence rule: a point whose confidence is at or below this is absent, in
    /// every format. Nil keeps the format's own setting (0, or a CSV mapping's
    /// `minConfidence`).
    public var minConfidence: Float?
    /// Refuse (instead of warn about) data whose coordinates contradict what it declares
    /// (`CoordinateSpace`).
    public var strict = false
    /// The class order to use where the file declares none (CSV, NumPy, Create ML): labels
    /// must be in it; NumPy integer labels index it.
    public var classes: [String]?
    /// The image size of data that gives none (Create ML clips).
    public var imageSize: [Double]?
    /// Renames NumPy split values (`["0": "train", "1": "test"]`).
    public var splitNames: [String: String] = [:]
    /// What to do with sequences where several people appear (native `"people"` frames, a CSV
    /// track column, a 5-D NumPy `X`); nil refuses them with the choices.
    public var people: PeoplePolicy?
    /// With `bodies=M`: the body order to apply, a model's (`BodyOrderRule(modelInput:)`), so
    /// that data is read the way the model was trained; nil decides it from the file
    /// (`BodyOrder`, `Dataset.bodyOrder`).
    public var bodyOrder: BodyOrderRule?

    public init(skeleton: Skeleton? = nil, mapping: CSVMapping? = nil, minConfidence: Float? = nil, strict: Bool = false) {
        self.skeleton = skeleton
        self.mapping = mapping
        self.minConfidence = minConfidence
        self.strict = strict
    }
}

/// What one reader returns: the dataset, its non-fatal problems, and how joint names other
/// than the skeleton's own matched (alias tables, loose matching).
public struct ReadReport: Sendable {
    public var dataset: Dataset
    public var warnings: [DatasetWarning]
    public var jointNames: [JointNameMatch]

    public init(dataset: Dataset, warnings: [DatasetWarning] = [], jointNames: [JointNameMatch] = []) {
        self.dataset = dataset
        self.warnings = warnings
        self.jointNames = jointNames
    }
}

/// A dataset as read, with what the reader noticed.
public struct LoadedDataset: Sendable {
    public var dataset: Dataset
    /// Non-fatal problems of the file (unknown keys, skipped records, ...).
    public var readerWarnings: [DatasetWarning]
    /// How joint names other than the skeleton's own matched; empty when all were its own.
    public var jointNames: [JointNameMatch] = []
    /// The coordinate space measured from the data (`CoordinateSpace.measure`).
    public var space: CoordinateSpaceReport
    public var file: String

    /// The reader's warnings, then the coordinate-space contradictions.
    public var warnings: [DatasetWarning] {
        readerWarnings + space.problems.map { DatasetWarning(SourceLocation(file: file), "[\($0.code)] \($0)") }
    }
}

/// Reads a dataset file, choosing the reader from the extension: `.jsonl`/`.json` native,
/// `.ts` UEA, `.csv`/`.tsv` CSV, `.npz`/`.npy` NumPy. A model file (`.atm`, or the model
/// file's magic bytes) is named as such, not read as data.
public enum DatasetLoader {
    /// The dataset alone (warnings dropped); see `read(_:options:)`.
    public static func load(_ path: String, skeleton: Skeleton? = nil, mapping: CSVMapping? = nil) throws -> Dataset {
        try read(path, options: ReadOptions(skeleton: skeleton, mapping: mapping)).dataset
    }

    /// The file formats, as `actiontrain import` names them.
    public enum Format: String, Sendable, CaseIterable {
        case native, uea, csv, npz, createml
        /// Create ML's folder per label of clip files (`CreateMLFolder`).
        case createmlFolder
        /// MMAction2 / PYSKL annotation pickles (`PysklFormat`), read without executing them.
        case pyskl

        /// The format of a file extension, or nil.
        public init?(extension ext: String) {
            switch ext.lowercased() {
            case "jsonl", "json": self = .native
            case "ts": self = .uea
            case "csv", "tsv": self = .csv
            case "npz", "npy": self = .npz
            case "pkl", "pickle": self = .pyskl
            default: return nil
            }
        }
    }

    /// Reads `path` with `options` (the format from the extension unless `format` is given),
    /// measures its coordinate space, and refuses contradictions under `options.strict`.
    public static func read(_ path: String, format: Format? = nil, options: ReadOptions = ReadOptions()) throws -> LoadedDataset {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file; check the path")
        }
        if isDirectory.boolValue && format != .createmlFolder {
            throw DatasetError.cannotRead(file: path, reason: "is a directory; pass a dataset file (or use 'actiontrain import' for a dataset folder)")
        }
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        if ext == "atm" || startsWithModelMagic(path) {
            throw DatasetError.cannotRead(
                file: path, reason: "is a model file, not a dataset; were MODEL and DATA swapped? (commands take the model first)")
        }
        guard let format = format ?? Format(extension: ext) else { throw DatasetError.unknownFormat(file: path) }
        let report: ReadReport
        switch format {
        case .native:
            var o = NativeFormat.Options(people: options.people, bodyOrder: options.bodyOrder)
            if let c = options.minConfidence { o.minConfidence = c }
            report = try NativeFormat.readReporting(path, options: o)
        case .uea: report = ReadReport(dataset: try UEAFormat.read(path, options: .init(skeleton: options.skeleton)))
        case .csv:
            var m = options.mapping ?? CSVMapping()
            if let skeleton = options.skeleton { m.skeleton = skeleton }
            if let c = options.minConfidence { m.minConfidence = c }
            if let people = options.people { m.people = people }
            if let order = options.bodyOrder { m.bodyOrder = order }
            if let classes = options.classes { m.classes = classes }
            report = try CSVFormat.readReporting(path, mapping: m)
        case .npz:
            var o = NumpyFormat.Options(skeleton: options.skeleton, labelsPath: options.labelsPath)
            if let c = options.minConfidence { o.minConfidence = c }
            o.people = options.people
            o.bodyOrder = options.bodyOrder
            o.classes = options.classes
            o.splitNames = options.splitNames
            report = ReadReport(dataset: try NumpyFormat.read(path, options: o))
        case .createml:
            report = ReadReport(dataset: try CreateMLFormat.read(path, minConfidence: options.minConfidence ?? 0, classes: options.classes))
        case .pyskl:
            var o = PysklFormat.Options()
            o.skeleton = options.skeleton
            o.minConfidence = options.minConfidence ?? 0
            o.people = options.people
            o.bodyOrder = options.bodyOrder
            o.classes = options.classes
            o.splitNames = options.splitNames
            report = try PysklFormat.readReporting(path, options: o)
        case .createmlFolder:
            var o = CreateMLFolder.Options(imageSize: options.imageSize)
            o.minConfidence = options.minConfidence ?? 0
            report = try CreateMLFolder.readReporting(path, options: o)
        }
        var warnings = report.warnings
        if let w = report.dataset.bodyOrder?.warning { warnings.append(DatasetWarning(SourceLocation(file: path), w)) }
        var loaded = try checked(report.dataset, file: path, readerWarnings: warnings, strict: options.strict)
        loaded.jointNames = report.jointNames
        return loaded
    }

    /// `dataset` with its measured coordinate space; under `strict` the first contradiction is
    /// an error. For datasets that importers build (`actiontrain import`).
    /// A class named by nothing but white space (an empty label cell, `"label": ""`) is an
    /// error in every format: it would train a class no report can name. So is such an id (no
    /// reader makes one up): reports and predictions name sequences by it.
    public static func checked(_ dataset: Dataset, file: String, readerWarnings: [DatasetWarning] = [], strict: Bool) throws -> LoadedDataset {
        func blank(_ label: String) -> Bool { label.allSatisfy(\.isWhitespace) }
        if let i = dataset.sequences.firstIndex(where: { blank($0.id) }) {
            let label = dataset.sequences[i].label.map { ", label '\($0)'" } ?? ""
            throw DatasetError.invalidValue(
                SourceLocation(file: file), problem: "sequence \(i + 1) of \(dataset.sequences.count) (in the file's order\(label)) has an empty id",
                fix: "give every sequence a unique id that is not empty")
        }
        if let s = dataset.sequences.first(where: { s in s.label.map(blank) == true || s.segments.contains { blank($0.label) } }) {
            throw DatasetError.invalidValue(
                SourceLocation(file: file, record: s.id), problem: "the label is empty",
                fix: "give every sequence and segment a class name, or leave the label out for unlabeled data")
        }
        if dataset.classes.contains(where: blank) {
            throw DatasetError.invalidValue(
                SourceLocation(file: file), problem: "the class list [\(dataset.classes.joined(separator: ", "))] holds an empty name",
                fix: "remove it or name the class")
        }
        let space = CoordinateSpace.measure(dataset)
        if strict, let problem = space.problems.first {
            throw DatasetError.invalidValue(
                SourceLocation(file: file), problem: "[\(problem.code)] \(problem)", fix: "or read it without the strict check to only warn")
        }
        return LoadedDataset(dataset: dataset, readerWarnings: readerWarnings, space: space, file: file)
    }

    /// True when the file starts with the model file's magic `\x89ATM` (docs/format.md).
    static func startsWithModelMagic(_ path: String) -> Bool {
        guard let h = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? h.close() }
        return Array((try? h.read(upToCount: 4)) ?? Data()) == [0x89, 0x41, 0x54, 0x4D]
    }

    /// Reads a whole (small) file, with a dataset error on failure.
    static func contents(of path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file or not readable")
        }
        return [UInt8](data)
    }
}
