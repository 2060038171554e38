@testable import actiontrain
import TestSupport
import XCTest

final class CLITests: XCTestCase {
    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    func testHelpListsEveryOption() {
        let r = run(["fit", "--help"])
        XCTAssertEqual(r.code, 0)
        for o in FitCommand.spec.options { XCTAssertTrue(r.out.contains("--\(o.name)"), "--\(o.name) missing from help") }
        XCTAssertTrue(run(["--help"]).out.contains("eval"))
    }

    func testUnknownFlagSuggestsTheClosestOne() {
        let r = run(["fit", "data.jsonl", "--epohcs", "3"])
        XCTAssertEqual(r.code, 2)
        XCTAssertEqual(r.err, "error: unknown option '--epohcs' for 'fit'; did you mean '--epochs'? See 'actiontrain fit --help'.\n")
    }

    func testMissingDatasetIsOneLineError() {
        let r = run(["fit", "/nonexistent/data.jsonl", "--out", "/tmp/never"])
        XCTAssertEqual(r.code, 1)
        XCTAssertEqual(r.err, "error: /nonexistent/data.jsonl: cannot read: no such file; check the path\n")
    }

    func testModelFileThatIsNotOursIsRejected() throws {
        let dir = try temporaryDirectory()
        let fake = dir.appendingPathComponent("model.atm")
        try Data("definitely not a model, just some text that is long enough to pass the size check......".utf8).write(to: fake)
        let r = run(["eval", fake.path, "data.jsonl"])
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.hasPrefix("error: \(fake.path): not an actiontrain model file"), r.err)
        XCTAssertEqual(r.err.filter { $0 == "\n" }.count, 1)
    }

    func testUnknownCommand() {
        let r = run(["fti"])
        XCTAssertEqual(r.code, 2)
        XCTAssertTrue(r.err.contains("Did you mean 'fit'?"), r.err)
    }
}
