@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class NativeFormatTests: XCTestCase {
    let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "classes": ["wave", "other"]}"#

    /// Lines joined by newlines, with a final newline unless `terminated` is false.
    func parse(_ lines: [String], terminated: Bool = true) throws -> Dataset {
        try NativeFormat.parse(Array((lines.joined(separator: "\n") + (terminated ? "\n" : "")).utf8), file: "clips.jsonl")
    }

    func seq(_ frames: String, id: String = "a", label: String = "wave") -> String {
        #"{"id": "\#(id)", "label": "\#(label)", "frames": [\#(frames)]}"#
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
        XCTAssertEqual(s.confidence?[2], 0, "an absent joint has confidence 0")
    }

    func test3DTimestampsEventsGroupsAndImageSize() throws {
        let h = #"{"actiontrain": "poses", "version": 1, "skeleton": "natops-8", "frameRate": 20, "classes": ["x"]}"#
        let d = try parse([
            h,
            #"{"id": 7, "label": "x", "group": 12, "split": "validation", "events": [1], "imageSize": [640, 480], "frames": [{"t": 0, "pose": {"leftElbow": [0.5, -1.25, 2e-1]}}, {"t": 0.05, "pose": {"rightThumb": [1, 2, 3, 0.75]}}], "note": {"any": ["metadata", 1]}}"#,
        ])
        let s = d.sequences[0]
        XCTAssertEqual(s.id, "7")
        XCTAssertEqual(s.group, "12")
        XCTAssertEqual(s.split, "validation")
        XCTAssertEqual(s.events, [1])
        XCTAssertEqual(s.imageSize, [640, 480])
        XCTAssertEqual(s.timestamps, [0, 0.05])
        XCTAssertEqual(d.frameRate, 20)
        let elbow = Skeleton.natops.index(of: "leftElbow")!, thumb = Skeleton.natops.index(of: "rightThumb")!
        XCTAssertEqual(Array(s.coordinates[(elbow * 3)..<(elbow * 3 + 3)]), [0.5, -1.25, 0.2])
        XCTAssertEqual(s.confidence?[8 + thumb], 0.75)
        XCTAssertEqual(s.confidence?[elbow], 1)
    }

    func testEscapedKeysAndStrings() throws {
        let d = try parse([header, #"{"id": "a\"b\u00e9", "label": "wave", "frames": [{"pose": {"\u006eose": [1, 2]}}]}"#])
        XCTAssertEqual(d.sequences[0].id, "a\"bé")
        XCTAssertEqual(d.sequences[0].present[0], 1)
    }

    func testCustomSkeletonInTheHeaderRoundTrips() throws {
        let custom = #"{"name": "rig-3", "joints": ["head", "leftHand", "rightHand"], "dimensions": 2, "mirrorPairs": [["leftHand", "rightHand"]], "root": "head"}"#
        let h = #"{"actiontrain": "poses", "version": 1, "skeleton": \#(custom)}"#
        let d = try parse([h, #"{"id": "a", "label": "wave", "frames": [{"pose": {"leftHand": [1, 2]}}]}"#])
        XCTAssertEqual(d.skeleton.joints, ["head", "leftHand", "rightHand"])
        XCTAssertEqual(d.skeleton.centre, ["head"])
        XCTAssertEqual(d.skeleton.units, .pixels)
        XCTAssertEqual(d.classes, ["wave"], "classes default to the sorted labels")
        let path = try temporaryDirectory().appendingPathComponent("c.jsonl").path
        try NativeFormat.write(d, to: path)
        var again = try NativeFormat.read(path)
        again.name = d.name
        XCTAssertEqual(again, d)
    }

    func testWriteThenReadRoundTrips() throws {
        let d = try parse([
            header,
            #"{"id": "s1", "label": "wave", "split": "train", "frames": [{"t": 0, "pose": {"nose": [10.25, 20, 0.5]}}, {"t": 0.5, "pose": {}}]}"#,
            #"{"id": "s2", "label": "other", "imageSize": [1920, 1080], "frames": [{"pose": {"rightAnkle": [1e-3, -4]}}]}"#,
        ])
        let dir = try temporaryDirectory()
        let path = dir.appendingPathComponent("out.jsonl").path
        try NativeFormat.write(d, to: path)
        var again = try NativeFormat.read(path)
        again.name = d.name
        XCTAssertEqual(again, d)
    }

    /// Random Floats of every magnitude written by the writer read back bit-exact.
    func testFloatsReadBackBitExact() throws {
        var g = SeededGenerator(seed: 3)
        var values: [Float] = [0, -0.0, 1, 0.1, 1e-45, -1.17549435e-38, 3.4028235e38, 16_777_217, 0.3, 412.37]
        for _ in 0..<3000 {
            let bits = UInt32(truncatingIfNeeded: g.next())
            let f = Float(bitPattern: bits)
            if f.isFinite { values.append(f) }
            values.append(Float(Int(g.next() % 200_000)) / 100 - 1000)
        }
        // Every magnitude through the number parser; coordinates within the readers' bound
        // (PoseBounds.maxCoordinate) through the whole reader.
        for v in values {
            let text = Array("\(v)".utf8)
            let parsed = text.withUnsafeBufferPointer { b -> Float? in
                guard let (d, next) = NumberParser.parseDouble(b.baseAddress!, 0, b.count), next == b.count else { return nil }
                return NumberParser.float(d, b.baseAddress!, 0, next)
            }
            XCTAssertEqual(parsed?.bitPattern, v.bitPattern, "\(v)")
        }
        let inRange = values.filter { abs($0) <= PoseBounds.maxCoordinate }
        XCTAssertGreaterThan(inRange.count, 3000)
        let points = inRange.indices.map { #"{"pose": {"nose": [\#(inRange[$0]), 0]}}"# }.joined(separator: ", ")
        let d = try parse([header, seq(points)])
        let read = stride(from: 0, to: d.sequences[0].frameCount, by: 1).map { d.sequences[0].coordinates[$0 * 34] }
        XCTAssertEqual(read.map(\.bitPattern), inRange.map(\.bitPattern))
    }

    /// Decimals whose Double lies near a Float rounding boundary take the careful path.
    func testNumberParserMatchesStandardLibrary() {
        var g = SeededGenerator(seed: 11)
        var texts = [
            "0.5", "1e-7", "-2.5E+3", "123456789012345678901234", "1.00000005960464477539062500001", "7.006492321624085e-46",
            "3.40282356779733661637539395458142568448e38", "0.0000000000000000000000000000000000000000000014",
        ]
        for _ in 0..<5000 {
            let m = g.next() % 100_000_000_000
            let e = Int(g.next() % 80) - 40
            texts.append("\(m)e\(e)")
            // Exact Float midpoints in decimal: (2k+1) * 2^-25 near 1.
            let k = g.next() % (1 << 22)
            texts.append(String(format: "%.30f", 1 + (Double(2 * k + 1)) / Double(1 << 24) / 2))
        }
        for t in texts {
            let bytes = Array(t.utf8)
            let (d, next) = bytes.withUnsafeBufferPointer { NumberParser.parseDouble($0.baseAddress!, 0, $0.count)! }
            XCTAssertEqual(next, bytes.count, t)
            XCTAssertEqual(d.bitPattern, Double(t)!.bitPattern, t)
            let f = bytes.withUnsafeBufferPointer { NumberParser.float(d, $0.baseAddress!, 0, $0.count) }
            XCTAssertEqual(f.bitPattern, Float(t)!.bitPattern, t)
        }
    }

    /// Streaming in chunks smaller than a line gives the same lines as reading from memory.
    func testChunkedLineReaderMatchesInMemorySplitting() throws {
        let text = "first\r\n\nsecond line is longer than the chunk\nthird\nlast without newline"
        let path = try temporaryDirectory().appendingPathComponent("lines.txt").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        var expected: [String] = []
        try Array(text.utf8).withUnsafeBufferPointer { b in
            try LineSplitter.forEachLine(in: b) { l, n in expected.append("\(n):" + String(decoding: l, as: UTF8.self)) }
        }
        XCTAssertEqual(expected, ["1:first", "2:", "3:second line is longer than the chunk", "4:third", "5:last without newline"])
        for chunk in [1, 3, 7, 64] {
            var got: [String] = []
            let ended = try LineSplitter.forEachLine(ofFile: path, chunkSize: chunk) { l, n in got.append("\(n):" + String(decoding: l, as: UTF8.self)) }
            XCTAssertEqual(got, expected, "chunk \(chunk)")
            XCTAssertFalse(ended)
        }
    }

    // MARK: one test per error case, with the message fragments users see

    func testTruncatedFile() {
        assertThrows(["clips.jsonl:3:", "sequence 'b'", "ends in the middle of a sequence", "cut short"]) {
            _ = try parse([header, seq(""), #"{"id": "b", "label": "wave", "frames": [{"pose": {"nose": [1, "#], terminated: false)
        }
    }

    func testObjectSplitOverLines() {
        assertThrows(["clips.jsonl:2:", "sequence 'b'", "same line", "JSON Lines"]) {
            _ = try parse([header, #"{"id": "b", "label": "wave","#, #""frames": []}"#])
        }
    }

    func testSyntaxErrorNamesLineAndColumn() {
        assertThrows(["clips.jsonl:3:45:", "sequence 'b' frame 0 joint 'nose'", "expected ',' or ']' in the point"]) {
            _ = try parse([header, seq(""), #"{"id": "b", "frames": [{"pose": {"nose": [1 2]}}]}"#])
        }
    }

    func testUnknownJoint() {
        assertThrows(["clips.jsonl:2:", "sequence 'a' frame 1", "joint 'elbow' is not in skeleton 'coco-17' (nose, leftEye", "custom skeleton"]) {
            _ = try parse([header, seq(#"{"pose": {}}, {"pose": {"elbow": [1, 2]}}"#)])
        }
    }

    func testLabelMissingFromClassList() {
        assertThrows(["clips.jsonl:2:", "sequence 'a'", "label 'jump' is not in the class list [wave, other]", "add it"]) {
            _ = try parse([header, seq("", label: "jump")])
        }
    }

    func testNaNCoordinates() {
        assertThrows(["clips.jsonl:2:", "sequence 'a' frame 0 joint 'nose'", "value 2 of the point is NaN or infinite", "omit joints"]) {
            _ = try parse([header, seq(#"{"pose": {"nose": [1, NaN]}}"#)])
        }
        assertThrows(["joint 'leftEye'", "value 1 of the point is NaN or infinite"]) {
            _ = try parse([header, seq(#"{"pose": {"leftEye": [1e999, 2]}}"#)])
        }
        // (null was reported as "NaN or infinite": docs/bad-input.md)
        assertThrows(["joint 'nose'", "value 1 of the point is null; omit joints that were not seen"]) {
            _ = try parse([header, seq(#"{"pose": {"nose": [null, 2]}}"#)])
        }
        assertThrows(["joint 'nose'", "value 2 of the point is null"]) { _ = try parse([header, seq(#"{"pose": {"nose": [1, null]}}"#)]) }
    }

    func testWrongNumberOfCoordinates() {
        assertThrows(["clips.jsonl:2:", "frame 0 joint 'nose'", "expected 2 coordinates and an optional confidence, got 4 values", "[x, y, confidence]"]) {
            _ = try parse([header, seq(#"{"pose": {"nose": [1, 2, 3, 4]}}"#)])
        }
    }

    func testEmptyDataset() {
        assertThrows(["clips.jsonl", "no sequences"]) { _ = try parse([header]) }
        assertThrows(["clips.jsonl", "no sequences"]) { _ = try NativeFormat.parse([], file: "clips.jsonl") }
        assertThrows(["clips.jsonl", "no sequences"]) { _ = try parse(["", "   "]) }
    }

    func testNonMonotonicTimestamps() {
        assertThrows(["clips.jsonl:2:", "sequence 'a' frame 2", "frame times \"t\" must increase, but 0.5 follows 1.0", "drop duplicates"]) {
            _ = try parse([header, seq(#"{"t": 0, "pose": {}}, {"t": 1, "pose": {}}, {"t": 0.5, "pose": {}}"#)])
        }
        assertThrows(["\"t\" is given on 1 of 2 frames"]) { _ = try parse([header, seq(#"{"t": 0, "pose": {}}, {"pose": {}}"#)]) }
    }

    func testDuplicateIdsJointsAndBadFields() {
        assertThrows(["clips.jsonl:3:", "the id 'a' is also used on line 2"]) { _ = try parse([header, seq(""), seq("")]) }
        assertThrows(["frame 0 joint 'nose'", "given twice"]) { _ = try parse([header, seq(#"{"pose": {"nose": [1, 2], "nose": [3, 4]}}"#)]) }
        assertThrows(["split 'val' is not one of train, validation, test"]) {
            _ = try parse([header, #"{"id": "a", "split": "val", "frames": []}"#])
        }
        assertThrows(["event frame 5 is outside the sequence's 1 frames"]) {
            _ = try parse([header, #"{"id": "a", "events": [5], "frames": [{"pose": {}}]}"#])
        }
        assertThrows(["clips.jsonl:2:", "no \"id\""]) { _ = try parse([header, #"{"frames": []}"#]) }
        assertThrows(["frame 0", "no \"pose\""]) { _ = try parse([header, seq(#"{"t": 0}"#)]) }
    }

    func testHeaderErrors() {
        assertThrows(["clips.jsonl:1:", "not an actiontrain header", "\"actiontrain\": \"poses\""]) { _ = try parse([seq("")]) }
        assertThrows(["clips.jsonl:1:", "unsupported version 2"]) {
            _ = try parse([#"{"actiontrain": "poses", "version": 2, "skeleton": "coco-17"}"#, seq("")])
        }
        assertThrows(["unknown skeleton 'coco-18'", "coco-17"]) {
            _ = try parse([#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-18"}"#, seq("")])
        }
        assertThrows(["clips.jsonl:1:", "skeleton field \"mirrorPairs\"", "'leftFoot'", "not in \"joints\""]) {
            _ = try parse([#"{"actiontrain": "poses", "version": 1, "skeleton": {"name": "r", "joints": ["a"], "dimensions": 2, "mirrorPairs": [["a", "leftFoot"]]}}"#, seq("")])
        }
        assertThrows(["class 'wave' is listed twice"]) {
            _ = try parse([#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "classes": ["wave", "wave"]}"#, seq("")])
        }
    }

    func testShippedNatopsReadsAndRewritesByteIdentical() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("data/natops.jsonl").path
        let d = try NativeFormat.read(path)
        XCTAssertEqual(d.sequences.count, 360)
        XCTAssertEqual(d.sequences.filter { $0.split == "train" }.count, 180)
        XCTAssertEqual(d.sequences[0].frameCount, 51)
        let out = try temporaryDirectory().appendingPathComponent("natops.jsonl").path
        try NativeFormat.write(d, to: out)
        XCTAssertEqual(FileManager.default.contents(atPath: out), FileManager.default.contents(atPath: path), "the writer is byte-stable")
    }
}
