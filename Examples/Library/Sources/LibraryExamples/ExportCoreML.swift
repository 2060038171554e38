import ActionTrainKit
import Foundation

/// Writes a model file as a Core ML neural network classifier (`.mlmodel`, iOS 13+): one window
/// of raw poses `[frames, joints, dimensions + 1]` in, `label` and `labelProbabilities` out, the
/// preprocessing in the graph, the classes, window and (for a whole-clip model) the clip in the
/// metadata (docs/coreml.md). `.createML(CreateMLInput(aspectRatio: 16.0 / 9, root: .absent))`
/// instead of `.native` takes Create ML's `[frames, 3, 18]` keypoints (2D Vision skeletons).
func exportCoreML(model path: String, to out: String) throws {
    let (header, network) = try ModelFile.load(contentsOf: path)
    let options = CoreMLExport.Options(interface: .native, author: "Example", license: "CC0")
    let mlmodel = try CoreMLExport.export(header: header, network: network, options: options)
    try AtomicFile.write(Data(mlmodel), to: out)
    let shape = CoreMLExport.inputShape(header.input, interface: .native)
    print("wrote \(out): \(mlmodel.count) bytes, input poses \(shape), \(header.classes.count) classes")
}
