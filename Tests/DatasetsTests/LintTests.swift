import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

final class LintTests: XCTestCase {
    /// A fixture with known problems (12 frames in all, image 200 x 200):
    /// - "a" (wave, g1, train, 4 frames): left hand missing in frames 0-1; right hand at x = 250
    ///   in frame 3 (outside the image);
    /// - "b" (wave, g1, test, 2 frames): subject g1 is in train and test;
    /// - "c" (idle, g2, test): an exact copy of "a"'s frames, in another split with another label;
    /// - "d" (idle, g3, train, 2 frames): frame 1 is empty;
    /// - "e" (idle, train): no frames; class "jump" has no sequences.
    static func fixture() -> Dataset {
        var a = PrepFixtures.sequence(id: "a", label: "wave", frames: 4, absent: [[0, 1], [1, 1]])
        a.coordinates[(3 * 5 + 2) * 2] = 250
        a.group = "g1"
        a.split = "train"
        var b = PrepFixtures.sequence(id: "b", label: "wave", frames: 2)
        b.group = "g1"
        b.split = "test"
        var c = a
        c.id = "c"
        c.label = "idle"
        c.group = "g2"
        c.split = "test"
        var d = PrepFixtures.sequence(id: "d", label: "idle", frames: 2, absent: Set((0..<5).map { [1, $0] }))
        d.group = "g3"
        d.split = "train"
        var e = PrepFixtures.sequence(id: "e", label: "idle", frames: 0)
        e.split = "train"
        return Dataset(
            name: "lint", skeleton: PrepFixtures.body2D, sequences: [a, b, c, d, e], classes: ["wave", "idle", "jump"],
            frameRate: 30, imageSize: [200, 200])
    }

    func testInspectionCountsTheKnownProblems() {
        var options = Lint.Options(windowFrames: 3)
        options.missingRateThreshold = 0.4
        let r = Lint.inspect(Self.fixture(), options: options)
        XCTAssertEqual(r.sequences, 5)
        XCTAssertEqual(r.frames, 12)
        XCTAssertEqual(r.groups, 3)
        XCTAssertEqual(r.splits, ["train", "test"])
        XCTAssertEqual(
            r.classes,
            [
                .init(name: "wave", total: 2, perSplit: ["train": 1, "test": 1]),
                .init(name: "idle", total: 3, perSplit: ["test": 1, "train": 2]),
                .init(name: "jump", total: 0, perSplit: [:]),
            ])
        XCTAssertEqual(r.framesPerSequence?.min, 0)
        XCTAssertEqual(r.framesPerSequence?.median, 2)
        XCTAssertEqual(r.framesPerSequence?.max, 4)
        XCTAssertEqual(r.joints.map(\.missing), [1, 5, 1, 1, 1])
        assertClose(r.joints[1].missingRate, 5.0 / 12)
        XCTAssertEqual(r.outOfImagePoints, 2)
        XCTAssertEqual(r.emptyFrames, 1)
        XCTAssertEqual(r.emptySequences, 1)
        XCTAssertEqual(r.nonFiniteValues, 0)
        XCTAssertEqual(r.duplicates, [.init(ids: ["a", "c"], splits: ["test", "train"], labels: ["idle", "wave"])])
        XCTAssertEqual(r.groupLeaks, [.init(group: "g1", splits: ["test", "train"])])
        XCTAssertEqual(
            r.warnings,
            [
                .classWithoutSequences(class: "jump"),
                .outOfImage(count: 2, fraction: 2.0 / 51, sequence: "a", frame: 3, joint: "rightHand"),
                .emptySequences(count: 1, example: "e"),
                .jointOftenMissing(joint: "leftHand", rate: 5.0 / 12),
                .shorterThanWindow(count: 3, window: 3, shortest: 0),
                .duplicateSequences(ids: ["a", "c"], splits: ["test", "train"], labels: ["idle", "wave"]),
                .groupInSeveralSplits(group: "g1", splits: ["test", "train"]),
            ])
        XCTAssertEqual(r.warnings.filter(\.isLeakage).count, 2)
        XCTAssertEqual(Lint.check(Self.fixture(), options: options), r.warnings)
    }

    func testInspectionJSONHasEveryKeyAndTheFigures() throws {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        let data = try e.encode(Lint.inspect(Self.fixture()))
        let obj = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(
            obj.keys.sorted(),
            [
                "classes", "declaredFrameRate", "dimensions", "duplicates", "emptyFrames", "emptySequences", "frames",
                "framesPerSequence", "groupLeaks", "groups", "imageSize", "jointCount", "jointNames", "joints", "name", "nonFiniteValues",
                "outOfImagePoints", "sequences", "skeleton", "space", "splits", "timestampFrameRate", "units", "warnings",
            ])
        XCTAssertTrue(obj["timestampFrameRate"] is NSNull)
        XCTAssertEqual(obj["outOfImagePoints"] as? Int, 2)
        let joints = try XCTUnwrap(obj["joints"] as? [[String: Any]])
        XCTAssertEqual(joints[1]["name"] as? String, "leftHand")
        XCTAssertEqual(try XCTUnwrap(joints[1]["missingRate"] as? Double), 5.0 / 12, accuracy: 1e-12)
        let dup = try XCTUnwrap((obj["duplicates"] as? [[String: Any]])?.first)
        XCTAssertEqual(dup["ids"] as? [String], ["a", "c"])
        let leak = try XCTUnwrap((obj["groupLeaks"] as? [[String: Any]])?.first)
        XCTAssertEqual(leak["group"] as? String, "g1")
        XCTAssertEqual(leak["splits"] as? [String], ["test", "train"])
        let warnings = try XCTUnwrap(obj["warnings"] as? [[String: Any]])
        XCTAssertEqual(
            warnings.compactMap { $0["code"] as? String },
            ["class-without-sequences", "out-of-image", "empty-sequences", "duplicate-sequences", "group-leak"])
        XCTAssertEqual(warnings.last?["group"] as? String, "g1")
        XCTAssertTrue((warnings.last?["message"] as? String)?.contains("same subject/session is on both sides") == true)
    }

    func testNonFiniteValuesTimestampsEventsAndMissingTestClasses() {
        var s = PrepFixtures.sequence(id: "s", label: "wave", frames: 4)
        s.coordinates[3] = .infinity  // frame 0, left hand y
        s.timestamps = [0, 0.1, 0.1, 0.05]
        s.events = [7]
        s.split = "train"
        var t = PrepFixtures.sequence(id: "t", label: "idle", frames: 3)
        t.timestamps = [0, 0.04, 0.08]
        t.split = "test"
        var u = PrepFixtures.sequence(id: "u", label: "wave", frames: 1)
        u.split = "train"
        u.id = "s"
        let d = Dataset(name: "bad", skeleton: PrepFixtures.body2D, sequences: [s, t, u], classes: ["wave", "idle"])
        let r = Lint.inspect(d)
        XCTAssertEqual(r.nonFiniteValues, 1)
        XCTAssertNil(r.outOfImagePoints)
        XCTAssertEqual(r.timestampFrameRate?.median ?? 0, 17.5, accuracy: 1e-9)  // 10 fps and 25 fps
        XCTAssertEqual(
            r.warnings,
            [
                .classMissingFromSplit(class: "idle", split: "train"),
                .classMissingFromSplit(class: "wave", split: "test"),
                .duplicateIds(id: "s", count: 2),
                .eventOutOfRange(sequence: "s", event: 7, frames: 4),
                .badTimestamps(sequence: "s", frame: 3, reason: "timestamps go backwards"),
                .badTimestamps(sequence: "s", frame: 0, reason: "1 frames repeat the previous frame's timestamp"),
                .nonFinite(count: 1, sequence: "s", frame: 0, joint: "leftHand"),
            ])
        XCTAssertTrue(r.warnings.last!.description.contains("mark unseen joints as absent"))
    }

    func testACleanDatasetHasNoWarnings() {
        let d = PrepFixtures.dataset([("a", "x", "p1", "train", 3), ("b", "x", "p2", "test", 3)])
        XCTAssertEqual(Lint.check(d), [])
    }
}
