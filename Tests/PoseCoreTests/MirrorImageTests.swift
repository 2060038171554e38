import PoseCore
import TestSupport
import XCTest

/// `InputSpec.mirrorImage()`: the network input of a mirrored window (left/right joints swapped,
/// x reflected about any vertical line) is the channel map applied to the original's input.
final class MirrorImageTests: XCTestCase {
    /// Bones include a reversed mirror: lShoulder→lHand but rHand→rShoulder.
    let skeleton = Skeleton(
        name: "mirror", joints: ["root", "lShoulder", "rShoulder", "lHand", "rHand"], dimensions: 2, units: .pixels,
        mirrorPairs: [["lShoulder", "rShoulder"], ["lHand", "rHand"]],
        bones: [["root", "lShoulder"], ["root", "rShoulder"], ["lShoulder", "lHand"], ["rHand", "rShoulder"]],
        centre: ["root"], torsoUpper: ["lShoulder", "rShoulder"], torsoLower: ["root"])

    func window(_ g: inout SeededGenerator) -> PoseSequence {
        var seq = PoseSequence(id: "w", label: nil, jointCount: 5, dimensions: 2, hasConfidence: true)
        for f in 0..<4 {
            let points = (0..<5).map { j -> PosePoint? in
                j == 3 && f == 1 ? nil : PosePoint(x: 100 + g.nextSymmetric(50), y: 200 + g.nextSymmetric(60), confidence: 0.3 + 0.7 * g.nextUnitFloat())
            }
            seq.appendFrame(points)
        }
        return seq
    }

    func mirrored(_ seq: PoseSequence, about axis: Float) -> PoseSequence {
        var m = seq
        let sigma = skeleton.mirrorPermutation
        for f in 0..<seq.frameCount {
            for j in 0..<5 {
                let src = f * 5 + sigma[j], dst = f * 5 + j
                m.present[dst] = seq.present[src]
                m.confidence![dst] = seq.confidence![src]
                m.coordinates[dst * 2] = seq.present[src] != 0 ? 2 * axis - seq.coordinates[src * 2] : 0
                m.coordinates[dst * 2 + 1] = seq.coordinates[src * 2 + 1]
            }
        }
        return m
    }

    func testTheMapGivesTheMirroredWindowsInput() throws {
        let spec = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 4),
            steps: [.centre(joints: ["root"], perFrame: false), .scaleByTorso(upper: ["lShoulder", "rShoulder"], lower: ["root"])],
            channels: [.coordinates, .confidence, .mask, .motion, .bones])
        let map = try spec.mirrorImage()
        XCTAssertEqual(map.channels.count, spec.channelsPerFrame)
        let extractor = try FeatureExtractor(spec)
        var g = SeededGenerator(seed: 3)
        let w = window(&g)
        let x = extractor.extract(w), xm = extractor.extract(mirrored(w, about: 137))
        let C = spec.channelsPerFrame
        var mapped = [Float](repeating: 0, count: x.count)
        for t in 0..<4 { for c in 0..<C { mapped[t * C + c] = map.signs[c] * x[t * C + map.channels[c]] } }
        assertClose(mapped, xm, absolute: 1e-5, relative: 1e-5)
        // The reversed bone takes its mirror with y negated, not x.
        let bones = 10 + 5 + 5 + 10
        XCTAssertEqual(Array(map.channels[(bones + 4)..<(bones + 6)]), [bones + 6, bones + 7])  // lShoulder→lHand ← rHand→rShoulder
        XCTAssertEqual(Array(map.signs[(bones + 4)..<(bones + 6)]), [1, -1])
        XCTAssertEqual(Array(map.channels[(bones + 2)..<(bones + 4)]), [bones, bones + 1])  // root→rShoulder ← root→lShoulder
        XCTAssertEqual(Array(map.signs[(bones + 2)..<(bones + 4)]), [-1, 1])
    }

    func testWithoutCentringPairsOrMirroredBonesThereIsNoMirrorImage() {
        var spec = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 4), steps: [], channels: [.coordinates])
        XCTAssertThrowsError(try spec.mirrorImage()) { XCTAssertTrue("\($0)".contains("centre step"), "\($0)") }
        spec.steps = [.centre(joints: ["root"], perFrame: false)]
        var noPairs = skeleton
        noPairs.mirrorPairs = []
        XCTAssertThrowsError(try InputSpec(skeleton: noPairs, window: spec.window, steps: spec.steps, channels: [.coordinates]).mirrorImage()) {
            XCTAssertTrue("\($0)".contains("no mirrorPairs"), "\($0)")
        }
        var oneSided = skeleton
        oneSided.bones = [["root", "lHand"]]
        XCTAssertThrowsError(try InputSpec(skeleton: oneSided, window: spec.window, steps: spec.steps, channels: [.bones]).mirrorImage()) {
            XCTAssertTrue("\($0)".contains("is not a bone"), "\($0)")
        }
    }
}
