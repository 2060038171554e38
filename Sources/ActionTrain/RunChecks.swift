import Foundation
import PoseCore

/// Checks around a training run that keep it from failing late or ending silently wrong:
/// before training, that the validation data it will be scored on exists; after training, that
/// its accuracy is above chance; and after the model file is written, that a failure leaves
/// no model behind that looks like a finished run's.
public enum RunChecks {
    /// Before training: validation sequences that give no windows (all empty, say) would make
    /// every epoch's validation metrics undefined and the run fail after its last epoch.
    /// `sequences` and `windows` are the validation set's; 0 sequences means no validation.
    public static func checkValidationWindows(dataset: String, sequences: Int, windows: Int, windowFrames: Int) throws {
        guard sequences > 0, windows == 0 else { return }
        throw TrainingError.needsValidation(
            "\(dataset): the \(sequences) validation sequence\(sequences == 1 ? "" : "s") give no windows of \(windowFrames) frames "
                + "(are they empty?); give validation sequences with frames, or train without validation (validationFraction 0 "
                + "and no validation split)")
    }

    /// Before training: the data's frame rate goes into the model file as `trainingFrameRate`,
    /// which readers bound (docs/format.md 2.1); refused here rather than after the last epoch.
    public static func checkDataFrameRate(_ rate: Double?, dataset: String) throws {
        guard let rate, !WindowSpec.frameRates.contains(rate) else { return }
        throw TrainingError.noTrainingData(
            "\(dataset): the data's frame rate \(rate) fps is outside 0.01 to 10000, the range a model file holds (docs/format.md 2.1); "
                + "fix the dataset's frameRate")
    }

    /// The accuracy of always answering the most frequent label: the chance level of a
    /// classifier scored on windows with `labels` (each in `0..<classes`).
    public static func chanceAccuracy(labels: [Int], classes: Int) -> Double {
        guard !labels.isEmpty else { return 0 }
        var counts = [Int](repeating: 0, count: max(classes, 1))
        for l in labels where l >= 0 && l < counts.count { counts[l] += 1 }
        return Double(counts.max()!) / Double(labels.count)
    }

    /// After training: a warning when `accuracy`, measured on windows with `labels` (`set` names
    /// them: "validation" or "training"), is at chance level — not above the most frequent
    /// label's share `p` by two standard errors of a constant guess, `2·√(p(1−p)/n)` — naming
    /// the likely cause from the epoch records; nil otherwise.
    ///
    /// Causes, in order: the last training loss is above 2 ln K, far worse than answering every
    /// class with probability 1/K (a diverged or saturated network: the learning rate
    /// `learningRate` is likely too high); the training loss never fell below its first epoch's (a learning
    /// rate too high or too low); the training accuracy is well above chance while the `set`
    /// accuracy is not (the model does not generalise); otherwise too little training or
    /// inputs that do not tell the classes apart.
    public static func chanceLevelWarning(
        accuracy: Double, set: String, labels: [Int], classes: Int, records: [EpochRecord], learningRate: Double
    ) -> String? {
        let n = Double(labels.count)
        guard n > 0, classes > 1, accuracy.isFinite else { return nil }
        let p = chanceAccuracy(labels: labels, classes: classes)
        let threshold = p + 2 * (p * (1 - p) / n).squareRoot()
        guard accuracy <= threshold else { return nil }
        var text = String(
            format: "the final %@ accuracy %.3f is not above chance level (always answering the most frequent label scores %.3f on these %d windows): ",
            set, accuracy, p, labels.count)
        let lr = String(format: "%g", learningRate), uniform = log(Double(classes))
        if let last = records.last, !(last.trainLoss <= 2 * uniform) {
            text += String(
                format: "the last training loss %.4g is more than twice that of answering every class with probability 1/%d "
                    + "(%.4g), so the network diverged or saturated. The learning rate %@ is likely too high; try it 10 times lower, "
                    + "or set gradientClipNorm",
                last.trainLoss, classes, uniform, lr)
        } else if let first = records.first, let last = records.last, records.count >= 2, !(last.trainLoss < first.trainLoss) {
            text += String(
                format: "the training loss did not fall (epoch %d: %.4g, epoch %d: %.4g). The learning rate %@ is likely too high "
                    + "or too low; try it 10 times lower and 10 times higher",
                first.epoch, first.trainLoss, last.epoch, last.trainLoss, lr)
        } else if let last = records.last, set != "training", last.trainAccuracy > threshold + 0.1 {
            text += String(
                format: "the training accuracy reached %.3f, so the model does not generalise to these windows: check that "
                    + "the validation data is like the training data (subjects, cameras, skeleton), and add augmentation",
                last.trainAccuracy)
        } else {
            text +=
                "the model has learned little: train for more epochs or with a higher learning rate than \(lr), "
                + "and check that the inputs tell the classes apart (labels, preprocessing)"
        }
        return text
    }
}

extension RunChecks {
    /// A failure after a run wrote its model file: the model was moved aside (`movedTo`), or
    /// could not be and is still at `modelPath`.
    public struct FailedAfterModel: Error, CustomStringConvertible {
        /// The error that ended the run, as text.
        public var reason: String
        public var modelPath: String
        public var movedTo: String?

        public var description: String {
            if let movedTo {
                return "\(reason). The run failed after writing its model: the model file was moved to \(movedTo) so that nothing "
                    + "takes it for a finished run's; check it before any use"
            }
            return "\(reason). The run failed after writing its model, and \(modelPath) exists: do not use it before checking it"
        }
    }

    /// Where a failed run's model goes: `model.failed.atm` beside `model.atm`.
    public static func failedModelPath(for modelPath: String) -> String {
        let url = URL(fileURLWithPath: modelPath)
        let ext = url.pathExtension
        let base = url.deletingPathExtension().lastPathComponent + ".failed" + (ext.isEmpty ? "" : ".\(ext)")
        return url.deletingLastPathComponent().appendingPathComponent(base).path
    }

    /// Runs `body`, what a run does after writing its model file at `modelPath` (reports,
    /// checks). When it throws, the model file is renamed to `failedModelPath(for:)` and a
    /// `FailedAfterModel` carrying the error is thrown instead: a failed run never leaves a
    /// model that looks like a finished run's without saying so.
    public static func afterWritingModel<R>(at modelPath: String, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch {
            let target = failedModelPath(for: modelPath)
            let moved = rename(modelPath, target) == 0
            throw FailedAfterModel(reason: String(describing: error), modelPath: modelPath, movedTo: moved ? target : nil)
        }
    }
}
