@testable import ActionRuntime
import PoseCore
import XCTest

/// The frozen state's calls on a layer made of layers reach every layer it holds, through the
/// `Layer` protocol (a container that fell back to `Layer`'s empty defaults would let replicas
/// pack their own weights and still compute the same outputs, so this is checked directly).
final class LayerContainerTests: XCTestCase {
    /// Counts the frozen-state calls it receives; `sharedFrom` is the layer it shared from.
    final class Spy: Layer {
        let inputShape = Shape(time: 2, channels: 3), outputShape = Shape(time: 2, channels: 3)
        var spec: LayerSpec { .relu }
        var frozen: [Bool] = [], prepared = 0
        weak var sharedFrom: Spy?
        func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> { x }
        func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? { nil }
        func setFrozen(_ frozen: Bool) { self.frozen.append(frozen) }
        func prepareFrozen() { prepared += 1 }
        func shareFrozen(from other: Layer) { sharedFrom = (other as! Spy) }
    }

    func check(_ make: ([Spy]) -> Layer, spies count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let a = (0..<count).map { _ in Spy() }, b = (0..<count).map { _ in Spy() }
        let original: Layer = make(a), replica: Layer = make(b)
        original.setFrozen(true)
        original.prepareFrozen()
        replica.shareFrozen(from: original)
        original.setFrozen(false)
        XCTAssertEqual(a.map(\.frozen), Array(repeating: [true, false], count: count), file: file, line: line)
        XCTAssertEqual(a.map(\.prepared), Array(repeating: 1, count: count), file: file, line: line)
        for (x, y) in zip(a, b) { XCTAssertTrue(y.sharedFrom === x, "each replica layer shares from its twin", file: file, line: line) }
    }

    func testResidualFlipAverageAndAverageProbabilitiesReachEveryLayerTheyHold() {
        let shape = Shape(time: 2, channels: 3)
        check({ Residual(body: [$0[0], $0[1]], shortcut: [$0[2]], input: shape, output: shape) }, spies: 3)
        check({ FlipAverage(body: [$0[0]], mirrored: [$0[1]], channels: [0, 1, 2], signs: [1, 1, 1], input: shape, output: shape) }, spies: 2)
        check({ AverageProbabilities(members: [[$0[0]], [$0[1], $0[2]]], input: shape, output: shape) }, spies: 3)
    }
}
