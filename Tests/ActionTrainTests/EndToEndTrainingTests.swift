import ActionRuntime
import ActionTrain
import PoseCore
import TestSupport
import XCTest

final class EndToEndTrainingTests: XCTestCase {
    /// Two Gaussian blobs in 4-D, classes separated along every axis.
    func blobs(_ n: Int, seed: UInt64) -> TensorSet {
        var g = SeededGenerator(seed: seed)
        var x: [Float] = [], y: [Int32] = []
        for i in 0..<n {
            let c = Int32(i % 2)
            for _ in 0..<4 { x.append((c == 0 ? -1 : 1) + 0.5 * g.nextGaussian()) }
            y.append(c)
        }
        return TensorSet(features: x, labels: y, valuesPerWindow: 4)
    }

    func train(seed: UInt64) throws -> (network: Network, records: [EpochRecord]) {
        var config = TrainingConfig()
        config.epochs = 5
        config.batchSize = 16
        config.learningRate = 0.01
        config.seed = seed
        let net = try Network(
            layers: [.flatten, .linear(inputs: 4, outputs: 8), .relu, .linear(inputs: 8, outputs: 2)],
            input: Shape(time: 1, channels: 4))
        net.initialize(seed: seed)
        let records = try Trainer(network: net, config: config).fit(train: blobs(200, seed: 1), validation: blobs(100, seed: 2))
        return (net, records)
    }

    func testLearnsSeparableBlobsAndIsDeterministic() throws {
        let a = try train(seed: 3), b = try train(seed: 3)
        XCTAssertGreaterThan(a.records.last!.validationAccuracy!, 0.95)
        XCTAssertLessThan(a.records.last!.trainLoss, a.records.first!.trainLoss)
        let pa = Array(UnsafeBufferPointer(start: a.network.parameters, count: a.network.parameterCount))
        let pb = Array(UnsafeBufferPointer(start: b.network.parameters, count: b.network.parameterCount))
        XCTAssertEqual(pa.map(\.bitPattern), pb.map(\.bitPattern), "same seed must give bit-identical weights")
    }
}
