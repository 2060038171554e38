@testable import ActionRuntime
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 4b: interaction models with M bodies per window, recorded as `input.bodies`
/// in the model header and the ONNX metadata.
final class BodiesTests: XCTestCase {
    let two = ModelFixtures.goldenSkeleton.bodies(2)

    func testInputSpecRecordsAndChecksTheBodies() throws {
        let spec = InputSpec(skeleton: two, window: WindowSpec(frames: 6), steps: [], channels: [.coordinates, .mask])
        XCTAssertEqual(spec.bodies, 2)
        XCTAssertEqual(spec.channelsPerFrame, 2 * 4 * 3, "8 joints x (2 coordinates + mask)")
        try spec.validate()
        XCTAssertNil(InputSpec(skeleton: ModelFixtures.goldenSkeleton, window: WindowSpec(frames: 6), steps: [], channels: [.mask]).bodies)
        var wrong = spec
        wrong.bodies = 3
        assertThrows(["bodies: bodies is 3 but skeleton 'golden-4x2' holds 2"]) { try wrong.validate() }
        wrong.bodies = nil
        assertThrows(["bodies is absent (one body) but skeleton 'golden-4x2' holds 2"]) { try wrong.validate() }
        // Encoded only when set: one-body headers are byte-identical to before.
        let one = String(decoding: try JSONEncoder().encode(ModelFixtures.goldenInput), as: UTF8.self)
        XCTAssertFalse(one.contains("bodies"))
        let json = try JSONEncoder().encode(spec)
        XCTAssertTrue(String(decoding: json, as: UTF8.self).contains(#""bodies":2"#))
        XCTAssertEqual(try JSONDecoder().decode(InputSpec.self, from: json), spec)
    }

    func testTheHeaderReadersAgreeAndTheONNXMetadataNamesM() throws {
        var header = try ActionModel(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm").path).header
        header.input = InputSpec(skeleton: two, window: header.input.window, steps: [], channels: [.coordinates])
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys]
        let bytes = [UInt8](try enc.encode(header))
        let fast = ModelFileLoadTests.fast(bytes)
        XCTAssertEqual(fast?.input.bodies, 2, "the hand-written header reader reads bodies")
        XCTAssertEqual(fast?.input, try JSONDecoder().decode(ModelHeader.self, from: Data(bytes)).input)
        // A header without "bodies" on a two-body skeleton is read the same way by both (and refused by validate).
        let without = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: #""bodies":2,"#, with: "")
        XCTAssertNotEqual(without, String(decoding: bytes, as: UTF8.self))
        XCTAssertNil(ModelFileLoadTests.fast(Array(without.utf8))?.input.bodies ?? nil)
        XCTAssertNil(try JSONDecoder().decode(ModelHeader.self, from: Data(without.utf8)).input.bodies)
        let meta = try ONNXExport.metadata(header)
        XCTAssertEqual(meta.filter { $0.key == "actiontrain.bodies" }.map(\.value), ["2"])
    }

    /// Issue 36 item 5: the roles of a model trained on people named by role travel in the
    /// header (both readers), only when set, and are checked against the bodies.
    func testTheBodiesRolesAreRecordedReadByBothReadersAndChecked() throws {
        var spec = InputSpec(skeleton: two, window: WindowSpec(frames: 6), steps: [], channels: [.coordinates, .mask])
        XCTAssertFalse(String(decoding: try JSONEncoder().encode(spec), as: UTF8.self).contains("bodyRoles"), "absent unless set")
        spec.bodyRoles = ["perp", "victim"]
        try spec.validate()
        var header = try ActionModel(contentsOf: ModelFixtures.goldenDirectory.appendingPathComponent("model.atm").path).header
        header.input = spec
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys]
        let bytes = [UInt8](try enc.encode(header))
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self).contains(#""bodyRoles":["perp","victim"]"#))
        XCTAssertEqual(ModelFileLoadTests.fast(bytes)?.input.bodyRoles, ["perp", "victim"], "the hand-written header reader reads them")
        XCTAssertEqual(try JSONDecoder().decode(ModelHeader.self, from: Data(bytes)).input.bodyRoles, ["perp", "victim"])
        let nulled = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: #"["perp","victim"]"#, with: "null")
        XCTAssertNil(ModelFileLoadTests.fast(Array(nulled.utf8))?.input.bodyRoles ?? nil, "null: first appearance")
        for bad in [["a", "b", "c"], ["a", "a"], [""], []] {
            spec.bodyRoles = bad
            assertThrows(["bodies: bodyRoles", "must be 1 to 2 distinct, non-empty track ids"]) { try spec.validate() }
        }
        var one = InputSpec(skeleton: ModelFixtures.goldenSkeleton, window: WindowSpec(frames: 6), steps: [], channels: [.mask])
        one.bodyRoles = ["a"]
        assertThrows(["must be 1 to 1 distinct"]) { try one.validate() }
    }

    func testStackingBodies() {
        let a = PoseSequence(id: "a", label: "x", jointCount: 2, dimensions: 2, frameCount: 1, coordinates: [1, 2, 3, 4], present: [1, 0])
        let both = PoseSequence.stackingBodies([a, nil, a])
        XCTAssertEqual(both.jointCount, 6)
        XCTAssertEqual(both.present, [1, 0, 0, 0, 1, 0])
        XCTAssertEqual(both.coordinates, [1, 2, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0])
        XCTAssertEqual(ModelFixtures.goldenSkeleton.bodies(3).bodyCount, 3)
        XCTAssertEqual(ModelFixtures.goldenSkeleton.bodyCount, 1)
        var renamed = two
        renamed.joints[5] = "p2.other"
        XCTAssertEqual(renamed.bodyCount, 1, "blocks must repeat the same joints")
    }
}
