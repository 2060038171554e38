@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 items 1-2: what the data declares against what it measures, the repairs, and the
/// one confidence rule. One hand-made file per contradiction in Tests/Fixtures/sources.
final class CoordinateSpaceTests: XCTestCase {
    func source(_ name: String) -> String { fixture("sources/" + name) }

    func codes(_ name: String) throws -> [String] {
        CoordinateSpace.measure(try DatasetLoader.load(source(name))).problems.map(\.code)
    }

    func testEachContradictionIsNamedAndCleanDataIsNot() throws {
        XCTAssertEqual(try codes("vision-normalised.jsonl"), ["normalised-as-pixels", "y-up"])
        XCTAssertEqual(try codes("y-up-pixels.jsonl"), ["y-up"])
        XCTAssertEqual(try codes("metres-as-pixels.jsonl"), ["too-small-for-pixels"])
        XCTAssertEqual(try codes("millimetres-as-metres.jsonl"), ["not-metres"])
        XCTAssertEqual(try codes("milliseconds.jsonl"), ["milliseconds"])
        XCTAssertEqual(try codes("front-camera.jsonl"), [])
        XCTAssertEqual(CoordinateSpace.measure(try NativeFormat.read(fixture("tiny-natops.jsonl"))).problems, [])
        XCTAssertEqual(CoordinateSpace.measure(try NumpyFormat.read(fixture("coco_small.npz"))).problems, [])
    }

    func testMeasurementsOfTheReport() throws {
        let v = CoordinateSpace.measure(try DatasetLoader.load(source("vision-normalised.jsonl")))
        XCTAssertEqual(v.scale, .normalised)
        XCTAssertEqual(v.unitSquareShare, 1)
        assertClose(v.bodySize!, 0.7, absolute: 1e-6)
        XCTAssertEqual(v.vertical?.description, "y up")
        XCTAssertEqual(v.vertical?.counted, 3)
        let mm = CoordinateSpace.measure(try DatasetLoader.load(source("millimetres-as-metres.jsonl")))
        XCTAssertEqual(mm.scale, .millimetres)
        XCTAssertEqual(mm.vertical?.description, "y up", "3D: the vertical axis is reported, never a problem")
        assertClose(mm.bodySize!, 1650, absolute: 1e-3)
        let t = CoordinateSpace.measure(try DatasetLoader.load(source("milliseconds.jsonl")))
        XCTAssertEqual(t.frameInterval, 33)
        XCTAssertEqual(t.vertical?.description, "y down")
        XCTAssertEqual(
            CoordinateSpace.summary(v),
            "coordinates: measured normalised (bodies 0.70 across), vertical y up (3 of 3 frames); declared pixels, y down")
    }

    func testLintAndTheLoaderWarnAndStrictRefuses() throws {
        let lint = Lint.check(try DatasetLoader.load(source("y-up-pixels.jsonl")))
        XCTAssertTrue(lint.contains { $0.code == "y-up" && $0.description.contains("heads are below feet in 3 of 3 frames") }, "\(lint)")
        let loaded = try DatasetLoader.read(source("vision-normalised.jsonl"))
        XCTAssertEqual(loaded.warnings.count, 2)
        XCTAssertTrue(loaded.warnings[0].description.hasPrefix("warning: \(source("vision-normalised.jsonl")): [normalised-as-pixels] 100.0% of the points lie in [0, 1]"))
        assertThrows(["millimetres-as-metres.jsonl: [not-metres] bodies measure 1650 across", "millimetres? divide by 1000", "without the strict check"]) {
            _ = try DatasetLoader.read(self.source("millimetres-as-metres.jsonl"), options: ReadOptions(strict: true))
        }
    }

    // MARK: repairs

    func testFromNormalisedBottomLeftGivesPixels() throws {
        let d = try DatasetLoader.load(source("vision-normalised.jsonl"))
        var plan = CoordinateFix.Plan()
        plan.normalised = true
        plan.origin = .bottomLeft
        let fixed = try plan.apply(to: d)
        let s = fixed.sequences[0], sk = fixed.skeleton
        func point(_ joint: String, frame: Int = 0) -> [Float] {
            let i = frame * sk.jointCount + sk.index(of: joint)!
            return [s.coordinates[2 * i], s.coordinates[2 * i + 1]]
        }
        assertClose(point("nose"), [960, 216], absolute: 1e-3)  // 0.5 · 1920, (1 − 0.8) · 1080
        assertClose(point("leftAnkle"), [864, 972], absolute: 1e-3)
        XCTAssertEqual(CoordinateSpace.measure(fixed).problems, [], "nothing left to warn about")
        // Top-left normalised (MediaPipe) keeps y's direction; an explicit size wins.
        let mp = try CoordinateFix.fromNormalised(d, imageSize: [100, 200], origin: .topLeft)
        assertClose(Array(mp.sequences[0].coordinates[0..<2]), [50, 160], absolute: 1e-4)
        XCTAssertEqual(mp.imageSize, [100, 200])
    }

    func testBottomLeftPixelsFlipAndMirrorSwapsSides() throws {
        let flipped = try CoordinateFix.flipVertically(try DatasetLoader.load(source("y-up-pixels.jsonl")), imageSize: nil)
        XCTAssertEqual(Array(flipped.sequences[0].coordinates[0..<2]), [320, 80], "y → 480 − 400")
        XCTAssertEqual(CoordinateSpace.measure(flipped).problems, [])

        let d = try DatasetLoader.load(source("front-camera.jsonl"))
        let m = try CoordinateFix.mirrored(d, imageSize: nil)
        let sk = m.skeleton, s = m.sequences[0]
        let rw = sk.index(of: "rightWrist")!, lw = sk.index(of: "leftWrist")!
        let ls = sk.index(of: "leftShoulder")!, rs = sk.index(of: "rightShoulder")!
        XCTAssertEqual(s.present[lw], 0)
        XCTAssertEqual(Array(s.coordinates[(2 * rw)..<(2 * rw + 2)]), [540, 200], "left wrist at x 100 → right wrist at 640 − 100")
        XCTAssertEqual(s.confidence?[rw], 0.8)
        XCTAssertEqual(Array(s.coordinates[(2 * ls)..<(2 * ls + 2)]), [280, 150], "right shoulder 360 → left 280")
        XCTAssertEqual(s.confidence?[ls], 0.7)
        XCTAssertEqual(Array(s.coordinates[(2 * rs)..<(2 * rs + 2)]), [360, 150])
        XCTAssertEqual(s.coordinates[0], 320, "the nose has no mirror: x → 640 − 320")
        XCTAssertEqual(try CoordinateFix.mirrored(m, imageSize: nil), d, "mirroring twice is the identity")
        var noSize = d
        noSize.imageSize = nil
        assertThrows(["sequence 'f1': mirroring pixels needs the image width; give the image size"]) {
            _ = try CoordinateFix.mirrored(noSize, imageSize: nil)
        }
    }

    func testHeightNormalisationUsesVisionBodyHeight() throws {
        let text = #"""
            {"actiontrain": "poses", "version": 1, "skeleton": "vision-body-3d"}
            {"id": "tall", "bodyHeight": 2.0, "heightEstimation": "measured", "frames": [{"pose": {"topHead": [0, 1, 0.5]}}]}
            {"id": "unknown", "frames": [{"pose": {"topHead": [0, 1, 0.5]}}]}

            """#
        let d = try NativeFormat.parse(Array(text.utf8), file: "h.jsonl")
        XCTAssertEqual(d.sequences[0].bodyHeight, 2.0)
        XCTAssertEqual(d.sequences[0].heightEstimation, "measured")
        let n = try CoordinateFix.normalisingHeight(d)
        assertClose(Array(n.sequences[0].coordinates[0..<3]), [0, 0.9, 0.45])
        XCTAssertEqual(n.sequences[1].coordinates, d.sequences[1].coordinates)
        // Issue 26 item 9: the result records its height, so a second pass scales nothing
        // (it scaled by 1.8 / 2.0 again).
        XCTAssertEqual(n.sequences[0].bodyHeight, 1.8)
        XCTAssertEqual(n.sequences[0].heightEstimation, "reference")
        XCTAssertEqual(try CoordinateFix.normalisingHeight(n), n)
        let before = CoordinateFix.HeightCounts(d, reference: 1.8), after = CoordinateFix.HeightCounts(n, reference: 1.8)
        XCTAssertEqual([before.scaled, before.alreadyAtReference, before.withoutHeight], [1, 0, 1])
        XCTAssertEqual([after.scaled, after.alreadyAtReference, after.withoutHeight], [0, 1, 1])
        // Written and read back.
        let path = try temporaryDirectory().appendingPathComponent("h.jsonl").path
        try NativeFormat.write(d, to: path)
        XCTAssertEqual(try NativeFormat.read(path), d)
        assertThrows(["h.jsonl:2:", "heightEstimation 'guessed' is not measured or reference"]) {
            _ = try NativeFormat.parse(Array(text.replacingOccurrences(of: "measured", with: "guessed").utf8), file: "h.jsonl")
        }
    }

    // MARK: the one confidence rule

    func testConfidenceZeroIsAbsentInEveryFormatAndMinConfidenceEverywhere() throws {
        let coco = Skeleton.coco17
        let nose = coco.index(of: "nose")!, leftEye = coco.index(of: "leftEye")!, rightEye = coco.index(of: "rightEye")!
        let leftEar = coco.index(of: "leftEar")!
        for file in ["confidence.jsonl", "confidence.csv"] {
            let d = try DatasetLoader.load(source(file), skeleton: coco)
            let s = d.sequences[0]
            XCTAssertEqual([s.present[nose], s.present[leftEye], s.present[rightEye]], [1, 0, 1], file)
            let strict = try DatasetLoader.read(source(file), options: ReadOptions(skeleton: coco, minConfidence: 0.5)).dataset.sequences[0]
            XCTAssertEqual([strict.present[nose], strict.present[leftEye], strict.present[rightEye]], [1, 0, 0], file)
        }
        XCTAssertEqual(try DatasetLoader.load(source("confidence.jsonl")).sequences[0].present[leftEar], 1, "no confidence: seen")
        // NumPy: coco_small has confidence 0 at sequence 1, frame 2, joint 0; every other point 0.9.
        let npz = try DatasetLoader.read(fixture("coco_small.npz"), options: ReadOptions(minConfidence: 0.95)).dataset
        XCTAssertEqual(npz.sequences[0].present.filter { $0 != 0 }.count, 0, "0.9 ≤ 0.95: absent")
        XCTAssertEqual(try NumpyFormat.read(fixture("coco_small.npz")).sequences[1].present[2 * 17], 0)
        let cml = try DatasetLoader.read(fixture("createml.npz"), format: .createml, options: ReadOptions(minConfidence: 0.8)).dataset
        XCTAssertEqual(cml.sequences[0].present.filter { $0 != 0 }.count, 0, "Create ML confidence 0.8 ≤ 0.8: absent")
    }

    // MARK: reader guard rails

    func testUnknownSequenceKeysWarnOnceEach() throws {
        let text = #"""
            {"actiontrain": "poses", "version": 1, "skeleton": "coco-17"}
            {"id": "a", "lable": "wave", "frames": []}
            {"id": "b", "lable": "wave", "camera": 2, "frames": []}

            """#
        let warnings = try NativeFormat.parseReporting(Array(text.utf8), file: "k.jsonl").warnings
        XCTAssertEqual(
            warnings.map(\.description),
            [
                "warning: k.jsonl:2: unknown sequence key \"lable\" (in 2 sequences) is ignored; the keys are id, label, group, split, events, segments, imageSize, bodyHeight, heightEstimation, frames",
                "warning: k.jsonl:3: unknown sequence key \"camera\" (in 1 sequence) is ignored; the keys are id, label, group, split, events, segments, imageSize, bodyHeight, heightEstimation, frames",
            ])
    }

    func testAModelFileGivenAsDataIsNamed() throws {
        let dir = try temporaryDirectory()
        let renamed = dir.appendingPathComponent("model.jsonl").path
        try Data([0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]).write(to: URL(fileURLWithPath: renamed))
        assertThrows(["model.jsonl: cannot read: is a model file, not a dataset; were MODEL and DATA swapped?"]) {
            _ = try DatasetLoader.load(renamed)
        }
        let atm = dir.appendingPathComponent("m.atm").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: atm))
        assertThrows(["m.atm: cannot read: is a model file, not a dataset"]) { _ = try DatasetLoader.load(atm) }
    }
}
