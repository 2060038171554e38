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
        var got: [Int: [StreamWindow]] = [:]
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
