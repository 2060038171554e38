@testable import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 38 findings 9 and 13 in the runtime: a repeated timestamp is a counted warning kind
/// (3,000 lines at t = 0 gave one event from 0.000 to 0.000 s over 498 windows, without a
/// word), and a window where nobody is seen makes no event (a two-body model reported "push"
/// for a scene of no joint; a one-body model "squat" for a stream of empty poses).
final class StreamEdgeTests: XCTestCase {
    func pose(_ f: Int) -> [String: PosePoint] {
        var points: [String: PosePoint] = [:]
        for (j, name) in StreamFixtures.skeleton.joints.enumerated() {
            points[name] = PosePoint(x: 300 + Float(j % 5) * 20 + 10 * sinf(Float(f) * 0.2 + Float(j)), y: 200 + Float(j / 5) * 40, confidence: 0.9)
        }
        return points
    }

    func testARepeatedTimestampIsCountedAndTheFrameUsed() throws {
        for frameRate in [30.0, nil] {
            let session = try StreamSession(model: try StreamFixtures.model(frameRate: frameRate), options: StreamOptions(stride: 1))
            for f in 0..<20 { _ = try session.push(pose(f), time: f < 10 ? Double(f) / 30 : 9.0 / 30) }
            XCTAssertEqual(session.statistics.count(.sameTime), 10, "\(String(describing: frameRate))")
            XCTAssertEqual(session.statistics.frames, 20)
            let first = try XCTUnwrap(session.statistics.firstWarnings.first { $0.kind == .sameTime })
            XCTAssertEqual(first.frame, 10)
            XCTAssertEqual("\(first)", "frame 10 (t = 0.3 s): the same timestamp as the previous frame (0.3 s); timestamps must advance with the frames")
            XCTAssertFalse(StreamWarning.Kind.sameTime.ignoresFrame)
            // Under strict it is refused, as every problem is.
            let strict = try StreamSession(model: try StreamFixtures.model(frameRate: frameRate), options: StreamOptions(stride: 1, strict: true))
            _ = try strict.push(pose(0), time: 0)
            XCTAssertThrowsError(try strict.push(pose(1), time: 0)) { XCTAssertEqual($0 as? StreamError, .rejected(first.with(frame: 1, time: 0))) }
        }
    }

    /// Timestamps a nanosecond apart (clock ticks sent as seconds) are counted as `tooFast`
    /// and used; a millisecond apart is fine; under strict they are refused.
    func testTimestampsTooCloseForSecondsAreCounted() throws {
        let session = try StreamSession(model: try StreamFixtures.model(frameRate: 30), options: StreamOptions(stride: 1))
        for f in 0..<20 { _ = try session.push(pose(f), time: Double(f) * 1e-9) }
        XCTAssertEqual(session.statistics.count(.tooFast), 19)
        XCTAssertEqual(session.statistics.frames, 20)
        let first = try XCTUnwrap(session.statistics.firstWarnings.first { $0.kind == .tooFast })
        XCTAssertEqual(first.frame, 1)
        XCTAssertTrue("\(first)".hasSuffix("after the previous frame (beyond 10000 fps): are the timestamps nanoseconds or clock ticks? Send seconds"), "\(first)")
        XCTAssertFalse(StreamWarning.Kind.tooFast.ignoresFrame)
        let fine = try StreamSession(model: try StreamFixtures.model(frameRate: 30), options: StreamOptions(stride: 1))
        for f in 0..<20 { _ = try fine.push(pose(f), time: Double(f) * 1e-3) }
        XCTAssertEqual(fine.statistics.count(.tooFast), 0)
        let strict = try StreamSession(model: try StreamFixtures.model(frameRate: 30), options: StreamOptions(stride: 1, strict: true))
        _ = try strict.push(pose(0), time: 0)
        XCTAssertThrowsError(try strict.push(pose(1), time: 1e-9)) {
            guard case .rejected(let w)? = $0 as? StreamError else { return XCTFail("\($0)") }
            XCTAssertEqual(w.kind, .tooFast)
        }
    }

    func testAWindowWhereNobodyIsSeenMakesNoEvent() throws {
        let model = try StreamFixtures.model()
        let events = EventOptions(smoothing: 1, enter: 0.01, exit: 0.005)  // any window would start an event
        // Nobody at all: windows, and no event.
        let empty = try StreamSession(model: model, options: StreamOptions(stride: 2))
        var detector = try EventDetector(classes: model.classes, options: events)
        var windows: [StreamWindow] = []
        for f in 0..<60 { windows += try empty.push([:], time: Double(f) / 30) }
        windows += empty.finish()
        XCTAssertGreaterThan(windows.count, 10)
        XCTAssertTrue(windows.allSatisfy { !$0.seen })
        XCTAssertEqual(windows.flatMap { detector.add($0) } + [detector.finish()].compactMap { $0 }, [])
        // Someone for a second, then nobody: the event ends where the windows stop seeing them.
        let session = try StreamSession(model: model, options: StreamOptions(stride: 2))
        detector = try EventDetector(classes: model.classes, options: events)
        var found: [ActionEvent] = []
        var seen: [StreamWindow] = []
        for f in 0..<90 {
            for w in try session.push(f < 30 ? pose(f) : [:], time: Double(f) / 30) {
                if w.seen { seen.append(w) }
                found += detector.add(w)
            }
        }
        if let e = detector.finish() { found.append(e) }
        XCTAssertFalse(found.isEmpty)
        XCTAssertLessThanOrEqual(found.last!.end, seen.last!.endTime, "no event past the last window that saw anyone")
        XCTAssertLessThan(seen.last!.startTime, 1.0)
    }
}

extension StreamWarning {
    func with(frame: Int, time: Double) -> StreamWarning {
        StreamWarning(kind: kind, frame: frame, time: time, detail: "\(time) s")
    }
}
