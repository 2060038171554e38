import ActionTrain
import Foundation
@testable import Pipelines
import TestSupport
import XCTest

/// The run checks inside `FitRun` (issue 16 items 6 and 11), on the tiny fixture.
extension FitRunTests {
    /// A run that fails after writing its model (here, report.json cannot be written) moves
    /// the model to model.failed.atm and says so; before, model.atm stayed beside the error.
    func testAFailureAfterTheModelIsWrittenMovesTheModelAside() throws {
        let folder = try RunFolder.create("\(try self.folder())/run", replacing: false)
        let run = try FitRun.start(dataPath: Self.fixture, dataset: try dataset(), config: Self.quick, folder: folder)
        XCTAssertEqual(try run.train(), .finished)
        try FileManager.default.createDirectory(atPath: folder.reportJSONPath, withIntermediateDirectories: false)
        XCTAssertThrowsError(try run.finish()) { e in
            let failure = e as? RunChecks.FailedAfterModel
            XCTAssertEqual(failure?.movedTo, "\(folder.path)/model.failed.atm")
            XCTAssertTrue("\(e)".hasPrefix("\(folder.reportJSONPath): cannot write: "), "\(e)")
            XCTAssertTrue("\(e)".contains("the model file was moved to \(folder.path)/model.failed.atm"), "\(e)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.modelPath))
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(folder.path)/model.failed.atm"))
    }

    /// A learning rate of 1e6 ends at chance level: the result carries the warning.
    func testChanceLevelAccuracyIsAWarningOfTheResult() throws {
        var config = Self.quick
        config.learningRate = 1e6
        let (_, result) = try fit(config, dataset: try dataset())
        let chance = result.warnings.compactMap { w -> String? in if case .chanceLevel(let why) = w { return why } else { return nil } }
        XCTAssertEqual(chance.count, 1, "\(result.warnings)")
        XCTAssertTrue(chance.first?.contains("The learning rate 1e+06 is likely too high") == true, "\(chance)")
        var learns = Self.quick
        learns.epochs = 20  // validation accuracy 1.0 on the fixture
        XCTAssertFalse(try fit(learns, dataset: try dataset()).1.warnings.contains { if case .chanceLevel = $0 { return true } else { return false } })
    }
}
