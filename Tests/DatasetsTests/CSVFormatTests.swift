@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class CSVFormatTests: XCTestCase {
    func parse(_ text: String, mapping: CSVMapping = CSVMapping()) throws -> Dataset {
        try CSVFormat.parse(Array(text.utf8), file: "poses.csv", mapping: mapping)
    }

    /// A 3-joint skeleton keeps the rows short.
    let rig = Skeleton(name: "rig-3", joints: ["head", "leftHand", "rightHand"], dimensions: 2, units: .pixels, mirrorPairs: [["leftHand", "rightHand"]])

    var rigMapping: CSVMapping {
        var m = CSVMapping()
        m.skeleton = rig
        return m
    }

    func testHeaderConventionSnakeCaseMissingCellsAndConfidence() throws {
        let text = """
            seq_id,action,subject,frame,head_x,head_y,head_c,left_hand_x,left_hand_y,left_hand_c,rightHand_x,rightHand_y,rightHand_c,view
            a,wave,p1,1,10,20,0.9,11,21,0.8,,,0,front
            a,wave,p1,2,12.5,-3e1,1,NaN,NaN,0.7,30,31,0,front
            b,clap,p2,1,1,2,0.5,3,4,0.5,5,6,0.5,back
            """
        let d = try parse(text, mapping: rigMapping)
        XCTAssertEqual(d.sequences.map(\.id), ["a", "b"])
        XCTAssertEqual(d.sequences.map(\.label), ["wave", "clap"])
        XCTAssertEqual(d.sequences.map(\.group), ["p1", "p2"])
        XCTAssertEqual(d.classes, ["wave", "clap"], "first appearance")
        let a = d.sequences[0]
        XCTAssertEqual(a.frameCount, 2)
        XCTAssertEqual(a.present, [1, 1, 0, 1, 0, 0], "empty cells, NaN and confidence 0 are absent")
        XCTAssertEqual(a.coordinates, [10, 20, 11, 21, 0, 0, 12.5, -30, 0, 0, 0, 0])
        XCTAssertEqual(a.confidence, [0.9, 0.8, 0, 1, 0, 0])
    }

    func testBuiltInSkeletonIsInferredFromTheJointColumns() throws {
        let joints = Skeleton.coco17.joints
        let header = "clip,label," + joints.map { "\($0)_x,\($0)_y" }.joined(separator: ",")
        let row = "c1,squat," + joints.indices.map { "\($0),\($0 + 100)" }.joined(separator: ",")
        let d = try parse(header + "\n" + row + "\n")
        XCTAssertEqual(d.skeleton.name, "coco-17")
        XCTAssertNil(d.sequences[0].confidence)
        XCTAssertEqual(d.sequences[0].coordinates[2 * 16 + 1], 116)
    }

    func testMappingFileQuotedFieldsTimesAndTabs() throws {
        let dir = try temporaryDirectory()
        let mappingPath = dir.appendingPathComponent("m.json").path
        try #"{"skeleton": {"name": "rig-3", "joints": ["head", "leftHand", "rightHand"], "dimensions": 2}, "columns": {"id": "clip", "label": "what", "time": "secs"}, "joints": {"head": ["hx", "hy"], "leftHand": ["lx", "ly", "lc"]}, "classes": ["a, b", "c"], "frameRate": 25}"#
            .write(toFile: mappingPath, atomically: true, encoding: .utf8)
        let m = try CSVMapping.load(mappingPath)
        let d = try parse("clip\twhat\tsecs\thx\thy\tlx\tly\tlc\n\"x\"\t\"a, b\"\t0.0\t1\t2\t3\t4\t0.5\n\"x\"\t\"a, b\"\t0.04\t5\t6\t7\t8\t0\n", mapping: m)
        let s = d.sequences[0]
        XCTAssertEqual(s.id, "x")
        XCTAssertEqual(s.label, "a, b")
        XCTAssertEqual(s.timestamps, [0, 0.04])
        XCTAssertEqual(d.frameRate, 25)
        XCTAssertEqual(d.classes, ["a, b", "c"])
        XCTAssertEqual(s.present, [1, 1, 0, 1, 0, 0], "rightHand has no columns; leftHand has confidence 0 in frame 1")
    }

    /// Found by fuzzing: a cell of only spaces crashed the trimming; padded numbers are read.
    func testAMappingsColumnsGiveTheDimension() throws {
        // Issue 26 item 9: without "skeleton", three columns a joint were read as x, y and a
        // confidence (z lost), and the error listed every joint once per column.
        let joints = Skeleton.kinectV1.joints
        var mapping = CSVMapping()
        mapping.idColumn = "clip"
        mapping.joints = Dictionary(uniqueKeysWithValues: joints.enumerated().map { j, name in (name, ["X\(j)", "Y\(j)", "Z\(j)"]) })
        let header = "clip," + joints.indices.map { "X\($0),Y\($0),Z\($0)" }.joined(separator: ",")
        let row = "a," + joints.indices.map { "0.\($0),1.\($0),2.5" }.joined(separator: ",")
        let d = try parse(header + "\n" + row + "\n", mapping: mapping)
        XCTAssertEqual(d.skeleton, .kinectV1, "3D, from the z columns")
        XCTAssertEqual(Array(d.sequences[0].coordinates[3..<6]), [0.1, 1.1, 2.5])
        XCTAssertNil(d.sequences[0].confidence)
        // The same with confidence columns: four a joint.
        mapping.joints = Dictionary(uniqueKeysWithValues: joints.enumerated().map { j, name in (name, ["X\(j)", "Y\(j)", "Z\(j)", "C\(j)"]) })
        let scored = try parse(
            header + "," + joints.indices.map { "C\($0)" }.joined(separator: ",") + "\n" + row + String(repeating: ",0.75", count: joints.count) + "\n",
            mapping: mapping)
        XCTAssertEqual(scored.skeleton, .kinectV1)
        XCTAssertEqual(scored.sequences[0].confidence?.first, 0.75)
        // Third columns named as confidences are 2D.
        var rig = CSVMapping()
        rig.joints = ["head": ["hx", "hy", "hc"], "leftHand": ["lx", "ly", "lv1"]]
        assertThrows(["poses.csv:1:", "the joint columns (head, leftHand) match no built-in skeleton"]) {
            _ = try self.parse("id,hx,hy,hc,lx,ly,lv1\na,1,2,0.5,3,4,0.5\n", mapping: rig)
        }
        rig.skeleton = rigMapping.skeleton
        XCTAssertEqual(try parse("id,hx,hy,hc,lx,ly,lv1\na,1,2,0.5,3,4,0.5\n", mapping: rig).sequences[0].confidence?.first, 0.5)
        // Names that tell nothing, on joints of 2D and 3D skeletons alike: the mapping must say.
        var unclear = CSVMapping()
        unclear.joints = ["leftWrist": ["a1", "a2", "a3"]]
        assertThrows(["poses.csv:1:", "three columns, which are x, y, z or x, y, confidence", "name the skeleton in the mapping"]) {
            _ = try self.parse("id,a1,a2,a3\na,1,2,3\n", mapping: unclear)
        }
        // Unknown joints with z columns: each named once.
        var unknown = CSVMapping()
        unknown.joints = ["wing": ["wx", "wy", "wz"], "tail": ["tx", "ty", "tz"]]
        assertThrows(["the joint columns (tail, wing) match no built-in skeleton"]) {
            _ = try self.parse("id,wx,wy,wz,tx,ty,tz\na,1,2,3,4,5,6\n", mapping: unknown)
        }
    }

    func testBlankAndPaddedCells() throws {
        let d = try parse("id,head_x,head_y,leftHand_x,leftHand_y\na, ,\t,\t5 , 6\t\n", mapping: rigMapping)
        XCTAssertEqual(d.sequences[0].present, [0, 1, 0])
        XCTAssertEqual(Array(d.sequences[0].coordinates[2..<4]), [5, 6])
    }

    // MARK: errors

    func testWrongColumnCount() {
        assertThrows(["poses.csv:3:", "sequence 'a'", "expected 5 fields as in the header, found 4", "delimiter"]) {
            _ = try parse("id,head_x,head_y,leftHand_x,leftHand_y\na,1,2,3,4\na,1,2,3\n", mapping: rigMapping)
        }
    }

    func testUnknownJoint() {
        assertThrows(["poses.csv:1:4:", "joint 'elbow' is not in skeleton 'rig-3' (head, leftHand, rightHand)"]) {
            _ = try parse("id,head_x,head_y,elbow_x,elbow_y\na,1,2,3,4\n", mapping: rigMapping)
        }
    }

    func testLabelMissingFromClassList() {
        var m = rigMapping
        m.classes = ["wave"]
        assertThrows(["poses.csv:2:", "sequence 'a'", "label 'jump' is not in the class list [wave]"]) {
            _ = try parse("id,label,head_x,head_y\na,jump,1,2\n", mapping: m)
        }
    }

    func testInfiniteAndNonNumericValues() {
        assertThrows(["poses.csv:2:3:", "sequence 'a' frame 0", "head_x is NaN or infinite"]) {
            _ = try parse("id,label,head_x,head_y\na,w,inf,2\n", mapping: rigMapping)
        }
        assertThrows(["poses.csv:2:4:", "head_y '2,5' is not a number".replacingOccurrences(of: "2,5", with: "two")]) {
            _ = try parse("id,label,head_x,head_y\na,w,1,two\n", mapping: rigMapping)
        }
    }

    func testRowsOfASequenceMustBeTogetherAndInOrder() {
        assertThrows(["poses.csv:4:", "sequence 'a'", "not together", "sort the rows"]) {
            _ = try parse("id,head_x,head_y\na,1,2\nb,1,2\na,1,2\n", mapping: rigMapping)
        }
        assertThrows(["poses.csv:3:2:", "frame 1", "frame numbers must increase, but 1.0 follows 2.0"]) {
            _ = try parse("id,frame,head_x,head_y\na,2,1,2\na,1,1,2\n", mapping: rigMapping)
        }
        assertThrows(["poses.csv:3:2:", "label changes within the sequence ('w' then 'v')"]) {
            _ = try parse("id,label,head_x,head_y\na,w,1,2\na,v,1,2\n", mapping: rigMapping)
        }
    }

    func testHeaderProblems() {
        assertThrows(["poses.csv:1:", "no sequence id column", "mapping file"]) { _ = try parse("label,head_x,head_y\nw,1,2\n", mapping: rigMapping) }
        assertThrows(["poses.csv:1:", "no joint columns"]) { _ = try parse("id,label\na,w\n", mapping: rigMapping) }
        assertThrows(["poses.csv:1:", "subset of coco-17, mediapipe-pose-33, openpose-body-25, openpose-coco-18, vision-animal, vision-body-2d", "name a skeleton"]) {
            _ = try parse("id,nose_x,nose_y\na,1,2\n")
        }
        assertThrows(["joint 'head' has no y column"]) { _ = try parse("id,head_x\na,1\n", mapping: rigMapping) }
        assertThrows(["poses.csv:2:1:", "a closing '\"'"]) { _ = try parse("id,head_x,head_y\n\"a,1,2\n", mapping: rigMapping) }
    }

    func testEmptyDataset() {
        assertThrows(["poses.csv", "no sequences"]) { _ = try parse("id,head_x,head_y\n", mapping: rigMapping) }
        assertThrows(["poses.csv", "no sequences"]) { _ = try parse("") }
    }
}
