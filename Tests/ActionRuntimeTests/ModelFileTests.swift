@testable import ActionRuntime
import PoseCore
import TestSupport
import XCTest

final class ModelFileTests: XCTestCase {
    func makeNetwork(seed: UInt64 = 7) throws -> Network {
        let n = try Network(
            layers: [.flatten, .linear(inputs: 12, outputs: 5), .relu, .linear(inputs: 5, outputs: 3)],
            input: Shape(time: 3, channels: 4))
        n.initialize(seed: seed)
        return n
    }

    var spec: InputSpec {
        let s = Skeleton(name: "toy", joints: ["a", "b"], dimensions: 2, units: .pixels)
        return InputSpec(skeleton: s, window: WindowSpec(frames: 3), steps: [], channels: [.coordinates])
    }

    func testRoundTripKeepsWeightsAndLogits() throws {
        let n = try makeNetwork()
        let bytes = try ModelFile.encode(classes: ["x", "y", "z"], input: spec, network: n, provenance: .init(seed: 7))
        XCTAssertEqual(bytes.count % 64, 0)
        let (header, loaded) = try ModelFile.load(bytes)
        XCTAssertEqual(header.classes, ["x", "y", "z"])
        XCTAssertEqual(header.input, spec)
        XCTAssertEqual(header.provenance.seed, 7)
        let a = Array(UnsafeBufferPointer(start: n.parameters, count: n.parameterCount))
        let b = Array(UnsafeBufferPointer(start: loaded.parameters, count: loaded.parameterCount))
        XCTAssertEqual(a, b)
        let x = (0..<24).map { Float($0) / 10 - 1 }
        XCTAssertEqual(n.predictLogits(x, batch: 2), loaded.predictLogits(x, batch: 2))
        // Identical inputs give identical bytes.
        XCTAssertEqual(bytes, try ModelFile.encode(classes: ["x", "y", "z"], input: spec, network: n, provenance: .init(seed: 7)))
    }

    func testDamagedFilesAreRejected() throws {
        let bytes = try ModelFile.encode(classes: ["x", "y", "z"], input: spec, network: try makeNetwork(), provenance: .init())
        assertThrows(["truncated"]) { _ = try ModelFile.load(Array(bytes.dropLast(10))) }
        var flipped = bytes
        flipped[flipped.count - 5] ^= 0x10
        assertThrows(["data checksum"]) { _ = try ModelFile.load(flipped) }
        var text = bytes
        text[4] = 0x0A  // \r\n -> \n damage
        assertThrows(["text-mode"]) { _ = try ModelFile.load(text) }
        assertThrows(["not an actiontrain model file"]) { _ = try ModelFile.load(Array("hello, this is not a model".utf8) + [UInt8](repeating: 0, count: 64)) }
        var future = bytes
        future[8] = 2
        assertThrows(["version 2.0"]) { _ = try ModelFile.load(future) }
    }
}
