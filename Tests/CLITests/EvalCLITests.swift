import ActionRuntime
import Datasets
import Eval
import Foundation
import Pipelines
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `actiontrain eval` and `compare` end to end on a tiny native dataset and hand-set models.
final class EvalCLITests: XCTestCase {
    let classes = ["left", "right", "up"]
    var dir: URL!

    override func setUpWithError() throws {
        dir = try temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    static let skeleton = Skeleton(name: "tiny", joints: ["a", "b"], dimensions: 3, units: .metres)

    /// `perClass` sequences of 8 frames per class: joint a sits at the unit vector of its
    /// class (left x, right y, up z), joint b at the origin. Split as given.
    func writeDataset(_ name: String, perClass: Int = 4, split: String? = "test", classes: [String]? = nil, shift: Float = 0) throws -> String {
        var sequences: [PoseSequence] = []
        for (c, label) in (classes ?? self.classes).enumerated() {
            for k in 0..<perClass {
                var coordinates = [Float](repeating: 0, count: 8 * 2 * 3)
                for f in 0..<8 { coordinates[f * 6 + c] = 1 + shift }
                sequences.append(
                    PoseSequence(
                        id: "\(label)-\(k)", label: label, split: split, jointCount: 2, dimensions: 3, frameCount: 8,
                        coordinates: coordinates, present: [UInt8](repeating: 1, count: 16)))
            }
        }
        let d = Dataset(name: "tiny", skeleton: Self.skeleton, sequences: sequences, classes: self.classes, frameRate: 10)
        let p = path(name)
        try NativeFormat.write(d, to: p)
        return p
    }

    /// A flatten → linear model over 4-frame windows of coordinates (4 frames · 6 inputs, no
    /// bias) whose logit for class c is 5 · Σ_frames Σ_{s ∈ weights[c]} a[s]. The default,
    /// `[[0], [1], [2]]`, reads each class off its own axis and is right on every window.
    func writeModel(_ name: String, weights: [[Int]] = [[0], [1], [2]]) throws -> String {
        let spec = InputSpec(
            skeleton: Self.skeleton, window: WindowSpec(frames: 4), steps: [], channels: [.coordinates])
        let network = try Network(layers: [.flatten, .linear(inputs: 24, outputs: 3)], input: Shape(time: 4, channels: 6))
        network.parameters.update(repeating: 0, count: network.parameterCount)
        let weight = network.tensors.first { $0.name.hasSuffix("weight") }!
        for (c, sources) in weights.enumerated() {
            for s in sources {
                for f in 0..<4 { network.parameters[weight.offset + c * 24 + f * 6 + s] = 5 }
            }
        }
        let bytes = try ModelFile.encode(
            classes: classes, input: spec, network: network,
            provenance: ModelHeader.Provenance(datasetHash: "fnv1a64:1111111111111111", configHash: "fnv1a64:2222222222222222", seed: 9))
        let p = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }

    func testEvalWritesEveryReport() throws {
        let data = try writeDataset("d.jsonl"), model = try writeModel("good.atm")
        let r = run(["eval", model, data, "--report", path("r"), "--stride", "2", "--bootstrap", "50"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("actiontrain evaluation report (actiontrain.eval 1)\nmodel             \(model)\n"), r.out)
        XCTAssertTrue(r.out.contains("training config   fnv1a64:2222222222222222\n"))
        XCTAssertTrue(r.out.contains("== sequence level (headline): 12 sequences (mean of window probabilities) =="))
        // 8 frames, window 4, stride 2 → starts 0, 2, 4: 36 windows.
        XCTAssertTrue(r.out.contains("== window level: 36 windows from 12 sequences =="))
        XCTAssertTrue(r.out.hasSuffix("eval: headline accuracy 1.0000 at the sequence level (12 sequences); reports in \(path("r"))\n"), r.out)
        for name in EvalCommand.reportFileNames {
            XCTAssertTrue(FileManager.default.fileExists(atPath: path("r/\(name)")), "\(name) missing")
        }
        let report = try ReportJSON.read(path("r/report.json"))
        XCTAssertEqual(report.predictions?.window.count, 36)
        XCTAssertEqual(report.predictions?.window.start?.prefix(3), [0, 2, 4])
        XCTAssertEqual(report.predictions?.sequence?.sequence.first, "left-0")
        XCTAssertEqual(report.data.split, "test")
        XCTAssertEqual(report.data.stride, 2)
        XCTAssertEqual(report.model.configHash, "fnv1a64:2222222222222222")
        XCTAssertEqual(report.model.input["channels"], "coordinates")
        XCTAssertEqual(report.data.hash, try DatasetLoader.load(data).contentHash)
        XCTAssertEqual(try String(contentsOfFile: path("r/report.txt"), encoding: .utf8), TextReport.render(report))
    }

    func testGatePassesAndFailsWithExitCodes() throws {
        let data = try writeDataset("d.jsonl")
        let good = try writeModel("good.atm")
        // "up" windows light up both the left and the up logit equally: the tie goes to left.
        let bad = try writeModel("bad.atm", weights: [[0, 2], [1], [2]])
        XCTAssertEqual(run(["eval", good, data, "--json", path("base.json"), "--bootstrap", "50"]).code, 0)

        let same = run(["eval", good, data, "--baseline", path("base.json"), "--junit", path("same.xml"), "--bootstrap", "50"])
        XCTAssertEqual(same.code, 0, same.err)
        XCTAssertTrue(same.out.contains("gate: passed (5 checks)\n"), same.out)

        let worse = run(["eval", bad, data, "--baseline", path("base.json"), "--junit", path("worse.xml"), "--markdown", path("worse.md")])
        XCTAssertEqual(worse.code, 3)
        XCTAssertEqual(
            worse.err, "error: regression gate failed against \(path("base.json")): accuracy, macro F1, recall[up] (see the checks above)\n")
        XCTAssertTrue(worse.out.contains("FAIL  recall[up] 1.000 → 0.000 (-1.000)"), worse.out)
        XCTAssertTrue(try String(contentsOfFile: path("worse.md"), encoding: .utf8).contains("## Regression gate: FAILED"))

        // JUnit: 5 test cases, 3 failures, parsed back.
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: path("worse.xml"))))
        final class Counter: NSObject, XMLParserDelegate {
            var counts: [String: Int] = [:]
            func parser(_ p: XMLParser, didStartElement e: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String]) {
                counts[e, default: 0] += 1
            }
        }
        let counter = Counter()
        parser.delegate = counter
        XCTAssertTrue(parser.parse(), String(describing: parser.parserError))
        XCTAssertEqual(counter.counts["testcase"], 5)
        XCTAssertEqual(counter.counts["failure"], 3)
        XCTAssertTrue(try String(contentsOfFile: path("same.xml"), encoding: .utf8).contains("failures=\"0\""))
    }

    func testCompareRequiresSignificanceOnSmallSets() throws {
        let data = try writeDataset("d.jsonl")
        XCTAssertEqual(run(["eval", try writeModel("good.atm"), data, "--json", path("a.json")]).code, 0)
        XCTAssertEqual(run(["eval", try writeModel("bad.atm", weights: [[0, 2], [1], [2]]), data, "--json", path("b.json")]).code, 0)
        let plain = run(["compare", path("a.json"), path("b.json")])
        XCTAssertEqual(plain.code, 3)
        XCTAssertTrue(plain.out.contains("McNemar on the 12 paired sequences: baseline right/candidate wrong 4, baseline wrong/candidate right 0, exact binomial p = 0.1250"), plain.out)
        // Four up sequences lost: McNemar p = 2/16 = 0.125 overall and on the up class, not
        // significant at 0.05; but losing a whole class is a significant macro-F1 drop for the
        // paired bootstrap (a resample without any up sequence has probability (8/12)^12 < 1%).
        let significant = run(["compare", path("a.json"), path("b.json"), "--require-significance"])
        XCTAssertEqual(significant.code, 3, significant.out)
        XCTAssertTrue(significant.err.contains(": macro F1 (see the checks above)"), significant.err)
        let lenient = run(["compare", path("a.json"), path("b.json"), "--require-significance", "--max-macro-f1-drop", "0.5"])
        XCTAssertEqual(lenient.code, 0, lenient.out + lenient.err)
        XCTAssertTrue(lenient.out.contains("gate: passed (5 checks)"))
        XCTAssertTrue(lenient.out.contains("PASS  recall[up] 1.000 → 0.000 (-1.000): drops more than 0.100 but not significantly"), lenient.out)
        let loose = run(["compare", path("a.json"), path("b.json"), "--max-accuracy-drop", "0.5", "--max-macro-f1-drop", "0.5", "--recall-drop", "up=1"])
        XCTAssertEqual(loose.code, 0, loose.out)
        let policy = path("policy.json")
        try Data(#"{"maxAccuracyDrop": 0.5, "maxMacroF1Drop": 0.5, "classRecallDrop": {"up": 1}}"#.utf8).write(to: URL(fileURLWithPath: policy))
        XCTAssertEqual(run(["compare", path("a.json"), path("b.json"), "--policy", policy]).code, 0)
        XCTAssertEqual(run(["compare", path("a.json"), path("b.json"), "--policy", policy, "--max-recall-drop", "0.1", "--recall-drop", "up=0.1"]).code, 3)
        let window = run(["compare", path("a.json"), path("b.json"), "--level", "window"])
        XCTAssertTrue(window.out.contains("paired            60 windows from 12 sequences, window level\n"), window.out)
        XCTAssertTrue(window.out.contains("(windows of one sequence are not independent"), window.out)
    }

    func testRefusalsAndBadInput() throws {
        let data = try writeDataset("d.jsonl"), model = try writeModel("good.atm")
        XCTAssertEqual(run(["eval", model, data, "--json", path("a.json"), "--bootstrap", "0"]).code, 0)
        let shifted = try writeDataset("shifted.jsonl", shift: 0.5)
        XCTAssertEqual(run(["eval", model, shifted, "--json", path("other.json"), "--bootstrap", "0"]).code, 0)
        let different = run(["compare", path("a.json"), path("other.json")])
        XCTAssertEqual(different.code, 1)
        XCTAssertTrue(different.err.hasPrefix("error: cannot compare the reports: \(path("a.json")) and \(path("other.json")): they evaluate different datasets"), different.err)
        XCTAssertEqual(different.err.filter { $0 == "\n" }.count, 1)

        XCTAssertEqual(run(["eval", model, data, "--json", path("stride.json"), "--stride", "4", "--bootstrap", "0"]).code, 0)
        let stride = run(["compare", path("a.json"), path("stride.json"), "--junit", path("refused.xml")])
        XCTAssertEqual(stride.code, 1)
        XCTAssertTrue(stride.err.contains("they hold different samples (60 vs 24 windows"), stride.err)
        // CI still gets a JUnit file: one errored test case saying why.
        let junit = try String(contentsOfFile: path("refused.xml"), encoding: .utf8)
        XCTAssertTrue(junit.contains("errors=\"1\""))
        XCTAssertTrue(junit.contains("<error type=\"incomparable\" message=\"cannot compare the reports: "), junit)
        let parser = XMLParser(data: Data(junit.utf8))
        XCTAssertTrue(parser.parse(), String(describing: parser.parserError))

        let unknownClass = run(["compare", path("a.json"), path("a.json"), "--recall-drop", "upp=0.2"])
        XCTAssertEqual(unknownClass.code, 2)
        XCTAssertEqual(unknownClass.err, "error: invalid gate settings: classRecallDrop names 'upp', which is not among the classes (left, right, up)\n")

        let notReport = path("x.json")
        try Data("{\"accuracy\": 1}".utf8).write(to: URL(fileURLWithPath: notReport))
        let r = run(["compare", notReport, path("a.json")])
        XCTAssertEqual(r.code, 1)
        XCTAssertEqual(r.err, "error: \(notReport): is not an actiontrain evaluation report (no \"schema\": \"actiontrain.eval\")\n")

        let single = try writeDataset("single.jsonl", classes: ["up"])
        let s = run(["eval", model, single])
        XCTAssertEqual(s.code, 1)
        XCTAssertTrue(s.err.hasPrefix("error: \(single) (split test): the evaluation set holds only class 'up' (20 samples)"), s.err)

        let usage = run(["eval", model, data, "--junit", path("j.xml")])
        XCTAssertEqual(usage.code, 2)
        XCTAssertEqual(usage.err, "error: --junit writes the gate's result and needs --baseline FILE\n")
        XCTAssertEqual(run(["compare", path("a.json"), path("a.json"), "--alpha", "2"]).err, "error: invalid gate settings: alpha must be between 0 and 1 (exclusive), got 2.0\n")
        let typo = path("typo.json")
        try Data(#"{"maxAccuracyDrp": 0.1}"#.utf8).write(to: URL(fileURLWithPath: typo))
        let t = run(["compare", path("a.json"), path("a.json"), "--policy", typo])
        XCTAssertEqual(t.code, 1)
        XCTAssertTrue(t.err.contains("invalid gate policy: unknown key 'maxAccuracyDrp'"), t.err)
    }

    func testNeverOverwritesAFileItDidNotWrite() throws {
        let data = try writeDataset("d.jsonl"), model = try writeModel("good.atm")
        let mine = path("notes.json")
        try Data("my notes".utf8).write(to: URL(fileURLWithPath: mine))
        let r = run(["eval", model, data, "--json", mine, "--bootstrap", "0"])
        XCTAssertEqual(r.code, 1)
        XCTAssertEqual(r.err, "error: \(mine) exists and was not written by actiontrain eval; pass --force to replace it or choose another path\n")
        XCTAssertEqual(try String(contentsOfFile: mine, encoding: .utf8), "my notes")
        XCTAssertEqual(r.out, "", "nothing may run before the refusal")
        // Our own report may be replaced; --force replaces anything.
        XCTAssertEqual(run(["eval", model, data, "--json", path("a.json"), "--bootstrap", "0"]).code, 0)
        XCTAssertEqual(run(["eval", model, data, "--json", path("a.json"), "--bootstrap", "0"]).code, 0)
        XCTAssertEqual(run(["eval", model, data, "--json", mine, "--bootstrap", "0", "--force"]).code, 0)
        XCTAssertNoThrow(try ReportJSON.read(mine))
        // A report folder holding a user's file under one of our names is refused too.
        try FileManager.default.createDirectory(atPath: path("r"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path("r/report.md")))
        XCTAssertEqual(run(["eval", model, data, "--report", path("r"), "--bootstrap", "0"]).code, 1)
    }

    func testAReportTheUserEditedIsKeptWithoutForce() throws {
        // Issue 26 item 8: the marker near the top of an edited report still said "ours", so a
        // second eval replaced the user's edits. Now the folder's record of what eval wrote
        // (content hashes) tells an unchanged report from an edited one.
        let data = try writeDataset("d.jsonl"), model = try writeModel("good.atm")
        let args = ["eval", model, data, "--report", path("r"), "--bootstrap", "0"]
        XCTAssertEqual(run(args).code, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path("r/.actiontrain-outputs.json")))
        XCTAssertEqual(run(args).code, 0, "an unchanged report of ours is replaced")
        let md = path("r/report.md")
        let edited = try String(contentsOfFile: md, encoding: .utf8) + "\nMy conclusions: ship it.\n"
        try Data(edited.utf8).write(to: URL(fileURLWithPath: md))
        let r = run(args)
        XCTAssertEqual(r.code, 1)
        XCTAssertEqual(r.err, "error: \(md) was changed since actiontrain wrote it; pass --force to replace it or choose another path\n")
        XCTAssertEqual(try String(contentsOfFile: md, encoding: .utf8), edited)
        XCTAssertEqual(run(args + ["--force"]).code, 0)
        XCTAssertFalse(try String(contentsOfFile: md, encoding: .utf8).contains("My conclusions"))
        // The same for --json.
        XCTAssertEqual(run(["eval", model, data, "--json", path("a.json"), "--bootstrap", "0"]).code, 0)
        try Data((try String(contentsOfFile: path("a.json"), encoding: .utf8) + " ").utf8).write(to: URL(fileURLWithPath: path("a.json")))
        XCTAssertEqual(run(["eval", model, data, "--json", path("a.json"), "--bootstrap", "0"]).code, 1)
        // A report folder another eval writes is refused, naming it.
        let lock = try FolderLock(path("r"), command: "eval")
        let busy = run(args + ["--force"])
        XCTAssertEqual(busy.code, 1)
        XCTAssertTrue(busy.err.contains("\(path("r")) is being written by another actiontrain process (pid \(getpid()) on "), busy.err)
        withExtendedLifetime(lock) {}
    }

    func testHelpListsEveryOption() {
        for (name, options) in [("eval", EvalCommand.spec.options.map(\.name)), ("compare", CompareCommand.spec.options.map(\.name))] {
            let r = run([name, "--help"])
            XCTAssertEqual(r.code, 0)
            for o in options { XCTAssertTrue(r.out.contains("--\(o)"), "\(name): --\(o) missing from help") }
        }
        XCTAssertTrue(run(["--help"]).out.contains("compare"))
    }
}

/// `actiontrain eval` is the library's `Evaluation.run` plus outputs: the same report.
final class EvalCommandIsTheLibraryTests: XCTestCase {
    func testTheCommandsReportIsTheLibrarysReport() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var output = Output(write: { _ in }, note: { _ in }, isTerminal: false)
        let fixture = FitCLITests.fixture, run = dir.appendingPathComponent("run").path, json = dir.appendingPathComponent("r.json").path
        XCTAssertEqual(ActionTrainCLI.run(["fit", fixture, "--out", run, "--epochs", "2"] + FitCLITests.quick, out: &output), 0)
        let model = "\(run)/model.atm"
        XCTAssertEqual(ActionTrainCLI.run(["eval", model, fixture, "--json", json, "--stride", "4", "--bootstrap", "50", "--seed", "5", "--top-k", "2"], out: &output), 0)
        var settings = EvalSettings()
        (settings.bootstrapResamples, settings.seed, settings.topK) = (50, 5, [2])
        let report = try Evaluation.run(
            model: try ActionModel(contentsOf: model), modelPath: model, dataset: try DatasetLoader.load(fixture), dataPath: fixture,
            options: .init(stride: 4, settings: settings))
        XCTAssertEqual(try ReportJSON.encode(report), try Data(contentsOf: URL(fileURLWithPath: json)))
        XCTAssertEqual(report.sequence?.samples, 24)
    }
}
