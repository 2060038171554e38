@testable import actiontrain
import TestSupport
import XCTest

/// Runs a command line in process: exit code, stdout and stderr. (A free function, so that a
/// test's helper thread can call it without capturing the test case.)
func runActionTrainCLI(_ args: [String]) -> (code: Int32, out: String, err: String) {
    var stdout = "", stderr = ""
    var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
    let code = ActionTrainCLI.run(args, out: &output)
    return (code, stdout, stderr)
}

extension XCTestCase {
    /// Runs a command line in process: exit code, stdout and stderr.
    func runCLI(_ args: [String]) -> (code: Int32, out: String, err: String) { runActionTrainCLI(args) }

    /// A temporary folder removed after the test.
    func scratchFolder() throws -> String {
        let dir = try temporaryDirectory(name)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir.path
    }
}
