@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// The 2D view change (`viewProbability`, `maxViewDegrees`): a camera moved about the body.
final class ViewAugmentationTests: XCTestCase {
    /// A chain root -> mid -> tip, 2D pixels.
    let chain = Skeleton(name: "chain", joints: ["root", "mid", "tip"], dimensions: 2, units: .pixels, bones: [["root", "mid"], ["mid", "tip"]])

    /// Frame 0 stands straight (both bones 10 px long, vertical); in frame 1 the first bone is
    /// 6 px long (so 8 px of it points out of the image: 6² + 8² = 10²) and the second is 10 px.
    func window(absent: Set<[Int]> = []) -> PoseSequence {
        var s = PoseSequence(id: "w", label: "a", jointCount: 3, dimensions: 2, hasConfidence: false)
        let points: [[(Float, Float)]] = [[(0, 0), (0, 10), (0, 20)], [(0, 0), (6, 0), (6, 10)]]
        for (f, frame) in points.enumerated() {
            s.appendFrame(frame.enumerated().map { j, p in absent.contains([f, j]) ? nil : PosePoint(x: p.0, y: p.1) })
        }
        return s
    }

    func workspace(_ w: PoseSequence, skeleton: Skeleton) -> Augmenter.Workspace {
        let ws = Augmenter.Workspace(frames: w.frameCount, skeleton: skeleton, confidence: false)
        ws.coordinates.update(from: w.coordinates, count: w.coordinates.count)
        ws.present.update(from: w.present, count: w.present.count)
        return ws
    }

    func x(_ ws: Augmenter.Workspace, _ f: Int, _ j: Int) -> Float { ws.coordinates[(f * 3 + j) * 2] }

    func testAKnownDrawForeshortensXAndMovesEachJointByItsDepthGuess() throws {
        var c = AugmentationConfig()
        (c.viewProbability, c.maxViewDegrees) = (1, 60)
        let a = try Augmenter(config: c, skeleton: chain)
        let w = window()
        var g = SeededGenerator(seed: 7)
        var copy = g
        let theta = (copy.nextUnitDouble() * 2 - 1) * 60 * Double.pi / 180  // probability 1 draws no coin
        XCTAssertGreaterThan(abs(theta), 0.05)
        // Then the sides: one draw for "each limb alone", and if so one for the chain's one limb.
        let away: Double = copy.next() >> 63 != 0 && copy.next() >> 63 != 0 ? -1 : 1
        let out = a.augment(w, using: &g)
        // Centre x: the mean of the six present joints, (0 + 0 + 0 + 0 + 6 + 6) / 6 = 2.
        // Depths: frame 0 all 0; frame 1 root 0, mid ±8 (sqrt(10² - 6²)), tip the same + 0.
        let depth: [[Double]] = [[0, 0, 0], [0, 8 * away, 8 * away]]
        for f in 0..<2 {
            for j in 0..<3 {
                let p = PrepFixtures.point(w, f, j)
                let expected = 2 + cos(theta) * (Double(p[0]) - 2) + sin(theta) * depth[f][j]
                assertClose(PrepFixtures.point(out, f, j), [Float(expected), p[1]], absolute: 1e-4)
            }
        }
        XCTAssertEqual(out.present, w.present)
    }

    func testZeroDegreesIsTheIdentityAndNinetyLeavesOnlyTheDepth() throws {
        let a = try Augmenter(config: AugmentationConfig(), skeleton: chain)
        let w = window()
        let ws = workspace(w, skeleton: chain)
        a.turnView(ws, by: 0, about: 2)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: ws.coordinates, count: 12)), w.coordinates)
        let side = workspace(w, skeleton: chain)
        a.turnView(side, by: Float.pi / 2, about: 2)
        // Seen from the side every joint is at the centre plus its depth; y stays.
        assertClose([x(side, 0, 0), x(side, 0, 1), x(side, 0, 2), x(side, 1, 0), x(side, 1, 1), x(side, 1, 2)], [2, 2, 2, 2, 10, 10], absolute: 1e-5)
        assertClose([side.coordinates[3], side.coordinates[9]], [10, 0], absolute: 0)
        let back = workspace(w, skeleton: chain)
        a.turnView(back, by: -Float.pi / 2, about: 2)
        assertClose([x(back, 1, 0), x(back, 1, 1), x(back, 1, 2)], [2, -6, -6], absolute: 1e-5)
    }

    func testAbsentJointsStayAbsentAndABoneWithAnAbsentEndAddsNoDepth() throws {
        let a = try Augmenter(config: AugmentationConfig(), skeleton: chain)
        // Frame 1's mid joint was not seen: the tip keeps the root's depth (0) there.
        let w = window(absent: [[1, 1]])
        let ws = workspace(w, skeleton: chain)
        a.turnView(ws, by: Float.pi / 2, about: 2)
        XCTAssertEqual(ws.present[4], 0)
        XCTAssertEqual([ws.coordinates[8], ws.coordinates[9]], [0, 0])
        assertClose([x(ws, 1, 0), x(ws, 1, 2)], [2, 2], absolute: 1e-5)
        // Through the augmenter too: nothing absent becomes present.
        var c = AugmentationConfig()
        (c.viewProbability, c.maxViewDegrees) = (1, 90)
        var g = SeededGenerator(seed: 3)
        let out = try Augmenter(config: c, skeleton: chain).augment(w, using: &g)
        XCTAssertEqual(out.present, w.present)
        XCTAssertEqual(PrepFixtures.point(out, 1, 1), [0, 0])
    }

    func testASkeletonWithoutBonesIsOnlyForeshortened() throws {
        let bare = Skeleton(name: "bare", joints: chain.joints, dimensions: 2, units: .pixels)
        let a = try Augmenter(config: AugmentationConfig(), skeleton: bare)
        let ws = workspace(window(), skeleton: bare)
        a.turnView(ws, by: Float.pi / 3, about: 2)
        assertClose([x(ws, 1, 0), x(ws, 1, 1), x(ws, 1, 2)], [2 - 1, 2 + 2, 2 + 2], absolute: 1e-5)  // cos 60° = 1/2
    }

    func testBonesAreWalkedParentsFirstWhateverTheirOrder() {
        let reversed = Skeleton(
            name: "r", joints: ["tip", "mid", "root", "other"], dimensions: 2, units: .pixels, bones: [["mid", "tip"], ["root", "mid"], ["root", "other"]])
        let order = Augmenter.depthOrder(reversed)
        XCTAssertEqual(order.map { [$0.parent, $0.child] }, [[2, 1], [2, 3], [1, 0]])
    }

    func testEachLimbsBonesShareOneSideAndHalfTheDrawsTurnEveryLimbTowardTheCamera() throws {
        // Two limbs from the root (a1 -> a2, b1 -> b2) and a branch point at b1 (b1 -> c).
        let body = Skeleton(
            name: "limbs", joints: ["root", "a1", "a2", "b1", "b2", "c"], dimensions: 2, units: .pixels,
            bones: [["root", "a1"], ["a1", "a2"], ["root", "b1"], ["b1", "b2"], ["b1", "c"]])
        let a = try Augmenter(config: AugmentationConfig(), skeleton: body)
        XCTAssertEqual(a.depthBones.map { [$0.parent, $0.child] }, [[0, 1], [0, 3], [1, 2], [3, 4], [3, 5]])
        // A limb starts at the root and at the branch point b1; a1 -> a2 goes on from a1.
        XCTAssertEqual(a.limbStarts, [true, true, false, true, true])
        let ws = Augmenter.Workspace(frames: 1, skeleton: body, confidence: false)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: ws.side, count: 6)), [1, 1, 1, 1, 1, 1])  // "toward" until drawn
        var g = SeededGenerator(seed: 11)
        var aAway = 0, differ = 0, allToward = 0
        let n = 4000
        for _ in 0..<n {
            a.drawSides(ws, using: &g)
            let s = Array(UnsafeBufferPointer(start: ws.side, count: 6))
            XCTAssertEqual(s[2], s[1])  // a2 follows a1
            XCTAssertTrue(s.allSatisfy { $0 == 1 || $0 == -1 })
            aAway += s[1] < 0 ? 1 : 0
            differ += s[1] != s[3] ? 1 : 0
            allToward += s.allSatisfy { $0 == 1 } ? 1 : 0
        }
        // P(a away) = 1/2 · 1/2; P(a, b differ) = 1/2 · 1/2; P(all toward) = 1/2 + 1/2 · 1/8.
        // Bounds: about 5 standard deviations of a binomial count of 4,000 draws.
        XCTAssertEqual(Double(aAway), 0.25 * Double(n), accuracy: 140)
        XCTAssertEqual(Double(differ), 0.25 * Double(n), accuracy: 140)
        XCTAssertEqual(Double(allToward), 0.5625 * Double(n), accuracy: 160)
    }

    func testALimbDrawnAwayTurnsToTheOtherSide() throws {
        let a = try Augmenter(config: AugmentationConfig(), skeleton: chain)
        let ws = workspace(window(), skeleton: chain)
        for j in 0..<3 { ws.side[j] = -1 }
        a.turnView(ws, by: Float.pi / 2, about: 2)
        // As testZeroDegreesIsTheIdentityAndNinetyLeavesOnlyTheDepth, the depth negated.
        assertClose([x(ws, 1, 0), x(ws, 1, 1), x(ws, 1, 2)], [2, -6, -6], absolute: 1e-5)
    }

    func testThreeDimensionalWindowsAreLeftAloneAndDrawNothing() throws {
        var c = AugmentationConfig()
        (c.viewProbability, c.maxViewDegrees, c.jitterProbability, c.jitterStandardDeviation) = (0.5, 90, 1, 0.05)
        var plain = c
        (plain.viewProbability, plain.maxViewDegrees) = (0, 0)
        let w = PrepFixtures.sequence(id: "w", label: "a", frames: 4, skeleton: PrepFixtures.body3D)
        var g1 = SeededGenerator(seed: 5), g2 = SeededGenerator(seed: 5)
        let viewed = try Augmenter(config: c, skeleton: PrepFixtures.body3D).augment(w, using: &g1)
        let jittered = try Augmenter(config: plain, skeleton: PrepFixtures.body3D).augment(w, using: &g2)
        XCTAssertEqual(viewed.coordinates, jittered.coordinates)
        XCTAssertNotEqual(viewed.coordinates, w.coordinates)
    }

    func testTheKeysDecodeAndAreChecked() throws {
        let c = try JSONDecoder().decode(AugmentationConfig.self, from: Data(#"{"viewProbability": 0.5, "maxViewDegrees": 60}"#.utf8))
        XCTAssertEqual([c.viewProbability, c.maxViewDegrees], [0.5, 60])
        XCTAssertTrue(c.isEnabled)
        XCTAssertEqual(try JSONDecoder().decode(AugmentationConfig.self, from: JSONEncoder().encode(c)), c)
        var bad = AugmentationConfig()
        bad.maxViewDegrees = 91
        assertThrows(["augmentation 'maxViewDegrees' must be in [0, 90]"]) { try bad.validate() }
        bad = AugmentationConfig()
        bad.viewProbability = 2
        assertThrows(["'viewProbability' must be in [0, 1]"]) { try bad.validate() }
    }
}
