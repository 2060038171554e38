import ActionRuntime
import ActionTrain
import Datasets
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Linear heads over fixed features (`LinearHeads`): which parts of a network are heads, that
/// `fit` solves them to the optimum of their logistic regression at the chosen penalty, that
/// training leaves them as solved, and how the penalty is chosen.
final class LinearHeadsTests: XCTestCase {
    func dataset() throws -> Dataset { try DatasetLoader.load(FitRunTests.fixture) }

    func network(_ c: TrainingConfig, _ d: Dataset) throws -> Network {
        let input = try FitPipeline.input(c, for: d)
        var specs = try c.layers(for: input, classes: d.classes.count)
        if StandardizeCalibration.isNeeded(specs) {  // any calibration will do here
            specs = try StandardizeCalibration.calibrate(specs, input: Shape(time: input.window.frames, channels: input.channelsPerFrame), windows: 1) {
                _, out in out.update(repeating: 0.5, count: input.valuesPerWindow)
            }
        }
        return try Network(layers: specs, input: Shape(time: input.window.frames, channels: input.channelsPerFrame))
    }

    func testHeadsAreTheNetworksOrMembersWhoseOnlyParametersAreTheirLastLinear() throws {
        let d = try dataset()
        var ftp = FitRunTests.quick
        ftp.architecture = .ftp
        ftp.channels = [.relativePositions]
        let whole = LinearHeads.find(try network(ftp, d))
        XCTAssertEqual(whole.count, 1)
        XCTAssertNil(whole[0].member)
        XCTAssertEqual(whole[0].prefix.map(\.typeName), ["fourierPyramid", "standardize"])
        XCTAssertEqual(whole[0].offset, 0)

        var mixed = FTPFitTests.mixed
        mixed.members = [.init(architecture: .tcn, channels: [.coordinates, .mask]), .init(architecture: .ftp, channels: [.relativePositions])]
        let net = try network(mixed, d)
        let heads = LinearHeads.find(net)
        XCTAssertEqual(heads.map(\.member), [1])
        XCTAssertEqual(heads[0].prefix.map(\.typeName), ["selectChannels", "fourierPyramid", "standardize"])
        // The head's weight and bias are the arena's last values (member 1 after member 0).
        XCTAssertEqual(heads[0].offset + heads[0].classes * (heads[0].features + 1), net.parameterCount)

        var mlp = FitRunTests.quick
        mlp.hidden = []
        XCTAssertEqual(LinearHeads.find(try network(mlp, d)).map(\.prefix.count), [1])  // flatten, then the head
        XCTAssertTrue(LinearHeads.find(try network(FitRunTests.quick, d)).isEmpty)  // a hidden layer trains
    }

    /// The solved head is the optimum of its regression on the training windows' features at
    /// the chosen penalty (scaled by the printed temperature), and training leaves it there,
    /// also under a weight decay, while the other member trains.
    func testTheSolvedMemberIsTheOptimumAndTrainingLeavesIt() throws {
        let d = try dataset()
        var config = FTPFitTests.mixed
        config.augmentation = AugmentationConfig()
        config.weightDecay = 0.1
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        let training = run.training
        let solution = try XCTUnwrap(training.linearHeads.first)
        XCTAssertEqual(solution.member, 1)
        XCTAssertEqual(solution.chosenBy, "\(min(5, TrainingData.maxFolds))-fold cross-validation")
        XCTAssertEqual(solution.scores.map(\.penalty), LinearHeads.penalties)
        let best = solution.scores.min { $0.logLoss < $1.logLoss }!
        XCTAssertEqual(solution.penalty, best.penalty)
        let head = try XCTUnwrap(LinearHeads.find(training.network).first)
        let range = head.offset..<(head.offset + head.classes * (head.features + 1))
        let before = Array(UnsafeBufferPointer(start: training.network.parameters, count: training.network.parameterCount))
        XCTAssertEqual(try run.train(), .finished)
        let after = Array(UnsafeBufferPointer(start: training.network.parameters, count: training.network.parameterCount))
        XCTAssertTrue(after[range] == before[range], "the solved head moved")
        XCTAssertFalse(after[0..<head.offset] == before[0..<head.offset], "the other member did not train")

        // Optimality: the regression's gradient at the solved values (temperature undone) is 0.
        let n = run.data.train.count, dims = head.features, K = head.classes
        var x = [Float](repeating: 0, count: n * dims)
        try x.withUnsafeMutableBufferPointer {
            try LinearHeads.features(head, network: training.network, source: run.data.train, rows: Array(0..<n), into: $0.baseAddress!)
        }
        let weights = try config.classWeights.weights(labels: run.data.trainLabels, classes: K)
        x.withUnsafeBufferPointer { p in
            let solver = SoftmaxRegression(x: p.baseAddress!, rows: n, features: dims, labels: run.data.trainLabels, classes: K)
            let theta = after[range].map { Double($0) * solution.temperature }
            var gradient = [Double](repeating: 0, count: theta.count)
            _ = solver.objective(theta, gradient: &gradient, s: solver.rowWeights(classWeights: weights), lambda: solution.penalty)
            XCTAssertLessThanOrEqual(gradient.reduce(0) { max($0, abs($1)) }, 1e-4)
            _ = solver.objective(theta, gradient: &gradient, s: solver.rowWeights(classWeights: weights), lambda: solution.penalty * 10)
            XCTAssertGreaterThan(gradient.reduce(0) { max($0, abs($1)) }, 1e-3)
        }
    }

    /// An `ftp` network is all head: `fit` takes no step and records one epoch of its scores;
    /// `linearHead train` trains it as before; a given penalty is used as it is.
    func testAnFTPNetworkIsSolvedWithoutTraining() throws {
        let d = try dataset()
        var config = FitRunTests.quick
        config.architecture = .ftp
        config.channels = [.relativePositions]
        config.epochs = 5
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        let solved = Array(UnsafeBufferPointer(start: run.training.network.parameters, count: run.training.network.parameterCount))
        XCTAssertEqual(try run.train(), .finished)
        XCTAssertEqual(run.progress.records.count, 1)
        XCTAssertTrue(Array(UnsafeBufferPointer(start: run.training.network.parameters, count: run.training.network.parameterCount)) == solved)
        XCTAssertGreaterThan(run.progress.records[0].trainAccuracy, 0.5)

        config.linearPenalty = 0.25
        let given = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        XCTAssertEqual(given.training.linearHeads.map(\.penalty), [0.25])
        XCTAssertEqual(given.training.linearHeads.map(\.chosenBy), ["given"])
        XCTAssertEqual(given.training.linearHeads.map(\.temperature), [1])

        config.linearHead = .train
        config.linearPenalty = nil
        let trained = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        XCTAssertTrue(trained.training.linearHeads.isEmpty)
        XCTAssertEqual(try trained.train(), .finished)
        XCTAssertEqual(trained.progress.records.count, 5)
    }

    /// `linearHeadCopies` N: the head also fits N augmented copies of each training window
    /// (rows of the same label; copy m augmented as in epoch `copyEpoch` + m), so its solution
    /// is the optimum over the windows and their copies, not over the windows alone; without
    /// augmentation there is nothing to copy.
    func testAugmentedCopiesAreExtraRowsOfTheHead() throws {
        let d = try dataset()
        var config = FitRunTests.quick
        config.architecture = .ftp
        config.channels = [.relativePositions]
        config.linearPenalty = 0.25
        config.augmentation.jitterProbability = 1
        config.augmentation.jitterStandardDeviation = 0.05
        config.linearHeadCopies = 2
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        let solution = try XCTUnwrap(run.training.linearHeads.first)
        let n = run.data.train.count
        XCTAssertEqual(solution.windows, 3 * n)
        let head = try XCTUnwrap(LinearHeads.find(run.training.network).first)
        let dims = head.features, K = head.classes
        var x = [Float](repeating: 0, count: 3 * n * dims)
        try x.withUnsafeMutableBufferPointer {
            let p = $0.baseAddress!
            try LinearHeads.features(head, network: run.training.network, source: run.data.train, rows: Array(0..<n), into: p)
            for m in 0..<2 {
                try LinearHeads.features(
                    head, network: run.training.network, source: run.data.train, rows: Array(0..<n), into: p + (m + 1) * n * dims,
                    epoch: LinearHeads.copyEpoch + m)
            }
        }
        XCTAssertFalse(x[0..<(n * dims)] == x[(n * dims)..<(2 * n * dims)], "a copy is augmented")
        XCTAssertFalse(x[(n * dims)..<(2 * n * dims)] == x[(2 * n * dims)...], "each copy is augmented afresh")
        let labels = Array(repeating: run.data.trainLabels, count: 3).flatMap { $0 }
        let weights = try config.classWeights.weights(labels: run.data.trainLabels, classes: K)
        let theta = Array(UnsafeBufferPointer(start: run.training.network.parameters + head.offset, count: K * (dims + 1))).map { Double($0) }
        x.withUnsafeBufferPointer { p in
            for (rows, optimal) in [(3 * n, true), (n, false)] {
                let solver = SoftmaxRegression(x: p.baseAddress!, rows: rows, features: dims, labels: Array(labels[0..<rows]), classes: K)
                var gradient = [Double](repeating: 0, count: theta.count)
                _ = solver.objective(theta, gradient: &gradient, s: solver.rowWeights(classWeights: weights), lambda: 0.25)
                let largest = gradient.reduce(0) { max($0, abs($1)) }
                if optimal { XCTAssertLessThanOrEqual(largest, 1e-4, "the optimum over the windows and their copies") } else { XCTAssertGreaterThan(largest, 1e-3) }
            }
        }

        config.augmentation = AugmentationConfig()
        let plain = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: config, folder: nil)
        XCTAssertEqual(plain.training.linearHeads.map(\.windows), [n])

        // The copies keep the rows within 1,250.
        XCTAssertEqual(LinearHeads.maxCopyRows, 1250)
        XCTAssertEqual(LinearHeads.copies(4, windows: 100), 4)
        XCTAssertEqual(LinearHeads.copies(4, windows: 250), 4, "5 × 250 = 1,250 rows")
        XCTAssertEqual(LinearHeads.copies(4, windows: 251), 3)
        XCTAssertEqual(LinearHeads.copies(4, windows: 625), 1)
        XCTAssertEqual(LinearHeads.copies(4, windows: 626), 0)
        XCTAssertEqual(LinearHeads.copies(4, windows: 1258), 0, "Penn Action's training split")
        XCTAssertEqual(LinearHeads.copies(0, windows: 10), 0)
        XCTAssertEqual(LinearHeads.copies(-1, windows: 10), 0)
    }

    /// The work bound (`maxWork`): a head whose one solve is beyond it is left to the trainer
    /// (10,000 classes of one sequence each ran for hours without a line), and a penalty search
    /// beyond it is not run; the shared datasets' heads are well within it.
    func testAHeadBeyondTheWorkBoundIsLeftToTrainAndItsSearchIsCut() throws {
        var config = FitRunTests.quick
        config.architecture = .ftp
        config.channels = [.relativePositions]
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: try dataset(), config: config, folder: nil)
        let network = run.training.network
        let solved = try XCTUnwrap(run.training.linearHeads.first)
        XCTAssertNil(solved.notSolved)
        let head = try XCTUnwrap(LinearHeads.find(network).first)
        let folds = try XCTUnwrap(run.data.folds)
        let n = solved.windows, dims = head.features, k = Set(folds).count
        let work = n * 3 * min(n, dims)
        XCTAssertEqual(solved.chosenBy, "\(k)-fold cross-validation")
        func solve(_ bound: Int, search: Int = LinearHeads.maxSearchWork) throws -> LinearHeads.Solution {
            try LinearHeads.solve(
                head, network: network, data: run.data, folds: folds, classWeights: nil, penalty: nil, maxWork: bound, maxSearchWork: search)
        }
        let parameters = Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount))
        let left = try solve(work - 1)
        XCTAssertEqual(
            left.notSolved,
            "a logistic regression over 3 classes and \(n) windows of \(dims) features is too large to solve before training "
                + String(format: "(%.2g multiply-adds an evaluation, beyond %.2g)", Double(work), Double(work - 1)))
        XCTAssertTrue(Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount)) == parameters, "left as it was")
        let cut = try solve(work, search: work * (1 + k * LinearHeads.penalties.count) - 1)
        XCTAssertNil(cut.notSolved)
        XCTAssertEqual(cut.penalty, LinearHeads.fallbackPenalty)
        XCTAssertEqual(cut.chosenBy, "the default (cross-validation would solve it \(1 + k * 15) times over \(n) windows of 3 classes)")
        XCTAssertTrue(cut.scores.isEmpty)
        XCTAssertEqual(try solve(work, search: work * (1 + k * 15)).chosenBy, "\(k)-fold cross-validation")
        // Penn Action's training split cross-validated (1,258 windows, 15 classes) fits, and so
        // do 40 classes of 2D windows at the copies' 1,250 rows.
        XCTAssertLessThan(1258 * 15 * 1258 * (1 + 5 * 15), LinearHeads.maxSearchWork)
        XCTAssertLessThan(LinearHeads.maxCopyRows * 40 * LinearHeads.maxCopyRows * (1 + 5 * 15), LinearHeads.maxSearchWork)
    }
}
