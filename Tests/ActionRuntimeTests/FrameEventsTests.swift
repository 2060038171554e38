@testable import ActionRuntime
import PoseCore
import XCTest

/// Frame-level events (`FrameSegmenter`, `EventStream`, `FrameMotion`) on hand-made windows and
/// frames: 10 frames per second, windows of 10 frames every 5, motion given per frame.
final class FrameEventsTests: XCTestCase {
    let a: [Float] = [0.9, 0.1], b: [Float] = [0.1, 0.9]

    func settings(
        hold: Double = 0.3, leadIn: Double = 0, leadOut: Double = 0.05, minimumDuration: Double = 0, lookAhead: Double = 1, background: [Bool] = [false, false],
        switchEvidence: Double = FrameSegmenter.Settings.defaultSwitchEvidence, motionLag: Int = 0
    ) -> FrameSegmenter.Settings {
        FrameSegmenter.Settings(
            enter: [0.5, 0.5], exit: [0.3, 0.3], hold: [hold, hold], leadIn: [leadIn, leadIn], leadOut: [leadOut, leadOut],
            minimumDuration: [minimumDuration, minimumDuration], background: background, lookAhead: lookAhead, stillBelow: 0.5,
            switchEvidence: switchEvidence, motionLag: motionLag)
    }

    /// Plays frames 0 ..< `count` (time k / 10, motion `moving(k) ? 1 : 0`, known at their own
    /// time) and a window `[s, s + 10)` with `probabilities(s)` whenever its last frame comes;
    /// returns each event with the frame whose call returned it (`count` for `finish()`).
    func play(
        _ s: FrameSegmenter.Settings, count: Int, moving: (Int) -> Bool, probabilities: (Int) -> [Float]
    ) -> [(event: FrameSegmenter.Event, at: Int)] {
        var segmenter = FrameSegmenter(settings: s)
        var out: [(FrameSegmenter.Event, Int)] = []
        for k in 0..<count {
            if k >= 9 && (k - 9) % 5 == 0 {
                segmenter.add(window: k - 9, end: k + 1, endTime: Double(k) / 10, probabilities: probabilities(k - 9))
            }
            out += segmenter.add(frame: k, time: Double(k) / 10, motion: moving(k) ? 1 : 0, now: Double(k) / 10).map { ($0, k) }
        }
        out += segmenter.finish().map { ($0, count) }
        return out
    }

    /// The first frame index at which `condition` holds.
    func first(_ condition: (Int) -> Bool) -> Int { (0..<1000).first(where: condition)! }

    func testRestEndsTheEventAtTheLastMovingFrameAndEmitsItOnceTheHoldHasPassed() {
        // Still 0-9, moving 10-29, still from 30: one event of the class the windows say.
        let got = play(settings(), count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a })
        XCTAssertEqual(got.count, 1)
        let e = got[0].event
        XCTAssertEqual(e.label, 0)
        XCTAssertEqual(e.start, 1.0, accuracy: 1e-12, "from the first moving frame (leadIn 0)")
        XCTAssertEqual(e.end, 2.9 + 0.05, accuracy: 1e-12, "the last moving frame plus leadOut")
        // The run of still frames from 3.0 s is rest once it lasts 0.3 s (frame 33, or 34 as
        // the seconds round), not 1 s (the look-ahead) after the end.
        XCTAssertEqual(got[0].at, first { Double($0) / 10 - 3.0 >= 0.3 })
        XCTAssertLessThanOrEqual(got[0].at, 34)
        XCTAssertEqual(e.peak, 0.9, accuracy: 1e-6)
        XCTAssertEqual(e.mean, 0.9, accuracy: 1e-6)
        // A longer hold waits longer; a leadIn moves the start back.
        let held = play(settings(hold: 0.6, leadIn: 0.2), count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a })
        XCTAssertEqual(held.map(\.at), [first { Double($0) / 10 - 3.0 >= 0.6 }])
        XCTAssertEqual(held[0].event.start, 0.8, accuracy: 1e-12)
        // With the motion's lag (each frame's motion seeing 2 frames ahead), the body stopped 2
        // frames before the last moving frame: the event ends there; it is emitted as before.
        let lagged = play(settings(motionLag: 2), count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a })
        XCTAssertEqual(lagged.map(\.at), got.map(\.at))
        XCTAssertEqual(lagged[0].event.end, 2.7 + 0.05, accuracy: 1e-12)
        XCTAssertEqual(lagged[0].event.start, 1.0, accuracy: 1e-12)
        // Without stillness the event runs to the end of the stream.
        let moving = play(settings(), count: 60, moving: { $0 >= 10 }, probabilities: { _ in self.a })
        XCTAssertEqual(moving.map(\.at), [60])
        XCTAssertEqual(moving[0].event.end, 5.9, accuracy: 1e-12)
    }

    func testAnotherClassTakesOverWhereItBecameTheTopClassOnceItsLeadAddsUp() {
        // Windows starting before frame 25 say a, the others b; always moving.
        let got = play(settings(), count: 60, moving: { _ in true }, probabilities: { $0 < 25 ? self.a : self.b })
        XCTAssertEqual(got.map(\.event.label), [0, 1])
        // Frame 27: the windows from 20 (a) and 25 (b) weigh 3 each, a tie; frame 28: 2 against
        // 4, b leads by (0.9·4 + 0.1·2 − 0.1·4 − 0.9·2) / 6 = 0.267, so the boundary is 2.8 s.
        XCTAssertEqual(got[0].event.end, 2.8, accuracy: 1e-12)
        XCTAssertEqual(got[1].event.start, 2.8, accuracy: 1e-12)
        // b's lead, times 0.1 s a frame: 0.027 (frame 28), 0.053 (29: 5 to 1), then 0.08 a
        // frame: 0.32 ≥ 0.3 at frame 32, decided 1 s (the look-ahead) after it.
        XCTAssertEqual(got[0].at, first { 3.2 + 1 <= Double($0) / 10 })
        XCTAssertEqual(got[0].event.start, 0, accuracy: 1e-12)
        XCTAssertEqual(got[0].event.peak, 0.9, accuracy: 1e-6)
        XCTAssertEqual(got[1].event.peak, 0.9, accuracy: 1e-6)
        // With no evidence asked, at frame 28 itself: the same events, 0.4 s sooner.
        let eager = play(settings(switchEvidence: 0), count: 60, moving: { _ in true }, probabilities: { $0 < 25 ? self.a : self.b })
        XCTAssertEqual(eager.map(\.event), got.map(\.event))
        XCTAssertEqual(eager[0].at, first { 2.8 + 1 <= Double($0) / 10 })
    }

    func testAClassThatLeadsForAMomentInsideAnActionDoesNotSplitIt() {
        // Every window says a but the one from 25, which says b: b leads frames 28-31 (by 0.27,
        // 0.53, 0.53, 0.27: 0.16 score-seconds, under 0.3), then a again. One event, a's.
        let flip: (Int) -> [Float] = { $0 == 25 ? self.b : self.a }
        let got = play(settings(), count: 60, moving: { (0..<50).contains($0) }, probabilities: flip)
        XCTAssertEqual(got.map(\.event.label), [0])
        XCTAssertEqual(got[0].event.start, 0, accuracy: 1e-12)
        XCTAssertEqual(got[0].event.end, 4.9 + 0.05, accuracy: 1e-12)
        XCTAssertLessThan(got[0].event.mean, 0.9, "b's frames count in a's mean")
        // Asking no evidence, each lead is a new action: a, b from 2.8 s, a again from 3.3 s.
        let eager = play(settings(switchEvidence: 0), count: 60, moving: { (0..<50).contains($0) }, probabilities: flip)
        XCTAssertEqual(eager.map(\.event.label), [0, 1, 0])
        XCTAssertEqual(eager.map(\.event.start), [0, 2.8, 3.3])
    }

    func testAnEventsClassIsTheOneWithTheHighestSumOverItsFrames() {
        // Still 0-9; the window from 5 says b, the later ones a: b leads frames 10 and 11 (and
        // starts the event there), a from frame 13, but its lead (0.027, 0.08, ...) is not yet
        // 0.3 when a's sum over the event passes b's (frame 14): the event was a first guess of b,
        // it is a's, from 1.0 s.
        let probabilities: (Int) -> [Float] = { $0 == 5 ? self.b : self.a }
        let got = play(settings(minimumDuration: 1), count: 60, moving: { (10..<40).contains($0) }, probabilities: probabilities)
        XCTAssertEqual(got.map(\.event.label), [0])
        XCTAssertEqual(got[0].event.start, 1.0, accuracy: 1e-12, "a starts where b did")
        let short = play(settings(), count: 60, moving: { (10..<40).contains($0) }, probabilities: probabilities)
        XCTAssertEqual(short.map(\.event.label), [0])
        XCTAssertEqual(short[0].event.start, 1.0, accuracy: 1e-12)
        XCTAssertEqual(short[0].event.end, 3.9 + 0.05, accuracy: 1e-12)
        // With no evidence asked, a takes over at frame 13 and b's 0.3 s is an event of its own,
        // unless the minimum duration (1 s) makes it a first guess.
        let eager = play(settings(switchEvidence: 0), count: 60, moving: { (10..<40).contains($0) }, probabilities: probabilities)
        XCTAssertEqual(eager.map(\.event.label), [1, 0])
        XCTAssertEqual(eager[0].event.end, 1.3, accuracy: 1e-12)
        let eagerLong = play(settings(minimumDuration: 1, switchEvidence: 0), count: 60, moving: { (10..<40).contains($0) }, probabilities: probabilities)
        XCTAssertEqual(eagerLong.map(\.event.label), [0])
        XCTAssertEqual(eagerLong[0].event.start, 1.0, accuracy: 1e-12)
        // An event shorter than its minimum is dropped outright: 1 s of motion, minimum 2 s.
        XCTAssertTrue(play(settings(minimumDuration: 2), count: 60, moving: { (10..<20).contains($0) }, probabilities: { _ in self.a }).isEmpty)
    }

    func testAFrameNoWindowScoredChangesNothing() {
        // A look-ahead of 0.2 s under the windows' stride (0.5 s): only the frames in the last
        // 0.2 s of a window are scored (frames 12-14 by the window ending at 1.4 s, ...); the
        // others (10, 11, 15, 16, ...) keep the running event instead of ending it, so there is
        // one event, from the first moving frame (frame 12 is 0.2 s after it).
        let got = play(settings(lookAhead: 0.2), count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a })
        XCTAssertEqual(got.count, 1)
        XCTAssertEqual(got.first?.event.start ?? -1, 1.0, accuracy: 1e-12)
        XCTAssertEqual(got.first?.event.end ?? -1, 2.95, accuracy: 1e-12)
    }

    func testBackgroundAndFloorAbstain() {
        // The top class is background: no event.
        XCTAssertTrue(play(settings(background: [true, false]), count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a }).isEmpty)
        var s = settings()
        s.floor = 0.95  // 0.9 is under it
        XCTAssertTrue(play(s, count: 60, moving: { (10..<30).contains($0) }, probabilities: { _ in self.a }).isEmpty)
    }

    func testSettingsAreChecked() {
        var s = settings()
        XCTAssertNil(s.problem)
        s.exit = [0.3]
        XCTAssertEqual(s.problem, "exit has 1 values for 2 classes")
        s = settings(lookAhead: 0)
        XCTAssertTrue(s.problem?.contains("look-ahead") == true, s.problem ?? "")
        s = settings(background: [true, true])
        XCTAssertTrue(s.problem?.contains("every class") == true)
        s = settings(hold: -1)
        XCTAssertTrue(s.problem?.contains("hold must be 0 to 3600") == true, s.problem ?? "")
        s = settings()
        s.enter = [0.2, 0.5]
        s.exit = [0.3, 0.3]
        XCTAssertTrue(s.problem?.contains("class 0: the thresholds") == true, s.problem ?? "")
        s = settings(switchEvidence: -0.1)
        XCTAssertEqual(s.problem, "the switch evidence must be 0 to 3600 score-seconds, got -0.1")
        s = settings(switchEvidence: .nan)
        XCTAssertTrue(s.problem?.contains("switch evidence") == true, s.problem ?? "")
        s = settings(motionLag: -1)
        XCTAssertEqual(s.problem, "the motion lag must be 0 to 1000 frames, got -1")
    }

    /// A stream's windows and frames as a session would give them: 12-frame windows every 4
    /// frames, seeded probabilities, motion with still stretches, each frame's motion known 2
    /// frames later.
    func madeUp(seed: UInt64, frames n: Int = 240) -> (windows: [StreamWindow], frames: [StreamFrame]) {
        var g = SeededGenerator(seed: seed)
        var windows: [StreamWindow] = [], frames: [StreamFrame] = []
        let time = { (k: Int) in Double(k) / 10 }
        for k in 0..<n {
            if k >= 11 && (k - 11) % 4 == 0 {
                let x = g.nextUnitFloat(), p: [Float] = [x, (1 - x) * 0.7, (1 - x) * 0.3]
                windows.append(StreamWindow(start: k - 11, end: k + 1, startTime: time(k - 11), endTime: time(k), classIndex: 0, probabilities: p))
            }
            if k >= 2 {
                let f = k - 2, still = (f / 30) % 3 == 2
                frames.append(StreamFrame(index: f, time: time(f), motion: still ? 0.01 : 1 + g.nextUnitFloat(), now: time(k), segment: 0))
            }
        }
        for f in (n - 2)..<n { frames.append(StreamFrame(index: f, time: time(f), motion: 1, now: time(n - 1), segment: 0)) }
        return (windows, frames)
    }

    func testTheSameWindowsAndFramesGiveTheSameEventsHoweverThePushesGroupThem() throws {
        let options = EventOptions(
            enter: 0.4, exit: 0.25, classThresholds: [:],
            frames: FrameOptions(lookAhead: 1.2, stillBelow: 0.5, hold: ["x": 0.4, "y": 0.3], leadIn: ["x": 0.1], leadOut: ["y": 0.05]))
        let classes = ["x", "y", "z"]
        for seed in [1, 2, 3] as [UInt64] {
            let (windows, frames) = madeUp(seed: seed)
            func run(groups: [Int]) throws -> [ActionEvent] {
                var stream = try EventStream(classes: classes, options: options)
                var out: [ActionEvent] = [], wi = 0, fi = 0
                // Each group ends at a frame index: the windows ending by then and the frames known by then.
                for last in groups {
                    var ws: [StreamWindow] = [], fs: [StreamFrame] = []
                    while wi < windows.count && windows[wi].end - 1 <= last {
                        ws.append(windows[wi])
                        wi += 1
                    }
                    while fi < frames.count && frames[fi].now <= Double(last) / 10 + 1e-9 {
                        fs.append(frames[fi])
                        fi += 1
                    }
                    out += stream.add(windows: ws, frames: fs)
                }
                out += stream.add(windows: Array(windows[wi...]), frames: Array(frames[fi...]))
                return out + stream.finish()
            }
            let one = try run(groups: Array(0..<240))
            XCTAssertGreaterThan(one.count, 3, "seed \(seed): the test needs events")
            XCTAssertEqual(try run(groups: [239]), one, "seed \(seed): all at once")
            var g = SeededGenerator(seed: seed + 100), cuts: [Int] = [], k = 0
            while k < 240 {
                k += 1 + Int(g.next() % 17)
                cuts.append(min(k, 239))
            }
            XCTAssertEqual(try run(groups: cuts), one, "seed \(seed): random groups")
            // Events never overlap, and each lies in the stream.
            for (x, y) in zip(one, one.dropFirst()) { XCTAssertLessThanOrEqual(x.end, y.start + 1e-12) }
        }
    }

    func testANewSegmentEndsTheRunningEvent() throws {
        let options = EventOptions(frames: FrameOptions(lookAhead: 1, stillBelow: 0.5))
        var stream = try EventStream(classes: ["x", "y"], options: options)
        func window(_ s: Int, _ segment: Int, base: Double) -> StreamWindow {
            StreamWindow(
                start: s, end: s + 10, startTime: base + Double(s) / 10, endTime: base + Double(s + 9) / 10, classIndex: 0, probabilities: [0.9, 0.1],
                segment: segment)
        }
        func frames(_ range: Range<Int>, _ segment: Int, base: Double) -> [StreamFrame] {
            range.map { StreamFrame(index: $0, time: base + Double($0) / 10, motion: 1, now: base + Double($0) / 10, segment: segment) }
        }
        var events = stream.add(windows: [window(0, 0, base: 0), window(5, 0, base: 0)], frames: frames(0..<15, 0, base: 0))
        XCTAssertEqual(events, [])
        // A restart at 100 s: the first segment's event ends at its last frame.
        events = stream.add(windows: [window(0, 1, base: 100)], frames: frames(0..<10, 1, base: 100))
        XCTAssertEqual(events.map(\.label), ["x"])
        XCTAssertEqual(events.first?.start ?? -1, 0, accuracy: 1e-12)
        XCTAssertEqual(events.first?.end ?? -1, 1.4, accuracy: 1e-12)
        XCTAssertEqual(stream.finish().map(\.start), [100])
    }

    func testWindowEventsIgnoreTheFrames() throws {
        // Without frame options an EventStream is an EventDetector.
        var stream = try EventStream(classes: ["x", "y"], options: EventOptions(smoothing: 1))
        XCTAssertFalse(stream.needsFrames)
        let w = StreamWindow(start: 0, end: 10, startTime: 0, endTime: 0.9, classIndex: 0, probabilities: [0.9, 0.1])
        var detector = try EventDetector(classes: ["x", "y"], options: EventOptions(smoothing: 1))
        XCTAssertEqual(stream.add(windows: [w], frames: [StreamFrame(index: 0, time: 0, motion: 0, now: 0, segment: 0)]), detector.add(w))
        XCTAssertEqual(stream.finish(), detector.finish().map { [$0] } ?? [])
    }

    func testMotionIsTheFastestJointOverTheBodysSize() {
        // Two bodies of two 2D joints; body 1 is 10 wide and its joint 1 moves 3-4-5 in 0.5 s:
        // 5 / 0.5 / 10 = 1; body 2 is 2 wide, its only joint present in a and b moves 0.2 in 0.5 s:
        // 0.2 / 0.5 / 2 = 0.2. The fastest body counts.
        let frame: [Float] = [0, 0, 10, 0, 0, 0, 2, 0], present: [UInt8] = [1, 1, 1, 1]
        let a: [Float] = [0, 0, 10, 0, 5, 5, 0, 0], aPresent: [UInt8] = [1, 1, 1, 0]
        let b: [Float] = [0, 0, 13, 4, 5.2, 5, 9, 9], bPresent: [UInt8] = [1, 1, 1, 1]
        let m = FrameMotion.motion(
            frame: frame, framePresent: present, a: a, aPresent: aPresent, b: b, bPresent: bPresent, seconds: 0.5, joints: 4, dimensions: 2,
            bodies: 2)
        XCTAssertEqual(m, 1, accuracy: 1e-6)
        let secondOnly = FrameMotion.motion(
            frame: frame, framePresent: [0, 1, 1, 1], a: a, aPresent: aPresent, b: b, bPresent: bPresent, seconds: 0.5, joints: 4, dimensions: 2,
            bodies: 2)
        XCTAssertEqual(secondOnly, 0.2, accuracy: 1e-6, "body 1 has one joint in the frame: not measured")
        XCTAssertEqual(
            FrameMotion.motion(
                frame: frame, framePresent: present, a: a, aPresent: aPresent, b: b, bPresent: bPresent, seconds: 0, joints: 4, dimensions: 2), 0)
        XCTAssertEqual(FrameMotion.lag(frameRate: 20), 2)
        XCTAssertEqual(FrameMotion.lag(frameRate: nil), 3)
        XCTAssertEqual(FrameMotion.lag(frameRate: 4), 1)
    }
}
