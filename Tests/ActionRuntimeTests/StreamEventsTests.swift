@testable import ActionRuntime
import Dispatch
import Foundation
import PoseCore
import XCTest

/// Events from window predictions, and several tracks in one stream.
final class StreamEventsTests: XCTestCase {
    let classes = ["throw", "kick", "other"]

    /// Feeds windows of probabilities (window i spans i ... i + 1 seconds) and collects events.
    func events(_ rows: [[Float]], _ options: EventOptions) throws -> [ActionEvent] {
        var d = try EventDetector(classes: classes, options: options)
        var out: [ActionEvent] = []
        for (i, p) in rows.enumerated() {
            if let e = d.add(probabilities: p, start: Double(i), end: Double(i) + 1) { out.append(e) }
        }
        if let e = d.finish() { out.append(e) }
        return out
    }

    let idle: [Float] = [0.1, 0.1, 0.8], throwing: [Float] = [0.9, 0.05, 0.05], unsure: [Float] = [0.5, 0.1, 0.4]

    func testHysteresisKeepsAnEventThroughAWeakerWindow() throws {
        let rows = [idle, throwing, unsure, throwing, idle, idle]
        let options = EventOptions(smoothing: 1, enter: 0.6, exit: 0.4, background: ["other"])
        let e = try events(rows, options)
        XCTAssertEqual(e.count, 1)
        XCTAssertEqual(e.first?.label, "throw")
        XCTAssertEqual(e.first?.start, 1)
        XCTAssertEqual(e.first?.end, 4)
        XCTAssertEqual(e.first?.windows, 3)
        XCTAssertEqual(e.first!.peak, 0.9)
        XCTAssertEqual(e.first!.mean, (0.9 + 0.5 + 0.9) / 3, accuracy: 1e-6)
        // Without hysteresis (exit = enter) the weak window splits it in two.
        XCTAssertEqual(try events(rows, EventOptions(smoothing: 1, enter: 0.6, exit: 0.6, background: ["other"])).count, 2)
    }

    func testSmoothingMinimumDurationBackgroundAndFloor() throws {
        // One confident window among idle ones: smoothing over 3 keeps it below enter.
        let blip = [idle, idle, throwing, idle, idle]
        XCTAssertEqual(try events(blip, EventOptions(smoothing: 1, background: ["other"])).map(\.label), ["throw"])
        XCTAssertEqual(try events(blip, EventOptions(smoothing: 3, background: ["other"])), [])
        // The minimum duration drops the one-window event (1 s long).
        XCTAssertEqual(try events(blip, EventOptions(smoothing: 1, minimumDuration: 1.5, background: ["other"])), [])
        // A background class never makes an event; without one declared, `other` does.
        XCTAssertEqual(try events([idle, idle], EventOptions(smoothing: 1, background: ["other"])), [])
        XCTAssertEqual(try events([idle, idle], EventOptions(smoothing: 1)).map(\.label), ["other"])
        XCTAssertEqual(EventOptions.standard(classes: ["throw", "Other"]).background, ["Other"])
        // The floor: a window whose best class is under it abstains and ends the event.
        let rows = [throwing, unsure, throwing]
        XCTAssertEqual(try events(rows, EventOptions(smoothing: 1, exit: 0.3)).count, 1)
        XCTAssertEqual(try events(rows, EventOptions(smoothing: 1, exit: 0.3, floor: 0.55)).count, 2)
    }

    func testAnotherClassTakingOverEndsTheEventAndStartsItsOwn() throws {
        let kicking: [Float] = [0.05, 0.9, 0.05]
        let e = try events([throwing, throwing, kicking, kicking], EventOptions(smoothing: 1, exit: 0.01, background: ["other"]))
        XCTAssertEqual(e.map(\.label), ["throw", "kick"])
        XCTAssertEqual(e.map(\.start), [0, 2])
        XCTAssertEqual(e.map(\.end), [2, 4])
    }

    func testEventsOfDifferentClassesDoNotOverlapUnlessAsked() throws {
        // Windows overlap (each spans 3 s, one every second).
        func events(_ rows: [[Float]], _ options: EventOptions) throws -> [ActionEvent] {
            var d = try EventDetector(classes: classes, options: options)
            var out = rows.enumerated().compactMap { i, p in d.add(probabilities: p, start: Double(i), end: Double(i) + 3) }
            if let e = d.finish() { out.append(e) }
            return out
        }
        let kicking: [Float] = [0.05, 0.9, 0.05]
        let options = EventOptions(smoothing: 1, exit: 0.01, background: ["other"])
        // They meet (kick starts at the window that ends throw, throw's windows reach 5 s and
        // kick's begin at 3 s): the boundary is the middle of their overlap.
        let meet = try events([throwing, throwing, throwing, kicking, kicking], options)
        XCTAssertEqual(meet.map(\.label), ["throw", "kick"])
        XCTAssertEqual(meet.map(\.start), [0, 4])
        XCTAssertEqual(meet.map(\.end), [4, 7])
        // Kick starts a window after throw ended (at 4 s): it begins there, not at its window's 3 s.
        let later = try events([throwing, throwing, idle, kicking, kicking], EventOptions(smoothing: 1, background: ["other"]))
        XCTAssertEqual(later.map(\.start), [0, 4])
        XCTAssertEqual(later.map(\.end), [4, 7])
        // Asked for, they overlap as their windows do.
        var overlapping = options
        overlapping.allowOverlap = true
        XCTAssertEqual(try events([throwing, throwing, throwing, kicking, kicking], overlapping).map(\.start), [0, 3])
        XCTAssertEqual(try events([throwing, throwing, throwing, kicking, kicking], overlapping).map(\.end), [5, 7])
        // An event dropped for its duration does not push the next one's start.
        var short = EventOptions(smoothing: 1, minimumDuration: 3.5, background: ["other"])
        let afterShort = try events([throwing, idle, kicking, kicking], short)
        XCTAssertEqual(afterShort.map(\.label), ["kick"])
        XCTAssertEqual(afterShort.first?.start, 2)
        short.minimumDuration = 0
        XCTAssertEqual(try events([throwing, idle, kicking, kicking], short).map(\.start), [0, 3])
    }

    func testThresholdsPerClass() throws {
        // Throw is confident at 0.9; kick only reaches 0.5, under the common 0.6.
        let weakKick: [Float] = [0.1, 0.5, 0.4]
        let rows = [idle, throwing, idle, weakKick, weakKick, idle]
        XCTAssertEqual(try events(rows, EventOptions(smoothing: 1, background: ["other"])).map(\.label), ["throw"])
        let own = EventOptions(smoothing: 1, background: ["other"], classThresholds: ["kick": .init(enter: 0.45, exit: 0.3)])
        let e = try events(rows, own)
        XCTAssertEqual(e.map(\.label), ["throw", "kick"])
        XCTAssertEqual(e.last?.windows, 2)
        // A class's own enter can also be higher than the common one.
        XCTAssertEqual(
            try events(rows, EventOptions(smoothing: 1, background: ["other"], classThresholds: ["throw": .init(enter: 0.95, exit: 0.5)])), [])
        XCTAssertEqual(own.thresholds(of: "throw"), .init(enter: 0.6, exit: 0.4))
        for (bad, fragment) in [
            (["walk": EventOptions.Thresholds(enter: 0.5, exit: 0.2)], "'walk', which is not among"),
            (["kick": EventOptions.Thresholds(enter: 0.3, exit: 0.5)], "the thresholds of 'kick'"),
            (["kick": EventOptions.Thresholds(enter: 0, exit: 0)], "the thresholds of 'kick'"),
        ] {
            XCTAssertThrowsError(try EventDetector(classes: classes, options: EventOptions(classThresholds: bad))) {
                XCTAssertTrue("\($0)".contains(fragment), "\($0)")
            }
        }
    }

    func testEventOptionsAreChecked() {
        for (options, fragment) in [
            (EventOptions(smoothing: 0), "smoothing"), (EventOptions(enter: 0.3, exit: 0.5), "exit <= enter"),
            (EventOptions(background: ["walk"]), "'walk' is not among"), (EventOptions(background: Set(classes)), "every class"),
            (EventOptions(minimumDuration: -1), "minimum duration"), (EventOptions(floor: 2), "floor"),
        ] {
            XCTAssertThrowsError(try EventDetector(classes: classes, options: options)) {
                XCTAssertTrue("\($0)".contains(fragment), "\($0)")
            }
        }
    }

    // MARK: - Tracks

    func testTracksAreSeparateSessionsAndUnseenOnesAreForgotten() throws {
        let model = try StreamFixtures.model()
        let a = StreamFixtures.recording(frames: 50, seed: 31), b = StreamFixtures.recording(frames: 50, seed: 32)
        let options = StreamOptions(stride: 4), events = EventOptions.standard(classes: model.classes)
        let stream = try TrackedStream(model: model, options: options, events: events, forgetAfter: 1, maximumTracks: 2)
        var got: [PersonID: [StreamWindow]] = [:]
        func collect(_ outputs: [TrackedStream.Output]) { for o in outputs { got[o.track, default: []] += o.windows } }
        // Both tracks on one clock: b's frames shifted to a's times.
        for (fa, fb) in zip(a, b) {
            collect(try stream.push(track: 1, points: fa.points, time: fa.time))
            collect(try stream.push(track: 7, points: fb.points, time: fa.time))
        }
        XCTAssertEqual(stream.trackIDs, [1, 7])
        // Track 7 stops; 1 goes on past the forgetting time, which finishes 7.
        let end = a.last!.time
        collect(try stream.push(track: 1, points: a[0].points, time: end + 0.5))
        XCTAssertEqual(stream.trackIDs, [1, 7])
        collect(try stream.push(track: 1, points: a[1].points, time: end + 1.5))
        XCTAssertEqual(stream.trackIDs, [1])
        let shifted = zip(a, b).map { StreamFixtures.Frame(time: $0.time, points: $1.points) }
        let alone = try StreamSession(model: model, options: options)
        var expected: [StreamWindow] = []
        for f in shifted { expected += try alone.push(f.points, time: f.time) }
        expected += alone.finish()
        XCTAssertEqual(got[7], expected, "track 7 equals its own session, finished when forgotten")
        // Track 9 makes two; a third at once is over the limit.
        _ = try stream.push(track: 9, points: [:], time: end + 1.6)
        XCTAssertThrowsError(try stream.push(track: 10, points: [:], time: end + 1.6)) { e in
            XCTAssertEqual(e as? StreamError, .tooManyTracks(limit: 2, track: 10))
            XCTAssertTrue("\(e)".contains("the limit is 2"))
        }
        XCTAssertEqual(stream.statistics.frames, 2 * 50 + 2 + 1)
    }

    /// Two tracks on one clock, every frame of `a` then of `b` at a's times; `extra(f)` adds
    /// lines (track, time) after frame f. All outputs, then `finish()`'s.
    func run(
        _ stream: TrackedStream, _ a: [StreamFixtures.Frame], _ b: [StreamFixtures.Frame], extra: (Int) -> [(Int, Double)] = { _ in [] }
    ) throws -> [TrackedStream.Output] {
        var out: [TrackedStream.Output] = []
        for (f, (fa, fb)) in zip(a, b).enumerated() {
            out += try stream.push(track: 1, points: fa.points, time: fa.time)
            out += try stream.push(track: 2, points: fb.points, time: fa.time)
            for (track, t) in extra(f) { out += try stream.push(track: track, points: fa.points, time: t) }
        }
        return out + stream.finish()
    }

    func testTheStreamClockIgnoresAStrayTimestampAndAStaleLine() throws {
        // One line at t = 1e12 used to forget every track (time − forgetAfter passed them all)
        // and restart its own at 1e12, dropping its later frames. A line of a new person far
        // behind the clock made a track forgotten at the next push. Both are now ignored.
        let model = try StreamFixtures.model()
        let a = StreamFixtures.recording(frames: 60, seed: 33), b = StreamFixtures.recording(frames: 60, seed: 34)
        func stream() throws -> TrackedStream {
            try TrackedStream(model: model, options: StreamOptions(stride: 3), events: .standard(classes: model.classes), forgetAfter: 1)
        }
        let clean = try run(stream(), a, b)
        XCTAssertGreaterThan(clean.count, 10)
        let hostile = try stream()
        let got = try run(hostile, a, b) { f in f == 20 ? [(1, 1e12)] : f == 40 ? [(9, a[40].time - 1.5), (2, a[40].time + 30)] : [] }
        XCTAssertEqual(got, clean)
        XCTAssertEqual(hostile.statistics.count(.timeJump), 2)
        XCTAssertEqual(hostile.statistics.count(.timeBackwards), 1)
        XCTAssertEqual(hostile.statistics.frames, 2 * 60 + 3)
    }

    func testAConfirmedJumpOfTheStreamClockEndsEveryTrack() throws {
        // Everyone resumes 100 s later: the first line after the pause is ignored, the second
        // confirms the jump and finishes every track; the rest is a new stream.
        let model = try StreamFixtures.model()
        let a = StreamFixtures.recording(frames: 40, seed: 35), b = StreamFixtures.recording(frames: 40, seed: 36)
        let later = a.map { StreamFixtures.Frame(time: $0.time + 100, points: $0.points) }
        func stream() throws -> TrackedStream {
            try TrackedStream(model: model, options: StreamOptions(stride: 3), events: .standard(classes: model.classes), forgetAfter: 50)
        }
        let s = try stream()
        var got = try run(s, a, b).map { o in TrackedStream.Output(track: o.track, windows: o.windows, events: o.events) }
        got += try run(s, later, b)
        // Expected: the first part alone, then the second without its first line (track 1's).
        let first = try run(stream(), a, b)
        let rest = try stream()
        var second = try rest.push(track: 2, points: b[0].points, time: later[0].time)
        second += try run(rest, Array(later.dropFirst()), Array(b.dropFirst()))
        XCTAssertEqual(got, first + second)
        XCTAssertEqual(s.statistics.count(.timeJump), 1)
    }

    func testAPushCostsTheSameWithAThousandTracks() throws {
        // 1,000 people (of the 1,024 a stream may follow), each seen once a second: forgetting
        // looks at the tracks due (a heap by last-seen time), not at every track at every push;
        // the statistics are kept summed.
        let model = try StreamFixtures.model(conv: false, frameRate: nil)
        let people = 1000
        let s = try TrackedStream(
            model: model, options: StreamOptions(stride: 12), events: .standard(classes: model.classes), forgetAfter: 1.5, maximumTracks: people)
        var pushes = 0
        for round in 0..<3 {
            for p in 0..<people {
                _ = try s.push(track: p, points: [:], time: Double(round) + Double(p) / Double(people))
                pushes += 1
            }
        }
        XCTAssertEqual(s.trackIDs.count, people)
        XCTAssertLessThanOrEqual(s.examined, 2 * pushes, "entries examined while forgetting")
        // People 0..<500 (last seen at 2 ... 2.5 s) stop; the others go on at 3.6 ... 4.1 s,
        // by when all of the first half were last seen over 1.5 s before: forgotten.
        for p in 500..<people { _ = try s.push(track: p, points: [:], time: 3.1 + Double(p) / Double(people)) }
        XCTAssertEqual(s.trackIDs, (500..<people).map { PersonID.number($0) })
        XCTAssertLessThanOrEqual(s.examined, 2 * (pushes + 500))
        XCTAssertEqual(s.statistics.frames, pushes + 500)
    }

    /// The load test at debug size (`actiontrain-bench stream --load` runs it at full size: 64
    /// streams of 60 s): streams of several tracks pushed concurrently as fast as possible give
    /// the outputs of the same streams run one at a time, with no error.
    func testConcurrentTrackedStreamsEqualSerialOnes() throws {
        let model = try StreamFixtures.model()
        let streams = 8, tracks = 3, frames = 90
        let recordings = (0..<(streams * tracks)).map { StreamFixtures.recording(frames: frames, seed: 100 + UInt64($0)) }
        func run(_ s: Int) throws -> [TrackedStream.Output] {
            let stream = try TrackedStream(model: model, options: StreamOptions(stride: 3), events: .standard(classes: model.classes))
            var out: [TrackedStream.Output] = []
            for f in 0..<frames {
                for t in 0..<tracks {
                    let frame = recordings[s * tracks + t][f]
                    out += try stream.push(track: t, points: frame.points, time: recordings[s * tracks][f].time)
                }
            }
            return out + stream.finish()
        }
        let serial = try (0..<streams).map(run)
        let outputs = UnsafeMutablePointer<[TrackedStream.Output]?>.allocate(capacity: streams)
        outputs.initialize(repeating: nil, count: streams)
        defer { outputs.deinitialize(count: streams).deallocate() }
        concurrentlyPerform(iterations: streams) { s in outputs[s] = try? run(s) }  // each stream its own slot
        for s in 0..<streams { XCTAssertEqual(outputs[s], serial[s], "stream \(s) (nil: it failed)") }
        XCTAssertGreaterThan(serial[0].count, tracks * 10)
    }
}
