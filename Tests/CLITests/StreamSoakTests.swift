import Foundation
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// The soak check of `predict --stream` (a few seconds): 64 people at once, fed a stream where
/// good lines alternate with hostile ones. No line ends it, every window of the good lines is
/// the clean run's (same bits: the printed floats round-trip), and memory stays flat.
final class StreamSoakTests: XCTestCase {
    static let people = 64, frames = 40
    let names = ["head", "neck", "root", "hand"]

    /// Person `p`'s pose at frame `f`: points by name, written with every digit.
    func pose(_ p: Int, _ f: Int, extra: String = "") -> String {
        let phase = Float(f) * 0.3 + Float(p) * 0.7
        let points = names.enumerated().map { j, name in
            let x = 100 + Float(p % 8) * 60 + 10 * Float(j) + 15 * sinf(phase * Float(j + 1)), y = 50 + Float(p / 8) * 40 + 40 * Float(j) + 5 * cosf(phase)
            return "\"\(name)\": [\(x), \(y), 0.9]"
        }
        return "{" + points.joined(separator: ", ") + extra + "}"
    }

    func time(_ f: Int) -> Double { Double(f) / 30 }

    /// The clean stream, and the same with hostile lines: a round of each person per frame;
    /// after every 5th good line one hostile line of the next kind in turn; every 9th good line
    /// also carries 700 unknown joint names never seen before (about 100,000 in all). A half of it is `frames / 2` frames.
    func streams() -> (clean: [String], hostile: [String]) {
        var clean: [String] = [], hostile: [String] = [], k = 0, unknown = 0
        for f in 0..<Self.frames {
            let t = time(f)
            for p in 0..<Self.people {
                let good = "{\"t\": \(t), \"person\": \(p), \"pose\": \(pose(p, f))}"
                clean.append(good)
                k += 1
                if k % 9 == 0 {
                    let flood = (0..<700).map { _ in
                        unknown += 1
                        return ", \"a joint name of no skeleton, number \(unknown)\": [1, 2]"
                    }
                    hostile.append("{\"t\": \(t), \"person\": \(p), \"pose\": \(pose(p, f, extra: flood.joined()))}")
                } else {
                    hostile.append(good)
                }
                guard f > 0, k % 5 == 0 else { continue }
                let q = (p + 1) % Self.people
                switch (k / 5) % 10 {
                case 0: hostile.append(#"{"t": \#(t), "person": \#(q), "pose": {"head": [1, 2]"#)  // bad JSON
                case 1: hostile.append(#"{"t": NaN, "person": \#(q), "pose": \#(pose(q, f))}"#)  // Python's bare NaN
                case 2: hostile.append(#"{"t": \#(t), "person": \#(q), "pose": {"head": [true, false], "root": [1, 2]}}"#)
                case 3: hostile.append(#"{"t": \#(1e12 + Double(k) * 100), "person": \#(q), "pose": \#(pose(q, f))}"#)  // stray time
                case 4: hostile.append(#"{"t": \#(t), "person": \#(q), "pose": {"head": [1e30, 3], "neck": [100, 120], "root": [100, 200]}}"#)
                case 5: hostile.append(#"{"t": \#(t), "person": \#(Self.people + k), "pose": \#(pose(q, f))}"#)  // one person too many
                case 6: hostile.append(#"{"t": \#(t - 0.5), "person": \#(q), "pose": \#(pose(q, f))}"#)  // backwards for q
                case 7: hostile.append(#"{"t": \#(t), "pose": {"x": ""# + String(repeating: "y", count: k % 200 == 35 ? 1_100_000 : 10) + "\"}")
                case 8: hostile.append(#"{"t": \#(t), "person": 1.5, "pose": {}}"#)
                default: hostile.append("")  // blank
                }
            }
        }
        return (clean, hostile)
    }

    /// Runs the stream; returns a hash of stdout (FNV-1a of every byte), its line count, stderr,
    /// and the resident memory after each half of the input.
    func run(_ lines: [String], half: Int) throws -> (hash: UInt64, lines: Int, err: String, resident: [Int]) {
        var hash = FNV1a64(), count = 0, stderr = "", resident: [Int] = []
        var output = Output(
            write: {
                hash.mix($0.utf8)
                count += 1
            }, note: { stderr += $0 }, isTerminal: false)
        let args = [StreamCLITests.golden, "-", "--stream", "--stride", "1", "--max-tracks", "\(Self.people)", "--forget-after", "5"]
        let options = try XCTUnwrap(try ArgumentParser.parse(args, for: PredictCommand.spec))
        let input = StandardInput.lines(lines, unterminated: true) { k in
            if (k == half && resident.isEmpty) || (k == lines.count && resident.count == 1) { resident.append(Self.residentBytes()) }
        }
        try PredictCommand.run(options, out: &output, stdin: input)
        return (hash.value, count, stderr, resident)
    }

    /// This process's resident memory (Linux: /proc/self/statm), in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        return (Int(text.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func testSixtyFourPeopleThroughHostileLinesGiveTheCleanWindowsInFlatMemory() throws {
        let (clean, hostile) = streams()
        let expected = try run(clean, half: -1)
        XCTAssertGreaterThan(expected.lines, Self.people * (Self.frames - 6), "every person's windows, at stride 1")
        let half = hostile.firstIndex { $0.hasPrefix("{\"t\": \(time(Self.frames / 2)),") }!
        let got = try run(hostile, half: half)
        XCTAssertEqual(got.lines, expected.lines)
        XCTAssertEqual(got.hash, expected.hash, "the good lines' windows, bit for bit")
        for kind in ["badLine", "timeBackwards", "timeJump", "outOfRange", "tooManyTracks", "longLine", "unknownJoint"] {
            XCTAssertTrue(got.err.contains(" x \(kind); first: "), "\(kind)\n\(got.err)")
        }
        XCTAssertFalse(got.err.contains("nonFiniteOutput"), got.err)
        // Memory: the second half holds as many hostile lines as the first (1.1 MB lines, and
        // 50,000 joint names never seen, which kept would take over 5 MB); it may not grow the
        // process by more than a little (allocator noise).
        if got.resident.count == 2, got.resident[0] > 0 {
            XCTAssertLessThan(got.resident[1] - got.resident[0], 4 << 20, "resident bytes after each half: \(got.resident)")
        }
    }
}
