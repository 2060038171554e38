@testable import Datasets
import PoseCore
import TestSupport
import XCTest

final class NativeFormatTests: XCTestCase {
    let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "classes": ["wave", "other"]}"#

    func parse(_ lines: [String]) throws -> Dataset {
        try NativeFormat.parse(Array(lines.joined(separator: "\n").utf8), file: "clips.jsonl")
    }

    func testMissingJointsAreAbsentAndEmptyPosesAreFrames() throws {
        let d = try parse([
            header,
            #"{"id": "s1", "label": "wave", "group": "p1", "frames": [{"pose": {"nose": [10, 20, 0.5], "leftEye": [11, 19]}}, {"pose": {}}]}"#,
        ])
        let s = d.sequences[0]
        XCTAssertEqual(s.frameCount, 2)
        XCTAssertEqual(s.group, "p1")
        XCTAssertEqual(Array(s.present[0..<3]), [1, 1, 0])
        XCTAssertEqual(s.present[17..<34].allSatisfy { $0 == 0 }, true)
        XCTAssertEqual(Array(s.coordinates[0..<4]), [10, 20, 11, 19])
        XCTAssertEqual(s.confidence?[0], 0.5)
        XCTAssertEqual(s.confidence?[1], 1, "a point without confidence counts as seen")
    }

    func testErrorsNameFileAndLine() {
        assertThrows(["clips.jsonl:3:", "not valid JSON"]) {
            _ = try parse([header, #"{"id": "a", "label": "wave", "frames": []}"#, #"{"id": "b", "#])
        }
        assertThrows(["clips.jsonl:2:", "joint 'elbow'"]) {
            _ = try parse([header, #"{"id": "a", "label": "wave", "frames": [{"pose": {"elbow": [1, 2]}}]}"#])
        }
        assertThrows(["clips.jsonl", "label 'jump'", "not in the class list"]) {
            _ = try parse([header, #"{"id": "a", "label": "jump", "frames": []}"#])
        }
        assertThrows(["clips.jsonl:2:", "expected 2 coordinates"]) {
            _ = try parse([header, #"{"id": "a", "label": "wave", "frames": [{"pose": {"nose": [1]}}]}"#])
        }
        assertThrows(["clips.jsonl", "no sequences"]) { _ = try parse([header]) }
    }

    func testWriteThenReadRoundTrips() throws {
        let d = try parse([
            header,
            #"{"id": "s1", "label": "wave", "split": "train", "frames": [{"t": 0, "pose": {"nose": [10.25, 20, 0.5]}}, {"t": 0.5, "pose": {}}]}"#,
            #"{"id": "s2", "label": "other", "frames": [{"pose": {"rightAnkle": [1e-3, -4]}}]}"#,
        ])
        let dir = try temporaryDirectory()
        let path = dir.appendingPathComponent("out.jsonl").path
        try NativeFormat.write(d, to: path)
        var again = try NativeFormat.read(path)
        again.name = d.name
        XCTAssertEqual(again, d)
    }
}
