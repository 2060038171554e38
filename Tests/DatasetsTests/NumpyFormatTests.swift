@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Path of a file in Tests/Fixtures (made by Tests/Fixtures/make_fixtures.py).
func fixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(name).path
}

func fixtureBytes(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture(name))))
}

final class NumpyFormatTests: XCTestCase {
    func checkCocoSmall(_ d: Dataset) {
        XCTAssertEqual(d.skeleton.name, "coco-17", "17 joints x 3 channels infer coco-17")
        XCTAssertEqual(d.sequences.map(\.frameCount), [4, 3, 2], "lengths trim the padding")
        XCTAssertEqual(d.sequences.map(\.label), ["wave", "clap", "wave"])
        XCTAssertEqual(d.sequences.map(\.group), ["7", "7", "8"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "train", "test"])
        XCTAssertEqual(d.frameRate, 30)
        XCTAssertEqual(d.imageSize, [640, 480])
        let s0 = d.sequences[0], s1 = d.sequences[1]
        // X[n, t, j] = [100n + 10t + j + 0.5, 200 + j/4, 0.9]
        XCTAssertEqual(s1.coordinates[(2 * 17 + 3) * 2], 100 + 20 + 3 + 0.5)
        XCTAssertEqual(s1.coordinates[(2 * 17 + 3) * 2 + 1], 200.75)
        XCTAssertEqual(s0.confidence?[5], 0.9)
        XCTAssertEqual(s0.present[1 * 17 + 5], 0, "NaN coordinates are absent")
        XCTAssertEqual(s0.coordinates[(1 * 17 + 5) * 2], 0)
        XCTAssertEqual(s1.present[2 * 17 + 0], 0, "confidence 0 is absent")
        XCTAssertEqual(s1.confidence?[2 * 17 + 0], 0)
        XCTAssertEqual(s1.present.filter { $0 == 1 }.count, 3 * 17 - 1)
    }

    func testNpzStoredAndCompressedGiveTheSameDataset() throws {
        let stored = try NumpyFormat.read(fixture("coco_small.npz"))
        checkCocoSmall(stored)
        var compressed = try NumpyFormat.read(fixture("coco_small_compressed.npz"))
        checkCocoSmall(compressed)
        compressed.name = stored.name
        XCTAssertEqual(compressed.sequences.map(\.id), ["coco_small_compressed-0", "coco_small_compressed-1", "coco_small_compressed-2"])
        for k in compressed.sequences.indices { compressed.sequences[k].id = stored.sequences[k].id }
        XCTAssertTrue(compressed == stored, "deflated and stored archives of the same arrays differ")
    }

    func testIntegerLabelsMapThroughLabelNamesAndNTrainGivesTheSplit() throws {
        let d = try NumpyFormat.read(fixture("natops_ints.npz"))
        XCTAssertEqual(d.skeleton.name, "natops-8")
        XCTAssertEqual(d.classes, ["all-clear", "i-have-command"])
        XCTAssertEqual(d.sequences.map(\.label), ["i-have-command", "all-clear"])
        XCTAssertEqual(d.sequences.map(\.split), ["train", "validation"])
        XCTAssertNil(d.sequences[0].confidence)
        // float64 X = arange / 8: element (n=1, t=1, j=7, c=2) = (1*48 + 1*24 + 7*3 + 2) / 8
        XCTAssertEqual(d.sequences[1].coordinates[(1 * 8 + 7) * 3 + 2], Float(95) / 8)
    }

    func testBareNpyWithLabelsFile() throws {
        let d = try NumpyFormat.read(fixture("bare_X.npy"), options: .init(skeleton: .coco17, labelsPath: fixture("bare_y.npy")))
        XCTAssertEqual(d.sequences.count, 2)
        XCTAssertEqual(d.sequences.map(\.label), ["3", "4"])
        XCTAssertEqual(d.sequences[1].frameCount, 2)
    }

    func testNpyArrayReadsHeaderAndData() throws {
        let a = try NPYArray.read(fixture("bare_y.npy"))
        XCTAssertEqual(a.header.descr, "<i4")
        XCTAssertEqual(a.shape, [2])
        XCTAssertEqual(a.doubles(), [3, 4])
    }

    func testCreateMLLayoutBecomesVisionPixels() throws {
        let d = try CreateMLFormat.read(fixture("createml.npz"))
        XCTAssertEqual(d.skeleton.name, "vision-body-2d")
        XCTAssertEqual(d.imageSize, [640, 480])
        XCTAssertEqual(d.sequences.map(\.label), ["jump", "squat"])
        let sk = Skeleton.visionBody2D
        let s = d.sequences[0]
        let J = sk.jointCount
        // Row k of the 18 is CreateMLFormat.jointOrder[k]; x = linspace(0.1, 0.9, 18)[k] + 0.01 t.
        for (k, name) in CreateMLFormat.jointOrder.enumerated() {
            let j = sk.index(of: name)!
            let x = (Float(0.1) + Float(k) * Float(0.8) / 17)
            assertClose([s.coordinates[j * 2], s.coordinates[j * 2 + 1]], [x * 640, (1 - 0.25) * 480], absolute: 1e-3)
        }
        XCTAssertEqual(s.present[sk.index(of: "root")!], 0, "root is not in the Create ML layout")
        XCTAssertEqual(s.present[J + sk.index(of: "rightElbow")!], 0, "confidence 0 is absent")
        XCTAssertEqual(s.present[J + sk.index(of: "leftElbow")!], 1)
        XCTAssertEqual(d.sequences[1].present[(2 * J)..<(3 * J)].allSatisfy { $0 == 0 }, true, "a padding frame is an empty pose")
        assertClose([d.sequences[1].coordinates[sk.index(of: "nose")! * 2 + 1]], [(1 - 0.75) * 480], absolute: 1e-3)
    }

    func testBadArraysGiveTypedErrors() {
        assertThrows(["bad_dtype.npz", "entry 'X.npy'", "dtype '<i4'", "float32"]) {
            _ = try NumpyFormat.read(fixture("bad_dtype.npz"))
        }
        assertThrows(["bad_shape.npz", "shape [2, 17, 3]", "[sequences, frames, joints, channels]"]) {
            _ = try NumpyFormat.read(fixture("bad_shape.npz"))
        }
        assertThrows(["fortran.npy", "Fortran order", "ascontiguousarray"]) { _ = try NPYArray.read(fixture("fortran.npy")) }
        assertThrows(["object.npy", "pickled", "dtype=str"]) { _ = try NPYArray.read(fixture("object.npy")) }
        assertThrows(["bad_label.npz", "y[1]", "label '5' is not in the class list [a, b]"]) {
            _ = try NumpyFormat.read(fixture("bad_label.npz"))
        }
        assertThrows(["truncated.npz", "corrupt archive", "end-of-central-directory"]) {
            _ = try NumpyFormat.read(fixture("truncated.npz"))
        }
        assertThrows(["damaged_crc.npz", "entry 'X.npy'", "CRC-32 mismatch"]) { _ = try NumpyFormat.read(fixture("damaged_crc.npz")) }
        assertThrows(["ambiguous.npz", "17 joints and 3 channels", "coco-17, vision-body-3d", "name a skeleton"]) {
            // 17 joints x 3 channels is coco-17 with confidence or Vision 3D: the reader must not guess.
            _ = try NumpyFormat.parseArchive(try self.archive(X: [Float](repeating: 0, count: 17 * 3), shape: [1, 1, 17, 3]), file: "ambiguous.npz")
        }
    }

    func testArchiveHeaderErrorsAreTypedNotCrashes() throws {
        var bytes = try fixtureBytes("coco_small.npz")
        // Corrupt the central directory signature.
        let eocd = bytes.count - 22
        let dirOffset = Int(le32(bytes, eocd + 16))
        bytes[dirOffset] = 0
        assertThrows(["in-memory.npz", "corrupt archive", "central directory"]) {
            _ = try NumpyFormat.parseArchive(bytes, file: "in-memory.npz")
        }
    }

    func archive(X: [Float], shape: [Int]) throws -> [UInt8] { try Self.archive(X: X, shape: shape) }

    /// A stored `.npz` with one float32 array `X`, built by hand.
    static func archive(X: [Float], shape: [Int]) throws -> [UInt8] {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(shape.map(String.init).joined(separator: ", ")),), }"
        var header = Array(dict.utf8)
        while (10 + header.count + 1) % 64 != 0 { header.append(0x20) }
        header.append(0x0A)
        var npy: [UInt8] = [0x93]
        npy += Array("NUMPY".utf8)
        npy += [1, 0, UInt8(header.count & 0xFF), UInt8(header.count >> 8)]
        npy += header
        for v in X { withUnsafeBytes(of: v.bitPattern.littleEndian) { npy += $0 } }
        let crc = CRC32.checksum(npy)
        func u16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xFF) } }
        let name = Array("X.npy".utf8)
        let size = u32(UInt32(npy.count))
        var out: [UInt8] = u32(0x0403_4B50)
        for v in [20, 0, 0, 0, 0] { out += u16(v) }
        out += u32(crc)
        out += size
        out += size
        out += u16(name.count)
        out += u16(0)
        out += name
        out += npy
        let dirOffset = out.count
        out += u32(0x0201_4B50)
        for v in [20, 20, 0, 0, 0, 0] { out += u16(v) }
        out += u32(crc)
        out += size
        out += size
        for v in [name.count, 0, 0, 0, 0] { out += u16(v) }
        out += u32(0)
        out += u32(0)
        out += name
        let dirSize = out.count - dirOffset
        out += u32(0x0605_4B50)
        for v in [0, 0, 1, 1] { out += u16(v) }
        out += u32(UInt32(dirSize))
        out += u32(UInt32(dirOffset))
        out += u16(0)
        return out
    }

    func testHandBuiltArchiveRoundTrip() throws {
        let values: [Float] = (0..<(2 * 8 * 3)).map { Float($0) - 0.5 }
        let d = try NumpyFormat.parseArchive(try archive(X: values, shape: [1, 2, 8, 3]), file: "hand.npz")
        XCTAssertEqual(d.skeleton.name, "natops-8")
        XCTAssertEqual(d.sequences[0].coordinates, values)
        XCTAssertNil(d.sequences[0].label)
    }
}

final class InflateTests: XCTestCase {
    /// The recipe of make_fixtures.py's expected_text().
    static let expectedText: [UInt8] = {
        var out = [UInt8]()
        for _ in 0..<400 { out += Array("actiontrain deflate fixture ".utf8) }
        var x: UInt64 = 12345
        for _ in 0..<3000 {
            x = (x &* 1_103_515_245 &+ 12345) & 0x7FFF_FFFF
            out.append(UInt8((x >> 16) & 0xFF))
        }
        for _ in 0..<40 { for b in 0...255 { out.append(UInt8(b)) } }
        let period: [UInt8] = (0..<1000).map { (k: Int) -> UInt8 in UInt8((k * 7 + k / 13) & 0xFF) }
        for _ in 0..<1200 { out += period }
        return out
    }()

    func testInflateMatchesZlibOutput() throws {
        let full = InflateTests.expectedText
        XCTAssertEqual(try Inflate.decompress(try fixtureBytes("inflate_level1.deflate")), full, "dynamic Huffman, level 1")
        XCTAssertEqual(try Inflate.decompress(try fixtureBytes("inflate_level9.deflate")), full, "dynamic Huffman, level 9")
        XCTAssertEqual(try Inflate.decompress(try fixtureBytes("inflate_stored.deflate")), Array(full.prefix(5000)), "stored blocks")
        XCTAssertEqual(try Inflate.decompress(try fixtureBytes("inflate_fixed.deflate")), Array(full.prefix(20000)), "fixed Huffman")
    }

    func testCorruptStreamsThrow() throws {
        let good = try fixtureBytes("inflate_level9.deflate")
        XCTAssertThrowsError(try Inflate.decompress(Array(good.prefix(good.count / 2)))) { e in
            XCTAssertEqual((e as? Inflate.InflateError)?.reason, "the stream ends early")
        }
        XCTAssertThrowsError(try Inflate.decompress([0x07]))  // block type 3
        XCTAssertThrowsError(try Inflate.decompress(good, maxOutput: 1000))
        // A back-reference before the start: fixed block, length 3 distance 1 as the first symbol.
        XCTAssertThrowsError(try Inflate.decompress([0x03, 0x02, 0x00])) { e in
            XCTAssertEqual((e as? Inflate.InflateError)?.reason, "invalid distance too far back")
        }
    }
}
