import Foundation
import PoseCore

/// Penn Action (Zhang, Zhu & Derpanis, ICCV 2013) from the CSV export of its `labels/` files:
/// `derived/sequences.csv` (`seq_id,action,view,split,height,width,nframes`) and
/// `derived/frames.csv` (`seq_id,frame,x1,y1,v1,...,x13,y13,v13`), 13 joints in image
/// pixels (origin top-left, y down) on the `penn-action-13` skeleton.
///
/// Each clip is one sequence labelled with its action, with the official split (`train` /
/// `test`) and its own image size. A joint annotated `visibility 0` is absent by default (the
/// Pose contract: not seen); `keepInvisible` keeps the annotators' estimated position as a
/// present point with confidence 0.5 (visible points get confidence 1; a confidence of 0
/// would make the point absent again when the file is read back, by the one confidence rule
/// of docs/datasets.md, and `--min-confidence 0.5` drops them at read time). Points at exactly
/// (0, 0) with visibility 0 carry no estimate and stay absent either way. The annotations
/// give no frame rate.
public enum PennActionImporter {
    /// The confidence of an invisible point kept by `keepInvisible`.
    public static let invisibleConfidence: Float = 0.5

    public struct Options: Sendable {
        public var keepInvisible = false
        /// Read only the first `limit` sequences of frames.csv (quick looks, tests).
        public var limit: Int?
        public init(keepInvisible: Bool = false, limit: Int? = nil) {
            self.keepInvisible = keepInvisible
            self.limit = limit
        }
    }

    /// One row of sequences.csv.
    public struct Clip: Equatable, Sendable {
        public var id: String
        public var action: String
        public var view: String
        public var split: String
        public var width: Double
        public var height: Double
        public var frames: Int
    }

    /// The folder holding `sequences.csv` and `frames.csv` (`ROOT/derived` or `ROOT`).
    static func derived(_ root: String) -> String {
        let d = (root as NSString).appendingPathComponent("derived")
        return FileManager.default.fileExists(atPath: (d as NSString).appendingPathComponent("sequences.csv")) ? d : root
    }

    /// Reads sequences.csv.
    public static func clips(_ root: String) throws -> [Clip] {
        let path = (derived(root) as NSString).appendingPathComponent("sequences.csv")
        guard FileManager.default.fileExists(atPath: path) else {
            throw DatasetError.cannotRead(file: path, reason: "no such file; pass the Penn Action folder that holds derived/sequences.csv")
        }
        var clips: [Clip] = []
        var columns: [String: Int] = [:]
        try LineSplitter.forEachLine(ofFile: path) { line, number in
            if LineSplitter.isBlank(line) { return }
            let fields = String(decoding: line, as: UTF8.self).split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let at = SourceLocation(file: path, line: number)
            if columns.isEmpty {
                for (k, f) in fields.enumerated() { columns[f] = k }
                for need in ["seq_id", "action", "view", "split", "height", "width", "nframes"] where columns[need] == nil {
                    throw DatasetError.invalidValue(at, problem: "the header has no '\(need)' column", fix: "use the derived/sequences.csv of the Penn Action export")
                }
                return
            }
            guard fields.count == columns.count else { throw DatasetError.columnCount(at, expected: columns.count, got: fields.count) }
            func f(_ name: String) -> String { fields[columns[name]!] }
            guard let w = Double(f("width")), let h = Double(f("height")), w > 0, h > 0, let n = Int(f("nframes")), n > 0 else {
                throw DatasetError.invalidValue(at, problem: "width, height and nframes must be positive numbers", fix: "check the row")
            }
            guard ["train", "test"].contains(f("split")) else {
                throw DatasetError.invalidValue(at, problem: "split '\(f("split"))' is not train or test", fix: "check the row")
            }
            clips.append(Clip(id: f("seq_id"), action: f("action"), view: f("view"), split: f("split"), width: w, height: h, frames: n))
        }
        guard !clips.isEmpty else { throw DatasetError.empty(file: path) }
        return clips
    }

    public static func read(_ root: String, options: Options = Options()) throws -> Dataset {
        let clips = try clips(root)
        var byId: [String: Clip] = [:]
        for c in clips { byId[c.id] = c }
        let framesPath = (derived(root) as NSString).appendingPathComponent("frames.csv")
        guard FileManager.default.fileExists(atPath: framesPath) else {
            throw DatasetError.cannotRead(file: framesPath, reason: "no such file; pass the Penn Action folder that holds derived/frames.csv")
        }
        var mapping = CSVMapping()
        mapping.skeleton = .pennAction
        mapping.idColumn = "seq_id"
        mapping.frameColumn = "frame"
        mapping.keepLowConfidence = options.keepInvisible
        for (k, joint) in Skeleton.pennAction.joints.enumerated() {
            mapping.joints[joint] = ["x\(k + 1)", "y\(k + 1)", "v\(k + 1)"]
        }
        var reader = CSVReader(file: framesPath, mapping: mapping)
        reader.limit = options.limit
        do {
            try LineSplitter.forEachLine(ofFile: framesPath) { line, number in try reader.consume(line, number) }
        } catch is CSVReader.LimitReached {}
        var d = try reader.finish()
        let J = Skeleton.pennAction.jointCount
        for k in d.sequences.indices {
            var s = d.sequences[k]
            guard let clip = byId[s.id] else {
                throw DatasetError.invalidValue(
                    SourceLocation(file: framesPath, record: s.id), problem: "the sequence is not in sequences.csv", fix: "use matching exports")
            }
            guard s.frameCount == clip.frames else {
                throw DatasetError.invalidValue(
                    SourceLocation(file: framesPath, record: s.id),
                    problem: "frames.csv has \(s.frameCount) frames, sequences.csv says \(clip.frames)", fix: "re-export the CSV files")
            }
            s.label = clip.action
            s.split = clip.split
            s.imageSize = [clip.width, clip.height]
            if options.keepInvisible {
                // Points without any estimate (0, 0) stay absent; estimated ones get 0.5.
                for i in 0..<(s.frameCount * J) where s.present[i] == 1 && s.confidence![i] == 0 {
                    if s.coordinates[2 * i] == 0 && s.coordinates[2 * i + 1] == 0 {
                        s.present[i] = 0
                    } else {
                        s.confidence![i] = PennActionImporter.invisibleConfidence
                    }
                }
            } else {
                s.confidence = nil  // visibility duplicates the presence flags
            }
            d.sequences[k] = s
        }
        d.name = "penn-action"
        d.classes = Array(Set(clips.map(\.action))).sorted()
        return d
    }
}
