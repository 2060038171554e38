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

    // MARK: issue 26: what a pickle expands to is bounded

    /// Opcode-level pickle pieces (protocol 2) for hand-made pickles.
    enum P {
        static func string(_ s: String) -> [UInt8] { [0x8C, UInt8(s.utf8.count)] + Array(s.utf8) }
        static func int(_ v: Int) -> [UInt8] { [0x4A] + withUnsafeBytes(of: Int32(v).littleEndian, Array.init) }
        static func put(_ k: Int) -> [UInt8] { [0x71, UInt8(k)] }  // BINPUT
        static func get(_ k: Int) -> [UInt8] { [0x68, UInt8(k)] }  // BINGET
        /// `numpy.core.numeric._frombuffer(data, dtype, shape, 'C')`.
        static func array(_ data: [UInt8], dtype: String, shape: [Int]) -> [UInt8] {
            var b = Array("cnumpy.core.numeric\n_frombuffer\n".utf8) + [0x28]
            b += [0x42] + withUnsafeBytes(of: UInt32(data.count).littleEndian, Array.init) + data
            b += string(dtype) + [0x28] + shape.flatMap(int) + [0x74] + string("C") + [0x74, 0x52]
            return b
        }
        /// `{"annotations": [annotation], "junk": junk}` around the given pieces.
        static func file(annotation: [UInt8], junk: [UInt8]) -> [UInt8] {
            [0x80, 2, 0x7D, 0x28] + string("annotations") + [0x5D, 0x28] + annotation + [0x65] + string("junk") + junk + [0x75, 0x2E]
        }
        static let clip =
            [0x7D, 0x28] + string("frame_dir") + string("clip") + string("keypoint")
            + array([UInt8](repeating: 0x41, count: 4 * 34), dtype: "f4", shape: [1, 1, 17, 2]) + [0x75]
    }

    func testMemoSharedListsCannotExpandBeyondTheLimit() throws {
        // Item 1: level 0 is a list of 100 ints; level k a list of 100 references to level k - 1
        // (a few hundred bytes each; POP leaves the last level alone on the stack), so five
        // levels expand to 10^10 values. The old reader
        // copied them until 2^26 values (gigabytes); now the tree stops at the file's size in
        // values, at least 2^20, and says so.
        var junk: [UInt8] = [0x5D] + P.put(0) + [0x28] + Array(repeating: [0x4B, 1], count: 100).flatMap { $0 } + [0x65]
        for k in 1...5 { junk += [0x30, 0x5D] + P.put(k) + [0x28] + Array(repeating: P.get(k - 1), count: 100).flatMap { $0 } + [0x65] }
        let bomb = P.file(annotation: P.clip, junk: junk)
        XCTAssertLessThan(bomb.count, 2_000)
        assertThrows(["bomb.pkl:", "the pickle expands to more than 1048576 values", "counts each time"]) {
            _ = try PysklFormat.parse(bomb, file: "bomb.pkl")
        }
        // The same sharing, two levels deep (10^4 values), is data like any other.
        var small: [UInt8] = [0x5D] + P.put(0) + [0x28] + Array(repeating: [0x4B, 1], count: 100).flatMap { $0 } + [0x65]
        small += [0x30, 0x5D] + P.put(1) + [0x28] + Array(repeating: P.get(0), count: 100).flatMap { $0 } + [0x65]
        guard case .list(let outer)? = try Pickle.load(P.file(annotation: P.clip, junk: small))["junk"] else { return XCTFail("no junk list") }
        XCTAssertEqual(outer.count, 100)
        XCTAssertEqual(outer[99].items?.count, 100)
        XCTAssertEqual(try PysklFormat.parse(P.file(annotation: P.clip, junk: small), file: "ok.pkl").sequences.map(\.id), ["clip"])
        // The limit grows with the file: 1.5 million Nones (more than 2^20 values, each a byte
        // of the file) are read.
        let nones = [0x80, 2, 0x5D, 0x28] + [UInt8](repeating: 0x4E, count: 1_500_000) + [0x65, 0x2E]
        XCTAssertEqual(try Pickle.load(nones).items?.count, 1_500_000)
    }

    func testASharedArrayCountsEachTimeItAppears() throws {
        // One 1 MiB array referred to 20 times: 20 MiB of array data from a 1 MiB file.
        let data = [UInt8](repeating: 7, count: 1 << 20)
        var list: [UInt8] = [0x80, 2, 0x5D, 0x28] + P.array(data, dtype: "u1", shape: [1 << 20]) + P.put(0)
        list += Array(repeating: P.get(0), count: 19).flatMap { $0 } + [0x65, 0x2E]
        assertThrows(["arrays expand to more than 16777216 bytes", "counts each time"]) { _ = try Pickle.load(list) }
        // Ten times (10 MiB) are within the 16 MiB floor.
        var ten: [UInt8] = [0x80, 2, 0x5D, 0x28] + P.array(data, dtype: "u1", shape: [1 << 20]) + P.put(0)
        ten += Array(repeating: P.get(0), count: 9).flatMap { $0 } + [0x65, 0x2E]
        let items = try XCTUnwrap(try Pickle.load(ten).items)
        XCTAssertEqual(items.count, 10)
        guard case .array(let a) = items[9] else { return XCTFail("\(items[9])") }
        XCTAssertEqual(a.shape, [1 << 20])
        XCTAssertEqual(a.double(5), 7)
    }

    func testNestingBuiltWithoutMarksIsLimitedTo256Levels() throws {
        // Item 6: 100,000 empty lists, each appended to the one below (APPEND needs no mark),
        // crashed the old reader (its recursion) or took quadratic time; tuples of one value
        // nested 100,000 deep and dicts nested by SETITEM likewise.
        let appends = [0x80, 2] + [UInt8](repeating: 0x5D, count: 100_000) + [UInt8](repeating: 0x61, count: 99_999) + [0x2E]
        assertThrows(["nested deeper than 256 levels"]) { _ = try Pickle.load(appends) }
        let tuples = [0x80, 2, 0x4E] + [UInt8](repeating: 0x85, count: 100_000) + [0x2E]
        assertThrows(["nested deeper than 256 levels"]) { _ = try Pickle.load(tuples) }
        let dicts = [0x80, 2] + [UInt8](repeating: 0x7D, count: 50_000) + Array(repeating: [0x4B, 1, 0x73], count: 49_999).flatMap { $0 } + [0x2E]
        // (each SETITEM pops the value 1 and a key, the dict on top, into the dict below it)
        assertThrows(["nested deeper than 256 levels"]) { _ = try Pickle.load(dicts) }
        // 256 levels are read.
        let deep = [0x80, 2] + [UInt8](repeating: 0x5D, count: 256) + [UInt8](repeating: 0x61, count: 255) + [0x2E]
        var v = try Pickle.load(deep), levels = 1
        while let inner = v.items?.first {
            v = inner
            levels += 1
        }
        XCTAssertEqual(levels, 256)
        assertThrows(["nested deeper than 256 levels"]) {
            _ = try Pickle.load([0x80, 2] + [UInt8](repeating: 0x5D, count: 257) + [UInt8](repeating: 0x61, count: 256) + [0x2E])
        }
    }

    func testProtocol0PicklesAreRead() throws {
        // Item 6: the text protocol was refused as "opcode 0x56 is not read (sets, objects, ...)";
        // its strings (UNICODE, raw-unicode-escape) are data like the others.
        let p0 = try read("pyskl-p0.pkl"), p2 = try read("pyskl-2d.pkl")
        XCTAssertEqual(p0.sequences, p2.sequences)
        XCTAssertEqual(p0.classes, p2.classes)
        XCTAssertEqual(p0.imageSize, p2.imageSize)
        // raw-unicode-escape: Latin-1 bytes, \uXXXX, \UXXXXXXXX, an escaped backslash.
        let text: [UInt8] = Array("V".utf8) + [0x63, 0x61, 0x66, 0xE9] + Array(" \\u20ac \\U0001F600 \\\\u0041\n.".utf8)
        XCTAssertEqual(try Pickle.load(text).string, "café € 😀 \\\\u0041")
        assertThrows(["a protocol 0 string has a damaged", "escape"]) { _ = try Pickle.load(Array("V\\u12\n.".utf8)) }
        // Python 2's STRING and INST say what they are.
        assertThrows(["STRING (a Python 2 str", "protocol 2 or later"]) { _ = try Pickle.load(Array("S'a'\n.".utf8)) }
        assertThrows(["creates an instance of os.Thing, which is not run"]) { _ = try Pickle.load(Array("(ios\nThing\n.".utf8)) }
    }

    func testAnnotationsWhoseKeypointsAreAllNaNAreAWarning() throws {
        // Item 8: NaN marks a joint as not seen; an annotation with nothing else was an empty
        // sequence without a word.
        let nan = withUnsafeBytes(of: Float.nan.bitPattern.littleEndian, Array.init)
        let good = withUnsafeBytes(of: Float(100).bitPattern.littleEndian, Array.init)
        func annotation(_ id: String, _ value: [UInt8]) -> [UInt8] {
            [0x7D, 0x28] + P.string("frame_dir") + P.string(id) + P.string("keypoint")
                + P.array(Array(repeating: value, count: 2 * 34).flatMap { $0 }, dtype: "f4", shape: [1, 2, 17, 2]) + [0x75]
        }
        let bytes = [0x80, 2, 0x5D, 0x28] + annotation("lost", nan) + annotation("fine", good) + annotation("gone", nan) + [0x65, 0x2E]
        let report = try PysklFormat.parseReporting(bytes, file: "nan.pkl")
        XCTAssertEqual(report.dataset.sequences.map(\.id), ["lost", "fine", "gone"])
        XCTAssertEqual(report.dataset.sequences[0].present.filter { $0 != 0 }.count, 0)
        XCTAssertEqual(report.warnings.count, 1)
        let text = report.warnings.first?.description ?? ""
        for fragment in ["nan.pkl:", "2 annotations ('lost', 'gone') hold only NaN keypoints", "no joint is seen in any frame"] {
            XCTAssertTrue(text.contains(fragment), text)
        }
        XCTAssertEqual(try PysklFormat.parseReporting(bytes.prefix(4) + annotation("fine", good) + [0x65, 0x2E], file: "ok.pkl").warnings, [])
    }

    func testAnnotationsOfNoFramesOrNoPeopleAreAWarning() throws {
        // Issue 38 finding 15: a keypoint of shape (0, 0, 17, 2) was a sequence of no frames,
        // without a word.
        let good = withUnsafeBytes(of: Float(100).bitPattern.littleEndian, Array.init)
        func annotation(_ id: String, _ shape: [Int]) -> [UInt8] {
            [0x7D, 0x28] + P.string("frame_dir") + P.string(id) + P.string("keypoint")
                + P.array(Array(repeating: good, count: shape.reduce(1, *)).flatMap { $0 }, dtype: "f4", shape: shape) + [0x75]
        }
        let bytes =
            [0x80, 2, 0x5D, 0x28] + annotation("none", [0, 0, 17, 2]) + annotation("fine", [1, 2, 17, 2]) + annotation("nobody", [0, 5, 17, 2])
            + annotation("still", [1, 0, 17, 2]) + [0x65, 0x2E]
        let report = try PysklFormat.parseReporting(bytes, file: "empty.pkl")
        XCTAssertEqual(report.dataset.sequences.map(\.frameCount), [0, 2, 0, 0])
        XCTAssertEqual(report.warnings.map(\.description).filter { $0.contains("no frames or no people") }.count, 1, "\(report.warnings)")
        let text = report.warnings.first?.description ?? ""
        for fragment in ["empty.pkl:", "3 annotations ('none', 'nobody', 'still') have a keypoint array of no frames or no people", "which give no window"] {
            XCTAssertTrue(text.contains(fragment), text)
        }
    }

    /// A label of -1 (an "ignore" index some pipelines write) is an integer: before, the error
    /// said "\"label\" is an integer, not a class index; save integer labels".
    func testANegativeLabelAndANumPyArchiveAreNamed() {
        let point = withUnsafeBytes(of: Float(100).bitPattern.littleEndian, Array.init)
        let annotation =
            [0x7D, 0x28] + P.string("frame_dir") + P.string("clip") + P.string("label") + P.int(-1) + P.string("keypoint")
            + P.array(Array(repeating: point, count: 34).flatMap { $0 }, dtype: "f4", shape: [1, 1, 17, 2]) + [0x75]
        assertThrows(["minus.pkl: annotation 'clip': \"label\" is -1, not a class index from 0 to 999999; save each label as its class's index"]) {
            _ = try PysklFormat.parse([0x80, 2, 0x5D, 0x28] + annotation + [0x65, 0x2E], file: "minus.pkl")
        }
        // An .npz given as a pickle: before, "byte 0: opcode 0x50 is not read (sets, objects, ...)".
        assertThrows(["poses.npz: is a zip archive (a NumPy .npz?), not a pickle; read NumPy files as npz (actiontrain import npz), or give the annotations' .pkl"]) {
            _ = try PysklFormat.parse(try fixtureBytes("coco_small.npz"), file: "poses.npz")
        }
    }

    /// Split lists and annotations that do not match, and an image size of (0, 0): before, a
    /// listed frame_dir without an annotation, and an annotation in no list, went without a
    /// word, and `img_shape` (0, 0) was dropped (the sequence had no image size).
    func testSplitListsThatMissAnnotationsAreWarningsAndAnImageOfNoSizeIsRefused() throws {
        let point = withUnsafeBytes(of: Float(100).bitPattern.littleEndian, Array.init)
        func annotation(_ id: String, shape: [UInt8] = []) -> [UInt8] {
            [0x7D, 0x28] + P.string("frame_dir") + P.string(id) + P.string("label") + P.int(id == "b" ? 1 : 0) + P.string("keypoint")
                + P.array(Array(repeating: point, count: 34).flatMap { $0 }, dtype: "f4", shape: [1, 1, 17, 2]) + shape + [0x75]
        }
        func list(_ ids: [String]) -> [UInt8] { [0x5D, 0x28] + ids.flatMap(P.string) + [0x65] }
        let split = [0x7D, 0x28] + P.string("xsub_train") + list(["a", "gone", "lost"]) + P.string("xsub_val") + list(["b"]) + [0x75]
        let bytes =
            [0x80, 2, 0x7D, 0x28] + P.string("split") + split + P.string("annotations") + [0x5D, 0x28] + annotation("a") + annotation("b")
            + annotation("c") + [0x65, 0x75, 0x2E]
        let report = try PysklFormat.parseReporting(bytes, file: "split.pkl")
        XCTAssertEqual(report.dataset.sequences.map(\.split), ["train", "test", nil])
        XCTAssertEqual(
            report.warnings.map(\.description),
            [
                "warning: split.pkl: split 'xsub_train' lists 2 frame_dirs (of its 3) that no annotation has ('gone', 'lost'): there is nothing to read for them; "
                    + "check that the split lists and the annotations come from the same file",
                "warning: split.pkl: 1 annotation is in none of the split lists xsub_train, xsub_val ('c'): it has no split",
            ])
        let zero = [0x28] + P.int(0) + P.int(0) + [0x74]
        assertThrows(["zero.pkl: annotation 'b': \"img_shape\" is (0, 0), not an image's (height, width) in pixels; save the frames' size, or leave img_shape out"]) {
            _ = try PysklFormat.parse([0x80, 2, 0x5D, 0x28] + annotation("a") + annotation("b", shape: P.string("img_shape") + zero) + [0x65, 0x2E], file: "zero.pkl")
        }
        let size = [0x28] + P.int(480) + P.int(640) + [0x74]
        let sized = try PysklFormat.parse([0x80, 2, 0x5D, 0x28] + annotation("a", shape: P.string("img_shape") + size) + [0x65, 0x2E], file: "ok.pkl")
        XCTAssertEqual(sized.imageSize, [640, 480])
    }

    /// Text that is no pickle: before, "byte 2: memo entry 101 was never stored" (protocol 0
    /// pickles are text, so the reader had tried it as one).
    func testATextFileIsNotABinaryPickle() {
        assertThrows([
            "notes.pkl: is not a binary pickle (protocol 2 or later starts with byte 0x80) and does not read as a text one (byte 2: memo entry 101 was never stored): "
                + "it starts with the text 'hello, these are my annotations'; give the annotations' .pkl as pickle.dump wrote it"
        ]) {
            _ = try PysklFormat.parse(Array("hello, these are my annotations\nline two\n".utf8), file: "notes.pkl")
        }
    }
}
