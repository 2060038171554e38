@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class UEAFormatTests: XCTestCase {
    let head = "@problemName Toy\n@missing true\n@dimensions 4\n@equalLength false\n@classLabel true a b\n@data\n"

    func parse(_ text: String, options: UEAFormat.Options = .init()) throws -> Dataset {
        try UEAFormat.parse(Array(text.utf8), file: "Toy_TRAIN.ts", options: options)
    }

    func testMissingValuesVariableLengthAndLabelNames() throws {
        let d = try parse(head + "1,2,3:4,5,6:7,?,9:10,11,12:a\n1,2:3,4:5,6:7,NaN:b\n", options: .init(labelNames: ["a": "alpha"]))
        XCTAssertEqual(d.skeleton.name, "Toy-2")
        XCTAssertEqual(d.sequences.map(\.frameCount), [3, 2])
        XCTAssertEqual(d.sequences.map(\.label), ["alpha", "b"])
        XCTAssertEqual(d.classes, ["alpha", "b"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "train"])
        // Joint 0 = dimensions 1-2, joint 1 = dimensions 3-4; frame-major [t][j][xy].
        XCTAssertEqual(d.sequences[0].coordinates, [1, 4, 7, 10, 2, 5, 0, 0, 3, 6, 9, 12])
        XCTAssertEqual(d.sequences[0].present, [1, 1, 1, 0, 1, 1])
        XCTAssertEqual(d.sequences[1].present, [1, 1, 1, 0])
    }

    func testErrors() {
        // Before, both said "expected 5 fields as in the header, found 4; check the delimiter,
        // quoting and that every row has every column" (a CSV's words).
        assertThrows([
            "Toy_TRAIN.ts:7: sequence 'Toy_TRAIN-0': 3 dimension(s) and a class label separated by ':', but the header says @dimensions 4; give every case 4 comma-separated series and a class label, separated by ':'"
        ]) { _ = try parse(head + "1:2:3:a\n") }
        let natops = UEAFormat.Options(skeleton: .natops)
        assertThrows([
            "Toy_TRAIN.ts:7: sequence 'Toy_TRAIN-0': 4 dimension(s), but skeleton 'natops-8' needs 24 (8 joints x 3 coordinates); name a skeleton whose joints x dimensions = 4"
        ]) { _ = try parse(head + "1:2:3:4:a\n", options: natops) }
        assertThrows(["Toy_TRAIN.ts:7:", "label 'c' is not in the class list [a, b]"]) { _ = try parse(head + "1:2:3:4:c\n") }
        assertThrows(["Toy_TRAIN.ts:7:", "dimension 3 has 1 values, dimension 1 has 2"]) { _ = try parse(head + "1,2:3,4:5:6,7:a\n") }
        assertThrows(["Toy_TRAIN.ts:7:", "dimension 2: 'x' is not a number"]) { _ = try parse(head + "1:x:3:4:a\n") }
        assertThrows(["Toy_TRAIN.ts:7:", "@missing false"]) {
            _ = try parse(head.replacingOccurrences(of: "@missing true", with: "@missing false") + "1:?:3:4:a\n")
        }
        assertThrows(["Toy_TRAIN.ts:1:", "an @data line"]) { _ = try parse("@problemName Toy\n") }
        assertThrows(["Toy_TRAIN.ts", "no sequences"]) { _ = try parse(head) }
        assertThrows(["Toy_TRAIN.ts:1:", "header line starting with '@'"]) { _ = try parse("1,2:3:a\n") }
    }

    /// A file cut short in its last case (no newline after it): before, the cut line's own
    /// problem ("1 dimension(s) and a class label ..."), as if the case had been written so.
    func testAFileCutInItsLastCaseSaysItEndsEarly() throws {
        let cases = "1:2:3:4:a\n5:6:7:8:b\n"
        assertThrows([
            "Toy_TRAIN.ts:9: sequence 'Toy_TRAIN-2': the input ends in the middle of the last case (1 dimension(s) and a class label separated by ':', "
                + "but the header says @dimensions 4); the file looks cut short (an interrupted copy or write?): regenerate or re-download it"
        ]) { _ = try parse(head + cases + "1,2:3") }
        // The same line with its newline is the line's own error; so is a bad case before others.
        assertThrows(["Toy_TRAIN.ts:9: sequence 'Toy_TRAIN-2': 1 dimension(s) and a class label separated by ':', but the header says @dimensions 4"]) {
            _ = try parse(head + cases + "1,2:3\n")
        }
        assertThrows(["Toy_TRAIN.ts:7: sequence 'Toy_TRAIN-0': 1 dimension(s)"]) { _ = try parse(head + "1,2:3\n" + cases) }
        assertThrows(["Toy_TRAIN.ts:7: sequence 'Toy_TRAIN-0': 1 dimension(s)"]) { _ = try parse(head + "1,2:3\n\n" + cases.dropLast()) }
        // A whole last case without a newline reads.
        XCTAssertEqual(try parse(head + cases.dropLast()).sequences.map(\.label), ["a", "b"])
    }
}
