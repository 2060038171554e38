import ActionRuntime
import Foundation
import PoseCore

/// A graph the Core ML exports lower the classifier into (`CoreMLGraph`, `CoreMLProgramGraph`).
protocol CoreMLLowering: ONNXGraph {
    /// The first error of a lowering; later ops are skipped.
    var failure: CoreMLExport.ExportError? { get }
    func input(_ name: String, shape: [Int])
    func shape(of name: String) -> [Int]?
    /// Sets what errors name while `body` emits ops.
    func within<T>(_ what: String, _ body: () throws -> T) rethrows -> T
    /// Emits the network's layers (`body`): a Float16 program computes them in Float16.
    func network<T>(_ body: () throws -> T) rethrows -> T
    /// A node whose output is named `output`.
    func node(_ op: String, _ inputs: [String], attributes: [(String, ONNXAttribute)], name: String, output: String?) -> String
}

/// Exports a loaded model as a Core ML model (`.mlmodel`): a `NeuralNetworkClassifier`
/// (specification version 4: iOS 13, macOS 10.15, tvOS 13, watchOS 6), protobuf written by
/// hand from Apple's published schema (Model.proto, FeatureTypes.proto, NeuralNetwork.proto).
///
/// Model contract (docs/coreml.md):
/// - one input `poses`, a float32 MultiArray of one window: with `.native`, `[F, J, D + 1]`
///   (the skeleton's joints, their coordinates, then a confidence, 0 for absent joints: the
///   ONNX `--raw-poses` layout without the batch); with `.createML`, `[F, 3, 18]`, exactly
///   what Create ML's action classifiers take (Vision's `keypointsMultiArray()` per frame);
/// - outputs `labelProbabilities` (String → Double) and `label` (String), the classes from the
///   model file;
/// - the graph holds the input conversion, the whole preprocessing (steps and channel blocks)
///   and the network: the same op-level description as the ONNX export (`ONNXGraph`), lowered
///   to Core ML layers by `CoreMLGraph`;
/// - the metadata Xcode shows (author, licence, description, version) and user-defined keys:
///   classes, window, frame rate, skeleton and joint order, the input conversion, toolkit
///   version, training data hash and the `actiontrain.*` keys of the ONNX export.
public enum CoreMLExport {
    public static let specificationVersion = 4

    public enum Limits {
        /// Values in any one tensor of the graph (the input, each intermediate value).
        public static let tensorValues = 1 << 26
        /// Bytes of weights: a `.mlmodel` is one protobuf message, which cannot reach 2 GiB.
        public static let weightBytes = (1 << 31) - (64 << 20)
    }

    public enum Interface: Equatable, Sendable {
        /// `poses [F, J, D + 1]` on the model's own skeleton.
        case native
        /// `poses [F, 3, 18]` as Create ML's action classifiers take it.
        case createML(CreateMLInput)
    }

    public struct Options: Sendable {
        public var interface: Interface
        public var author: String?
        public var license: String?
        public var shortDescription: String?
        public var version: String?
        public init(interface: Interface = .native, author: String? = nil, license: String? = nil, shortDescription: String? = nil, version: String? = nil) {
            self.interface = interface
            self.author = author
            self.license = license
            self.shortDescription = shortDescription
            self.version = version
        }
    }

    public enum ExportError: Error, CustomStringConvertible, Equatable {
        /// An op the lowering does not support, in the named layer (or the preprocessing).
        case unsupported(op: String, in: String, reason: String)
        /// An op the ML Program lowering does not support, in the named layer (or the preprocessing).
        case unsupportedInProgram(op: String, in: String, reason: String)
        /// A Float16 program's constant beyond Float16's range.
        case float16Range(String)
        /// A tensor or the weights beyond `Limits`.
        case tooLarge(String)
        /// The chosen interface does not fit the model.
        case interface(String)
        /// The Create ML interface of a model whose preprocessing is not scale-invariant needs
        /// the frames' size in pixels, not only their aspect ratio.
        case imageSizeNeeded

        public var description: String {
            switch self {
            case .unsupported(let op, let place, let reason):
                return "cannot export \(place) to Core ML: its op '\(op)' cannot be lowered to a NeuralNetwork layer: \(reason)"
            case .unsupportedInProgram(let op, let place, let reason):
                return "cannot export \(place) to a Core ML ML Program: its op '\(op)' cannot be lowered to a MIL operation: \(reason)"
            case .float16Range(let why):
                return "cannot export to a Float16 Core ML ML Program: \(why); export it in Float32"
            case .tooLarge(let why): return "cannot export to Core ML: \(why)"
            case .interface(let why): return "cannot export to Core ML: \(why)"
            case .imageSizeNeeded:
                return
                    "cannot export to Core ML: the Create ML interface: this model's preprocessing has no scaleByTorso step, so its outputs depend on the pixel size of the poses, not only on the aspect ratio: give the app's frame size in pixels"
            }
        }
    }

    /// The input's shape for `interface`.
    public static func inputShape(_ spec: InputSpec, interface: Interface) -> [Int] {
        switch interface {
        case .native: return [spec.window.frames, spec.skeleton.jointCount, spec.skeleton.dimensions + 1]
        case .createML: return [spec.window.frames, 3, 18]
        }
    }

    /// The `.mlmodel` bytes for `header` and its loaded `network`. Deterministic.
    public static func export(header h: ModelHeader, network: Network, options: Options = Options()) throws -> [UInt8] {
        let g = CoreMLGraph(network: network)
        let shape = try lower(h, into: g, options: options, probabilities: "labelProbabilities") {
            .unsupported(op: "Softmax", in: "the output", reason: $0)
        }
        return try model(h, layers: g.layers, inputShape: shape, options: options)
    }

    /// Emits the whole classifier into `g`, the same for both Core ML forms: the input `poses`,
    /// its conversion, the preprocessing, the network (inside `g.network`), then `logits` `[K]`
    /// and their softmax `probabilities`; returns the input's shape. `mismatch` is the error
    /// when the network does not give K values.
    static func lower(
        _ h: ModelHeader, into g: some CoreMLLowering, options: Options, probabilities: String, mismatch: (String) -> ExportError
    ) throws -> [Int] {
        let spec = h.input, F = spec.window.frames, K = h.classes.count
        let shape = inputShape(spec, interface: options.interface)
        let count = shape.reduce(1) { n, d in n.multipliedReportingOverflow(by: d).overflow ? Int.max : n * d }
        guard count <= Limits.tensorValues else {
            throw ExportError.tooLarge("the input poses \(shape) hold \(count) values per window, more than the \(Limits.tensorValues) the Core ML export allows")
        }
        g.input("poses", shape: shape)
        let poses: String
        switch options.interface {
        case .native:
            poses = g.within("the input") { g.reshape("poses", [1] + shape) }
        case .createML(let c):
            let plan = try c.plan(for: spec)
            poses = g.within("the Create ML input") {
                g.createMLPoses("poses", frames: F, sources: plan.sources, hips: plan.hips, units: c.units)
            }
        }
        let x = try g.within("the preprocessing") { try g.preprocessing(spec, poses: poses) }
        if let f = g.failure { throw f }
        let z = try g.network { try g.emit(h.layers, prefix: "layers.", input: x, shape: h.inputShape) }
        g.within("the output") {
            let logits = g.node("Reshape", [z, g.int64s("shape.classes", [K])], attributes: [], name: "logits", output: "logits")
            _ = g.node("Softmax", [logits], attributes: [("axis", .int(-1))], name: "probabilities", output: probabilities)
        }
        if let f = g.failure { throw f }
        guard g.shape(of: probabilities) == [K] else { throw mismatch("the network gives \(g.shape(of: "logits") ?? []) values, expected \(K) classes") }
        return shape
    }

    // MARK: - The model message

    private static func model(_ h: ModelHeader, layers: [[UInt8]], inputShape: [Int], options: Options) throws -> [UInt8] {
        var m = ProtobufWriter()
        m.int(1, specificationVersion)
        try describe(&m, h, inputShape: inputShape, options: options)
        m.message(403) { nn in
            for l in layers { nn.data(1, l) }
            nn.int(5, 1)  // EXACT_ARRAY_MAPPING: the input's shape as declared
            nn.message(100) { v in for c in h.classes { v.string(1, c) } }
            nn.string(200, "labelProbabilities")
        }
        return m.bytes
    }

    /// The `ModelDescription` (field 2) of a classifier: input `poses` (float32 MultiArray of
    /// `inputShape`), outputs `labelProbabilities` (String → Double) and `label`, the metadata.
    /// The same for the neural network and the ML Program.
    static func describe(_ m: inout ProtobufWriter, _ h: ModelHeader, inputShape: [Int], options: Options) throws {
        let userDefined = try metadata(h, interface: options.interface)
        m.message(2) { d in
            d.message(1) { f in
                f.string(1, "poses")
                f.string(2, inputDescription(h, options.interface))
                f.message(3) {
                    $0.message(5) { a in
                        a.packedInts(1, inputShape)
                        a.int(2, 65568)  // FLOAT32
                    }
                }
            }
            d.message(10) { f in
                f.string(1, "labelProbabilities")
                f.string(2, "Probability of each category")
                f.message(3) { $0.message(6) { $0.message(2) { _ in } } }  // dictionary, string keys
            }
            d.message(10) { f in
                f.string(1, "label")
                f.string(2, "Most likely action category")
                f.message(3) { $0.message(3) { _ in } }  // string
            }
            d.string(11, "label")
            d.string(12, "labelProbabilities")
            d.message(100) { md in
                md.string(1, options.shortDescription ?? defaultDescription(h, options.interface))
                md.string(2, options.version ?? "")
                md.string(3, options.author ?? "")
                md.string(4, options.license ?? "")
                for (k, v) in userDefined {
                    md.message(100) {
                        $0.string(1, k)
                        $0.string(2, v)
                    }
                }
            }
        }
    }

    /// The input's description (Xcode copies it into the generated interface).
    static func inputDescription(_ h: ModelHeader, _ interface: Interface) -> String {
        let s = h.input.skeleton, F = h.input.window.frames
        switch interface {
        case .native:
            return
                "A window of \(F) frames of body poses to classify, \(F) × \(s.jointCount) × \(s.dimensions + 1): per frame, per joint of skeleton '\(s.name)' (\(s.joints.joined(separator: ", "))), its \(s.dimensions) coordinates in \(s.units.rawValue)\(s.units == .pixels ? " (origin top-left, y down)" : ""), then a confidence above 0 for a present joint (1 without one) and 0 for an absent one."
        case .createML(let c):
            let names = c.keypointOrder.map(spokenName).joined(separator: ", ")
            return
                "A sequence of body poses to classify. Its multiarray encoding uses the first dimension to index time over \(F) frames. The second dimension indexes x, y, and confidence of pose keypoint locations (Vision's normalized coordinates, origin at the bottom left; confidence 0 means not detected). The last dimension indexes the keypoint type, ordered as: \(names) as \(F) × 3 × 18 3-dimensional array of floats (VNHumanBodyPoseObservation.keypointsMultiArray() per frame, stacked on the first dimension)."
        }
    }

    /// `rightShoulder` → `right shoulder`.
    static func spokenName(_ joint: String) -> String {
        var out = ""
        for ch in joint {
            if ch.isUppercase { out += " " + ch.lowercased() } else { out.append(ch) }
        }
        return out
    }

    static func defaultDescription(_ h: ModelHeader, _ interface: Interface) -> String {
        let i = h.input, rate = frameRate(h).map { "\(format($0)) fps" } ?? "the training data's frame rate"
        let how: String
        switch interface {
        case .native: how = "raw \(i.skeleton.name) poses"
        case .createML: how = "Vision body poses (Create ML's action classifier input)"
        }
        let windows: String
        if i.window.mode == .fit {
            let clip = WindowText.clip(h).map { " (\($0))" } ?? ""
            windows = "whole clips\(clip) each resampled to \(i.window.frames) frames"
        } else {
            windows = "windows of \(i.window.frames) frames at \(rate)"
        }
        return "Action classifier trained with \(ActionRuntimeInfo.tool): \(h.classes.count) classes (\(h.classes.joined(separator: ", "))) from \(windows) of \(how)."
    }

    /// The frame rate the model's windows are sampled at: the window's, else the training data's.
    static func frameRate(_ h: ModelHeader) -> Double? { h.input.window.frameRate ?? h.trainingFrameRate }

    static func format(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }

    /// The user-defined metadata, keys in this order: what an app needs in plain words, then
    /// the ONNX export's `actiontrain.*` keys (the whole input description and provenance).
    public static func metadata(_ h: ModelHeader, interface: Interface) throws -> [(key: String, value: String)] {
        let i = h.input, s = i.skeleton
        let json = { (v: [String]) in String(decoding: try JSONEncoder().encode(v), as: UTF8.self) }
        var out: [(String, String)] = [
            ("classes", try json(h.classes)),
            ("windowFrames", "\(i.window.frames)"),
            ("windowMode", WindowText.mode(h)),
        ]
        if i.window.mode == .fit {
            out.append(("frameRate", frameRate(h).map { "\(format($0)) (frames per second the clip is taken at, before it is resampled to the window)" } ?? "unknown"))
            out += WindowText.clipKeys(h).map { ($0.key, $0.plain) }
        } else {
            out.append(
                (
                    "frameRate",
                    frameRate(h).map { "\(format($0)) (frames per second of the window: sample the camera at this rate)" }
                        ?? "unknown (the model saw frames at the rate of its training data)"
                ))
        }
        out.append(("skeleton", s.name))
        switch interface {
        case .native:
            out += [
                ("interface", "native: poses [frames, joints, dimensions + 1] on the skeleton's joints"),
                ("jointOrder", try json(s.joints)),
            ]
        case .createML(let c):
            let u = c.units
            out += [
                ("interface", "createml: poses [frames, 3, 18], Vision's keypointsMultiArray() per frame, as Create ML's action classifiers"),
                (
                    "jointOrder",
                    try json(c.keypointOrder)
                        + (c.keypointOrder == Skeleton.createMLKeypointOrder
                            ? "; source: the order Create ML states in every action classifier's poses input description (Xcode's generated model interface), which Apple's Action & Vision sample fills with keypointsMultiArray() unchanged; OpenPose's COCO-18 order"
                            : "; given at export")
                ),
                ("imageAspectRatio", "\(c.aspectRatio) (width / height of the app's frames)"),
                (
                    "coordinateConversion",
                    "x_px = x · \(format(u.width)), y_px = (1 − y) · \(format(u.height)); confidence 0 = absent"
                        + (c.imageSize == nil ? " (units of the image height: the preprocessing is scale-invariant)" : " (pixels of a \(format(u.width))x\(format(u.height)) image)")
                ),
                ("rootJoint", c.root == .hips ? "hips: the midpoint of leftHip and rightHip when both are detected" : "absent: Create ML's keypoints have no root"),
            ]
            if let size = c.imageSize { out.append(("imageSize", "\(format(size[0]))x\(format(size[1]))")) }
        }
        out += [
            ("toolkitVersion", ActionRuntimeInfo.tool),
            ("trainingDataHash", h.provenance.datasetHash ?? "unknown"),
        ]
        out += try ONNXExport.metadata(h)
        return out
    }
}
