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

extension StandardInput {
    /// Standard input that gives one of `lines` per read (a line longer than the reader's buffer
    /// over several), each with its newline (the last one without, when `unterminated`: the
    /// writer stopped mid-line), then the end. Before each read, `onRead(k)` is told how many
    /// lines were given whole so far: a test sees what was written before each line arrived.
    static func lines(_ lines: [String], unterminated: Bool = false, onRead: @escaping (Int) -> Void = { _ in }) -> StandardInput {
        var pending: [UInt8] = [], next = 0
        return StandardInput { buffer in
            onRead(pending.isEmpty ? next : next - 1)
            if pending.isEmpty {
                guard next < lines.count else { return 0 }
                pending = Array(lines[next].utf8) + (unterminated && next == lines.count - 1 ? [] : [0x0A])
                next += 1
            }
            let n = min(buffer.count, pending.count)
            pending.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            pending.removeFirst(n)
            return n
        }
    }
}
