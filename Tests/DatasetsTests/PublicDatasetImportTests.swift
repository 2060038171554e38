@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Imports of the three public datasets, checked against the counts in their SOURCE.md.
/// They run where the datasets are (../shared/datasets beside the repository, or
/// $ACTIONTRAIN_DATASETS); elsewhere they are skipped, except under CI (`ACTIONTRAIN_CI=1`,
/// set by .ci/run, or `CI`), where they fail. Kept fast in debug builds: Penn Action
/// reads its index and only the first sequences of frames.csv.
final class PublicDatasetImportTests: XCTestCase {
    func datasets(_ name: String) throws -> String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates = [repo.appendingPathComponent("../shared/datasets").path, repo.appendingPathComponent("../../shared/datasets").path]
        if let env = ProcessInfo.processInfo.environment["ACTIONTRAIN_DATASETS"] { candidates.insert(env, at: 0) }
        for c in candidates {
            let path = (c as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        throw missingPrerequisite(
            "the public dataset \(name)", fix: "put it in ../shared/datasets or set ACTIONTRAIN_DATASETS (looked in \(candidates.joined(separator: ", ")))")
    }

    func testNATOPSImportReproducesTheShippedFile() throws {
        let root = try datasets("natops")
        let labels = UEAFormat.natopsLabelNames
        var d = try UEAFormat.read(root + "/NATOPS_TRAIN.ts", options: .init(labelNames: labels))
        let test = try UEAFormat.read(root + "/NATOPS_TEST.ts", options: .init(labelNames: labels))
        d.sequences += test.sequences
        XCTAssertEqual(d.sequences.count, 360)
        XCTAssertEqual(d.sequences.filter { $0.split == "train" }.count, 180)
        XCTAssertEqual(d.sequences.filter { $0.split == "test" }.count, 180)
        XCTAssertEqual(Set(d.sequences.map(\.frameCount)), [51])
        XCTAssertEqual(d.classes, ["i-have-command", "all-clear", "not-clear", "spread-wings", "fold-wings", "lock-wings"])
        for c in d.classes { XCTAssertEqual(d.sequences.filter { $0.label == c }.count, 60, c) }
        let out = try temporaryDirectory().appendingPathComponent("natops.jsonl").path
        try NativeFormat.write(d, to: out)
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("data/natops.jsonl").path
        XCTAssertEqual(FileManager.default.contents(atPath: out), FileManager.default.contents(atPath: shipped), "import natops == data/natops.jsonl")
    }

    func testPennActionCountsSplitAndFirstSequences() throws {
        let root = try datasets("penn_action")
        let clips = try PennActionImporter.clips(root)
        XCTAssertEqual(clips.count, 2326)
        XCTAssertEqual(clips.filter { $0.split == "train" }.count, 1258)
        XCTAssertEqual(clips.filter { $0.split == "test" }.count, 1068)
        XCTAssertEqual(Set(clips.map(\.action)).count, 15)
        XCTAssertEqual(clips.reduce(0) { $0 + $1.frames }, 163_841)
        let squat = clips.filter { $0.action == "squat" }
        XCTAssertEqual([squat.count, squat.filter { $0.split == "train" }.count], [231, 114])

        let d = try PennActionImporter.read(root, options: .init(limit: 12))
        XCTAssertEqual(d.sequences.count, 12)
        XCTAssertEqual(d.skeleton.name, "penn-action-13")
        XCTAssertEqual(d.classes.count, 15)
        let s = d.sequences[0]
        XCTAssertEqual([s.id, s.label, s.split], ["0001", "baseball_pitch", "test"])
        XCTAssertEqual(s.frameCount, 151)
        XCTAssertEqual(s.imageSize, [480, 360])
        XCTAssertNil(s.confidence)
        // frames.csv row 1: head (136.5, 71.25) visible; right shoulder (v3 = 0) absent.
        XCTAssertEqual(Array(s.coordinates[0..<2]), [136.5, 71.25])
        XCTAssertEqual(Array(s.present[0..<3]), [1, 1, 0])
        for (k, seq) in d.sequences.enumerated() { XCTAssertEqual(seq.frameCount, clips[k].frames) }

        let kept = try PennActionImporter.read(root, options: .init(keepInvisible: true, limit: 1))
        XCTAssertEqual(Array(kept.sequences[0].present[0..<3]), [1, 1, 1], "keep-invisible keeps the estimated point")
        XCTAssertEqual(Array(kept.sequences[0].coordinates[4..<6]), [102.75, 99])
        XCTAssertEqual(kept.sequences[0].confidence.map { Array($0[0..<3]) }, [1, 1, 0.5])
        // Written and read back, the kept points stay present (confidence 0 would be absent).
        let path = try temporaryDirectory().appendingPathComponent("penn.jsonl").path
        try NativeFormat.write(kept, to: path)
        XCTAssertEqual(try NativeFormat.read(path).sequences[0].present, kept.sequences[0].present)
        XCTAssertEqual(Array(try NativeFormat.read(path, options: .init(minConfidence: 0.5)).sequences[0].present[0..<3]), [1, 1, 0])
    }

    func testUTKinectSegmentsSubjectsAndTimestamps() throws {
        let root = try datasets("utkinect_action3d")
        let (d, warnings) = try UTKinectImporter.read(root)
        XCTAssertEqual(d.sequences.count, 199)
        XCTAssertEqual(d.classes, UTKinectImporter.classes)
        XCTAssertEqual(d.sequences.filter { $0.label == "carry" }.count, 19)
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings[0].description.contains("actionLabel.txt:215: segment 's10_e02-carry'"), warnings[0].description)
        XCTAssertEqual(Set(d.sequences.compactMap(\.group)).count, 10)
        XCTAssertEqual(d.sequences.filter { $0.split == "train" }.count, 100, "odd subjects train")
        XCTAssertEqual(d.sequences.filter { $0.split == "test" }.count, 99)
        let lengths = d.sequences.map(\.frameCount)
        XCTAssertEqual([lengths.min()!, lengths.max()!], [5, 110])
        assertClose(Double(lengths.reduce(0, +)) / 199, 29.5, absolute: 0.05)
        // s01_e01 starts with frame 190 twice: the first row is kept.
        let (numbers, coords) = try UTKinectImporter.readRecording(root + "/joints/joints_s01_e01.txt")
        XCTAssertEqual(Array(numbers.prefix(2)), [190, 194])
        XCTAssertEqual(Set(numbers).count, numbers.count, "duplicate frame numbers are dropped")
        XCTAssertEqual(Array(coords[0..<3]), [0.807139, -0.063421, 1.998671])
        let walk = d.sequences[0]
        XCTAssertEqual(walk.id, "s01_e01-walk")
        XCTAssertEqual(walk.timestamps?.first, 0)
        let gaps = zip(walk.timestamps!.dropFirst(), walk.timestamps!).map { $0 - $1 }
        XCTAssertTrue(gaps.allSatisfy { $0 > 0 }, "timestamps increase")
        let steps = d.sequences.reduce(0) { $0 + $1.frameCount - 1 }
        let seconds = d.sequences.reduce(0.0) { $0 + $1.timestamps!.last! }
        assertClose(Double(steps) / seconds, 15, absolute: 1.5, relative: 0, "about 15 fps over the whole dataset")
    }

    func testUTKinectRecordingsKeepTheirSegments() throws {
        let root = try datasets("utkinect_action3d")
        var options = UTKinectImporter.Options()
        options.recordings = true
        let (d, _) = try UTKinectImporter.read(root, options: options)
        let (clips, _) = try UTKinectImporter.read(root)
        XCTAssertEqual(d.sequences.count, 20)
        XCTAssertEqual(d.sequences.reduce(0) { $0 + $1.segments.count }, 199)
        XCTAssertEqual(d.classes, clips.classes)
        XCTAssertEqual(d.sequences.filter { $0.split == "test" }.count, 10)
        // Each segment's frames are its clip's, at the same times.
        let rec = try XCTUnwrap(d.sequences.first { $0.id == "s01_e01" })
        XCTAssertEqual(rec.segments.map(\.label), ["walk", "sitDown", "standUp", "pickUp", "carry", "throw", "pull", "push", "waveHands", "clapHands"])
        for g in rec.segments {
            let clip = try XCTUnwrap(clips.sequences.first { $0.id == "s01_e01-\(g.label)" })
            XCTAssertEqual(g.end - g.start + 1, clip.frameCount, g.label)
            XCTAssertEqual(Array(rec.coordinates[(g.start * 60)..<((g.start + 1) * 60)]), Array(clip.coordinates[0..<60]), g.label)
            assertClose(rec.timestamps![g.end] - rec.timestamps![g.start], clip.timestamps!.last!, g.label)
        }
    }

    func testUTKinectLabelFileErrors() {
        assertThrows(["labels.txt:1:", "a recording name line"]) { _ = try UTKinectImporter.parseLabels(Array("walk: 1 2\n".utf8), file: "labels.txt") }
        assertThrows(["labels.txt:2:", "'action: start end'"]) { _ = try UTKinectImporter.parseLabels(Array("s01_e01\nwalk: 1\n".utf8), file: "labels.txt") }
        assertThrows(["labels.txt:2:", "ends (1) before it starts (5)"]) { _ = try UTKinectImporter.parseLabels(Array("s01_e01\nwalk: 5 1\n".utf8), file: "labels.txt") }
        assertThrows(["labels.txt", "no sequences"]) { _ = try UTKinectImporter.parseLabels(Array("s01_e01\n".utf8), file: "labels.txt") }
    }
}
