import ActionRuntime
import Datasets
import PoseCore

/// Any bytes as a live stream (`predict - --stream`): the line reader, the line parser and a
/// tracked stream must throw or go on, never crash, hang or allocate without bound. Lines are
/// read in 7-byte chunks with a 512-byte limit (so that chunk edges and over-long lines are
/// reached), parsed for 2D and 3D, and pushed into a stream of at most 4 people on a small
/// model, counting problems (and once under `strict`, throwing them), then finished. Every
/// window it returns must hold finite probabilities.
let skeleton = Skeleton(
    name: "fuzz-4", joints: ["head", "neck", "root", "hand"], dimensions: 2, units: .pixels,
    bones: [["neck", "head"], ["root", "neck"], ["neck", "hand"]], centre: ["root"])

/// The model file, made once; each input loads its own model (a model kept for the whole run
/// is reported as leaked at exit: LeakSanitizer finds no pointer to some of its header's
/// arrays, likely held in enum payloads whose pointers carry the case in their spare bits).
let modelFile: [UInt8] = {
    let input = InputSpec(
        skeleton: skeleton, window: WindowSpec(frames: 6, mode: .sliding, padding: .empty, frameRate: 30),
        steps: [.centre(joints: ["root"], perFrame: false), .scaleByTorso(upper: ["neck"], lower: ["root"])],
        channels: [.coordinates, .confidence, .mask, .motion])
    let network = try! Network(
        layers: [.flatten, .linear(inputs: 6 * input.channelsPerFrame, outputs: 8), .relu, .linear(inputs: 8, outputs: 3)],
        input: Shape(time: 6, channels: input.channelsPerFrame))
    network.initialize(seed: 1)
    return try! ModelFile.encode(classes: ["a", "b", "other"], input: input, network: network, provenance: .init(seed: 1))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamLine(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let model = try! ActionModel(bytes: modelFile)
    for strict in [false, true] {
        var offset = 0
        var lines = LineReader(maximumLength: 512, chunkSize: 7) { buffer in
            let n = min(buffer.count, size - offset)
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: data + offset, count: n))
            offset += n
            return n
        }
        let stream = try! TrackedStream(
            model: model, options: StreamOptions(stride: 2, strict: strict, maximumJump: 5), events: .standard(classes: model.classes),
            forgetAfter: 1, maximumTracks: 4)
        while let line = try! lines.next() {
            guard let bytes = line.bytes else { continue }
            _ = try? StreamLine.parse(bytes, dimensions: 3)
            guard let frame = try? StreamLine.parse(bytes, dimensions: 2) else { continue }
            for person in frame.persons {  // one, or a "people" line's each
                check((try? stream.push(track: person.id, points: person.points, time: frame.time)) ?? [])
            }
        }
        check(stream.finish())
    }
    return 0
}

func check(_ outputs: [TrackedStream.Output]) {
    for o in outputs { for w in o.windows { precondition(w.probabilities.allSatisfy(\.isFinite), "a window with non-finite probabilities") } }
}
