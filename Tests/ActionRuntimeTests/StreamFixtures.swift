@testable import ActionRuntime
import Foundation
import PoseCore

/// Small models and recordings for the stream tests.
enum StreamFixtures {
    static let skeleton = Skeleton.visionBody2D
    static let classes = ["wave", "squat", "other"]

    /// A vision-body-2d model of 12-frame windows: a convnet (`conv`) or an MLP, at `frameRate`
    /// (nil: no resampling), centred and scaled by the torso, with confidence, mask and motion.
    /// With `scale`, every weight is multiplied by it after initialisation (1e37: finite weights
    /// whose sums overflow float32); `torso: false` leaves out the scaling by the torso.
    static func model(
        conv: Bool = true, frameRate: Double? = 30, seed: UInt64 = 7, skeleton: Skeleton = skeleton, scale: Float = 1, torso: Bool = true
    ) throws -> ActionModel {
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 12, mode: .sliding, padding: .empty, frameRate: frameRate),
            steps: [.centre(joints: skeleton.joints.filter { $0.hasSuffix("root") }, perFrame: false)]
                + (torso ? [.scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower)] : []),
            channels: [.coordinates, .confidence, .mask, .motion])
        let C = input.channelsPerFrame
        let layers: [LayerSpec] =
            conv
            ? [
                .conv1d(inputs: C, outputs: 16, kernel: 3, stride: 1, dilation: 1, padding: 1), .relu,
                .conv1d(inputs: 16, outputs: 16, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                .globalAveragePool, .linear(inputs: 16, outputs: 3),
            ]
            : [.flatten, .linear(inputs: 12 * C, outputs: 32), .relu, .linear(inputs: 32, outputs: 3)]
        let network = try Network(layers: layers, input: Shape(time: 12, channels: C))
        network.initialize(seed: seed)
        for k in 0..<network.parameterCount { network.parameters[k] *= scale }
        let bytes = try ModelFile.encode(classes: classes, input: input, network: network, provenance: .init(seed: seed))
        return try ActionModel(bytes: bytes)
    }

    /// `model(frameRate:)` with whole-clip (`fit`) windows whose file records a clip of `clip`
    /// frames at `clipFrameRate` (nil `clip`: no `streaming` field, as files before format 1.3).
    static func wholeClipModel(clip: Int?, frameRate: Double? = 30, clipFrameRate: Double? = nil, seed: UInt64 = 7) throws -> ActionModel {
        let sliding = try model(frameRate: frameRate, seed: seed)
        var input = sliding.input
        input.window.mode = .fit
        return try ActionModel(
            bytes: ModelFile.encode(
                classes: sliding.classes, input: input, network: sliding.network, provenance: .init(seed: seed),
                streaming: clip.map { ModelHeader.Streaming(clipFrames: $0, clipFrameRate: clipFrameRate) }))
    }

    /// One pushed frame: points by name (nil: not seen) at a time.
    struct Frame {
        var time: Double
        var points: [String: PosePoint]
    }

    /// A person moving about for `frames` camera frames at about `fps`: jittered intervals,
    /// some dropped frames, joints sometimes absent, a few empty frames, with confidence or not.
    static func recording(frames: Int, fps: Double = 25, seed: UInt64, confidence: Bool = true) -> [Frame] {
        var g = SeededGenerator(seed: seed)
        var t = Double(g.nextUnitFloat()), out: [Frame] = []
        for f in 0..<frames {
            var points: [String: PosePoint] = [:]
            if g.nextUnitFloat() > 0.05 {
                for (j, name) in skeleton.joints.enumerated() where g.nextUnitFloat() > 0.15 {
                    let phase = Float(t) * 3 + Float(j)
                    points[name] = PosePoint(
                        x: 300 + 40 * sinf(phase) + Float(j) * 7 + g.nextSymmetric(3), y: 200 + Float(j) * 11 + 30 * cosf(phase),
                        confidence: confidence ? 0.3 + 0.7 * g.nextUnitFloat() : nil)
                }
            }
            out.append(Frame(time: t, points: points))
            t += (0.7 + 0.6 * Double(g.nextUnitFloat())) / fps
            if f % 17 == 16 { t += 2 / fps }  // dropped frames
        }
        return out
    }

    /// The same recording as one sequence, as a file read whole would give it.
    static func sequence(_ frames: [Frame]) throws -> PoseSequence {
        try PoseSequence(id: "rec", label: nil, poses: frames.map { Pose(points: $0.points, time: $0.time) }, skeleton: skeleton)
    }
}
