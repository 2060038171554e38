import ActionRuntime
import Datasets
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
        var data: String?
        var reading = DataFlags()
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
        var precision: CoreMLPackage.Precision?

        /// The most random windows the parity check draws (each a whole window of inputs).
        static let maximumParityWindows = 4096

        func validate() throws {
            guard parityWindows >= 0 && parityWindows <= Self.maximumParityWindows else {
                throw CLIError.usage("--parity-windows must be 0 to \(Self.maximumParityWindows), got \(parityWindows)")
            }
            if data == nil, let flag = [("min-confidence", reading.minConfidence != nil), ("people", reading.people != nil), ("strict", reading.strict)].first(where: \.1) {
                throw CLIError.usage("--\(flag.0) is for reading --data FILE, the parity check's windows: add --data")
            }
            if data != nil && parityWindows == 0 { throw CLIError.usage("--data gives the parity check its windows; --parity-windows 0 skips the check") }
        }

        /// Options that belong to another format or interface than the one chosen.
        func checkCombination() throws {
            if format != .coreml {
                let coreml: [(String, Bool)] = [
                    ("interface", interface != nil), ("aspect-ratio", aspectRatio != nil), ("image-size", imageSize != nil),
                    ("keypoint-order", keypointOrder != nil), ("root", root != nil), ("author", author != nil), ("license", license != nil),
                    ("description", description != nil), ("model-version", modelVersion != nil), ("precision", precision != nil),
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

        /// True when the output is an ML Program package (`--out NAME.mlpackage`).
        var writesPackage: Bool { out.map { URL(fileURLWithPath: $0).pathExtension.lowercased() == "mlpackage" } ?? false }

        /// An output name whose extension says another format than the one written.
        func checkOutputName() throws {
            guard let out else {
                if precision != nil { throw CLIError.usage("--precision is for an ML Program package: give --out NAME.mlpackage") }
                return
            }
            let ext = URL(fileURLWithPath: out).pathExtension.lowercased()
            if ext == "mlpackage" && format != .coreml {
                throw CLIError.usage("--out \(out): an ML Program package is a Core ML model: add --format coreml (or give a name ending in .onnx)")
            }
            if precision != nil && ext != "mlpackage" {
                throw CLIError.usage("--precision is for an ML Program package (.mlpackage); a .mlmodel neural network always computes in Float32 on the CPU: give --out NAME.mlpackage")
            }
            if format == .coreml && ext == "onnx" {
                throw CLIError.usage("--out \(out): --format coreml writes a .mlmodel (or, for a name ending in .mlpackage, an ML Program package); give a name ending in .mlmodel or .mlpackage")
            }
            if format != .coreml && ext == "mlmodel" {
                throw CLIError.usage("--out \(out): this writes ONNX (the default format); add --format coreml for a Core ML model, or give a name ending in .onnx")
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
            Option(
                "out", \.out, value: "FILE",
                help:
                    "Output file (default: MODEL with the extension .onnx or .mlmodel); with --format coreml, a name ending in .mlpackage writes an ML Program package (a folder, iOS 16+). Not overwritten unless --force."
            ),
            Option("force", \.force, help: "Overwrite the output file if it exists."),
            Option("parity-windows", \.parityWindows, value: "N", help: "Windows for the parity check (default 64, at most 4096; 0 skips it)."),
            Option(
                "data", \.data, value: "FILE",
                help: "Check parity on windows of this data file (the windows the model will see; any format fit reads) instead of windows from the model file's pose statistics."),
            Option("raw-poses", \.rawPoses, help: "Include the preprocessing: the graph takes raw poses [batch, frames, joints, dims + 1] (coordinates and a confidence, 0 for absent joints) instead of network inputs."),
            Option("interface", \.interface, value: "NAME", help: "coreml: native (poses [frames, joints, dims + 1] on the model's skeleton, the default) or createml (poses [frames, 3, 18] as Create ML's action classifiers take it: a drop-in for Apple's Action & Vision app)."),
            Option("aspect-ratio", \.aspectRatio, value: "W:H", help: "createml: the app's frame width:height (16:9, 9:16, 4:3 or a number); recorded in the metadata."),
            Option("image-size", \.imageSize, value: "WxH", help: "createml: the app's frame size in pixels (needed when the preprocessing has no scaleByTorso step)."),
            Option("keypoint-order", \.keypointOrder, value: "LIST", help: "createml: the 18 joints of keypointsMultiArray() in order, comma-separated (default: Create ML's documented order, docs/coreml.md)."),
            Option(
                "root", \.root, value: "RULE",
                help:
                    "createml: what the skeleton's root joint becomes: absent (trained on Create ML keypoints) or hips (the hips' midpoint with the mean of their confidences, absent unless both hips are seen; for models trained on Vision poses with a root)."
            ),
            Option("author", \.author, value: "TEXT", help: "coreml: the author Xcode shows."),
            Option("license", \.license, value: "TEXT", help: "coreml: the licence Xcode shows."),
            Option("description", \.description, value: "TEXT", help: "coreml: the short description (default: classes, window and frame rate)."),
            Option("model-version", \.modelVersion, value: "TEXT", help: "coreml: the version string Xcode shows."),
            Option(
                "precision", \.precision, value: "TYPE",
                help: "coreml with --out NAME.mlpackage: float16 (the default: weights and network arithmetic in half precision, the preprocessing in float32) or float32."),
        ] + DataFlags.options.map { $0.within(\.reading) },
        discussion: """
            The ONNX graph (opset 17) takes the network input float32 [batch, frames, channels] and
            gives logits and probabilities [batch, classes]. Its metadata_props hold the classes and
            the whole input description (skeleton, window, preprocessing steps, channel blocks) as
            JSON under actiontrain.* keys (docs/format.md section 7). With --raw-poses the graph
            also centres, scales, aligns and builds the channels itself: a runtime feeds cut windows
            of raw joints, poses [batch, frames, joints, dims + 1], the last value a confidence
            above 0 for present joints (1 without one) and 0 for absent ones.

            --format coreml writes a Core ML NeuralNetworkClassifier (.mlmodel, specification 4,
            iOS 13+) with the input conversion, the preprocessing and the network in the graph:
            input poses, outputs label and labelProbabilities, the classes, window, frame rate,
            skeleton and joint order in the metadata (docs/coreml.md). With --out NAME.mlpackage
            it writes the same model as a Core ML ML Program package (specification 7, iOS 16+):
            Float16 weights and network arithmetic (--precision float16, the default) or Float32.

            The parity check (docs/format.md 7.3) runs the export on windows of poses (of --data,
            else made from the pose statistics the model file keeps, else random) with onnxruntime
            (python3 with numpy and onnxruntime) or with tools/python/coreml_eval.py (numpy and
            coremltools, which also load and validate the model), compares the logits with this
            runtime's and fails above a tolerance set by the model's own float32 error: 32 times
            the difference between NumPy runs of the exported graph in float32 and in float64. A
            Float16 package is checked twice: the same program in Float32 as above, and the Float16
            program within 4 times its own error (its NumPy run with half-precision values
            against its float64 run). The output is written only when the check passes (or cannot run).
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let modelPath = options.model
        let ext = options.format == .coreml ? ".mlmodel" : ".onnx"
        let outPath = options.out ?? ((modelPath as NSString).deletingPathExtension + ext)  // relative stays relative
        if options.writesPackage && options.format == .coreml {
            try checkPackageOutput(outPath, force: options.force, model: modelPath)
        } else {
            try OutputGuard.checkOutput(
                outPath, force: options.force, inputs: [modelPath], exists: "\(outPath) exists; pass --force to overwrite it or choose another --out")
        }
        try options.checkCombination()
        try options.checkOutputName()
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

    /// The parity check's windows: of --data, else made from the model file's pose statistics,
    /// else random (seeded).
    static func parityPoses(_ options: Options, header: ModelHeader, out: inout Output) throws -> PoseWindows {
        let count = options.parityWindows
        guard let path = options.data else {
            if let p = header.poseStatistics { return .statistics(p, input: header.input, count: count, seed: 1) }
            return .random(input: header.input, count: count, seed: 1)
        }
        let m = header.input.bodies ?? 1
        switch options.reading.people {
        case .bodies(let k)? where k != m:
            throw CLIError.usage("the model takes \(m) \(m == 1 ? "person" : "people") per frame: give --people bodies=\(m), or leave --people out")
        case .split?, .pick?:
            if m > 1 { throw CLIError.usage("the model takes \(m) people per frame: give --people bodies=\(m), or leave --people out") }
        default: break
        }
        let dataset = try options.reading.load(path, people: PeoplePolicy(modelInput: header.input), out: &out)
        if let why = header.input.skeleton.mismatch(data: dataset.skeleton) { throw CLIError.failure("\(path): \(why)") }
        let poses = try PoseWindows.data(dataset, name: path, input: header.input, count: count)
        guard poses.count > 0 else { throw CLIError.failure("\(path): no window to check the export on (no sequence has a frame)") }
        return poses
    }

    /// Writes `bytes` to `outPath` (whole or not at all) and says so; `what` describes them.
    static func write(_ bytes: [UInt8], to outPath: String, _ what: String, out: inout Output) throws {
        try AtomicFile.write(Data(bytes), to: outPath)
        out.line("export: wrote \(outPath) (\(bytes.count) bytes, \(what))")
    }

    /// The checks of an ML Program package's destination (a folder): an existing package is
    /// replaced only with --force; anything else there (a file, a folder that is not a package,
    /// a special file) is refused, with --force too; the model file is never inside it.
    static func checkPackageOutput(_ path: String, force: Bool, model: String) throws {
        guard !path.isEmpty else { throw CLIError.usage("the output path is empty; give a name ending in .mlpackage") }
        let resolvedModel = URL(fileURLWithPath: model).resolvingSymlinksInPath().path
        let resolvedOut = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        if resolvedModel == resolvedOut || resolvedModel.hasPrefix(resolvedOut + "/") {
            throw CLIError.failure("\(path) holds the input \(model); choose another output path, the input is never overwritten")
        }
        var folder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &folder) else {
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil {
                throw CLIError.failure("\(path) is a dangling symbolic link; choose another --out")
            }
            return
        }
        guard folder.boolValue, CoreMLPackage.isPackage(path) else {
            throw CLIError.failure("\(path) exists and is not an ML package (a folder with a Manifest.json); it is never replaced: choose another --out")
        }
        if !force { throw CLIError.failure("\(path) exists; pass --force to replace the package or choose another --out") }
    }

    /// The failure of a check: nothing was written.
    static func notWritten(_ outPath: String, _ why: String) -> CLIError {
        .failure("\(outPath) not written: \(why); the export is wrong, please report it (docs/format.md 7.3)")
    }

    static func exportONNX(_ options: Options, header: ModelHeader, network: Network, to outPath: String, out: inout Output) throws {
        let onnx = try ONNXExport.export(header: header, network: network, rawPoses: options.rawPoses)
        let s = header.input.skeleton
        let input =
            options.rawPoses
            ? "poses [batch, \(header.inputShape.time), \(s.jointCount), \(s.dimensions + 1)] with the preprocessing"
            : "input [batch, \(header.inputShape.time), \(header.inputShape.channels)]"
        let what = "ONNX opset \(ONNXExport.opset), \(input), \(header.classes.count) classes"
        guard options.parityWindows > 0 else { return try write(onnx, to: outPath, what, out: &out) }
        let poses = try parityPoses(options, header: header, out: &out)
        let result =
            options.rawPoses
            ? try ONNXParity.compare([ONNXParity.rawCase(onnx: onnx, header: header, network: network, poses: poses)], windows: poses.count)?.first
            : try ONNXParity.check(onnx: onnx, header: header, network: network, poses: poses)
        guard let r = result else {
            try write(onnx, to: outPath, what, out: &out)
            let missing = ONNXParity.evaluator == nil ? "tools/python/onnx_eval.py not found; set ACTIONTRAIN_TOOLS to the tools/python folder" : "\(ONNXParity.python) cannot import numpy and onnxruntime; pip install numpy onnxruntime"
            return out.line("parity: not checked (\(missing))")
        }
        let line = "parity: max |logit difference| vs the Swift runtime over \(r.windows) \(poses.source): \(r.figures.summary); onnxruntime \(r.onnxruntimeVersion))"
        guard r.passed else {
            out.line(line)
            throw notWritten(outPath, "onnxruntime's logits differ from the runtime's by \(ParityFigures.format(r.figures.difference)), more than the tolerance \(ParityFigures.format(r.figures.tolerance))")
        }
        try write(onnx, to: outPath, what, out: &out)
        out.line(line)
    }

    static func exportCoreML(_ options: Options, header: ModelHeader, network: Network, to outPath: String, out: inout Output) throws {
        let interface: CoreMLExport.Interface =
            options.interface == .createml ? .createML(try options.createMLInput(skeleton: header.input.skeleton)) : .native
        let exportOptions = CoreMLExport.Options(
            interface: interface, author: options.author, license: options.license, shortDescription: options.description, version: options.modelVersion)
        if options.writesPackage {
            return try exportPackage(options, header: header, network: network, exportOptions: exportOptions, to: outPath, out: &out)
        }
        let coreml: [UInt8]
        do {
            coreml = try CoreMLExport.export(header: header, network: network, options: exportOptions)
        } catch CoreMLExport.ExportError.imageSizeNeeded {
            throw CLIError.usage(
                "--interface createml: this model's preprocessing has no scaleByTorso step, so its outputs depend on the pixel size of the poses, not only on the aspect ratio: give the app's frame size with --image-size WxH")
        }
        let shape = CoreMLExport.inputShape(header.input, interface: interface).map(String.init).joined(separator: ", ")
        let layout = options.interface == .createml ? "Create ML's keypoints" : "raw \(header.input.skeleton.name) poses"
        let what =
            "Core ML neural network classifier, specification \(CoreMLExport.specificationVersion) (iOS 13+), input poses [\(shape)] of \(layout), \(header.classes.count) classes"
        guard options.parityWindows > 0 else { return try write(coreml, to: outPath, what, out: &out) }
        guard let script = CoreMLParity.script() else {
            try write(coreml, to: outPath, what, out: &out)
            return out.line("parity: not checked (tools/python/coreml_eval.py not found; set ACTIONTRAIN_TOOLS to the tools/python folder)")
        }
        let poses = try parityPoses(options, header: header, out: &out)
        guard let r = try CoreMLParity.check(mlmodel: coreml, header: header, network: network, interface: interface, poses: poses, script: script) else {
            try write(coreml, to: outPath, what, out: &out)
            return out.line("parity: not checked (\(CoreMLParity.python) cannot import numpy and coremltools; pip install numpy coremltools)")
        }
        let version = (r.model["coremltools"] as? [String: Any])?["version"] as? String ?? "?"
        let line =
            "parity: coremltools \(version) loads and validates it; max |logit difference| of tools/python/coreml_eval.py vs the Swift runtime over \(r.windows) \(poses.source): \(r.figures.summary))"
        guard r.passed else {
            out.line(line)
            throw notWritten(outPath, "the Core ML model's logits differ from the runtime's by \(ParityFigures.format(r.figures.difference)), more than the tolerance \(ParityFigures.format(r.figures.tolerance))")
        }
        try write(coreml, to: outPath, what, out: &out)
        out.line(line)
    }

    static func exportPackage(
        _ options: Options, header: ModelHeader, network: Network, exportOptions: CoreMLExport.Options, to outPath: String, out: inout Output
    ) throws {
        let precision = options.precision ?? .float16
        let package: CoreMLPackage.Package, float32: CoreMLPackage.Package?
        do {
            package = try CoreMLPackage.export(header: header, network: network, options: exportOptions, precision: precision)
            float32 = precision == .float16 ? try CoreMLPackage.export(header: header, network: network, options: exportOptions, precision: .float32) : nil
        } catch CoreMLExport.ExportError.imageSizeNeeded {
            throw CLIError.usage(
                "--interface createml: this model's preprocessing has no scaleByTorso step, so its outputs depend on the pixel size of the poses, not only on the aspect ratio: give the app's frame size with --image-size WxH")
        } catch CoreMLExport.ExportError.float16Range(let why) {
            throw CLIError.failure("cannot export to a Float16 Core ML ML Program: \(why); export with --precision float32")
        }
        let shape = CoreMLExport.inputShape(header.input, interface: exportOptions.interface).map(String.init).joined(separator: ", ")
        let layout = options.interface == .createml ? "Create ML's keypoints" : "raw \(header.input.skeleton.name) poses"
        let what =
            "Core ML ML Program, specification \(CoreMLPackage.specificationVersion) (iOS 16+), \(precision == .float16 ? "Float16 network (Float32 preprocessing)" : "Float32"), input poses [\(shape)] of \(layout), \(header.classes.count) classes"
        func write() throws {
            try CoreMLPackage.write(package, to: outPath, replacing: options.force)
            out.line("export: wrote \(outPath) (a folder, \(package.size) bytes: Manifest.json, model.mlmodel \(package.model.count), weights/weight.bin \(package.weights.count); \(what))")
        }
        guard options.parityWindows > 0 else { return try write() }
        guard let script = CoreMLParity.script() else {
            try write()
            return out.line("parity: not checked (tools/python/coreml_eval.py not found; set ACTIONTRAIN_TOOLS to the tools/python folder)")
        }
        let poses = try parityPoses(options, header: header, out: &out)
        guard let r = try CoreMLParity.checkPackage(package, float32: float32, header: header, network: network, interface: exportOptions.interface, poses: poses, script: script)
        else {
            try write()
            return out.line("parity: not checked (\(CoreMLParity.python) cannot import numpy and coremltools; pip install numpy coremltools)")
        }
        let version = (r.float32.model["coremltools"] as? [String: Any])?["version"] as? String ?? "?"
        var lines = [
            "parity: coremltools \(version) loads the package and its program; max |logit difference| of tools/python/coreml_eval.py vs the Swift runtime over \(r.float32.windows) \(poses.source), the program in Float32: \(r.float32.figures.summary))"
        ]
        if let f = r.float16Figures {
            lines.append(
                "parity: in Float16: \(ParityFigures.format(f.difference)) (tolerance \(ParityFigures.format(f.tolerance)) = \(Int(f.multiple)) × \(ParityFigures.format(f.rounding)), the Float16 program's own error on these windows, against its float64 run); most likely class changed on \(r.labelChanges) of \(r.float32.windows) windows, probabilities by at most \(ParityFigures.format(r.maxProbabilityDifference))"
            )
        }
        guard r.float32.passed else {
            for l in lines { out.line(l) }
            throw notWritten(
                outPath,
                "the ML Program's logits (in Float32) differ from the runtime's by \(ParityFigures.format(r.float32.figures.difference)), more than the tolerance \(ParityFigures.format(r.float32.figures.tolerance))")
        }
        if let f = r.float16Figures, !f.passed {
            for l in lines { out.line(l) }
            if let half = r.float16, half.logits.contains(where: { !$0.isFinite }) {
                let K = header.classes.count
                let windows = (0..<half.windows).filter { w in half.logits[w * K..<(w + 1) * K].contains { !$0.isFinite } }.count
                throw CLIError.failure(
                    "\(outPath) not written: in Float16 the program overflows (a value beyond Float16's ±65504) on \(windows) of \(half.windows) windows: export with --precision float32")
            }
            throw notWritten(
                outPath,
                "the ML Program's logits in Float16 differ from the runtime's by \(ParityFigures.format(f.difference)), more than the tolerance \(ParityFigures.format(f.tolerance)); if its own Float16 error is what is large, export with --precision float32")
        }
        try write()
        for l in lines { out.line(l) }
    }
}

extension CreateMLInput.Root: ArgumentChoice {}
extension CoreMLPackage.Precision: ArgumentChoice {}
