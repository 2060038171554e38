@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 6: MMAction2 / PYSKL annotation pickles through the restricted reader. The
/// files are real `pickle.dump`s of NumPy arrays (Tests/Fixtures/sources/make_sources.py).
final class PysklFormatTests: XCTestCase {
    func source(_ name: String) -> String { fixture("sources/" + name) }
    func read(_ name: String, _ configure: (inout PysklFormat.Options) -> Void = { _ in }) throws -> Dataset {
        var o = PysklFormat.Options()
        configure(&o)
        return try PysklFormat.read(source(name), options: o)
    }

    func testProtocol2PickleOf2DKeypointsWithScoresAndSplit() throws {
        let d = try read("pyskl-2d.pkl")
        XCTAssertEqual(d.skeleton, .coco17, "17 joints x 2 channels")
        XCTAssertEqual(d.sequences.map(\.id), ["clip-a", "clip-b", "clip-c"])
        XCTAssertEqual(d.sequences.map(\.label), ["0", "2", "0"], "a NumPy int64 scalar label too")
        XCTAssertEqual(d.classes, ["0", "2"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "train", "test"], "xsub_train / xsub_val")
        XCTAssertEqual(d.imageSize, [640, 480], "img_shape is (h, w)")
        let a = d.sequences[0], c = d.sequences[2]
        XCTAssertEqual(Array(a.coordinates[0..<2]), [100, 50])
        XCTAssertEqual(Array(a.coordinates[(2 * 5)..<(2 * 5 + 2)]), [105, 150], "joint 5 = [100 + 5, 50 + 20·5]")
        XCTAssertEqual(a.present[17], 0, "score 0 in frame 1: absent")
        XCTAssertEqual(a.confidence?[0], 0.5)
        XCTAssertEqual(Array(c.coordinates[(2 * 18)..<(2 * 18 + 2)]), [122, 70], "clip-c frame 1 joint 1: [100 + 20 + 1 + 1, 50 + 20]")
        XCTAssertEqual(try read("pyskl-2d.pkl") { $0.classes = ["a", "b", "c"] }.sequences.map(\.label), ["a", "c", "a"])
        XCTAssertEqual(try read("pyskl-2d.pkl") { $0.minConfidence = 0.5 }.sequences[0].present.filter { $0 != 0 }.count, 0)
    }

    func testProtocol5PickleOfNTUBodies() throws {
        assertThrows(["pyskl-3d.pkl", "xsub_train, xsub_val, xview_train, xview_val", "mapping its keys to split names, e.g. xsub_train=train,xsub_val=test"]) {
            _ = try self.read("pyskl-3d.pkl")
        }
        let names = ["xsub_train": "train", "xsub_val": "test"]
        assertThrows(["pyskl-3d.pkl: annotation 'S001C001P001R001A050'", "2 people appear", "a people policy"]) {
            _ = try self.read("pyskl-3d.pkl") { $0.splitNames = names }
        }
        let d = try read("pyskl-3d.pkl") {
            $0.splitNames = names
            $0.people = .bodies(2)
        }
        XCTAssertEqual(d.skeleton, Skeleton.kinectV2.bodies(2), "25 joints x 3 channels: Kinect v2, two bodies")
        XCTAssertEqual(d.sequences.map(\.label), ["49", "0"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "test"])
        let first = d.sequences[0], second = d.sequences[1]
        assertClose(Array(first.coordinates[0..<3]), [-0.5, 1.0, 3.0])
        assertClose(Array(first.coordinates[(25 * 3)..<(25 * 3 + 3)]), [0.5, 1.0, 3.0], absolute: 1e-6, "body 2, joint 0")
        assertClose(Array(first.coordinates[(50 * 3 + 3)..<(50 * 3 + 6)]), [-0.49, 0.97, 3.0], absolute: 1e-6, "frame 1, joint 1")
        XCTAssertEqual(second.present[25..<50].filter { $0 != 0 }.count, 0, "the zero-padded body is absent")
        XCTAssertEqual(CoordinateSpace.measure(d).scale, .metres)
    }

    func testProtocol4ListOfAnnotations() throws {
        let d = try read("pyskl-list.pkl")
        XCTAssertEqual(d.sequences.map(\.id), ["clip-a"])
        XCTAssertNil(d.sequences[0].split)
    }

    func testPicklesThatWouldRunCodeOrHoldObjectsAreRefused() throws {
        assertThrows(["evil.pkl:", "calls posix.system, which is not run", "never executed"]) { _ = try self.read("evil.pkl") }
        assertThrows(["object-array.pkl:", "object"]) { _ = try self.read("object-array.pkl") }
        assertThrows(["set.pkl:", "opcode 0x8F is not read (sets"]) { _ = try self.read("set.pkl") }
        let bytes = try fixtureBytes("sources/pyskl-2d.pkl")
        assertThrows(["cut.pkl:", "cut short"]) { _ = try PysklFormat.parse(Array(bytes.prefix(900)), file: "cut.pkl") }
        assertThrows(["x.pkl:", "not annotations"]) { _ = try PysklFormat.parse([0x80, 2, 0x4B, 7, 0x2E], file: "x.pkl") }
    }

    func testPickleValues() throws {
        // [-2, -32768, 1.5, "é", [7], <the same list [7]>]: integers of every width, a float,
        // UTF-8, and a memoised list referred to twice (copied into the tree).
        let v = try Pickle.load([
            0x80, 2, 0x5D, 0x71, 0, 0x28, 0x4A, 0xFE, 0xFF, 0xFF, 0xFF, 0x8A, 0x02, 0x00, 0x80, 0x47, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0,
            0x58, 2, 0, 0, 0, 0xC3, 0xA9, 0x5D, 0x71, 1, 0x4B, 7, 0x61, 0x68, 1, 0x65, 0x2E,
        ])
        guard let items = v.items, items.count == 6 else { return XCTFail("\(v)") }
        XCTAssertEqual(items[0].integer, -2)
        XCTAssertEqual(items[1].integer, -32768)
        XCTAssertEqual(items[2].number, 1.5)
        XCTAssertEqual(items[3].string, "é")
        XCTAssertEqual(items[4].items?.first?.integer, 7)
        XCTAssertEqual(items[5].items?.first?.integer, 7)
        // A list appended to itself is refused, not followed forever.
        assertThrows(["a list contains itself"]) { _ = try Pickle.load([0x80, 2, 0x5D, 0x71, 0, 0x68, 0, 0x61, 0x2E]) }
        XCTAssertEqual(Pickle.half(0x3C00), 1)
        XCTAssertEqual(Pickle.half(0xC000), -2)
        XCTAssertEqual(Pickle.half(0x0001), 0x1p-24)
    }
}
