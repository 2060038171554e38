@testable import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Model files built byte by byte (docs/format.md), one test per way a file can be wrong,
/// and a round-trip property test over random models.
final class ModelFileTests: XCTestCase {
    // MARK: - A file from hand-written parts

    /// The parts of a model file; `bytes` fills in every length and checksum the caller did
    /// not override.
    struct HandMade {
        var magic = ModelFile.magic
        var major: UInt16 = 1, minor: UInt16 = 0, flags: UInt32 = 0
        var header: String
        var data: [UInt8]
        var padHeader = true
        var headerLength: UInt64? = nil, dataLength: UInt64? = nil, total: UInt64? = nil
        var headerCRC: UInt32? = nil, dataCRC: UInt32? = nil

        var bytes: [UInt8] {
            var h = Array(header.utf8)
            if padHeader { while (64 + h.count) % 64 != 0 { h.append(0x20) } }
            var out = magic
            func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
            put(major)
            put(minor)
            put(flags)
            put(headerLength ?? UInt64(h.count))
            put(dataLength ?? UInt64(data.count))
            put(headerCRC ?? CRC32.checksum(h))
            put(dataCRC ?? CRC32.checksum(data))
            put(total ?? UInt64(64 + h.count + data.count))
            out += [UInt8](repeating: 0, count: 16)
            return out + h + data
        }
    }

    /// Little-endian float32 bytes, padded with zeros to a multiple of 64.
    static func tensorBytes(_ values: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for v in values { withUnsafeBytes(of: v.bitPattern.littleEndian) { out += $0 } }
        while out.count % 64 != 0 { out.append(0) }
        return out
    }

    /// A one-joint 2D skeleton, windows of 2 frames of coordinates: input [2, 2].
    static let inputJSON = """
        {"channels":["coordinates"],"skeleton":{"bones":[],"centre":[],"dimensions":2,"joints":["hand"],"mirrorPairs":[],\
        "name":"one","torsoLower":[],"torsoUpper":[],"units":"pixels"},"steps":[],"window":{"frames":2,"mode":"sliding","padding":"empty"}}
        """
    static let coordinatesJSON = #"{"origin":"topLeft","sides":"anatomical","units":"pixels","yAxis":"down"}"#
    static let layersJSON = #"[{"type":"flatten"},{"inputs":4,"outputs":2,"type":"linear"}]"#
    static let tensorsJSON = """
        [{"dtype":"float32","layout":"[outputs, inputs]","length":32,"name":"layers.1.weight","offset":0,"shape":[2,4]},\
        {"dtype":"float32","layout":"[outputs]","length":8,"name":"layers.1.bias","offset":64,"shape":[2]}]
        """
    /// weight [[1, 2, 3, 4], [-1, 0, 0.5, 2]], bias [0.25, -1].
    static let weights: [Float] = [1, 2, 3, 4, -1, 0, 0.5, 2]
    static let bias: [Float] = [0.25, -1]
    static let data = tensorBytes(weights) + tensorBytes(bias)

    static func headerJSON(
        classes: String = #"["open","close"]"#, coordinates: String = coordinatesJSON, format: String = "actiontrain.model",
        input: String = inputJSON, inputShape: String = #"{"channels":2,"time":2}"#, layers: String = layersJSON,
        tensors: String = tensorsJSON
    ) -> String {
        #"{"classes":\#(classes),"coordinateSystem":\#(coordinates),"format":"\#(format)","input":\#(input),"#
            + #""inputShape":\#(inputShape),"layers":\#(layers),"provenance":{"metrics":{},"notes":{},"tool":"hand"},"#
            + #""tensors":\#(tensors)}"#
    }

    static func good() -> HandMade { HandMade(header: headerJSON(), data: data) }

    var scratch: URL!

    override func setUpWithError() throws {
        scratch = try temporaryDirectory("ModelFileTests")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Asserts that loading `bytes` throws a `ModelFileError` satisfying `match` whose message
    /// contains every fragment; from memory, and from a file both read and memory-mapped (the
    /// same error, with the file's name).
    func assertRejects(
        _ bytes: [UInt8], _ fragments: [String], file: StaticString = #filePath, line: UInt = #line,
        _ match: (ModelFileError) -> Bool
    ) {
        var inMemory: ModelFileError?
        do {
            _ = try ModelFile.load(bytes)
            XCTFail("expected an error containing \(fragments)", file: file, line: line)
        } catch let e as ModelFileError {
            inMemory = e
            XCTAssertTrue(match(e), "unexpected error case: \(e)", file: file, line: line)
            for f in fragments where !e.description.contains(f) {
                XCTFail("error '\(e)' does not contain '\(f)'", file: file, line: line)
            }
        } catch {
            XCTFail("expected a ModelFileError, got \(error)", file: file, line: line)
        }
        guard let inMemory, bytes.count < 1 << 23 else { return }
        let path = scratch.appendingPathComponent("case.atm").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)), file: file, line: line)
        for mapped in [false, true] {
            do {
                _ = try ModelFile.load(contentsOf: path, memoryMapped: mapped)
                XCTFail("the file loaded (memoryMapped: \(mapped))", file: file, line: line)
            } catch let e as ModelFileError {
                XCTAssertEqual(e, .inFile(path, inMemory), "memoryMapped: \(mapped)", file: file, line: line)
            } catch {
                XCTFail("expected a ModelFileError, got \(error)", file: file, line: line)
            }
        }
    }

    func assertRejects(
        header: String, data: [UInt8] = ModelFileTests.data, _ fragments: [String], file: StaticString = #filePath,
        line: UInt = #line, _ match: (ModelFileError) -> Bool
    ) {
        assertRejects(HandMade(header: header, data: data).bytes, fragments, file: file, line: line, match)
    }

    func badHeader(_ e: ModelFileError) -> Bool { if case .badHeader = e { return true } else { return false } }
    func badTensor(_ e: ModelFileError) -> Bool { if case .badTensor = e { return true } else { return false } }
    func badPreamble(_ e: ModelFileError) -> Bool { if case .badPreamble = e { return true } else { return false } }
    func limit(_ e: ModelFileError) -> Bool { if case .limitExceeded = e { return true } else { return false } }
    func notModel(_ e: ModelFileError) -> Bool { if case .notAModelFile = e { return true } else { return false } }

    // MARK: - The hand-made file itself

    func testHandMadeFileLoadsAndComputesTheSpecifiedLogits() throws {
        let bytes = Self.good().bytes
        XCTAssertEqual(bytes.count % 64, 0)
        let (header, network) = try ModelFile.load(bytes)
        XCTAssertEqual(header.classes, ["open", "close"])
        XCTAssertEqual(network.tensors.map(\.name), ["layers.1.weight", "layers.1.bias"])
        // x = [[1, -1], [2, 0.5]] flattened to [1, -1, 2, 0.5]:
        // open  = 1 - 2 + 6 + 2 + 0.25 = 7.25; close = -1 + 0 + 1 + 1 - 1 = 0.
        assertClose(network.predictLogits([1, -1, 2, 0.5], batch: 1), [7.25, 0], absolute: 1e-6, relative: 0)
    }

    func testNewerMinorVersionAndUnknownFlagsAndKeysAreAccepted() throws {
        var m = Self.good()
        m.minor = 9
        m.flags = 0x8000_0000
        m.header = m.header.replacingOccurrences(of: #""format":"#, with: #""futureField":{"a":[1,2]},"format":"#)
        let (header, _) = try ModelFile.load(m.bytes)
        XCTAssertEqual(header.classes, ["open", "close"])
    }

    // MARK: - Preamble

    func testEmptyFile() {
        assertRejects([], ["the file is empty"]) { $0 == .notAModelFile("the file is empty") }
    }

    func testWrongMagic() {
        var bytes = Self.good().bytes
        bytes.replaceSubrange(0..<8, with: Array("PK\u{3}\u{4}zip!".utf8))
        let expected = "a model file starts with 89 41 54 4D 0D 0A 1A 0A"
        assertRejects(bytes, ["not an actiontrain model file (wrong magic bytes: the file starts with 50 4B 03 04 7A 69 70 21, a zip archive"]) {
            $0 == .notAModelFile("wrong magic bytes: the file starts with 50 4B 03 04 7A 69 70 21, a zip archive (a NumPy .npz?); \(expected)")
        }
        assertRejects(Array("{\"format\": \"json\"}".utf8), ["starts with 7B 22 66 6F 72 6D 61 74, JSON text", expected], notModel)
        assertRejects(Array("nose,x,y\n".utf8), ["starts with 6E 6F 73 65 2C 78 2C 79, plain text"], notModel)
        assertRejects([0x93] + Array("NUMPY\u{1}\u{0}v".utf8), ["a NumPy .npy array"], notModel)
        assertRejects([0xFF, 0x00, 0x13], ["the file starts with FF 00 13; \(expected)"], notModel)
        // A prefix of the magic is a truncated model file, not a wrong one.
        assertRejects(Array(ModelFile.magic.prefix(3)), ["truncated"]) { $0 == .truncated(expected: 64, got: 3) }
    }

    func testModelFilesAreRecognisedByExtensionOrMagic() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ bytes: [UInt8]) -> String {
            let path = dir.appendingPathComponent(name).path
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            return path
        }
        XCTAssertTrue(ModelFile.looksLikeModelFile(path: file("empty.atm", [])))
        XCTAssertTrue(ModelFile.looksLikeModelFile(path: file("RANDOM.ATM", [1, 2, 3, 4, 5])))
        XCTAssertTrue(ModelFile.looksLikeModelFile(path: file("renamed.bin", Self.good().bytes)))
        XCTAssertTrue(ModelFile.looksLikeModelFile(path: file("damaged", Array(ModelFile.magic.prefix(4)) + [0x0A])))
        XCTAssertFalse(ModelFile.looksLikeModelFile(path: file("data.jsonl", Array("{\"actiontrain\": \"poses\"}".utf8))))
        XCTAssertFalse(ModelFile.looksLikeModelFile(path: file("short", [0x89, 0x41])))
        XCTAssertFalse(ModelFile.looksLikeModelFile(path: dir.appendingPathComponent("missing.jsonl").path))
    }

    func testTextModeDamageIsNamed() {
        // A text-mode transfer turns \r\n into \n: the magic loses a byte.
        let bytes = Self.good().bytes
        var damaged = Array(bytes[0..<4]) + [0x0A] + Array(bytes[6...])
        assertRejects(damaged, ["text-mode transfer"], notModel)
        damaged = bytes
        damaged[7] = 0x0D  // \n -> \r
        assertRejects(damaged, ["text-mode transfer"], notModel)
    }

    func testShorterThanThePreamble() {
        assertRejects(Array(Self.good().bytes[0..<40]), ["truncated", "64 bytes", "has 40"]) { $0 == .truncated(expected: 64, got: 40) }
    }

    func testUnknownMajorVersion() {
        var m = Self.good()
        m.major = 2
        m.minor = 3
        assertRejects(m.bytes, ["version 2.3", "not supported"]) { $0 == .unsupportedVersion(major: 2, minor: 3) }
        m.major = 0
        assertRejects(m.bytes, ["version 0.3"]) { $0 == .unsupportedVersion(major: 0, minor: 3) }
    }

    func testTruncatedFile() {
        let bytes = Self.good().bytes
        assertRejects(Array(bytes.dropLast(70)), ["truncated", "\(bytes.count) bytes", "has \(bytes.count - 70)"]) {
            $0 == .truncated(expected: bytes.count, got: bytes.count - 70)
        }
    }

    func testTrailingBytes() {
        let bytes = Self.good().bytes
        assertRejects(bytes + [0, 0, 0], ["trailing bytes"]) { $0 == .trailingBytes(expected: bytes.count, got: bytes.count + 3) }
    }

    func testAbsurdTotalSize() {
        var m = Self.good()
        m.total = UInt64.max
        assertRejects(m.bytes, ["truncated", "should have \(Int.max) bytes"]) { if case .truncated = $0 { return true } else { return false } }
    }

    func testHugeHeaderLengthIsRejectedBeforeAnyAllocation() {
        var m = Self.good()
        m.headerLength = UInt64.max - 10
        assertRejects(m.bytes, ["header length \(UInt64.max - 10)", "exceeds the file size"], badPreamble)
        m.headerLength = 1 << 40
        assertRejects(m.bytes, ["exceeds the file size"], badPreamble)
    }

    func testSectionLengthsThatDoNotAddUp() {
        var m = Self.good()
        m.dataLength = UInt64(Self.data.count - 64)
        assertRejects(m.bytes, ["is not the file size"], badPreamble)
    }

    func testUnalignedHeader() {
        var m = Self.good()
        m.padHeader = false  // the JSON alone is not a multiple of 64 after the preamble
        XCTAssertNotEqual((64 + m.header.utf8.count) % 64, 0)
        assertRejects(m.bytes, ["64-byte aligned"], badPreamble)
    }

    func testHeaderOverTheLimit() {
        // A real (space-filled) file just over the limit: rejected on its preamble, before the
        // checksum or the JSON is looked at.
        var m = HandMade(header: "", data: [])
        m.padHeader = false
        var bytes = m.bytes
        let h = ModelFile.Limits.headerBytes + 64
        bytes += [UInt8](repeating: 0x20, count: h)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt64(h).littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: UInt64(64 + h).littleEndian, toByteOffset: 40, as: UInt64.self)
        }
        assertRejects(bytes, ["header length is \(h)", "limit is \(ModelFile.Limits.headerBytes)"]) {
            $0 == .limitExceeded(what: "the header length", value: h, limit: ModelFile.Limits.headerBytes)
        }
    }

    // MARK: - Checksums

    func testHeaderBitFlip() {
        var bytes = Self.good().bytes
        bytes[64 + 20] ^= 0x04
        assertRejects(bytes, ["damaged", "header checksum"]) {
            if case .checksumMismatch(section: "header", _, _) = $0 { return true } else { return false }
        }
    }

    func testDataBitFlip() {
        var bytes = Self.good().bytes
        bytes[bytes.count - 100] ^= 0x80
        assertRejects(bytes, ["damaged", "data checksum"]) {
            if case .checksumMismatch(section: "data", _, _) = $0 { return true } else { return false }
        }
    }

    func testWrongStoredChecksum() {
        var m = Self.good()
        m.dataCRC = 0xDEAD_BEEF
        assertRejects(m.bytes, ["stored deadbeef"]) {
            if case .checksumMismatch(section: "data", stored: 0xDEAD_BEEF, _) = $0 { return true } else { return false }
        }
    }

    // MARK: - Values (docs/format.md 1.4, steps 9 and 10)

    func testNonFiniteWeightsAreRefusedNamingTheTensor() {
        for (value, kind) in [(Float.nan, "NaN"), (.infinity, "+infinity"), (-.infinity, "-infinity")] {
            var weights = Self.weights
            weights[6] = value  // [1, 2] of the [2, 4] weight
            weights[7] = .nan
            let data = Self.tensorBytes(weights) + Self.tensorBytes(Self.bias)
            assertRejects(
                header: Self.headerJSON(), data: data,
                ["tensor 'layers.1.weight' holds 2 NaN or infinite values (the first, \(kind), at [1, 2])", "retrain"]
            ) { $0 == .nonFiniteValues(tensor: "layers.1.weight", count: 2, firstIndex: [1, 2], first: kind) }
        }
        var bias = Self.bias
        bias[1] = -.infinity
        assertRejects(header: Self.headerJSON(), data: Self.tensorBytes(Self.weights) + Self.tensorBytes(bias), ["tensor 'layers.1.bias'"]) {
            $0 == .nonFiniteValues(tensor: "layers.1.bias", count: 1, firstIndex: [1], first: "-infinity")
        }
    }

    func testNonFiniteWeightsInALargeModelAreRefusedByEveryReader() throws {
        // Large enough for the helper-thread pass (several 256 KiB blocks), the NaN near the end.
        let m = try ModelFixtures.randomModel(seed: 11)
        let inputs = m.network.inputShape.count, hidden = max(4096, (1 << 19) / inputs)
        let network = try Network(
            layers: [.flatten, .linear(inputs: inputs, outputs: hidden), .relu, .linear(inputs: hidden, outputs: m.classes.count)],
            input: m.network.inputShape)
        network.initialize(seed: 1)
        var bytes = try ModelFile.encode(classes: m.classes, input: m.input, network: network, provenance: .init())
        XCTAssertGreaterThan(bytes.count, 1 << 20)
        let (header, _) = try ModelFile.load(bytes)
        let weight = header.tensors[0]
        let dataStart = bytes.count - Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self) })
        let flat = weight.length / 4 - 3
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: Float.infinity.bitPattern.littleEndian, toByteOffset: dataStart + weight.offset + 4 * flat, as: UInt32.self) }
        let crc = CRC32.checksum(Array(bytes[dataStart...]))
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 36, as: UInt32.self) }
        XCTAssertEqual(weight.shape, [hidden, inputs])
        assertRejects(bytes, ["tensor 'layers.1.weight' holds 1 NaN or infinite value (the first, +infinity"]) {
            $0 == .nonFiniteValues(tensor: "layers.1.weight", count: 1, firstIndex: [flat / inputs, flat % inputs], first: "+infinity")
        }
    }

    func testNonZeroPaddingIsRefused() {
        // The weight is 32 bytes: bytes 32..<64 of the data section are padding, as are 72..<128.
        for (offset, after) in [(32, "layers.1.weight"), (63, "layers.1.weight"), (72, "layers.1.bias"), (127, "layers.1.bias")] {
            var data = Self.data
            data[offset] = 0x01
            assertRejects(header: Self.headerJSON(), data: data, ["non-zero padding byte at data offset \(offset), after tensor '\(after)'"]) {
                $0 == .nonZeroPadding(after: after, offset: offset)
            }
        }
        // A NaN's bytes in the padding: still a padding error.
        var data = Self.data
        data.replaceSubrange(32..<36, with: [0x00, 0x00, 0xC0, 0x7F])
        assertRejects(header: Self.headerJSON(), data: data, ["padding"]) { $0 == .nonZeroPadding(after: "layers.1.weight", offset: 34) }
    }

    func testWriterRefusesNonFiniteWeights() throws {
        let m = try ModelFixtures.randomModel(seed: 3)
        let t = m.network.tensors[m.network.tensors.count - 1]
        m.network.parameters[t.offset + t.count - 1] = .nan
        assertThrows(["tensor '\(t.name)' holds 1 NaN or infinite value (the first, NaN, at", "lower the learning rate"]) {
            _ = try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init())
        }
    }

    // MARK: - Header JSON

    func testHeaderThatIsNotJSON() {
        assertRejects(header: "{\"classes\": [", ["header is invalid: the header is not valid JSON"], badHeader)
    }

    func testValidNumbersOutOfRangeAreNamedNotCalledInvalidJSON() {
        // Issue 26 item 8: Foundation says "not valid JSON" of a number its field cannot hold.
        let layers = #"[{"type":"flatten"},{"inputs":OUT,"outputs":2,"type":"linear"}]"#
        for (value, message) in [
            ("1e99", "layers[1].inputs: the number 1e+99 is out of range for its field (an integer, or a 32-bit float)"),
            ("99999999999999999999", "layers[1].inputs: the number 99999999999999999999 is out of range for its field (an integer, or a 32-bit float)"),
            ("4.5", "layers[1].inputs: the number 4.5 is not an integer, which its field needs"),
            ("1e400", "the number 1e400 is beyond the range of a double"),
        ] {
            assertRejects(header: Self.headerJSON(layers: layers.replacingOccurrences(of: "OUT", with: value)), [message], badHeader)
        }
        assertRejects(header: Self.headerJSON(inputShape: #"{"channels":2,"time":1e30}"#), ["inputShape.time: the number 1e+30 is out of range"], badHeader)
    }

    func testDeeplyNestedJSONIsRejectedBeforeDecoding() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        assertRejects(
            header: Self.headerJSON().replacingOccurrences(of: #""format":"#, with: #""x":\#(deep),"format":"#),
            ["JSON nesting depth is 65", "limit is 64"], limit)
    }

    func testMissingField() {
        let h = Self.headerJSON().replacingOccurrences(of: #""classes":["open","close"],"#, with: "")
        assertRejects(header: h, ["the header has no 'classes'"], badHeader)
    }

    func testWrongFormatName() {
        assertRejects(header: Self.headerJSON(format: "safetensors"), ["format is 'safetensors'"], badHeader)
    }

    func testClassesEmptyOrRepeated() {
        assertRejects(header: Self.headerJSON(classes: "[]"), ["no classes"], badHeader)
        assertRejects(header: Self.headerJSON(classes: #"["a","a"]"#), ["not distinct"], badHeader)
    }

    func testUnknownLayerTypeIsNamed() {
        let layers = #"[{"type":"flatten"},{"heads":4,"type":"transformer"}]"#
        assertRejects(header: Self.headerJSON(layers: layers), ["layers[1]", "unknown layer type 'transformer'"], badHeader)
    }

    func testUnknownPreprocessingStepIsNamed() {
        let input = Self.inputJSON.replacingOccurrences(of: #""steps":[]"#, with: #""steps":[{"whiten":{"matrix":[1]}}]"#)
        assertRejects(
            header: Self.headerJSON(input: input),
            ["input.steps[0]: unknown preprocessing step 'whiten'", "knows centre, scaleByTorso, divide, alignFacing and fillGaps"], badHeader)
    }

    func testUnknownChannelBlockIsNamed() {
        let input = Self.inputJSON.replacingOccurrences(of: #"["coordinates"]"#, with: #"["velocity"]"#)
        assertRejects(header: Self.headerJSON(input: input), ["input.channels[0]", "velocity"], badHeader)
    }

    func testCoordinateSystemMustMatchTheUnits() {
        let metres = #"{"origin":"source","sides":"anatomical","units":"metres","yAxis":"source"}"#
        assertRejects(
            header: Self.headerJSON(coordinates: metres),
            ["coordinateSystem (units metres, origin source", "does not match the skeleton's units 'pixels'"], badHeader)
    }

    func testInputShapeMustMatchTheInputDescription() {
        let layers = #"[{"type":"flatten"},{"inputs":6,"outputs":2,"type":"linear"}]"#
        assertRejects(
            header: Self.headerJSON(inputShape: #"{"channels":3,"time":2}"#, layers: layers),
            ["inputShape [2, 3] does not match the input description: 2 frames of 2 channels"], badHeader)
    }

    func testAbsurdInputShape() {
        assertRejects(header: Self.headerJSON(inputShape: #"{"channels":2,"time":9000000000}"#), ["inputShape.time is 9000000000"], limit)
        assertRejects(header: Self.headerJSON(inputShape: #"{"channels":-2,"time":2}"#), ["must be positive"], badHeader)
    }

    func testAbsurdLayerSizes() {
        let huge = #"[{"type":"flatten"},{"inputs":4,"outputs":4611686018427387904,"type":"linear"}]"#
        assertRejects(header: Self.headerJSON(layers: huge), ["layers[1] (linear) outputs is 4611686018427387904"], limit)
        let zero = #"[{"type":"flatten"},{"inputs":4,"outputs":0,"type":"linear"}]"#
        assertRejects(header: Self.headerJSON(layers: zero), ["outputs must be positive, got 0"], badHeader)
    }

    func testLayerInputMismatch() {
        let layers = #"[{"type":"flatten"},{"inputs":5,"outputs":2,"type":"linear"}]"#
        assertRejects(header: Self.headerJSON(layers: layers), ["layers[1] (linear): expects 5 channels, receives [1, 4]"], badHeader)
    }

    func testNetworkOutputMustBeOneLogitPerClass() {
        assertRejects(header: Self.headerJSON(classes: #"["a","b","c"]"#), ["gives [1, 2] per window; expected [1, 3]"], badHeader)
        let noFlatten = #"[{"inputs":2,"outputs":2,"type":"linear"}]"#
        assertRejects(header: Self.headerJSON(layers: noFlatten), ["gives [2, 2] per window"], badHeader)
    }

    func testConvKernelLongerThanItsInput() {
        let layers = #"[{"dilation":1,"inputs":2,"kernel":5,"outputs":2,"padding":0,"stride":1,"type":"conv1d"},{"type":"flatten"}]"#
        assertRejects(header: Self.headerJSON(layers: layers), ["layers[0] (conv1d)", "fewer than the dilated kernel span 5"], badHeader)
    }

    func testDropoutRateOutOfRange() {
        let layers = #"[{"rate":1.5,"type":"dropout"},{"type":"flatten"},{"inputs":4,"outputs":2,"type":"linear"}]"#
        assertRejects(header: Self.headerJSON(layers: layers), ["rate 1.5 must be in [0, 1)"], badHeader)
    }

    /// The optional `streaming` field (3.4): read by both decoders, absent in older files,
    /// and every value outside its bound refused, naming it.
    func testTheStreamingFieldIsReadAndChecked() throws {
        let fit = Self.inputJSON.replacingOccurrences(of: #""mode":"sliding""#, with: #""mode":"fit""#)
        func header(_ streaming: String, input: String = fit) -> String {
            Self.headerJSON(input: input).replacingOccurrences(of: #""tensors":"#, with: #""streaming":\#(streaming),"tensors":"#)
        }
        let good = #"{"calibration":"training","clipFrameRate":20,"clipFrames":51,"enter":[0.35,0.6],"exit":[0.233,0.4]}"#
        let loaded = try ModelFile.load(HandMade(header: header(good), data: Self.data).bytes).header
        XCTAssertEqual(
            loaded.streaming,
            ModelHeader.Streaming(clipFrames: 51, clipFrameRate: 20, enter: [0.35, 0.6], exit: [0.233, 0.4], calibration: "training"))
        XCTAssertEqual(loaded.streaming?.clipSeconds, 2.5)
        let bytes = Array(header(good).utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, try bytes.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) })
        XCTAssertNil(try ModelFile.load(Self.good().bytes).header.streaming)
        XCTAssertNotNil(try ModelFile.load(HandMade(header: header(#"{"future":1}"#), data: Self.data).bytes).header.streaming)
        for (field, fragments, input) in [
            (#"{"clipFrames":51}"#, ["streaming: clipFrames is for whole-clip (fit) windows"], Self.inputJSON),
            (#"{"clipFrames":0}"#, ["clipFrames 0 must be 1 to 100000"], fit),
            (#"{"clipFrames":100001}"#, ["clipFrames 100001 must be 1 to 100000"], fit),
            (#"{"clipFrameRate":0.001}"#, ["clipFrameRate 0.001 must be 0.01 to 10000"], fit),
            (#"{"enter":[0.5,0.5]}"#, ["enter and exit go together"], fit),
            (#"{"enter":[0.5],"exit":[0.2]}"#, ["one threshold per class (2)"], fit),
            (#"{"enter":[0.5,0.5],"exit":[0.2,0.6]}"#, ["class 1: the thresholds need 0 <= exit <= enter"], fit),
            (#"{"enter":[0,0.5],"exit":[0,0.2]}"#, ["class 0: the thresholds need"], fit),
        ] {
            assertRejects(header: header(field, input: input), fragments, badHeader)
        }
    }

    /// `streaming.frames` (format 1.5, 3.4): frame-level event numbers, read alike by both
    /// decoders, ignored as a whole by a reader that does not know it, every value checked.
    func testTheFrameLevelEventNumbersAreReadAndChecked() throws {
        func header(_ frames: String) -> String {
            Self.headerJSON().replacingOccurrences(of: #""tensors":"#, with: #""streaming":{"frames":\#(frames)},"tensors":"#)
        }
        func frames(_ change: (inout [String: String]) -> Void) -> String {
            var keys = [
                "enter": "[0.4,0.35]", "exit": "[0.267,0.233]", "hold": "[0.2,0.45]", "leadIn": "[0,0.05]", "leadOut": "[0.1,0]", "lookAhead": "1.875",
                "minimumDuration": "[1.25,0.5]", "stillBelow": "0.195",
            ]
            change(&keys)
            return "{" + keys.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        }
        let good = header(frames { _ in })
        let loaded = try ModelFile.load(HandMade(header: good, data: Self.data).bytes).header
        XCTAssertEqual(
            loaded.streaming?.frames,
            ModelHeader.Streaming.Frames(
                lookAhead: 1.875, stillBelow: 0.195, enter: [0.4, 0.35], exit: [0.267, 0.233], hold: [0.2, 0.45], leadIn: [0, 0.05], leadOut: [0.1, 0],
                minimumDuration: [1.25, 0.5]))
        let bytes = Array(good.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, try bytes.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) })
        XCTAssertNotNil(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, "the fast reader takes it")
        // Written and read back.
        let network = try Network(layers: [.flatten, .linear(inputs: 4, outputs: 2)], input: Shape(time: 2, channels: 2))
        let written = try ModelFile.encode(
            classes: ["a", "b"], input: loaded.input, network: network, provenance: .init(), streaming: loaded.streaming)
        XCTAssertEqual(try ModelFile.load(written).header.streaming, loaded.streaming)
        XCTAssertEqual(Array(written[8..<12]), [1, 0, 8, 0], "version 1.8")
        // A file before 1.7 has no switch evidence: the runtime's default applies.
        XCTAssertNil(loaded.streaming?.frames?.switchEvidence)
        XCTAssertEqual(
            FrameOptions(try XCTUnwrap(loaded.streaming?.frames), classes: ["a", "b"]).switchEvidence, FrameSegmenter.Settings.defaultSwitchEvidence)
        // The switch evidence (1.7): read by both decoders, written and read back, used.
        let fitted = header(frames { $0["switchEvidence"] = "0.15" })
        let withEvidence = try ModelFile.load(HandMade(header: fitted, data: Self.data).bytes).header
        XCTAssertEqual(withEvidence.streaming?.frames?.switchEvidence, 0.15)
        let fittedBytes = Array(fitted.utf8)
        XCTAssertEqual(
            fittedBytes.withUnsafeBytes { HeaderJSON.decode($0) }, try fittedBytes.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) })
        let rewritten = try ModelFile.encode(
            classes: ["a", "b"], input: withEvidence.input, network: network, provenance: .init(), streaming: withEvidence.streaming)
        XCTAssertEqual(try ModelFile.load(rewritten).header.streaming?.frames?.switchEvidence, 0.15)
        XCTAssertTrue(String(decoding: rewritten, as: UTF8.self).contains(#""switchEvidence":0.15"#))
        XCTAssertFalse(String(decoding: written, as: UTF8.self).contains("switchEvidence"), "absent when unknown, as before 1.7")
        XCTAssertEqual(FrameOptions(try XCTUnwrap(withEvidence.streaming?.frames), classes: ["a", "b"]).switchEvidence, 0.15)
        for (field, fragment) in [
            (frames { $0["hold"] = "[0.2]" }, "frames: hold needs one value per class (2), got 1"),
            (frames { $0["enter"] = "[0.4,1.5]" }, "frames: class 1: the thresholds need"),
            (frames { $0["exit"] = "[0.5,0.2]" }, "frames: class 0: the thresholds need"),
            (frames { $0["leadOut"] = "[-0.1,0]" }, "frames: class 0: leadOut -0.1 must be 0 to 3600 seconds"),
            (frames { $0["minimumDuration"] = "[1,4000]" }, "frames: class 1: minimumDuration 4000.0 must be 0 to 3600 seconds"),
            (frames { $0["lookAhead"] = "0" }, "frames: lookAhead 0.0 must be more than 0 and at most 60 seconds"),
            (frames { $0["stillBelow"] = "-1" }, "frames: stillBelow -1.0 must be 0 to 1e6"),
            (frames { $0["switchEvidence"] = "-0.1" }, "frames: switchEvidence -0.1 must be 0 to 3600 score-seconds"),
            (frames { $0["switchEvidence"] = "4000" }, "frames: switchEvidence 4000.0 must be 0 to 3600 score-seconds"),
        ] {
            assertRejects(header: header(field), [fragment], badHeader)
        }
        assertRejects(header: header(frames { $0["hold"] = nil }), ["hold"], badHeader)
    }

    /// The optional `poseStatistics` field (3.5, format 1.4): read by both decoders, absent in
    /// older files, a value of the wrong count or outside its bound refused, naming it.
    func testThePoseStatisticsFieldIsReadAndChecked() throws {
        func header(_ statistics: String) -> String {
            Self.headerJSON().replacingOccurrences(of: #""provenance":"#, with: #""poseStatistics":\#(statistics),"provenance":"#)
        }
        func field(_ replacing: String = "", with: String = "") -> String {
            let good =
                #"{"centreMean":[320.5,240],"centreSpread":[12,3.5],"confidence":[0.9],"motion":[1.25],"offsetMean":[0,0],"offsetSpread":[0,0],"present":[0.75],"windows":7}"#
            return replacing.isEmpty ? good : good.replacingOccurrences(of: replacing, with: with)
        }
        let loaded = try ModelFile.load(HandMade(header: header(field()), data: Self.data).bytes).header
        XCTAssertEqual(
            loaded.poseStatistics,
            ModelHeader.PoseStatistics(
                windows: 7, centreMean: [320.5, 240], centreSpread: [12, 3.5], offsetMean: [0, 0], offsetSpread: [0, 0], present: [0.75],
                confidence: [0.9], motion: [1.25]))
        let bytes = Array(header(field()).utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, try bytes.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) })
        XCTAssertNil(try ModelFile.load(Self.good().bytes).header.poseStatistics)
        for (edit, fragments) in [
            ((#""windows":7"#, #""windows":0"#), ["poseStatistics: windows must be at least 1, got 0"]),
            ((#""centreMean":[320.5,240]"#, #""centreMean":[320.5]"#), ["poseStatistics: centreMean needs 2 values (1 joints, 2D), got 1"]),
            ((#""offsetMean":[0,0]"#, #""offsetMean":[0,0,0]"#), ["offsetMean needs 2 values"]),
            ((#""present":[0.75]"#, #""present":[1.5]"#), ["poseStatistics: present[0] is 1.5; it must be finite and at least 0 and at most 1"]),
            ((#""centreSpread":[12,3.5]"#, #""centreSpread":[12,-1]"#), ["centreSpread[1] is -1.0; it must be finite and at least 0"]),
            ((#""motion":[1.25]"#, #""motion":[1e400]"#), ["the number 1e400 is beyond the range of a double"]),
        ] {
            assertRejects(header: header(field(edit.0, with: edit.1)), fragments, badHeader)
        }
    }

    /// The optional `calibration` field (3.6, format 1.6): read by both decoders, written and
    /// read back, absent in older files, a value outside its bound refused, naming it.
    func testTheCalibrationFieldIsReadAndChecked() throws {
        func header(_ calibration: String) -> String {
            Self.headerJSON().replacingOccurrences(of: #""provenance":"#, with: #""calibration":\#(calibration),"provenance":"#)
        }
        func field(_ replacing: String = "", with: String = "") -> String {
            let good =
                #"{"eceAfter":0.0125,"eceBefore":0.0625,"evidence":"outOfFold","folds":3,"logLossAfter":0.25,"logLossBefore":0.375,"method":"temperature","temperature":0.75,"windows":180}"#
            return replacing.isEmpty ? good : good.replacingOccurrences(of: replacing, with: with)
        }
        let loaded = try ModelFile.load(HandMade(header: header(field()), data: Self.data).bytes).header
        let expected = ModelHeader.Calibration(
            temperature: 0.75, evidence: "outOfFold", folds: 3, windows: 180, logLossBefore: 0.375, logLossAfter: 0.25, eceBefore: 0.0625,
            eceAfter: 0.0125)
        XCTAssertEqual(loaded.calibration, expected)
        let bytes = Array(header(field()).utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, try bytes.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) })
        XCTAssertNotNil(bytes.withUnsafeBytes { HeaderJSON.decode($0) }, "the fast reader takes it")
        XCTAssertNil(try ModelFile.load(Self.good().bytes).header.calibration)
        let network = try Network(layers: [.flatten, .linear(inputs: 4, outputs: 2)], input: Shape(time: 2, channels: 2))
        let written = try ModelFile.encode(classes: ["a", "b"], input: loaded.input, network: network, provenance: .init(), calibration: expected)
        XCTAssertEqual(try ModelFile.load(written).header.calibration, expected)
        for (edit, fragments) in [
            ((#""temperature":0.75"#, #""temperature":0"#), ["calibration: temperature must be positive and finite, got 0.0"]),
            ((#""temperature":0.75"#, #""temperature":-2"#), ["calibration: temperature must be positive and finite, got -2.0"]),
            ((#""method":"temperature""#, #""method":"vector""#), ["calibration: unknown method 'vector'"]),
            ((#""evidence":"outOfFold""#, #""evidence":"test""#), ["calibration: unknown evidence 'test'"]),
            ((#""windows":180"#, #""windows":0"#), ["calibration: windows must be positive, got 0"]),
            ((#""folds":3"#, #""folds":1"#), ["calibration: folds must be at least 2, got 1"]),
            ((#""eceAfter":0.0125"#, #""eceAfter":-0.5"#), ["calibration: eceAfter must be a finite number ≥ 0, got -0.5"]),
        ] {
            assertRejects(header: header(field(edit.0, with: edit.1)), fragments, badHeader)
        }
        XCTAssertThrowsError(
            try ModelFile.encode(
                classes: ["a", "b"], input: loaded.input, network: network, provenance: .init(),
                calibration: ModelHeader.Calibration(
                    temperature: .infinity, evidence: "validation", windows: 4, logLossBefore: 1, logLossAfter: 1, eceBefore: 0, eceAfter: 0))
        ) { XCTAssertTrue("\($0)".contains("temperature must be positive and finite"), "\($0)") }
    }

    /// Every number of the header outside its bound (docs/format.md 2.1) is refused, naming it.
    func testHeaderNumbersOutsideTheirBounds() {
        func window(_ json: String) -> String {
            Self.inputJSON.replacingOccurrences(of: #""window":{"frames":2,"#, with: #""window":{\#(json)"frames":2,"#)
        }
        for rate in ["1e300", "0.001", "10001", "-30", "0"] {
            assertRejects(
                header: Self.headerJSON(input: window(#""frameRate":\#(rate),"#)),
                ["the input description is invalid: window: frame rate must be 0.01 to 10000 frames per second"], badHeader)
            assertRejects(
                header: Self.headerJSON().replacingOccurrences(of: #""layers":"#, with: #""trainingFrameRate":\#(rate),"layers":"#),
                ["trainingFrameRate", "must be 0.01 to 10000 frames per second"], badHeader)
        }
        let divide = Self.inputJSON.replacingOccurrences(of: #""steps":[]"#, with: #""steps":[{"by":[1920,0.0000001],"op":"divide"}]"#)
        assertRejects(header: Self.headerJSON(input: divide), ["preprocessing step 0: divide needs divisors from 1e-06 to 1000000"], badHeader)
        func norm(_ epsilon: String) -> String {
            #"[{"channels":2,"epsilon":\#(epsilon),"type":"layerNorm"},{"type":"flatten"},{"inputs":4,"outputs":2,"type":"linear"}]"#
        }
        let normTensors = tensors([
            ("layers.0.gamma", [2], "[channels]", 0, 8, "float32"), ("layers.0.beta", [2], "[channels]", 64, 8, "float32"),
            ("layers.2.weight", [2, 4], "[outputs, inputs]", 128, 32, "float32"), ("layers.2.bias", [2], "[outputs]", 192, 8, "float32"),
        ])
        let normData = Self.tensorBytes([1, 1]) + Self.tensorBytes([0, 0]) + Self.data
        for epsilon in ["2", "1e-13", "0"] {
            assertRejects(
                header: Self.headerJSON(layers: norm(epsilon), tensors: normTensors), data: normData,
                ["layers[0] (layerNorm): epsilon", "must be in [1e-12, 1.0]"], badHeader)
        }
        XCTAssertNoThrow(try ModelFile.load(HandMade(header: Self.headerJSON(layers: norm("1e-5"), tensors: normTensors), data: normData).bytes))
        func conv(kernel: Int = 1, stride: Int = 1, dilation: Int = 1, padding: Int = 0) -> String {
            #"[{"dilation":\#(dilation),"inputs":2,"kernel":\#(kernel),"outputs":2,"padding":\#(padding),"stride":\#(stride),"type":"conv1d"},{"type":"flatten"}]"#
        }
        for (field, layers) in [
            ("kernel", conv(kernel: 200_001, padding: 100_000)), ("stride", conv(stride: 100_001)), ("dilation", conv(dilation: 1 << 20)),
            ("padding", conv(padding: 100_001)),
        ] {
            assertRejects(header: Self.headerJSON(layers: layers), ["layers[0] (conv1d) \(field) is", "the limit is 100000"], limit)
        }
        let metric = Self.headerJSON().replacingOccurrences(of: #""metrics":{}"#, with: #""metrics":{"loss":1e999}"#)
        assertRejects(header: metric, ["header is invalid"], badHeader)  // beyond binary64: JSONDecoder refuses the number
    }

    func testDuplicateKeysAreRefusedWhereverTheyAre() {
        let top = Self.headerJSON().replacingOccurrences(of: #""format":"#, with: #""classes":["x","y"],"format":"#)
        assertRejects(header: top, ["header is invalid: the header has the key 'classes' twice"]) {
            $0 == .badHeader("the header has the key 'classes' twice")
        }
        let nested = Self.headerJSON(input: Self.inputJSON.replacingOccurrences(of: #""name":"one","#, with: #""name":"one","name":"two","#))
        assertRejects(header: nested, ["input.skeleton has the key 'name' twice"], badHeader)
        let inArray = Self.headerJSON(layers: #"[{"type":"flatten"},{"inputs":4,"outputs":2,"outputs":3,"type":"linear"}]"#)
        assertRejects(header: inArray, ["layers[1] has the key 'outputs' twice"], badHeader)
        // The same key spelled with an escape, and a duplicate in an object a reader ignores.
        let escaped = Self.headerJSON().replacingOccurrences(of: #""format":"#, with: #""cl\u0061sses":["x","y"],"format":"#)
        assertRejects(header: escaped, ["the header has the key 'classes' twice"], badHeader)
        let unknown = Self.headerJSON().replacingOccurrences(of: #""format":"#, with: #""future":{"a":1,"a":2},"format":"#)
        assertRejects(header: unknown, ["future has the key 'a' twice"], badHeader)
    }

    func testResidualBranchesMustAgree() {
        let layers = #"[{"body":[{"inputs":2,"outputs":3,"type":"linear"}],"shortcut":[],"type":"residual"},{"type":"flatten"}]"#
        assertRejects(header: Self.headerJSON(layers: layers), ["the body gives [2, 3] per window but the shortcut gives [2, 2]"], badHeader)
    }

    func testResidualNestingLimit() {
        var layer = #"{"type":"relu"}"#
        for _ in 0..<9 { layer = #"{"body":[\#(layer)],"shortcut":[],"type":"residual"}"# }
        let layers = "[\(layer),{\"type\":\"flatten\"},{\"inputs\":4,\"outputs\":2,\"type\":\"linear\"}]"
        assertRejects(header: Self.headerJSON(layers: layers), ["the layer nesting depth is 9", "limit is 8"], limit)
    }

    func testActivationsOfAllLayersAreBounded() {
        // A conv to 2^22 channels gives [2, 2^22] = 2^23 values per window (and 4 of im2col),
        // within the per-layer limit; the seventh ReLU after it brings the sum to 8 · 2^23 + 4 > 2^26.
        let wide = #"{"dilation":1,"inputs":2,"kernel":1,"outputs":4194304,"padding":0,"stride":1,"type":"conv1d"}"#
        let relus = Array(repeating: #"{"type":"relu"}"#, count: 8).joined(separator: ",")
        let layers = "[\(wide),\(relus)," + #"{"type":"globalMaxPool"},{"inputs":4194304,"outputs":2,"type":"linear"}]"#
        assertRejects(
            header: Self.headerJSON(layers: layers),
            ["the activations of the layers up to layers[7] (relu), per window, is \((8 << 23) + 4)", "limit is \(1 << 26)"], limit)
    }

    func testTooManyLayers() {
        let relus = Array(repeating: #"{"type":"relu"}"#, count: 1100).joined(separator: ",")
        let layers = "[\(relus),{\"type\":\"flatten\"},{\"inputs\":4,\"outputs\":2,\"type\":\"linear\"}]"
        assertRejects(header: Self.headerJSON(layers: layers), ["number of layers is 1025"], limit)
    }

    // MARK: - Tensor table

    typealias Entry = (name: String, shape: [Int], layout: String, offset: Int, length: Int, dtype: String)

    func tensors(_ entries: [Entry]) -> String {
        "["
            + entries.map {
                #"{"dtype":"\#($0.dtype)","layout":"\#($0.layout)","length":\#($0.length),"name":"\#($0.name)","offset":\#($0.offset),"shape":\#($0.shape)}"#
            }.joined(separator: ",") + "]"
    }

    func table(
        weightOffset: Int = 0, weightLength: Int = 32, weightShape: [Int] = [2, 4], weightName: String = "layers.1.weight",
        weightLayout: String = "[outputs, inputs]", dtype: String = "float32", biasOffset: Int = 64
    ) -> String {
        tensors([
            (weightName, weightShape, weightLayout, weightOffset, weightLength, dtype),
            ("layers.1.bias", [2], "[outputs]", biasOffset, 8, "float32"),
        ])
    }

    func testWrongDtype() {
        assertRejects(
            header: Self.headerJSON(tensors: table(weightLength: 16, dtype: "float16")),
            ["tensor 'layers.1.weight'", "dtype 'float16' is not float32"], badTensor)
    }

    func testLengthThatDoesNotMatchTheShape() {
        assertRejects(header: Self.headerJSON(tensors: table(weightLength: 36)), ["length 36 is not 4 x 8 values"], badTensor)
    }

    func testAbsurdTensorShapes() {
        assertRejects(
            header: Self.headerJSON(tensors: table(weightLength: 0, weightShape: [1 << 20, 1 << 20])),
            ["values in tensor 'layers.1.weight' is 1099511627776"], limit)
        assertRejects(header: Self.headerJSON(tensors: table(weightShape: [Int.max, Int.max])), ["values in tensor"], limit)
        assertRejects(header: Self.headerJSON(tensors: table(weightShape: [2, -4])), ["shape [2, -4] has a size below 1"], badTensor)
        assertRejects(header: Self.headerJSON(tensors: table(weightShape: [])), ["rank 0"], badTensor)
        assertRejects(header: Self.headerJSON(tensors: table(weightShape: [1, 1, 1, 2, 4])), ["rank 5"], badTensor)
    }

    func testOverlappingOffsets() {
        assertRejects(
            header: Self.headerJSON(tensors: table(biasOffset: 16)),
            ["tensor 'layers.1.bias'", "offset 16 overlaps the previous tensor (expected 64)"], badTensor)
    }

    func testGapBetweenTensors() {
        assertRejects(header: Self.headerJSON(tensors: table(biasOffset: 128)), ["offset 128 leaves a gap (expected 64)"], badTensor)
    }

    func testOffsetPastTheEnd() {
        assertRejects(
            header: Self.headerJSON(), data: Self.tensorBytes(Self.weights),
            ["tensor 'layers.1.bias'", "run past the end of the data section (64 bytes)"], badTensor)
        assertRejects(header: Self.headerJSON(tensors: table(weightOffset: -64)), ["offset -64 overlaps"], badTensor)
    }

    func testUnreferencedBytesAtTheEnd() {
        assertRejects(
            header: Self.headerJSON(), data: Self.data + [UInt8](repeating: 0, count: 64),
            ["data section has 192 bytes but its tensors end at 128"], badPreamble)
    }

    func testTensorNamesMustMatchTheLayers() {
        assertRejects(
            header: Self.headerJSON(tensors: table(weightName: "layers.0.weight")),
            ["expected 'layers.1.weight' [2, 4] [outputs, inputs] here, found 'layers.0.weight'"], badTensor)
        // Swapped order: the bias where the weight should be.
        let swapped = tensors([
            ("layers.1.bias", [2], "[outputs]", 0, 8, "float32"),
            ("layers.1.weight", [2, 4], "[outputs, inputs]", 64, 32, "float32"),
        ])
        assertRejects(
            header: Self.headerJSON(tensors: swapped), data: Self.tensorBytes(Self.bias) + Self.tensorBytes(Self.weights),
            ["expected 'layers.1.weight'", "found 'layers.1.bias'"], badTensor)
    }

    func testTensorShapesAndLayoutsMustMatchTheLayers() {
        assertRejects(
            header: Self.headerJSON(tensors: table(weightShape: [4, 2], weightLayout: "[inputs, outputs]")),
            ["found 'layers.1.weight' [4, 2] [inputs, outputs]"], badTensor)
        assertRejects(header: Self.headerJSON(tensors: table(weightShape: [8])), ["found 'layers.1.weight' [8]"], badTensor)
    }

    func testMissingTensor() {
        let onlyWeight = tensors([("layers.1.weight", [2, 4], "[outputs, inputs]", 0, 32, "float32")])
        assertRejects(
            header: Self.headerJSON(tensors: onlyWeight), data: Self.tensorBytes(Self.weights),
            ["the layers need 10 parameter values, the tensors hold 8"], badHeader)
    }

    // MARK: - Files on disk

    func testMissingFileAndDirectoryAreNamed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("nope.atm").path
        assertThrows([missing, "no such file"]) { _ = try ActionModel(contentsOf: missing) }
        assertThrows([dir.path, "not a regular file"]) { _ = try ActionModel(contentsOf: dir.path) }
    }

    func testFileOverTheSizeLimitIsRefusedWithoutReadingIt() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("huge.atm").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(Self.good().bytes)))
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: UInt64(ModelFile.Limits.fileBytes) + 1)  // sparse: nothing is written
        try handle.close()
        for mapped in [true, false] {
            assertThrows([path, "the file size is \(ModelFile.Limits.fileBytes + 1)"]) {
                _ = try ModelFile.load(contentsOf: path, memoryMapped: mapped)
            }
        }
    }

    func testErrorsFromDiskNameTheFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("cut.atm").path
        let n = Self.good().bytes.count
        try Data(Self.good().bytes.dropLast(1)).write(to: URL(fileURLWithPath: path))
        for mapped in [true, false] {
            do {
                _ = try ModelFile.load(contentsOf: path, memoryMapped: mapped)
                XCTFail("expected an error")
            } catch let e as ModelFileError {
                XCTAssertEqual(e, .inFile(path, .truncated(expected: n, got: n - 1)))
                XCTAssertEqual(e.underlying, .truncated(expected: n, got: n - 1))
                XCTAssertTrue(e.description.hasPrefix("\(path): model file is truncated"), e.description)
            }
        }
    }

    // MARK: - Writing

    func testWriterRefusesWhatTheReaderWouldReject() throws {
        let m = try ModelFixtures.randomModel(seed: 3)
        assertThrows(["distinct"]) {
            _ = try ModelFile.encode(
                classes: Array(repeating: "x", count: m.classes.count), input: m.input, network: m.network, provenance: .init())
        }
        assertThrows(["outputs for 9 classes"]) {
            _ = try ModelFile.encode(classes: (0..<9).map(String.init), input: m.input, network: m.network, provenance: .init())
        }
        assertThrows(["metric 'loss' is nan"]) {
            _ = try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init(metrics: ["loss": .nan]))
        }
    }

    func testPreambleBytesAreAsSpecified() throws {
        let m = try ModelFixtures.randomModel(seed: 4)
        let bytes = try ModelFile.encode(classes: m.classes, input: m.input, network: m.network, provenance: .init(seed: 4))
        func u64(_ o: Int) -> UInt64 { bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: o, as: UInt64.self).littleEndian } }
        XCTAssertEqual(Array(bytes[0..<8]), [0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A])
        XCTAssertEqual(Array(bytes[8..<16]), [1, 0, 8, 0, 0, 0, 0, 0])  // major 1, minor 8, flags 0
        let h = Int(u64(16)), d = Int(u64(24))
        XCTAssertEqual((64 + h) % 64, 0)
        XCTAssertEqual(d % 64, 0)
        XCTAssertEqual(Int(u64(40)), bytes.count)
        XCTAssertEqual(64 + h + d, bytes.count)
        XCTAssertEqual(Array(bytes[48..<64]), [UInt8](repeating: 0, count: 16))
        XCTAssertEqual(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 32, as: UInt32.self) }, CRC32.checksum(Array(bytes[64..<(64 + h)])))
        // The header is sorted, compact JSON padded with spaces.
        let header = String(decoding: bytes[64..<(64 + h)], as: UTF8.self)
        XCTAssertTrue(header.hasPrefix(#"{"classes":["#), header)
        XCTAssertTrue(header.trimmingCharacters(in: .whitespaces).hasSuffix("}"))
        XCTAssertFalse(header.contains(": "))
    }

    // MARK: - Round trips

    /// Random models with every layer type: encode → load gives the same header, the same
    /// weights bit for bit and the same logits; encoding again gives the same bytes.
    func testRoundTripOverRandomModels() throws {
        var layerTypes = Set<String>()
        func collect(_ specs: [LayerSpec]) {
            for s in specs {
                layerTypes.insert(s.typeName)
                if let r = s.kind as? ResidualKind { collect(r.body + r.shortcut) }
            }
        }
        for seed in UInt64(0)..<60 {
            let m = try ModelFixtures.randomModel(seed: seed)
            collect(m.network.specs)
            let provenance = ModelHeader.Provenance(
                datasetHash: "fnv1a64:\(seed)", configHash: "c", seed: seed,
                metrics: ["validationAccuracy": 0.5 + Double(seed) / 1000], notes: ["seed": "\(seed)"])
            let bytes = try ModelFile.encode(
                classes: m.classes, input: m.input, network: m.network, provenance: provenance, trainingFrameRate: 30)
            let (header, loaded) = try ModelFile.load(bytes)
            XCTAssertEqual(header.classes, m.classes)
            XCTAssertEqual(header.input, m.input)
            XCTAssertEqual(header.layers, m.network.specs)
            XCTAssertEqual(header.provenance, provenance)
            XCTAssertEqual(header.trainingFrameRate, 30)
            XCTAssertEqual(header.inputShape, m.network.inputShape)
            let a = Array(UnsafeBufferPointer(start: m.network.parameters, count: m.network.parameterCount))
            let b = Array(UnsafeBufferPointer(start: loaded.parameters, count: loaded.parameterCount))
            XCTAssertEqual(a.map(\.bitPattern), b.map(\.bitPattern), "seed \(seed)")
            let x = ModelFixtures.randomInputs(count: 2, values: m.network.inputShape.count, seed: seed)
            XCTAssertEqual(m.network.predictLogits(x, batch: 2), loaded.predictLogits(x, batch: 2), "seed \(seed)")
            let again = try ModelFile.encode(
                classes: header.classes, input: header.input, network: loaded, provenance: header.provenance, trainingFrameRate: 30)
            XCTAssertTrue(again == bytes, "seed \(seed): re-encoding changed the bytes")
        }
        XCTAssertEqual(
            layerTypes,
            Set(["linear", "relu", "gelu", "dropout", "layerNorm", "conv1d", "flatten", "globalAveragePool", "globalMaxPool", "residual"]))
    }

    /// Every single-bit flip of a small file is rejected with a typed error (never a crash,
    /// never a model that loads with other weights), except in the bits readers ignore.
    func testEverySingleBitFlipIsRejected() throws {
        let bytes = Self.good().bytes
        var accepted = 0
        for i in 0..<bytes.count {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[i] ^= 1 << bit
                do {
                    let (header, network) = try ModelFile.load(flipped)
                    XCTAssertTrue((10..<16).contains(i) || (48..<64).contains(i), "flip of byte \(i) bit \(bit) was accepted")
                    XCTAssertEqual(header.classes, ["open", "close"])
                    XCTAssertEqual(Array(UnsafeBufferPointer(start: network.parameters, count: 10)), Self.weights + Self.bias)
                    accepted += 1
                } catch is ModelFileError {
                }
            }
        }
        XCTAssertEqual(accepted, (2 + 4 + 16) * 8, "exactly the minor version, flags and reserved bits are free")
    }

    /// The in-memory reader's error for `bytes`, nil when it accepts them (another error type
    /// is rethrown: the test fails).
    static func inMemoryError(_ bytes: [UInt8]) throws -> ModelFileError? {
        do {
            _ = try ModelFile.load(bytes)
            return nil
        } catch let e as ModelFileError {
            return e
        }
    }

    /// The file readers agree with the in-memory reader on one flipped bit in every byte.
    func testFileReadersRejectWhatTheMemoryReaderRejects() throws {
        let bytes = Self.good().bytes
        let path = scratch.appendingPathComponent("flip.atm").path
        for i in 0..<bytes.count {
            var flipped = bytes
            flipped[i] ^= 1 << (i % 8)
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(flipped)))
            let expected = try Self.inMemoryError(flipped)
            for mapped in [false, true] {
                do {
                    let (_, network) = try ModelFile.load(contentsOf: path, memoryMapped: mapped)
                    XCTAssertNil(expected, "byte \(i): the file loaded, memory said \(expected.map(String.init(describing:)) ?? "")")
                    XCTAssertEqual(Array(UnsafeBufferPointer(start: network.parameters, count: 10)), Self.weights + Self.bias)
                } catch let e as ModelFileError {
                    XCTAssertEqual(e.underlying, expected, "byte \(i), memoryMapped: \(mapped)")
                }
            }
        }
    }
}
