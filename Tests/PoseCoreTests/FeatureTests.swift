import PoseCore
import TestSupport
import XCTest

/// Golden feature vectors, computed by hand in the comments, for every step and block.
final class FeatureTests: XCTestCase {
    let skeleton = Skeleton(
        name: "toy", joints: ["neck", "root", "hand"], dimensions: 2, units: .pixels,
        mirrorPairs: [], bones: [["neck", "hand"]], centre: ["root"], torsoUpper: ["neck"], torsoLower: ["root"])

    /// Frame 0: neck (100, 150), root (100, 200), hand (150, 175); frame 1: neck (110, 150),
    /// root (110, 200), hand absent.
    func twoFrames(confidence: Bool = false) -> PoseSequence {
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: confidence)
        seq.appendFrame([
            PosePoint(x: 100, y: 150, confidence: 0.9), PosePoint(x: 100, y: 200, confidence: 0.8),
            PosePoint(x: 150, y: 175, confidence: 0.5),
        ])
        seq.appendFrame([PosePoint(x: 110, y: 150), PosePoint(x: 110, y: 200, confidence: 0.7), nil])
        return seq
    }

    func features(_ seq: PoseSequence, _ steps: [PreprocessingStep], _ channels: [ChannelBlock]) throws -> [Float] {
        let spec = InputSpec(skeleton: skeleton, window: WindowSpec(frames: seq.frameCount), steps: steps, channels: channels)
        return try FeatureExtractor(spec).extract(seq)
    }

    func testCentreScaleAndMaskKeepAbsentJointsAtZero() throws {
        let spec = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 2),
            steps: [.centre(joints: ["root"], perFrame: false), .scaleByTorso(upper: ["neck"], lower: ["root"])],
            channels: [.coordinates, .mask, .bones])
        XCTAssertEqual(spec.channelsPerFrame, 6 + 3 + 2)
        let f = try FeatureExtractor(spec).extract(twoFrames())
        // Window centre = (105, 200); torso = 50.
        assertClose(Array(f[0..<11]), [-0.1, -1, -0.1, 0, 0.9, -0.5, 1, 1, 1, 1, 0.5])
        assertClose(Array(f[11..<22]), [0.1, -1, 0.1, 0, 0, 0, 1, 1, 0, 0, 0])
    }

    func testPerFrameCentreSubtractsEachFramesOwnCentre() throws {
        // Frame 0 centre (100, 200), frame 1 centre (110, 200).
        let f = try features(twoFrames(), [.centre(joints: ["root"], perFrame: true)], [.coordinates])
        assertClose(f, [0, -50, 0, 0, 50, -25, 0, -50, 0, 0, 0, 0])
    }

    func testPerFrameCentreFallsBackToTheWindowCentre() throws {
        var seq = twoFrames()
        seq.present[4] = 0  // root absent in frame 1
        seq.coordinates[8] = 0
        seq.coordinates[9] = 0
        // Window centre = frame 0's root (100, 200), used for frame 1: neck (10, -50).
        let f = try features(seq, [.centre(joints: ["root"], perFrame: true)], [.coordinates])
        assertClose(f, [0, -50, 0, 0, 50, -25, 10, -50, 0, 0, 0, 0])
    }

    func testCentreWithoutCentreJointsUsesTheMeanOfAllPresentJoints() throws {
        var seq = twoFrames()
        for f in 0..<2 {
            seq.present[f * 3 + 1] = 0
            seq.coordinates[(f * 3 + 1) * 2] = 0
            seq.coordinates[(f * 3 + 1) * 2 + 1] = 0
        }
        // Present: neck (100, 150), hand (150, 175), neck (110, 150): mean (120, 475/3).
        let f = try features(seq, [.centre(joints: ["root"], perFrame: false)], [.coordinates])
        let cy: Float = 475.0 / 3
        assertClose(f, [-20, 150 - cy, 0, 0, 30, 175 - cy, -10, 150 - cy, 0, 0, 0, 0])
    }

    func testTorsoScaleIsTheMedianOverFrames() throws {
        // Torso lengths 10, 50, 20: median 20. Odd count.
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        for len: Float in [10, 50, 20] { seq.appendFrame([PosePoint(x: 0, y: -len), PosePoint(x: 0, y: 0), nil]) }
        let f = try features(seq, [.scaleByTorso(upper: ["neck"], lower: ["root"])], [.coordinates])
        assertClose(f, [0, -0.5, 0, 0, 0, 0, 0, -2.5, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0])
        // Even count (10, 30): the mean of the middle two, 20.
        var even = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        for len: Float in [10, 30] { even.appendFrame([PosePoint(x: 0, y: -len), PosePoint(x: 0, y: 0), nil]) }
        assertClose(
            try features(even, [.scaleByTorso(upper: ["neck"], lower: ["root"])], [.coordinates]),
            [0, -0.5, 0, 0, 0, 0, 0, -1.5, 0, 0, 0, 0])
    }

    func testTorsoScaleWithoutTorsoUsesTheRMSSpread() throws {
        // No neck: root (-3, -4) and hand (3, 4) around their mean (0, 0): RMS distance 5.
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        seq.appendFrame([nil, PosePoint(x: -3, y: -4), PosePoint(x: 3, y: 4)])
        let f = try features(seq, [.scaleByTorso(upper: ["neck"], lower: ["root"])], [.coordinates])
        assertClose(f, [0, 0, -0.6, -0.8, 0.6, 0.8])
        // A single point has zero spread: coordinates stay as they are.
        var one = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        one.appendFrame([nil, PosePoint(x: 7, y: 9), nil])
        assertClose(try features(one, [.scaleByTorso(upper: ["neck"], lower: ["root"])], [.coordinates]), [0, 0, 7, 9, 0, 0])
    }

    func testDivideByImageSize() throws {
        let f = try features(twoFrames(), [.divide(by: [200, 100])], [.coordinates])
        assertClose(f, [0.5, 1.5, 0.5, 2, 0.75, 1.75, 0.55, 1.5, 0.55, 2, 0, 0])
    }

    func testMotionIsTheFrameDifferenceOfJointsSeenInBothFrames() throws {
        // Window-centred: frame 0 neck (-5, -50) root (-5, 0) hand (45, -25); frame 1 neck (5, -50)
        // root (5, 0), hand absent. Motion: 0 at frame 0; frame 1 neck (10, 0), root (10, 0), hand 0.
        let f = try features(twoFrames(), [.centre(joints: ["root"], perFrame: false)], [.motion])
        assertClose(f, [0, 0, 0, 0, 0, 0, 10, 0, 10, 0, 0, 0])
    }

    func testRelativePositionsAndDistancesOfEveryPairAfterTheSteps() throws {
        // Window-centred (as above): frame 0 neck (-5, -50) root (-5, 0) hand (45, -25); frame 1
        // neck (5, -50) root (5, 0), hand absent. Pairs (neck, root), (neck, hand), (root, hand).
        let centre: [PreprocessingStep] = [.centre(joints: ["root"], perFrame: false)]
        assertClose(try features(twoFrames(), centre, [.relativePositions]), [0, 50, 50, 25, 50, -25] + [0, 50, 0, 0, 0, 0])
        let d = Float(3125).squareRoot()
        assertClose(try features(twoFrames(), centre, [.distances]), [50, d, d] + [50, 0, 0])
        // After torso scaling (torso 50) they are in torso lengths.
        let scaled = centre + [.scaleByTorso(upper: ["neck"], lower: ["root"])]
        assertClose(try features(twoFrames(), scaled, [.distances]), [1, d / 50, d / 50] + [1, 0, 0], absolute: 1e-6)
        // Given pairs, in their order and orientation: hand − neck, root − hand.
        var spec = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 2), steps: centre, channels: [.relativePositions, .distances])
        spec.pairs = [["hand", "neck"], ["hand", "root"]]
        assertClose(try FeatureExtractor(spec).extract(twoFrames()), [-50, -25, -50, 25, d, d] + [0, 0, 0, 0, 0, 0])
    }

    func testFastMotionIsTheDifferenceTwoFramesApart() throws {
        // neck (0, 0), (1, 2), (4, 8); root absent, (5, 5), (6, 7); hand (10, 10), absent, (13, 14).
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 2, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 0, y: 0), nil, PosePoint(x: 10, y: 10)])
        seq.appendFrame([PosePoint(x: 1, y: 2), PosePoint(x: 5, y: 5), nil])
        seq.appendFrame([PosePoint(x: 4, y: 8), PosePoint(x: 6, y: 7), PosePoint(x: 13, y: 14)])
        // Frame 2: neck (4, 8); root 0 (absent at frame 0); hand (3, 4), seen at frames 0 and 2
        // though not at 1, where motion has nothing.
        assertClose(try features(seq, [], [.fastMotion]), [Float](repeating: 0, count: 12) + [4, 8, 0, 0, 3, 4])
        assertClose(try features(seq, [], [.motion]), [Float](repeating: 0, count: 6) + [1, 2, 0, 0, 0, 0] + [3, 6, 1, 2, 0, 0])
        // Windows of one or two frames have no fast motion.
        assertClose(try features(twoFrames(), [], [.fastMotion]), [Float](repeating: 0, count: 12))
    }

    func testConfidenceBlockIsZeroForAbsentJointsAndOneWithoutConfidence() throws {
        assertClose(try features(twoFrames(confidence: true), [], [.confidence]), [0.9, 0.8, 0.5, 1, 0.7, 0])
        assertClose(try features(twoFrames(confidence: false), [], [.confidence, .mask]), [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0])
    }

    func testBlocksFollowTheirOrderInEveryFrame() throws {
        // [mask | bones | coordinates] per frame, raw coordinates.
        let f = try features(twoFrames(), [], [.mask, .bones, .coordinates])
        assertClose(
            f,
            [1, 1, 1, 50, 25, 100, 150, 100, 200, 150, 175]
                + [1, 1, 0, 0, 0, 110, 150, 110, 200, 0, 0])
    }

    func testThreeDimensionalBonesAndCentre() throws {
        let s3 = Skeleton(
            name: "toy3", joints: ["a", "b", "c"], dimensions: 3, units: .metres,
            bones: [["a", "b"], ["b", "c"]], centre: ["a"])
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 3, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 1, y: 2, z: 3), PosePoint(x: 1.5, y: 2, z: 4), nil])
        let spec = InputSpec(
            skeleton: s3, window: WindowSpec(frames: 1), steps: [.centre(joints: ["a"], perFrame: false)],
            channels: [.coordinates, .bones])
        // Centred on a: a (0,0,0), b (0.5, 0, 1); bones a->b (0.5, 0, 1), b->c 0 (c absent).
        assertClose(try FeatureExtractor(spec).extract(seq), [0, 0, 0, 0.5, 0, 1, 0, 0, 0, 0.5, 0, 1, 0, 0, 0])
    }

    func testCoordinatesOfAbsentJointsAreIgnored() throws {
        // A reader that left garbage under an absent joint must not change the features.
        var dirty = twoFrames()
        dirty.coordinates[10] = 1e6  // hand, frame 1 (absent)
        dirty.coordinates[11] = -3
        let steps: [PreprocessingStep] = [
            .centre(joints: ["root", "hand"], perFrame: false), .scaleByTorso(upper: ["neck"], lower: ["hand"]),
        ]
        let every = ChannelBlock.allCases
        XCTAssertEqual(try features(dirty, steps, every), try features(twoFrames(), steps, every))
    }

    func testWorkspaceReuseGivesIdenticalResults() throws {
        let spec = InputSpec.standard(for: skeleton, frames: 2)
        let extractor = try FeatureExtractor(spec)
        let ws = extractor.makeWorkspace()
        var a = [Float](repeating: 0, count: spec.valuesPerWindow), b = a
        var other = twoFrames()
        other.coordinates = other.coordinates.map { $0 * 3 + 1 }
        a.withUnsafeMutableBufferPointer { extractor.extract(twoFrames(), into: $0.baseAddress!, workspace: ws) }
        b.withUnsafeMutableBufferPointer { extractor.extract(other, into: $0.baseAddress!, workspace: ws) }
        b.withUnsafeMutableBufferPointer { extractor.extract(twoFrames(), into: $0.baseAddress!, workspace: ws) }
        XCTAssertEqual(a, b)
        XCTAssertEqual(a, extractor.extract(twoFrames()))
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

    // MARK: fillGaps

    /// Five frames of the toy skeleton: neck seen at frames 1 and 4 (gap 2, 3; before 0), root
    /// seen at every frame, hand at frame 2 only (before and after), given confidences.
    func gappy() -> PoseSequence {
        var seq = PoseSequence(id: "g", label: nil, jointCount: 3, dimensions: 2, hasConfidence: true)
        let neck: [Int: (Float, Float)] = [1: (10, 20), 4: (40, 35)]
        for f in 0..<5 {
            let n = neck[f].map { PosePoint(x: $0.0, y: $0.1, confidence: 0.5) }
            let hand = f == 2 ? PosePoint(x: 7, y: 9, confidence: 0.25) : nil
            seq.appendFrame([n, PosePoint(x: Float(f), y: 100, confidence: 0.75), hand])
        }
        return seq
    }

    /// The gaps take the interpolated values (neck at frame 2: (10, 20) + 1/3·(30, 15) = (20, 25),
    /// frame 3: (30, 30)), the ends the nearest seen value (neck at frame 0: (10, 20); the hand
    /// (7, 9) everywhere); mask and confidence still say what was seen.
    func testFillGapsInterpolatesInsideAndHoldsTheEndsWhileMaskAndConfidenceReportWhatWasSeen() throws {
        let f = try features(gappy(), [.fillGaps], [.coordinates, .mask, .confidence])
        let C = 6 + 3 + 3
        let expected: [[Float]] = [
            [10, 20, 0, 100, 7, 9, 0, 1, 0, 0, 0.75, 0],
            [10, 20, 1, 100, 7, 9, 1, 1, 0, 0.5, 0.75, 0],
            [20, 25, 2, 100, 7, 9, 0, 1, 1, 0, 0.75, 0.25],
            [30, 30, 3, 100, 7, 9, 0, 1, 0, 0, 0.75, 0],
            [40, 35, 4, 100, 7, 9, 1, 1, 0, 0.5, 0.75, 0],
        ]
        for (frame, row) in expected.enumerated() {
            assertClose(Array(f[(frame * C)..<((frame + 1) * C)]), row, "frame \(frame)")
        }
        // The weight is rounded once: frame 2 of neck is exactly 10 + Float(1)/Float(3)·30.
        XCTAssertEqual(f[2 * C], 10 + Float(1) / Float(3) * 30)
    }

    /// Filled joints count as present for the steps after and the relational blocks; a joint
    /// seen in no frame of the window stays absent (zero, and the pairs with it zero).
    func testFilledPointsArePresentForLaterStepsAndBlocksButNeverSeenJointsStayAbsent() throws {
        var seq = gappy()
        for f in 0..<5 { seq.present[f * 3 + 2] = 0 }  // the hand is never seen
        // Centre on the neck per frame: frame 0's neck is filled, so frame 0 is centred on (10, 20).
        let f = try features(seq, [.fillGaps, .centre(joints: ["neck"], perFrame: true)], [.coordinates, .relativePositions])
        let C = 6 + 3 * 2
        // Frame 0: neck (0, 0), root (0 − 10, 100 − 20), hand absent; pairs (neck, root) = root − neck,
        // (neck, hand) and (root, hand) 0.
        assertClose(Array(f[0..<C]), [0, 0, -10, 80, 0, 0, -10, 80, 0, 0, 0, 0])
        // Frame 3: neck filled (30, 30): root (3 − 30, 70).
        assertClose(Array(f[(3 * C)..<(4 * C)]), [0, 0, -27, 70, 0, 0, -27, 70, 0, 0, 0, 0])
        // Without fillGaps, frame 0's neck is absent and the pair (neck, root) is 0.
        let plain = try features(seq, [.centre(joints: ["neck"], perFrame: true)], [.relativePositions])
        assertClose(Array(plain[0..<6]), [0, 0, 0, 0, 0, 0])
    }

    /// fillGaps is the first step, once; it reads, decodes and names itself.
    func testFillGapsMustComeFirstAndRoundTrips() throws {
        let late = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 2), steps: [.centre(joints: ["root"], perFrame: false), .fillGaps],
            channels: [.coordinates])
        assertThrows(["preprocessing step 1", "fillGaps must be the first step"]) { _ = try FeatureExtractor(late) }
        let twice = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 2), steps: [.fillGaps, .fillGaps], channels: [.mask])
        assertThrows(["preprocessing step 1", "fillGaps must be the first step"]) { _ = try FeatureExtractor(twice) }
        let json = try JSONEncoder().encode(PreprocessingStep.fillGaps)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), #"{"op":"fillGaps"}"#)
        XCTAssertEqual(try JSONDecoder().decode(PreprocessingStep.self, from: json), .fillGaps)
        XCTAssertThrowsError(try JSONDecoder().decode(PreprocessingStep.self, from: Data(#"{"op":"fillgaps"}"#.utf8))) { e in
            XCTAssertTrue("\(e)".contains("knows centre, scaleByTorso, divide, alignFacing, fillGaps"), "\(e)")
        }
    }

    /// A window without gaps is unchanged by fillGaps; nothing is filled in a window of one frame.
    func testFillGapsChangesNothingWithoutGaps() throws {
        let full = twoFrames()
        var seq = full
        seq.present[5] = 1  // the hand at frame 1 too
        seq.coordinates[10] = 160
        seq.coordinates[11] = 170
        XCTAssertEqual(
            try features(seq, [.fillGaps, .centre(joints: ["root"], perFrame: false)], [.coordinates, .mask, .motion]),
            try features(seq, [.centre(joints: ["root"], perFrame: false)], [.coordinates, .mask, .motion]))
        let one = full.slice(0, count: 1)
        XCTAssertEqual(try features(one, [.fillGaps], [.coordinates, .mask]), try features(one, [], [.coordinates, .mask]))
    }
}

final class AlignFacingTests: XCTestCase {
    let skeleton = Skeleton(
        name: "toy3d", joints: ["leftHip", "rightHip", "hand"], dimensions: 3, units: .metres)

    func testRotatesTheSideVectorOntoThePositiveFirstHorizontalAxis() throws {
        // Hips along +z (the body turned 90°), the hand 1 m in front along -x, y up.
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 3, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 0, y: 0, z: -0.1), PosePoint(x: 0, y: 0, z: 0.1), PosePoint(x: -1, y: 0.5, z: 0)])
        seq.appendFrame([PosePoint(x: 0, y: 0, z: -0.1), nil, PosePoint(x: -1, y: 0.7, z: 0)])
        let spec = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 2),
            steps: [.alignFacing(left: ["leftHip"], right: ["rightHip"], verticalAxis: 1)], channels: [.coordinates])
        let f = try FeatureExtractor(spec).extract(seq)
        // θ = 90°: (x, z) -> (z, -x). Absent joints stay 0; y is untouched.
        assertClose(Array(f[0..<9]), [-0.1, 0, 0, 0.1, 0, 0, 0, 0.5, 1], absolute: 1e-6)
        assertClose(Array(f[9..<18]), [-0.1, 0, 0, 0, 0, 0, 0, 0.7, 1], absolute: 1e-6)
    }

    func testNoSideVectorLeavesCoordinatesAndIsRejectedFor2D() throws {
        var seq = PoseSequence(id: "s", label: nil, jointCount: 3, dimensions: 3, hasConfidence: false)
        seq.appendFrame([PosePoint(x: 1, y: 2, z: 3), nil, PosePoint(x: 4, y: 5, z: 6)])
        let spec = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 1),
            steps: [.alignFacing(left: ["leftHip"], right: ["rightHip"], verticalAxis: 1)], channels: [.coordinates])
        XCTAssertEqual(try FeatureExtractor(spec).extract(seq), [1, 2, 3, 0, 0, 0, 4, 5, 6])
        let flat = Skeleton(name: "flat", joints: ["leftHip", "rightHip"], dimensions: 2, units: .pixels)
        assertThrows(["alignFacing is for 3D skeletons"]) {
            _ = try FeatureExtractor(
                InputSpec(
                    skeleton: flat, window: WindowSpec(frames: 1),
                    steps: [.alignFacing(left: ["leftHip"], right: ["rightHip"], verticalAxis: 1)], channels: [.coordinates]))
        }
    }
}
