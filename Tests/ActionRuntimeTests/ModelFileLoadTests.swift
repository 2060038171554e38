@testable import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// The fast load paths: the hand-written header reader (checked against `JSONDecoder`), the
/// memory-mapped load that binds the network to the file's tensors in place, and the data
/// checksum computed on a helper thread.
final class ModelFileLoadTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = try temporaryDirectory("ModelFileLoadTests")
        addTeardownBlock { [scratch] in try? FileManager.default.removeItem(at: scratch!) }
    }

    // MARK: - HeaderJSON against JSONDecoder

    /// The header length field of a model file's preamble.
    static func headerLength(_ file: [UInt8]) -> Int {
        file.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
    }

    /// The header bytes of a model file (with its padding spaces).
    static func headerBytes(_ file: [UInt8]) -> [UInt8] { Array(file[64..<(64 + headerLength(file))]) }

    static func fast(_ json: [UInt8]) -> ModelHeader? { json.withUnsafeBytes { HeaderJSON.decode($0) } }
    static func foundation(_ json: [UInt8]) -> ModelHeader? { try? json.withUnsafeBytes { try ModelFile.decodeHeaderWithFoundation($0) } }

    /// Labels and notes that need escapes or non-ASCII UTF-8 in JSON.
    static let awkwardStrings = [
        #"say "hi""#, "back\\slash", "a/b", "tab\there", "line\nbreak", "bell\u{07}", "naïve", "日本語", "🙂 wave", "\u{0}nul",
    ]

    /// Every header the writer produces for random models (every layer type, step, channel
    /// block, optional field) reads the same with both readers, and the fast one accepts it.
    func testHeaderJSONReadsWhatTheWriterWrites() throws {
        for seed in UInt64(0)..<60 {
            let m = try ModelFixtures.randomModel(seed: seed)
            var classes = m.classes
            classes[0] = Self.awkwardStrings[Int(seed) % Self.awkwardStrings.count]
            let provenance = ModelHeader.Provenance(
                datasetHash: seed % 3 == 0 ? nil : "fnv1a64:\(seed)", configHash: seed % 2 == 0 ? "c" : nil,
                seed: seed % 4 == 0 ? nil : UInt64.max - seed,
                metrics: ["validationAccuracy": 0.5 + Double(seed) / 1000, "loss": 1e-7 * Double(seed + 1), "zero": 0, "big": 3.5e300],
                notes: seed % 5 == 0 ? [:] : ["seed": "\(seed)", Self.awkwardStrings[Int(seed) % 10]: Self.awkwardStrings[Int(seed + 3) % 10]])
            let enter = (0..<classes.count).map { 0.05 + Double(($0 + Int(seed)) % 19) / 20 }
            let streaming: ModelHeader.Streaming? =
                seed % 4 == 3
                ? nil
                : ModelHeader.Streaming(
                    clipFrames: m.input.window.mode == .fit ? 10 + Int(seed) : nil, clipFrameRate: seed % 2 == 0 ? 29.97 : nil,
                    enter: seed % 3 == 0 ? nil : enter, exit: seed % 3 == 0 ? nil : enter.map { ($0 * 2 / 3 * 1000).rounded() / 1000 },
                    calibration: seed % 5 == 0 ? nil : "training")
            let bytes = try ModelFile.encode(
                classes: classes, input: m.input, network: m.network, provenance: provenance,
                trainingFrameRate: seed % 3 == 1 ? nil : 29.97, streaming: streaming)
            let json = Self.headerBytes(bytes)
            let reference = try XCTUnwrap(Self.foundation(json), "seed \(seed)")
            let fast = try XCTUnwrap(Self.fast(json), "seed \(seed): HeaderJSON declined what the writer wrote")
            XCTAssertEqual(fast, reference, "seed \(seed)")
            XCTAssertEqual(fast.classes, classes)
            XCTAssertEqual(fast.provenance, provenance)
            XCTAssertEqual(fast.streaming, streaming)
        }
        let golden = try [UInt8](Data(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm")))
        let json = Self.headerBytes(golden)
        XCTAssertEqual(try XCTUnwrap(Self.fast(json)), try XCTUnwrap(Self.foundation(json)))
    }

    /// Hand-written variants of a valid header: what the fast reader accepts, it reads as
    /// `JSONDecoder` does; what it declines goes to `JSONDecoder`.
    func testHeaderJSONAcceptsOnlyWhatJSONDecoderReadsTheSameWay() throws {
        let base = ModelFileTests.headerJSON()
        func variant(_ from: String, _ to: String) -> String {
            XCTAssertTrue(base.contains(from), from)
            return base.replacingOccurrences(of: from, with: to)
        }
        let accepted: [(String, String)] = [
            ("unknown keys are ignored", variant(#""format":"#, #""future":{"x":[1,2,{"y":null}]},"format":"#)),
            ("whitespace anywhere", variant(#"{"classes":"#, "\n\t{ \"classes\" :  ") + "   \r\n"),
            ("escaped slash and unicode", variant(#"["open","close"]"#, #"["op\/en","\u0063lose\ud83d\ude00"]"#)),
            ("missing window mode and padding", variant(#","mode":"sliding","padding":"empty""#, "")),
            ("null optional fields", variant(#""layers":"#, #""trainingFrameRate":null,"layers":"#)),
            ("a training frame rate", variant(#""layers":"#, #""trainingFrameRate":2.5e1,"layers":"#)),
        ]
        for (what, json) in accepted {
            let bytes = Array(json.utf8)
            let fast = Self.fast(bytes)
            XCTAssertNotNil(fast, what)
            XCTAssertEqual(fast, Self.foundation(bytes), what)
        }
        XCTAssertEqual(Self.fast(Array(accepted[2].1.utf8))?.classes, ["op/en", "close😀"])
        XCTAssertEqual(Self.fast(Array(accepted[5].1.utf8))?.trainingFrameRate, 25)

        let declined: [(String, String)] = [
            ("an integer written 2.0", variant(#""time":2"#, #""time":2.0"#)),
            ("an integer with an exponent", variant(#""time":2"#, #""time":2e0"#)),
            ("minus zero", variant(#""offset":0"#, #""offset":-0"#)),
            ("a leading zero", variant(#""time":2"#, #""time":02"#)),
            ("an integer beyond Int", variant(#""time":2"#, #""time":99999999999999999999"#)),
            ("a duplicate key", variant(#""format":"#, #""format":"x","format":"#)),
            ("null for a required field", variant(#""format":"actiontrain.model""#, #""format":null"#)),
            ("a missing field", variant(#""format":"actiontrain.model","#, "")),
            ("a legacy preprocessing step", variant(#""steps":[]"#, #""steps":[{"centre":{"joints":["hand"],"perFrame":false}}]"#)),
            ("an unknown layer type", variant(#"{"type":"flatten"}"#, #"{"type":"flat"}"#)),
            ("an unknown channel block", variant(#"["coordinates"]"#, #"["coords"]"#)),
            ("a lone surrogate", variant(#""open""#, #""\ud800""#)),
            ("an unknown escape", variant(#""open""#, #""o\pen""#)),
            ("a raw control character", variant(#""open""#, "\"o\u{01}pen\"")),
            ("a trailing comma", variant(#""close"]"#, #""close",]"#)),
            ("text after the value", base + " x"),
            ("a number for a string", variant(#""open""#, "1")),
            ("a string for a number", variant(#""time":2"#, #""time":"2""#)),
            ("a float that differs through Double", variant(#""steps":[]"#, #""steps":[{"op":"divide","by":[1.00000005960464477539062500001,1]}]"#)),
            ("a subnormal float", variant(#""steps":[]"#, #""steps":[{"op":"divide","by":[1e-40,1]}]"#)),
            ("a float out of range", variant(#""steps":[]"#, #""steps":[{"op":"divide","by":[1e39,1]}]"#)),
            ("a double with more digits than the writer writes", variant(#""layers":"#, #""trainingFrameRate":29.970000000000000001,"layers":"#)),
        ]
        for (what, json) in declined {
            let bytes = Array(json.utf8)
            XCTAssertNil(Self.fast(bytes), what)
        }
        // Ill-formed UTF-8 inside a string.
        var bad = Array(base.utf8)
        let at = try XCTUnwrap(bad.firstIndex(of: UInt8(ascii: "o")))
        bad[at] = 0xC3
        XCTAssertNil(Self.fast(bad))
        XCTAssertNil(Self.foundation(bad))
        // More values than the fast reader holds: declined, and JSONDecoder reads it as before.
        let many = variant(#""format":"#, #""future":[\#(Array(repeating: "0", count: HeaderJSON.Parser.maxValues).joined(separator: ","))],"format":"#)
        XCTAssertNil(Self.fast(Array(many.utf8)))
        XCTAssertNotNil(Self.fast(Array(variant(#""format":"#, #""future":[0,0],"format":"#).utf8)))
        // Nesting beyond the limit is declined, and JSONDecoder's path reports it.
        let deep = Array((String(repeating: "[", count: 70) + String(repeating: "]", count: 70)).utf8)
        XCTAssertNil(Self.fast(deep))
        XCTAssertThrowsError(try deep.withUnsafeBytes { try ModelFile.decodeHeader($0) }) { e in
            XCTAssertEqual(e as? ModelFileError, .limitExceeded(what: "the JSON nesting depth", value: 65, limit: 64))
        }
    }

    /// Random damage to a real header (bytes replaced, deleted or inserted): the fast reader
    /// either declines or reads exactly what `JSONDecoder` reads.
    func testHeaderJSONAgreesWithJSONDecoderOnDamagedHeaders() throws {
        let golden = try [UInt8](Data(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm")))
        let json = Self.headerBytes(golden)
        let alphabet = Array(#"{}[]:,"\ 0123456789.-+eEtrufalsn/"#.utf8) + [0x00, 0x7F, 0xC3, 0xA9, 0xFF]
        var g = SeededGenerator(seed: 77)
        var acceptedDamaged = 0, declined = 0
        for trial in 0..<1500 {
            var bytes = json
            for _ in 0..<(1 + g.nextInt(below: 2)) {
                let i = g.nextInt(below: bytes.count)
                switch g.nextInt(below: 3) {
                case 0: bytes[i] = alphabet[g.nextInt(below: alphabet.count)]
                case 1: bytes.remove(at: i)
                default: bytes.insert(alphabet[g.nextInt(below: alphabet.count)], at: i)
                }
            }
            let reference = Self.foundation(bytes)
            if let fast = Self.fast(bytes) {
                XCTAssertEqual(fast, reference, "trial \(trial): \(String(decoding: bytes, as: UTF8.self))")
                if bytes != json { acceptedDamaged += 1 }
            } else {
                declined += 1
            }
        }
        // Both outcomes occur (damage inside a string or a number can still be a valid header).
        XCTAssertGreaterThan(acceptedDamaged, 10)
        XCTAssertGreaterThan(declined, 500)
    }

    // MARK: - Loading in place

    /// A model whose tensors are all multiples of 64 bytes but the last: its file's data
    /// section has the layout of the network's arena. Input [2 frames, 2 joints × 2].
    static let packedInput = InputSpec(
        skeleton: Skeleton(name: "two", joints: ["a", "b"], dimensions: 2, units: .pixels), window: WindowSpec(frames: 2),
        steps: [], channels: [.coordinates])
    static let packedLayers: [LayerSpec] = [.flatten, .linear(inputs: 8, outputs: 16), .relu, .linear(inputs: 16, outputs: 3)]

    func writePackedModel(_ name: String = "packed.atm", seed: UInt64 = 5) throws -> (path: String, bytes: [UInt8], network: Network) {
        let network = try ModelFixtures.network(Self.packedLayers, input: Shape(time: 2, channels: 4), seed: seed)
        let bytes = try ModelFile.encode(
            classes: ["x", "y", "z"], input: Self.packedInput, network: network, provenance: .init(notes: ["k": "v"]))
        let path = scratch.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes, network)
    }

    static func values(_ n: Network) -> [UInt32] {
        Array(UnsafeBufferPointer(start: n.parameters, count: n.parameterCount)).map(\.bitPattern)
    }

    /// With layer data (format 1.8: a standardize in front), the weights are still one run of
    /// the data section, after the statistics, and a mapped load binds them there.
    func testMappedLoadUsesTheWeightsInPlaceAfterTheLayerData() throws {
        let network = try ModelFixtures.network(
            [.standardize(mean: [1, -2, 0.5, 0], scale: [0.5, 2, 1, 4])] + Self.packedLayers, input: Shape(time: 2, channels: 4), seed: 6)
        let bytes = try ModelFile.encode(classes: ["x", "y", "z"], input: Self.packedInput, network: network, provenance: .init())
        let path = scratch.appendingPathComponent("standardized.atm").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (header, mapped) = try ModelFile.load(contentsOf: path, memoryMapped: true)
        XCTAssertEqual(header.layers, network.specs)
        XCTAssertEqual(header.tensors.prefix(2).map(\.name), ["layers.0.mean", "layers.0.scale"])
        let storage = try XCTUnwrap(mapped.parameterStorage as? ModelFile.MappedFile, "the network was not bound in place")
        XCTAssertEqual(storage.dataStart, 64 + Self.headerLength(bytes) + 128, "after the two statistics tensors, 64 bytes each")
        XCTAssertEqual(Self.values(mapped), Self.values(network))
        let x = ModelFixtures.randomInputs(count: 3, values: 8, seed: 1)
        XCTAssertEqual(mapped.predictLogits(x, batch: 3).map(\.bitPattern), network.predictLogits(x, batch: 3).map(\.bitPattern))
    }

    func testMappedLoadUsesTheFilesTensorsInPlace() throws {
        let (path, bytes, original) = try writePackedModel()
        let (header, mapped) = try ModelFile.load(contentsOf: path, memoryMapped: true)
        let (_, copied) = try ModelFile.load(contentsOf: path, memoryMapped: false)
        let storage = try XCTUnwrap(mapped.parameterStorage as? ModelFile.MappedFile, "the network was not bound in place")
        XCTAssertNil(copied.parameterStorage)
        let dataStart = 64 + Self.headerLength(bytes)
        XCTAssertEqual(storage.dataStart, dataStart)
        XCTAssertEqual(UnsafeRawPointer(mapped.parameters), UnsafeRawPointer(storage.base + dataStart))
        XCTAssertEqual(Int(bitPattern: mapped.parameters) % 64, 0)
        XCTAssertEqual(header.classes, ["x", "y", "z"])
        XCTAssertEqual(Self.values(mapped), Self.values(original))
        let x = ModelFixtures.randomInputs(count: 3, values: 8, seed: 1)
        let expected = original.predictLogits(x, batch: 3).map(\.bitPattern)
        XCTAssertEqual(mapped.predictLogits(x, batch: 3).map(\.bitPattern), expected)
        XCTAssertEqual(copied.predictLogits(x, batch: 3).map(\.bitPattern), expected)
        // The inference service's entry point. Its network is frozen (the runtime's own kernels):
        // the same bits as the original frozen.
        let model = try ActionModel(contentsOf: path, memoryMapped: true)
        XCTAssertTrue(model.network.parameterStorage is ModelFile.MappedFile)
        original.freeze()
        XCTAssertEqual(try model.logits(features: x, count: 3).map(\.bitPattern), original.predictLogits(x, batch: 3).map(\.bitPattern))
    }

    /// Tensors with alignment padding between them cannot serve as the arena: the weights are
    /// copied from the mapping.
    func testMappedLoadCopiesPaddedTensors() throws {
        let path = scratch.appendingPathComponent("padded.atm").path
        try Data(ModelFileTests.good().bytes).write(to: URL(fileURLWithPath: path))
        let (_, network) = try ModelFile.load(contentsOf: path, memoryMapped: true)
        XCTAssertNil(network.parameterStorage)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: network.parameters, count: 10)), ModelFileTests.weights + ModelFileTests.bias)
    }

    /// The mapping lives exactly as long as a network uses it, and keeps the loaded weights
    /// even when the file is deleted or replaced by rename.
    func testTheMappingLivesAsLongAsTheNetwork() throws {
        let (path, _, original) = try writePackedModel()
        let x = ModelFixtures.randomInputs(count: 2, values: 8, seed: 2)
        original.freeze()  // as ActionModel's network is
        let expected = original.predictLogits(x, batch: 2)
        weak var storage: ModelFile.MappedFile?
        var network: Network? = try {
            let model = try ActionModel(contentsOf: path, memoryMapped: true)
            storage = model.network.parameterStorage as? ModelFile.MappedFile
            return model.network
        }()
        XCTAssertNotNil(storage, "bound in place, and alive while the network is")
        try FileManager.default.removeItem(atPath: path)
        let (other, _, _) = try writePackedModel("other.atm", seed: 99)
        XCTAssertEqual(rename(other, path), 0)
        XCTAssertEqual(network?.predictLogits(x, batch: 2), expected)
        network = nil
        XCTAssertNil(storage, "unmapped with the last network")
    }

    func testWritesThroughTheNetworkNeverReachTheFile() throws {
        let (path, bytes, original) = try writePackedModel()
        let (_, network) = try ModelFile.load(contentsOf: path, memoryMapped: true)
        XCTAssertNotNil(network.parameterStorage)
        for i in 0..<network.parameterCount { network.parameters[i] = 0.5 }
        let x = ModelFixtures.randomInputs(count: 1, values: 8, seed: 3)
        XCTAssertNotEqual(network.predictLogits(x, batch: 1), original.predictLogits(x, batch: 1))
        XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))), bytes, "the file changed")
        for mapped in [true, false] {
            let (_, again) = try ModelFile.load(contentsOf: path, memoryMapped: mapped)
            XCTAssertEqual(Self.values(again), Self.values(original), "memoryMapped: \(mapped)")
        }
    }

    /// Damaged copies of a file that loads in place give, through the mapped path, exactly the
    /// error of the in-memory reader: truncations, and a flipped bit in every byte.
    func testMappedLoadRejectsWhatTheMemoryReaderRejects() throws {
        let (path, bytes, _) = try writePackedModel()
        let damagedPath = scratch.appendingPathComponent("damaged.atm").path
        var variants: [(String, [UInt8])] = [(String, [UInt8])]()
        for n in [0, 10, 63, 64, 200, bytes.count - 64, bytes.count - 1] { variants.append(("truncated to \(n)", Array(bytes.prefix(n)))) }
        for i in 0..<bytes.count {
            var flipped = bytes
            flipped[i] ^= 1 << ((i * 5) % 8)
            variants.append(("byte \(i) flipped", flipped))
        }
        var rejected = 0
        for (what, damaged) in variants {
            try Data(damaged).write(to: URL(fileURLWithPath: damagedPath))
            let expected = try ModelFileTests.inMemoryError(damaged)
            do {
                _ = try ModelFile.load(contentsOf: damagedPath, memoryMapped: true)
                XCTAssertNil(expected, "\(what): the mapped load accepted what memory rejected")
            } catch let e as ModelFileError {
                XCTAssertEqual(e, .inFile(damagedPath, try XCTUnwrap(expected, what)), what)
                rejected += 1
            }
        }
        XCTAssertGreaterThan(rejected, bytes.count - 30, "nearly every flip is an error (the free bits aside)")
        _ = path
    }

    func testNetworkRefusesStorageTooSmall() {
        final class Small: ParameterStorage {
            let values = UnsafeMutablePointer<Float>.allocate(capacity: 8)
            var count: Int { 8 }
            deinit { values.deallocate() }
        }
        XCTAssertThrowsError(try Network(layers: Self.packedLayers, input: Shape(time: 2, channels: 4), storage: Small())) { e in
            XCTAssertEqual(
                e as? ModelError, .invalidLayer(layer: "parameters", reason: "the storage holds 8 values, the layers need 195"))
        }
    }

    // MARK: - The helper-thread checksum

    func testBackgroundChecksumEqualsCRC32() {
        var g = SeededGenerator(seed: 9)
        let bytes = (0..<1_000_003).map { _ in UInt8(truncatingIfNeeded: g.nextInt(below: 256)) }
        bytes.withUnsafeBytes { all in
            for n in [0, 1, 63, 131_071, 131_072, 131_073, 400_000, 1_000_003] {
                let part = UnsafeRawBufferPointer(rebasing: all.prefix(n))
                let expected = CRC32.checksum(part)
                let firstNonFinite = ModelFile.firstNonFinite(part)
                for _ in 0..<3 {
                    XCTAssertEqual(BackgroundChecksum(part).finish(), .init(crc: expected, firstNonFinite: firstNonFinite), "\(n) bytes")
                }
                // The helper has had time to take every block (or none, on a busy machine).
                let late = BackgroundChecksum(part)
                usleep(20_000)
                XCTAssertEqual(late.finish(), .init(crc: expected, firstNonFinite: firstNonFinite), "\(n) bytes, finished late")
            }
            // Cancelled at once or half-way, it returns (and the buffer can then go).
            BackgroundChecksum(all).cancel()
        }
    }

    /// The pass finds the first non-finite float wherever it is: in the helper's blocks (the
    /// front), the caller's (the back), or both; none in finite data.
    func testBackgroundChecksumFindsTheFirstNonFiniteFloat() {
        let count = 300_000  // 1.2 MB: several 256 KiB blocks on each side
        var g = SeededGenerator(seed: 4)
        let finite = (0..<count).map { _ in g.nextSymmetric(1e30) }
        for bad in [[], [0], [count - 1], [5, count - 2], [200_000, 280_000], [70_000, 65_536, 250_000]] {
            var values = finite
            for (k, i) in bad.enumerated() { values[i] = [Float.nan, .infinity, -.infinity][k % 3] }
            values.withUnsafeBytes { raw in
                let expected = bad.min().map { 4 * $0 }
                XCTAssertEqual(ModelFile.firstNonFinite(raw), expected, "\(bad)")
                XCTAssertEqual(ModelFile.anyNonFinite(raw), expected != nil, "\(bad), two halves")
                XCTAssertEqual(BackgroundChecksum(raw).finish(), .init(crc: CRC32.checksum(raw), firstNonFinite: expected), "\(bad)")
                let late = BackgroundChecksum(raw)
                usleep(5_000)
                XCTAssertEqual(late.finish().firstNonFinite, expected, "\(bad), finished late")
            }
        }
        // The largest finite floats and the smallest subnormals are finite; a signalling NaN is not.
        let edge: [Float] = [.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0, Float(bitPattern: 0x7F80_0001)]
        edge.withUnsafeBytes { XCTAssertEqual(ModelFile.firstNonFinite($0), 16) }
    }
}
