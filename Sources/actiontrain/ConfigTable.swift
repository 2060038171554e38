import ActionTrain
import Datasets
import Foundation
import PoseCore

/// The training options shared by the config file and the CLI: each flag `--kebab-name`
/// overrides the config key `camelName`. This table is their one declaration: it serves the
/// config file's checks, the flags (`ConfigOptions.options`), help and the docs
/// (docs/training.md lists the same keys; a test keeps the table and `TrainingConfig` in step).
enum ConfigOptions {
    enum Kind {
        case int, number, string, bool, intList, numberList, stringList
        /// A list of lists of strings; on the command line `a+b,c` (lists joined by `+`).
        case stringLists
        /// A list of `{"architecture": name, "channels": [blocks]}`; on the command line
        /// `tcn:coordinates+mask+bones,ftp:relativePositions`.
        case members
        /// `none`, `balanced` or a list of numbers.
        case classWeights
        /// An object of augmentation keys and numbers (docs/preprocessing.md); on the command
        /// line `key=value,key=value`.
        case augmentation

        var expectation: String {
            switch self {
            case .int: return "an integer"
            case .number: return "a number"
            case .string: return "a string"
            case .bool: return "true or false"
            case .intList: return "a list of integers"
            case .numberList: return "a list of numbers"
            case .stringList: return "a list of strings"
            case .stringLists: return "a list of lists of strings (a+b,c on the command line)"
            case .members: return "a list of {\"architecture\": name, \"channels\": [blocks]} (tcn:coordinates+mask,ftp:relativePositions on the command line)"
            case .classWeights: return "\"none\", \"balanced\" or a list of numbers"
            case .augmentation: return "an object of augmentation keys and numbers (key=value,... on the command line)"
            }
        }
    }

    struct Entry {
        let key: String
        let kind: Kind
        let value: String
        let help: String
        /// Allowed values of a string (or each item of a string list); empty = any.
        var choices: [String] = []
        /// A valid flag value, for the tests that parse every option.
        var sample: String {
            switch kind {
            case .int: return "7"
            case .number: return "0.125"
            case .string: return choices.last ?? "sample"
            case .bool: return "true"
            case .intList: return "3,5"
            case .numberList: return "0.5,120"
            case .stringList: return choices.last ?? "sample"
            case .stringLists: return (choices.first ?? "a") + "+" + (choices.last ?? "b") + "," + (choices.last ?? "b")
            case .members: return "tcn:coordinates+mask,ftp:relativePositions"
            case .classWeights: return "balanced"
            case .augmentation: return "flipProbability=0.5"
            }
        }
        var flag: String {
            key.reduce(into: "") { s, c in
                if c.isUppercase { s += "-" + c.lowercased() } else { s.append(c) }
            }
        }
    }

    static func names<T: CaseIterable & RawRepresentable>(_: T.Type) -> [String] where T.RawValue == String {
        T.allCases.map(\.rawValue)
    }

    static let entries: [Entry] = [
        // Model
        Entry(key: "views", kind: .string, value: "WHERE", help: "Where the cameras the model will see stand: auto (anywhere; 3D bodies are turned to face one way and tilted up to ±30° in training, 2D bodies shown from cameras moved up to ±90°), same (where the training cameras stood; bodies kept as recorded), other (elsewhere; also wider turns in the augmentation where bodies cannot be turned) (default auto). Read by the recipe.", choices: names(TrainingConfig.Views.self)),
        Entry(key: "recipe", kind: .string, value: "NAME", help: "auto: keys you do not set are chosen from the data (windows, normalisation, channels, regularisation; printed before training); none: the plain defaults (default auto).", choices: names(TrainingConfig.RecipeMode.self)),
        Entry(key: "architecture", kind: .string, value: "NAME", help: "Model family: mlp (over the flattened window), tcn (temporal convolution), stgcn (graph convolution over the skeleton's joints, then over time) or ftp (Fourier temporal pyramid of each channel, standardised, linear) (default tcn).", choices: names(TrainingConfig.Architecture.self)),
        Entry(key: "hidden", kind: .intList, value: "N,N", help: "MLP hidden widths (default 256,128)."),
        Entry(key: "widths", kind: .intList, value: "N,N", help: "TCN and ST-GCN block widths (ST-GCN: channels per joint); the depth is their count (default 64,64,64)."),
        Entry(key: "kernel", kind: .int, value: "N", help: "TCN and ST-GCN kernel size in frames, odd (default 5)."),
        Entry(key: "graph", kind: .stringLists, value: "LISTS", help: "ST-GCN joint graph: edges as joint-name pairs (a+b,b+c) (default: the skeleton's bones; the recipe infers a tree from the data when it has none)."),
        Entry(key: "mirrorPairs", kind: .stringLists, value: "LISTS", help: "Left/right mirror pairs (left+right,left+right) of a skeleton that names none: flips, alignFacing and testTimeFlip use them, the model's skeleton keeps them (default: none; the recipe infers them from the inferred tree when the skeleton names no bones)."),
        Entry(key: "pyramid", kind: .intList, value: "N,N", help: "TCN and ST-GCN pooling over time: the levels of a temporal pyramid, e.g. 1,2,4 (means over the window, its halves and quarters) (default: none, the global mean); the ftp architecture's segments (default for it 1,2,4)."),
        Entry(key: "memberAverage", kind: .string, value: "HOW", help: "How members (or streams) are combined: logProbabilities (the mean of their log-probabilities, a geometric mean of their probabilities) or probabilities (the mean of their probabilities) (default logProbabilities).", choices: names(TrainingConfig.MemberAverage.self)),
        Entry(key: "linearHead", kind: .string, value: "HOW", help: "A network or member whose only parameters are its last linear layer (ftp; an MLP without hidden layers): solve (an L2-regularised logistic regression solved to its optimum, its penalty chosen by cross-validation on the training split) or train (by the optimiser, with the rest) (default solve).", choices: names(TrainingConfig.LinearHead.self)),
        Entry(key: "linearPenalty", kind: .number, value: "L", help: "The L2 penalty of a solved linear head, per unit of the mean training loss (default: chosen by cross-validation)."),
        Entry(key: "linearHeadCopies", kind: .int, value: "N", help: "Augmented copies of each training window that a solved linear head also fits, as extra rows (each augmented by the run's augmentation), 0 to 16, at most as many as keep 1,250 rows (default 0; the recipe sets 4 where it imitates other cameras for 2D data)."),
        Entry(key: "calibration", kind: .string, value: "HOW", help: "How the model's probabilities are calibrated: temperature (one temperature dividing its logits, or each averaged member's, fitted by log loss on the validation windows, or without validation sequences on out-of-fold predictions of the training split; the predicted class is unchanged unless members' probabilities are averaged) or none (default temperature).", choices: names(TrainingConfig.Calibration.self)),
        Entry(key: "switchEvidence", kind: .number, value: "SCORE-SECONDS", help: "Events from frames: the lead another class must gather to end an event and start one without rest, written into the model (0 to 3600; default none written: readers use 0.3; larger for streams whose actions mostly follow rest, docs/streaming.md)."),
        Entry(key: "calibrationFolds", kind: .int, value: "N", help: "Without validation sequences: the group-aware folds of the out-of-fold predictions a temperature is fitted on, 2 to 10; the network is trained again on the rest of each, in turn until 400 windows are predicted (default 3)."),
        Entry(key: "ftpCoefficients", kind: .int, value: "N", help: "ftp architecture: frequencies per segment of its Fourier temporal pyramid, DC included, 1 to 64 (default 4)."),
        Entry(key: "dilationBase", kind: .int, value: "N", help: "TCN block i has dilation N^i: 1 = none, 2 = 1,2,4,... (default 2)."),
        Entry(key: "residual", kind: .bool, value: "BOOL", help: "TCN blocks are residual (two convolutions + shortcut) or plain (one convolution) (default true)."),
        Entry(key: "activation", kind: .string, value: "NAME", help: "relu or gelu (default relu).", choices: names(TrainingConfig.Activation.self)),
        Entry(key: "normalization", kind: .string, value: "NAME", help: "none or layerNorm after each linear/convolution (default layerNorm).", choices: names(TrainingConfig.Normalization.self)),
        Entry(key: "dropout", kind: .number, value: "P", help: "Dropout rate after hidden activations, in [0, 1) (default 0.1)."),
        Entry(key: "streams", kind: .stringLists, value: "LISTS", help: "Multi-stream model: one member per list of channel blocks (e.g. coordinates,bones,motion; blocks of one member joined by +), each the architecture over its blocks, probabilities averaged in one model file; the input holds their blocks instead of channels (default: none, one network).", choices: names(ChannelBlock.self)),
        Entry(key: "members", kind: .members, value: "LIST", help: "Model of mixed members: each an architecture over its own channel blocks (tcn:coordinates+mask+bones,ftp:relativePositions; in a config file [{\"architecture\": \"ftp\", \"channels\": [\"relativePositions\"]}, ...]), every other key shared, probabilities averaged in one model file; the input holds their blocks instead of channels; not with streams (default: none, one network)."),
        Entry(key: "testTimeFlip", kind: .bool, value: "BOOL", help: "The model written averages its probabilities on each window and its mirror image (left/right swapped, x negated); needs mirrorPairs and centring (default false)."),
        Entry(key: "ensemble", kind: .int, value: "N", help: "Train N networks one after another, each from its own seed (member 1 from the run's seed) with its own best epoch; the model written averages their probabilities (1 to 16, default 1)."),
        // Data
        Entry(key: "windowFrames", kind: .int, value: "N", help: "Window length in frames (default 45)."),
        Entry(key: "windowStride", kind: .int, value: "N", help: "Frames between training window starts (default 15)."),
        Entry(key: "windowMode", kind: .string, value: "MODE", help: "sliding (fixed windows, short sequences padded) or fit (each sequence resampled to one window) (default sliding).", choices: names(WindowSpec.Mode.self)),
        Entry(key: "frameRate", kind: .number, value: "FPS", help: "Resample sequences to this frame rate first (default: keep recorded frames)."),
        Entry(key: "channels", kind: .stringList, value: "LIST", help: "Per-frame feature blocks: \(names(ChannelBlock.self).joined(separator: ", ")) (default coordinates,mask).", choices: names(ChannelBlock.self)),
        Entry(key: "pairs", kind: .stringLists, value: "LISTS", help: "The joint pairs of the relativePositions and distances blocks, as joint-name pairs a+b,c+d (the value is b minus a) (default: every pair of the skeleton's joints)."),
        Entry(key: "windowPadding", kind: .string, value: "NAME", help: "Padding of short sequences: empty (poses with nobody in view) or edge (the nearest real frame) (default empty).", choices: names(WindowSpec.Padding.self)),
        Entry(key: "useEvents", kind: .bool, value: "BOOL", help: "Sequences with labeled events give one window centred on each event instead of sliding windows (default false)."),
        Entry(key: "fillGaps", kind: .bool, value: "BOOL", help: "Fill each joint's gaps in time inside every window first (linear between the frames it was seen, the nearest seen value at the ends); mask and confidence still report filled points as not seen (default false)."),
        Entry(key: "centring", kind: .string, value: "NAME", help: "Centre coordinates on the skeleton's centre joints over the window, per frame, on the mean of all joints, or not: window, frame, mean or none (default window).", choices: names(InputSpec.Centring.self)),
        Entry(key: "scaling", kind: .string, value: "NAME", help: "Scale coordinates: auto (torso length for 2D, metres kept for 3D), torso, image (needs the image size), fixed (divided by scaleDivisor) or none (default auto).", choices: names(InputSpec.Scaling.self)),
        Entry(key: "scaleDivisor", kind: .number, value: "X", help: "fixed scaling: divide coordinates by X, in data units (the recipe sets it to the training data's body size)."),
        Entry(key: "axisDivisors", kind: .numberList, value: "X,X", help: "fixed scaling: one divisor per axis instead of scaleDivisor, converting axes in different units to one, e.g. 300,300,1 for pixels at 300 per metre with a depth in metres (default: none)."),
        Entry(key: "alignFacing", kind: .bool, value: "BOOL", help: "3D: rotate each window about the vertical axis so the body faces one way (default false)."),
        Entry(key: "verticalAxis", kind: .int, value: "N", help: "Vertical axis of 3D data for alignFacing: 0 x, 1 y, 2 z (default 1)."),
        Entry(key: "augmentation", kind: .augmentation, value: "K=V,...", help: "Training augmentation, e.g. flipProbability=0.5,rotationProbability=0.5,maxRotationDegrees=15 (default none; keys in docs/preprocessing.md)."),
        Entry(key: "validationFraction", kind: .number, value: "F", help: "Share of training sequences held out for validation when the data gives no validation split, in [0, 1) (default 0.2)."),
        // Optimisation
        Entry(key: "epochs", kind: .int, value: "N", help: "Training epochs (default 60)."),
        Entry(key: "batchSize", kind: .int, value: "N", help: "Windows per mini-batch (default 64)."),
        Entry(key: "accumulate", kind: .int, value: "N", help: "Cut each batch into N parts whose gradients are summed in order before the update (default 1; under mpirun a multiple of the ranks, default the rank count)."),
        Entry(key: "optimizer", kind: .string, value: "NAME", help: "sgd, adam or adamw (default adamw; with weightDecay 0 it is Adam).", choices: names(TrainingConfig.OptimizerKind.self)),
        Entry(key: "learningRate", kind: .number, value: "LR", help: "Base learning rate (default 0.001)."),
        Entry(key: "momentum", kind: .number, value: "M", help: "SGD momentum in [0, 1) (default 0)."),
        Entry(key: "nesterov", kind: .bool, value: "BOOL", help: "SGD with Nesterov momentum (default false)."),
        Entry(key: "beta1", kind: .number, value: "B", help: "Adam first-moment decay (default 0.9)."),
        Entry(key: "beta2", kind: .number, value: "B", help: "Adam second-moment decay (default 0.999)."),
        Entry(key: "epsilon", kind: .number, value: "E", help: "Adam denominator term (default 1e-8)."),
        Entry(key: "weightDecay", kind: .number, value: "W", help: "L2 penalty for sgd and adam, decoupled decay for adamw (default 0)."),
        Entry(key: "gradientClipNorm", kind: .number, value: "N", help: "Clip the global gradient norm to N; 0 = off (default 0)."),
        Entry(key: "schedule", kind: .string, value: "NAME", help: "Learning-rate schedule after warm-up: constant, step or cosine (default constant).", choices: names(LearningRateSchedule.Kind.self)),
        Entry(key: "warmupEpochs", kind: .int, value: "N", help: "Linear warm-up over the first N epochs (default 0)."),
        Entry(key: "stepEpochs", kind: .int, value: "N", help: "step schedule: multiply the rate by gamma every N epochs (default 10)."),
        Entry(key: "gamma", kind: .number, value: "G", help: "step schedule: decay factor in (0, 1] (default 0.1)."),
        Entry(key: "minLearningRate", kind: .number, value: "LR", help: "cosine schedule: final learning rate (default 0)."),
        Entry(key: "averageEpochs", kind: .number, value: "E", help: "Keep an exponential moving average of the parameters with a time constant of E epochs and use it as the model; 0 = off (default 0)."),
        // Loss
        Entry(key: "labelSmoothing", kind: .number, value: "E", help: "Label smoothing in [0, 1) (default 0)."),
        Entry(key: "classWeights", kind: .classWeights, value: "W", help: "Loss weight per class: none, balanced (n / (classes x count)), or a comma-separated list (default none)."),
        // Validation
        Entry(key: "monitor", kind: .string, value: "METRIC", help: "Metric that picks the kept model and drives early stopping: validationAccuracy or validationLoss (default validationAccuracy).", choices: names(TrainingConfig.Metric.self)),
        Entry(key: "patience", kind: .int, value: "N", help: "Stop after N epochs without improvement of the monitored metric; 0 = never (default 0)."),
        Entry(key: "minDelta", kind: .number, value: "D", help: "Smallest change of the monitored metric that counts as an improvement (default 0)."),
        // Reproducibility
        Entry(key: "seed", kind: .int, value: "N", help: "Seed for initialisation, shuffling, dropout and splits (default 0)."),
        Entry(key: "threads", kind: .int, value: "N", help: "Threads for OpenBLAS, the layers' batch split and the optimiser (default 2)."),
    ]
}
