@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 36 item 5: `bodies=M` keeps one body order for a whole file. Tracks named by role
/// ("perp", "victim" in every clip) keep their bodies whoever appears first; ids that do not
/// recur (a tracker's) keep first appearance; names that the bodies contradict are not roles;
/// a model's order is applied as given; errors still name their line.
final class BodyOrderTests: XCTestCase {
    /// One person of a clip: its track id, where it stands (x of its joints) and the frame it
    /// first appears in.
    struct Person {
        var track: String
        var x: Int
        var from = 0
    }

    static let header = #"{"actiontrain": "poses", "version": 1, "skeleton": "coco-17", "frameRate": 10, "classes": ["x"]}"#

    /// A clip of `frames` frames: each frame lists the clip's people in the given order, those
    /// who have appeared with three joints (the nose moving one pixel a frame).
    static func clip(_ n: Int, _ people: [Person], frames: Int = 6) -> String {
        let list = (0..<frames).map { t in
            let here = people.filter { t >= $0.from }.map { p in
                #"{"track": "\#(p.track)", "pose": {"nose": [\#(p.x + t), 100], "leftHip": [\#(p.x), 200], "leftAnkle": [\#(p.x + 5), 300]}}"#
            }
            return #"{"people": [\#(here.joined(separator: ", "))]}"#
        }
        return #"{"id": "c\#(n)", "label": "x", "frames": [\#(list.joined(separator: ", "))]}"#
    }

    static func file(_ clips: [[Person]]) -> String {
        ([header] + clips.enumerated().map { clip($0.offset, $0.element) }).joined(separator: "\n") + "\n"
    }

    func read(_ text: String, given: BodyOrderRule? = nil, file: String = "pairs.jsonl") throws -> Dataset {
        try NativeFormat.parse(Array(text.utf8), file: file, options: .init(people: .bodies(2), bodyOrder: given))
    }

    /// Body 1's nose x in frame 5 of each sequence (nil: body 1 absent there).
    func firstBodyX(_ d: Dataset) -> [Int?] {
        let nose = Skeleton.coco17.index(of: "nose")!, J = 34
        return d.sequences.map { s in s.present[5 * J + nose] != 0 ? Int(s.coordinates[(5 * J + nose) * 2]) : nil }
    }

    /// "perp" stands left (x 100), "victim" right (x 400); in clips 4 and 5 the victim is seen
    /// first (the perp from frame 2, and listed second).
    static let roles: [[Person]] =
        (0..<4).map { _ in [Person(track: "perp", x: 100), Person(track: "victim", x: 400)] }
        + (4..<6).map { _ in [Person(track: "victim", x: 400), Person(track: "perp", x: 100, from: 2)] }

    func testRecurringRolesKeepTheirBodiesWhoeverAppearsFirst() throws {
        let d = try read(Self.file(Self.roles))
        XCTAssertEqual(firstBodyX(d), [105, 105, 105, 105, 105, 105], "the perp is body 1 in every clip")
        let order = try XCTUnwrap(d.bodyOrder)
        XCTAssertEqual(order.rule, .roles(["perp", "victim"]))
        XCTAssertFalse(order.given)
        XCTAssertEqual(order.sequences, 6)
        XCTAssertEqual(order.covered, 6)
        XCTAssertEqual(order.reordered, 2, "clips 4 and 5 moved from first appearance")
        XCTAssertEqual(order.votes, .init(names: 2, appearance: 0), "where they differ, the bodies sit as the names say")
        XCTAssertNil(order.warning)
        XCTAssertTrue(order.description.contains("tracks 'perp', 'victim' recur"), order.description)
        XCTAssertTrue(order.description.contains("roles, body 1 'perp', body 2 'victim' in every sequence; 2 sequences not in order of first appearance"), order.description)
        // First appearance (the rule before, and a model trained with it) puts the victim first there.
        let first = try read(Self.file(Self.roles), given: .appearance)
        XCTAssertEqual(firstBodyX(first), [105, 105, 105, 105, 405, 405])
        XCTAssertEqual(first.bodyOrder?.given, true)
        XCTAssertEqual(first.bodyOrder?.reordered, 0)
    }

    func testTheRolesTakeTheOrderThatMovesFewestSequences() throws {
        // "victim" is listed and seen first in 4 of 6 clips: the victim's body is body 1.
        let clips =
            (0..<4).map { _ in [Person(track: "victim", x: 400), Person(track: "perp", x: 100)] }
            + (4..<6).map { _ in [Person(track: "perp", x: 100), Person(track: "victim", x: 400)] }
        let d = try read(Self.file(clips))
        XCTAssertEqual(d.bodyOrder?.rule, .roles(["victim", "perp"]))
        XCTAssertEqual(firstBodyX(d), Array(repeating: 405, count: 6))
        XCTAssertEqual(d.bodyOrder?.reordered, 2)
    }

    func testTrackerIdsThatDoNotRecurKeepFirstAppearance() throws {
        // Ids new in every clip; in clip 2 the person listed second is seen first.
        let clips = [
            [Person(track: "17", x: 100), Person(track: "18", x: 400)],
            [Person(track: "23", x: 400), Person(track: "24", x: 100)],
            [Person(track: "30", x: 100, from: 2), Person(track: "31", x: 400)],
            [Person(track: "41", x: 100), Person(track: "42", x: 400)],
        ]
        let d = try read(Self.file(clips))
        XCTAssertEqual(firstBodyX(d), [105, 405, 405, 105], "whoever appears first, then whoever is listed first")
        let order = try XCTUnwrap(d.bodyOrder)
        XCTAssertEqual(order.rule, .appearance)
        XCTAssertEqual(order.recurring, [])
        XCTAssertEqual(order.reordered, 0)
        XCTAssertNil(order.warning)
        XCTAssertTrue(order.description.contains("track ids do not recur (none is in more than half of the 4 sequences of two or more bodies)"), order.description)
        // One id in every clip is not a pair of roles: still first appearance.
        let one = try read(Self.file((0..<4).map { n in [Person(track: "\(50 + n)", x: 100, from: 1), Person(track: "main", x: 400)] }))
        XCTAssertEqual(one.bodyOrder?.rule, .appearance)
        XCTAssertEqual(one.bodyOrder?.recurring, ["main"])
        XCTAssertEqual(firstBodyX(one), Array(repeating: 405, count: 4))
    }

    func testNamesThatTheBodiesContradictAreNotRoles() throws {
        // The left person is seen first in every clip, but is "a" in 7 clips and "b" in 5: the
        // names are labels that do not follow the people.
        let clips = (0..<12).map { n in
            n < 7 ? [Person(track: "a", x: 100), Person(track: "b", x: 400, from: 1)] : [Person(track: "b", x: 100), Person(track: "a", x: 400, from: 1)]
        }
        let d = try read(Self.file(clips))
        XCTAssertEqual(firstBodyX(d), Array(repeating: 105, count: 12), "first appearance kept: the left person is body 1")
        let order = try XCTUnwrap(d.bodyOrder)
        XCTAssertEqual(order.rule, .appearance)
        XCTAssertEqual(order.recurring, ["a", "b"])
        XCTAssertEqual(order.votes, .init(names: 0, appearance: 5))
        XCTAssertEqual(order.reordered, 0)
        let warning = try XCTUnwrap(order.warning)
        XCTAssertTrue(warning.contains("tracks 'a', 'b' recur, but the bodies contradict the names (5 of 5 sequences"), warning)
        XCTAssertTrue(order.description.contains("the names do not follow the people"), order.description)
        // Four such clips are too few to tell from chance (4 is not above 2·√4): the names stay.
        let fewer = try read(Self.file(Array(clips[0..<7] + clips[7..<11])))
        XCTAssertEqual(fewer.bodyOrder?.rule, .roles(["a", "b"]))
        XCTAssertEqual(fewer.bodyOrder?.votes, .init(names: 0, appearance: 4))
        XCTAssertEqual(firstBodyX(fewer), Array(repeating: 105, count: 7) + Array(repeating: 405, count: 4))
    }

    func testAModelsOrderIsAppliedAsGiven() throws {
        let d = try read(Self.file(Self.roles), given: .roles(["victim", "perp"]))
        XCTAssertEqual(firstBodyX(d), Array(repeating: 405, count: 6))
        XCTAssertEqual(d.bodyOrder?.given, true)
        XCTAssertNil(d.bodyOrder?.warning)
        // A model's roles that a file's tracks do not have: first appearance there, with a warning.
        let dir = try temporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("tracked.jsonl").path
        try Self.file([[Person(track: "7", x: 400), Person(track: "8", x: 100)], [Person(track: "perp", x: 100), Person(track: "9", x: 400)]])
            .write(toFile: path, atomically: true, encoding: .utf8)
        var o = ReadOptions()
        o.people = .bodies(2)
        o.bodyOrder = .roles(["perp", "victim"])
        let loaded = try DatasetLoader.read(path, options: o)
        XCTAssertEqual(firstBodyX(loaded.dataset), [405, 105])
        XCTAssertTrue(
            loaded.readerWarnings.map(\.description).contains {
                $0.hasPrefix("warning: \(path): in 2 of the 2 sequences of two or more bodies some tracks are not the model's roles 'perp', 'victim'")
            }, "\(loaded.readerWarnings)")
    }

    func testALoneRoleKeepsItsOwnBody() throws {
        // The victim alone in clip 6: body 2, body 1 absent (first appearance would make it body 1).
        let d = try read(Self.file(Self.roles + [[Person(track: "victim", x: 400)]]))
        XCTAssertEqual(d.bodyOrder?.rule, .roles(["perp", "victim"]))
        let nose = Skeleton.coco17.index(of: "nose")!
        let alone = d.sequences[6]
        XCTAssertEqual(alone.present[5 * 34 + nose], 0)
        XCTAssertEqual(alone.coordinates[(5 * 34 + 17 + nose) * 2], 405)
        XCTAssertEqual(d.bodyOrder?.reordered, 3)
    }

    func testCSVAndNumPyReadersKeepTheFilesOrderToo() throws {
        // CSV: the same roles as rows of a track column; clip c2's victim is seen first.
        var csv = "clip,frame,track,nose_x,nose_y,left_ankle_x,left_ankle_y\n"
        for n in 0..<6 {
            for t in 0..<4 {
                let people = n == 2 && t == 0 ? [("victim", 400)] : [("perp", 100), ("victim", 400)]
                for (track, x) in people { csv += "c\(n),\(t),\(track),\(x + t),100,\(x),300\n" }
            }
        }
        var m = CSVMapping()
        m.skeleton = .coco17
        m.people = .bodies(2)
        let d = try CSVFormat.parse(Array(csv.utf8), file: "pairs.csv", mapping: m)
        XCTAssertEqual(d.bodyOrder?.rule, .roles(["perp", "victim"]))
        let nose = Skeleton.coco17.index(of: "nose")!
        XCTAssertEqual(d.sequences.map { $0.coordinates[(3 * 34 + nose) * 2] }, Array(repeating: 103, count: 6))
        // NumPy: the people axis gives the tracks "0", "1", ...; people.npz has one row of two people.
        var o = ReadOptions()
        o.people = .bodies(2)
        let npz = try DatasetLoader.read(fixture("sources/people.npz"), options: o).dataset
        XCTAssertEqual(npz.bodyOrder?.rule, .appearance, "one sequence of several bodies: nothing recurs")
        XCTAssertEqual(npz.bodyOrder?.sequences, 1)
    }

    func testErrorsKeepTheirLinesWhileSequencesWait() throws {
        let good = Self.file(Self.roles)
        let bad = #"{"id": "bad", "label": "x", "frames": [{"people": [{"track": "perp", "pose": {"nose": [1, 2, 3, 4, 5]}}]}]}"#
        assertThrows(["pairs.jsonl:8:", "sequence 'bad'"]) { _ = try self.read(good + bad + "\n") }
        assertThrows(["pairs.jsonl:4:", "the id 'c1' is also used on line 3"]) {
            _ = try self.read(good.replacingOccurrences(of: #""id": "c2""#, with: #""id": "c1""#))
        }
        var m = CSVMapping()
        m.skeleton = .coco17
        m.people = .bodies(2)
        let csv = "clip,frame,track,nose_x,nose_y\nc0,0,perp,1,2\nc0,0,victim,3,4\nc1,0,perp,1,2\nc1,0,victim,3,x\n"
        assertThrows(["pairs.csv:5:", "nose_y 'x' is not a number"]) { _ = try CSVFormat.parse(Array(csv.utf8), file: "pairs.csv", mapping: m) }
    }

    func testTheStackerStacksAtOnceAndKeepsAFewNumbersASequence() {
        var stacker = BodyStacker(bodies: 2, skeleton: .coco17, given: nil)
        func track(_ frames: Int, x: Float) -> PoseSequence {
            var s = PoseSequence(
                id: "s", label: nil, jointCount: 17, dimensions: 2, frameCount: 5, coordinates: Array(repeating: 0, count: 5 * 34),
                present: Array(repeating: 0, count: 5 * 17))
            for f in 0..<frames {
                for j in 0..<2 {
                    s.present[f * 17 + j] = 1
                    s.coordinates[(f * 17 + j) * 2] = x + Float(j)
                }
            }
            return s
        }
        let base = track(0, x: 0)
        let stacked = stacker.add(
            TrackedSequence(base: base, tracks: [("short", track(1, x: 10)), ("long", track(5, x: 20)), ("mid", track(3, x: 30)), ("never", base)]))
        XCTAssertEqual(stacker.summaries[0].ids, ["long", "mid"], "the two longest, in order of first appearance (a tie: the one listed first)")
        XCTAssertEqual(stacker.summaries[0].descriptors?.count, 2)
        XCTAssertEqual(stacked.jointCount, 34)
        XCTAssertEqual([stacked.coordinates[0], stacked.coordinates[34]], [20, 30], "stacked at once, in order of first appearance")
        // Moving the bodies of a stacked sequence: body 1 <-> body 2, frame by frame.
        var moved = stacked
        People.moveBodies(&moved, from: [0, 1], to: [1, 0])
        XCTAssertEqual([moved.coordinates[0], moved.coordinates[34]], [30, 20])
        XCTAssertEqual(moved.present[3 * 34 + 0], 0, "mid is absent in frame 3: now body 1")
        XCTAssertEqual(moved.present[3 * 34 + 17], 1, "long is present in frame 3: now body 2")
        var sequences = [stacked]
        XCTAssertEqual(stacker.finish(&sequences)?.sequences, 1)
        XCTAssertEqual(sequences, [stacked], "one sequence: nothing recurs, nothing moves")
        XCTAssertTrue(stacker.summaries.isEmpty)
    }
}
