@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// The 3D camera tilt (`tiltProbability`, `maxTiltDegrees`): a turn about a horizontal axis.
final class TiltAugmentationTests: XCTestCase {
    let body = Skeleton(name: "stick", joints: ["root", "neck", "hand"], dimensions: 3, units: .metres, bones: [["root", "neck"], ["neck", "hand"]])

    /// Two frames of a standing stick figure reaching forward (+z) then sideways (+x).
    func window(dimensions: Int = 3) -> PoseSequence {
        var s = PoseSequence(id: "w", label: "a", jointCount: 3, dimensions: dimensions, hasConfidence: false)
        let frames: [[[Float]]] = [[[0, 0, 2], [0, 0.5, 2], [0, 0.5, 2.4]], [[0, 0, 2], [0, 0.5, 2], [0.4, 0.5, 2]]]
        for frame in frames {
            s.appendFrame(frame.map { p in dimensions == 3 ? PosePoint(x: p[0], y: p[1], z: p[2]) : PosePoint(x: p[0], y: p[1]) })
        }
        return s
    }

    func workspace(_ w: PoseSequence) -> Augmenter.Workspace {
        let ws = Augmenter.Workspace(frames: w.frameCount, skeleton: body, confidence: false)
        ws.coordinates.update(from: w.coordinates, count: w.coordinates.count)
        ws.present.update(from: w.present, count: w.present.count)
        return ws
    }

    func point(_ ws: Augmenter.Workspace, _ f: Int, _ j: Int) -> [Float] { (0..<3).map { ws.coordinates[(f * 3 + j) * 3 + $0] } }

    func testAQuarterTurnAboutXTakesUpToTheDepthAxis() throws {
        let a = try Augmenter(config: AugmentationConfig(), skeleton: body)
        let ws = workspace(window())
        // About the x axis (direction 0) through the root: up (+y) goes to +z, +z to -y.
        a.tilt(ws, by: Float.pi / 2, axis: (1, 0), about: (0, 0, 2))
        assertClose(point(ws, 0, 0), [0, 0, 2], absolute: 1e-6)
        assertClose(point(ws, 0, 1), [0, 0, 2.5], absolute: 1e-6)
        assertClose(point(ws, 0, 2), [0, -0.4, 2.5], absolute: 1e-6)
        // A reach along the axis itself does not move: frame 1's hand keeps its x offset.
        assertClose(point(ws, 1, 2), [0.4, 0, 2.5], absolute: 1e-6)
    }

    func testAnyTiltKeepsEveryDistanceAndTheCentre() throws {
        let a = try Augmenter(config: AugmentationConfig(), skeleton: body)
        let w = window()
        let ws = workspace(w)
        let centre: (Float, Float, Float) = (0.1, 0.3, 2.1)
        a.tilt(ws, by: 0.5, axis: (cos(1.1), sin(1.1)), about: centre)
        func distance(_ p: [Float], _ q: [Float]) -> Float { zip(p, q).map { ($0 - $1) * ($0 - $1) }.reduce(0, +).squareRoot() }
        let c: [Float] = [centre.0, centre.1, centre.2]
        for f in 0..<2 {
            for j in 0..<3 {
                XCTAssertEqual(distance(point(ws, f, j), c), distance(PrepFixtures.point(w, f, j), c), accuracy: 1e-5)
                for k in 0..<j {
                    XCTAssertEqual(distance(point(ws, f, j), point(ws, f, k)), distance(PrepFixtures.point(w, f, j), PrepFixtures.point(w, f, k)), accuracy: 1e-5)
                }
            }
        }
        // The vertical bone (root -> neck) now leans by the tilt: its y component is cos 0.5 of its length.
        XCTAssertEqual(point(ws, 0, 1)[1] - point(ws, 0, 0)[1], 0.5 * cos(0.5), accuracy: 1e-5)
    }

    func testTheAugmenterTiltsOnly3DWindowsAndOnlyWhenAsked() throws {
        var c = AugmentationConfig()
        (c.tiltProbability, c.maxTiltDegrees) = (1, 30)
        XCTAssertTrue(c.isEnabled)
        let w = window()
        var g = SeededGenerator(seed: 3)
        let out = try Augmenter(config: c, skeleton: body).augment(w, using: &g)
        XCTAssertNotEqual(out.coordinates, w.coordinates)
        // The root -> neck bone keeps its length and leans by at most 30°.
        let bone = (0..<3).map { PrepFixtures.point(out, 0, 1)[$0] - PrepFixtures.point(out, 0, 0)[$0] }
        XCTAssertEqual((bone.map { $0 * $0 }.reduce(0, +)).squareRoot(), 0.5, accuracy: 1e-5)
        XCTAssertGreaterThanOrEqual(bone[1] / 0.5, Float(cos(30 * Double.pi / 180)) - 1e-5)
        let flat = Skeleton(name: "flat", joints: ["root", "neck", "hand"], dimensions: 2, units: .pixels)
        let w2 = window(dimensions: 2)
        var g2 = SeededGenerator(seed: 3)
        XCTAssertEqual(try Augmenter(config: c, skeleton: flat).augment(w2, using: &g2).coordinates, w2.coordinates)
        c.maxTiltDegrees = 91
        XCTAssertThrowsError(try c.validate()) { XCTAssertTrue("\($0)".contains("maxTiltDegrees"), "\($0)") }
    }
}
