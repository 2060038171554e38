@testable import ActionRuntime
import Dispatch
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Sessions give the windows offline `predict` gives on the same recording, and one model
/// serves many threads with the bits of one.
final class StreamSessionTests: XCTestCase {
    /// Every window of a session, then its `finish()`.
    func stream(_ model: ActionModel, _ frames: [StreamFixtures.Frame], stride: Int) throws -> [StreamWindow] {
        let session = try StreamSession(model: model, options: StreamOptions(stride: stride))
        var out: [StreamWindow] = []
        for f in frames { out += try session.push(f.points, time: f.time) }
        return out + session.finish()
    }

    /// The session's windows are offline `predict`'s (to 1e-6: predict runs batches, whose
    /// sums may round differently) and the bits of the same windows cut offline and run one
    /// at a time (without confidence in the data, offline takes 1 where the session
    /// interpolates 1 and 1, which may round: then to 1e-6 only).
    func assertMatchesOffline(
        _ model: ActionModel, frames: Int, stride: Int, seed: UInt64, confidence: Bool = true, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let recording = StreamFixtures.recording(frames: frames, seed: seed, confidence: confidence)
        let online = try stream(model, recording, stride: stride)
        let sequence = try StreamFixtures.sequence(recording)
        let offline = try model.predict(sequence: sequence, stride: stride, sourceFrameRate: nil)
        let cut = try model.windows(of: sequence, stride: stride, sourceFrameRate: nil)
        XCTAssertEqual(online.map(\.start), offline.map(\.start), "window starts", file: file, line: line)
        XCTAssertEqual(online.map(\.end), offline.map(\.end), "window ends", file: file, line: line)
        for (i, (a, b)) in zip(online, offline).enumerated() {
            XCTAssertEqual(a.classIndex, b.classIndex, "window at \(a.start)", file: file, line: line)
            for (p, q) in zip(a.probabilities, b.probabilities) {
                XCTAssertEqual(p, q, accuracy: 1e-6, "window at \(a.start)", file: file, line: line)
            }
            guard confidence else { continue }
            let one = try model.probabilities(window: cut[i].window)
            XCTAssertEqual(a.probabilities.map(\.bitPattern), one.map(\.bitPattern), "window at \(a.start), alone", file: file, line: line)
        }
    }

    func testSessionWindowsEqualOfflinePredictOnIrregularRecordings() throws {
        for conv in [true, false] {
            let model = try StreamFixtures.model(conv: conv)
            try assertMatchesOffline(model, frames: 150, stride: 4, seed: 1)
            try assertMatchesOffline(model, frames: 90, stride: 1, seed: 2)
            try assertMatchesOffline(model, frames: 7, stride: 4, seed: 3)  // shorter than a window: one padded window
            try assertMatchesOffline(model, frames: 100, stride: 3, seed: 6, confidence: false)
        }
        // Without a model frame rate every pushed frame is a model frame.
        try assertMatchesOffline(try StreamFixtures.model(frameRate: nil), frames: 60, stride: 5, seed: 4)
    }

    func testAFramePushedAtAModelFramesTimeMakesThatFrameInItsOwnPush() throws {
        // A camera at the model's 30 fps with exact timestamps (k / 30, the model frames' own
        // times): model frame k is pushed frame k, made by its push, so the window ending at
        // frame k comes from push k (it came one push later). A camera at 60 fps: every other push.
        let model = try StreamFixtures.model()
        for fps in [30.0, 60.0] {
            let moving = StreamFixtures.recording(frames: 60, seed: 9)
            let recording = moving.enumerated().map { StreamFixtures.Frame(time: Double($0.offset) / fps, points: $0.element.points) }
            let session = try StreamSession(model: model, options: StreamOptions(stride: 1))
            var online: [StreamWindow] = []
            for (k, f) in recording.enumerated() {
                let made = try session.push(f.points, time: f.time)
                let step = Int(fps / 30)
                if k >= 11 * step && k % step == 0 {
                    XCTAssertEqual(made.map(\.end), [k / step + 1], "fps \(fps), push \(k)")
                } else {
                    XCTAssertEqual(made.count, 0, "fps \(fps), push \(k)")
                }
                online += made
            }
            online += session.finish()
            // The windows are still offline predict's.
            let offline = try model.predict(sequence: try StreamFixtures.sequence(recording), stride: 1, sourceFrameRate: nil)
            XCTAssertEqual(online.map(\.start), offline.map(\.start))
            XCTAssertEqual(online.map(\.end), offline.map(\.end))
            for (a, b) in zip(online, offline) {
                for (p, q) in zip(a.probabilities, b.probabilities) { XCTAssertEqual(p, q, accuracy: 1e-6, "window at \(a.start)") }
            }
        }
    }

    func testWindowTimesAreTheResampledFramesTimes() throws {
        let model = try StreamFixtures.model()
        let recording = StreamFixtures.recording(frames: 80, seed: 5)
        let windows = try stream(model, recording, stride: 6)
        let t0 = recording[0].time
        XCTAssertGreaterThan(windows.count, 3)
        for w in windows.dropLast() {
            XCTAssertEqual(w.startTime, t0 + Double(w.start) / 30, accuracy: 1e-9)
            XCTAssertEqual(w.endTime, t0 + Double(w.end - 1) / 30, accuracy: 1e-9)
        }
    }

    func testConcurrentCallsAndSessionsGiveTheBitsOfSerialOnes() throws {
        for conv in [true, false] {
            let model = try StreamFixtures.model(conv: conv)
            var g = SeededGenerator(seed: 11)
            let V = model.valuesPerWindow, count = 24
            let windows = (0..<count).map { _ in (0..<V).map { _ in g.nextSymmetric(2) } }
            let serial = try windows.map { try model.probabilities(features: $0, count: 1) }
            let recordings = (0..<6).map { StreamFixtures.recording(frames: 60, seed: 20 + UInt64($0)) }
            let serialStreams = try recordings.map { try stream(model, $0, stride: 2) }
            let threads = 4
            let calls = UnsafeMutablePointer<[[Float]]>.allocate(capacity: threads)
            calls.initialize(repeating: [], count: threads)
            let streams = UnsafeMutablePointer<[StreamWindow]>.allocate(capacity: recordings.count)
            streams.initialize(repeating: [], count: recordings.count)
            defer {
                calls.deinitialize(count: threads).deallocate()
                streams.deinitialize(count: recordings.count).deallocate()
            }
            concurrentlyPerform(iterations: threads + recordings.count) { i in  // each call its own slot
                if i < threads {
                    calls[i] = windows.map { try! model.probabilities(features: $0, count: 1) }
                } else {
                    streams[i - threads] = try! stream(model, recordings[i - threads], stride: 2)
                }
            }
            for t in 0..<threads {
                XCTAssertEqual(calls[t].map { $0.map(\.bitPattern) }, serial.map { $0.map(\.bitPattern) }, "thread \(t)")
            }
            for (r, expected) in serialStreams.enumerated() {
                XCTAssertEqual(streams[r], expected, "recording \(r)")
            }
        }
    }

    func testContextsShareThePackedWeights() throws {
        let model = try StreamFixtures.model(conv: false)
        let a = model.makeContext(), b = model.makeContext()
        XCTAssertEqual(a.network.parameters, model.network.parameters, "a replica binds the model's parameters")
        let x = [Float](repeating: 0.5, count: model.valuesPerWindow)
        var ya = [Float](repeating: 0, count: 3), yb = ya
        x.withUnsafeBufferPointer {
            a.logits($0.baseAddress!, count: 1, into: &ya)
            b.logits($0.baseAddress!, count: 1, into: &yb)
        }
        XCTAssertEqual(ya.map(\.bitPattern), yb.map(\.bitPattern))
        XCTAssertEqual(ya.map(\.bitPattern), try model.logits(features: x, count: 1).map(\.bitPattern))
    }

    func testSessionRefusesABadStrideAndAWholeClipModelWithoutAClipLength() throws {
        let model = try StreamFixtures.model()
        XCTAssertThrowsError(try StreamSession(model: model, options: StreamOptions(stride: 0))) {
            XCTAssertEqual($0 as? StreamError, .invalidStride(0))
        }
        let old = try StreamFixtures.wholeClipModel(clip: nil)  // a file from before format 1.3
        XCTAssertThrowsError(try StreamSession(model: old, options: StreamOptions(stride: 1))) {
            XCTAssertEqual($0 as? StreamError, .unknownClipLength)
            XCTAssertTrue("\($0)".contains("StreamOptions.clipFrames"), "\($0)")
        }
        XCTAssertNoThrow(try StreamSession(model: old, options: StreamOptions(stride: 1, clipFrames: 20)))
        XCTAssertThrowsError(try StreamSession(model: old, options: StreamOptions(stride: 1, clipFrames: 0))) {
            XCTAssertTrue("\($0)".contains("clip length"), "\($0)")
        }
        XCTAssertEqual(try old.streamWindow(clipFrames: 20).frames, 20)
    }

    /// A whole-clip model slides its clip (20 frames at 30 fps here) over the stream and
    /// resamples each to its 12-frame window: the windows `streamWindows` cuts from the whole
    /// recording, to the bit when run one at a time.
    func testWholeClipModelsSlideTheirClipAsOfflineStreamWindows() throws {
        for (rate, clipRate) in [(30.0, nil), (nil, 25.0), (nil, nil)] as [(Double?, Double?)] {
            let model = try StreamFixtures.wholeClipModel(clip: 20, frameRate: rate, clipFrameRate: clipRate)
            XCTAssertEqual(try model.streamWindow().frames, 20)
            XCTAssertEqual(try model.streamWindow().frameRate, rate ?? clipRate)
            for (frames, stride, seed) in [(150, 5, 41), (90, 1, 42), (14, 4, 43)] as [(Int, Int, UInt64)] {
                let recording = StreamFixtures.recording(frames: frames, seed: seed)
                let online = try stream(model, recording, stride: stride)
                let sequence = try StreamFixtures.sequence(recording)
                let cut = try model.streamWindows(of: sequence, stride: stride, sourceFrameRate: nil)
                XCTAssertEqual(online.map(\.start), cut.map(\.start), "\(String(describing: rate)) fps, \(frames) frames")
                XCTAssertEqual(online.map(\.end), cut.map(\.end))
                XCTAssertGreaterThan(online.count, frames > 20 ? 1 : 0)
                for (a, b) in zip(online, cut) {
                    let one = try model.probabilities(window: b.window)
                    XCTAssertEqual(a.probabilities.map(\.bitPattern), one.map(\.bitPattern), "window at \(a.start)")
                }
            }
        }
        // A recording shorter than the clip is one window: all of it resampled, as a clip is.
        let model = try StreamFixtures.wholeClipModel(clip: 20)
        let short = StreamFixtures.recording(frames: 10, seed: 44)
        let online = try stream(model, short, stride: 3)
        XCTAssertEqual(online.count, 1)
        let offline = try model.predict(sequence: try StreamFixtures.sequence(short), stride: 3, sourceFrameRate: nil)
        XCTAssertEqual(offline.count, 1)
        for (p, q) in zip(online[0].probabilities, offline[0].probabilities) { XCTAssertEqual(p, q, accuracy: 1e-6) }
        // A window spans the clip: its times are 19 frames at 30 fps apart.
        let long = try stream(model, StreamFixtures.recording(frames: 80, seed: 45), stride: 4)
        for w in long { XCTAssertEqual(w.endTime - w.startTime, 19.0 / 30, accuracy: 1e-9) }
    }
}
