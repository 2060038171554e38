import Foundation
import PoseCore

/// Checks between reading data and using it, for `fit`, `eval` and `predict` (issue 13, guard
/// rails): each is a small function the commands call, so that a useless model or a
/// misleading evaluation is stopped or named before any work is done.
public enum Guards {
    /// A classifier needs two classes among its training sequences: otherwise `fit` would
    /// write a model that always answers the one class.
    public static func requireTwoClasses(_ dataset: Dataset, training indices: [Int], file: String) throws {
        let labels = Dataset.classesInOrderOfAppearance(indices.map { dataset.sequences[$0] })
        guard labels.count < 2 else { return }
        let what = labels.isEmpty ? "no labelled sequence" : "only class '\(labels[0])'"
        throw DatasetError.invalidValue(
            SourceLocation(file: file),
            problem: "the \(indices.count) training sequence(s) hold \(what); a classifier needs at least two classes",
            fix: "add sequences of another class (e.g. an 'other' class of non-actions), or check the labels and the split")
    }

    /// What `fit` needs of its training sequences before it cuts a window, each refused with
    /// what is wrong and the fix (docs/bad-input.md): some training sequences (a data split
    /// without `train` gives none); a label on every one (an unlabeled sequence has no class to
    /// learn); two classes (`requireTwoClasses`); every class of the class list among them (a
    /// class the network never sees still gets an output, which then says nothing; a listed
    /// class with only test sequences, or 10,000 classes in a header for 3 used, would train
    /// that silently); and a present joint in some frame (all joints absent, as a too high
    /// `--min-confidence` makes, leaves nothing to learn). `everyClass` false leaves out the
    /// class-list check, for the training part of a cross-validation fold (a fold may miss a
    /// rare class that the whole training split has).
    public static func requireTrainable(_ dataset: Dataset, training indices: [Int], file: String, everyClass: Bool = true) throws {
        let at = SourceLocation(file: file)
        guard !indices.isEmpty else {
            var splits: [String: Int] = [:]
            for s in dataset.sequences { splits[s.split ?? "(none)", default: 0] += 1 }
            let list = splits.keys.sorted().map { "\($0) \(splits[$0]!)" }.joined(separator: ", ")
            throw DatasetError.invalidValue(
                at, problem: "no training sequences: the \(dataset.sequences.count) sequences are in the splits \(list), none in 'train'",
                fix: "mark the sequences to train on with \"split\": \"train\" (or give no split at all: then every sequence trains)")
        }
        let unlabeled = indices.filter { dataset.sequences[$0].label == nil }
        if let first = unlabeled.first {
            throw DatasetError.invalidValue(
                SourceLocation(file: file, record: dataset.sequences[first].id),
                problem: "\(unlabeled.count) of the \(indices.count) training sequences have no label",
                fix: "give every training sequence a \"label\", or put unlabeled ones in the test split (predict runs on them)")
        }
        try requireTwoClasses(dataset, training: indices, file: file)
        let trained = Set(indices.compactMap { dataset.sequences[$0].label })
        let missing = everyClass ? dataset.classes.filter { !trained.contains($0) } : []
        if !missing.isEmpty {
            var elsewhere: [String: Int] = [:]
            for s in dataset.sequences { if let l = s.label, !trained.contains(l) { elsewhere[l, default: 0] += 1 } }
            let named = missing.prefix(5).map { c in
                guard let n = elsewhere[c] else { return "'\(c)' (no sequence at all)" }
                return "'\(c)' (\(n) sequence\(n == 1 ? "" : "s"), none training)"
            }
            let more = missing.count > 5 ? " and \(missing.count - 5) more" : ""
            throw DatasetError.invalidValue(
                at,
                problem: "\(missing.count) of the \(dataset.classes.count) classes \(missing.count == 1 ? "has" : "have") no training sequence: \(named.joined(separator: ", "))\(more); "
                    + "the model would have an output for each that it never learned",
                fix: "add training sequences of \(missing.count == 1 ? "it" : "them"), or remove \(missing.count == 1 ? "it" : "them") from the header's \"classes\" (and relabel or drop their sequences)")
        }
        guard indices.contains(where: { dataset.sequences[$0].frameCount > 0 }) else {
            throw DatasetError.invalidValue(
                at, problem: "the \(indices.count) training sequences have no frames", fix: "give each sequence its frames (\"frames\": [...])")
        }
        let seen = indices.contains { i in dataset.sequences[i].present.contains { $0 != 0 } }
        guard seen else {
            throw DatasetError.invalidValue(
                at, problem: "no joint is present in any frame of the \(indices.count) training sequences: there is nothing to learn from",
                fix: "check the joint names and the confidences (points at or below the minimum confidence are absent)")
        }
    }

    /// How much of the windows a model sees is padding (frames a short sequence does not
    /// have). Windows cut by `fit` mode or centred on events inside long sequences have none.
    public struct PaddingTally: Equatable, Sendable {
        public var windows = 0
        public var windowFrames = 0
        public var paddedFrames = 0
        /// Windows with any padding (sequences shorter than the window).
        public var paddedWindows = 0

        public init() {}

        /// Counts one window of `frames` frames of which `real` come from the sequence.
        public mutating func add(frames: Int, real: Int) {
            windows += 1
            windowFrames += frames
            let padded = max(0, frames - real)
            paddedFrames += padded
            if padded > 0 { paddedWindows += 1 }
        }

        /// The padded share of all window frames.
        public var share: Double { windowFrames == 0 ? 0 : Double(paddedFrames) / Double(windowFrames) }

        /// A warning when more than `threshold` of the window frames are padding.
        public func warning(windowLength: Int, threshold: Double = 0.5) -> String? {
            guard share > threshold else { return nil }
            return String(format: "%.0f%%", share * 100)
                + " of the window frames are padding (\(paddedWindows) of \(windows) windows come from sequences shorter than the \(windowLength)-frame window); "
                + "the model mostly sees padding: use a shorter window (windowFrames, or the window in seconds) or windowMode fit"
        }
    }

    /// The padding of every window of `windows` (`WindowSource.paddedFrames`).
    public static func padding(of windows: WindowSet) -> PaddingTally {
        var t = PaddingTally()
        let F = windows.spec.window.frames
        for s in windows.sources { t.add(frames: F, real: F - s.paddedFrames) }
        return t
    }

    /// Window length in frames for `seconds` of data: `round(seconds · rate)` with the rate the
    /// windows are cut at (`resampleRate` when sequences are resampled), else the dataset's
    /// frame rate, else the median rate of its timestamps.
    public static func windowFrames(seconds: Double, dataset: Dataset, resampleRate: Double?) throws -> Int {
        guard seconds.isFinite, seconds > 0 else {
            throw DatasetError.invalidValue(SourceLocation(file: dataset.name), problem: "the window length \(seconds) s is not positive", fix: "give seconds > 0")
        }
        var rate = resampleRate ?? dataset.frameRate
        if rate == nil {
            let rates = dataset.sequences.compactMap { s -> Double? in
                guard let ts = s.timestamps, ts.count > 1 else { return nil }
                let step = Lint.median((1..<ts.count).map { ts[$0] - ts[$0 - 1] })
                return step > 0 ? 1 / step : nil
            }
            if !rates.isEmpty { rate = Lint.median(rates) }
        }
        guard let rate else {
            throw DatasetError.invalidValue(
                SourceLocation(file: dataset.name), problem: "the data has no frame rate or timestamps, so \(seconds) s is no number of frames",
                fix: "give the frame rate (the header's frameRate, or the frameRate config key) or the window in frames (windowFrames)")
        }
        let frames = (seconds * rate).rounded()  // compared as a Double: an Int may not hold it
        guard frames >= 1, frames <= Double(InputSpec.maxFrames) else {
            throw DatasetError.invalidValue(
                SourceLocation(file: dataset.name), problem: "\(seconds) s at \(rate) fps is \(frames < 1e15 ? "\(Int(frames))" : "\(frames)") frames",
                fix: "give a window of 1 to \(InputSpec.maxFrames) frames")
        }
        return Int(frames)
    }

    /// When a command that takes `MODEL DATA` got a dataset as MODEL and a model file as DATA:
    /// the message that says so; nil otherwise.
    public static func swappedArguments(model: String, data: String) -> String? {
        let modelLooksLikeData = DatasetLoader.Format(extension: URL(fileURLWithPath: model).pathExtension) != nil
        let dataIsModel = URL(fileURLWithPath: data).pathExtension.lowercased() == "atm" || DatasetLoader.startsWithModelMagic(data)
        guard modelLooksLikeData && dataIsModel else { return nil }
        return "\(model) is a dataset and \(data) a model file: the arguments are swapped; give MODEL first, then DATA"
    }
}
