import ActionRuntime
import Datasets
import PoseCore

/// Every option of a training run. Saved as `config.json` in the run folder and inside each
/// checkpoint; a JSON config file supplies it and CLI flags override single fields. The keys,
/// their defaults and ranges are documented in docs/training.md.
public struct TrainingConfig: Codable, Hashable, Sendable {
    public enum Architecture: String, Codable, Hashable, Sendable, CaseIterable {
        /// MLP over the flattened window.
        case mlp
        /// Temporal-convolution network: conv blocks over time, global average pooling, linear.
        case tcn
        /// Spatial-temporal graph convolution (ST-GCN, kept small): blocks of a graph convolution
        /// over the skeleton's joints and a per-joint convolution over time, global average
        /// pooling over time, linear.
        case stgcn
        /// Fourier temporal pyramid: the magnitudes of the lowest `ftpCoefficients` frequencies
        /// of every channel over 1, 2 and 4 time segments (`fourierPyramid`; `pyramid` gives
        /// other levels), standardised with statistics of the training windows
        /// (`standardize`, calibrated when training starts), then `linear` to the classes.
        case ftp
    }

    /// How the members of a `members` or `streams` model are combined (`memberAverage`).
    public enum MemberAverage: String, Codable, Hashable, Sendable, CaseIterable {
        /// The mean of their probabilities (`averageProbabilities`).
        case probabilities
        /// The mean of their log-probabilities, renormalised: a geometric mean
        /// (`averageLogProbabilities` with equal weights).
        case logProbabilities
    }

    /// How the written model's probabilities are calibrated (`calibration`).
    public enum Calibration: String, Codable, Hashable, Sendable, CaseIterable {
        /// Not at all: the network as trained.
        case none
        /// One temperature T dividing the model's logits (Guo et al. 2017), the one that
        /// minimises the log loss of predictions the model did not train on (the validation
        /// windows, or out-of-fold predictions of the training split); the argmax, hence the
        /// accuracy, is unchanged.
        case temperature
    }

    /// How a linear head over fixed features is fitted (`linearHead`).
    public enum LinearHead: String, Codable, Hashable, Sendable, CaseIterable {
        case solve, train
    }

    /// One member of a model of mixed members (`members`): an architecture over its own channel
    /// blocks. JSON: `{"architecture": "ftp", "channels": ["relativePositions"]}` (both keys,
    /// no others: every other key is the run's).
    public struct Member: Codable, Hashable, Sendable, CustomStringConvertible {
        public var architecture: Architecture
        public var channels: [ChannelBlock]

        public init(architecture: Architecture, channels: [ChannelBlock]) {
            self.architecture = architecture
            self.channels = channels
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case architecture, channels }
        private struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        public init(from decoder: Decoder) throws {
            let all = try decoder.container(keyedBy: AnyKey.self)
            let known = Set(CodingKeys.allCases.map(\.rawValue))
            if let unknown = all.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription: "a member has the unknown key '\(unknown)'; it takes architecture and channels (every other key is the run's)"))
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            architecture = try c.decode(Architecture.self, forKey: .architecture)
            channels = try c.decode([ChannelBlock].self, forKey: .channels)
        }

        /// `tcn:coordinates+mask+bones` (the command line's form).
        public var description: String { architecture.rawValue + ":" + channels.map(\.rawValue).joined(separator: "+") }
    }

    public enum Activation: String, Codable, Hashable, Sendable, CaseIterable { case relu, gelu }
    /// Whether `fit` chooses the keys the user did not set from the data (`Recipe`).
    public enum RecipeMode: String, Codable, Hashable, Sendable, CaseIterable { case auto, none }
    /// Where the cameras the model will see stand, as far as the recipe needs to know
    /// (`views`): `auto` (anywhere: the recipe assumes a new camera may see the bodies from
    /// another side), `same` (where the training cameras stood: bodies are kept turned as
    /// recorded), `other` (elsewhere: also augment with wider turns where the data cannot be
    /// turned to face one way).
    public enum Views: String, Codable, Hashable, Sendable, CaseIterable { case auto, same, other }
    public enum Normalization: String, Codable, Hashable, Sendable, CaseIterable { case none, layerNorm }
    public enum OptimizerKind: String, Codable, Hashable, Sendable, CaseIterable { case sgd, adam, adamw }
    /// The validation metric that picks the best epoch and drives early stopping.
    public enum Metric: String, Codable, Hashable, Sendable, CaseIterable { case validationLoss, validationAccuracy }

    /// Per-class loss weights: none, `"balanced"` (n / (K · count_k) over the training windows,
    /// as scikit-learn's `class_weight="balanced"`), or an explicit list, one per class.
    public enum ClassWeights: Codable, Hashable, Sendable {
        case none
        case balanced
        case explicit([Float])

        public init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) {
                switch s {
                case "none": self = .none
                case "balanced": self = .balanced
                default:
                    throw DecodingError.dataCorruptedError(
                        in: c, debugDescription: "expects \"none\", \"balanced\" or a list of numbers, got \"\(s)\"")
                }
            } else if let list = try? c.decode([Float].self) {
                self = .explicit(list)
            } else {
                throw DecodingError.dataCorruptedError(
                    in: c, debugDescription: "expects \"none\", \"balanced\" or a list of numbers")
            }
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .none: try c.encode("none")
            case .balanced: try c.encode("balanced")
            case .explicit(let w): try c.encode(w)
            }
        }

        /// The weights `[classes]` for training windows with `labels`, or nil for none.
        public func weights(labels: [Int32], classes K: Int) throws -> [Float]? {
            switch self {
            case .none:
                return nil
            case .balanced:
                var counts = [Int](repeating: 0, count: K)
                for y in labels where Int(y) < K { counts[Int(y)] += 1 }
                // A class without training windows never weighs in the loss; give it 1.
                return counts.map { $0 == 0 ? 1 : Float(Double(labels.count) / (Double(K) * Double($0))) }
            case .explicit(let w):
                guard w.count == K else {
                    throw TrainingError.invalidConfig(field: "classWeights", reason: "has \(w.count) weights for \(K) classes")
                }
                return w
            }
        }
    }

    /// `auto`: keys not given in the config file or as flags are chosen from the data by
    /// `Recipe` (docs/training.md, "The recipe"); `none`: the defaults below are used as they are.
    public var recipe: RecipeMode = .auto
    /// Where the deployment cameras stand relative to the training ones (`Views`); read by the
    /// recipe only (docs/training.md, "The recipe").
    public var views: Views = .auto

    // Model
    public var architecture: Architecture = .tcn
    /// Hidden widths of the MLP.
    public var hidden: [Int] = [256, 128]
    /// Output channels of the TCN's blocks; the depth is their count.
    public var widths: [Int] = [64, 64, 64]
    /// TCN and ST-GCN kernel size over time (odd, so that "same" padding keeps the length).
    public var kernel: Int = 5
    /// The joint graph of `stgcn`: edges as `[parent, child]` joint-name pairs. Empty: the
    /// skeleton's bones. For a skeleton that names no bones they are also its bones (the `bones`
    /// channel block, and the skeleton of the model written); the recipe infers them from the data.
    public var graph: [[String]] = []
    /// Left/right mirror pairs `[left, right]` of a skeleton that names none: they become its
    /// `mirrorPairs` (flips, `alignFacing`, `testTimeFlip`, the skeleton of the model written). The
    /// recipe infers them from the tree of `graph` (`MirrorPairs`) for a skeleton that names no bones.
    public var mirrorPairs: [[String]] = []
    /// The joint pairs of the relational channel blocks (`relativePositions`, `distances`), as
    /// joint-name pairs `[a, b]` (the value is `c[b] − c[a]`): e.g. within each body and between
    /// the bodies' key joints of a 2-body model. Empty: every pair of the skeleton's joints.
    public var pairs: [[String]] = []
    /// The TCN's and ST-GCN's pooling over time: empty for the global mean, else the levels of a
    /// temporal pyramid (`temporalPyramidPool`, e.g. `[1, 2, 4]`: the mean over the whole window,
    /// its halves and its quarters, side by side).
    public var pyramid: [Int] = []
    /// Frequencies per segment of the `ftp` architecture's Fourier temporal pyramid (DC
    /// included), 1 to 64.
    public var ftpCoefficients: Int = 4
    /// How a network or member whose only parameters are its last `linear` (an `ftp` network,
    /// an MLP without hidden layers) is fitted: `solve`d to its optimum as an L2-regularised
    /// multinomial logistic regression over its fixed features (`SoftmaxRegression`, the
    /// penalty `linearPenalty` or chosen by cross-validation on the training split), or
    /// `train`ed by the optimiser with the rest, as every other layer is.
    public var linearHead: LinearHead = .solve
    /// The L2 penalty λ of a solved linear head (`linearHead solve`), per unit of the mean
    /// training loss; nil: chosen by group-aware cross-validation on the training windows
    /// among `LinearHeads.penalties`.
    public var linearPenalty: Double? = nil
    /// Augmented copies of each training window that a solved linear head also fits, as extra
    /// rows of the same label and cross-validation fold (each copy augmented by `augmentation`
    /// as in an epoch of its own, beyond the run's epochs), 0 to 16; 0, or no augmentation: the
    /// windows as cut only. The recipe sets 4 where it imitates other cameras for 2D data
    /// (docs/benchmarks.md, "2D views (issue 36 item 2)").
    public var linearHeadCopies: Int = 0
    /// How the written model's probabilities are calibrated: a `temperature` fitted on the
    /// validation windows, or without validation sequences on out-of-fold predictions of the
    /// training split (`calibrationFolds` group-aware folds, the network trained again on the
    /// rest of each), or `none`.
    public var calibration: Calibration = .temperature
    /// The folds of the out-of-fold predictions a temperature is fitted on when the run has no
    /// validation sequences (2...10; fewer when the training split has fewer groups), trained in
    /// turn until `ModelCalibration.enoughWindows` windows are predicted.
    public var calibrationFolds: Int = 3
    /// The switch evidence (score-seconds) written into the model for events from frames
    /// (`ModelHeader.Streaming.Frames.switchEvidence`: the lead another class must gather to
    /// end an event and start one without rest); nil: none written, readers use 0.3. Larger
    /// for streams whose actions mostly follow rest (docs/streaming.md).
    public var switchEvidence: Double? = nil
    /// Block i of the TCN has dilation dilationBase^i (1 = no dilation, 2 = 1, 2, 4, ...).
    public var dilationBase: Int = 2
    /// TCN blocks are residual (two convolutions and a shortcut) or plain (one convolution).
    public var residual: Bool = true
    public var activation: Activation = .relu
    public var normalization: Normalization = .layerNorm
    /// Dropout rate after each hidden activation (and before the TCN's head).
    public var dropout: Float = 0.1
    /// Multi-stream models: one member per entry, each the `architecture` over its own channel
    /// blocks (e.g. `[["coordinates"], ["bones"], ["motion"]]`; the same blocks twice give two
    /// members that differ by their initialisation), whose class probabilities are averaged
    /// (`averageProbabilities`). The input holds the union of the blocks, in order of first
    /// appearance, instead of `channels`. Empty: one network over `channels`.
    public var streams: [[ChannelBlock]] = []
    /// Models of mixed members: one member per entry, each its own architecture over its own
    /// channel blocks (e.g. a `tcn` over coordinates, mask and bones and an `ftp` over
    /// relativePositions), every other key shared; their class probabilities are averaged
    /// (`averageProbabilities`, each member trained on its own loss, as `streams` are). The
    /// input holds the union of the members' blocks, in order of first appearance, instead of
    /// `channels`, and `architecture` is not used. One member is that architecture over its
    /// blocks. Empty: one network (or `streams`); not together with `streams`.
    public var members: [Member] = []
    /// How the members of `members` and `streams` are combined: the mean of their
    /// log-probabilities (a geometric mean of their probabilities, renormalised: a class one
    /// member finds unlikely stays unlikely) or of their probabilities. Separately trained
    /// `ensemble` members are always averaged by their probabilities.
    public var memberAverage: MemberAverage = .logProbabilities
    /// Test-time flip averaging: the model written averages its probabilities on each window
    /// and on its mirror image (`flipAverage`; left/right joints swapped, x negated). Needs a
    /// skeleton with mirrorPairs and centred coordinates. Training is unchanged.
    public var testTimeFlip: Bool = false
    /// Separately trained members (1...16): `fit` trains this many complete networks one after
    /// another, member m from its own seed (member 0 from `seed`), each keeping its own best
    /// epoch, and writes one model averaging their probabilities (`averageProbabilities`;
    /// inside `flipAverage` with `testTimeFlip`). 1: one network.
    public var ensemble: Int = 1

    // Data
    /// Window length in frames.
    public var windowFrames: Int = 45
    /// Frames between window starts when cutting training windows.
    public var windowStride: Int = 15
    public var windowMode: WindowSpec.Mode = .sliding
    /// Resample sequences to this rate first (frames per second); nil keeps recorded frames.
    public var frameRate: Double? = nil
    public var channels: [ChannelBlock] = [.coordinates, .mask]
    /// How windows of short sequences are padded: empty poses or the nearest real frame.
    public var windowPadding: WindowSpec.Padding = .empty
    /// Sequences with labeled events give one window centred on each event (Apple's throw
    /// classifier: 45 frames around the throw) instead of sliding windows.
    public var useEvents: Bool = false
    /// Fill each joint's gaps in time inside every window before anything else (the
    /// `fillGaps` step: linear between the frames where it was seen, the nearest seen value at
    /// the ends); the `mask` and `confidence` blocks still report filled points as not seen.
    public var fillGaps: Bool = false
    /// Where coordinates are centred: the skeleton's centre joints over the window, per frame,
    /// or not at all.
    public var centring: InputSpec.Centring = .window
    /// How coordinates are scaled: auto (torso length for 2D, metres kept for 3D), torso,
    /// image (2D, needs the dataset's image size), fixed (divided by `scaleDivisor`) or none.
    public var scaling: InputSpec.Scaling = .auto
    /// The divisor of `fixed` scaling, in data units (the recipe sets it to the training
    /// data's body size).
    public var scaleDivisor: Double? = nil
    /// `fixed` scaling with one divisor per axis instead of `scaleDivisor`, converting axes in
    /// different units to one (the recipe says when the axes' spreads suggest it, and sets
    /// nothing). Empty: `scaleDivisor` on every axis.
    public var axisDivisors: [Double] = []
    /// 3D only: rotate each window about the vertical axis so that the body faces one way
    /// (the `alignFacing` step on the skeleton's hip and shoulder pairs).
    public var alignFacing: Bool = false
    /// The vertical axis of 3D data (0 x, 1 y, 2 z) for alignFacing; Vision 3D and Kinect are y up.
    public var verticalAxis: Int = 1
    /// Training-time augmentation (all off by default; docs/preprocessing.md).
    public var augmentation = AugmentationConfig()
    /// Share of training sequences held out for validation when the data gives no split.
    public var validationFraction: Double = 0.2

    // Optimisation. Hyperparameters are Double, as Python floats are in PyTorch: the
    // optimisers derive their constants in double precision and round them to Float once.
    public var epochs: Int = 60
    public var batchSize: Int = 64
    /// Micro-batches per step (nil = 1): each batch is cut into this many consecutive parts
    /// whose gradients are summed in order before the update, which equals the one-batch
    /// gradient within float rounding. Under `mpirun` the parts are spread over the ranks, so
    /// it must be a multiple of their number (docs/distributed.md).
    public var accumulate: Int? = nil
    /// `accumulate`, 1 when unset.
    public var microBatches: Int { accumulate ?? 1 }
    public var optimizer: OptimizerKind = .adamw
    public var learningRate: Double = 1e-3
    public var momentum: Double = 0
    public var nesterov: Bool = false
    public var beta1: Double = 0.9
    public var beta2: Double = 0.999
    public var epsilon: Double = 1e-8
    /// L2 penalty for sgd and adam, decoupled decay for adamw.
    public var weightDecay: Double = 0
    /// Clip the global gradient norm to this value; 0 turns clipping off.
    public var gradientClipNorm: Double = 0
    public var schedule: LearningRateSchedule.Kind = .constant
    public var warmupEpochs: Int = 0
    /// Epochs between decays of the step schedule.
    public var stepEpochs: Int = 10
    /// Decay factor of the step schedule.
    public var gamma: Double = 0.1
    /// Final learning rate of the cosine schedule.
    public var minLearningRate: Double = 0
    /// Exponential moving average of the parameters over the last `averageEpochs` epochs (the
    /// time constant; 0 = off). The average, not the last step's parameters, is evaluated and
    /// kept: after every step `avg ← avg + (1 − β)(θ − avg)` with `β = exp(−1 / (averageEpochs·S))`
    /// for S steps per epoch (Polyak & Juditsky, 1992; as in timm's `ModelEmaV2`).
    public var averageEpochs: Double = 0

    // Loss
    public var labelSmoothing: Float = 0
    public var classWeights: ClassWeights = .none

    // Validation and early stopping
    public var monitor: Metric = .validationAccuracy
    /// Stop after this many epochs without improvement of `monitor`; 0 never stops early.
    public var patience: Int = 0
    /// The least change of `monitor` that counts as an improvement.
    public var minDelta: Double = 0

    // Reproducibility
    public var seed: UInt64 = 0
    /// Threads for OpenBLAS and for the optimiser's elementwise update.
    public var threads: Int = 2

    public init() {}

    /// Reads a config (`config.json`, a checkpoint's, a config file after the defaults): every
    /// key is optional and a missing one keeps its default, so that the config of a run written
    /// before a key existed still decodes (`fit --resume` of an old run folder) and means what it
    /// did. A new key needs its line here (`TrainingConfigTests` fails without it).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func read<T: Decodable>(_ key: CodingKeys, _ value: inout T) throws {
            if let v = try c.decodeIfPresent(T.self, forKey: key) { value = v }
        }
        try read(.recipe, &recipe)
        try read(.views, &views)
        try read(.architecture, &architecture)
        try read(.hidden, &hidden)
        try read(.widths, &widths)
        try read(.kernel, &kernel)
        try read(.graph, &graph)
        try read(.mirrorPairs, &mirrorPairs)
        try read(.pairs, &pairs)
        try read(.pyramid, &pyramid)
        try read(.ftpCoefficients, &ftpCoefficients)
        try read(.linearHead, &linearHead)
        try read(.linearPenalty, &linearPenalty)
        try read(.linearHeadCopies, &linearHeadCopies)
        try read(.calibration, &calibration)
        try read(.calibrationFolds, &calibrationFolds)
        try read(.switchEvidence, &switchEvidence)
        try read(.dilationBase, &dilationBase)
        try read(.residual, &residual)
        try read(.activation, &activation)
        try read(.normalization, &normalization)
        try read(.dropout, &dropout)
        try read(.streams, &streams)
        try read(.members, &members)
        try read(.memberAverage, &memberAverage)
        try read(.testTimeFlip, &testTimeFlip)
        try read(.ensemble, &ensemble)
        try read(.windowFrames, &windowFrames)
        try read(.windowStride, &windowStride)
        try read(.windowMode, &windowMode)
        try read(.frameRate, &frameRate)
        try read(.channels, &channels)
        try read(.windowPadding, &windowPadding)
        try read(.useEvents, &useEvents)
        try read(.fillGaps, &fillGaps)
        try read(.centring, &centring)
        try read(.scaling, &scaling)
        try read(.scaleDivisor, &scaleDivisor)
        try read(.axisDivisors, &axisDivisors)
        try read(.alignFacing, &alignFacing)
        try read(.verticalAxis, &verticalAxis)
        try read(.augmentation, &augmentation)
        try read(.validationFraction, &validationFraction)
        try read(.epochs, &epochs)
        try read(.batchSize, &batchSize)
        try read(.accumulate, &accumulate)
        try read(.optimizer, &optimizer)
        try read(.learningRate, &learningRate)
        try read(.momentum, &momentum)
        try read(.nesterov, &nesterov)
        try read(.beta1, &beta1)
        try read(.beta2, &beta2)
        try read(.epsilon, &epsilon)
        try read(.weightDecay, &weightDecay)
        try read(.gradientClipNorm, &gradientClipNorm)
        try read(.schedule, &schedule)
        try read(.warmupEpochs, &warmupEpochs)
        try read(.stepEpochs, &stepEpochs)
        try read(.gamma, &gamma)
        try read(.minLearningRate, &minLearningRate)
        try read(.averageEpochs, &averageEpochs)
        try read(.labelSmoothing, &labelSmoothing)
        try read(.classWeights, &classWeights)
        try read(.monitor, &monitor)
        try read(.patience, &patience)
        try read(.minDelta, &minDelta)
        try read(.seed, &seed)
        try read(.threads, &threads)
    }

    /// Checks ranges; the message says which field to fix and what is allowed.
    /// The upper bounds of the count keys (docs/training.md), checked by `validate` before any
    /// work: a count beyond them is a typed error naming the key and the bound, never an
    /// allocation or a thread count the machine cannot give.
    public enum Limits {
        public static let threads = 256
        public static let epochs = 100_000
        public static let batchSize = 65_536
        /// `windowFrames` and `windowStride` (frames), and `kernel`: a model file's bound.
        public static let frames = InputSpec.maxFrames
        /// Hidden widths (`hidden`) and TCN block widths (`widths`), each.
        public static let width = 65_536
        /// Hidden layers (`hidden`) and TCN blocks (`widths`).
        public static let layers = 64
        /// `stepEpochs` and `patience`.
        public static let epochCount = 100_000
    }

    public func validate() throws {
        func bad(_ field: String, _ why: String) -> TrainingError { .invalidConfig(field: field, reason: why) }
        func positive(_ field: String, _ v: Int, most: Int) throws {
            guard v > 0 else { throw bad(field, "must be positive, got \(v)") }
            guard v <= most else { throw bad(field, "must be at most \(most), got \(v)") }
        }
        func rate<T: BinaryFloatingPoint>(_ field: String, _ v: T, _ range: String, _ ok: Bool) throws {
            guard ok, v.isFinite else { throw bad(field, "must be in \(range), got \(v)") }
        }
        try positive("windowFrames", windowFrames, most: Limits.frames)
        try positive("windowStride", windowStride, most: Limits.frames)
        try positive("epochs", epochs, most: Limits.epochs)
        try positive("batchSize", batchSize, most: Limits.batchSize)
        if let accumulate {
            guard (1...batchSize).contains(accumulate) else {
                throw bad("accumulate", "must be in [1, batchSize] = [1, \(batchSize)], got \(accumulate)")
            }
        }
        try positive("threads", threads, most: Limits.threads)
        try positive("kernel", kernel, most: Limits.frames)
        try positive("dilationBase", dilationBase, most: 1 << 16)
        try positive("stepEpochs", stepEpochs, most: Limits.epochCount)
        guard patience <= Limits.epochCount else { throw bad("patience", "must be at most \(Limits.epochCount), got \(patience)") }
        guard hidden.allSatisfy({ $0 > 0 }) else { throw bad("hidden", "widths must be positive, got \(hidden)") }
        guard !widths.isEmpty, widths.allSatisfy({ $0 > 0 }) else {
            throw bad("widths", "needs at least one positive width, got \(widths)")
        }
        for (key, list) in [("hidden", hidden), ("widths", widths)] {
            guard list.count <= Limits.layers else { throw bad(key, "may list at most \(Limits.layers) widths, got \(list.count)") }
            if let w = list.first(where: { $0 > Limits.width }) { throw bad(key, "widths must be at most \(Limits.width), got \(w)") }
        }
        if architecture != .mlp {
            guard kernel % 2 == 1 else { throw bad("kernel", "must be odd so that padding keeps the window length, got \(kernel)") }
            let largest = (0..<widths.count).reduce(1) { d, _ in d.multipliedReportingOverflow(by: dilationBase).partialValue }
            guard largest <= 1 << 16 else { throw bad("dilationBase", "gives dilations too large for \(widths.count) blocks") }
        }
        try rate("dropout", dropout, "[0, 1)", dropout >= 0 && dropout < 1)
        try rate("learningRate", learningRate, "(0, ∞)", learningRate > 0)
        try rate("momentum", momentum, "[0, 1)", momentum >= 0 && momentum < 1)
        guard !nesterov || (optimizer == .sgd && momentum > 0) else {
            throw bad("nesterov", "needs optimizer sgd with momentum > 0")
        }
        try rate("beta1", beta1, "[0, 1)", beta1 >= 0 && beta1 < 1)
        try rate("beta2", beta2, "[0, 1)", beta2 >= 0 && beta2 < 1)
        try rate("epsilon", epsilon, "(0, ∞)", epsilon > 0)
        try rate("weightDecay", weightDecay, "[0, ∞)", weightDecay >= 0)
        try rate("gradientClipNorm", gradientClipNorm, "[0, ∞) (0 = off)", gradientClipNorm >= 0)
        guard warmupEpochs >= 0 && warmupEpochs < epochs else {
            throw bad("warmupEpochs", "must be in [0, epochs) = [0, \(epochs)), got \(warmupEpochs)")
        }
        try rate("gamma", gamma, "(0, 1]", gamma > 0 && gamma <= 1)
        try rate("minLearningRate", minLearningRate, "[0, learningRate]", minLearningRate >= 0 && minLearningRate <= learningRate)
        try rate("averageEpochs", averageEpochs, "[0, epochs]", averageEpochs >= 0 && averageEpochs <= Double(epochs))
        try rate("labelSmoothing", labelSmoothing, "[0, 1)", labelSmoothing >= 0 && labelSmoothing < 1)
        if case .explicit(let w) = classWeights {
            guard w.allSatisfy({ $0.isFinite && $0 >= 0 }), w.contains(where: { $0 > 0 }) else {
                throw bad("classWeights", "must be non-negative numbers, not all zero, got \(w)")
            }
        }
        guard (0..<1).contains(validationFraction) else {
            throw bad("validationFraction", "must be in [0, 1), got \(validationFraction)")
        }
        guard patience >= 0 else { throw bad("patience", "must be 0 (off) or positive, got \(patience)") }
        guard minDelta >= 0 && minDelta.isFinite else { throw bad("minDelta", "must be ≥ 0, got \(minDelta)") }
        if let frameRate {
            // A model file's bound (format.md 2.1), checked here rather than as the window's.
            guard frameRate >= 0.01 && frameRate <= 10_000 else { throw bad("frameRate", "must be 0.01 to 10000 frames per second, got \(frameRate)") }
        }
        guard axisDivisors.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw bad("axisDivisors", "must be positive numbers, got \(axisDivisors)")
        }
        // A model file's bound on a divide step (format.md 5), named here rather than as the preprocessing's.
        let divisors = Double(PreprocessingStep.divisors.lowerBound)...Double(PreprocessingStep.divisors.upperBound)
        guard axisDivisors.allSatisfy(divisors.contains) else {
            throw bad("axisDivisors", "must be 1e-06 to 1000000 (data units per unit of the model's input), got \(axisDivisors); check the data's units")
        }
        if scaling == .fixed && axisDivisors.isEmpty {
            guard let d = scaleDivisor, d > 0, d.isFinite else {
                throw bad("scaleDivisor", "must be a positive number when scaling is fixed, got \(scaleDivisor.map { "\($0)" } ?? "none")")
            }
            guard divisors.contains(d) else {
                throw bad("scaleDivisor", "must be 1e-06 to 1000000 (data units per unit of the model's input), got \(d); check the data's units")
            }
        }
        guard !channels.isEmpty else { throw bad("channels", "needs at least one block") }
        guard streams.isEmpty || architecture != .stgcn else {
            throw bad("streams", "are not available with architecture stgcn (it reads every joint-indexed channel block itself)")
        }
        guard streams.allSatisfy({ !$0.isEmpty }) else { throw bad("streams", "each stream needs at least one channel block, got \(streams)") }
        guard members.isEmpty || streams.isEmpty else {
            throw bad("members", "and streams cannot be given together: members are streams whose architectures may differ; give one")
        }
        for (m, member) in members.enumerated() {
            guard !member.channels.isEmpty else { throw bad("members", "member \(m + 1) (\(member)) needs at least one channel block") }
            guard Set(member.channels).count == member.channels.count else {
                throw bad("members", "member \(m + 1) (\(member)) lists a channel block twice")
            }
        }
        guard (1...FourierPyramidKind.maxCoefficients).contains(ftpCoefficients) else {
            throw bad("ftpCoefficients", "must be in [1, \(FourierPyramidKind.maxCoefficients)], got \(ftpCoefficients)")
        }
        if usesArchitecture(.ftp) && pyramid.isEmpty && windowFrames < 4 {
            throw bad("windowFrames", "must be at least 4 for the ftp architecture's pyramid levels 1, 2, 4 (or give pyramid), got \(windowFrames)")
        }
        if let linearPenalty {
            guard linearPenalty > 0 && linearPenalty.isFinite else { throw bad("linearPenalty", "must be a positive number, got \(linearPenalty)") }
        }
        guard (0...16).contains(linearHeadCopies) else { throw bad("linearHeadCopies", "must be in [0, 16], got \(linearHeadCopies)") }
        guard (2...10).contains(calibrationFolds) else { throw bad("calibrationFolds", "must be in [2, 10], got \(calibrationFolds)") }
        if let switchEvidence, !(0...3600).contains(switchEvidence) {
            throw bad("switchEvidence", "must be 0 to 3600 score-seconds, got \(switchEvidence)")
        }
        guard (1...16).contains(ensemble) else { throw bad("ensemble", "must be in [1, 16] (members), got \(ensemble)") }
        guard pyramid.allSatisfy({ (1...windowFrames).contains($0) }) else {
            throw bad("pyramid", "levels must be 1 to windowFrames (\(windowFrames)), got \(pyramid)")
        }
        guard pyramid.count <= TemporalPyramidPoolKind.maxLevels else {
            throw bad("pyramid", "may list at most \(TemporalPyramidPoolKind.maxLevels) levels, got \(pyramid.count)")
        }
        guard pairs.isEmpty || inputBlocks.contains(where: { $0.kind.readsPairs }) else {
            let readers = ChannelBlocks.all.filter { $0.readsPairs }.map { $0.name }
            let key = !members.isEmpty ? "members" : streams.isEmpty ? "channels" : "streams"
            throw bad("pairs", "no channel block reads them: add \(readers.joined(separator: " or ")) to \(key)")
        }
        guard (0..<3).contains(verticalAxis) else { throw bad("verticalAxis", "must be 0, 1 or 2, got \(verticalAxis)") }
        do { try augmentation.validate() } catch let e as AugmentationError { throw bad("augmentation", "\(e)") }
    }

    /// The channel blocks of the input: the union of the members' or the streams' blocks in
    /// order of first appearance, else `channels`.
    public var inputBlocks: [ChannelBlock] {
        let listed = !members.isEmpty ? members.flatMap(\.channels) : streams.isEmpty ? channels : streams.flatMap { $0 }
        return listed.reduce(into: []) { all, b in if !all.contains(b) { all.append(b) } }
    }

    /// The model family in a few words: the architecture, or the members
    /// (`members tcn:coordinates+mask, ftp:relativePositions`).
    public var modelName: String {
        members.isEmpty ? architecture.rawValue : "members " + members.map(\.description).joined(separator: ", ")
    }

    /// Whether the network has a linear head over fixed features (`linearHead`): an `ftp`
    /// network or member, or an MLP (network or member) without hidden layers.
    public var hasLinearHead: Bool {
        let architectures = members.isEmpty ? [architecture] : members.map(\.architecture)
        return architectures.contains { $0 == .ftp || ($0 == .mlp && hidden.isEmpty) }
    }

    /// Whether the network has `architecture` (at the top, or as a member's).
    public func usesArchitecture(_ a: Architecture) -> Bool {
        members.isEmpty ? architecture == a : members.contains { $0.architecture == a }
    }

    /// The input description for a dataset's skeleton: window, preprocessing steps and channels.
    /// Errors name the config key to change.
    public func inputSpec(for skeleton: Skeleton, imageSize: [Double]?) throws -> InputSpec {
        var skeleton = skeleton
        if skeleton.bones.isEmpty && !graph.isEmpty {
            _ = try SkeletonGraph(skeleton: skeleton, edges: graph)  // names the wrong pair
            skeleton.bones = graph
        }
        let givenPairs = skeleton.mirrorPairs.isEmpty && !mirrorPairs.isEmpty
        if givenPairs {
            skeleton.mirrorPairs = mirrorPairs
            if let p = skeleton.problems().first(where: { $0.field == "mirrorPairs" }) {
                throw TrainingError.invalidConfig(field: "mirrorPairs", reason: "does not fit skeleton '\(skeleton.name)': \(p.problem)")
            }
        }
        let window = WindowSpec(frames: windowFrames, mode: windowMode, padding: windowPadding, frameRate: frameRate)
        var spec: InputSpec
        do {
            spec = try InputSpec.standard(
                for: skeleton, window: window, centring: centring, scaling: scaling, imageSize: imageSize, channels: channels,
                divisor: scaleDivisor, axisDivisors: axisDivisors)
            if !streams.isEmpty || !members.isEmpty {
                spec.channels = inputBlocks
                try spec.validate()
            }
            if fillGaps {
                spec.steps.insert(.fillGaps, at: 0)
                try spec.validate()
            }
            if !pairs.isEmpty {
                spec.pairs = pairs
                try spec.validate()
            }
        } catch let e as InputSpecError {
            if case .pairs(let why) = e { throw TrainingError.invalidConfig(field: "pairs", reason: "\(why)") }
            throw TrainingError.invalidConfig(field: "centring/scaling/channels", reason: "do not fit skeleton '\(skeleton.name)': \(e)")
        }
        if alignFacing {
            guard skeleton.dimensions == 3 else {
                throw TrainingError.invalidConfig(field: "alignFacing", reason: "is for 3D skeletons; '\(skeleton.name)' is 2D")
            }
            let (left, right) = givenPairs ? MirrorPairs.sideJoints(skeleton) : skeleton.sideJoints
            guard !left.isEmpty else {
                throw TrainingError.invalidConfig(
                    field: "alignFacing", reason: "needs left/right joint pairs (mirrorPairs) in skeleton '\(skeleton.name)'")
            }
            spec.steps.append(.alignFacing(left: left, right: right, verticalAxis: verticalAxis))
            try spec.validate()
        }
        if members.isEmpty && architecture == .stgcn { _ = try graphLayers(for: spec, classes: 1) }
        if !members.isEmpty { _ = try layers(for: spec, classes: 1) }  // each member's blocks fit its architecture
        if testTimeFlip {
            do { _ = try spec.mirrorImage() } catch { throw TrainingError.invalidConfig(field: "testTimeFlip", reason: "does not fit: \(error)") }
        }
        return spec
    }

    /// The layers to train for `input` (built by `inputSpec(for:imageSize:)`) and `classes`
    /// outputs: `layers(input:classes:)` over the whole input, the graph network of `stgcn`
    /// (`graphLayers(for:classes:)`), or with `streams` an `averageProbabilities` whose member m
    /// is `selectChannels` (its blocks' channels) and `layers(input:classes:)` over them; with
    /// `members` the same with each member's own architecture (a `stgcn` member's joint-major
    /// gather picks from its blocks' channels), and one member alone is its layers over the
    /// input. `ftp` layers hold an uncalibrated `standardize` (training calibrates it:
    /// `StandardizeCalibration`). `testTimeFlip` is applied when the model is written
    /// (`flipped(_:input:)`), not here.
    public func layers(for input: InputSpec, classes: Int) throws -> [LayerSpec] {
        let T = input.window.frames
        if !members.isEmpty { return try memberLayers(for: input, classes: classes) }
        if architecture == .stgcn { return try graphLayers(for: input, classes: classes) }
        guard !streams.isEmpty else { return try layers(input: Shape(time: T, channels: input.channelsPerFrame), classes: classes) }
        var offsets: [ChannelBlock: Range<Int>] = [:]
        for (b, at, width) in input.channelLayout { offsets[b] = at..<(at + width) }
        let members = try streams.map { blocks -> [LayerSpec] in
            let picked = blocks.flatMap { offsets[$0].map(Array.init) ?? [] }
            return [.selectChannels(picked)] + (try layers(input: Shape(time: T, channels: picked.count), classes: classes))
        }
        return [combined(members)]
    }

    /// `members` combined as `memberAverage` says (equal weights).
    func combined(_ members: [[LayerSpec]]) -> LayerSpec {
        switch memberAverage {
        case .probabilities: return .averageProbabilities(members)
        case .logProbabilities: return .averageLogProbabilities(members, weights: [Float](repeating: 1 / Float(members.count), count: members.count))
        }
    }

    /// `layers(for:classes:)` with `members`.
    private func memberLayers(for input: InputSpec, classes: Int) throws -> [LayerSpec] {
        var offsets: [ChannelBlock: Range<Int>] = [:]
        for (b, at, width) in input.channelLayout { offsets[b] = at..<(at + width) }
        let all = Array(0..<input.channelsPerFrame)
        let specs = try members.enumerated().map { m, member -> [LayerSpec] in
            var c = self
            c.members = []
            c.architecture = member.architecture
            let picked = member.channels.flatMap { offsets[$0].map(Array.init) ?? [] }
            if member.architecture == .stgcn {
                var own = input
                own.channels = member.channels
                do {
                    var layers = try c.graphLayers(for: own, classes: classes)
                    guard let gather = layers.first?.kind as? SelectChannelsKind else { return layers }
                    layers[0] = .selectChannels(gather.channels.map { picked[$0] })
                    return layers
                } catch TrainingError.invalidConfig(_, let reason) {
                    throw TrainingError.invalidConfig(field: "members", reason: "member \(m + 1) (\(member)): \(reason)")
                }
            }
            let layers = try c.layers(input: Shape(time: input.window.frames, channels: picked.count), classes: classes)
            return picked == all ? layers : [.selectChannels(picked)] + layers
        }
        return specs.count == 1 ? specs[0] : [combined(specs)]
    }

    /// The `stgcn` network for `input`: `selectChannels` puts each joint's values of the
    /// joint-indexed blocks side by side (`jointMajorChannels`), then per width w of `widths` a
    /// block `graphConv` over the graph's three partitions (kernel 1), [layerNorm], activation,
    /// [dropout], `graphConv` over time with the identity adjacency (`kernel`), [layerNorm] —
    /// residual with an identity shortcut, or a kernel-1 per-joint `graphConv` when the width
    /// changes, as the TCN's blocks — then activation, [dropout]; `globalAveragePool` over time
    /// and `linear` from the joints' channels to the classes. Throws when the skeleton gives no
    /// graph or the channels no joint-indexed block.
    public func graphLayers(for input: InputSpec, classes: Int) throws -> [LayerSpec] {
        let (pool, segments) = pooling
        let graph = try SkeletonGraph(skeleton: input.skeleton, edges: self.graph)
        let (gather, perJoint) = try Self.jointMajorChannels(input)
        let J = input.skeleton.jointCount
        let act: LayerSpec = activation == .relu ? .relu : .gelu
        func norm(_ w: Int) -> [LayerSpec] { normalization == .layerNorm ? [.layerNorm(channels: J * w, epsilon: 1e-5)] : [] }
        let drop: [LayerSpec] = dropout > 0 ? [.dropout(rate: dropout)] : []
        let spatial = graph.partitions, identity = [graph.identity]
        var specs: [LayerSpec] = [.selectChannels(gather)]
        var width = perJoint
        for w in widths {
            let body: [LayerSpec] =
                [.graphConv(joints: J, inputs: width, outputs: w, kernel: 1, adjacency: spatial)] + norm(w) + [act] + drop
                + [.graphConv(joints: J, inputs: w, outputs: w, kernel: kernel, adjacency: identity)] + norm(w)
            if residual {
                let shortcut: [LayerSpec] =
                    width == w ? [] : [.graphConv(joints: J, inputs: width, outputs: w, kernel: 1, adjacency: identity)]
                specs += [.residual(body: body, shortcut: shortcut), act] + drop
            } else {
                specs += body + [act] + drop
            }
            width = w
        }
        specs += [pool, .linear(inputs: J * width * segments, outputs: classes)]
        return specs
    }

    /// The pooling over time of the convolutional families and the segments it gives.
    var pooling: (LayerSpec, Int) {
        pyramid.isEmpty ? (.globalAveragePool, 1) : (.temporalPyramidPool(levels: pyramid), pyramid.reduce(0, +))
    }

    /// The input channels joint by joint: for each joint, its values in each joint-indexed
    /// block (`ChannelBlockKind.valuesPerJoint`: coordinates and motion its dimensions, mask and
    /// confidence one value), in the blocks' order; the other blocks (`bones`, the pairs) are
    /// left out (the graph convolution sees neighbours itself). Returns the channel indices and
    /// their count per joint.
    static func jointMajorChannels(_ input: InputSpec) throws -> (channels: [Int], perJoint: Int) {
        let blocks = try input.resolvedBlocks()
        var channels: [Int] = []
        for j in 0..<input.skeleton.jointCount {
            for (block, offset) in blocks {
                let n = block.valuesPerJoint
                channels += (0..<n).map { offset + j * n + $0 }
            }
        }
        guard !channels.isEmpty else {
            let perJoint = ChannelBlocks.all.filter { ((try? $0.init(input: input))?.valuesPerJoint ?? 0) > 0 }.map { $0.name }
            throw TrainingError.invalidConfig(
                field: "channels", reason: "gives architecture stgcn no per-joint values: add \(perJoint.joined(separator: ", "))")
        }
        return (channels, channels.count / input.skeleton.jointCount)
    }

    /// The layers of the model to write: `trained` itself, or wrapped in `flipAverage` over the
    /// input's mirror image when `testTimeFlip` is set (the same parameters, in the same order).
    public func flipped(_ trained: [LayerSpec], input: InputSpec) throws -> [LayerSpec] {
        guard testTimeFlip else { return trained }
        let mirror = try input.mirrorImage()
        return [.flipAverage(channels: mirror.channels, signs: mirror.signs, body: trained)]
    }

    /// The layer list for an input of `input` shape and `classes` outputs.
    ///
    /// - mlp: `flatten`, then per hidden width `linear, [layerNorm], activation, [dropout]`,
    ///   then `linear` to the classes.
    /// - tcn: per block i (width `widths[i]`, dilation `d = dilationBase^i`, padding
    ///   `d·(kernel − 1)/2` so the length is kept):
    ///   plain: `conv1d, [layerNorm], activation, [dropout]`;
    ///   residual: `residual(body: conv1d, [layerNorm], activation, [dropout], conv1d, [layerNorm];
    ///   shortcut: identity, or a kernel-1 conv1d when the width changes), activation, [dropout]`
    ///   (Bai, Kolter & Koltun, 2018, "An Empirical Evaluation of Generic Convolutional and
    ///   Recurrent Networks for Sequence Modeling", with non-causal padding); then
    ///   `globalAveragePool` and `linear` to the classes.
    /// - stgcn: needs the skeleton, so it is built by `layers(for:classes:)`; here it throws.
    /// - ftp: `fourierPyramid(levels: pyramid or [1, 2, 4], coefficients: ftpCoefficients)`,
    ///   `standardize` (uncalibrated), `linear` to the classes.
    public func layers(input: Shape, classes: Int) throws -> [LayerSpec] {
        let (pool, segments) = pooling
        let act: LayerSpec = activation == .relu ? .relu : .gelu
        func norm(_ c: Int) -> [LayerSpec] { normalization == .layerNorm ? [.layerNorm(channels: c, epsilon: 1e-5)] : [] }
        let drop: [LayerSpec] = dropout > 0 ? [.dropout(rate: dropout)] : []
        switch architecture {
        case .mlp:
            var specs: [LayerSpec] = [.flatten]
            var width = input.count
            for h in hidden {
                specs += [.linear(inputs: width, outputs: h)] + norm(h) + [act] + drop
                width = h
            }
            specs.append(.linear(inputs: width, outputs: classes))
            return specs
        case .tcn:
            var specs: [LayerSpec] = []
            var width = input.channels
            var dilation = 1
            for w in widths {
                let pad = dilation * (kernel - 1) / 2
                func conv(_ i: Int) -> LayerSpec {
                    .conv1d(inputs: i, outputs: w, kernel: kernel, stride: 1, dilation: dilation, padding: pad)
                }
                if residual {
                    let body = [conv(width)] + norm(w) + [act] + drop + [conv(w)] + norm(w)
                    let shortcut: [LayerSpec] =
                        width == w ? [] : [.conv1d(inputs: width, outputs: w, kernel: 1, stride: 1, dilation: 1, padding: 0)]
                    specs += [.residual(body: body, shortcut: shortcut), act] + drop
                } else {
                    specs += [conv(width)] + norm(w) + [act] + drop
                }
                width = w
                dilation *= dilationBase
            }
            specs += [pool, .linear(inputs: width * segments, outputs: classes)]
            return specs
        case .stgcn:
            throw TrainingError.invalidConfig(field: "architecture", reason: "stgcn is built from the input's skeleton (layers(for:classes:))")
        case .ftp:
            let levels = pyramid.isEmpty ? [1, 2, 4] : pyramid
            let features = input.channels * levels.reduce(0, +) * ftpCoefficients
            return [
                .fourierPyramid(levels: levels, coefficients: ftpCoefficients), .standardize(),
                .linear(inputs: features, outputs: classes),
            ]
        }
    }

    /// The reference models of ../shared/bench (README "What is measured"), for an input of
    /// `[45, 57]` and 6 classes: the MLP 2565-256-128-6 and the temporal convnet
    /// 57→64→128 (kernel 5, padding 2, ReLU), mean over time, linear to 6. Adam, lr 1e-3,
    /// batch 64.
    public static func reference(_ model: String) -> TrainingConfig? {
        var c = TrainingConfig()
        c.optimizer = .adam
        c.learningRate = 1e-3
        c.batchSize = 64
        c.normalization = .none
        c.dropout = 0
        switch model {
        case "mlp":
            c.architecture = .mlp
            c.hidden = [256, 128]
        case "conv":
            c.architecture = .tcn
            c.widths = [64, 128]
            c.kernel = 5
            c.dilationBase = 1
            c.residual = false
        default:
            return nil
        }
        return c
    }
}

public enum TrainingError: Error, Equatable, CustomStringConvertible {
    case invalidConfig(field: String, reason: String)
    /// The loss became NaN or infinite at this epoch and batch (1-based); batch 0: the
    /// validation loss at the end of the epoch (weights out of range while every batch's loss
    /// stayed finite).
    case diverged(epoch: Int, batch: Int, loss: Float)
    case noTrainingData(String)
    /// Early stopping or keep-best need validation data.
    case needsValidation(String)
    /// A checkpoint or optimiser state does not fit the run.
    case incompatibleState(String)

    public var description: String {
        switch self {
        case .invalidConfig(let field, let reason): return "config field '\(field)' \(reason)"
        case .diverged(let epoch, 0, let loss):
            return "training diverged: the validation loss is \(loss) at the end of epoch \(epoch) (the weights grew out of range); lower the learning rate or set gradientClipNorm"
        case .diverged(let epoch, let batch, let loss):
            return "training diverged: the loss is \(loss) at epoch \(epoch), batch \(batch); lower the learning rate or set gradientClipNorm"
        case .noTrainingData(let why): return why
        case .needsValidation(let why): return why
        case .incompatibleState(let why): return "the checkpoint does not fit this run: \(why)"
        }
    }
}
