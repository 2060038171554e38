@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 7: the library checks behind fit's, eval's and predict's guard rails.
final class GuardsTests: XCTestCase {
    func seq(_ id: String, _ label: String?, frames: Int, times: [Double]? = nil) -> PoseSequence {
        PoseSequence(
            id: id, label: label, jointCount: 1, dimensions: 2, frameCount: frames, coordinates: Array(repeating: 1, count: 2 * frames),
            present: Array(repeating: 1, count: frames), timestamps: times)
    }

    func testTwoClassesAreNeeded() throws {
        let d = Dataset(name: "d", skeleton: .coco17, sequences: [seq("a", "x", frames: 1), seq("b", "x", frames: 1), seq("c", "y", frames: 1)])
        try Guards.requireTwoClasses(d, training: [0, 2], file: "d.jsonl")
        assertThrows(["d.jsonl:", "the 2 training sequence(s) hold only class 'x'"]) { try Guards.requireTwoClasses(d, training: [0, 1], file: "d.jsonl") }
        let unlabeled = Dataset(name: "u", skeleton: .coco17, sequences: [seq("a", nil, frames: 1)])
        assertThrows(["hold no labelled sequence"]) { try Guards.requireTwoClasses(unlabeled, training: [0], file: "u") }
    }

    func testPaddingTally() {
        var t = Guards.PaddingTally()
        t.add(frames: 10, real: 10)
        t.add(frames: 10, real: 2)
        t.add(frames: 10, real: 0)
        XCTAssertEqual(t.paddedFrames, 18)
        XCTAssertEqual(t.paddedWindows, 2)
        assertClose(t.share, 0.6)
        XCTAssertEqual(t.warning(windowLength: 10)?.hasPrefix("60% of the window frames are padding (2 of 3 windows"), true)
        t.add(frames: 10, real: 12)
        XCTAssertNil(t.warning(windowLength: 10), "18 of 40 frames: below half")
    }

    func testPaddingOfAWindowSet() throws {
        let d = Dataset(name: "d", skeleton: .coco17, sequences: [seq("a", "x", frames: 3), seq("b", "x", frames: 12)], frameRate: 10)
        let spec = InputSpec(skeleton: .coco17, window: WindowSpec(frames: 6), steps: [], channels: [.mask])
        let w = try WindowSet(dataset: d, spec: spec, stride: 6, classes: ["x"])
        let t = Guards.padding(of: w)
        XCTAssertEqual(t.windows, 3, "a: one padded window; b: starts 0 and 6")
        XCTAssertEqual(t.paddedFrames, 3)
    }

    func testWindowSecondsUseTheResampleRateTheDatasetRateOrTheTimestamps() throws {
        var d = Dataset(name: "d", skeleton: .coco17, sequences: [seq("a", "x", frames: 4, times: [0, 0.04, 0.08, 0.12])])
        XCTAssertEqual(try Guards.windowFrames(seconds: 1.5, dataset: d, resampleRate: nil), 38, "25 fps from the timestamps: 37.5 rounds to 38")
        d.frameRate = 30
        XCTAssertEqual(try Guards.windowFrames(seconds: 1.5, dataset: d, resampleRate: nil), 45)
        XCTAssertEqual(try Guards.windowFrames(seconds: 1.5, dataset: d, resampleRate: 20), 30)
        d.frameRate = nil
        d.sequences[0].timestamps = nil
        assertThrows(["no frame rate or timestamps", "the window in frames (windowFrames)"]) { _ = try Guards.windowFrames(seconds: 1, dataset: d, resampleRate: nil) }
    }

    func testSwappedArguments() throws {
        let dir = try temporaryDirectory()
        let model = dir.appendingPathComponent("m.bin").path
        try Data([0x89, 0x41, 0x54, 0x4D, 0, 0]).write(to: URL(fileURLWithPath: model))
        XCTAssertEqual(Guards.swappedArguments(model: "data.jsonl", data: model), "data.jsonl is a dataset and \(model) a model file: the arguments are swapped; give MODEL first, then DATA")
        XCTAssertNil(Guards.swappedArguments(model: model, data: "data.jsonl"))
        XCTAssertNil(Guards.swappedArguments(model: "data.jsonl", data: "other.csv"))
    }
}
