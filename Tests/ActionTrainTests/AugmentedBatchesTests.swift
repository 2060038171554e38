import ActionTrain
import Datasets
import PoseCore
import TestSupport
import XCTest

final class AugmentedBatchesTests: XCTestCase {
    static let skeleton = Skeleton(
        name: "toy", joints: ["head", "leftHand", "rightHand", "hip"], dimensions: 2, units: .pixels,
        mirrorPairs: [["leftHand", "rightHand"]], bones: [["head", "leftHand"]], centre: ["hip"], torsoUpper: ["head"],
        torsoLower: ["hip"])

    /// Three sequences (9, 12 and 4 frames) cut into 4-frame windows at stride 2.
    func windows() throws -> WindowSet {
        var seqs: [PoseSequence] = []
        for (k, n) in [9, 12, 4].enumerated() {
            var s = PoseSequence(id: "s\(k)", label: k == 1 ? "b" : "a", jointCount: 4, dimensions: 2, hasConfidence: false)
            for f in 0..<n {
                let t = Float(f + 3 * k)
                s.appendFrame([
                    PosePoint(x: 100 + t, y: 50), f % 3 == 0 ? nil : PosePoint(x: 80 - t, y: 90 + t),
                    PosePoint(x: 120 + 2 * t, y: 90), PosePoint(x: 100, y: 150 - t),
                ])
            }
            seqs.append(s)
        }
        let d = Dataset(name: "toy", skeleton: Self.skeleton, sequences: seqs)
        var spec = InputSpec.standard(for: Self.skeleton, frames: 4)
        spec.channels = [.coordinates, .mask, .motion]
        return try WindowSet(dataset: d, spec: spec, stride: 2, classes: d.classes)
    }

    var config: AugmentationConfig {
        var c = AugmentationConfig()
        c.flipProbability = 0.5
        c.rotationProbability = 0.8
        c.maxRotationDegrees = 20
        c.jitterProbability = 1
        c.jitterStandardDeviation = 0.05
        c.speedProbability = 0.5
        c.maxSpeedChange = 0.3
        c.frameDropProbability = 0.3
        c.frameDropRate = 0.3
        c.jointDropoutProbability = 0.5
        c.jointDropoutRate = 0.2
        return c
    }

    func fill(_ source: AugmentedBatches, _ indices: [Int], epoch: Int) -> (features: [[Float]], labels: [Int32]) {
        let V = source.valuesPerWindow
        var x = [Float](repeating: .nan, count: indices.count * V), y = [Int32](repeating: -9, count: indices.count)
        x.withUnsafeMutableBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                source.fill(indices: indices[...], epoch: epoch, features: xp.baseAddress!, labels: yp.baseAddress!)
            }
        }
        return ((0..<indices.count).map { Array(x[$0 * V..<($0 + 1) * V]) }, y)
    }

    func testAWindowsFeaturesDependOnlyOnSeedEpochAndIndex() throws {
        let set = try windows()
        XCTAssertEqual(set.count, 4 + 5 + 1)  // starts 0, 2, 4, 5 | 0, 2, 4, 6, 8 | 0
        let one = try AugmentedBatches(windows: set, augmentation: config, seed: 5, threads: 1)
        let three = try AugmentedBatches(windows: set, augmentation: config, seed: 5, threads: 3)
        let all = Array(0..<set.count)
        let reference = fill(one, all, epoch: 2)
        XCTAssertEqual(reference.labels, set.labels)
        // Another order, another batch size, another thread count: same window, same features.
        let shuffled = [7, 2, 8, 0, 5]
        let other = fill(three, shuffled, epoch: 2)
        for (k, i) in shuffled.enumerated() { XCTAssertEqual(other.features[k], reference.features[i], "window \(i)") }
        XCTAssertEqual(fill(three, [4], epoch: 2).features[0], reference.features[4])
        XCTAssertEqual(fill(three, all, epoch: 2).features, reference.features)
        // A new epoch or seed gives new augmentations.
        XCTAssertNotEqual(fill(one, all, epoch: 3).features, reference.features)
        let reseeded = try AugmentedBatches(windows: set, augmentation: config, seed: 6)
        XCTAssertNotEqual(fill(reseeded, all, epoch: 2).features, reference.features)
        XCTAssertFalse(reference.features.joined().contains { !$0.isFinite })
    }

    func testWithoutAugmentationTheFeaturesAreTheWindowSets() throws {
        let set = try windows()
        let plain = try AugmentedBatches(windows: set, augmentation: AugmentationConfig(), seed: 1, threads: 2)
        let expected = try set.features()
        let got = fill(plain, Array(0..<set.count), epoch: 1).features.flatMap { $0 }
        XCTAssertEqual(got, expected)
    }

    func testTheMaskAlwaysMatchesTheCoordinates() throws {
        // Whatever the augmentation, a joint is either present (mask 1) or all-zero (mask 0).
        let set = try windows()
        let source = try AugmentedBatches(windows: set, augmentation: config, seed: 9)
        let J = 4, D = 2, C = J * D + J + J * D
        for features in fill(source, Array(0..<set.count), epoch: 1).features {
            for f in 0..<4 {
                for j in 0..<J where features[f * C + J * D + j] == 0 {
                    XCTAssertEqual(features[f * C + j * D], 0)
                    XCTAssertEqual(features[f * C + j * D + 1], 0)
                }
            }
        }
    }

    func testTheAugmenterMustMatchTheWindows() throws {
        let set = try windows()
        let other = Skeleton(name: "other", joints: ["a"], dimensions: 2, units: .pixels)
        let augmenter = try Augmenter(config: config, skeleton: other)
        assertThrows(["the augmenter is for 'other'", "the windows are 'toy'"]) {
            _ = try AugmentedBatches(windows: set, augmenter: augmenter, seed: 0)
        }
    }
}
