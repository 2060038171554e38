import Foundation
import PoseCore

/// UTKinect-Action3D (Xia, Chen & Aggarwal, CVPRW 2012): 20 continuous Kinect v1 recordings
/// (`joints/joints_sSS_eEE.txt`, subjects 01-10 x executions 01-02) and the labelled
/// intervals of `actionLabel.txt`, cut into one sequence per interval on `kinect-v1-20`.
///
/// - Rows are `frame_number x1 y1 z1 ... x20 y20 z20`. About 2 % of frame numbers appear
///   twice with slightly different joints; the first row is kept.
/// - A segment `action: start end` takes the rows whose frame numbers lie in `[start, end]`
///   (inclusive). The release's one `NaN NaN` segment (s10_e02 carry) is skipped with a
///   warning, giving 199 segments.
/// - Coordinates stay as the Kinect SDK gives them: metres in sensor space, x to the side, y up,
///   z the distance from the sensor. This is not the 2D image convention (y down); nothing is
///   flipped, so 3D features see the recorded geometry.
/// - Frames are stored only while the skeleton was tracked, so frame numbers jump (usually by
///   4, also 2, 6, 8). With the official "about 15 fps" this makes the frame-number clock 60
///   ticks per second: each sequence gets timestamps `(frame − first frame) / 60` s, and the
///   dataset's nominal rate is 15 fps, so resampling sees the real spacing.
/// - `group` is the subject (`s01`...), the id `sSS_eEE-<action>`. The split is the
///   cross-subject protocol with odd subjects training and even subjects testing (`split:
///   crossSubject`), or none.
public enum UTKinectImporter {
    public enum Split: String, Sendable { case crossSubject, none }

    public struct Options: Sendable {
        public var split: Split = .crossSubject
        /// Ticks of the frame-number clock per second (see the type's notes).
        public var frameNumberRate: Double = 60
        /// One sequence per recording (id `sSS_eEE`, no label) with its segments
        /// (`PoseSequence.segments`, in order of start) instead of one per segment.
        public var recordings = false
        public init(split: Split = .crossSubject) { self.split = split }
    }

    public static let classes = ["walk", "sitDown", "standUp", "pickUp", "carry", "throw", "push", "pull", "waveHands", "clapHands"]

    /// One line of actionLabel.txt.
    public struct Segment: Equatable, Sendable {
        public var recording: String
        public var action: String
        /// Inclusive frame-number bounds; nil when the file says NaN.
        public var start: Int?
        public var end: Int?
        public var line: Int
    }

    /// Parses actionLabel.txt: blocks of a recording name (`s01_e01`) followed by
    /// `action: start end` lines.
    public static func parseLabels(_ bytes: [UInt8], file: String) throws -> [Segment] {
        var segments: [Segment] = []
        var recording: String?
        try bytes.withUnsafeBufferPointer { b in
            try LineSplitter.forEachLine(in: b, file: file) { line, number in
                let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                if text.isEmpty { return }
                let at = SourceLocation(file: file, line: number)
                guard let colon = text.firstIndex(of: ":") else {
                    guard !text.contains(where: { $0 == " " || $0 == "\t" }) else {
                        throw DatasetError.syntax(at, expected: "a recording name (s01_e01) or 'action: start end'")
                    }
                    recording = text
                    return
                }
                guard let rec = recording else {
                    throw DatasetError.syntax(at, expected: "a recording name line (e.g. s01_e01) before the first segment")
                }
                let action = text[..<colon].trimmingCharacters(in: .whitespaces)
                let bounds = text[text.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard !action.isEmpty, bounds.count == 2 else {
                    throw DatasetError.syntax(at, expected: "'action: start end' with two frame numbers")
                }
                if bounds.allSatisfy({ $0.lowercased() == "nan" }) {
                    segments.append(Segment(recording: rec, action: action, start: nil, end: nil, line: number))
                    return
                }
                guard let s = Int(bounds[0]), let e = Int(bounds[1]), s >= 0 else {
                    throw DatasetError.syntax(at, expected: "two non-negative integer frame numbers (or NaN NaN)")
                }
                guard e >= s else {
                    throw DatasetError.invalidValue(at, problem: "the segment ends (\(e)) before it starts (\(s))", fix: "swap or fix the bounds")
                }
                segments.append(Segment(recording: rec, action: action, start: s, end: e, line: number))
            }
        }
        guard !segments.isEmpty else { throw DatasetError.empty(file: file) }
        return segments
    }

    /// One recording's rows, deduplicated: frame numbers and `[frames, 20, 3]` coordinates.
    static func readRecording(_ path: String) throws -> (numbers: [Int], coordinates: [Float]) {
        var numbers: [Int] = []
        var coords: [Float] = []
        coords.reserveCapacity(1 << 16)
        try LineSplitter.forEachLine(ofFile: path) { line, number in
            guard let p = line.baseAddress, !LineSplitter.isBlank(line) else { return }
            let n = line.count
            var i = 0
            var values = 0
            var frame = -1
            let base = coords.count
            var keep = true
            while true {
                while i < n && (p[i] == 0x20 || p[i] == 0x09) { i += 1 }
                if i >= n { break }
                guard let (v, next) = NumberParser.parseDouble(p, i, n), next == n || p[next] == 0x20 || p[next] == 0x09 else {
                    var e = i
                    while e < n && p[e] != 0x20 && p[e] != 0x09 { e += 1 }
                    throw DatasetError.invalidValue(
                        SourceLocation(file: path, line: number, column: i + 1),
                        problem: "'\(String(decoding: UnsafeBufferPointer(start: p + i, count: e - i), as: UTF8.self))' is not a number",
                        fix: "rows are a frame number and 60 coordinates")
                }
                if values == 0 {
                    guard v.rounded() == v, v >= 0, v < 1e9 else {
                        throw DatasetError.invalidValue(SourceLocation(file: path, line: number, column: 1), problem: "the frame number \(v) is not an integer", fix: "check the row")
                    }
                    frame = Int(v)
                    if let last = numbers.last {
                        if frame == last {
                            keep = false
                        }  // duplicate frame: keep the first row
                        else if frame < last {
                            throw DatasetError.notIncreasing(SourceLocation(file: path, line: number), what: "frame numbers", previous: Double(last), value: v)
                        }
                    }
                } else if keep {
                    guard v.isFinite else { throw DatasetError.nonFinite(SourceLocation(file: path, line: number, column: i + 1), what: "a coordinate") }
                    guard abs(v) <= Double(PoseBounds.maxCoordinate) else { throw PoseBounds.outOfRange(v, at: SourceLocation(file: path, line: number, column: i + 1)) }
                    if values <= 60 { coords.append(NumberParser.float(v, p, i, next)) }
                }
                values += 1
                i = next
            }
            guard values == 61 else {
                if keep { coords.removeSubrange(base...) }
                throw DatasetError.columnCount(SourceLocation(file: path, line: number), expected: 61, got: values)
            }
            if keep { numbers.append(frame) }
        }
        return (numbers, coords)
    }

    /// Imports the dataset from its folder (holding `actionLabel.txt` and `joints/`).
    /// Warnings (skipped segments) are returned beside the dataset.
    public static func read(_ root: String, options: Options = Options()) throws -> (Dataset, [DatasetWarning]) {
        let labelPath = (root as NSString).appendingPathComponent("actionLabel.txt")
        let segments = try parseLabels(try DatasetLoader.contents(of: labelPath), file: labelPath)
        var warnings: [DatasetWarning] = []
        var sequences: [PoseSequence] = []
        var recordings: [String: (numbers: [Int], coordinates: [Float])] = [:]
        var cuts: [(recording: String, action: String, first: Int, last: Int)] = []  // rows of each segment
        let J = 20, D = 3
        for seg in segments {
            let at = SourceLocation(file: labelPath, line: seg.line, record: "\(seg.recording)-\(seg.action)", recordKind: "segment")
            guard let start = seg.start, let end = seg.end else {
                warnings.append(DatasetWarning(at, "the segment's bounds are NaN (the release's known missing segment); skipped"))
                continue
            }
            if recordings[seg.recording] == nil {
                let path = (root as NSString).appendingPathComponent("joints/joints_\(seg.recording).txt")
                guard FileManager.default.fileExists(atPath: path) else {
                    throw DatasetError.cannotRead(file: path, reason: "no joints file for recording \(seg.recording) named in \(labelPath):\(seg.line)")
                }
                recordings[seg.recording] = try readRecording(path)
            }
            let rec = recordings[seg.recording]!
            let first = rec.numbers.firstIndex { $0 >= start } ?? rec.numbers.count
            let last = (rec.numbers.lastIndex { $0 <= end } ?? -1) + 1
            guard last > first else {
                warnings.append(DatasetWarning(at, "no tracked frames between frame numbers \(start) and \(end); skipped"))
                continue
            }
            let count = last - first
            cuts.append((seg.recording, seg.action, first, last - 1))
            let subject = String(seg.recording.prefix(3))
            var split: String? = nil
            if options.split == .crossSubject, let n = Int(subject.dropFirst()) { split = n % 2 == 1 ? "train" : "test" }
            let t0 = Double(rec.numbers[first])
            sequences.append(
                PoseSequence(
                    id: "\(seg.recording)-\(seg.action)", label: seg.action, group: subject, split: split, jointCount: J,
                    dimensions: D, frameCount: count, coordinates: Array(rec.coordinates[(first * J * D)..<(last * J * D)]),
                    present: [UInt8](repeating: 1, count: count * J),
                    timestamps: rec.numbers[first..<last].map { (Double($0) - t0) / options.frameNumberRate }))
        }
        var seen: [String: Int] = [:]
        for s in sequences {
            if let line = seen.updateValue(0, forKey: s.id) {
                _ = line
                throw DatasetError.invalidValue(
                    SourceLocation(file: labelPath, record: s.id, recordKind: "segment"), problem: "the recording labels this action twice",
                    fix: "give each action once per recording")
            }
        }
        let labels = Set(sequences.compactMap(\.label))
        let classes = classes.filter { labels.contains($0) } + labels.subtracting(classes).sorted()
        guard !sequences.isEmpty else { throw DatasetError.empty(file: labelPath) }
        if options.recordings {
            // Each recording whole, its segments at the frames the segment sequences were cut from.
            var whole: [PoseSequence] = []
            for name in recordings.keys.sorted() {
                let rec = recordings[name]!, n = rec.numbers.count, subject = String(name.prefix(3))
                var split: String? = nil
                if options.split == .crossSubject, let k = Int(subject.dropFirst()) { split = k % 2 == 1 ? "train" : "test" }
                let t0 = Double(rec.numbers[0])
                var s = PoseSequence(
                    id: name, label: nil, group: subject, split: split, jointCount: J, dimensions: D, frameCount: n, coordinates: rec.coordinates,
                    present: [UInt8](repeating: 1, count: n * J), timestamps: rec.numbers.map { (Double($0) - t0) / options.frameNumberRate })
                s.segments = cuts.filter { $0.recording == name }.map { LabeledSegment(label: $0.action, start: $0.first, end: $0.last) }
                    .sorted { ($0.start, $0.end) < ($1.start, $1.end) }
                whole.append(s)
            }
            return (Dataset(name: "utkinect-action3d-recordings", skeleton: .kinectV1, sequences: whole, classes: classes, frameRate: 15), warnings)
        }
        return (Dataset(name: "utkinect-action3d", skeleton: .kinectV1, sequences: sequences, classes: classes, frameRate: 15), warnings)
    }
}
