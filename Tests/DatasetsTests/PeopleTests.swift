@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 4a: several people per frame in the native format, CSV and NumPy, split per
/// track or picked by a documented policy.
final class PeopleTests: XCTestCase {
    func source(_ name: String) -> String { fixture("sources/" + name) }
    func read(_ name: String, _ policy: PeoplePolicy?, skeleton: Skeleton? = nil) throws -> Dataset {
        var o = ReadOptions(skeleton: skeleton)
        o.people = policy
        return try DatasetLoader.read(source(name), options: o).dataset
    }
    let coco = Skeleton.coco17
    var nose: Int { coco.index(of: "nose")! }

    func testSeveralPeopleAreRefusedWithoutAPolicy() {
        assertThrows(["people.jsonl:2:", "sequence 'hs1'", "3 people appear (tracks 'a', 'b', 'c')", "a people policy (ReadOptions.people): split, largest, central, longest, confident or bodies=M"]) {
            _ = try self.read("people.jsonl", nil)
        }
        assertThrows(["people.csv:2:", "sequence 'hs1'", "2 people appear (tracks 'a', 'b')"]) { _ = try self.read("people.csv", nil, skeleton: self.coco) }
        assertThrows(["people.npz", "sequence 'people-1'", "2 people appear (tracks '0', '1')"]) { _ = try self.read("people.npz", nil) }
    }

    func testSplitGivesOneSequencePerTrackInTheSameGroup() throws {
        let d = try read("people.jsonl", .split)
        XCTAssertEqual(d.sequences.map(\.id), ["hs1#a", "hs1#b", "hs1#c", "solo"])
        XCTAssertEqual(d.sequences.map(\.group), ["scene-1", "scene-1", "scene-1", nil])
        XCTAssertEqual(d.sequences.map(\.label), ["handshake", "handshake", "handshake", "handshake"])
        let a = d.sequences[0]
        XCTAssertEqual(a.frameCount, 3)
        XCTAssertEqual(a.present[1 * 17 + nose], 0, "a is not in frame 1")
        XCTAssertEqual(Array(a.coordinates[(2 * 17 + nose) * 2..<((2 * 17 + nose) * 2 + 2)]), [102, 100])
        XCTAssertEqual(d.sequences[3].frameCount, 2, "\"pose\" and an untracked person are one track")
        XCTAssertEqual(d.sequences[3].present[17 + nose], 1)

        let csv = try read("people.csv", .split, skeleton: coco)
        XCTAssertEqual(csv.sequences.map(\.id), ["hs1#a", "hs1#b"])
        XCTAssertEqual(csv.sequences.map(\.group), ["hs1", "hs1"], "no group: the sequence id keeps the tracks together")
        XCTAssertEqual(csv.sequences[0].present.enumerated().filter { $0.offset % 17 == self.nose }.map(\.element), [1, 0, 1], "frames 1, 2, 3")
        XCTAssertEqual(csv.sequences[1].coordinates[(1 * 17 + nose) * 2], 331)
        // The tracks of one clip are one group: a split cannot put them on both sides.
        assertThrows(["cannot hold out a validation share"]) {
            _ = try Splits.split(csv, indices: [0, 1], fraction: 0.5, seed: 1)
        }
    }

    func testPickPolicies() throws {
        func picked(_ c: PersonChoice) throws -> Float {
            let s = try read("people.jsonl", .pick(c)).sequences[0]
            XCTAssertEqual(s.id, "hs1")
            return s.coordinates[(2 * 17 + nose) * 2]  // the chosen person's nose x in frame 2
        }
        XCTAssertEqual(try picked(.largest), 102, "a: 10 x 200 px")
        XCTAssertEqual(try picked(.central), 332, "b: nearest (320, 240)")
        XCTAssertEqual(try picked(.longest), 332, "b: 3 frames")
        XCTAssertEqual(try picked(.confident), 600, "c: 0.99")
        let npz = try read("people.npz", .pick(.largest))
        XCTAssertEqual(npz.sequences.map(\.id), ["people-0", "people-1"])
        XCTAssertEqual(npz.sequences[1].coordinates[0], 400, "the second body is larger")
        XCTAssertEqual(npz.sequences[0].coordinates[0], 100, "a zero-padded body is absent, never chosen")
    }

    func testBodiesStackTheLongestTracksOnACopiedSkeleton() throws {
        let d = try read("people.jsonl", .bodies(2))
        XCTAssertEqual(d.skeleton, coco.bodies(2))
        XCTAssertEqual(d.skeleton.name, "coco-17x2")
        XCTAssertEqual(Array(d.skeleton.joints[17..<19]), ["p2.nose", "p2.leftEye"])
        let s = d.sequences[0]
        XCTAssertEqual(s.jointCount, 34)
        XCTAssertEqual(s.present[0 * 34 + nose], 1, "body 1 = a (first to appear of the two longest)")
        XCTAssertEqual(s.present[1 * 34 + nose], 0, "a is not in frame 1: masked")
        XCTAssertEqual(s.coordinates[(1 * 34 + 17 + nose) * 2], 331, "body 2 = b")
        XCTAssertEqual(d.sequences[1].present[17 + nose], 0, "a one-person sequence has body 2 absent")
        // Written and read back by name.
        let path = try temporaryDirectory().appendingPathComponent("two.jsonl").path
        try NativeFormat.write(d, to: path)
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).hasPrefix(#"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17x2""#))
        XCTAssertEqual(try NativeFormat.read(path).sequences, d.sequences)
    }

    func testSkeletonBodies() {
        let two = Skeleton.kinectV2.bodies(2)
        XCTAssertTrue(two.problems().isEmpty, "\(two.problems())")
        XCTAssertEqual(two.jointCount, 50)
        XCTAssertEqual(two.centre, ["p1.spineBase", "p2.spineBase"])
        XCTAssertEqual(two.mirrorPermutation[25 + 4], 25 + 8, "p2's left shoulder mirrors p2's right shoulder, never p1's")
        XCTAssertEqual(Skeleton.builtIn(named: "kinect-v2-25x2"), two)
        XCTAssertNil(Skeleton.builtIn(named: "kinect-v2-25x0"))
        XCTAssertEqual(Skeleton.coco17.bodies(1), .coco17)
        XCTAssertEqual(PeoplePolicy(argument: "bodies=2"), .bodies(2))
        XCTAssertEqual(PeoplePolicy(argument: "central"), .pick(.central))
        XCTAssertNil(PeoplePolicy(argument: "biggest"))
    }

    func testBadPeopleInput() {
        let h = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17"}"#
        func parse(_ line: String) throws { _ = try NativeFormat.parse(Array((h + "\n" + line + "\n").utf8), file: "p.jsonl", options: .init(people: .split)) }
        assertThrows(["p.jsonl:2:", "frame 0", "track 'x' appears twice in one frame"]) {
            try parse(#"{"id": "a", "frames": [{"people": [{"track": "x", "pose": {}}, {"track": "x", "pose": {}}]}]}"#)
        }
        assertThrows(["p.jsonl:2:", "a person has no \"pose\""]) { try parse(#"{"id": "a", "frames": [{"people": [{"track": 1}]}]}"#) }
        assertThrows(["p.jsonl:2:", "one of \"pose\" or \"people\" per frame"]) {
            try parse(#"{"id": "a", "frames": [{"pose": {}, "people": []}]}"#)
        }
        assertThrows(["people.csv:1:", "track column 'track' needs a frame or time column"]) {
            var m = CSVMapping()
            m.skeleton = .coco17
            _ = try CSVFormat.parse(Array("clip,track,nose_x,nose_y\na,1,1,2\n".utf8), file: "people.csv", mapping: m)
        }
        assertThrows(["people.csv:4:", "the frame numbers (or times) of track '1' must increase, but 1.0 follows 2.0"]) {
            var m = CSVMapping()
            m.skeleton = .coco17
            m.people = .split
            _ = try CSVFormat.parse(Array("clip,frame,track,nose_x,nose_y\na,1,1,1,2\na,2,1,1,2\na,1,1,1,2\n".utf8), file: "people.csv", mapping: m)
        }
    }
}

/// Issue 38 finding 12 offline: a person is one person on both paths (`PersonID(parsing:)`):
/// tracks `7` and `"7"` are one track, live as in a file, `"07"` another; a track id of
/// ill-formed UTF-8 is refused, never repaired into another id; `"person"` (a stream line's
/// spelling) is read as `"track"`.
final class TrackIdentityTests: XCTestCase {
    func read(_ lines: [String]) throws -> Dataset {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("d.jsonl").path
        let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 30, "classes": ["x"]}"#
        try Data(([header] + lines).joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))
        var o = ReadOptions()
        o.people = .split
        return try DatasetLoader.read(path, options: o).dataset
    }

    func testTracksSevenAndQuotedSevenAreOnePersonAndZeroSevenAnother() throws {
        let d = try read([
            #"{"id": "s", "frames": [{"people": [{"track": 7, "pose": {"nose": [1, 2]}}, {"person": "07", "pose": {"nose": [5, 6]}}]}, {"people": [{"track": "7", "pose": {"nose": [3, 4]}}]}]}"#
        ])
        XCTAssertEqual(d.sequences.map(\.id), ["s#7", "s#07"])
        XCTAssertEqual(d.sequences[0].present.filter { $0 != 0 }.count, 2, "the nose of both frames: one track")
        XCTAssertEqual(d.sequences.map { PersonID(parsing: String($0.id.dropFirst(2))) }, [.number(7), .name("07")], "the live stream's ids of the same tracks")
    }

    func testIllFormedTrackIdsAreRefusedAndTrackWithPersonToo() throws {
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("bad.jsonl").path
        let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 30, "classes": ["x"]}"#
        let before = Array((header + "\n" + #"{"id": "s", "frames": [{"people": [{"track": ""#).utf8)
        try Data(before + [0xFF] + Array(#"", "pose": {}}, {"track": ""#.utf8) + [0xFE] + Array(#"", "pose": {}}]}]}"#.utf8)).write(to: URL(fileURLWithPath: path))
        assertThrows(["bad.jsonl:2:47: the text is not valid UTF-8 (byte 0xFF)"]) { _ = try DatasetLoader.read(path, options: ReadOptions()) }
        assertThrows(["one \"track\" (or \"person\") per person"]) {
            _ = try self.read([#"{"id": "s", "frames": [{"people": [{"track": 1, "person": 2, "pose": {}}]}]}"#])
        }
    }
}
