import Foundation
import PoseCore

/// Batched inference helpers shared by training (validation) and the runtime.
public enum Inference {
    /// Softmax in place over rows `[rows, K]`.
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

    /// Class probabilities `[count, classes]` for inputs `[count, network.inputShape]`, in
    /// batches of `batchSize`.
    public static func probabilities(_ network: Network, features: [Float], count: Int, batchSize: Int = 256) -> [Float] {
        let V = network.inputShape.count, K = network.classCount
        precondition(features.count == count * V, "features shape")
        var out = [Float](repeating: 0, count: count * K)
        features.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { o in
                for s in stride(from: 0, to: count, by: batchSize) {
                    let n = min(batchSize, count - s)
                    let logits = network.forward(x.baseAddress! + s * V, batch: n)
                    (o.baseAddress! + s * K).update(from: logits, count: n * K)
                    softmax(o.baseAddress! + s * K, rows: n, classes: K)
                }
            }
        }
        return out
    }
}

/// A loaded model: header, network and feature extractor. The inference service's entry
/// point. Not thread-safe; use one instance per thread.
public final class ActionModel {
    public let header: ModelHeader
    public let network: Network
    public let extractor: FeatureExtractor

    public var classes: [String] { header.classes }
    public var input: InputSpec { header.input }

    public init(bytes: [UInt8]) throws {
        let (header, network) = try ModelFile.load(bytes)
        self.header = header
        self.network = network
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

    public convenience init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFileError.io("\(path): cannot read the model file; check the path")
        }
        try self.init(bytes: [UInt8](data))
    }

    /// Probabilities `[count, classes]` for network inputs `[count, valuesPerWindow]`.
    public func probabilities(features: [Float], count: Int) throws -> [Float] {
        guard features.count == count * network.inputShape.count else {
            throw ModelError.inputSize(expected: count * network.inputShape.count, got: features.count)
        }
        return Inference.probabilities(network, features: features, count: count)
    }

    /// Probabilities for one exact-length window of poses.
    public func probabilities(window: PoseSequence) throws -> [Float] {
        guard window.jointCount == input.skeleton.jointCount, window.dimensions == input.skeleton.dimensions else {
            throw PoseError.shapeMismatch(
                what: "window joints x dimensions", expected: input.skeleton.jointCount * input.skeleton.dimensions,
                got: window.jointCount * window.dimensions)
        }
        guard window.frameCount == input.window.frames else {
            throw PoseError.shapeMismatch(what: "window frames", expected: input.window.frames, got: window.frameCount)
        }
        return try probabilities(features: extractor.extract(window), count: 1)
    }
}
