@testable import ActionRuntime
import Foundation
import PoseCore
import XCTest

/// The Pose contract at the session's boundary: names, units, timestamps, bad values.
final class StreamBoundaryTests: XCTestCase {
    let body: [String: PosePoint] = [
        "neck": PosePoint(x: 300, y: 120), "root": PosePoint(x: 302, y: 260), "leftWrist": PosePoint(x: 240, y: 200),
        "rightWrist": PosePoint(x: 360, y: 205),
    ]

    func session(strict: Bool = false) throws -> StreamSession {
        try StreamSession(model: StreamFixtures.model(), options: StreamOptions(stride: 3, strict: strict))
    }

    func testAliasesAndLooseNamesLandOnTheSameJointsAsTheSkeletonsNames() throws {
        // Vision's raw keys and snake case give the same windows as the skeleton's names.
        let names = try session(), aliases = try session()
        let renamed = ["neck": "neck_1_joint", "root": "root", "leftWrist": "left_hand_joint", "rightWrist": "RIGHT_WRIST"]
        var a: [StreamWindow] = [], b: [StreamWindow] = []
        for f in 0..<40 {
            let t = Double(f) / 30
            var moved = body
            for (k, p) in body { moved[k] = PosePoint(x: p.x + Float(f), y: p.y - Float(f % 5)) }
            a += try names.push(moved, time: t)
            b += try aliases.push(Dictionary(uniqueKeysWithValues: moved.map { (renamed[$0.key]!, $0.value) }), time: t)
        }
        XCTAssertFalse(a.isEmpty)
        XCTAssertEqual(a, b)
        XCTAssertEqual(aliases.statistics.warningTotal, 0)
    }

    func testUnknownNamesNaNAndBackwardsTimeAreCountedWarnings() throws {
        let s = try session()
        var frame = body
        frame["tail"] = PosePoint(x: 1, y: 2)
        _ = try s.push(frame, time: 0)
        frame["tail"] = nil
        frame["leftWrist"] = PosePoint(x: .nan, y: 3)
        _ = try s.push(frame, time: 0.05)
        _ = try s.push(body, time: 0.02)  // backwards: ignored
        _ = try s.push(body, time: .nan)  // ignored
        _ = try s.push(body, time: 2.0)  // a gap
        let st = s.statistics
        XCTAssertEqual(st.frames, 5)
        XCTAssertEqual(st.count(.unknownJoint), 1)
        XCTAssertEqual(st.unknownNames, ["tail"])
        XCTAssertEqual(st.count(.nonFinite), 1)
        XCTAssertEqual(st.count(.timeBackwards), 2)
        XCTAssertEqual(st.count(.gap), 1)
        XCTAssertEqual(st.firstWarnings.map(\.kind), [.unknownJoint, .nonFinite, .timeBackwards, .gap])
        XCTAssertEqual(st.firstWarnings[2].frame, 2)
        XCTAssertTrue(st.firstWarnings[0].description.contains("unknown joint name tail"), st.firstWarnings[0].description)
    }

    func testANaNJointIsAbsent() throws {
        // A frame with a NaN wrist predicts as the same frame without the wrist.
        let a = try session(), b = try session()
        var wa: [StreamWindow] = [], wb: [StreamWindow] = []
        for f in 0..<15 {
            var withNaN = body, without = body
            if f == 7 {
                withNaN["leftWrist"] = PosePoint(x: 5, y: .infinity)
                without["leftWrist"] = nil
            }
            wa += try a.push(withNaN, time: Double(f) / 30)
            wb += try b.push(without, time: Double(f) / 30)
        }
        XCTAssertFalse(wa.isEmpty)
        XCTAssertEqual(wa, wb)
    }

    func testNormalisedPointsForAPixelModelAndMissingCentreAreWarned() throws {
        let s = try session()
        _ = try s.push(["neck": PosePoint(x: 0.5, y: 0.3), "root": PosePoint(x: 0.5, y: 0.6)], time: 0)
        _ = try s.push(["leftWrist": PosePoint(x: 100, y: 300), "rightWrist": PosePoint(x: 200, y: 310)], time: 0.1)
        _ = try s.push([:], time: 0.2)  // an empty pose is a real frame: no warning
        XCTAssertEqual(s.statistics.count(.normalisedPoints), 1)
        XCTAssertEqual(s.statistics.count(.missingJoint), 2, "no root (centre) and no neck (torso upper) in the second frame")
        XCTAssertEqual(s.statistics.count(.wrongScale), 0)
        XCTAssertEqual(s.statistics.frames, 3)
    }

    func testPixelsForAMetreModelAndATinyBodyForAPixelModelAreWarned() throws {
        let metres = try StreamSession(model: StreamFixtures.model(skeleton: .visionBody3D), options: StreamOptions(stride: 3))
        _ = try metres.push(["root": PosePoint(x: 0, y: 0, z: 0), "centerShoulder": PosePoint(x: 0.02, y: 0.5, z: 0.1)], time: 0)
        _ = try metres.push(["root": PosePoint(x: 320, y: 400, z: 0), "centerShoulder": PosePoint(x: 322, y: 180, z: 0)], time: 0.1)
        XCTAssertEqual(metres.statistics.count(.wrongScale), 1, "220 units across is not a body in metres")
        XCTAssertTrue(metres.statistics.firstWarnings[0].description.contains("for a model in metres"))
        let pixels = try session()
        _ = try pixels.push(["neck": PosePoint(x: 3, y: 2), "root": PosePoint(x: 3.5, y: 6)], time: 0)
        XCTAssertEqual(pixels.statistics.count(.wrongScale), 1, "4 pixels across")
        XCTAssertEqual(pixels.statistics.count(.normalisedPoints), 0)
    }

    func testStrictSessionsThrowTheFirstProblemAndIgnoreTheFrame() throws {
        let s = try session(strict: true)
        _ = try s.push(body, time: 0)
        XCTAssertThrowsError(try s.push(["nose ring": PosePoint(x: 1, y: 1)], time: 0.1)) { e in
            guard case .rejected(let w)? = e as? StreamError else { return XCTFail("\(e)") }
            XCTAssertEqual(w.kind, .unknownJoint)
            XCTAssertEqual(w.frame, 1)
        }
        XCTAssertThrowsError(try s.push(body, time: -1)) { e in
            guard case .rejected(let w)? = e as? StreamError else { return XCTFail("\(e)") }
            XCTAssertEqual(w.kind, .timeBackwards)
        }
        XCTAssertEqual(s.statistics.warningTotal, 0, "strict sessions throw instead of counting")
        // The session goes on from the last good frame.
        var windows: [StreamWindow] = []
        for f in 1..<20 { windows += try s.push(body, time: Double(f) / 30) }
        XCTAssertEqual(windows.first?.start, 0)
    }

    func testAHugeTimeJumpIsAnErrorNotAHang() throws {
        let s = try session()
        _ = try s.push(body, time: 0)
        XCTAssertThrowsError(try s.push(body, time: 1e12)) { e in
            guard case .timeJump(let f, _, _)? = e as? StreamError else { return XCTFail("\(e)") }
            XCTAssertEqual(f, 1)
        }
    }
}
