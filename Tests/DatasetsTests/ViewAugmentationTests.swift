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
        let theta = (copy.nextUnitDouble() * 2 - 1) * 60 * Double.pi / 180  // the one draw: probability 1 draws no coin
        XCTAssertGreaterThan(abs(theta), 0.05)
        let out = a.augment(w, using: &g)
        // Centre x: the mean of the six present joints, (0 + 0 + 0 + 0 + 6 + 6) / 6 = 2.
        // Depths: frame 0 all 0; frame 1 root 0, mid 8 (sqrt(10² - 6²)), tip 8 + 0.
        let depth: [[Double]] = [[0, 0, 0], [0, 8, 8]]
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
