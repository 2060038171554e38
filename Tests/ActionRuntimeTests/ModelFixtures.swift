@testable import ActionRuntime
import Foundation
@testable import actiontrain
@testable import ModelExport
import PoseCore
import XCTest

/// Models, inputs and paths shared by the model-file, golden, Python and ONNX tests.
enum ModelFixtures {
    /// The repository root (this file is Tests/ActionRuntimeTests/ModelFixtures.swift).
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let goldenDirectory = repoRoot.appendingPathComponent("Tests/ActionRuntimeTests/Golden")

    // MARK: - The golden model: every layer type, every step and channel block, pairs

    static let goldenSkeleton = Skeleton(
        name: "golden-4", joints: ["head", "neck", "root", "hand"], dimensions: 2, units: .pixels,
        mirrorPairs: [], bones: [["neck", "head"], ["root", "neck"], ["neck", "hand"]], centre: ["root"],
        torsoUpper: ["neck"], torsoLower: ["root"])

    /// 6 frames of `[coordinates 8, confidence 4, mask 4, motion 8, bones 6, relativePositions 6,
    /// distances 3, fastMotion 8]` = 47 channels, over three given pairs (one against the joint
    /// order); gaps filled first (so mask and confidence differ from the filled presence).
    static let goldenInput: InputSpec = {
        var input = InputSpec(
            skeleton: goldenSkeleton, window: WindowSpec(frames: 6, mode: .sliding, padding: .empty, frameRate: 30),
            steps: [
                .fillGaps, .centre(joints: ["root"], perFrame: true), .scaleByTorso(upper: ["neck"], lower: ["root"]),
                .divide(by: [2, 0.5]),
            ],
            channels: [.coordinates, .confidence, .mask, .motion, .bones, .relativePositions, .distances, .fastMotion])
        input.pairs = [["head", "hand"], ["hand", "root"], ["neck", "head"]]
        return input
    }()

    static let goldenClasses = ["wave", "clap", "squat"]

    static let goldenLayers: [LayerSpec] = [
        .conv1d(inputs: 47, outputs: 8, kernel: 3, stride: 1, dilation: 1, padding: 1),  // [6, 8]
        .layerNorm(channels: 8, epsilon: 1e-5),
        .gelu,
        .residual(body: [.conv1d(inputs: 8, outputs: 8, kernel: 3, stride: 1, dilation: 2, padding: 2), .relu], shortcut: []),
        .residual(body: [.linear(inputs: 8, outputs: 6), .gelu], shortcut: [.linear(inputs: 8, outputs: 6)]),  // [6, 6]
        .dropout(rate: 0.25),
        .conv1d(inputs: 6, outputs: 6, kernel: 2, stride: 2, dilation: 1, padding: 0),  // [3, 6]
        .residual(  // [1, 6]
            body: [
                .residual(
                    body: [.residual(body: [.globalAveragePool], shortcut: [.globalMaxPool])],
                    // segments of 3, 1, 1 and 1 frames; 2 frequencies, of which the 1-frame segments have the first
                    shortcut: [
                        .fourierPyramid(levels: [1, 3], coefficients: 2),
                        .standardize(mean: (0..<48).map { Float($0 % 7) * 0.125 - 0.25 }, scale: (0..<48).map { 0.5 + Float($0 % 5) * 0.25 }),
                        .linear(inputs: 48, outputs: 6),
                    ])
            ],
            shortcut: [.temporalPyramidPool(levels: [1, 2]), .linear(inputs: 18, outputs: 6)]),  // segments 0..<3, 0..<1, 1..<3
        .flatten,
        .linear(inputs: 6, outputs: 3),
    ]

    /// A network with every parameter drawn from a seed (layerNorm's gamma and beta too).
    static func network(_ layers: [LayerSpec], input: Shape, seed: UInt64) throws -> Network {
        let n = try Network(layers: layers, input: input)
        n.initialize(seed: seed)
        var g = SeededGenerator(seed: seed ^ 0x5EED)
        for i in 0..<n.parameterCount { n.parameters[i] += g.nextSymmetric(0.3) }
        return n
    }

    static func goldenNetwork() throws -> Network {
        try network(goldenLayers, input: Shape(time: 6, channels: goldenInput.channelsPerFrame), seed: 2026)
    }

    static let goldenProvenance = ModelHeader.Provenance(
        tool: "actiontrain golden", datasetHash: "fnv1a64:0123456789abcdef", configHash: "fnv1a64:fedcba9876543210",
        seed: 2026, metrics: ["validationAccuracy": 0.75], notes: ["purpose": "golden test model"])

    // MARK: - Pose windows

    /// A window of `frames` poses: about a third of the joints absent, some frames empty,
    /// confidence when `confidence`.
    static func randomWindow(_ s: Skeleton, frames: Int, confidence: Bool, g: inout SeededGenerator) -> PoseSequence {
        var seq = PoseSequence(id: "w", label: nil, jointCount: s.jointCount, dimensions: s.dimensions, hasConfidence: confidence)
        let empty = g.nextInt(below: frames + 1)  // one empty frame (or none when == frames)
        for f in 0..<frames {
            var points = [PosePoint?](repeating: nil, count: s.jointCount)
            for j in 0..<s.jointCount where f != empty && g.nextUnitFloat() > 0.3 {
                points[j] = PosePoint(
                    x: 100 + g.nextSymmetric(80), y: 200 + g.nextSymmetric(120), z: s.dimensions == 3 ? g.nextSymmetric(2) : 0,
                    confidence: confidence ? 0.2 + 0.8 * g.nextUnitFloat() : nil)
            }
            seq.appendFrame(points)
        }
        return seq
    }

    /// Makes joint `j` absent at frame `f`.
    static func remove(joint j: Int, frame f: Int, from w: inout PoseSequence) {
        let i = f * w.jointCount + j
        w.present[i] = 0
        for d in 0..<w.dimensions { w.coordinates[i * w.dimensions + d] = 0 }
        if w.confidence != nil { w.confidence![i] = 0 }
    }

    /// JSON of windows as read by tools/python/read_model.py.
    static func windowsJSON(_ windows: [PoseSequence]) -> [[String: Any]] {
        windows.map { w in
            var o: [String: Any] = [
                "coordinates": w.coordinates.map(Double.init), "present": w.present.map(Int.init),
            ]
            if let c = w.confidence { o["confidence"] = c.map(Double.init) }
            return o
        }
    }

    // MARK: - Random models for property tests

    struct RandomModel {
        var input: InputSpec
        var classes: [String]
        var network: Network
    }

    /// A random small model: random skeleton, steps, channel blocks and window, and a random
    /// stack of every layer type ending in a pooling or flatten head and a linear layer.
    static func randomModel(seed: UInt64) throws -> RandomModel {
        var g = SeededGenerator(seed: seed)
        func pick<T>(_ xs: [T]) -> T { xs[g.nextInt(below: xs.count)] }
        let J = 2 + g.nextInt(below: 4), D = 2 + g.nextInt(below: 2)
        let joints = (0..<J).map { "j\($0)" }
        let skeleton = Skeleton(
            name: "random-\(seed)", joints: joints, dimensions: D, units: D == 2 ? pick([.pixels, .unitless]) : .metres,
            bones: (1..<J).map { [joints[$0 - 1], joints[$0]] }, centre: [joints[0]], torsoUpper: [joints[1]],
            torsoLower: [joints[0]])
        var steps: [PreprocessingStep] = []
        if g.nextUnitFloat() < 0.7 { steps.append(.centre(joints: [pick(joints)], perFrame: g.nextUnitFloat() < 0.5)) }
        if g.nextUnitFloat() < 0.5 { steps.append(.scaleByTorso(upper: [joints[1]], lower: [joints[0]])) }
        if g.nextUnitFloat() < 0.3 { steps.append(.divide(by: (0..<D).map { _ in Float(1 + g.nextInt(below: 4)) })) }
        if D == 3 && g.nextUnitFloat() < 0.5 {
            steps.append(.alignFacing(left: [joints[0]], right: [joints[1], pick(joints)], verticalAxis: g.nextInt(below: 3)))
        }
        var channels = ChannelBlock.allCases.filter { _ in g.nextUnitFloat() < 0.5 }
        if channels.isEmpty { channels = [.coordinates] }
        let window = WindowSpec(
            frames: 1 + g.nextInt(below: 6), mode: pick(WindowSpec.Mode.allCases), padding: pick(WindowSpec.Padding.allCases),
            frameRate: g.nextUnitFloat() < 0.3 ? 15 : nil)
        let input = InputSpec(skeleton: skeleton, window: window, steps: steps, channels: channels)
        var shape = Shape(time: window.frames, channels: input.channelsPerFrame)

        func sameShapeLayer(_ s: Shape) -> LayerSpec {
            switch g.nextInt(below: 5) {
            case 0: return .relu
            case 1: return .gelu
            case 2: return .layerNorm(channels: s.channels, epsilon: pick([1e-5, 1e-3]))
            case 3:
                let k = pick([1, 3]), d = 1 + g.nextInt(below: 2)
                return .conv1d(inputs: s.channels, outputs: s.channels, kernel: k, stride: 1, dilation: d, padding: d * (k - 1) / 2)
            default: return .linear(inputs: s.channels, outputs: s.channels)
            }
        }
        var layers: [LayerSpec] = []
        for _ in 0..<g.nextInt(below: 5) {
            switch g.nextInt(below: 6) {
            case 0:
                let o = 1 + g.nextInt(below: 6)
                layers.append(.linear(inputs: shape.channels, outputs: o))
                shape.channels = o
            case 1:
                let k = 1 + g.nextInt(below: 3), d = 1 + g.nextInt(below: 2), p = g.nextInt(below: 3), st = 1 + g.nextInt(below: 2)
                let reach = shape.time + 2 * p - d * (k - 1) - 1
                guard reach >= 0 else { continue }
                let o = 1 + g.nextInt(below: 6)
                layers.append(.conv1d(inputs: shape.channels, outputs: o, kernel: k, stride: st, dilation: d, padding: p))
                shape = Shape(time: reach / st + 1, channels: o)
            case 2: layers.append(.dropout(rate: 0.5))
            case 3:
                let shortcut: [LayerSpec] = g.nextUnitFloat() < 0.5 ? [] : [.linear(inputs: shape.channels, outputs: shape.channels)]
                layers.append(.residual(body: [sameShapeLayer(shape), sameShapeLayer(shape)], shortcut: shortcut))
            default: layers.append(sameShapeLayer(shape))
            }
        }
        layers.append(pick([.flatten, .globalAveragePool, .globalMaxPool]))
        shape = layers.last == .flatten ? Shape(time: 1, channels: shape.count) : Shape(time: 1, channels: shape.channels)
        let K = 2 + g.nextInt(below: 3)
        layers.append(.linear(inputs: shape.channels, outputs: K))
        let network = try network(layers, input: Shape(time: window.frames, channels: input.channelsPerFrame), seed: seed)
        return RandomModel(input: input, classes: (0..<K).map { "class \($0)" }, network: network)
    }

    /// Uniform inputs in [-2, 2).
    static func randomInputs(count: Int, values: Int, seed: UInt64) -> [Float] {
        var g = SeededGenerator(seed: seed)
        return (0..<(count * values)).map { _ in g.nextSymmetric(2) }
    }

    // MARK: - Python

    /// True when `python3 -c <check>` exits 0.
    static func python(has module: String) -> Bool {
        (try? ONNXParity.run(["python3", "-c", "import \(module)"]).status) == 0
    }
}
