import ActionRuntime
import Datasets
import Foundation
import PoseCore

/// A subcommand: its declaration and what it does with the parsed values.
protocol ParsableCommand {
    associatedtype Options: CommandOptions
    static var spec: CommandSpec<Options> { get }
    static func run(_ options: Options, out: inout Output) throws
}

/// A subcommand with its option types erased, for the command table.
struct Command {
    let name: String
    let summary: String
    /// Parses the arguments and runs the command (or prints its help).
    let run: ([String], inout Output) throws -> Void

    init<C: ParsableCommand>(_ command: C.Type) {
        name = C.spec.name
        summary = C.spec.summary
        run = { arguments, out in
            guard let options = try ArgumentParser.parse(arguments, for: C.spec) else {
                out.write(C.spec.help)
                return
            }
            try C.run(options, out: &out)
        }
    }
}

/// Where commands print: stdout and stderr, replaceable in tests.
///
/// A write to stdout that fails ends the process through `StandardStream.failed`: a closed pipe
/// (EPIPE, when SIGPIPE is ignored) quietly with 141, as SIGPIPE would have; any other error
/// (a full disk, `> /dev/full`) with one line on stderr and exit 1. A failed write to stderr is
/// ignored: there is nowhere left to say it.
struct Output {
    var write: (String) -> Void = { text in
        if let error = StandardStream.write(text, to: STDOUT_FILENO) { StandardStream.failed(error) }
    }
    var note: (String) -> Void = { _ = StandardStream.write($0, to: STDERR_FILENO) }
    /// True when stdout is a terminal (progress bars) rather than a pipe or file.
    var isTerminal: Bool = isatty(STDOUT_FILENO) != 0

    func line(_ s: String) { write(s + "\n") }
}

/// Writes to stdout and stderr with `write(2)`: Foundation's `FileHandle.write(_:)` stops the
/// process (`try!`) when a write fails.
enum StandardStream {
    /// Writes all of `text` to `fd`; returns `errno` of a write that failed, nil when all went.
    static func write(_ text: String, to fd: Int32) -> Int32? {
        var text = text
        return text.withUTF8 { bytes -> Int32? in
            var done = 0
            while done < bytes.count {
                let n = Foundation.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return n < 0 ? errno : EIO }
                done += n
            }
            return nil
        }
    }

    /// What a failed write to stdout means for the process: `exit(141)` on a closed pipe,
    /// otherwise an error line and exit 1 (both through `Job.end`, so that an MPI job ends too).
    static func failed(_ error: Int32) -> Never {
        Job.end(code: exitCode(afterWriteError: error, note: { _ = write($0, to: STDERR_FILENO) }))
    }

    /// The exit code after a failed write to stdout with `error`, having said why with `note`
    /// (nothing for a closed pipe: the reader left, as `head` does).
    static func exitCode(afterWriteError error: Int32, note: (String) -> Void) -> Int32 {
        if error == EPIPE { return 141 }
        note("error: cannot write to standard output: \(String(cString: strerror(error)))\n")
        return 1
    }
}

@main
enum ActionTrainCLI {
    /// In workflow order: get data in, look at it, train, evaluate, use the model.
    /// (Computed: `Command` holds closures, which are not `Sendable`.)
    static var commands: [Command] {
        [
            Command(ImportCommand.self), Command(ConvertCommand.self), Command(InspectCommand.self), Command(FitCommand.self), Command(TuneCommand.self),
            Command(SweepCommand.self),
            Command(EvalCommand.self), Command(CompareCommand.self), Command(PredictCommand.self), Command(ExportCommand.self),
        ]
    }

    static var help: String {
        var out = """
            OVERVIEW: actiontrain trains and evaluates action classifiers on body-pose windows.

            USAGE: actiontrain <command> [arguments] [options]

            COMMANDS:

            """
        for c in commands {
            out += "  " + c.name.padding(toLength: 12, withPad: " ", startingAt: 0) + c.summary + "\n"
        }
        out += "\nSee 'actiontrain <command> --help' for the options of a command. Docs: docs/cli.md\n"
        return out
    }

    static func main() {
        var out = Output()
        if let failure = Job.start(out: &out) {
            out.note("error: \(failure)\n")
            exit(1)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let failure = Job.refuse(arguments.first) {
            out.note("error: \(failure)\n")
            Job.end(code: 2)
        }
        Job.end(code: run(arguments, out: &out))
    }

    /// Runs a command line and returns the exit code. Errors become one line on stderr.
    static func run(_ arguments: [String], out: inout Output) -> Int32 {
        guard let name = arguments.first else {
            out.write(help)
            return 2
        }
        if name == "--help" || name == "-h" || name == "help" {
            out.write(help)
            return 0
        }
        if name == "--version" {
            out.line(ActionRuntimeInfo.tool)
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            let hint = ArgumentParser.suggestion(for: name, among: commands.map(\.name)).map { " Did you mean '\($0)'?" } ?? ""
            out.note("error: unknown command '\(name)'.\(hint) See 'actiontrain --help'.\n")
            return 2
        }
        do {
            try command.run(Array(arguments.dropFirst()), &out)
            return 0
        } catch let e as CLIError {
            if case .interrupted = e { out.note("\(e.description)\n") } else { out.note("error: \(e.description)\n") }
            return e.exitCode
        } catch {
            out.note("error: \(describe(error))\n")
            return 1
        }
    }

    /// One-line description of any library error, naming the flags where the library names
    /// its options (several people: --people; a whole-clip model's clip: --clip-frames).
    static func describe(_ error: Error) -> String {
        if let e = error as? DatasetError, let people = e.peopleMessage(option: "--people POLICY") { return people }
        if let e = error as? StreamError, e == .unknownClipLength {
            return e.description.replacingOccurrences(of: "(StreamOptions.clipFrames)", with: "(--clip-frames N)")
        }
        return String(describing: error)
    }
}
