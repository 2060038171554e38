import PoseCore
import TestSupport
import XCTest

final class WindowingTests: XCTestCase {
    /// One 2D joint per frame at x = xs[f], y = 0 (nil = absent), optional timestamps.
    func line(_ xs: [Float?], times: [Double]? = nil, events: [Int] = []) -> PoseSequence {
        var s = PoseSequence(id: "line", label: "a", jointCount: 1, dimensions: 2, hasConfidence: false)
        for (f, x) in xs.enumerated() { s.appendFrame([x.map { PosePoint(x: $0, y: 0) }], time: times?[f]) }
        s.events = events
        return s
    }

    func xs(_ s: PoseSequence) -> [Float] { (0..<s.frameCount).map { s.coordinates[$0 * 2] } }

    // MARK: - Resampling

    func testResamplingFromTheDatasetRateDoublesTheFrames() throws {
        // 5 frames at 10 fps span 0.4 s: at 20 fps, 9 frames at positions 0, 0.5, ..., 4.
        let out = try WindowSpec(frames: 4, frameRate: 20).retimed(line([0, 10, 20, 30, 40]), sourceFrameRate: 10)
        XCTAssertEqual(xs(out), [0, 5, 10, 15, 20, 25, 30, 35, 40])
        XCTAssertNil(out.timestamps)
        // Halving: 0, 0.2 s, 0.4 s.
        let half = try WindowSpec(frames: 4, frameRate: 5).retimed(line([0, 10, 20, 30, 40]), sourceFrameRate: 10)
        XCTAssertEqual(xs(half), [0, 20, 40])
    }

    func testSameRateOrNoRateLeavesTheSequenceUnchanged() throws {
        let s = line([0, 10, 20])
        XCTAssertEqual(try WindowSpec(frames: 2, frameRate: 10).retimed(s, sourceFrameRate: 10), s)
        XCTAssertEqual(try WindowSpec(frames: 2).retimed(s, sourceFrameRate: nil), s)
    }

    func testIrregularTimestampsInterpolateInTime() throws {
        // t = 0, 0.1, 0.3, 0.35 with x = 0, 10, 30, 40; at 10 fps the samples at 0.2 s and 0.3 s
        // fall halfway between frames 1 and 2 and exactly on frame 2.
        let s = line([0, 10, 30, 40], times: [0, 0.1, 0.3, 0.35])
        XCTAssertEqual(xs(try WindowSpec(frames: 2, frameRate: 10).retimed(s, sourceFrameRate: nil)), [0, 10, 20, 30])
    }

    func testDuplicateTimestampsTakeTheLastFrameAtThatTime() throws {
        let s = line([0, 10, 99, 20], times: [0, 0.1, 0.1, 0.2])
        XCTAssertEqual(xs(try WindowSpec(frames: 2, frameRate: 10).retimed(s, sourceFrameRate: nil)), [0, 99, 20])
        // Between samples: 0.05 s halfway 0 -> 10 (first of the pair), 0.15 s halfway 99 -> 20.
        XCTAssertEqual(xs(try WindowSpec(frames: 2, frameRate: 20).retimed(s, sourceFrameRate: nil)), [0, 5, 99, 59.5, 20])
    }

    func testResamplingNeverInterpolatesAcrossAbsentJoints() throws {
        // Present at 0 and 2, absent at 1: at double rate, positions 0.5 and 1.5 take the
        // nearer frame (0.5 rounds up to the absent frame 1, 1.5 to frame 2).
        let out = try WindowSpec(frames: 2, frameRate: 20).retimed(line([0, nil, 20]), sourceFrameRate: 10)
        XCTAssertEqual(Array(out.present), [1, 0, 0, 1, 1])
        XCTAssertEqual(xs(out), [0, 0, 0, 20, 20])
    }

    func testEventsMoveToTheFrameAtTheirTime() throws {
        let out = try WindowSpec(frames: 2, frameRate: 20).retimed(line([0, 10, 20, 30], events: [2]), sourceFrameRate: 10)
        XCTAssertEqual(out.events, [4])
    }

    func testHostileTimestampsAndRatesThrowInsteadOfHanging() {
        let spec = WindowSpec(frames: 2, frameRate: 30)
        assertThrows(["sequence 'line' frame 1", "NaN"]) { _ = try spec.retimed(self.line([0, 1], times: [0, .nan]), sourceFrameRate: nil) }
        assertThrows(["frame 2", "backwards"]) { _ = try spec.retimed(self.line([0, 1, 2], times: [0, 1, 0.5]), sourceFrameRate: nil) }
        assertThrows(["all 3 timestamps are equal"]) { _ = try spec.retimed(self.line([0, 1, 2], times: [1, 1, 1]), sourceFrameRate: nil) }
        assertThrows(["would give", "in seconds"]) { _ = try spec.retimed(self.line([0, 1], times: [0, 1e9]), sourceFrameRate: nil) }
        assertThrows(["would give"]) {
            _ = try WindowSpec(frames: 2, frameRate: 1e300).retimed(self.line([0, 1]), sourceFrameRate: 10)
        }
        assertThrows(["no timestamps", "frameRate"]) { _ = try spec.retimed(self.line([0, 1]), sourceFrameRate: nil) }
        assertThrows(["frame rate must be a positive"]) {
            _ = try WindowSpec(frames: 2, frameRate: .nan).retimed(self.line([0, 1]), sourceFrameRate: 10)
        }
        assertThrows(["frame rate must be a positive"]) { _ = try spec.retimed(self.line([0, 1]), sourceFrameRate: -5) }
        // A tiny target rate is fine: one frame.
        XCTAssertEqual(try WindowSpec(frames: 1, frameRate: 1e-300).retimed(line([3, 4]), sourceFrameRate: 10).frameCount, 1)
    }

    // MARK: - Windows and padding

    func testStartsCoverTheWholeSequence() {
        let w = WindowSpec(frames: 4)
        XCTAssertEqual(w.starts(frameCount: 10, stride: 3), [0, 3, 6])
        XCTAssertEqual(w.starts(frameCount: 10, stride: 4), [0, 4, 6])
        XCTAssertEqual(w.starts(frameCount: 3, stride: 4), [0])
        XCTAssertEqual(WindowSpec(frames: 4, mode: .fit).starts(frameCount: 100, stride: 1), [0])
    }

    func testEmptyPaddingAddsFramesWithNobodyInView() {
        let s = line([1, 2, 3])
        let w = WindowSpec(frames: 5, padding: .empty).window(of: s, start: 0)
        XCTAssertEqual(w.frameCount, 5)
        XCTAssertEqual(Array(w.present), [1, 1, 1, 0, 0])
        XCTAssertEqual(w.coordinates, [1, 0, 2, 0, 3, 0, 0, 0, 0, 0])
        // A window running past the end is padded the same way.
        XCTAssertEqual(WindowSpec(frames: 2).window(of: s, start: 2).coordinates, [3, 0, 0, 0])
    }

    func testEdgePaddingRepeatsTheLastFrameIncludingItsAbsences() {
        var s = PoseSequence(id: "s", label: nil, jointCount: 2, dimensions: 2, hasConfidence: true)
        s.appendFrame([PosePoint(x: 1, y: 2, confidence: 0.5), PosePoint(x: 3, y: 4)])
        s.appendFrame([PosePoint(x: 5, y: 6, confidence: 0.25), nil])
        let w = WindowSpec(frames: 4, padding: .edge).window(of: s, start: 0)
        XCTAssertEqual(w.coordinates, [1, 2, 3, 4, 5, 6, 0, 0, 5, 6, 0, 0, 5, 6, 0, 0])
        XCTAssertEqual(w.present, [1, 1, 1, 0, 1, 0, 1, 0])
        XCTAssertEqual(w.confidence, [0.5, 1, 0.25, 0, 0.25, 0, 0.25, 0])
    }

    func testEventWindowsAreCentredAndClampedAtTheEdges() {
        let w = WindowSpec(frames: 5)
        XCTAssertEqual(w.start(centredOn: 5, frameCount: 10), 3)  // event at index 2 of the window
        XCTAssertEqual(w.start(centredOn: 0, frameCount: 10), 0)
        XCTAssertEqual(w.start(centredOn: 1, frameCount: 10), 0)
        XCTAssertEqual(w.start(centredOn: 9, frameCount: 10), 5)
        XCTAssertEqual(w.start(centredOn: 1, frameCount: 3), 0)
        XCTAssertEqual(WindowSpec(frames: 45).start(centredOn: 100, frameCount: 200), 78)  // 22 before, 22 after
        let s = line([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], events: [9])
        let at = w.window(of: s, centredOn: 9)
        XCTAssertEqual(xs(at), [5, 6, 7, 8, 9])
        XCTAssertEqual(at.events, [4])
        let short = w.window(of: line([0, 1, 2]), centredOn: 1)
        XCTAssertEqual(Array(short.present), [1, 1, 1, 0, 0])
        // A fit spec still cuts event windows as sliding windows.
        XCTAssertEqual(xs(WindowSpec(frames: 3, mode: .fit).window(of: s, centredOn: 4)), [3, 4, 5])
    }

    func testFitWithOneFrameTakesTheMiddle() {
        XCTAssertEqual(xs(WindowSpec(frames: 1, mode: .fit).window(of: line([0, 10, 20]), start: 0)), [10])
    }

    func testWindowInSeconds() throws {
        let w = try WindowSpec(seconds: 1.5, frameRate: 30)
        XCTAssertEqual(w.frames, 45)
        XCTAssertEqual(w.frameRate, 30)
        XCTAssertEqual(w.seconds, 1.5)
        assertThrows(["positive frame rate"]) { _ = try WindowSpec(seconds: 1, frameRate: 0) }
        assertThrows(["positive number of seconds"]) { _ = try WindowSpec(seconds: -1, frameRate: 30) }
        assertThrows(["more than"]) { _ = try WindowSpec(seconds: 1e9, frameRate: 30) }
    }

    func testWholeFrameRunsAndSingleFramesSampleAlike() {
        // [1, 2] is one block copy, [2, 1] frame by frame: same frames either way, with
        // confidence 1 for present joints of a source without confidence.
        let s = line([10, nil, 30])
        var c = [Float](repeating: -1, count: 4), p = [UInt8](repeating: 9, count: 2), k = [Float](repeating: -1, count: 2)
        for (positions, expected) in [([1.0, 2.0], ([0, 0, 30, 0], [0, 1], [0, 1])), ([2.0, 1.0], ([30, 0, 0, 0], [1, 0], [1, 0]))] {
            positions.withUnsafeBufferPointer { pos in
                s.sample(at: pos, padding: .empty, coordinates: &c, present: &p, confidence: &k)
            }
            XCTAssertEqual(c, expected.0.map { Float($0) })
            XCTAssertEqual(p, expected.1.map { UInt8($0) })
            XCTAssertEqual(k, expected.2.map { Float($0) })
        }
    }

    func testSamplingOutsideTheSequenceFollowsThePaddingPolicy() {
        let s = line([10, 20, 30])
        XCTAssertEqual(xs(s.sampled(at: [-1, 0.25, 2.5, 7], padding: .edge)), [10, 12.5, 30, 30])
        let empty = s.sampled(at: [-1, 0.25, 2.5, 7], padding: .empty)
        XCTAssertEqual(Array(empty.present), [0, 1, 0, 0])
        XCTAssertEqual(xs(empty), [0, 12.5, 0, 0])
        // Positions within 1e-6 of an integer are that frame exactly.
        XCTAssertEqual(xs(s.sampled(at: [1 - 1e-9, 2 + 1e-9], padding: .empty)), [20, 30])
    }
}
