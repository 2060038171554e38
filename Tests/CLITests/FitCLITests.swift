@testable import ActionRuntime
@testable import ActionTrain
@testable import actiontrain
import Eval
import Pipelines
import TestSupport
import XCTest

/// `actiontrain fit`: the config table, config errors, checkpoints and --resume, end to end on
/// the tiny fixture (Tests/Fixtures/tiny-natops.jsonl, 24 sequences of 10 frames).
final class FitCLITests: XCTestCase {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tiny-natops.jsonl").path
    /// Small, fast settings for the fixture.
    /// A small, fast run with the plain defaults (the recipe has its own tests).
    static let quick = [
        "--recipe", "none", "--architecture", "mlp", "--window-frames", "10", "--hidden", "16", "--batch-size", "4", "--seed", "3",
        "--threads", "1",
    ]

    func run(_ args: [String]) -> (code: Int32, out: String, err: String) { runCLI(args) }
    func folder() throws -> String { try scratchFolder() }

    func parameters(_ runDir: String) throws -> [Float] {
        let model = try ActionModel(contentsOf: "\(runDir)/model.atm")
        return Array(UnsafeBufferPointer(start: model.network.parameters, count: model.network.parameterCount))
    }

    // MARK: config

    func testTheTableHasEveryConfigKeyAndNothingElse() throws {
        var c = TrainingConfig()
        (c.frameRate, c.scaleDivisor, c.accumulate, c.linearPenalty, c.switchEvidence) = (30, 1, 2, 0.5, 0.8)  // optional keys are only encoded when set
        let keys = try JSONSerialization.jsonObject(with: JSONEncoder().encode(c)) as! [String: Any]
        XCTAssertEqual(Set(keys.keys), Set(ConfigOptions.entries.map(\.key)))
        XCTAssertEqual(ConfigOptions.entries.count, Set(ConfigOptions.entries.map(\.key)).count)
        XCTAssertTrue(FitRun.resumableKeys.isSubset(of: Set(keys.keys)))
    }

    func testTheDocsDescribeEveryOption() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs")
        let cli = try String(contentsOf: docs.appendingPathComponent("cli.md"), encoding: .utf8)
        let training = try String(contentsOf: docs.appendingPathComponent("training.md"), encoding: .utf8)
        for e in ConfigOptions.entries {
            XCTAssertTrue(cli.contains("`--\(e.flag)"), "docs/cli.md lacks --\(e.flag)")
            XCTAssertTrue(training.contains("`\(e.key)`"), "docs/training.md lacks \(e.key)")
        }
    }

    func testConfigFileErrorsAreOneLineNamingTheKey() throws {
        let dir = try folder()
        let cases: [(String, String)] = [
            (#"{"epohcs": 3}"#, "unknown config key 'epohcs'; did you mean 'epochs'?"),
            (#"{"epochs": "3"}"#, "config key 'epochs' expects an integer, got \"3\""),
            (#"{"epochs": 2.5}"#, "config key 'epochs' expects an integer, got 2.5"),
            (#"{"nesterov": 1}"#, "config key 'nesterov' expects true or false, got 1"),
            (#"{"architecture": "cnn"}"#, "config key 'architecture' must be one of mlp, tcn, stgcn, ftp, got \"cnn\""),
            (
                #"{"members": [{"architecture": "ftp", "chanels": ["mask"]}]}"#,
                "config key 'members' member 1 has an unknown key 'chanels'; a member takes architecture and channels (every other key is the run's)"
            ),
            (
                #"{"members": [{"architecture": "tcn", "channels": ["mask"]}, {"channels": ["mask"]}]}"#,
                "config key 'members' member 2 needs an architecture, one of mlp, tcn, stgcn, ftp, got none"
            ),
            (
                #"{"members": [{"architecture": "ftp", "channels": ["mask", "speed"]}]}"#,
                "config key 'members' member 1: channel \"speed\" is not one of coordinates, confidence, mask, motion, bones, relativePositions, distances, fastMotion"
            ),
            (#"{"members": ["ftp"]}"#, "config key 'members' member 1 must be an object {\"architecture\": ..., \"channels\": [...]}, got \"ftp\""),
            (#"{"channels": ["coordinates", "speed"]}"#, "config key 'channels' must be one of coordinates, confidence, mask, motion, bones, relativePositions, distances, fastMotion, got \"speed\""),
            (#"{"classWeights": "balancd"}"#, "config key 'classWeights' expects \"none\", \"balanced\" or a list of numbers, got \"balancd\""),
            (#"{"hidden": [256, "x"]}"#, "config key 'hidden' expects a list of integers, got a list"),
        ]
        for (i, (json, message)) in cases.enumerated() {
            let path = "\(dir)/c\(i).json"
            try Data(json.utf8).write(to: URL(fileURLWithPath: path))
            let r = run(["fit", Self.fixture, "--config", path, "--out", "\(dir)/never"])
            XCTAssertEqual(r.code, 1, json)
            XCTAssertEqual(r.err, "error: \(path): \(message)\n")
        }
        let ranges: [(String, String)] = [
            (#"{"dropout": 1.5}"#, "config field 'dropout' must be in [0, 1), got 1.5"),
            (#"{"learningRate": 0}"#, "config field 'learningRate' must be in (0, ∞), got 0.0"),
            (#"{"architecture": "tcn", "kernel": 4}"#, "config field 'kernel' must be odd so that padding keeps the window length, got 4"),
            (#"{"epochs": 5, "warmupEpochs": 5}"#, "config field 'warmupEpochs' must be in [0, epochs) = [0, 5), got 5"),
            (#"{"nesterov": true}"#, "config field 'nesterov' needs optimizer sgd with momentum > 0"),
            (#"{"classWeights": [1, -1, 1]}"#, "config field 'classWeights' must be non-negative numbers, not all zero, got [1.0, -1.0, 1.0]"),
            (
                #"{"members": [{"architecture": "ftp", "channels": ["mask"]}], "streams": [["mask"]]}"#,
                "config field 'members' and streams cannot be given together: members are streams whose architectures may differ; give one"
            ),
            (#"{"ftpCoefficients": 0}"#, "config field 'ftpCoefficients' must be in [1, 64], got 0"),
        ]
        for (i, (json, message)) in ranges.enumerated() {
            let path = "\(dir)/r\(i).json"
            try Data(json.utf8).write(to: URL(fileURLWithPath: path))
            let r = run(["fit", Self.fixture, "--config", path, "--out", "\(dir)/never"])
            XCTAssertEqual(r.code, 1, json)
            XCTAssertEqual(r.err, "error: \(message)\n")
        }
        let notJSON = "\(dir)/bad.json"
        try Data("{epochs: 3}".utf8).write(to: URL(fileURLWithPath: notJSON))
        let r = run(["fit", Self.fixture, "--config", notJSON])
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.hasPrefix("error: \(notJSON): not a JSON object of config keys"), r.err)
        XCTAssertEqual(r.err.filter { $0 == "\n" }.count, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/never"))
    }

    func testFlagErrorsAreUsageErrors() {
        let cases: [([String], String)] = [
            (["--epochs", "three"], "--epochs expects an integer, got 'three'"),
            (["--residual", "maybe"], "--residual expects true or false, got 'maybe'"),
            (["--optimizer", "rmsprop"], "--optimizer must be one of sgd, adam, adamw, got \"rmsprop\""),
            (["--class-weights", "1,x"], "--class-weights expects \"none\", \"balanced\" or a list of numbers, got '1,x'"),
            (["--members", "tcn:mask,ftp"], "--members expects architecture:block+block,... (e.g. tcn:coordinates+mask,ftp:relativePositions), got 'ftp'"),
            (["--members", "tcn:mask,rnn:mask"], "--members member 2 needs an architecture, one of mlp, tcn, stgcn, ftp, got \"rnn\""),
        ]
        for (flags, message) in cases {
            let r = run(["fit", Self.fixture] + flags)
            XCTAssertEqual(r.code, 2, "\(flags)")
            XCTAssertEqual(r.err, "error: \(message)\n")
        }
    }

    func testFlagsOverrideTheConfigFileAndTheResolvedConfigIsSaved() throws {
        let dir = try folder()
        let path = "\(dir)/c.json"
        try Data(#"{"epochs": 1, "learningRate": 0.5, "classWeights": "balanced", "seed": 18446744073709551615}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let r = run(["fit", Self.fixture, "--config", path, "--learning-rate", "0.01", "--out", "\(dir)/run"] + Self.quick.dropLast(6))
        XCTAssertEqual(r.code, 0, r.err)
        let saved = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/run/config.json")))
        XCTAssertEqual(saved.epochs, 1)
        XCTAssertEqual(saved.learningRate, 0.01)
        XCTAssertEqual(saved.classWeights, .balanced)
        XCTAssertEqual(saved.seed, UInt64.max)
        XCTAssertEqual(saved.hidden, [16])
    }

    /// `--members` in its compact form and `--fill-gaps` reach the saved config.
    func testMembersAndFillGapsFlags() throws {
        let dir = try folder()
        let r = run(
            ["fit", Self.fixture, "--members", "tcn:coordinates+mask, ftp:relativePositions", "--fill-gaps", "true", "--widths", "4", "--epochs", "2", "--out", "\(dir)/run"]
                + Self.quick.filter { $0 != "--architecture" && $0 != "mlp" })
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("fit: members tcn:coordinates+mask, ftp:relativePositions,"), r.out)
        let saved = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/run/config.json")))
        XCTAssertEqual(saved.members, [.init(architecture: .tcn, channels: [.coordinates, .mask]), .init(architecture: .ftp, channels: [.relativePositions])])
        XCTAssertTrue(saved.fillGaps)
    }

    /// The two members' model is calibrated out of fold without validation sequences: fit says
    /// so with the ECE before and after, writes calibration.json with its evidence, and inspect
    /// shows the temperature; `--calibration none` writes the network as trained.
    func testFitCalibratesAndSaysSoAndInspectShowsIt() throws {
        let dir = try folder()
        let base =
            ["fit", Self.fixture, "--members", "tcn:coordinates+mask, ftp:relativePositions", "--widths", "4", "--epochs", "2", "--validation-fraction", "0"]
            + Self.quick.filter { $0 != "--architecture" && $0 != "mlp" }
        let r = run(base + ["--out", "\(dir)/run", "--calibration-folds", "2"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("fit: calibrating: 2 folds of the training sequences, the network trained again on the rest of each until 400 windows are held out\n"), r.out)
        XCTAssertTrue(r.out.contains("fit: calibrated: temperature "), r.out)
        XCTAssertTrue(r.out.contains(" fitted on out-of-fold predictions of 24 training windows (2 folds): ECE "), r.out)
        let model = try ActionModel(contentsOf: "\(dir)/run/model.atm")
        let c = try XCTUnwrap(model.header.calibration)
        XCTAssertEqual(c.folds, 2)
        XCTAssertTrue(r.out.contains(String(format: "log loss %.3f → %.3f", c.logLossBefore, c.logLossAfter)), r.out)
        let evidence = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/run/calibration.json"))) as? [String: Any])
        XCTAssertEqual((evidence["labels"] as? [Int])?.count, 24)
        XCTAssertEqual((evidence["logits"] as? [[Double]])?.first?.count, 3)
        var text = ""
        var out = Output(write: { text += $0 }, note: { _ in }, isTerminal: false)
        try InspectModel.run(path: "\(dir)/run/model.atm", json: false, out: &out)
        XCTAssertTrue(text.contains("probabilities: calibrated, logits divided by temperature \(InspectModel.number(c.temperature))"), text)
        let plain = run(base + ["--out", "\(dir)/plain", "--calibration", "none"])
        XCTAssertEqual(plain.code, 0, plain.err)
        // Fit says nothing of calibrating (its training report's "ECE if calibrated" row is the
        // report's, about sampling, not about this model).
        XCTAssertFalse(plain.out.contains("fit: calibrat"), plain.out)
        XCTAssertFalse(plain.out.contains("calibrated: temperature"), plain.out)
        XCTAssertNil(try ActionModel(contentsOf: "\(dir)/plain/model.atm").header.calibration)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/plain/calibration.json"))
        let bad = run(base + ["--out", "\(dir)/bad", "--calibration-folds", "11"])
        XCTAssertNotEqual(bad.code, 0)
        XCTAssertTrue(bad.err.contains("config field 'calibrationFolds' must be in [2, 10], got 11"), bad.err)
    }

    /// With no config, fit prints the recipe it chose from the data before training and saves
    /// it; a key given as a flag is kept and not mentioned.
    func testTheRecipeChoosesUnsetKeysFromTheDataAndSaysSo() throws {
        let dir = try folder()
        let r = run(["fit", Self.fixture, "--out", "\(dir)/r", "--epochs", "1", "--threads", "1", "--architecture", "mlp", "--hidden", "8"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("fit: recipe chosen from the data"), r.out)
        XCTAssertTrue(r.out.contains("windows     24 sequences of 10 frames: clips, one label each"), r.out)
        XCTAssertTrue(r.out.contains("windowMode fit, windowFrames 32"), r.out)
        XCTAssertTrue(r.out.contains("channels    skeleton 'natops-8' has 6 bones → channels coordinates+mask+bones"), r.out)
        XCTAssertFalse(r.out.contains("epochs 120"), "the user set epochs")
        let saved = try JSONDecoder().decode(TrainingConfig.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/r/config.json")))
        XCTAssertEqual(saved.windowMode, .fit)
        XCTAssertEqual(saved.channels, [.coordinates, .mask, .bones])
        XCTAssertEqual(saved.epochs, 1)
        XCTAssertEqual(saved.validationFraction, 0)

        let kept = run(["fit", Self.fixture, "--out", "\(dir)/k", "--window-mode", "sliding", "--epochs", "1", "--threads", "1"])
        XCTAssertEqual(kept.code, 0, kept.err)
        XCTAssertFalse(kept.out.contains("windowMode"), kept.out)
        let plain = run(["fit", Self.fixture, "--out", "\(dir)/n"] + Self.quick + ["--epochs", "1"])
        XCTAssertFalse(plain.out.contains("recipe"), "recipe none: " + plain.out)
        // Issue 37: a window length and frame rate without a window mode, on clips: the recipe
        // says they apply to whole clips, and what that means for a stream.
        let given = run(
            ["fit", Self.fixture, "--out", "\(dir)/g", "--window-frames", "8", "--frame-rate", "20", "--epochs", "1", "--threads", "1", "--architecture", "mlp"])
        XCTAssertEqual(given.code, 0, given.err)
        XCTAssertTrue(
            given.out.contains(
                "clips, one label each (at most 10 s); with the windowFrames and frameRate you gave, each whole clip at 20 fps is resampled to 8 frames: "
                    + "the model takes a whole clip (the training clips' median: 1 s), not the last 8 frames of a stream (windowMode sliding for that) → windowMode fit"),
            given.out)
        // The model's Core ML metadata then names the clip and how to sample it (CoreMLExportTests).
    }

    /// tune prints every candidate and the table, then trains the chosen config into the run
    /// folder with the table beside it.
    func testTuneScoresCandidatesThenTrainsTheChosenOne() throws {
        let dir = try folder()
        let r = run(
            [
                "tune", Self.fixture, "--out", "\(dir)/t", "--folds", "2", "--minutes", "5", "--epochs", "1", "--threads", "1",
                "--architecture", "mlp", "--hidden", "8", "--window-frames", "10",
            ])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("tune: tiny-natops: 24 training sequences in 2 folds (12/12 held out)"), r.out)
        XCTAssertTrue(r.out.contains("| candidate | epochs | fold 1 | fold 2 | mean | sd | seconds |"), r.out)
        XCTAssertTrue(r.out.contains("tune: chosen "), r.out)
        for name in ["model.atm", "config.json", "tune.md", "tune.json", "tune-trials.jsonl"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/t/\(name)"), name)
        }
        XCTAssertEqual(run(["tune", Self.fixture, "--folds", "1"]).code, 2, "one fold is a usage error")
        XCTAssertEqual(run(["tune", Self.fixture, "--out", "\(dir)/t", "--resume", "--force"]).code, 2, "resume or replace, not both")

        // A resumed search runs no trial again and ends with the same table.
        let trials = try String(contentsOfFile: "\(dir)/t/tune-trials.jsonl", encoding: .utf8)
        let again = run(
            [
                "tune", Self.fixture, "--out", "\(dir)/t", "--resume", "--folds", "2", "--minutes", "5", "--epochs", "1", "--threads", "1",
                "--architecture", "mlp", "--hidden", "8", "--window-frames", "10",
            ])
        XCTAssertEqual(again.code, 0, again.err)
        let ran = trials.split(separator: "\n").count - 1
        XCTAssertGreaterThan(ran, 4)
        XCTAssertTrue(again.out.contains("tune: resuming \(dir)/t: \(ran) trials already run"), again.out)
        XCTAssertEqual(try String(contentsOfFile: "\(dir)/t/tune-trials.jsonl", encoding: .utf8), trials, "nothing run again, nothing appended")
        func table(_ out: String) -> String { out.components(separatedBy: "| candidate |").last!.components(separatedBy: "tune: chosen").first! }
        XCTAssertEqual(
            table(again.out).replacingOccurrences(of: #"\| [0-9.]+ \|\n"#, with: "|\n", options: .regularExpression),
            table(r.out).replacingOccurrences(of: #"\| [0-9.]+ \|\n"#, with: "|\n", options: .regularExpression), "the same table, seconds aside")
        // A log of other data is refused.
        let other = try folder()
        try Data(#"{"actiontrain":"tune-trials","datasetHash":"0000"}"#.utf8 + Data("\n".utf8)).write(to: URL(fileURLWithPath: "\(other)/tune-trials.jsonl"))
        let refused = run(["tune", Self.fixture, "--out", other, "--resume", "--folds", "2", "--epochs", "1"])
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("the trials were run on other data"), refused.err)
        XCTAssertTrue(refused.err.contains("start a new run without --resume"), "the CLI names the flag: \(refused.err)")
    }

    // MARK: runs, checkpoints, resume

    func testFitThenResumeEqualsAnUninterruptedRun() throws {
        let dir = try folder()
        let straight = run(["fit", Self.fixture, "--out", "\(dir)/a", "--epochs", "4"] + Self.quick)
        XCTAssertEqual(straight.code, 0, straight.err)
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/b", "--epochs", "2"] + Self.quick).code, 0)
        let resumed = run(["fit", "--resume", "\(dir)/b", "--epochs", "4"])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertTrue(resumed.out.contains("fit: resuming \(dir)/b at epoch 3, batch 0"), resumed.out)
        XCTAssertEqual(try parameters("\(dir)/b"), try parameters("\(dir)/a"))
        let log = try String(contentsOfFile: "\(dir)/b/log.jsonl", encoding: .utf8)
        XCTAssertEqual(log.split(separator: "\n").count, 4)
        for name in ["curves.svg", "checkpoint.atc", "config.json", "report.txt"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/b/\(name)"), name)
        }
        // The validation report is eval's own report of the written model on the held-out sequences.
        let report = try ReportJSON.read("\(dir)/b/report.json")
        XCTAssertEqual(report.data.split, "validation")
        let held = try XCTUnwrap(straight.out.firstMatch(of: try Regex(#", (\d+) validation sequences"#))?.output[1].substring)
        XCTAssertEqual(report.sequence?.samples, Int(held))
        // A finished run resumed again has nothing to train and writes the same model.
        let again = run(["fit", "--resume", "\(dir)/b"])
        XCTAssertEqual(again.code, 0, again.err)
        XCTAssertTrue(again.out.contains("the run already finished (4 epochs)"), again.out)
        XCTAssertEqual(try parameters("\(dir)/b"), try parameters("\(dir)/a"))
    }

    func testAugmentedRunsAreReproducibleAndResumeBitIdentically() throws {
        let dir = try folder()
        let augment = [
            "--augmentation", "flipProbability=0.5,jitterProbability=1,jitterStandardDeviation=0.05,rotationProbability=0.5,maxRotationDegrees=20",
            "--align-facing", "true",
        ]
        let a = run(["fit", Self.fixture, "--out", "\(dir)/a", "--epochs", "3"] + Self.quick + augment)
        XCTAssertEqual(a.code, 0, a.err)
        XCTAssertTrue(a.out.contains("windows, augmented)"), a.out)
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/b", "--epochs", "1"] + Self.quick + augment).code, 0)
        XCTAssertEqual(run(["fit", "--resume", "\(dir)/b", "--epochs", "3"]).code, 0)
        XCTAssertEqual(try parameters("\(dir)/b"), try parameters("\(dir)/a"))
        // Augmentation changes the training: a run without it ends elsewhere.
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/c", "--epochs", "3", "--align-facing", "true"] + Self.quick).code, 0)
        XCTAssertNotEqual(try parameters("\(dir)/c"), try parameters("\(dir)/a"))
        // The model file carries the alignment step, so the runtime reproduces it.
        let model = try ActionModel(contentsOf: "\(dir)/a/model.atm")
        XCTAssertEqual(
            model.input.steps.last,
            .alignFacing(
                left: ["leftHandTip", "leftElbow", "leftWrist", "leftThumb"],
                right: ["rightHandTip", "rightElbow", "rightWrist", "rightThumb"], verticalAxis: 1))
    }

    func testPreprocessingAndAugmentationErrorsNameTheKey() {
        let dir = NSTemporaryDirectory() + "never-\(UUID().uuidString)"
        let typo = run(["fit", Self.fixture, "--out", dir, "--augmentation", "flipProbabilty=0.5"] + Self.quick)
        XCTAssertEqual(typo.code, 2)
        XCTAssertTrue(typo.err.contains("unknown key 'flipProbabilty'; did you mean 'flipProbability'?"), typo.err)
        let range = run(["fit", Self.fixture, "--out", dir, "--augmentation", "maxScaleChange=1.5,scaleProbability=1"] + Self.quick)
        XCTAssertEqual(range.code, 1)
        XCTAssertTrue(range.err.contains("augmentation 'maxScaleChange' must be in [0, 1)"), range.err)
        let axis = run(["fit", Self.fixture, "--out", dir, "--vertical-axis", "3"] + Self.quick)
        XCTAssertEqual(axis.code, 1)
        XCTAssertTrue(axis.err.contains("config field 'verticalAxis' must be 0, 1 or 2, got 3"), axis.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir), "a refused run leaves nothing behind")
    }

    func testResumeRefusesChangesToTheModelAndDamagedCheckpoints() throws {
        let dir = try folder()
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/b", "--epochs", "1"] + Self.quick).code, 0)
        let change = run(["fit", "--resume", "\(dir)/b", "--hidden", "8"])
        XCTAssertEqual(change.code, 2)
        XCTAssertEqual(change.err, "error: --hidden cannot change when resuming (it changes the model or the data); start a new run instead\n")
        let path = "\(dir)/b/checkpoint.atc"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes = bytes.prefix(bytes.count - 100)
        try bytes.write(to: URL(fileURLWithPath: path))
        let torn = run(["fit", "--resume", "\(dir)/b"])
        XCTAssertEqual(torn.code, 1)
        XCTAssertTrue(torn.err.hasPrefix("error: \(path): the checkpoint is truncated or torn"), torn.err)
        let none = run(["fit", "--resume", "\(dir)/nothing"])
        XCTAssertEqual(none.code, 1)
        XCTAssertEqual(none.err, "error: \(dir)/nothing: no checkpoint.atc to resume from; was it written by 'actiontrain fit'?\n")
        let existing = run(["fit", Self.fixture, "--out", "\(dir)/b"])
        XCTAssertEqual(existing.code, 1)
        XCTAssertTrue(existing.err.contains("pass --force to replace it, --resume \(dir)/b to continue it"), existing.err)
    }

    func testDivergenceNamesTheLastGoodCheckpointAndLeavesItIntact() throws {
        let dir = try folder()
        let first = run(["fit", Self.fixture, "--out", "\(dir)/f", "--epochs", "30", "--learning-rate", "1e30"] + Self.quick)
        XCTAssertEqual(first.code, 1)
        let error = String(first.err.split(separator: "\n").last { $0.hasPrefix("error:") } ?? "") + "\n"
        XCTAssertTrue(error.hasPrefix("error: training diverged: the loss is "), first.err)
        XCTAssertTrue(error.hasSuffix("at epoch 1, batch 2; lower the learning rate or set gradientClipNorm; no checkpoint was written (it diverged in the first epoch); start again with a lower learning rate\n"), first.err)

        // A healthy epoch, then a resume with an absurd rate: epoch 2 diverges, epoch 1's
        // checkpoint stays as it was.
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/d", "--epochs", "1"] + Self.quick).code, 0)
        let path = "\(dir)/d/checkpoint.atc"
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let r = run(["fit", "--resume", "\(dir)/d", "--epochs", "5", "--learning-rate", "1e30"])
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.contains("at epoch 2, batch "), r.err)
        XCTAssertTrue(
            r.err.hasSuffix("the last good checkpoint (end of epoch 1) is intact in \(path); resume from it with a lower rate: actiontrain fit --resume \(dir)/d --learning-rate LR\n"),
            r.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before)
        XCTAssertEqual(try Checkpoint.read(path).state.progress.epoch, 2)
        XCTAssertEqual(run(["fit", "--resume", "\(dir)/d", "--epochs", "2"]).code, 0)
    }

    /// Ctrl-C while training: SIGINT to this process reaches the run's dispatch source, the run
    /// saves a checkpoint and exits with 130 and a resume hint, and resuming gives the same
    /// weights as an uninterrupted run.
    func testCtrlCSavesACheckpointAndResumeCompletesTheSameRun() throws {
        let dir = try folder()
        let args = ["--epochs", "150"] + Self.quick
        let previous = signal(SIGINT, SIG_IGN)  // a late signal must not kill the test runner
        defer { signal(SIGINT, previous) }
        // Written by the thread before `done` is signalled and read after waiting for it.
        final class Box: @unchecked Sendable { var result: (code: Int32, out: String, err: String)? }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.result = runActionTrainCLI(["fit", Self.fixture, "--out", "\(dir)/c"] + args)
            done.signal()
        }
        thread.start()
        var sent = false
        for _ in 0..<3000 {
            let log = (try? String(contentsOfFile: "\(dir)/c/log.jsonl", encoding: .utf8)) ?? ""
            if log.split(separator: "\n").count >= 2 {
                kill(getpid(), SIGINT)
                sent = true
                break
            }
            usleep(10_000)
        }
        XCTAssertTrue(sent, "the run never logged two epochs")
        done.wait()
        let r = try XCTUnwrap(box.result)
        XCTAssertEqual(r.code, 130, r.err)
        XCTAssertTrue(r.err.contains("Resume with: actiontrain fit --resume \(dir)/c\n"), r.err)
        XCTAssertTrue(r.err.contains("interrupted at epoch "), r.err)
        XCTAssertFalse(r.err.contains("error:"), r.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir)/c/model.atm"))
        let resumed = run(["fit", "--resume", "\(dir)/c"])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertEqual(run(["fit", Self.fixture, "--out", "\(dir)/straight"] + args).code, 0)
        XCTAssertEqual(try parameters("\(dir)/c"), try parameters("\(dir)/straight"))
    }

    func testAnEnsembleSaysWhichMemberTrainsAndReportsEach() throws {
        let dir = try folder()
        let r = run(["fit", Self.fixture, "--out", "\(dir)/e", "--epochs", "2", "--ensemble", "2"] + Self.quick)
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("parameters per member, 2 members trained in turn"), r.out)
        XCTAssertTrue(r.out.contains("fit: member 1/2 (seed 3)\nepoch   1/2"), r.out)
        XCTAssertTrue(r.out.contains("fit: member 2/2 (seed \(Ensemble.seed(3, member: 1)))\nepoch   1/2"), r.out)
        XCTAssertTrue(r.out.contains("fit: member 2/2: keeping the parameters of epoch"), r.out)
        let scores = try XCTUnwrap(r.out.firstMatch(of: try Regex(#"validation window accuracy: member 1 ([0-9.]+), member 2 ([0-9.]+); ensemble ([0-9.]+)\n"#)))
        let model = try ActionModel(contentsOf: "\(dir)/e/model.atm")
        XCTAssertEqual(String(scores.output[3].substring!), String(format: "%.3f", model.header.provenance.metrics["validationAccuracy"]!))
        let member2 = try ActionModel(contentsOf: "\(dir)/e/member2/model.atm")
        XCTAssertEqual(String(scores.output[2].substring!), String(format: "%.3f", member2.header.provenance.metrics["validationAccuracy"]!))
        // Resumed when finished: the same model again.
        let written = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/e/model.atm"))
        let resumed = run(["fit", "--resume", "\(dir)/e"])
        XCTAssertEqual(resumed.code, 0, resumed.err)
        XCTAssertTrue(resumed.out.contains("fit: the run already finished (2 epochs); writing the model again"), resumed.out)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/e/model.atm")), written)
    }

    /// tune scores and refits a config with `ensemble` as any other: each fold's fit and the
    /// refit train the members.
    func testTuneFitsAnEnsembleConfig() throws {
        let dir = try folder()
        let r = run(
            [
                "tune", Self.fixture, "--out", "\(dir)/t", "--folds", "2", "--minutes", "5", "--epochs", "1", "--threads", "1",
                "--architecture", "mlp", "--hidden", "8", "--window-frames", "10", "--ensemble", "2",
            ])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("fit: member 2/2"), r.out)
        let model = try ActionModel(contentsOf: "\(dir)/t/model.atm")
        XCTAssertEqual((model.header.layers.first?.kind as? AverageProbabilitiesKind)?.members.count, 2)
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(dir)/t/member2/model.atm"))
    }

    func testTerminalProgressBarAndPlainLines() throws {
        let dir = try folder()
        var stdout = ""
        var output = Output(write: { stdout += $0 }, note: { _ in }, isTerminal: true)
        XCTAssertEqual(ActionTrainCLI.run(["fit", Self.fixture, "--out", "\(dir)/t", "--epochs", "2"] + Self.quick, out: &output), 0)
        XCTAssertTrue(stdout.contains("\r\u{1B}[2Kepoch 1/2 ["), stdout)  // the bar, redrawn in place
        XCTAssertTrue(stdout.contains("win/s  loss "), stdout)
        XCTAssertTrue(stdout.contains("ETA "), stdout)
        let plain = run(["fit", Self.fixture, "--out", "\(dir)/p", "--epochs", "2"] + Self.quick)
        XCTAssertFalse(plain.out.contains("\r"))
        XCTAssertEqual(plain.out.split(separator: "\n").filter { $0.hasPrefix("epoch ") }.count, 2)
    }

    // MARK: shards

    func testFitFromShardsWritesTheModelOfTheFitInMemoryAndRefusesOtherWindows() throws {
        let dir = try folder()
        let convert = run(["convert", "\(dir)/shards", Self.fixture, "--to", "shards", "--shard-windows", "6", "--epochs", "2"] + Self.quick)
        XCTAssertEqual(convert.code, 0, convert.err)
        XCTAssertTrue(convert.out.contains("training and"), convert.out)
        let fromShards = run(["fit", "\(dir)/shards", "--out", "\(dir)/a"])
        XCTAssertEqual(fromShards.code, 0, fromShards.err)
        let inMemory = run(["fit", Self.fixture, "--out", "\(dir)/b", "--epochs", "2"] + Self.quick)
        XCTAssertEqual(inMemory.code, 0, inMemory.err)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/a/model.atm")), try Data(contentsOf: URL(fileURLWithPath: "\(dir)/b/model.atm")))
        let other = run(["fit", "\(dir)/shards", "--out", "\(dir)/c", "--window-frames", "8"])
        XCTAssertEqual(other.code, 1)
        XCTAssertTrue(other.err.contains("\(dir)/shards/manifest.json: the shards were cut with other values of windowFrames"), other.err)
        let again = run(["convert", "\(dir)/shards", Self.fixture, "--to", "shards"] + Self.quick)
        XCTAssertEqual(again.code, 1)
        XCTAssertTrue(again.err.contains("--force"), again.err)
        // --force replaces the conversion's files and nothing else (it removed the whole folder).
        try Data("mine".utf8).write(to: URL(fileURLWithPath: "\(dir)/shards/NOTES.md"))
        let forced = run(["convert", "\(dir)/shards", Self.fixture, "--to", "shards", "--shard-windows", "100", "--force"] + Self.quick)
        XCTAssertEqual(forced.code, 0, forced.err)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/shards").sorted(), ["NOTES.md", "manifest.json", "stream-00000.shard", "train-00000.shard", "validation-00000.shard"])
    }
}
