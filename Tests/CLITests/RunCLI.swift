@testable import actiontrain
import TestSupport
import XCTest

extension XCTestCase {
    /// Runs a command line in process: exit code, stdout and stderr.
    func runCLI(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    /// A temporary folder removed after the test.
    func scratchFolder() throws -> String {
        let dir = try temporaryDirectory(name)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }
}
