import ActionRuntime
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// What `predict --stream` does with its flags and its lines (issue 38 findings 5, 6, 8, 9, 12
/// and 13): no flag is taken and then ignored, the dataset file's spelling of several people
/// is read (never merged into person 0), a signal of any kind finishes every person, repeated
/// timestamps are counted, a person is one person on both paths, and an empty scene makes no
/// event.
extension PeopleEventsCLITests {
    /// As `predict`, for a run that must fail: the error.
    func refusal(_ args: [String], stdin lines: [String] = []) throws -> CLIError {
        do {
            _ = try predict(args, stdin: lines)
        } catch let e as CLIError {
            return e
        }
        XCTFail("predict \(args) succeeded")
        return .failure("")
    }

    func testStreamFlagsAreAppliedOrRefusedNeverIgnored() throws {
        // Finding 5: --people largest still reported both people; --split and --clip-frames
        // were ignored too; and the event flags were ignored by batch predict.
        let dir = try scratchFolder()
        let golden = StreamCLITests.golden, pair = try twoBodyModel(dir)
        let stream = [golden, "-", "--stream"]
        let cases: [([String], String)] = [
            (stream + ["--people", "largest"], "--people largest chooses people in a file; a live stream follows each person by their \"person\" id (at most --max-tracks): leave --people out"),
            (stream + ["--people", "split"], "--people split chooses people in a file"),
            ([pair, "-", "--stream", "--people", "bodies=3"], "--people bodies=3 chooses people in a file; a live stream follows each person by their \"person\" id (at most --max-tracks); this model's bodies=2 is what the stream does"),
            (stream + ["--split", "test"], "--split chooses the sequences of a file; a live stream has no splits: leave it out"),
            (stream + ["--clip-frames", "20"], "--clip-frames 20 is for a whole-clip (fit window) model; this model slides windows of 6 frames: leave it out"),
            ([golden, "x.jsonl", "--enter", "0.5"], "--enter is an option of --events and --stream; add one of them, or leave it out"),
            ([golden, "x.jsonl", "--clip-frames", "20"], "--clip-frames is an option of --events and --stream"),
            ([golden, "x.jsonl", "--events", "--max-tracks", "4"], "--max-tracks follows the people of a live stream: it needs --stream"),
            ([golden, "x.jsonl", "--forget-after", "4"], "--forget-after is an option of --events and --stream"),
        ]
        for (args, message) in cases {
            let e = try refusal(args)
            XCTAssertEqual(e.exitCode, 2, "\(args)")
            XCTAssertTrue(e.description.hasPrefix(message), "\(args): \(e)")
        }
        // What a stream does apply: an interaction model's own bodies=2 is accepted.
        let lines = (0..<12).flatMap { f in [0, 1].map { p in #"{"t": \#(time(f)), "person": \#(p), "pose": {\#(pose(p, f))}}"# } }
        XCTAssertEqual(try predict([pair, "-", "--stream", "--people", "bodies=2"], stdin: lines).out, try predict([pair, "-", "--stream"], stdin: lines).out)
    }

    func testTrackAndPeopleLinesAreEachPersonsNeverPersonZeros() throws {
        // Finding 6: lines with "track" (the dataset file's key) or a "people" list were all
        // person 0's, silently (6 windows instead of 12).
        let golden = StreamCLITests.golden, args = [golden, "-", "--stream", "--stride", "3"]
        var byPerson: [String] = [], byTrack: [String] = [], byFrame: [String] = []
        for f in 0..<15 {
            byPerson += [0, 1].map { #"{"t": \#(time(f)), "person": \#($0 + 4), "pose": {\#(pose($0, f))}}"# }
            byTrack += [0, 1].map { #"{"t": \#(time(f)), "track": "\#($0 + 4)", "pose": {\#(pose($0, f))}}"# }
            byFrame.append(#"{"t": \#(time(f)), "people": ["# + [0, 1].map { #"{"track": \#($0 + 4), "pose": {\#(pose($0, f))}}"# }.joined(separator: ", ") + "]}")
        }
        let expected = try predict(args, stdin: byPerson)
        let windows = try rows(expected.out)
        XCTAssertEqual(windows.count, 2 * 4, "each person's four windows")
        XCTAssertEqual(Set(windows.compactMap { $0["person"] as? Int }), [4, 5])
        XCTAssertEqual(try predict(args, stdin: byTrack).out, expected.out)
        XCTAssertEqual(try predict(args, stdin: byFrame).out, expected.out)
        // A two-person model takes a "people" line as the whole frame it is.
        let pair = try twoBodyModel(try scratchFolder())
        XCTAssertEqual(try predict([pair, "-", "--stream"], stdin: byFrame).out, try predict([pair, "-", "--stream"], stdin: byPerson).out)
    }

    func testIllFormedIdsAreBadLinesNotOnePerson() throws {
        // Finding 12: three different ill-formed UTF-8 ids were one person "\u{FFFD}".
        var lines: [String] = []
        for f in 0..<10 {
            for bad in ["\u{FF}", "\u{FE}", "\u{FD}"] { lines.append(#"{"t": \#(time(f)), "person": "ID"# + bad + #"", "pose": {\#(pose(0, f))}}"#) }
        }
        // The String above holds U+00FF etc. (valid); the bytes are made ill-formed below.
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let options = try XCTUnwrap(try ArgumentParser.parse([StreamCLITests.golden, "-", "--stream"], for: PredictCommand.spec))
        let bytes = lines.map { line in Array(line.utf8).split(separator: 0xC3, omittingEmptySubsequences: false).joined(separator: [UInt8]()).map { $0 } }
        var next = 0
        // Every line is refused, so the stream ends in an error after its warnings.
        XCTAssertThrowsError(
            try PredictCommand.run(
                options, out: &output,
                stdin: StandardInput { buffer in
                    guard next < bytes.count else { return 0 }
                    let line = bytes[next] + [0x0A]
                    next += 1
                    line.withUnsafeBytes { buffer.copyMemory(from: $0) }
                    return line.count
                })
        ) { error in
            XCTAssertTrue("\(error)".contains("all 30 lines were skipped"), "\(error)")
        }
        XCTAssertEqual(stdout, "")
        XCTAssertTrue(stderr.contains(#"warning: <stdin>:1: column 22: the "person" id is not well-formed UTF-8"#), stderr)
        XCTAssertTrue(stderr.contains("warning: 30 x badLine"), stderr)
    }

    func testRepeatedTimestampsAreACountedWarning() throws {
        // Finding 9: 3,000 lines at t = 0 gave one event from 0.000 to 0.000 s, without a word.
        let lines = (0..<300).map { #"{"t": 0, "pose": {\#(pose(0, $0))}}"# }
        let r = try predict([StreamCLITests.golden, "-", "--stream", "--events", "--smoothing", "1", "--enter", "0.34", "--exit", "0.2"], stdin: lines)
        XCTAssertTrue(r.err.contains("warning: <stdin>:2: person 0: frame 1 (t = 0.0 s): the same timestamp as the previous frame (0.0 s)"), r.err)
        XCTAssertTrue(r.err.contains("warning: 299 x sameTime; first: frame 1"), r.err)
        let strict = try refusal([StreamCLITests.golden, "-", "--stream", "--strict"], stdin: lines)
        XCTAssertTrue(strict.description.hasPrefix("<stdin>:2: rejected frame 1 (t = 0.0 s): the same timestamp"), "\(strict)")
    }

    func testAnEmptySceneMakesNoEvent() throws {
        // Finding 13: a two-body model reported an event ("push", 0.60) for a scene where no
        // joint was seen (people [null, null]); a one-body model did the same for empty poses.
        let events = ["--events", "--smoothing", "1", "--enter", "0.01", "--exit", "0.005"]
        let empty = (0..<60).map { #"{"t": \#(time($0)), "pose": {}}"# }
        let one = try predict([StreamCLITests.golden, "-", "--stream"] + events, stdin: empty)
        XCTAssertEqual(one.out, "")
        XCTAssertTrue(one.err.hasPrefix("predict: 60 frames from 60 lines, "), one.err)
        XCTAssertTrue(one.err.contains(", 0 events"), one.err)
        let pair = try twoBodyModel(try scratchFolder())
        for lines in [empty, (0..<60).map { #"{"t": \#(time($0)), "people": []}"# }] {
            let r = try predict([pair, "-", "--stream"] + events, stdin: lines)
            XCTAssertEqual(r.out, "", r.err)
        }
        // The same thresholds make events once someone is in view.
        let seen = (0..<60).map { #"{"t": \#(time($0)), "pose": {\#(pose(0, $0))}}"# }
        XCTAssertFalse(try predict([StreamCLITests.golden, "-", "--stream"] + events, stdin: seen).out.isEmpty)
    }
}
