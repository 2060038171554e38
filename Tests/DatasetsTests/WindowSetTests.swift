import Datasets
import PoseCore
import TestSupport
import XCTest

final class WindowSetTests: XCTestCase {
    let skeleton = PrepFixtures.body2D

    func spec(_ window: WindowSpec) -> InputSpec { InputSpec.standard(for: skeleton, frames: window.frames).with(window) }

    func testSlidingWindowsKnowTheirSourceStartAndPadding() throws {
        let d = PrepFixtures.dataset(
            [("a", "wave", nil, nil, 10), ("b", "idle", nil, nil, 3), ("empty", "idle", nil, nil, 0)], frameRate: 10)
        let set = try WindowSet(dataset: d, spec: spec(WindowSpec(frames: 4)), stride: 3, classes: ["idle", "wave"])
        XCTAssertEqual(set.count, 4)  // a: 0, 3, 6; b: 0 (padded); the empty sequence gives none
        XCTAssertEqual(set.labels, [1, 1, 1, 0])
        XCTAssertEqual(set.sources.map(\.sequence), [0, 0, 0, 1])
        XCTAssertEqual(set.sources.map(\.start), [0, 3, 6, 0])
        XCTAssertEqual(set.sources.map(\.paddedFrames), [0, 0, 0, 1])
        XCTAssertEqual(set.sources.map(\.startTime), [0, 0.3, 0.6, 0])
        for i in 0..<set.count {
            let s = d.sequences[set.sources[i].sequence]
            XCTAssertEqual(set.window(i), set.spec.window.window(of: s, start: set.sources[i].start))
        }
        // Features are the extractor's, window by window.
        let extractor = try FeatureExtractor(set.spec)
        let all = try set.features()
        let V = set.spec.valuesPerWindow
        for i in 0..<set.count { XCTAssertEqual(Array(all[i * V..<(i + 1) * V]), extractor.extract(set.window(i))) }
    }

    func testEventWindowsAreCentredOnEachEvent() throws {
        var d = PrepFixtures.dataset([("a", "throw", nil, nil, 10), ("b", "other", nil, nil, 6)])
        d.sequences[0].events = [1, 5, 8]
        let set = try WindowSet(dataset: d, spec: spec(WindowSpec(frames: 5)), stride: 4, classes: ["other", "throw"], useEvents: true)
        // a: events at 1 (clamped to start 0), 5 (start 3), 8 (clamped to start 5); b has no
        // events: sliding windows at 0 and 1.
        XCTAssertEqual(set.sources.map(\.start), [0, 3, 5, 0, 1])
        XCTAssertEqual(set.sources.map(\.event), [1, 5, 8, nil, nil])
        XCTAssertEqual(set.labels, [1, 1, 1, 0, 0])
        XCTAssertEqual(set.window(1).events, [2])
    }

    func testResamplingHappensBeforeCutting() throws {
        let d = PrepFixtures.dataset([("a", "wave", nil, nil, 10)], frameRate: 10)
        let set = try WindowSet(
            dataset: d, spec: spec(WindowSpec(frames: 4, frameRate: 20)), stride: 8, classes: ["wave"])
        XCTAssertEqual(set.sequences[0].frameCount, 19)  // 0.9 s at 20 fps
        XCTAssertEqual(set.sources.map(\.start), [0, 8, 15])
        XCTAssertEqual(set.sources.map(\.startTime), [0, 0.4, 0.75])
        // Frame 1 of the first window is halfway between source frames 0 and 1.
        let w = set.window(0), s = d.sequences[0]
        assertClose(PrepFixtures.point(w, 1, 2), zip(PrepFixtures.point(s, 0, 2), PrepFixtures.point(s, 1, 2)).map { ($0 + $1) / 2 })
    }

    func testFitModeGivesOneWindowPerSequence() throws {
        let d = PrepFixtures.dataset([("a", "wave", nil, nil, 9), ("b", "wave", nil, nil, 2)])
        let set = try WindowSet(dataset: d, spec: spec(WindowSpec(frames: 5, mode: .fit)), stride: 1, classes: ["wave"])
        XCTAssertEqual(set.count, 2)
        XCTAssertEqual(set.positions(of: 0), [0, 2, 4, 6, 8])
        XCTAssertEqual(set.positions(of: 1), [0, 0.25, 0.5, 0.75, 1])
        XCTAssertEqual(set.sources.map(\.paddedFrames), [0, 0])
        XCTAssertEqual(PrepFixtures.point(set.window(0), 4, 0), PrepFixtures.point(d.sequences[0], 8, 0))
    }

    func testBadSequencesAreErrorsNamingThem() {
        var d = PrepFixtures.dataset([("a", "wave", nil, nil, 4)])
        assertThrows(["sequence 'a' has label 'wave'", "not in the class list"]) {
            _ = try WindowSet(dataset: d, spec: self.spec(WindowSpec(frames: 2)), stride: 1, classes: ["idle"])
        }
        d.sequences[0].coordinates[7] = .nan  // frame 0, joint 3 (present)
        assertThrows(["sequence 'a' frame 0 joint 3", "NaN"]) {
            _ = try WindowSet(dataset: d, spec: self.spec(WindowSpec(frames: 2)), stride: 1, classes: ["wave"])
        }
        d.sequences[0].coordinates[7] = 1
        d.sequences[0].events = [4]
        assertThrows(["sequence 'a'", "event frame 4 is outside its 4 frames"]) {
            _ = try WindowSet(dataset: d, spec: self.spec(WindowSpec(frames: 2)), stride: 1, classes: ["wave"], useEvents: true)
        }
        d.sequences[0].events = []
        assertThrows(["no timestamps", "frameRate"]) {
            _ = try WindowSet(dataset: d, spec: self.spec(WindowSpec(frames: 2, frameRate: 30)), stride: 1, classes: ["wave"])
        }
    }

    func testUnlabeledWindowsForPrediction() throws {
        var d = PrepFixtures.dataset([("a", "wave", nil, nil, 4)])
        d.sequences[0].label = nil
        let set = try WindowSet(dataset: d, spec: spec(WindowSpec(frames: 2)), stride: 2, classes: ["wave"], requireLabels: false)
        XCTAssertEqual(set.labels, [-1, -1])
        assertThrows(["label '(none)'"]) {
            _ = try WindowSet(dataset: d, spec: self.spec(WindowSpec(frames: 2)), stride: 2, classes: ["wave"])
        }
    }
}

extension InputSpec {
    func with(_ window: WindowSpec) -> InputSpec {
        var s = self
        s.window = window
        return s
    }
}
