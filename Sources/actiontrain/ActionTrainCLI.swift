import ActionRuntime
import Datasets
import Foundation
import PoseCore

/// One subcommand: its spec (for parsing and help) and what it does with parsed arguments.
struct Command {
    let spec: CommandSpec
    let run: (ParsedArguments, inout Output) throws -> Void
}

/// Where commands print: stdout and stderr, replaceable in tests.
struct Output {
    var write: (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) }
    var note: (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    /// True when stdout is a terminal (progress bars) rather than a pipe or file.
    var isTerminal: Bool = isatty(STDOUT_FILENO) != 0

    mutating func line(_ s: String) { write(s + "\n") }
}

@main
enum ActionTrainCLI {
    /// In workflow order: get data in, look at it, train, evaluate, use the model.
    static let commands: [Command] = [
        Command(spec: ImportCommand.spec, run: ImportCommand.run),
        Command(spec: ConvertCommand.spec, run: ConvertCommand.run),
        Command(spec: InspectCommand.spec, run: InspectCommand.run),
        Command(spec: FitCommand.spec, run: FitCommand.run),
        Command(spec: EvalCommand.spec, run: EvalCommand.run),
        Command(spec: CompareCommand.spec, run: CompareCommand.run),
        Command(spec: PredictCommand.spec, run: PredictCommand.run),
        Command(spec: ExportCommand.spec, run: ExportCommand.run),
    ]

    static var help: String {
        var out = """
            OVERVIEW: actiontrain trains and evaluates action classifiers on body-pose windows.

            USAGE: actiontrain <command> [arguments] [options]

            COMMANDS:

            """
        for c in commands {
            out += "  " + c.spec.name.padding(toLength: 12, withPad: " ", startingAt: 0) + c.spec.summary + "\n"
        }
        out += "\nSee 'actiontrain <command> --help' for the options of a command. Docs: docs/cli.md\n"
        return out
    }

    static func main() {
        var out = Output()
        let code = run(Array(CommandLine.arguments.dropFirst()), out: &out)
        exit(code)
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
        guard let command = commands.first(where: { $0.spec.name == name }) else {
            let hint = ArgumentParser.suggestion(for: name, among: commands.map(\.spec.name)).map { " Did you mean '\($0)'?" } ?? ""
            out.note("error: unknown command '\(name)'.\(hint) See 'actiontrain --help'.\n")
            return 2
        }
        do {
            let args = try ArgumentParser.parse(Array(arguments.dropFirst()), for: command.spec)
            if args.helpRequested {
                out.write(command.spec.help)
                return 0
            }
            try command.run(args, &out)
            return 0
        } catch let e as CLIError {
            if case .interrupted = e { out.note("\(e.description)\n") } else { out.note("error: \(e.description)\n") }
            return e.exitCode
        } catch {
            out.note("error: \(describe(error))\n")
            return 1
        }
    }

    /// One-line description of any library error.
    static func describe(_ error: Error) -> String {
        String(describing: error)
    }
}
