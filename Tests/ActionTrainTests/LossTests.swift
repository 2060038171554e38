@testable import ActionTrain
import PoseCore
import TestSupport
import XCTest

final class LossTests: XCTestCase {
    /// Loss value in Double for given logits, the reference for finite differences.
    func loss(_ f: SoftmaxCrossEntropy, _ z: [Float], _ y: [Int32], _ K: Int) -> Float {
        var d = [Float](repeating: 0, count: z.count)
        return z.withUnsafeBufferPointer { zp in
            y.withUnsafeBufferPointer { yp in
                d.withUnsafeMutableBufferPointer { f.lossAndGradient(logits: zp.baseAddress!, labels: yp.baseAddress!, batch: y.count, classes: K, dlogits: $0.baseAddress!) }
            }
        }
    }

    func testGradientMatchesFiniteDifferencesWithSmoothingAndClassWeights() {
        let K = 4, B = 5
        var g = SeededGenerator(seed: 11)
        let logits = (0..<(B * K)).map { _ in g.nextSymmetric(3) }
        let labels: [Int32] = [0, 3, 1, 3, 2]
        for f in [
            SoftmaxCrossEntropy(), SoftmaxCrossEntropy(labelSmoothing: 0.1),
            SoftmaxCrossEntropy(labelSmoothing: 0.2, classWeights: [0.5, 2, 1, 3]),
        ] {
            var analytic = [Float](repeating: 0, count: B * K)
            _ = logits.withUnsafeBufferPointer { zp in
                labels.withUnsafeBufferPointer { yp in
                    analytic.withUnsafeMutableBufferPointer {
                        f.lossAndGradient(logits: zp.baseAddress!, labels: yp.baseAddress!, batch: B, classes: K, dlogits: $0.baseAddress!)
                    }
                }
            }
            var numeric = [Float](repeating: 0, count: B * K)
            let h: Float = 1e-2
            for i in 0..<(B * K) {
                var up = logits, down = logits
                up[i] += h
                down[i] -= h
                numeric[i] = (loss(f, up, labels, K) - loss(f, down, labels, K)) / (2 * h)
            }
            assertClose(analytic, numeric, absolute: 2e-4, relative: 1e-2, "smoothing \(f.labelSmoothing), weights \(f.classWeights ?? [])")
        }
    }

    func testWeightedSmoothedLossValueIsPyTorchs() {
        // Two windows, K = 2, w = (1, 3), ε = 0.2: logits (0, 0) label 0 and (ln 3, 0) label 1,
        // so p = (1/2, 1/2) and (3/4, 1/4). PyTorch weights the smoothing term by each class's
        // weight: ℓ = 0.8·w_y·(−log p_y) + 0.1·Σ_k w_k·(−log p_k); L = (ℓ1 + ℓ2) / (1 + 3).
        // torch.nn.functional.cross_entropy gives 1.1508848667144775 on these inputs.
        let f = SoftmaxCrossEntropy(labelSmoothing: 0.2, classWeights: [1, 3])
        let l1 = 1.2 * log(2.0)
        let l2 = 0.8 * 3 * -log(0.25) + 0.1 * (-log(0.75) + 3 * -log(0.25))
        XCTAssertEqual(Double(loss(f, [0, 0, Float(log(3.0)), 0], [0, 1], 2)), (l1 + l2) / 4, accuracy: 1e-6)
        XCTAssertEqual(Double(loss(f, [0, 0, Float(log(3.0)), 0], [0, 1], 2)), 1.1508848667144775, accuracy: 1e-6)
    }

    func testBalancedClassWeightsFollowScikitLearn() throws {
        // 6 windows: class 0 ×3, class 1 ×2, class 2 ×1, class 3 none → n / (K · count).
        let w = try TrainingConfig.ClassWeights.balanced.weights(labels: [0, 0, 0, 1, 1, 2], classes: 4)
        assertClose(w!, [0.5, 0.75, 1.5, 1])
        XCTAssertNil(try TrainingConfig.ClassWeights.none.weights(labels: [0], classes: 2))
        assertThrows(["classWeights", "has 2 weights for 3 classes"]) {
            _ = try TrainingConfig.ClassWeights.explicit([1, 2]).weights(labels: [0], classes: 3)
        }
    }

    func testClassWeightsDecodeFromStringOrList() throws {
        let decode = { (s: String) in try JSONDecoder().decode(TrainingConfig.ClassWeights.self, from: Data(s.utf8)) }
        XCTAssertEqual(try decode("\"balanced\""), .balanced)
        XCTAssertEqual(try decode("\"none\""), TrainingConfig.ClassWeights.none)
        XCTAssertEqual(try decode("[1, 2.5]"), .explicit([1, 2.5]))
        assertThrows(["expects \"none\", \"balanced\" or a list of numbers, got \"balancd\""]) { _ = try decode("\"balancd\"") }
    }
}
