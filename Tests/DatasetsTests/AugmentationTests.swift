import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class AugmentationTests: XCTestCase {
    let s2 = PrepFixtures.body2D, s3 = PrepFixtures.body3D

    func augmenter(_ configure: (inout AugmentationConfig) -> Void, skeleton: Skeleton? = nil, imageWidth: Double? = nil) throws
        -> Augmenter
    {
        var c = AugmentationConfig()
        configure(&c)
        return try Augmenter(config: c, skeleton: skeleton ?? s2, imageWidth: imageWidth)
    }

    func run(_ a: Augmenter, _ w: PoseSequence, seed: UInt64 = 1) -> PoseSequence {
        var g = SeededGenerator(seed: seed)
        return a.augment(w, using: &g)
    }

    /// Window centre: the mean of all present joints over the window.
    func centre(_ w: PoseSequence) -> [Float] {
        var c = [Float](repeating: 0, count: w.dimensions), n: Float = 0
        for i in 0..<(w.frameCount * w.jointCount) where w.present[i] != 0 {
            for d in 0..<w.dimensions { c[d] += w.coordinates[i * w.dimensions + d] }
            n += 1
        }
        return c.map { $0 / n }
    }

    func distance(_ a: [Float], _ b: [Float]) -> Float { zip(a, b).map { ($0 - $1) * ($0 - $1) }.reduce(0, +).squareRoot() }

    // MARK: - Flip

    func testFlipSwapsLeftAndRightAndMirrorsX() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 3, absent: [[1, 2]], confidence: true)
        let out = run(try augmenter { $0.flipProbability = 1 }, w)
        let cx = centre(w)[0]
        let mirror = [0, 2, 1, 4, 3]  // nose stays; hands and hips swap
        for f in 0..<3 {
            for j in 0..<5 {
                let m = mirror[j]
                XCTAssertEqual(PrepFixtures.isPresent(out, f, j), PrepFixtures.isPresent(w, f, m), "frame \(f) joint \(j)")
                guard PrepFixtures.isPresent(w, f, m) else {
                    XCTAssertEqual(PrepFixtures.point(out, f, j), [0, 0])
                    continue
                }
                let p = PrepFixtures.point(w, f, m)
                assertClose(PrepFixtures.point(out, f, j), [2 * cx - p[0], p[1]], absolute: 1e-3)
                XCTAssertEqual(out.confidence![f * 5 + j], w.confidence![f * 5 + m])
            }
        }
        // Frame 1's right hand was not seen: after the flip its left hand is not seen.
        XCTAssertFalse(PrepFixtures.isPresent(out, 1, 1))
        XCTAssertTrue(PrepFixtures.isPresent(out, 1, 2))
    }

    func testFlipWithAKnownImageWidthMirrorsTheImage() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 2)
        let out = run(try augmenter({ $0.flipProbability = 1 }, imageWidth: 640), w)
        assertClose(PrepFixtures.point(out, 1, 1), [640 - PrepFixtures.point(w, 1, 2)[0], PrepFixtures.point(w, 1, 2)[1]])
        assertClose(PrepFixtures.point(out, 0, 0), [640 - 100, 50])
    }

    func testFlipTwiceIsTheIdentity() throws {
        for (skeleton, width) in [(s2, nil), (s2, 640.0), (s3, nil)] as [(Skeleton, Double?)] {
            let w = PrepFixtures.sequence(id: "w", label: "a", frames: 4, skeleton: skeleton, absent: [[0, 1], [3, 4]])
            let a = try augmenter({ $0.flipProbability = 1 }, skeleton: skeleton, imageWidth: width)
            let twice = run(a, run(a, w))
            XCTAssertEqual(twice.present, w.present)
            assertClose(twice.coordinates, w.coordinates, absolute: 1e-4)
            XCTAssertNotEqual(run(a, w).coordinates, w.coordinates)
        }
    }

    func testThreeDimensionalFlipMirrorsXOnly() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 2, skeleton: s3)
        let out = run(try augmenter({ $0.flipProbability = 1 }, skeleton: s3, imageWidth: 640), w)  // width ignored in 3D
        let cx = centre(w)[0], p = PrepFixtures.point(w, 1, 4)
        assertClose(PrepFixtures.point(out, 1, 3), [2 * cx - p[0], p[1], p[2]], absolute: 1e-4)
    }

    // MARK: - Rotation and scale

    func testRotationPreservesBoneLengthsAndTheVerticalAxisIn3D() throws {
        for skeleton in [s2, s3] {
            let w = PrepFixtures.sequence(id: "w", label: "a", frames: 3, skeleton: skeleton, absent: [[2, 0]])
            let out = run(
                try augmenter(
                    {
                        $0.rotationProbability = 1; $0.maxRotationDegrees = 30
                    }, skeleton: skeleton), w, seed: 9)
            XCTAssertEqual(out.present, w.present)
            XCTAssertNotEqual(out.coordinates, w.coordinates)
            for f in 0..<3 {
                for a in 0..<5 {
                    for b in (a + 1)..<5 where PrepFixtures.isPresent(w, f, a) && PrepFixtures.isPresent(w, f, b) {
                        assertClose(
                            Double(distance(PrepFixtures.point(out, f, a), PrepFixtures.point(out, f, b))),
                            Double(distance(PrepFixtures.point(w, f, a), PrepFixtures.point(w, f, b))), absolute: 1e-3,
                            relative: 1e-4)
                    }
                    if skeleton.dimensions == 3 && PrepFixtures.isPresent(w, f, a) {
                        XCTAssertEqual(PrepFixtures.point(out, f, a)[1], PrepFixtures.point(w, f, a)[1], accuracy: 1e-5)
                    }
                }
            }
            assertClose(centre(out), centre(w), absolute: 1e-3)
        }
    }

    func testRotationAngleIsWithinTheConfiguredRange() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 1)
        let a = try augmenter {
            $0.rotationProbability = 1; $0.maxRotationDegrees = 10
        }
        var largest: Float = 0
        for seed in 0..<50 {
            let out = run(a, w, seed: UInt64(seed))
            // Angle of nose -> left hip before and after.
            let b0 = PrepFixtures.point(w, 0, 0), b1 = PrepFixtures.point(w, 0, 3)
            let a0 = PrepFixtures.point(out, 0, 0), a1 = PrepFixtures.point(out, 0, 3)
            var delta = atan2(a1[1] - a0[1], a1[0] - a0[0]) - atan2(b1[1] - b0[1], b1[0] - b0[0])
            if delta > .pi { delta -= 2 * .pi }
            if delta < -.pi { delta += 2 * .pi }
            largest = max(largest, abs(delta) * 180 / .pi)
        }
        XCTAssertLessThanOrEqual(largest, 10.001)
        XCTAssertGreaterThan(largest, 7)
    }

    func testScaleMultipliesDistancesFromTheCentreByOneFactor() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 2)
        let out = run(
            try augmenter {
                $0.scaleProbability = 1; $0.maxScaleChange = 0.2
            }, w)
        let c = centre(w)
        let ratios = (0..<10).map { i -> Float in
            distance(PrepFixtures.point(out, i / 5, i % 5), c) / distance(PrepFixtures.point(w, i / 5, i % 5), c)
        }
        XCTAssertTrue((0.8...1.2).contains(ratios[0]), "\(ratios[0])")
        XCTAssertNotEqual(ratios[0], 1, accuracy: 1e-6)
        for r in ratios { XCTAssertEqual(r, ratios[0], accuracy: 1e-4) }
    }

    // MARK: - Jitter and dropout

    func testJitterMovesOnlyPresentJointsByAboutSigmaTimesTheTorso() throws {
        let absent: Set<[Int]> = [[0, 1], [5, 4], [9, 2]]
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 10, absent: absent)
        let out = run(
            try augmenter {
                $0.jitterProbability = 1; $0.jitterStandardDeviation = 0.05
            }, w)
        XCTAssertEqual(out.present, w.present)
        var sq: Float = 0, n: Float = 0
        for f in 0..<10 {
            for j in 0..<5 {
                if absent.contains([f, j]) {
                    XCTAssertEqual(PrepFixtures.point(out, f, j), [0, 0])
                } else {
                    for (a, b) in zip(PrepFixtures.point(out, f, j), PrepFixtures.point(w, f, j)) {
                        sq += (a - b) * (a - b)
                        n += 1
                    }
                }
            }
        }
        // Torso nose -> hip centre is 100 - 1.75 t px at frame t (frame 5, one hip missing,
        // 93.04 px): median about 93 px, so sigma is about 4.65 px.
        let rms = (sq / n).squareRoot()
        XCTAssertGreaterThan(rms, 3.7)
        XCTAssertLessThan(rms, 5.6)
    }

    func testJointDropoutOnlyRemovesJoints() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 20, absent: [[0, 0], [3, 3]], confidence: true)
        let out = run(
            try augmenter {
                $0.jointDropoutProbability = 1; $0.jointDropoutRate = 0.3
            }, w)
        var removed = 0
        for i in 0..<(20 * 5) {
            if w.present[i] == 0 { XCTAssertEqual(out.present[i], 0) }
            if out.present[i] == 0 {
                XCTAssertEqual(Array(out.coordinates[i * 2..<i * 2 + 2]), [0, 0])
                XCTAssertEqual(out.confidence![i], 0)
                if w.present[i] != 0 { removed += 1 }
            } else {
                XCTAssertEqual(Array(out.coordinates[i * 2..<i * 2 + 2]), Array(w.coordinates[i * 2..<i * 2 + 2]))
            }
        }
        XCTAssertGreaterThan(removed, 15)  // about 0.3 of 98
        XCTAssertLessThan(removed, 45)
    }

    func testNoAugmentationEverMakesAnAbsentJointPresent() throws {
        // The right hand is never seen; every augmentation at full strength keeps it absent.
        let absent = Set((0..<12).map { [$0, 2] })
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 12, absent: absent)
        let a = try augmenter {
            $0.rotationProbability = 1; $0.maxRotationDegrees = 20; $0.scaleProbability = 1; $0.maxScaleChange = 0.3
            $0.jitterProbability = 1; $0.jitterStandardDeviation = 0.1; $0.speedProbability = 1; $0.maxSpeedChange = 0.5
            $0.timeWarpProbability = 1; $0.maxTimeWarp = 0.8; $0.frameDropProbability = 1; $0.frameDropRate = 0.5
            $0.jointDropoutProbability = 1; $0.jointDropoutRate = 0.2
        }
        for seed in 0..<20 {
            let out = run(a, w, seed: UInt64(seed))
            for f in 0..<12 {
                XCTAssertFalse(PrepFixtures.isPresent(out, f, 2))
                XCTAssertEqual(PrepFixtures.point(out, f, 2), [0, 0])
            }
        }
    }

    // MARK: - Time

    /// A window cut from a longer sequence whose nose x equals 100 + the frame index.
    func timeSource() -> PoseSequence { PrepFixtures.sequence(id: "long", label: "a", frames: 60) }
    func noseX(_ ws: Augmenter.Workspace) -> [Float] { (0..<ws.frames).map { ws.coordinates[$0 * 5 * 2] - 100 } }

    func testFrameDropSkipsWholeSourceFramesInOrder() throws {
        let a = try augmenter {
            $0.frameDropProbability = 1; $0.frameDropRate = 0.4
        }
        let ws = Augmenter.Workspace(frames: 10, skeleton: s2)
        var g = SeededGenerator(seed: 3)
        a.augment(source: timeSource(), first: 20, step: 1, padding: .empty, workspace: ws, using: &g)
        let x = noseX(ws)
        for (i, v) in x.enumerated() {
            XCTAssertEqual(v, v.rounded(), "frame \(i) is a whole source frame")
            if i > 0 { XCTAssertGreaterThan(v, x[i - 1]) }
        }
        XCTAssertGreaterThan(x[9] - x[0], 9, "frames were dropped")
        XCTAssertEqual((x[0] + x[9]) / 2, 24.5, accuracy: 0.5 + 0.01, "the span stays centred on the window")
    }

    func testSpeedChangeScalesTimeAboutTheWindowMiddleUsingRealNeighbouringFrames() throws {
        let a = try augmenter {
            $0.speedProbability = 1; $0.maxSpeedChange = 0.5
        }
        let ws = Augmenter.Workspace(frames: 9, skeleton: s2)
        var g = SeededGenerator(seed: 11)
        a.augment(source: timeSource(), first: 20, step: 1, padding: .empty, workspace: ws, using: &g)
        let x = noseX(ws)
        let v = (x[8] - x[0]) / 8
        XCTAssertTrue((0.5...1.5).contains(v) && abs(v - 1) > 0.01, "speed \(v)")
        for i in 0..<9 { XCTAssertEqual(x[i], 24 + (Float(i) - 4) * v, accuracy: 1e-3) }
        XCTAssertTrue((0..<9 * 5).allSatisfy { ws.present[$0] == 1 }, "no padding inside a long sequence")
    }

    func testTimeWarpKeepsTheEndsAndStaysMonotonic() throws {
        let a = try augmenter {
            $0.timeWarpProbability = 1; $0.maxTimeWarp = 0.9
        }
        let ws = Augmenter.Workspace(frames: 11, skeleton: s2)
        var g = SeededGenerator(seed: 5)
        a.augment(source: timeSource(), first: 20, step: 1, padding: .empty, workspace: ws, using: &g)
        let x = noseX(ws)
        XCTAssertEqual(x[0], 20, accuracy: 1e-4)
        XCTAssertEqual(x[10], 30, accuracy: 1e-4)
        XCTAssertEqual(x[5], 25, accuracy: 1e-4)
        for i in 1..<11 { XCTAssertGreaterThan(x[i], x[i - 1]) }
        XCTAssertGreaterThan((0..<11).map { abs(x[$0] - 20 - Float($0)) }.max()!, 0.1, "the warp changed timing")
    }

    // MARK: - Determinism and config

    func testSameSeedSameWindowDifferentSeedDifferentWindow() throws {
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 8)
        let a = try augmenter {
            $0.flipProbability = 0.5; $0.rotationProbability = 0.5; $0.maxRotationDegrees = 15; $0.jitterProbability = 1
            $0.jitterStandardDeviation = 0.02; $0.speedProbability = 0.5; $0.maxSpeedChange = 0.2
        }
        XCTAssertEqual(run(a, w, seed: 42), run(a, w, seed: 42))
        XCTAssertNotEqual(run(a, w, seed: 42).coordinates, run(a, w, seed: 43).coordinates)
        // All off: the window comes back unchanged.
        XCTAssertEqual(run(try augmenter { _ in }, w).coordinates, w.coordinates)
    }

    func testConfigDecodesPartialObjectsAndRejectsUnknownKeys() throws {
        let c = try JSONDecoder().decode(AugmentationConfig.self, from: Data(#"{"flipProbability": 0.5, "maxSpeedChange": 0.1}"#.utf8))
        XCTAssertEqual(c.flipProbability, 0.5)
        XCTAssertEqual(c.maxSpeedChange, 0.1)
        XCTAssertEqual(c.jitterProbability, 0)
        XCTAssertTrue(c.isEnabled)
        XCTAssertFalse(AugmentationConfig().isEnabled)
        XCTAssertEqual(try JSONDecoder().decode(AugmentationConfig.self, from: JSONEncoder().encode(c)), c)
        assertThrows(["unknown augmentation key 'flipProbabilty'"]) {
            _ = try JSONDecoder().decode(AugmentationConfig.self, from: Data(#"{"flipProbabilty": 0.5}"#.utf8))
        }
        var bad = AugmentationConfig()
        bad.maxScaleChange = 1
        assertThrows(["augmentation 'maxScaleChange' must be in [0, 1)"]) { try bad.validate() }
        bad = AugmentationConfig()
        bad.flipProbability = 1.5
        assertThrows(["'flipProbability' must be in [0, 1]"]) { try bad.validate() }
        bad = AugmentationConfig()
        bad.jitterStandardDeviation = .nan
        assertThrows(["'jitterStandardDeviation'"]) { _ = try Augmenter(config: bad, skeleton: self.s2) }
        assertThrows(["imageWidth"]) { _ = try Augmenter(config: AugmentationConfig(), skeleton: self.s2, imageWidth: 0) }
    }
}
