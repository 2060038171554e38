@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 18, the import bullet: one class order for CSV and NumPy (declared, else first
/// appearance), and integer NumPy splits with a mapping or a precise refusal.
final class ImportOrderTests: XCTestCase {
    func source(_ name: String) -> String { fixture("sources/" + name) }
    func read(_ name: String, classes: [String]? = nil, splitNames: [String: String] = [:]) throws -> Dataset {
        var o = ReadOptions(skeleton: .coco17)
        o.classes = classes
        o.splitNames = splitNames
        return try DatasetLoader.read(source(name), options: o).dataset
    }

    func testCSVAndNumpyGiveTheSameClassOrder() throws {
        let csv = try read("order.csv"), npz = try read("order.npz")
        XCTAssertEqual(csv.classes, ["wave", "clap"], "first appearance, not sorted")
        XCTAssertEqual(npz.classes, csv.classes)
        XCTAssertEqual(npz.sequences.map(\.label), csv.sequences.map(\.label))
        XCTAssertEqual(npz.sequences.map(\.coordinates), csv.sequences.map(\.coordinates))
        // The declared order wins in both.
        XCTAssertEqual(try read("order.csv", classes: ["clap", "wave"]).classes, ["clap", "wave"])
        XCTAssertEqual(try read("order.npz", classes: ["clap", "wave"]).classes, ["clap", "wave"])
        assertThrows(["order.npz", "label 'clap' is not in the class list [wave]"]) { _ = try self.read("order.npz", classes: ["wave"]) }
        assertThrows(["order.csv:3:", "label 'clap' is not in the class list [wave]"]) { _ = try self.read("order.csv", classes: ["wave"]) }
    }

    func testIntegerLabelsWithoutNamesAreInNumericOrderOrIndexTheDeclaredClasses() throws {
        let d = try read("int-split.npz", splitNames: ["0": "train", "1": "test"])
        XCTAssertEqual(d.classes, ["0", "2"])
        XCTAssertEqual(d.sequences.map(\.label), ["2", "0", "2"])
        let named = try read("int-split.npz", classes: ["a", "b", "c"], splitNames: ["0": "train", "1": "test"])
        XCTAssertEqual(named.sequences.map(\.label), ["c", "a", "c"])
        XCTAssertEqual(named.classes, ["a", "b", "c"])
    }

    func testIntegerSplitsNeedTheirNames() throws {
        let d = try read("int-split.npz", splitNames: ["0": "train", "1": "test"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "test", "train"])
        assertThrows([
            "int-split.npz: entry 'split.npy'", "'split' holds integers (0, 1), not split names",
            "give split names for the values, e.g. 0=train,1=test", "re-save it as strings: split=np.where(split == 0, 'train', 'test')",
        ]) {
            _ = try self.read("int-split.npz")
        }
        assertThrows(["split[1]", "split '1' is not train, validation or test", "add it to the split names"]) {
            _ = try self.read("int-split.npz", splitNames: ["0": "train"])
        }
    }
}
