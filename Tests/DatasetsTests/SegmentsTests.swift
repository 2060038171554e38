@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Labelled segments of recordings (`"segments"`, docs/datasets.md): read, checked, written
/// back (UTKinect's recordings imported whole with them: `PublicDatasetImportTests`).
final class SegmentsTests: XCTestCase {
    let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17"}"#

    func parse(_ lines: [String]) throws -> Dataset {
        try NativeFormat.parse(Array((lines.joined(separator: "\n") + "\n").utf8), file: "stream.jsonl")
    }

    func recording(_ segments: String, frames: Int = 6) -> String {
        let f = Array(repeating: #"{"pose": {"nose": [1, 2]}}"#, count: frames).joined(separator: ", ")
        return #"{"id": "rec", "segments": \#(segments), "frames": [\#(f)]}"#
    }

    func testSegmentsAreReadWrittenAndGiveTheirLabels() throws {
        let d = try parse([header, recording(#"[{"label": "wave", "start": 0, "end": 2}, {"label": "clap", "start": 2, "end": 5}]"#)])
        let s = d.sequences[0]
        XCTAssertNil(s.label)
        XCTAssertEqual(s.segments, [LabeledSegment(label: "wave", start: 0, end: 2), LabeledSegment(label: "clap", start: 2, end: 5)])
        XCTAssertEqual(d.classes, ["clap", "wave"], "the segments' labels are the classes when the file lists none")
        XCTAssertEqual(d.labels(outside: ["wave"]).map(\.label), ["clap"])
        // Written and read back.
        let path = try temporaryDirectory().appendingPathComponent("stream.jsonl").path
        try NativeFormat.write(d, to: path)
        let again = try NativeFormat.read(path)
        XCTAssertEqual(again.sequences[0].segments, s.segments)
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains(#""segments": [{"label": "wave", "start": 0, "end": 2}"#))
        // The content hash sees them; a dataset without segments hashes as before.
        var moved = d
        moved.sequences[0].segments[1].end = 4
        XCTAssertNotEqual(moved.contentHash, d.contentHash)
        var none = d
        none.sequences[0].segments = []
        let plain = Dataset(name: d.name, skeleton: d.skeleton, sequences: none.sequences, classes: d.classes)
        XCTAssertEqual(none.contentHash, plain.contentHash)
        // A slice keeps the part of each segment inside it.
        XCTAssertEqual(s.slice(1, count: 3).segments, [LabeledSegment(label: "wave", start: 0, end: 1), LabeledSegment(label: "clap", start: 1, end: 2)])
    }

    func testBadSegmentsAreRefusedNamingTheProblem() {
        assertThrows(["stream.jsonl:2", "segment 'clap' (frames 2 to 6) ends outside the sequence's 6 frames"]) {
            _ = try parse([header, recording(#"[{"label": "clap", "start": 2, "end": 6}]"#)])
        }
        assertThrows(["segment 'clap' runs from frame 3.0 to 1.0"]) { _ = try parse([header, recording(#"[{"label": "clap", "start": 3, "end": 1}]"#)]) }
        assertThrows(["segment 'clap' (frame 1) starts before the one before it (frame 3)"]) {
            _ = try parse([header, recording(#"[{"label": "wave", "start": 3, "end": 4}, {"label": "clap", "start": 1, "end": 2}]"#)])
        }
        assertThrows(["segment 'clap' has the key 'track'"]) {
            _ = try parse([header, recording(#"[{"label": "clap", "start": 1, "end": 2, "track": 1}]"#)])
        }
        assertThrows(["a segment is not an object"]) { _ = try parse([header, recording(#"[["clap", 1, 2]]"#)]) }
        assertThrows(["\"segments\" is not a list"]) { _ = try parse([header, recording(#"{"label": "clap"}"#)]) }
        let listed = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "classes": ["wave"]}"#
        assertThrows(["'clap'", "wave"]) { _ = try parse([listed, recording(#"[{"label": "clap", "start": 1, "end": 2}]"#)]) }
    }
}
