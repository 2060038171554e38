@testable import actiontrain
import TestSupport
import XCTest

/// The typed options: every declared option reaches a property of its command's values (a
/// property no option writes would silently keep its default), values convert with usage
/// errors naming the option, and the help lists every option.
final class OptionsTests: XCTestCase {
    /// The leaves of a value (nested structs and dictionaries flattened), by path.
    func leaves(_ value: Any, _ path: String = "") -> [String: String] {
        let m = Mirror(reflecting: value)
        if m.displayStyle == .struct, !m.children.isEmpty {
            var out: [String: String] = [:]
            for c in m.children { out.merge(leaves(c.value, path + "." + (c.label ?? "?"))) { a, _ in a } }
            return out
        }
        return [path: String(describing: value)]
    }

    /// Parses every option and positional with a sample value and checks that each property
    /// of the command's values changed.
    func assertEveryOptionIsStored<V: CommandOptions>(_ spec: CommandSpec<V>, file: StaticString = #filePath, line: UInt = #line) throws {
        var args = spec.positionals.map { "sample-\($0.name)" }
        for o in spec.options {
            args.append("--\(o.name)")
            if let sample = o.sample { args.append(sample) }
        }
        let parsed = try XCTUnwrap(try ArgumentParser.parse(args, for: spec), file: file, line: line)
        let before = leaves(V()), after = leaves(parsed)
        XCTAssertEqual(Set(before.keys), Set(after.keys), file: file, line: line)
        for (path, value) in before where after[path] == value {
            XCTFail("\(spec.name): no option sets \(path) (still \(value))", file: file, line: line)
        }
        XCTAssertEqual(spec.options.count, Set(spec.options.map(\.name)).count, "\(spec.name): an option is declared twice", file: file, line: line)
    }

    func testEveryOptionOfEveryCommandIsStored() throws {
        try assertEveryOptionIsStored(ImportCommand.spec)
        try assertEveryOptionIsStored(ConvertCommand.spec)
        try assertEveryOptionIsStored(InspectCommand.spec)
        try assertEveryOptionIsStored(FitCommand.spec)
        try assertEveryOptionIsStored(EvalCommand.spec)
        try assertEveryOptionIsStored(CompareCommand.spec)
        try assertEveryOptionIsStored(PredictCommand.spec)
        try assertEveryOptionIsStored(ExportCommand.spec)
        try assertEveryOptionIsStored(TuneCommand.spec)
        try assertEveryOptionIsStored(SweepCommand.spec)
        XCTAssertEqual(ActionTrainCLI.commands.count, 10, "a new command needs its line above")
    }

    func testEveryConfigKeyFlagReachesTheOverrides() throws {
        for e in ConfigOptions.entries {
            let parsed = try XCTUnwrap(try ArgumentParser.parse(["data.jsonl", "--\(e.flag)", e.sample], for: FitCommand.spec))
            XCTAssertEqual(Array(parsed.overrides.values.keys), [e.key], e.flag)
        }
        let divisors = try XCTUnwrap(try ArgumentParser.parse(["d.jsonl", "--axis-divisors", "300, 300,1"], for: FitCommand.spec))
        XCTAssertEqual(divisors.overrides.values["axisDivisors"], .array([.double(300), .double(300), .double(1)]))
        XCTAssertThrowsError(try ArgumentParser.parse(["d.jsonl", "--axis-divisors", "1,x"], for: FitCommand.spec)) { e in
            XCTAssertEqual((e as? CLIError)?.description, "--axis-divisors expects a list of numbers, got '1,x'")
        }
    }

    func testValuesConvertWithUsageErrorsNamingTheOption() throws {
        let ok = try XCTUnwrap(try ArgumentParser.parse(["m.atm", "d.jsonl", "--stride=4", "--seed", "18446744073709551615", "--use-events"], for: EvalCommand.spec))
        XCTAssertEqual(ok.stride, 4)
        XCTAssertEqual(ok.seed, UInt64.max)
        XCTAssertTrue(ok.useEvents)
        XCTAssertEqual(ok.bootstrap, 1000, "an option not given keeps its default")
        XCTAssertNil(ok.split)
        let table = try XCTUnwrap(try ArgumentParser.parse(["m.atm", "d.jsonl", "--format", "table"], for: PredictCommand.spec))
        XCTAssertEqual(table.format, .table)
        let cases: [([String], String)] = [
            (["--stride", "x"], "--stride expects an integer, got 'x'"),
            (["--stride", "0"], "--stride must be 1 to 100000 frames, got 0"),
            (["--format", "xml"], "--format must be jsonl or table, got 'xml'"),
            (["--split", "a", "--split", "b"], "--split is given twice"),
            (["--stride"], "--stride needs a value <N>"),
        ]
        for (flags, message) in cases {
            XCTAssertThrowsError(try ArgumentParser.parse(["m.atm", "d.jsonl"] + flags, for: PredictCommand.spec), "\(flags)") { e in
                XCTAssertEqual((e as? CLIError)?.description, message)
                XCTAssertEqual((e as? CLIError)?.exitCode, 2)
            }
        }
        let gate = try XCTUnwrap(
            try ArgumentParser.parse(["a.json", "b.json", "--recall-drop", "wave=0.2", "--recall-drop", "clap=0.1", "--alpha", "0.01"], for: CompareCommand.spec))
        XCTAssertEqual(gate.gate.recallDrop, ["wave=0.2", "clap=0.1"])
        XCTAssertEqual(gate.gate.alpha, 0.01)
        XCTAssertNil(try ArgumentParser.parse(["--help"], for: CompareCommand.spec), "help needs no positionals")
    }
}
