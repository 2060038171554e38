import Foundation
import PoseCore

/// Batched inference helpers shared by training (validation) and the runtime.
public enum Inference {
    /// Softmax in place over rows `[rows, K]`: `p_k = exp(z_k − max z) / Σ_j exp(z_j − max z)`.
    public static func softmax(_ p: UnsafeMutablePointer<Float>, rows: Int, classes K: Int) {
        for r in 0..<rows {
            let z = p + r * K
            var m = -Float.infinity
            for k in 0..<K { m = max(m, z[k]) }
            var s: Float = 0
            for k in 0..<K {
                z[k] = expf(z[k] - m)
                s += z[k]
            }
            let inv = 1 / s
            for k in 0..<K { z[k] *= inv }
        }
    }

    /// Whether networks built from now on run a frozen (loaded) dilated convolution with stride
    /// 1 and a kernel of 2-7 as Winograd on its phases (the default, see `Conv1d`); false: as
    /// im2col times the packed weight, the path before it. For benchmarks comparing the two in
    /// one binary (`actiontrain-bench latency --dilated-im2col`); one setting for the process.
    public static var dilatedConvolutionPhases: Bool {
        get { Conv1d.dilatedPhases }
        set { Conv1d.dilatedPhases = newValue }
    }

    /// Activation values a batch of `batchSize(for:)` may take: 2^25 (128 MB).
    public static let activationBudget = 1 << 25

    /// The default windows per batch for `network`: 256, or as many as keep its activations
    /// (`Network.activationValuesPerWindow` per window) within `activationBudget`, at least 8
    /// (the batches where convolutions take their Winograd formulation). A network's buffers
    /// grow to the largest batch it runs, and ST-GCN's joint axis makes its activations
    /// joints times a TCN's: `fit`'s NATOPS ST-GCN (8 joints, widths 64) holds 1.34 M values
    /// (5.4 MB) per window, 25 windows per batch; its TCN 161 K, 207 windows.
    public static func batchSize(for network: Network) -> Int {
        max(8, min(256, activationBudget / max(1, network.activationValuesPerWindow)))
    }

    /// Logits `[count, classes]` for inputs `[count, network.inputShape]`, in batches of
    /// `batchSize` (default `batchSize(for: network)`).
    public static func logits(_ network: Network, features: [Float], count: Int, batchSize: Int? = nil) -> [Float] {
        let V = network.inputShape.count, K = network.classCount, batchSize = batchSize ?? Self.batchSize(for: network)
        precondition(features.count == count * V, "features shape")
        var out = [Float](repeating: 0, count: count * K)
        features.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { o in
                for s in stride(from: 0, to: count, by: batchSize) {
                    let n = min(batchSize, count - s)
                    let logits = network.forward(x.baseAddress! + s * V, batch: n)
                    (o.baseAddress! + s * K).update(from: logits, count: n * K)
                }
            }
        }
        return out
    }

    /// Class probabilities `[count, classes]` for inputs `[count, network.inputShape]`, in
    /// batches of `batchSize` (default `batchSize(for: network)`).
    public static func probabilities(_ network: Network, features: [Float], count: Int, batchSize: Int? = nil) -> [Float] {
        var out = logits(network, features: features, count: count, batchSize: batchSize)
        out.withUnsafeMutableBufferPointer { softmax($0.baseAddress!, rows: count, classes: network.classCount) }
        return out
    }
}

/// The prediction for one window of a sequence.
public struct WindowPrediction: Hashable, Sendable {
    /// First frame of the window in the (resampled, when the model sets a frame rate) sequence.
    public var start: Int
    /// One past the last real frame of the window (padding excluded).
    public var end: Int
    /// Index into `classes` of the most probable class (the first on ties).
    public var classIndex: Int
    /// Class probabilities, in `classes` order.
    public var probabilities: [Float]
}

/// A loaded model: header, network and feature extractor. The inference service's entry
/// point: load once, then call `logits` / `probabilities` / `predict`, or open a
/// `StreamSession` per client.
///
/// Thread-safe: one instance may be shared by any number of threads and sessions. The weights
/// never change once loaded (the network is frozen); every call runs on an `InferenceContext`
/// (a replica of the network with activation buffers of its own) taken from a pool and given
/// back after the call, and a `StreamSession` owns one. Every result is a value the caller
/// owns. The same input gives the same bits whichever thread runs it and whatever runs
/// beside it. `network` itself is the frozen original the contexts share: use it from one
/// thread only, or not at all.
public final class ActionModel: @unchecked Sendable {
    public let header: ModelHeader
    public let network: Network
    public let extractor: FeatureExtractor
    private let pool = ContextPool()
    /// What `checkOutputs` found (nil: not run yet), kept under the pool's lock.
    private var outputCheck: Result<Void, ModelError>?

    public var classes: [String] { header.classes }
    public var input: InputSpec { header.input }
    /// Bodies per frame: M > 1 for an interaction model, whose input sequences hold M people
    /// side by side (build them with `PoseSequence.stackingBodies`), else 1.
    public var bodies: Int { header.input.bodies ?? 1 }
    /// Values per window, `frames · channelsPerFrame`.
    public var valuesPerWindow: Int { network.inputShape.count }

    /// Loads a model file held in memory.
    public convenience init(bytes: [UInt8]) throws {
        let (header, network) = try ModelFile.load(bytes)
        try self.init(header: header, network: network)
    }

    /// Loads a model file from disk (see `ModelFile.load(contentsOf:memoryMapped:)`). Errors
    /// name the file.
    public convenience init(contentsOf path: String, memoryMapped: Bool = false) throws {
        let (header, network) = try ModelFile.load(contentsOf: path, memoryMapped: memoryMapped)
        do {
            try self.init(header: header, network: network)
        } catch let e as ModelFileError {
            throw ModelFileError.inFile(path, e)
        }
    }

    /// Wraps a decoded header and its network, checking that the input description builds,
    /// and freezes the network (`Network.freeze()`): a model's parameters do not change.
    public init(header: ModelHeader, network: Network) throws {
        self.header = header
        self.network = network
        network.freeze()
        do {
            extractor = try FeatureExtractor(header.input)
        } catch {
            throw ModelFileError.badHeader("the input description is invalid: \(error)")
        }
        guard extractor.spec.valuesPerWindow == network.inputShape.count else {
            throw ModelFileError.badHeader(
                "the input description gives \(extractor.spec.valuesPerWindow) values per window, the network takes \(network.inputShape.count)")
        }
    }

    // MARK: - Contexts

    /// A context of its own (a replica of the network with its own buffers), for a caller that
    /// runs many calls from one thread at a time without the pool's lock (a session).
    public func makeContext() -> InferenceContext {
        pool.lock.withLock { InferenceContext(self, network: network.replica()) }
    }

    /// Runs `body` on a context from the pool (made when none is free) and gives it back.
    public func withContext<R>(_ body: (InferenceContext) throws -> R) rethrows -> R {
        let context = pool.lock.withLock { pool.free.popLast() } ?? makeContext()
        defer { pool.lock.withLock { pool.free.append(context) } }
        return try body(context)
    }

    /// Checks, once per model (the result is kept), that the network's output is finite on
    /// the plainest inputs a stream gives: a window with nobody in view (every joint absent)
    /// and one of an upright figure drifting slowly, in the model's units. Both are valid
    /// input, so a model that fails cannot be trusted on any: throws
    /// `ModelError.nonFiniteOnPlainInput`. (Finite weights can overflow float32 on real
    /// input, e.g. a graph adjacency of 3e38, which no check of the weights alone can tell.)
    /// `StreamSession` runs it; batch `predict` checks every window's output instead.
    public func checkOutputs() throws {
        if let known = pool.lock.withLock({ outputCheck }) { return try known.get() }
        let s = input.skeleton, F = input.window.frames, J = s.jointCount, D = s.dimensions
        let step: Float = s.units == .metres ? 0.05 : s.units == .pixels ? 10 : 0.02
        var coordinates = [Float](repeating: 0, count: F * J * D)
        for f in 0..<F {
            for j in 0..<J {
                let c = (f * J + j) * D
                coordinates[c] = step * (30 + Float(j % 5 - 2) + 0.1 * Float(f))
                coordinates[c + 1] = step * (20 + Float(j))
                if D == 3 { coordinates[c + 2] = step * Float(j % 3) }
            }
        }
        let figure = PoseSequence(
            id: "plain", label: nil, jointCount: J, dimensions: D, frameCount: F, coordinates: coordinates,
            present: [UInt8](repeating: 1, count: F * J), confidence: nil)
        let nobody = PoseSequence(
            id: "empty", label: nil, jointCount: J, dimensions: D, frameCount: F, coordinates: [Float](repeating: 0, count: F * J * D),
            present: [UInt8](repeating: 0, count: F * J), confidence: nil)
        let z = withContext { Inference.logits($0.network, features: extractor.extract(figure) + extractor.extract(nobody), count: 2) }
        let result: Result<Void, ModelError> = z.firstIndex { !$0.isFinite }.map { .failure(.nonFiniteOnPlainInput(classIndex: $0 % classes.count, value: z[$0])) } ?? .success(())
        pool.lock.withLock { outputCheck = result }
        try result.get()
    }

    // MARK: - Network inputs

    /// Writes the logits `[count, classes]` of network inputs `x [count, frames, channels]` to
    /// `out`. No allocation once a free context's buffers have grown to `count`.
    public func logits(_ x: UnsafePointer<Float>, count: Int, into out: UnsafeMutablePointer<Float>) {
        withContext { $0.logits(x, count: count, into: out) }
    }

    /// Logits `[count, classes]` for network inputs `[count, valuesPerWindow]`.
    public func logits(features: [Float], count: Int) throws -> [Float] {
        guard features.count == count * valuesPerWindow else {
            throw ModelError.inputSize(expected: count * valuesPerWindow, got: features.count)
        }
        return withContext { Inference.logits($0.network, features: features, count: count) }
    }

    /// Probabilities `[count, classes]` for network inputs `[count, valuesPerWindow]`.
    public func probabilities(features: [Float], count: Int) throws -> [Float] {
        guard features.count == count * valuesPerWindow else {
            throw ModelError.inputSize(expected: count * valuesPerWindow, got: features.count)
        }
        return withContext { Inference.probabilities($0.network, features: features, count: count) }
    }

    // MARK: - Poses

    /// The network input of one exact-length window of poses, `[frames, channels]`.
    public func features(window: PoseSequence) throws -> [Float] {
        guard window.jointCount == input.skeleton.jointCount, window.dimensions == input.skeleton.dimensions else {
            throw PoseError.shapeMismatch(
                what: "window joints x dimensions", expected: input.skeleton.jointCount * input.skeleton.dimensions,
                got: window.jointCount * window.dimensions)
        }
        guard window.frameCount == input.window.frames else {
            throw PoseError.shapeMismatch(what: "window frames", expected: input.window.frames, got: window.frameCount)
        }
        return extractor.extract(window)
    }

    /// Probabilities for one exact-length window of poses.
    public func probabilities(window: PoseSequence) throws -> [Float] {
        try probabilities(features: features(window: window), count: 1)
    }

    /// The windows of a whole sequence, cut as at training time: resampled to the model's
    /// frame rate when it has one (using the sequence's timestamps or `sourceFrameRate`),
    /// then sliding windows every `stride` frames (or one `fit` window), or with `useEvents`
    /// one window centred on each labeled event of a sequence that has events (as training
    /// with `useEvents` cuts them).
    public func windows(of sequence: PoseSequence, stride: Int, sourceFrameRate: Double?, useEvents: Bool = false) throws
        -> [(start: Int, end: Int, window: PoseSequence)]
    {
        try Self.windows(of: sequence, input: input, stride: stride, sourceFrameRate: sourceFrameRate, useEvents: useEvents)
    }

    /// `windows(of:stride:sourceFrameRate:useEvents:)` for the input description `input`.
    public static func windows(of sequence: PoseSequence, input: InputSpec, stride: Int, sourceFrameRate: Double?, useEvents: Bool = false) throws
        -> [(start: Int, end: Int, window: PoseSequence)]
    {
        let skeleton = input.skeleton
        guard sequence.jointCount == skeleton.jointCount, sequence.dimensions == skeleton.dimensions else {
            throw PoseError.shapeMismatch(
                what: "sequence '\(sequence.id)' joints x dimensions", expected: skeleton.jointCount * skeleton.dimensions,
                got: sequence.jointCount * sequence.dimensions)
        }
        let spec = input.window
        let seq = try spec.retimed(sequence, sourceFrameRate: sourceFrameRate)
        guard seq.frameCount > 0 else { return [] }
        if useEvents && !seq.events.isEmpty {
            return seq.events.map { e in
                let s = spec.start(centredOn: e, frameCount: seq.frameCount)
                return (s, min(s + spec.frames, seq.frameCount), spec.window(of: seq, centredOn: e))
            }
        }
        return spec.starts(frameCount: seq.frameCount, stride: stride).map { s in
            let end = spec.mode == .fit ? seq.frameCount : min(s + spec.frames, seq.frameCount)
            return (s, end, spec.window(of: seq, start: s))
        }
    }

    /// The window a stream slides over this model (docs/streaming.md), in frames at
    /// `frameRate` (nil: every pushed frame is a frame): for sliding windows the model's own
    /// window at its frame rate; for a whole-clip (`fit` window) model the clip length its file
    /// records (`ModelHeader.Streaming.clipFrames`, the training clips' median length, at
    /// `clipFrameRate`), or `clipFrames` frames when given (at the model's window rate, else
    /// the training data's), each such window resampled to the model's window as training
    /// resampled a clip. Throws `StreamError.unknownClipLength` for a whole-clip model without
    /// either.
    public func streamWindow(clipFrames given: Int? = nil) throws -> (frames: Int, frameRate: Double?) {
        let window = input.window
        guard window.mode == .fit else { return (window.frames, window.frameRate) }
        if let n = given { return (n, window.frameRate ?? header.streaming?.clipFrameRate ?? header.trainingFrameRate) }
        guard let n = header.streaming?.clipFrames else { throw StreamError.unknownClipLength }
        return (n, window.frameRate ?? header.streaming?.clipFrameRate)
    }

    /// The windows a `StreamSession` cuts from a whole recording pushed frame by frame, as
    /// `windows(of:)` cuts them: for a sliding-window model exactly those; for a whole-clip
    /// model the recording resampled to the stream's rate (`streamWindow`), windows of the clip
    /// length W every `stride` frames (and one ending at the last frame), each resampled to the
    /// model's F frames at the positions `i (W − 1) / (F − 1)`; a recording no longer than W is
    /// one window, all of it resampled to F frames (as a clip is).
    public func streamWindows(of sequence: PoseSequence, stride: Int, sourceFrameRate: Double?, clipFrames: Int? = nil) throws
        -> [(start: Int, end: Int, window: PoseSequence)]
    {
        try Self.streamWindows(
            of: sequence, input: input, stream: try streamWindow(clipFrames: clipFrames), stride: stride, sourceFrameRate: sourceFrameRate)
    }

    /// `streamWindows(of:stride:sourceFrameRate:clipFrames:)` for the input description
    /// `input` and the stream's window `stream` (`streamWindow`), without a model.
    public static func streamWindows(
        of sequence: PoseSequence, input: InputSpec, stream: (frames: Int, frameRate: Double?), stride: Int, sourceFrameRate: Double?
    ) throws -> [(start: Int, end: Int, window: PoseSequence)] {
        guard input.window.mode == .fit else { return try windows(of: sequence, input: input, stride: stride, sourceFrameRate: sourceFrameRate) }
        let (W, rate) = stream
        let skeleton = input.skeleton
        guard sequence.jointCount == skeleton.jointCount, sequence.dimensions == skeleton.dimensions else {
            throw PoseError.shapeMismatch(
                what: "sequence '\(sequence.id)' joints x dimensions", expected: skeleton.jointCount * skeleton.dimensions,
                got: sequence.jointCount * sequence.dimensions)
        }
        let slide = WindowSpec(frames: W, mode: .sliding, padding: input.window.padding, frameRate: rate)
        let seq = try slide.retimed(sequence, sourceFrameRate: sourceFrameRate)
        let n = seq.frameCount
        guard n > 0 else { return [] }
        if n < W { return [(0, n, input.window.window(of: seq, start: 0))] }
        let positions = input.window.positions(frameCount: W, start: 0)
        let (J, D, F) = (skeleton.jointCount, skeleton.dimensions, input.window.frames)
        return slide.starts(frameCount: n, stride: stride).map { s in
            var c = [Float](repeating: 0, count: F * J * D), p = [UInt8](repeating: 0, count: F * J), k = [Float](repeating: 0, count: F * J)
            let confidence = seq.confidence ?? []
            seq.coordinates.withUnsafeBufferPointer { sc in
                seq.present.withUnsafeBufferPointer { sp in
                    confidence.withUnsafeBufferPointer { sk in
                        positions.withUnsafeBufferPointer { pos in
                            PoseSequence.sample(
                                frames: W, joints: J, dimensions: D, coordinates: sc.baseAddress! + s * J * D, present: sp.baseAddress! + s * J,
                                confidence: seq.confidence == nil ? nil : sk.baseAddress! + s * J, at: pos, padding: input.window.padding,
                                into: &c, present: &p, confidence: &k)
                        }
                    }
                }
            }
            let window = PoseSequence(
                id: seq.id, label: seq.label, jointCount: J, dimensions: D, frameCount: F, coordinates: c, present: p,
                confidence: seq.confidence == nil ? nil : k)
            return (s, s + W, window)
        }
    }

    /// Sliding-window (or, with `useEvents`, event-centred) predictions over a whole
    /// sequence, in batches of `batchSize` (default `Inference.batchSize(for:)`). Throws `ModelError.nonFiniteOutput` when a window's output is NaN
    /// or infinite (as `eval` refuses such probabilities).
    public func predict(sequence: PoseSequence, stride: Int, sourceFrameRate: Double?, useEvents: Bool = false, batchSize: Int? = nil)
        throws -> [WindowPrediction]
    {
        let cut = try windows(of: sequence, stride: stride, sourceFrameRate: sourceFrameRate, useEvents: useEvents)
        let V = valuesPerWindow, K = classes.count
        var features = [Float](repeating: 0, count: cut.count * V)
        features.withUnsafeMutableBufferPointer { p in
            for (i, w) in cut.enumerated() { extractor.extract(w.window, into: p.baseAddress! + i * V) }
        }
        let z = withContext { Inference.logits($0.network, features: features, count: cut.count, batchSize: batchSize) }
        return try cut.enumerated().map { i, w in
            var row = Array(z[(i * K)..<((i + 1) * K)])
            if let k = row.firstIndex(where: { !$0.isFinite }) { throw ModelError.nonFiniteOutput(window: i, classIndex: k, value: row[k]) }
            let best = argmax(row)  // of the logits, the first on ties
            row.withUnsafeMutableBufferPointer { Inference.softmax($0.baseAddress!, rows: 1, classes: K) }
            return WindowPrediction(start: w.start, end: w.end, classIndex: best, probabilities: row)
        }
    }
}

/// What one call of a model needs of its own: a replica of the network (shared weights, its
/// own activation buffers), a feature workspace and one window's features. Use a context from
/// one thread at a time; any number of contexts of one model run at once.
public final class InferenceContext {
    let network: Network
    let workspace: FeatureExtractor.Workspace
    /// One window's network input `[valuesPerWindow]`.
    let window: Buffer

    init(_ model: ActionModel, network: Network) {
        self.network = network
        workspace = model.extractor.makeWorkspace()
        window = Buffer(capacity: model.valuesPerWindow)
    }

    /// Writes the logits `[count, classes]` of network inputs `x [count, frames, channels]` to `out`.
    public func logits(_ x: UnsafePointer<Float>, count: Int, into out: UnsafeMutablePointer<Float>) {
        out.update(from: network.forward(x, batch: count), count: count * network.classCount)
    }
}

/// The free contexts of a model.
private final class ContextPool {
    let lock = NSLock()
    var free: [InferenceContext] = []
}
