import PoseCore
import TestSupport
import XCTest

final class FeatureTests: XCTestCase {
    let skeleton = Skeleton(
        name: "toy", joints: ["neck", "root", "hand"], dimensions: 2, units: .pixels,
        mirrorPairs: [], bones: [["neck", "hand"]], centre: ["root"], torsoUpper: ["neck"], torsoLower: ["root"])

    func testCentreScaleAndMaskKeepAbsentJointsAtZero() throws {
        // Two frames: root at (100, 200), neck 50 px above; the hand is seen only in frame 0.
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 100, y: 150), PosePoint(x: 100, y: 200), PosePoint(x: 150, y: 175)])
        seq.appendFrame([PosePoint(x: 110, y: 150), PosePoint(x: 110, y: 200), nil])
        let spec = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 2),
            steps: [.centre(joints: ["root"], perFrame: false), .scaleByTorso(upper: ["neck"], lower: ["root"])],
            channels: [.coordinates, .mask, .bones])
        XCTAssertEqual(spec.channelsPerFrame, 6 + 3 + 2)
        let f = try FeatureExtractor(spec).extract(seq)
        // Window centre = (105, 200); torso = 50.
        assertClose(Array(f[0..<11]), [-0.1, -1, -0.1, 0, 0.9, -0.5, 1, 1, 1, 1, 0.5])
        assertClose(Array(f[11..<22]), [0.1, -1, 0.1, 0, 0, 0, 1, 1, 0, 0, 0])
    }

    func testFitWindowResamplesWithoutInventingJoints() {
        var seq = PoseSequence(id: "s", label: nil, jointCount: 1, dimensions: 2, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 0, y: 0)])
        seq.appendFrame([PosePoint(x: 10, y: 20)])
        seq.appendFrame([nil])
        let w = WindowSpec(frames: 5, mode: .fit).window(of: seq, start: 0)
        XCTAssertEqual(w.frameCount, 5)
        // Positions 0, 0.5, 1, 1.5, 2: lerp between seen frames; nearest frame where one side is absent.
        XCTAssertEqual(Array(w.present), [1, 1, 1, 0, 0])
        XCTAssertEqual(Array(w.coordinates[0..<6]), [0, 0, 5, 10, 10, 20])
    }
}
