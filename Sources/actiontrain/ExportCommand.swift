import ActionRuntime
import Foundation
import ModelExport
import Pipelines

enum ExportCommand: ParsableCommand {
    enum Format: String, ArgumentChoice { case onnx }

    struct Options: CommandOptions {
        var model = ""
        var format: Format?  // nil: onnx, the only format so far
        var out: String?
        var force = false
        var parityWindows = 64
        var rawPoses = false

        func validate() throws {
            guard parityWindows >= 0 else { throw CLIError.usage("--parity-windows must be 0 or more") }
        }
    }

    static let spec = CommandSpec<Options>(
        name: "export",
        summary: "Export a model file to another format (ONNX) and check that it computes the same logits.",
        positionals: [Positional("MODEL", \.model, help: "Model file written by 'actiontrain fit'.")],
        options: [
            Option("format", \.format, value: "FORMAT", help: "Output format: onnx (the default)."),
            Option("out", \.out, value: "FILE", help: "Output file (default: MODEL with the extension .onnx). Not overwritten unless --force."),
            Option("force", \.force, help: "Overwrite the output file if it exists."),
            Option("parity-windows", \.parityWindows, value: "N", help: "Random windows for the parity check (default 64; 0 skips it)."),
            Option("raw-poses", \.rawPoses, help: "Include the preprocessing: the graph takes raw poses [batch, frames, joints, dims + 1] (coordinates and a confidence, 0 for absent joints) instead of network inputs."),
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
            """)

    static func run(_ options: Options, out: inout Output) throws {
        let modelPath = options.model, windows = options.parityWindows
        let outPath = options.out ?? (URL(fileURLWithPath: modelPath).deletingPathExtension().path + ".onnx")
        if FileManager.default.fileExists(atPath: outPath) && !options.force {
            throw CLIError.failure("\(outPath) exists; pass --force to overwrite it or choose another --out")
        }
        let (header, network) = try ModelFile.load(contentsOf: modelPath)
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
}
