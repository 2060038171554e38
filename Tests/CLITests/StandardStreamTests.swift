import Foundation
import TestSupport
import XCTest

@testable import actiontrain

/// Issue 38 finding 3: a failed write to stdout crashed the process (SIGILL, exit 132, from the
/// `try!` inside Foundation's `FileHandle.write`): `predict --stream > /dev/full`, batch
/// `predict`, `inspect`, and a closed pipe with SIGPIPE ignored. Now a write error is one line
/// on stderr and exit 1, and a closed pipe a quiet exit 141.
final class StandardStreamTests: XCTestCase {
    func testAFailedWriteIsAnErrnoAndAnExitCodeNotACrash() throws {
        let full = open("/dev/full", O_WRONLY)
        XCTAssertGreaterThanOrEqual(full, 0)
        defer { close(full) }
        XCTAssertEqual(StandardStream.write("a line\n", to: full), ENOSPC)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        close(fds[0])
        let previous = signal(SIGPIPE, SIG_IGN)
        defer {
            signal(SIGPIPE, previous)
            close(fds[1])
        }
        XCTAssertEqual(StandardStream.write("a line\n", to: fds[1]), EPIPE)
        var notes: [String] = []
        XCTAssertEqual(StandardStream.exitCode(afterWriteError: ENOSPC, note: { notes.append($0) }), 1)
        XCTAssertEqual(notes, ["error: cannot write to standard output: No space left on device\n"])
        XCTAssertEqual(StandardStream.exitCode(afterWriteError: EPIPE, note: { notes.append($0) }), 141)
        XCTAssertEqual(notes.count, 1, "a closed pipe is quiet")
    }

    /// The actiontrain executable built beside this test bundle.
    static var executable: String? {
        guard let bundle = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        var folder = URL(fileURLWithPath: bundle).deletingLastPathComponent()
        while folder.path != "/" && !folder.lastPathComponent.hasSuffix(".xctest") && folder.pathComponents.count > 1 {
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("actiontrain").path) { break }
            folder.deleteLastPathComponent()
        }
        let path = folder.appendingPathComponent("actiontrain").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Runs the executable with stdin from `input`, stdout to `stdout` and stderr to a file:
    /// the exit status (128 + the signal when one ended it: `signalled`) and stderr.
    func run(_ args: [String], input: String, stdout: FileHandle) throws -> (status: Int32, signalled: Bool, err: String) {
        guard let binary = Self.executable else { throw XCTSkip("the actiontrain executable is not beside the test bundle") }
        let dir = try scratchFolder()
        let inPath = "\(dir)/in.txt", errPath = "\(dir)/err.txt"
        try Data(input.utf8).write(to: URL(fileURLWithPath: inPath))
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        p.standardInput = FileHandle(forReadingAtPath: inPath)
        p.standardOutput = stdout
        p.standardError = FileHandle(forWritingAtPath: errPath)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        p.environment = environment
        try p.run()
        p.waitUntilExit()
        let signalled = p.terminationReason == .uncaughtSignal
        return (signalled ? 128 + p.terminationStatus : p.terminationStatus, signalled, try String(contentsOfFile: errPath, encoding: .utf8))
    }

    func testStdoutOnAFullDiskIsAnErrorAndExit1() throws {
        let model = ModelCommandsTests.golden
        let full = try XCTUnwrap(FileHandle(forWritingAtPath: "/dev/full"))
        let line = #"{"t": 0, "pose": {"head": [1, 2], "neck": [1, 40], "root": [1, 80]}}"#
        let frames = (0..<20).map { line.replacingOccurrences(of: "\"t\": 0", with: "\"t\": \(Double($0) / 30)") }.joined(separator: "\n")
        let recording = try scratchFolder() + "/rec.jsonl"
        let poses = (0..<20).map { #"{"t": \#(Double($0) / 30), "pose": {"head": [1, 2], "neck": [1, 40], "root": [1, 80]}}"# }
        try (StreamCLITests.header + "\n" + #"{"id": "clip", "frames": ["# + poses.joined(separator: ", ") + "]}\n")
            .write(toFile: recording, atomically: true, encoding: .utf8)
        for args in [["inspect", model], ["predict", model, "-", "--stream"], ["predict", model, recording]] {
            let r = try run(args, input: frames, stdout: full)
            XCTAssertEqual(r.status, 1, "\(args): \(r.err)")
            XCTAssertTrue(r.err.hasSuffix("error: cannot write to standard output: No space left on device\n"), "\(args): \(r.err)")
            XCTAssertFalse(r.err.contains("Fatal error"), r.err)
        }
    }

    func testAClosedPipeWithSIGPIPEIgnoredIsAQuietExit() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        close(fds[0])
        // The child inherits an ignored SIGPIPE (as from a shell's `trap '' PIPE`).
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let r = try run(["inspect", ModelCommandsTests.golden], input: "", stdout: FileHandle(fileDescriptor: fds[1], closeOnDealloc: true))
        XCTAssertEqual(r.status, 141, r.err)
        XCTAssertFalse(r.signalled, "an exit of its own (the child inherits the ignored SIGPIPE), not SIGPIPE's")
        XCTAssertEqual(r.err, "")
    }
}
