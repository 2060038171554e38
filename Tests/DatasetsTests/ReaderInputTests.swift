@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Reader cases from the hostile-input audit (issue 16, items 4, 6 and 7): quoted CSV ids,
/// byte-order marks, invalid UTF-8 and coordinates beyond `PoseBounds.maxCoordinate`.
final class ReaderInputTests: XCTestCase {
    let rig = Skeleton(name: "rig-3", joints: ["head", "leftHand", "rightHand"], dimensions: 2, units: .pixels)
    var rigMapping: CSVMapping {
        var m = CSVMapping()
        m.skeleton = rig
        return m
    }
    let nativeHeader = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17"}"#

    func csv(_ text: String) throws -> Dataset { try CSVFormat.parse(Array(text.utf8), file: "poses.csv", mapping: rigMapping) }

    // MARK: CSV ids (item 4)

    func testQuotedAndUnquotedIdAreOneSequence() throws {
        let d = try csv("id,label,head_x,head_y\n\"a\",w,1,2\na,w,3,4\n\"a\",w,5,6\nb,w,7,8\n")
        XCTAssertEqual(d.sequences.map(\.id), ["a", "b"])
        XCTAssertEqual(d.sequences[0].frameCount, 3)
        XCTAssertEqual(Array(d.sequences[0].coordinates[6..<8]), [3, 4])
    }

    func testRowsApartNameTheOffendingLineAndTheFirstRowNotTheHeader() {
        assertThrows(["poses.csv:4:", "sequence 'a'", "also has rows from line 2,"]) {
            _ = try csv("id,head_x,head_y\na,1,2\nb,1,2\na,1,2\n")
        }
        assertThrows(["poses.csv:5:", "also has rows from line 3,"]) {
            _ = try csv("id,head_x,head_y\n\nx,1,2\ny,1,2\n\"x\",1,2\n")
        }
    }

    // MARK: text encoding (item 7)

    func testByteOrderMarkIsAccepted() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let c = try CSVFormat.parse(bom + Array("id,head_x,head_y\na,1,2\n".utf8), file: "poses.csv", mapping: rigMapping)
        XCTAssertEqual(c.sequences.map(\.id), ["a"])
        let n = try NativeFormat.parse(bom + Array((nativeHeader + "\n" + #"{"id": "a", "frames": [{"pose": {"nose": [1, 2]}}]}"# + "\n").utf8), file: "a.jsonl")
        XCTAssertEqual(n.sequences[0].present[0], 1)
        let u = try UEAFormat.parse(bom + Array("@problemName Toy\n@classLabel true a\n@data\n1,2:3,4:a\n".utf8), file: "Toy_TRAIN.ts")
        XCTAssertEqual(u.sequences[0].frameCount, 2)
        // Streamed from a file (the chunked reader) too.
        let path = try temporaryDirectory().appendingPathComponent("bom.csv").path
        try Data(bom + Array("id,head_x,head_y\na,1,2\n".utf8)).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try CSVFormat.read(path, mapping: rigMapping).sequences.count, 1)
        // A mapping file with a byte-order mark.
        let mapping = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("m.json")
        try Data(bom + Array(#"{"skeleton": "coco-17"}"#.utf8)).write(to: mapping)
        XCTAssertEqual(try CSVMapping.load(mapping.path).skeleton?.name, "coco-17")
    }

    func testInvalidUTF8IsRefusedWithTheLine() throws {
        let latin1: [UInt8] = Array("id,label,head_x,head_y\na,w,1,2\nb,caf".utf8) + [0xE9] + Array(",3,4\n".utf8)
        assertThrows(["poses.csv:3:6:", "not valid UTF-8 (byte 0xE9)", "save the file as UTF-8"]) {
            _ = try CSVFormat.parse(latin1, file: "poses.csv", mapping: self.rigMapping)
        }
        let native = Array((nativeHeader + "\n").utf8) + Array(#"{"id": "a\#u{7F}", "label": "w"#.utf8) + [0xFF] + Array(#"", "frames": []}"#.utf8)
        assertThrows(["a.jsonl:2:", "not valid UTF-8 (byte 0xFF)"]) { _ = try NativeFormat.parse(native, file: "a.jsonl") }
        // Overlong forms and surrogates are not UTF-8 either; valid multi-byte text is.
        for bad: [UInt8] in [[0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]] {
            XCTAssertNotNil(UTF8Check.firstInvalid(bad, bad.count), "\(bad)")
        }
        let good = Array("ü€𝄞 plain ascii text longer than eight".utf8)
        XCTAssertNil(UTF8Check.firstInvalid(good, good.count))
        let path = try temporaryDirectory().appendingPathComponent("Toy_TRAIN.ts").path
        try Data(Array("@problemName Toy\n@classLabel true a\n@data\n1,2:3,4:a\n1,2:3,4:".utf8) + [0xE4] + Array("\n".utf8))
            .write(to: URL(fileURLWithPath: path))
        assertThrows(["Toy_TRAIN.ts:5:9:", "not valid UTF-8"]) { _ = try UEAFormat.read(path) }
    }

    // MARK: coordinate bounds (item 6, read time)

    func testHugeCoordinatesAreRefusedByEveryReader() throws {
        assertThrows(["poses.csv:2:2:", "sequence 'a' frame 0 joint 'head'", "coordinate 1e+38 is beyond ±1000000", "units"]) {
            _ = try self.csv("id,head_x,head_y\na,1e38,2\n")
        }
        assertThrows(["a.jsonl:2:", "sequence 'a' frame 0 joint 'nose'", "beyond ±1000000"]) {
            _ = try NativeFormat.parse(Array((self.nativeHeader + "\n" + #"{"id": "a", "frames": [{"pose": {"nose": [1, -1e38]}}]}"# + "\n").utf8), file: "a.jsonl")
        }
        assertThrows(["Toy_TRAIN.ts:3:", "beyond ±1000000"]) {
            _ = try UEAFormat.parse(Array("@classLabel true a\n@data\n1,2:3,2e7:a\n".utf8), file: "Toy_TRAIN.ts")
        }
        var values: [Float] = (0..<(2 * 8 * 3)).map { Float($0) }
        values[7] = 1e38
        assertThrows(["hand.npz", "sequence 'hand-0' frame 0 joint", "beyond ±1000000"]) {
            _ = try NumpyFormat.parseArchive(try NumpyFormatTests.archive(X: values, shape: [1, 2, 8, 3]), file: "hand.npz")
        }
        // The bound itself is accepted, and a large confidence is not a coordinate.
        let ok = try NativeFormat.parse(Array((nativeHeader + "\n" + #"{"id": "a", "frames": [{"pose": {"nose": [1e6, 2, 5e7]}}]}"# + "\n").utf8), file: "a.jsonl")
        XCTAssertEqual(ok.sequences[0].coordinates[0], 1e6)
    }
}
