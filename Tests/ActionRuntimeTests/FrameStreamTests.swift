@testable import ActionRuntime
import PoseCore
import XCTest

/// Frame-level events through sessions and tracked streams: a session's frames and motion are
/// those of the recording resampled offline, and a recording played whole (`LiveEvents.play`,
/// as `predict FILE --events` and `eval --events` play it) gives a live tracked stream's
/// events, event by event.
final class FrameStreamTests: XCTestCase {
    /// The stream fixture's model with frame-level numbers in its file (format 1.5); `other` is
    /// its background class.
    static func model(lookAhead: Double = 0.6, stillBelow: Double = 0.05, conv: Bool = true) throws -> ActionModel {
        let plain = try StreamFixtures.model(conv: conv)
        let frames = ModelHeader.Streaming.Frames(
            lookAhead: lookAhead, stillBelow: stillBelow, enter: [0.34, 0.34, 0.34], exit: [0.2, 0.2, 0.2], hold: [0.3, 0.4, 0.3],
            leadIn: [0.05, 0, 0], leadOut: [0, 0.1, 0], minimumDuration: [0.2, 0.2, 0.2])
        return try ActionModel(
            bytes: ModelFile.encode(
                classes: plain.classes, input: plain.input, network: plain.network, provenance: .init(seed: 7),
                streaming: ModelHeader.Streaming(frames: frames)))
    }

    /// `StreamFixtures.recording` with the pose held still (the same points) in frames where
    /// `(f / 40) % 2 == 1` (about 1.6 s of every 3.2 s at 25 fps), starting at `offset` seconds.
    static func recording(frames: Int, seed: UInt64, offset: Double = 0) -> [StreamFixtures.Frame] {
        var out = StreamFixtures.recording(frames: frames, seed: seed)
        for f in out.indices {
            out[f].time += offset
            if (f / 40) % 2 == 1 && f % 40 != 0 { out[f].points = out[f - 1].points }
        }
        return out
    }

    func testASessionsFramesAreTheResampledRecordingWithItsMotion() throws {
        let model = try Self.model()
        let frames = Self.recording(frames: 160, seed: 3)
        let session = try StreamSession(model: model, options: .standard(for: model))
        XCTAssertTrue(session.options.frames, "a model with frame-level numbers records frames")
        var got: [StreamFrame] = []
        for f in frames {
            _ = try session.push(f.points, time: f.time)
            got += session.takeFrames()
            XCTAssertTrue(session.takeFrames().isEmpty, "taken once")
        }
        _ = session.finish()
        got += session.takeFrames()
        // Offline: the recording resampled as the session resamples it, each frame's motion
        // from the frames `lag` before and after it (to the last at the end).
        let r = try XCTUnwrap(model.input.window.frameRate)
        let spec = WindowSpec(frames: model.input.window.frames, mode: .sliding, padding: model.input.window.padding, frameRate: r)
        let seq = try spec.retimed(StreamFixtures.sequence(frames), sourceFrameRate: nil)
        let n = seq.frameCount, lag = FrameMotion.lag(frameRate: r), J = seq.jointCount, D = seq.dimensions
        XCTAssertEqual(got.map(\.index), Array(0..<n))
        let times = (0..<n).map { frames[0].time + Double($0) / r }
        XCTAssertEqual(got.map(\.time), times)
        for f in 0..<n {
            let a = max(0, f - lag), b = min(n - 1, f + lag)
            let m = seq.coordinates.withUnsafeBufferPointer { c in
                seq.present.withUnsafeBufferPointer { p in
                    FrameMotion.motion(
                        frame: c.baseAddress! + f * J * D, framePresent: p.baseAddress! + f * J, a: c.baseAddress! + a * J * D,
                        aPresent: p.baseAddress! + a * J, b: c.baseAddress! + b * J * D, bPresent: p.baseAddress! + b * J, seconds: times[b] - times[a],
                        joints: J, dimensions: D)
                }
            }
            XCTAssertEqual(got[f].motion.bitPattern, m.bitPattern, "frame \(f)")
            XCTAssertEqual(got[f].now, times[b], "frame \(f)")
        }
        // Still stretches are still, moving ones are not.
        XCTAssertLessThan(got[60].motion, 0.05)
        XCTAssertGreaterThan(got[20].motion, 0.05)
        // Without frame-level events a session records none.
        let plain = try StreamSession(model: try StreamFixtures.model(), options: StreamOptions(stride: 4))
        for f in frames.prefix(30) { _ = try plain.push(f.points, time: f.time) }
        XCTAssertTrue(plain.takeFrames().isEmpty)
    }

    func testARecordingPlayedWholeGivesTheLiveStreamsEventsEventByEvent() throws {
        for conv in [true, false] {
            let model = try Self.model(conv: conv)
            let events = EventOptions.standard(for: model)
            XCTAssertNotNil(events.frames)
            // Person b pauses for 1.5 s after frame 70 (longer than `forgetAfter`: forgotten, then a new track).
            var b = Self.recording(frames: 140, seed: 12, offset: 3.1)
            for f in 70..<b.count { b[f].time += 1.5 }
            let people: [(id: PersonID, frames: [StreamFixtures.Frame])] = [(1, Self.recording(frames: 300, seed: 11)), ("b", b)]
            // Live: every person's frames on one clock, one push per frame.
            let stream = try TrackedStream(model: model, options: .standard(for: model), events: events, forgetAfter: 1)
            var live: [PersonID: [ActionEvent]] = [:], liveWindows: [PersonID: [StreamWindow]] = [:]
            let pushes = people.flatMap { p in p.frames.map { (p.id, $0) } }.sorted { $0.1.time < $1.1.time }
            for (id, f) in pushes {
                for o in try stream.push(track: id, points: f.points, time: f.time) {
                    live[o.track, default: []] += o.events
                    liveWindows[o.track, default: []] += o.windows
                }
            }
            for o in stream.finish() {
                live[o.track, default: []] += o.events
                liveWindows[o.track, default: []] += o.windows
            }
            // Offline: each person's recording as a whole sequence.
            var total = 0
            for p in people {
                let played = try LiveEvents.play(
                    StreamFixtures.sequence(p.frames), frameRate: nil, model: model, options: .standard(for: model), events: events, forgetAfter: 1)
                XCTAssertEqual(played.events.map(\.event), live[p.id] ?? [], "person \(p.id), conv \(conv)")
                XCTAssertEqual(played.windows, liveWindows[p.id] ?? [], "person \(p.id), conv \(conv): the windows, b's restarting after its pause")
                total += played.events.count
                for e in played.events {
                    XCTAssertGreaterThanOrEqual(e.emitted, e.event.end - 1e-9, "an event is emitted after its end")
                    XCTAssertNotEqual(e.event.label, "other", "a background class makes no event")
                }
            }
            XCTAssertGreaterThan(total, 2, "conv \(conv): the test needs events")
        }
    }

    func testOldModelFilesKeepEventsFromWindows() throws {
        let old = try StreamFixtures.model()  // no `streaming`: as files before format 1.5
        XCTAssertNil(EventOptions.standard(for: old).frames)
        XCTAssertFalse(StreamOptions.standard(for: old).frames)
        let model = try Self.model()
        XCTAssertNil(EventOptions.standard(for: model, fromFrames: false).frames)
        let o = EventOptions.standard(for: model)
        XCTAssertEqual(o.frames?.lookAhead, 0.6)
        XCTAssertEqual(o.thresholds(of: "wave"), .init(enter: 0.34, exit: 0.2))
        let s = try XCTUnwrap(o.segmenterSettings(classes: model.classes))
        XCTAssertEqual(s.hold, [0.3, 0.4, 0.3])
        XCTAssertEqual(s.background, [false, false, true])
        // A caller's minimum duration is a floor of every class's; a hold beyond the look-ahead is cut to it.
        var longer = o
        longer.minimumDuration = 0.3
        longer.frames!.hold["squat"] = 5
        XCTAssertEqual(longer.segmenterSettings(classes: model.classes)?.minimumDuration, [0.3, 0.3, 0.3])
        XCTAssertEqual(longer.segmenterSettings(classes: model.classes)?.hold, [0.3, 0.6, 0.3])
        var bad = o
        bad.frames!.leadIn["walk"] = 1
        XCTAssertThrowsError(try EventStream(classes: model.classes, options: bad)) { XCTAssertTrue("\($0)".contains("leadIn for 'walk'"), "\($0)") }
        bad = o
        bad.frames!.lookAhead = 0
        XCTAssertThrowsError(try EventStream(classes: model.classes, options: bad)) { XCTAssertTrue("\($0)".contains("look-ahead"), "\($0)") }
    }
}
