import ActionRuntime
import Foundation
import ModelExport
import Pipelines
import PoseCore

enum ExportCommand: ParsableCommand {
    enum Format: String, ArgumentChoice { case onnx, coreml }
    enum Interface: String, ArgumentChoice { case native, createml }

    struct Options: CommandOptions {
        var model = ""
        var format: Format?  // nil: onnx
        var out: String?
        var force = false
        var parityWindows = 64
        var rawPoses = false
        // Core ML
        var interface: Interface?
        var aspectRatio: String?
        var imageSize: String?
        var keypointOrder: String?
        var root: CreateMLInput.Root?
        var author: String?
        var license: String?
        var description: String?
        var modelVersion: String?

        /// The most random windows the parity check draws (each a whole window of inputs).
        static let maximumParityWindows = 4096

        func validate() throws {
            guard parityWindows >= 0 && parityWindows <= Self.maximumParityWindows else {
                throw CLIError.usage("--parity-windows must be 0 to \(Self.maximumParityWindows), got \(parityWindows)")
            }
        }

        /// Options that belong to another format or interface than the one chosen.
        func checkCombination() throws {
            if format != .coreml {
                let coreml: [(String, Bool)] = [
                    ("interface", interface != nil), ("aspect-ratio", aspectRatio != nil), ("image-size", imageSize != nil),
                    ("keypoint-order", keypointOrder != nil), ("root", root != nil), ("author", author != nil), ("license", license != nil),
                    ("description", description != nil), ("model-version", modelVersion != nil),
                ]
                if let (flag, _) = coreml.first(where: \.1) { throw CLIError.usage("--\(flag) is a Core ML option: add --format coreml") }
            } else if rawPoses {
                throw CLIError.usage("--raw-poses is for ONNX: a Core ML model always takes raw poses (--interface native or createml)")
            }
            if interface != .createml {
                for (flag, given) in [("aspect-ratio", aspectRatio != nil), ("image-size", imageSize != nil), ("keypoint-order", keypointOrder != nil), ("root", root != nil)]
                where given && format == .coreml {
                    throw CLIError.usage("--\(flag) describes Create ML's input: add --interface createml")
                }
            }
        }

        /// `16:9`, `9:16`, `1.7778`: width / height.
        static func aspectRatio(_ raw: String) throws -> Double {
            let parts = raw.split(separator: ":", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
            let value: Double? =
                parts.count == 2 ? parts[0].flatMap { w in parts[1].map { w / $0 } } : parts.count == 1 ? parts[0] : nil
            guard let value, value.isFinite, value > 0, value <= 100, value >= 0.01 else {
                throw CLIError.usage("--aspect-ratio expects the frames' width:height, e.g. 16:9 (landscape 1920x1080) or 9:16 (portrait), or a number like 1.7778; got '\(raw)'")
            }
            return value
        }

        /// The Create ML input, from the Create ML flags; `skeleton` decides whether --root is needed.
        func createMLInput(skeleton: Skeleton) throws -> CreateMLInput {
            let size = try imageSize.map { try DataFlags.imageSize($0) }
            guard let ratio = try aspectRatio.map(Self.aspectRatio) ?? size.map({ $0[0] / $0[1] }) else {
                throw CLIError.usage(
                    "--interface createml needs the aspect ratio of the app's camera frames, which Vision's normalised points hide: --aspect-ratio 16:9 (landscape), 9:16 (portrait), or --image-size WxH"
                )
            }
            if let size, abs(size[0] / size[1] - ratio) > 1e-3 * ratio {
                throw CLIError.usage("--aspect-ratio \(aspectRatio!) and --image-size \(imageSize!) disagree")
            }
            var order = Skeleton.createMLKeypointOrder
            if let list = keypointOrder {
                order = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard order.count == 18, Set(order).count == 18, order.allSatisfy({ Skeleton.visionBody2D.index(of: $0) != nil && $0 != "root" }) else {
                    throw CLIError.usage("--keypoint-order expects the 18 distinct vision-body-2d joints (without root) in the array's order, comma-separated; got \(order.count): '\(list)'")
                }
            }
            let root =
                try self.root
                ?? {
                    guard !skeleton.joints.contains("root") else {
                        throw CLIError.usage(
                            "--interface createml: Create ML's 18 keypoints have no root, a joint of this model's skeleton; say what it becomes: --root absent (trained on Create ML keypoints, where root was always absent) or --root hips (trained on Vision poses with a root: the midpoint of the hips)"
                        )
                    }
                    return .absent
                }()
            return CreateMLInput(aspectRatio: ratio, imageSize: size, keypointOrder: order, root: root)
        }
    }

    static let spec = CommandSpec<Options>(
        name: "export",
        summary: "Export a model file to another format (ONNX, Core ML) and check that it computes the same results.",
        positionals: [Positional("MODEL", \.model, help: "Model file written by 'actiontrain fit'.")],
        options: [
            Option("format", \.format, value: "FORMAT", help: "Output format: onnx (the default) or coreml (a .mlmodel neural network classifier with the preprocessing, iOS 13+; docs/coreml.md)."),
            Option("out", \.out, value: "FILE", help: "Output file (default: MODEL with the extension .onnx or .mlmodel). Not overwritten unless --force."),
            Option("force", \.force, help: "Overwrite the output file if it exists."),
            Option("parity-windows", \.parityWindows, value: "N", help: "Random windows for the parity check (default 64, at most 4096; 0 skips it)."),
            Option("raw-poses", \.rawPoses, help: "Include the preprocessing: the graph takes raw poses [batch, frames, joints, dims + 1] (coordinates and a confidence, 0 for absent joints) instead of network inputs."),
            Option("interface", \.interface, value: "NAME", help: "coreml: native (poses [frames, joints, dims + 1] on the model's skeleton, the default) or createml (poses [frames, 3, 18] as Create ML's action classifiers take it: a drop-in for Apple's Action & Vision app)."),
            Option("aspect-ratio", \.aspectRatio, value: "W:H", help: "createml: the app's frame width:height (16:9, 9:16, 4:3 or a number); recorded in the metadata."),
            Option("image-size", \.imageSize, value: "WxH", help: "createml: the app's frame size in pixels (needed when the preprocessing has no scaleByTorso step)."),
            Option("keypoint-order", \.keypointOrder, value: "LIST", help: "createml: the 18 joints of keypointsMultiArray() in order, comma-separated (default: Create ML's documented order, docs/coreml.md)."),
            Option("root", \.root, value: "RULE", help: "createml: what the skeleton's root joint becomes: absent (trained on Create ML keypoints) or hips (the hips' midpoint, for models trained on Vision poses with a root)."),
            Option("author", \.author, value: "TEXT", help: "coreml: the author Xcode shows."),
            Option("license", \.license, value: "TEXT", help: "coreml: the licence Xcode shows."),
            Option("description", \.description, value: "TEXT", help: "coreml: the short description (default: classes, window and frame rate)."),
            Option("model-version", \.modelVersion, value: "TEXT", help: "coreml: the version string Xcode shows."),
        ],
        discussion: """
            The ONNX graph (opset 17) takes the network input float32 [batch, frames, channels] and
            gives logits and probabilities [batch, classes]. Its metadata_props hold the classes and
            the whole input description (skeleton, window, preprocessing steps, channel blocks) as
            JSON under actiontrain.* keys (docs/format.md section 7). With --raw-poses the graph
            also centres, scales, aligns and builds the channels itself: a runtime feeds cut windows
            of raw joints, poses [batch, frames, joints, dims + 1], the last value a confidence
            above 0 for present joints (1 without one) and 0 for absent ones. When python3 can import
            onnxruntime, the export is run on seeded random inputs and the largest absolute logit
            difference to this runtime is printed; above 1e-4 the command fails.

            --format coreml writes a Core ML NeuralNetworkClassifier (.mlmodel, specification 4,
            iOS 13+) with the input conversion, the preprocessing and the network in the graph:
            input poses, outputs label and labelProbabilities, the classes, window, frame rate,
            skeleton and joint order in the metadata (docs/coreml.md). When python3 can import
            numpy and coremltools, tools/python/coreml_eval.py loads and validates it and
            evaluates it on seeded random windows; above 1e-5 in any probability the command
            fails.
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let modelPath = options.model
        let ext = options.format == .coreml ? ".mlmodel" : ".onnx"
        let outPath = options.out ?? (URL(fileURLWithPath: modelPath).deletingPathExtension().path + ext)
        try OutputGuard.checkOutput(
            outPath, force: options.force, inputs: [modelPath], exists: "\(outPath) exists; pass --force to overwrite it or choose another --out")
        try options.checkCombination()
        let (header, network) = try ModelFile.load(contentsOf: modelPath)
        do {
            // A model eval and predict refuse (outputs not finite on a plain pose) exports to
            // nothing usable: refused here too, before any file or parity run.
            try ActionModel(contentsOf: modelPath).checkOutputs()
        } catch let e as ModelError {
            throw CLIError.failure("\(modelPath): \(e)")
        }
        if options.format == .coreml {
            try exportCoreML(options, header: header, network: network, to: outPath, out: &out)
        } else {
            try exportONNX(options, header: header, network: network, to: outPath, out: &out)
        }
    }

    static func exportONNX(_ options: Options, header: ModelHeader, network: Network, to outPath: String, out: inout Output) throws {
        let windows = options.parityWindows
        let onnx = try ONNXExport.export(header: header, network: network, rawPoses: options.rawPoses)
        try AtomicFile.write(Data(onnx), to: outPath)
        let s = header.input.skeleton
        let input =
            options.rawPoses
            ? "poses [batch, \(header.inputShape.time), \(s.jointCount), \(s.dimensions + 1)] with the preprocessing"
            : "input [batch, \(header.inputShape.time), \(header.inputShape.channels)]"
        out.line("export: wrote \(outPath) (\(onnx.count) bytes, ONNX opset \(ONNXExport.opset), \(input), \(header.classes.count) classes)")
        guard windows > 0 else { return }
        let result =
            options.rawPoses
            ? try ONNXParity.checkRaw(onnx: onnx, header: header, network: network, windows: windows)
            : try ONNXParity.check(onnx: onnx, network: network, windows: windows)
        guard let r = result else {
            out.line("parity: not checked (\(ONNXParity.python) cannot import numpy and onnxruntime; pip install numpy onnxruntime)")
            return
        }
        let figure = String(format: "%.3g", r.maxAbsDifference)
        out.line("parity: max |logit difference| vs the Swift runtime over \(r.windows) random \(options.rawPoses ? "raw " : "")windows: \(figure) (onnxruntime \(r.onnxruntimeVersion))")
        guard r.maxAbsDifference <= 1e-4 else {
            throw CLIError.failure("\(outPath): onnxruntime's logits differ from the runtime's by \(figure) (more than 1e-4); the export is wrong, please report it")
        }
    }

    static func exportCoreML(_ options: Options, header: ModelHeader, network: Network, to outPath: String, out: inout Output) throws {
        let interface: CoreMLExport.Interface =
            options.interface == .createml ? .createML(try options.createMLInput(skeleton: header.input.skeleton)) : .native
        let coreml: [UInt8]
        do {
            coreml = try CoreMLExport.export(
                header: header, network: network,
                options: .init(interface: interface, author: options.author, license: options.license, shortDescription: options.description, version: options.modelVersion))
        } catch CoreMLExport.ExportError.imageSizeNeeded {
            throw CLIError.usage(
                "--interface createml: this model's preprocessing has no scaleByTorso step, so its outputs depend on the pixel size of the poses, not only on the aspect ratio: give the app's frame size with --image-size WxH")
        }
        try AtomicFile.write(Data(coreml), to: outPath)
        let shape = CoreMLExport.inputShape(header.input, interface: interface).map(String.init).joined(separator: ", ")
        let layout = options.interface == .createml ? "Create ML's keypoints" : "raw \(header.input.skeleton.name) poses"
        out.line(
            "export: wrote \(outPath) (\(coreml.count) bytes, Core ML neural network classifier, specification \(CoreMLExport.specificationVersion) (iOS 13+), input poses [\(shape)] of \(layout), \(header.classes.count) classes)"
        )
        guard options.parityWindows > 0 else { return }
        guard let script = CoreMLParity.script() else {
            out.line("parity: not checked (tools/python/coreml_eval.py not found; set ACTIONTRAIN_TOOLS to the tools/python folder)")
            return
        }
        guard let r = try CoreMLParity.check(mlmodel: coreml, header: header, network: network, interface: interface, windows: options.parityWindows, script: script) else {
            out.line("parity: not checked (\(CoreMLParity.python) cannot import numpy and coremltools; pip install numpy coremltools)")
            return
        }
        let figure = String(format: "%.3g", r.maxAbsDifference)
        let version = (r.model["coremltools"] as? [String: Any])?["version"] as? String ?? "?"
        out.line(
            "parity: coremltools \(version) loads and validates it; max |probability difference| of tools/python/coreml_eval.py vs the Swift runtime over \(r.windows) random windows: \(figure)"
        )
        guard r.maxAbsDifference <= 1e-5 else {
            throw CLIError.failure("\(outPath): the Core ML model's probabilities differ from the runtime's by \(figure) (more than 1e-5); the export is wrong, please report it")
        }
    }
}

extension CreateMLInput.Root: ArgumentChoice {}
