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

    /// Pushes `frames` into a fresh session and finishes it: every window, in order.
    func windows(_ frames: [StreamFixtures.Frame], options: StreamOptions = StreamOptions(stride: 3)) throws -> (windows: [StreamWindow], session: StreamSession) {
        let s = try StreamSession(model: StreamFixtures.model(), options: options)
        var out: [StreamWindow] = []
        for f in frames { out += try s.push(f.points, time: f.time) }
        return (out + s.finish(), s)
    }

    func testAStrayTimestampCostsOneFrameAndNothingAfterIt() throws {
        // A single {"t": 1e12} (or a jump of 49,990 s) among good frames: ignored, and the
        // frames after it go on from the stream's own clock.
        let recording = StreamFixtures.recording(frames: 60, seed: 41)
        for stray in [1e12, recording[30].time + 49_990] {
            var hostile = recording
            hostile.insert(StreamFixtures.Frame(time: stray, points: recording[30].points), at: 30)
            let (got, session) = try windows(hostile)
            let (clean, _) = try windows(recording)
            XCTAssertFalse(clean.isEmpty)
            XCTAssertEqual(got, clean, "t = \(stray)")
            XCTAssertEqual(session.statistics.count(.timeJump), 1)
            XCTAssertEqual(session.statistics.count(.timeBackwards), 0, "no frame after the stray one is dropped")
            let jump = try XCTUnwrap(session.statistics.firstWarnings.first { $0.kind == .timeJump })
            XCTAssertEqual(jump.frame, 30)
            XCTAssertTrue("\(jump)".contains("the timestamp jumps"), "\(jump)")
        }
    }

    func testEveryLineJumpingCostsNothingAndAPushInterpolatesAtMostTheJumpLimit() throws {
        // Timestamps jumping by 49,990 s at every frame: each one is a new stray (not within
        // the limit of the last), so no frame is made at all, in no time.
        let s = try session()
        _ = try s.push(body, time: 0)
        for k in 1...200 { XCTAssertEqual(try s.push(body, time: Double(k) * 49_990), []) }
        XCTAssertEqual(s.statistics.modelFrames, 0)
        XCTAssertEqual(s.statistics.count(.timeJump), 200)
        // A step of 9.9 s (under the 10 s limit) makes at most 10 · 30 model frames (frames 0 to
        // 297, the last at the push's own time); one of 10.1 s is a jump, ignored.
        let t = try session()
        _ = try t.push(body, time: 0)
        _ = try t.push(body, time: 9.9)
        XCTAssertEqual(t.statistics.modelFrames, 298)
        XCTAssertEqual(try t.push(body, time: 20.01), [])
        XCTAssertEqual(t.statistics.modelFrames, 298)
        // The limit is an option, checked against the model's frame rate.
        XCTAssertThrowsError(try StreamSession(model: StreamFixtures.model(), options: StreamOptions(stride: 1, maximumJump: 0))) {
            XCTAssertTrue("\($0)".contains("the jump limit must be a positive number of seconds"), "\($0)")
        }
        XCTAssertThrowsError(try StreamSession(model: StreamFixtures.model(), options: StreamOptions(stride: 1, maximumJump: 1e6))) {
            XCTAssertTrue("\($0)".contains("would let one frame make 30000000.0 frames"), "\($0)")
        }
    }

    func testAConfirmedJumpRestartsTheStreamAsANewSegment() throws {
        // A real pause of 60 s: the first frame after it is ignored, the second confirms the
        // jump and starts a new segment. The windows are those of the part before the pause,
        // finished, then those of the part after it without its first frame.
        let before = StreamFixtures.recording(frames: 40, seed: 43), after = StreamFixtures.recording(frames: 40, seed: 44)
        let resumed = after.map { StreamFixtures.Frame(time: $0.time + 60 + before.last!.time, points: $0.points) }
        let (got, session) = try windows(before + resumed)
        let (first, _) = try windows(before)
        let (second, _) = try windows(Array(resumed.dropFirst()))
        XCTAssertEqual(got.map(\.segment), Array(repeating: 0, count: first.count) + Array(repeating: 1, count: second.count))
        var renumbered = second
        for k in renumbered.indices { renumbered[k].segment = 1 }
        XCTAssertEqual(got, first + renumbered)
        XCTAssertEqual(session.statistics.count(.timeJump), 1)
        XCTAssertEqual(session.statistics.count(.gap), 0, "a restart is not a gap")
        // An event detector ends its event where the segment changes.
        var d = try EventDetector(classes: StreamFixtures.classes, options: EventOptions(smoothing: 1, enter: 0.01, exit: 0.01))
        let events = got.flatMap { d.add($0) } + [d.finish()].compactMap { $0 }
        XCTAssertTrue(events.allSatisfy { $0.end <= before.last!.time + 1e-9 || $0.start >= resumed[1].time - 1e-9 }, "\(events)")
        XCTAssertGreaterThanOrEqual(events.count, 2)
    }

    func testACoordinateBeyondTheFilesLimitIgnoresTheFrame() throws {
        // As the readers refuse ±1e6 in files, a session ignores the frame (no event from a
        // frame at 1e30); the limit itself is accepted.
        let recording = StreamFixtures.recording(frames: 50, seed: 45)
        var hostile = recording
        for (k, v) in [(20, Float(1e30)), (30, 3.4e38), (40, -2e6)] {
            var points = recording[k].points
            points["neck"] = PosePoint(x: 300, y: v)
            hostile.insert(StreamFixtures.Frame(time: (recording[k - 1].time + recording[k].time) / 2, points: points), at: k)
        }
        let (got, used) = try windows(hostile)
        let (clean, alone) = try windows(recording)
        XCTAssertEqual(got, clean)
        XCTAssertEqual(used.statistics.count(.outOfRange), 3)
        XCTAssertEqual(used.statistics.count(.missingJoint), alone.statistics.count(.missingJoint), "only why the frame was ignored")
        let first = try XCTUnwrap(used.statistics.firstWarnings.first { $0.kind == .outOfRange })
        XCTAssertTrue("\(first)".contains("joint neck at (300.0, 1e+30) is beyond ±1000000"), "\(first)")
        let edge = try session()
        _ = try edge.push(["neck": PosePoint(x: 1e6, y: -1e6), "root": PosePoint(x: 999_000, y: -999_000)], time: 0)
        XCTAssertEqual(edge.statistics.count(.outOfRange), 0)
        XCTAssertThrowsError(try self.session(strict: true).push(["neck": PosePoint(x: 1e7, y: 0)], time: 0)) { e in
            guard case .rejected(let w)? = e as? StreamError else { return XCTFail("\(e)") }
            XCTAssertEqual(w.kind, .outOfRange)
        }
    }

    func testAModelWhoseOutputsAreNotFiniteIsRefusedBeforeTheFirstFrame() throws {
        // Finite weights whose sums overflow on any input: refused when a session or a tracked
        // stream is made (once per model), and by batch predict at the first window.
        let model = try StreamFixtures.model(conv: false, scale: 1e37)
        for attempt in 0..<2 {
            XCTAssertThrowsError(try StreamSession(model: model, options: StreamOptions(stride: 3)), "attempt \(attempt)") { e in
                guard case .nonFiniteOnPlainInput(_, let v)? = e as? ModelError else { return XCTFail("\(e)") }
                XCTAssertFalse(v.isFinite)
                XCTAssertTrue("\(e)".contains("not a finite number, on a plain pose: its weights overflow float32"), "\(e)")
            }
        }
        XCTAssertThrowsError(try TrackedStream(model: model, options: StreamOptions(stride: 3), events: .standard(classes: model.classes)))
        let recording = StreamFixtures.recording(frames: 30, seed: 46)
        XCTAssertThrowsError(try model.predict(sequence: StreamFixtures.sequence(recording), stride: 3, sourceFrameRate: nil)) { e in
            guard case .nonFiniteOutput(let w, _, _)? = e as? ModelError else { return XCTFail("\(e)") }
            XCTAssertEqual(w, 0)
        }
        XCTAssertNoThrow(try StreamFixtures.model().checkOutputs())
    }

    func testAWindowWhoseOutputIsNotFiniteIsDroppedAndTheStreamGoesOn() throws {
        // A model fine on plain poses but whose sums overflow on a point at 1e6 (allowed):
        // those windows are counted warnings, not windows, and the others come as before.
        let model = try StreamFixtures.model(conv: false, scale: 1e18, torso: false)
        XCTAssertNoThrow(try model.checkOutputs())
        let recording = StreamFixtures.recording(frames: 60, seed: 47)
        var hostile = recording
        var far = recording[30].points
        far["leftWrist"] = PosePoint(x: 1e6, y: 1e6)
        hostile[30].points = far
        func run(_ frames: [StreamFixtures.Frame], strict: Bool = false) throws -> (windows: [StreamWindow], session: StreamSession) {
            let s = try StreamSession(model: model, options: StreamOptions(stride: 3, strict: strict))
            var out: [StreamWindow] = []
            for f in frames { out += try s.push(f.points, time: f.time) }
            return (out + s.finish(), s)
        }
        let (clean, _) = try run(recording)
        let (got, session) = try run(hostile)
        let dropped = session.statistics.count(.nonFiniteOutput)
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertEqual(got.count + dropped, clean.count)
        XCTAssertEqual(got.filter { $0.endTime < recording[29].time || $0.startTime > recording[31].time }.count, got.count, "only windows holding the far frame are dropped")
        XCTAssertEqual(Set(got.map(\.start)).isSubset(of: Set(clean.map(\.start))), true)
        for w in got where w.endTime < recording[29].time { XCTAssertEqual(clean.first { $0.start == w.start }, w) }
        XCTAssertTrue("\(session.statistics.firstWarnings.first { $0.kind == .nonFiniteOutput }!)".contains("not finite (window dropped)"))
        // Under strict, the push that made the window throws it (these frames have no other problem).
        let plain = (0..<20).map { f in
            var points = body
            points["leftWrist"] = PosePoint(x: f == 10 ? 1e6 : 240 + Float(f), y: 200)
            return StreamFixtures.Frame(time: Double(f) / 30, points: points)
        }
        XCTAssertThrowsError(try run(plain, strict: true)) { e in
            guard case .rejected(let w)? = e as? StreamError else { return XCTFail("\(e)") }
            XCTAssertEqual(w.kind, .nonFiniteOutput)
        }
    }
}
