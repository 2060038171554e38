import Foundation
import PoseCore
import TestSupport
import XCTest

final class InputSpecTests: XCTestCase {
    let skeleton = Skeleton(
        name: "toy", joints: ["neck", "root", "hand"], dimensions: 2, units: .pixels,
        bones: [["neck", "hand"]], centre: ["root"], torsoUpper: ["neck"], torsoLower: ["root"])

    func json<T: Encodable>(_ value: T) throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return String(decoding: try e.encode(value), as: UTF8.self)
    }

    /// The JSON form is part of the model file format (docs/preprocessing.md): pin it.
    func testStepsAndWindowHaveAnExplicitStableJSONForm() throws {
        let steps: [PreprocessingStep] = [
            .divide(by: [1920, 1080]), .centre(joints: ["root"], perFrame: false),
            .scaleByTorso(upper: ["neck"], lower: ["root"]),
        ]
        XCTAssertEqual(
            try json(steps),
            #"[{"by":[1920,1080],"op":"divide"},{"joints":["root"],"op":"centre","perFrame":false},{"lower":["root"],"op":"scaleByTorso","upper":["neck"]}]"#
        )
        XCTAssertEqual(try json(WindowSpec(frames: 45)), #"{"frameRate":null,"frames":45,"mode":"sliding","padding":"empty"}"#)
        XCTAssertEqual(
            try json(WindowSpec(frames: 3, mode: .fit, padding: .edge, frameRate: 30)),
            #"{"frameRate":30,"frames":3,"mode":"fit","padding":"edge"}"#)
        XCTAssertEqual(try json([ChannelBlock.coordinates, .mask, .motion]), #"["coordinates","mask","motion"]"#)
    }

    func testSpecRoundTripsAndLegacyStepsStillDecode() throws {
        let spec = try InputSpec.standard(
            for: skeleton, window: WindowSpec(frames: 4, frameRate: 15), centring: .frame, scaling: .image,
            imageSize: [640, 480], channels: [.coordinates, .confidence, .bones])
        let data = try JSONEncoder().encode(spec)
        XCTAssertEqual(try JSONDecoder().decode(InputSpec.self, from: data), spec)
        XCTAssertEqual(spec.steps, [.divide(by: [640, 480]), .centre(joints: ["root"], perFrame: true)])

        let legacy = #"[{"centre":{"joints":["root"],"perFrame":true}},{"scaleByTorso":{"upper":["neck"],"lower":["root"]}},{"divide":{"by":[2,4]}}]"#
        XCTAssertEqual(
            try JSONDecoder().decode([PreprocessingStep].self, from: Data(legacy.utf8)),
            [.centre(joints: ["root"], perFrame: true), .scaleByTorso(upper: ["neck"], lower: ["root"]), .divide(by: [2, 4])])
        let window = try JSONDecoder().decode(WindowSpec.self, from: Data(#"{"frames": 9}"#.utf8))
        XCTAssertEqual(window, WindowSpec(frames: 9))
        assertThrows(["unknown preprocessing step 'rotate'"]) {
            _ = try JSONDecoder().decode(PreprocessingStep.self, from: Data(#"{"op": "rotate"}"#.utf8))
        }
    }

    func testStandardInputs() throws {
        let auto = try InputSpec.standard(for: skeleton, window: WindowSpec(frames: 2))
        XCTAssertEqual(auto.steps, [.centre(joints: ["root"], perFrame: false), .scaleByTorso(upper: ["neck"], lower: ["root"])])
        XCTAssertEqual(InputSpec.standard(for: skeleton, frames: 2), auto)
        let s3 = Skeleton(name: "toy3", joints: ["a", "b"], dimensions: 3, units: .metres, centre: ["a"], torsoUpper: ["a"], torsoLower: ["b"])
        XCTAssertEqual(try InputSpec.standard(for: s3, window: WindowSpec(frames: 2)).steps, [.centre(joints: ["a"], perFrame: false)])
        XCTAssertEqual(try InputSpec.standard(for: s3, window: WindowSpec(frames: 2), scaling: .torso).steps.count, 2)
        XCTAssertEqual(try InputSpec.standard(for: skeleton, window: WindowSpec(frames: 2), centring: .none, scaling: .none).steps, [])
        assertThrows(["image scaling needs the image size"]) {
            _ = try InputSpec.standard(for: self.skeleton, window: WindowSpec(frames: 2), scaling: .image)
        }
        assertThrows(["image scaling is for 2D"]) {
            _ = try InputSpec.standard(for: s3, window: WindowSpec(frames: 2), scaling: .image, imageSize: [1, 1])
        }
        let bare = Skeleton(name: "bare", joints: ["a"], dimensions: 2, units: .pixels)
        assertThrows(["names no centre joints"]) {
            _ = try InputSpec.standard(for: bare, window: WindowSpec(frames: 2), centring: .frame)
        }
        assertThrows(["names no torso joints"]) {
            _ = try InputSpec.standard(for: bare, window: WindowSpec(frames: 2), scaling: .torso)
        }
    }

    /// `mean` centring lists every joint (the mean of the present ones over the window);
    /// `fixed` scaling divides every axis by the divisor, and needs one.
    func testMeanCentringAndFixedScalingForSkeletonsWithoutCentreOrTorso() throws {
        let bare = Skeleton(name: "bare3", joints: ["a", "b", "c"], dimensions: 3, units: .metres)
        let spec = try InputSpec.standard(
            for: bare, window: WindowSpec(frames: 2), centring: .mean, scaling: .fixed, divisor: 0.25)
        XCTAssertEqual(spec.steps, [.centre(joints: ["a", "b", "c"], perFrame: false), .divide(by: [0.25, 0.25, 0.25])])
        // Two frames: a at (1, 1, 1) and (3, 1, 1), b at (1, 3, 1) in frame 0 only; c absent.
        let seq = PoseSequence(
            id: "s", label: nil, jointCount: 3, dimensions: 3, frameCount: 2,
            coordinates: [1, 1, 1, 1, 3, 1, 0, 0, 0, 3, 1, 1, 0, 0, 0, 0, 0, 0], present: [1, 1, 0, 1, 0, 0])
        let x = try FeatureExtractor(spec).extract(seq)
        // Centre: the mean over frames of each frame's mean of present joints: frame 0 (1, 2, 1),
        // frame 1 (3, 1, 1), so (2, 1.5, 1); then / 0.25.
        let a0: [Float] = [(1 - 2) / 0.25, (1 - 1.5) / 0.25, 0]
        assertClose(Array(x[0..<3]), a0)
        assertThrows(["fixed scaling needs a positive divisor"]) {
            _ = try InputSpec.standard(for: bare, window: WindowSpec(frames: 2), scaling: .fixed)
        }
    }

    func testValidationNamesTheProblem() {
        func spec(_ steps: [PreprocessingStep], _ channels: [ChannelBlock] = [.coordinates], frames: Int = 2) -> InputSpec {
            InputSpec(skeleton: skeleton, window: WindowSpec(frames: frames), steps: steps, channels: channels)
        }
        assertThrows(["preprocessing step 0", "2 divisors"]) { try spec([.divide(by: [2])]).validate() }
        for bad: Float in [0, -2, .nan, .infinity, 1e-7, 2e6] {
            assertThrows(["preprocessing step 1", "divisors from 1e-06 to 1000000"]) {
                try spec([.centre(joints: ["root"], perFrame: false), .divide(by: [2, bad])]).validate()
            }
        }
        XCTAssertNoThrow(try spec([.divide(by: [1e-6, 1e6])]).validate())
        assertThrows(["joint 'elbow'"]) { try spec([.centre(joints: ["elbow"], perFrame: false)]).validate() }
        assertThrows(["centre names no joints"]) { try spec([.centre(joints: [], perFrame: false)]).validate() }
        assertThrows(["'mask' is listed twice"]) { try spec([], [.mask, .coordinates, .mask]).validate() }
        assertThrows(["no channel blocks"]) { try spec([], []).validate() }
        assertThrows(["window", "1 to 100000 frames"]) { try spec([], frames: 0).validate() }
        assertThrows(["window", "1 to 100000 frames"]) { try spec([], frames: 1 << 40).validate() }
        var rate = spec([])
        for bad in [-3, 0, 0.005, 10_001, 1e300, .infinity, .nan] {
            rate.window.frameRate = bad
            assertThrows(["window: frame rate must be 0.01 to 10000 frames per second, got \(bad)"]) { try rate.validate() }
        }
        for good in [0.01, 29.97, 10_000] {
            rate.window.frameRate = good
            XCTAssertNoThrow(try rate.validate())
        }
        let boneless = Skeleton(name: "bare", joints: ["a"], dimensions: 2, units: .pixels)
        assertThrows(["'bones' is empty", "no bones"]) {
            try InputSpec(skeleton: boneless, window: WindowSpec(frames: 1), steps: [], channels: [.bones]).validate()
        }
    }

    func testPairsAreValidated() {
        var spec = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 2), steps: [], channels: [.distances])
        XCTAssertEqual(spec.channelsPerFrame, 3)  // every pair of 3 joints
        spec.pairs = [["root", "hand"]]
        XCTAssertNoThrow(try spec.validate())
        XCTAssertEqual(spec.channelsPerFrame, 1)
        for (pairs, why) in [
            ([], "pairs: lists no pair"), ([["root", "elbow"]], "names joint 'elbow', which is not in skeleton"),
            ([["root", "root"]], "names the same joint twice"), ([["root", "hand"], ["hand", "root"]], "pair 1 [\"hand\", \"root\"] is listed twice"),
            ([["root"]], "must name 2 joints"),
        ] {
            spec.pairs = pairs
            assertThrows([why]) { try spec.validate() }
        }
        // At most 65,536 pairs, given or implied (363 joints have 65,703).
        let many = Skeleton(name: "many", joints: (0..<363).map { "j\($0)" }, dimensions: 2, units: .pixels)
        var big = InputSpec(skeleton: many, window: WindowSpec(frames: 1), steps: [], channels: [.relativePositions])
        assertThrows(["block 'relativePositions' reads 65703 joint pairs", "at most 65536: give pairs"]) { try big.validate() }
        big.pairs = (1..<363).flatMap { j in (0..<j).map { ["j\($0)", "j\(j)"] } }.prefix(65_537).map { $0 }
        assertThrows(["lists 65537 pairs; at most 65536"]) { try big.validate() }
        big.pairs!.removeLast()
        XCTAssertNoThrow(try big.validate())
        let one = Skeleton(name: "one", joints: ["a"], dimensions: 2, units: .pixels)
        assertThrows(["'distances' is empty", "one joint: no pairs"]) {
            try InputSpec(skeleton: one, window: WindowSpec(frames: 1), steps: [], channels: [.distances]).validate()
        }
    }

    func testChannelLayoutOffsets() {
        let spec = InputSpec(skeleton: skeleton, window: WindowSpec(frames: 2), steps: [], channels: [.mask, .coordinates, .bones])
        XCTAssertEqual(spec.channelLayout.map(\.offset), [0, 3, 9])
        XCTAssertEqual(spec.channelLayout.map(\.width), [3, 6, 2])
        XCTAssertEqual(spec.valuesPerWindow, 22)
    }

    func testApproximateGaussianPairsHaveUnitVarianceAndBoundedTails() {
        var g = SeededGenerator(seed: 7)
        var sum = (0.0, 0.0), sq = (0.0, 0.0), cross = 0.0, largest: Float = 0
        let n = 20_000
        for _ in 0..<n {
            let (a, b) = g.nextApproximateGaussianPair()
            sum = (sum.0 + Double(a), sum.1 + Double(b))
            sq = (sq.0 + Double(a * a), sq.1 + Double(b * b))
            cross += Double(a * b)
            largest = max(largest, abs(a), abs(b))
        }
        XCTAssertEqual(sum.0 / Double(n), 0, accuracy: 0.03)
        XCTAssertEqual(sum.1 / Double(n), 0, accuracy: 0.03)
        XCTAssertEqual(sq.0 / Double(n), 1, accuracy: 0.05)
        XCTAssertEqual(sq.1 / Double(n), 1, accuracy: 0.05)
        XCTAssertEqual(cross / Double(n), 0, accuracy: 0.03, "the two values are uncorrelated")
        XCTAssertLessThanOrEqual(largest, 3.4507)  // (1022/256 - 2) * sqrt(3)
        XCTAssertGreaterThan(largest, 2.5)
    }
}
