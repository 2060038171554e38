import ActionTrainKit
import Foundation

/// Writes a model file as ONNX (opset 17): float32 `[batch, frames, channels]` network inputs
/// in, logits out, the input description in the metadata. `rawPoses: true` would put the
/// preprocessing in the graph, which then takes the poses themselves (docs/format.md).
func export(model path: String, to out: String) throws {
    let (header, network) = try ModelFile.load(contentsOf: path)
    let onnx = try ONNXExport.export(header: header, network: network)
    try AtomicFile.write(Data(onnx), to: out)
    print("wrote \(out): \(onnx.count) bytes, \(header.classes.count) classes")
}
