import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
@testable import Pipelines
import PoseCore
import TestSupport
import XCTest

/// Evaluation runs through the library: the report's numbers recomputed from the model's own
/// probabilities, the split and stride defaults, and the refusals.
final class EvaluationTests: XCTestCase {
    /// A model trained on the fixture's first 18 sequences, and the dataset.
    func trained() throws -> (ActionModel, Dataset) {
        let d = try DatasetLoader.load(FitRunTests.fixture)
        let run = try FitRun.start(dataPath: FitRunTests.fixture, dataset: d, config: FitRunTests.quick, folder: nil, split: .init(train: Array(0..<18), validation: []))
        XCTAssertEqual(try run.train(), .finished)
        return (try ActionModel(bytes: try run.finish().modelBytes), d)
    }

    func testTheReportCountsWhatTheModelPredicts() throws {
        let (model, d) = try trained()
        var options = Evaluation.Options(stride: 4)
        options.settings.bootstrapResamples = 0
        let report = try Evaluation.run(model: model, modelPath: "m.atm", dataset: d, dataPath: "d.jsonl", options: options)
        XCTAssertNil(report.data.split, "no test split: every sequence")
        XCTAssertEqual(report.data.stride, 4)
        // Recount: every window of every sequence, its argmax against the sequence's label,
        // and each sequence's mean probabilities.
        var windows = 0, correct = 0, sequencesCorrect = 0
        for s in d.sequences {
            let predictions = try model.predict(sequence: s, stride: 4, sourceFrameRate: d.frameRate)
            windows += predictions.count
            let truth = model.classes.firstIndex(of: s.label!)!
            correct += predictions.filter { $0.classIndex == truth }.count
            var mean = [Float](repeating: 0, count: model.classes.count)
            for p in predictions { for k in mean.indices { mean[k] += p.probabilities[k] } }
            if mean.indices.max(by: { mean[$0] < mean[$1] }) == truth { sequencesCorrect += 1 }
        }
        XCTAssertEqual(report.window.samples, windows)
        XCTAssertEqual(report.window.accuracy, Double(correct) / Double(windows), accuracy: 1e-12)
        XCTAssertEqual(report.sequence?.samples, 24)
        XCTAssertEqual(try XCTUnwrap(report.sequence).accuracy, Double(sequencesCorrect) / 24, accuracy: 1e-12)
        // The default stride is a third of the window.
        let byDefault = try Evaluation.run(model: model, modelPath: "m.atm", dataset: d, dataPath: "d.jsonl", options: .init())
        XCTAssertEqual(byDefault.data.stride, 3)
    }

    func testSplitsAndRefusals() throws {
        let (model, d) = try trained()
        var split = d
        for i in 0..<24 { split.sequences[i].split = i % 4 == 0 ? "test" : "train" }
        let test = try Evaluation.run(model: model, modelPath: "m.atm", dataset: split, dataPath: "d.jsonl", options: .init())
        XCTAssertEqual(test.data.split, "test")
        XCTAssertEqual(test.sequence?.samples, 6)
        XCTAssertThrowsError(try Evaluation.run(model: model, modelPath: "m.atm", dataset: split, dataPath: "d.jsonl", options: .init(split: "dev"))) {
            XCTAssertEqual($0 as? EvaluationError, .noSequences(dataPath: "d.jsonl", split: "dev", present: ["test", "train"]))
            XCTAssertEqual("\($0)", "d.jsonl: no sequences in split 'dev'; splits present: [\"test\", \"train\"]")
        }
        var unknown = d
        unknown.sequences[0].label = "jump"
        XCTAssertThrowsError(try Evaluation.run(model: model, modelPath: "m.atm", dataset: unknown, dataPath: "d.jsonl", options: .init())) {
            XCTAssertEqual("\($0)", "d.jsonl: labels [\"jump\"] are not among the model's classes [\"raise\", \"lower\", \"wave\"]")
        }
        let coco = Dataset(name: "coco", skeleton: try Skeleton.named("coco-17"), sequences: [], classes: d.classes)
        XCTAssertThrowsError(try Evaluation.run(model: model, modelPath: "m.atm", dataset: coco, dataPath: "c.jsonl", options: .init())) {
            XCTAssertEqual("\($0)", "c.jsonl: the data's skeleton 'coco-17' (17 joints, 2D) is 2D but the model's 'natops-8' (8 joints, 3D) is 3D")
        }
    }
}
