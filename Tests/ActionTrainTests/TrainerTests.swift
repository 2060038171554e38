@testable import ActionRuntime
@testable import ActionTrain
import PoseCore
import TestSupport
import XCTest

/// A toy problem: three noisy blobs in a `[2, 3]` window, 60 training and 15 validation
/// windows, a 6-8-3 MLP. Small enough for debug builds.
enum Toy {
    static let shape = Shape(time: 2, channels: 3)

    static func set(count: Int, seed: UInt64, noise: Float = 0.8) -> TensorSet {
        var r = SeededGenerator(seed: seed)
        let centres: [[Float]] = [[1, 0, 0, 0, 1, 0], [0, 1, 0, 1, 0, 0], [0, 0, 1, 0, 0, 1]]
        var x: [Float] = [], y: [Int32] = []
        for i in 0..<count {
            x += centres[i % 3].map { $0 + noise * r.nextGaussian() }
            y.append(Int32(i % 3))
        }
        return TensorSet(features: x, labels: y, valuesPerWindow: 6)
    }

    static let train = set(count: 60, seed: 1)
    static let validation = set(count: 15, seed: 2)

    static func config(epochs: Int = 4) -> TrainingConfig {
        var c = TrainingConfig()
        c.architecture = .mlp
        c.normalization = .none
        c.dropout = 0
        c.hidden = [8]
        c.epochs = epochs
        c.batchSize = 8  // 8 batches per epoch, the last one of 4 windows
        c.learningRate = 0.02
        c.seed = 42
        c.threads = 1
        return c
    }

    static func trainer(_ c: TrainingConfig, layers: [LayerSpec]? = nil) throws -> Trainer {
        let net = try Network(layers: layers ?? (try c.layers(input: shape, classes: 3)), input: shape)
        net.initialize(seed: c.seed)
        return Trainer(network: net, config: c)
    }

    static func parameters(_ t: Trainer) -> [Float] {
        Array(UnsafeBufferPointer(start: t.network.parameters, count: t.network.parameterCount))
    }

    /// Records without their timings (which differ from run to run).
    static func untimed(_ records: [EpochRecord]) -> [EpochRecord] {
        records.map {
            var r = $0
            r.seconds = 0
            r.windowsPerSecond = 0
            return r
        }
    }
}

final class TrainerTests: XCTestCase {
    /// A multi-stream network trains member by member: one SGD epoch of a 2-member network
    /// moves each member exactly as training that member alone with the learning rate over 2
    /// (each member's gradient is its own loss's, over M), batches and order being the same.
    func testStreamsTrainEachMemberOnItsOwnLoss() throws {
        var c = Toy.config(epochs: 1)
        c.optimizer = .sgd
        let members: [[LayerSpec]] = [
            [.selectChannels([0, 1, 2]), .linear(inputs: 3, outputs: 4), .relu, .flatten, .linear(inputs: 8, outputs: 3)],
            [.flatten, .linear(inputs: 6, outputs: 3)],
        ]
        let both = try Toy.trainer(c, layers: [.averageProbabilities(members)])
        XCTAssertEqual(both.network.memberCount, 2)
        let start = Toy.parameters(both)
        _ = try both.fit(train: Toy.train, validation: nil)
        var alone = c
        alone.learningRate = c.learningRate / 2
        var offset = 0
        for member in members {
            let t = try Toy.trainer(alone, layers: member)
            let n = t.network.parameterCount
            t.network.load(parameters: start.withUnsafeBufferPointer { UnsafeBufferPointer(rebasing: $0[offset..<(offset + n)]) })
            _ = try t.fit(train: Toy.train, validation: nil)
            assertClose(Toy.parameters(t), Array(Toy.parameters(both)[offset..<(offset + n)]), absolute: 1e-6, relative: 1e-5)
            offset += n
        }
    }

    /// Trains through a checkpoint round trip: stop when `stop(batchesDone)` says so, encode
    /// the state to bytes, decode it into a fresh trainer, finish.
    func trainWithRestart(_ c: TrainingConfig, layers: [LayerSpec]? = nil, stopAfterBatches k: Int) throws -> Trainer {
        let first = try Toy.trainer(c, layers: layers)
        var batches = 0
        let outcome = try first.fit(
            train: Toy.train, validation: Toy.validation, shouldStop: { batches >= k }, onBatch: { _ in batches += 1 })
        guard case .interrupted = outcome else {
            XCTFail("expected an interruption, got \(outcome)")
            return first
        }
        let bytes = try Checkpoint(config: c, state: first.state()).encode()
        let restored = try Checkpoint.decode(bytes, source: "memory")
        XCTAssertEqual(restored.state, first.state())
        let second = try Toy.trainer(restored.config, layers: layers)
        second.network.initialize(seed: 999)  // must be overwritten by the restore
        try second.restore(restored.state)
        XCTAssertEqual(try second.fit(train: Toy.train, validation: Toy.validation), .finished)
        return second
    }

    func testResumeAtAnEpochBoundaryIsBitIdentical() throws {
        let c = Toy.config(epochs: 4)
        let straight = try Toy.trainer(c)
        try straight.fit(train: Toy.train, validation: Toy.validation)
        let resumed = try trainWithRestart(c, stopAfterBatches: 16)  // after epoch 2
        XCTAssertEqual(Toy.parameters(resumed), Toy.parameters(straight))
        XCTAssertEqual(resumed.bestParameters, straight.bestParameters)
        XCTAssertEqual(Toy.untimed(resumed.progress.records), Toy.untimed(straight.progress.records))
        XCTAssertEqual(resumed.optimizer.state(), straight.optimizer.state())
        XCTAssertEqual(resumed.progress.records.count, 4)
    }

    func testResumeInsideAnEpochWithEveryOptionIsBitIdentical() throws {
        var c = Toy.config(epochs: 3)
        c.optimizer = .sgd
        c.momentum = 0.9
        c.nesterov = true
        c.weightDecay = 1e-3
        c.gradientClipNorm = 0.5
        c.schedule = .cosine
        c.warmupEpochs = 1
        c.labelSmoothing = 0.1
        let straight = try Toy.trainer(c)
        try straight.fit(train: Toy.train, validation: Toy.validation)
        for k in [1, 11, 23] {
            let resumed = try trainWithRestart(c, stopAfterBatches: k)
            XCTAssertEqual(Toy.parameters(resumed), Toy.parameters(straight), "stopped after \(k) batches")
            XCTAssertEqual(Toy.untimed(resumed.progress.records), Toy.untimed(straight.progress.records))
        }
    }

    /// The kept model is the exponential moving average of the parameters after each step,
    /// `avg ← avg + (1 − β)(θ − avg)` with `β = exp(−1/(averageEpochs · S))`, recomputed here
    /// from the parameters seen after every step; without validation it is the final network.
    func testWeightAveragingKeepsTheMovingAverageOfEveryStep() throws {
        var c = Toy.config(epochs: 3)
        c.averageEpochs = 1.5
        let t = try Toy.trainer(c)
        let beta = exp(-1 / (1.5 * 8.0))  // 8 batches per epoch
        var average: [Float]? = nil
        var lastStep: [Float] = []
        try t.fit(
            train: Toy.train, validation: nil,
            onBatch: { _ in
                let theta = Toy.parameters(t)
                lastStep = theta
                guard var a = average else {
                    average = theta
                    return
                }
                for i in a.indices { a[i] += Float(1 - beta) * (theta[i] - a[i]) }
                average = a
            })
        XCTAssertEqual(Toy.parameters(t), average!)
        XCTAssertNotEqual(Toy.parameters(t), lastStep, "the average differs from the last step's parameters")
    }

    func testResumeWithWeightAveragingIsBitIdentical() throws {
        var c = Toy.config(epochs: 3)
        c.averageEpochs = 1
        let straight = try Toy.trainer(c)
        try straight.fit(train: Toy.train, validation: Toy.validation)
        XCTAssertNotNil(straight.averagedParameters)
        for k in [5, 16] {
            let resumed = try trainWithRestart(c, stopAfterBatches: k)
            XCTAssertEqual(Toy.parameters(resumed), Toy.parameters(straight), "stopped after \(k) batches")
            XCTAssertEqual(resumed.averagedParameters, straight.averagedParameters)
            XCTAssertEqual(Toy.untimed(resumed.progress.records), Toy.untimed(straight.progress.records))
        }
    }

    /// A residual TCN with dropout (whose random stream must be saved mid-epoch), layer norm
    /// and GELU, stopped inside epochs 1 and 2.
    func testResumeOfATCNWithDropoutInsideAnEpochIsBitIdentical() throws {
        var c = Toy.config(epochs: 2)
        c.architecture = .tcn
        c.widths = [4, 5]
        c.kernel = 3
        c.dropout = 0.3
        c.normalization = .layerNorm
        c.activation = .gelu
        let specs = try c.layers(input: Toy.shape, classes: 3)
        XCTAssertTrue(specs.contains(.dropout(rate: 0.3)))
        let straight = try Toy.trainer(c)
        try straight.fit(train: Toy.train, validation: Toy.validation)
        for k in [5, 12] {
            let resumed = try trainWithRestart(c, stopAfterBatches: k)
            XCTAssertEqual(Toy.parameters(resumed), Toy.parameters(straight), "stopped after \(k) batches")
        }
    }

    func testModelFamiliesBuildTheDocumentedLayers() throws {
        let mlp = try TrainingConfig.reference("mlp")!.layers(input: Shape(time: 45, channels: 57), classes: 6)
        XCTAssertEqual(mlp, [.flatten, .linear(inputs: 2565, outputs: 256), .relu, .linear(inputs: 256, outputs: 128), .relu, .linear(inputs: 128, outputs: 6)])
        let conv = try TrainingConfig.reference("conv")!.layers(input: Shape(time: 45, channels: 57), classes: 6)
        XCTAssertEqual(
            conv,
            [
                .conv1d(inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                .conv1d(inputs: 64, outputs: 128, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                .globalAveragePool, .linear(inputs: 128, outputs: 6),
            ])
        XCTAssertEqual(try Network(layers: mlp, input: Shape(time: 45, channels: 57)).parameterCount, 690_566)
        XCTAssertEqual(try Network(layers: conv, input: Shape(time: 45, channels: 57)).parameterCount, 60_166)
        var c = TrainingConfig()
        c.architecture = .tcn
        c.normalization = .none
        c.dropout = 0
        c.widths = [8, 8, 16]
        c.kernel = 3
        c.dilationBase = 2
        let tcn = try c.layers(input: Shape(time: 20, channels: 6), classes: 4)
        func block(_ i: Int, _ o: Int, _ d: Int) -> [LayerSpec] {
            let body: [LayerSpec] = [
                .conv1d(inputs: i, outputs: o, kernel: 3, stride: 1, dilation: d, padding: d), .relu,
                .conv1d(inputs: o, outputs: o, kernel: 3, stride: 1, dilation: d, padding: d),
            ]
            let shortcut: [LayerSpec] = i == o ? [] : [.conv1d(inputs: i, outputs: o, kernel: 1, stride: 1, dilation: 1, padding: 0)]
            return [.residual(body: body, shortcut: shortcut), .relu]
        }
        XCTAssertEqual(tcn, block(6, 8, 1) + block(8, 8, 2) + block(8, 16, 4) + [.globalAveragePool, .linear(inputs: 16, outputs: 4)])
        let net = try Network(layers: tcn, input: Shape(time: 20, channels: 6))
        XCTAssertEqual(net.outputShape, Shape(time: 1, channels: 4))
    }

    /// Three full-batch training steps of an MLP 6-5-3 — forward, smoothed and class-weighted
    /// cross-entropy, backward, optimiser — against PyTorch on the same weights and data
    /// (scripts/optimizer-golden.py, `mlp_steps`). The trainer shuffles the 4 rows of the batch,
    /// which changes the summation order of the gradients, hence a tolerance of a few ulps.
    func testWholeTrainingStepsMatchPyTorch() throws {
        func formula(_ n: Int, _ a: Double, _ b: Double) -> [Float] { (0..<n).map { Float(0.4 * sin(a * Double($0) + b)) } }
        let initial = formula(30, 0.7, 0.1) + formula(5, 1.3, 0.2) + formula(15, 0.9, 0.3) + formula(3, 1.1, 0.4)
        let x = (0..<24).map { Float(2.5 * (0.4 * sin(0.37 * Double($0) + 0.5))) }
        let data = TensorSet(features: x, labels: [0, 2, 1, 2], valuesPerWindow: 6)
        for (kind, golden) in [(TrainingConfig.OptimizerKind.adam, Golden.mlpAdam), (.sgd, Golden.mlpSGD)] {
            var c = TrainingConfig()
            c.optimizer = kind
            c.learningRate = kind == .adam ? 0.01 : 0.1
            if kind == .sgd {
                c.momentum = 0.9
                c.nesterov = true
            }
            c.labelSmoothing = 0.1
            c.batchSize = 4
            c.epochs = 3
            c.threads = 1
            let net = try Network(
                layers: [.linear(inputs: 6, outputs: 5), .relu, .linear(inputs: 5, outputs: 3)], input: Shape(time: 1, channels: 6))
            initial.withUnsafeBufferPointer { net.load(parameters: $0) }
            let t = Trainer(network: net, config: c, classWeights: [1, 2, 0.5])
            try t.fit(train: data, validation: nil)
            assertClose(Toy.parameters(t), golden, absolute: 1e-6, relative: 1e-5, "\(kind)")
        }
    }

    func testSameSeedGivesIdenticalBytesAndAnotherSeedDoesNot() throws {
        func run(_ seed: UInt64) throws -> [UInt8] {
            var c = Toy.config(epochs: 2)
            c.seed = seed
            let t = try Toy.trainer(c)
            try t.fit(train: Toy.train, validation: Toy.validation)
            var s = t.state()
            s.progress.records = Toy.untimed(s.progress.records)
            return try Checkpoint(config: c, state: s).encode()
        }
        let a = try run(7), b = try run(7), c = try run(8)
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c)
    }

    func testEarlyStoppingKeepsTheBestEpoch() throws {
        // A learning rate so small that the validation loss cannot move by minDelta: epoch 1
        // is the best, and with patience 2 training stops after epoch 3.
        var c = Toy.config(epochs: 10)
        c.learningRate = 1e-9
        c.monitor = .validationLoss
        c.patience = 2
        c.minDelta = 0.5
        let t = try Toy.trainer(c)
        var afterFirst: [Float] = []
        let outcome = try t.fit(
            train: Toy.train, validation: Toy.validation,
            onEpoch: { r in
                if r.epoch == 1 { afterFirst = Toy.parameters(t) }
            })
        XCTAssertEqual(outcome, .stoppedEarly(epoch: 3))
        XCTAssertEqual(t.progress.records.count, 3)
        XCTAssertEqual(t.progress.bestEpoch, 1)
        XCTAssertTrue(t.isFinished)
        XCTAssertEqual(Toy.parameters(t), afterFirst)  // the kept model is epoch 1's
        XCTAssertNotEqual(t.state().optimizer.step, 0)
    }

    func testARunStoppedEarlyContinuesWhenResumedWithMorePatience() throws {
        var c = Toy.config(epochs: 6)
        c.learningRate = 1e-9
        c.monitor = .validationLoss
        c.patience = 1
        c.minDelta = 0.5
        let t = try Toy.trainer(c)
        XCTAssertEqual(try t.fit(train: Toy.train, validation: Toy.validation), .stoppedEarly(epoch: 2))
        let same = try Toy.trainer(c)
        try same.restore(t.state())
        XCTAssertTrue(same.isFinished)
        c.patience = 3
        let patient = try Toy.trainer(c)
        try patient.restore(t.state())
        XCTAssertFalse(patient.isFinished)
        XCTAssertEqual(try patient.fit(train: Toy.train, validation: Toy.validation), .stoppedEarly(epoch: 4))
    }

    func testKeepsTheParametersOfTheBestValidationAccuracy() throws {
        let c = Toy.config(epochs: 5)
        let t = try Toy.trainer(c)
        var snapshots: [Int: [Float]] = [:]
        try t.fit(train: Toy.train, validation: Toy.validation, onEpoch: { r in snapshots[r.epoch] = Toy.parameters(t) })
        let accuracies = t.progress.records.map { $0.validationAccuracy! }
        let best = accuracies.firstIndex(of: accuracies.max()!)! + 1
        XCTAssertEqual(t.progress.bestEpoch, best)
        XCTAssertEqual(Toy.parameters(t), snapshots[best])
        XCTAssertGreaterThan(accuracies.max()!, 0.6)  // it learns the toy problem
    }

    func testEarlyStoppingWithoutValidationIsAClearError() throws {
        var c = Toy.config()
        c.patience = 3
        assertThrows(["early stopping (patience 3) needs validation windows"]) {
            try Toy.trainer(c).fit(train: Toy.train, validation: nil)
        }
    }

    func testDivergenceStopsWithAClearErrorAndKeepsTheLastGoodState() throws {
        var c = Toy.config(epochs: 50)
        c.optimizer = .sgd
        c.learningRate = 1e4
        let t = try Toy.trainer(c)
        var lastGood: TrainerState?
        do {
            try t.fit(train: Toy.train, validation: Toy.validation, onEpoch: { _ in lastGood = t.state() })
            XCTFail("expected divergence")
        } catch let e as TrainingError {
            guard case .diverged(let epoch, let batch, let loss) = e else { return XCTFail("\(e)") }
            XCTAssertFalse(loss.isFinite)
            XCTAssertGreaterThanOrEqual(batch, 1)
            XCTAssertTrue(e.description.hasPrefix("training diverged: the loss is \(loss) at epoch \(epoch), batch \(batch)"))
            XCTAssertTrue(e.description.contains("lower the learning rate"))
            if let lastGood { XCTAssertTrue(lastGood.parameters.allSatisfy(\.isFinite)) }
        }
    }

    func testWrongInputWidthIsAnError() throws {
        let t = try Toy.trainer(Toy.config())
        let wrong = TensorSet(features: [1, 2, 3], labels: [0], valuesPerWindow: 3)
        assertThrows(["the training windows have 3 values, the network takes 6"]) { try t.fit(train: wrong, validation: nil) }
    }

    func testRestoreRejectsAStateOfAnotherNetwork() throws {
        let small = try Toy.trainer(Toy.config())
        var c = Toy.config()
        c.hidden = [9]
        let other = try Toy.trainer(c)
        assertThrows(["the checkpoint does not fit this run", "parameters stored"]) { try other.restore(small.state()) }
    }

    func testCurvesAreWellFormedSVG() throws {
        let t = try Toy.trainer(Toy.config(epochs: 3))
        try t.fit(train: Toy.train, validation: Toy.validation)
        let svg = TrainingCurves.svg(t.progress.records, title: "toy <mlp>", bestEpoch: t.progress.bestEpoch)
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 4)  // loss and accuracy, train and validation
        XCTAssertTrue(svg.contains("toy &lt;mlp&gt;"))
        let parser = XMLParser(data: Data(svg.utf8))
        XCTAssertTrue(parser.parse(), "not well-formed XML: \(String(describing: parser.parserError))")
    }
}

#if canImport(FoundationXML)
    import FoundationXML
#endif
