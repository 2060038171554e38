import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

/// Why a fit run cannot start, continue or finish. Messages name files, folders and config
/// keys (`the config's epochs`), never command-line flags: the CLI adds those where it helps.
public enum FitError: Error, Equatable, CustomStringConvertible {
    /// Every sequence is in the test split.
    case noTrainingSequences(dataset: String)
    /// The training sequences give no window (e.g. all shorter than the window and no padding).
    case noTrainingWindows(dataset: String, sequences: Int)
    /// The configured network cannot take the input (e.g. too many strided layers).
    case networkDoesNotFit(architecture: String, input: String, reason: String)
    /// The run folder path exists and is a file.
    case runFolderIsAFile(String)
    /// The run folder already holds files and replacing them was not asked for.
    case runFolderNotEmpty(String)
    /// Another process writes the run folder (`FolderLock`); `holder` names it.
    case runFolderInUse(String, holder: String)
    case cannotCreateFolder(String, reason: String)
    /// `folder` has no checkpoint to resume from.
    case noCheckpoint(folder: String)
    /// The checkpoint does not record its dataset and none was given.
    case checkpointNamesNoDataset(checkpoint: String)
    /// The dataset's content hash differs from the one recorded in the checkpoint.
    case datasetChanged(dataPath: String, hash: String, checkpointHash: String)
    /// The dataset's class list, frame rate, timestamps, confidences or image sizes differ
    /// from the run's (`Dataset.detailHash`), though its poses and labels do not.
    case datasetDetailsChanged(dataPath: String)
    /// Config fields that a resumed run may not change (they change the model or the data).
    case changedOnResume(keys: [String])
    /// The checkpoint's state does not fit the network built from its config.
    case incompatibleCheckpoint(checkpoint: String, reason: String)
    /// Training diverged. `lastGoodEpoch` is the epoch whose checkpoint is intact at
    /// `checkpoint` (nil when no checkpoint was written, or no run folder is kept).
    case diverged(TrainingError, checkpoint: String?, lastGoodEpoch: Int?)
    /// A temperature cannot be folded into the network (`ModelCalibration.scaled`).
    case cannotCalibrate(reason: String)
    /// The trained network's outputs on `on` (e.g. "the validation windows") are NaN or
    /// infinite although every training loss was finite: its weights grew out of range.
    case outputsNotFinite(on: String)

    public var description: String {
        switch self {
        case .noTrainingSequences(let d): return "\(d): no training sequences (every sequence is in the test split)"
        case .noTrainingWindows(let d, let n):
            return "\(d): no training windows from \(n) training sequences; check the config's windowFrames and the data"
        case .networkDoesNotFit(let a, let input, let why): return "the \(a) model does not fit the input \(input): \(why)"
        case .runFolderIsAFile(let dir): return "\(dir) exists and is not a folder; choose another run folder"
        case .runFolderNotEmpty(let dir): return "\(dir) already holds a run; replace it, resume it or choose another run folder"
        case .runFolderInUse(let dir, let holder): return FolderLock.Busy(folder: dir, holder: holder).description
        case .cannotCreateFolder(let dir, let why): return "\(dir): cannot create the run folder: \(why)"
        case .noCheckpoint(let dir): return "\(dir): no \(RunFolder.checkpointName) to resume from"
        case .checkpointNamesNoDataset(let path): return "\(path): the checkpoint does not name its dataset; give the dataset to resume with"
        case .datasetChanged(let path, let hash, let old):
            return "\(path): the dataset changed since the run started (content hash \(hash), the checkpoint has \(old)); resume with the original data or start a new run"
        case .datasetDetailsChanged(let path):
            return "\(path): the dataset's class list, frame rate, timestamps, confidences or image sizes changed since the run started (its poses and labels did not); resume with the original data or start a new run"
        case .changedOnResume(let keys):
            return "the config's \(keys.joined(separator: ", ")) cannot change when resuming (it changes the model or the data); start a new run instead"
        case .incompatibleCheckpoint(let path, let why): return "\(path): \(why)"
        case .cannotCalibrate(let why): return "cannot calibrate the model: \(why)"
        case .outputsNotFinite(let on):
            return "training diverged: the trained network's outputs on \(on) are NaN or infinite (its weights grew out of range, although the training loss stayed finite); no model was written; lower the learning rate or set gradientClipNorm"
        case .diverged(let e, let checkpoint, let epoch):
            guard let checkpoint else { return "\(e.description); start again with a lower learning rate" }
            guard let epoch else {
                return "\(e.description); no checkpoint was written (it diverged in the first epoch); start again with a lower learning rate"
            }
            return "\(e.description); the last good checkpoint (end of epoch \(epoch)) is intact in \(checkpoint); resume from it with a lower learning rate"
        }
    }
}

/// Something a fit run noticed that does not stop it. Delivered as values (`FitRun.warnings`,
/// `FitResult.warnings`); the caller decides how to show them.
public enum FitWarning: Equatable, Sendable, CustomStringConvertible {
    /// A problem `Lint` found in the dataset.
    case lint(LintWarning)
    /// A class missing from one side of the train/validation split.
    case split(SplitWarning)
    /// The model is written but its validation report could not be made.
    case noValidationReport(String)
    /// More than half of the training windows' frames are padding.
    case mostlyPadding(share: Double, windowFrames: Int)
    /// Classes with fewer than `FitRun.tinyClass` training sequences, as "name (count)".
    case tinyClasses([String])
    /// A validation split too small to choose an epoch from.
    case smallValidation(sequences: Int, classes: Int)
    /// The final training loss is clearly above its minimum.
    case lossAboveMinimum(final: Double, minimum: Double, epoch: Int)
    /// Temporary files that interrupted writes left in the run folder, removed on resume.
    case removedTemporaryFiles(folder: String, names: [String])
    /// The final accuracy is at chance level (`RunChecks.chanceLevelWarning`: why, and the likely cause).
    case chanceLevel(String)
    /// A convolution over time (`tcn`, `stgcn`) whose kernel spans more frames than the window.
    case kernelLongerThanWindow(kernel: Int, windowFrames: Int)

    public var description: String {
        switch self {
        case .lint(let w): return "[\(w.code)] \(w)"
        case .split(let w): return w.description
        case .noValidationReport(let why): return "no validation report: \(why)"
        case .kernelLongerThanWindow(let k, let w):
            return "[kernel-longer-than-window] the kernel spans \(k) frames and the window \(w): each convolution over time reads mostly padding; set the config's kernel below windowFrames (e.g. 5, the default)"
        case .mostlyPadding(let share, let frames):
            return "[mostly-padding] \(Int((share * 100).rounded()))% of the training windows' frames are padding: most sequences are shorter than the \(frames)-frame window; set the config's windowMode to fit (each sequence resampled to one window) or a smaller windowFrames"
        case .tinyClasses(let classes):
            return "[tiny-classes] \(classes.joined(separator: ", ")) training sequences: too few to learn a class from; collect more, or merge or drop these classes (classWeights \"balanced\" only reweights the loss)"
        case .smallValidation(let n, let k):
            return "[small-validation] the validation split has \(n) sequences of \(k) classes, too few to choose an epoch from; set the config's validationFraction to 0 (every sequence trains, the decaying schedule ends the run) or give a larger validation split"
        case .lossAboveMinimum(let last, let best, let epoch):
            return String(
                format: "[loss-above-minimum] the final training loss %.3f is well above its minimum %.3f at epoch %d: the last epochs got worse; use a decaying schedule (schedule cosine), weight averaging (averageEpochs), a lower learningRate or fewer epochs",
                last, best, epoch)
        case .removedTemporaryFiles(let folder, let names):
            return "[temporary-files] removed \(names.map { "\(folder)/\($0)" }.joined(separator: ", ")), left by an interrupted write"
        case .chanceLevel(let why): return "[chance-level] \(why)"
        }
    }
}

/// Why an evaluation cannot run. Messages name the data file and split, never a flag.
public enum EvaluationError: Error, Equatable, CustomStringConvertible {
    /// The dataset's skeleton is not the model's: `reason` names the first joint that differs
    /// (`Skeleton.mismatch(data:)`).
    case skeletonMismatch(dataPath: String, reason: String)
    /// The dataset has labels the model does not know.
    case unknownLabels(dataPath: String, labels: [String], classes: [String])
    /// No sequence is in the requested split.
    case noSequences(dataPath: String, split: String?, present: [String])
    /// Eval refused the predictions (e.g. an empty evaluation set).
    case report(dataPath: String, split: String?, EvalError)
    /// `eval --events`: no sequence of the split has labelled segments.
    case noSegments(dataPath: String, split: String?)
    /// `eval --events`: a sequence could not be played as a stream (`reason` says why).
    case stream(dataPath: String, sequence: String, reason: String)

    public var description: String {
        switch self {
        case .skeletonMismatch(let path, let why): return "\(path): \(why)"
        case .unknownLabels(let path, let labels, let classes):
            return "\(path): labels \(labels) are not among the model's classes \(classes)"
        case .noSequences(let path, let split, let present):
            guard !present.isEmpty else {
                return "\(path): no sequences in split '\(split ?? "")': the data gives no splits; omit the split to use every sequence"
            }
            return "\(path): no sequences in split '\(split ?? "")'; splits present: \(present)"
        case .report(let path, let split, let e): return "\(path) (split \(split ?? "all")): \(e)"
        case .noSegments(let path, let split):
            return
                "\(path) (split \(split ?? "all")): no sequence has labelled segments (\"segments\", docs/datasets.md); scripts/stream-events makes such streams from a dataset's clips, and the UTKinect importer its recordings whole (docs/datasets.md, \"Segments\")"
        case .stream(let path, let sequence, let why): return "\(path): sequence '\(sequence)': \(why)"
        }
    }
}

/// A file that could not be written (`path: cannot write: reason`).
public typealias WriteError = AtomicWrite.WriteError
