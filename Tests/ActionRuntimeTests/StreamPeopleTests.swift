@testable import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Several people in one stream: an interaction model's bodies paired as offline `--people
/// bodies=M` stacks them (docs/streaming.md "Several people"), string and integer ids.
final class StreamPeopleTests: XCTestCase {
    /// `StreamFixtures.model` on two bodies of vision-body-2d.
    static func twoBodyModel(conv: Bool = true) throws -> ActionModel {
        try StreamFixtures.model(conv: conv, skeleton: StreamFixtures.skeleton.bodies(2))
    }

    func testPairingFollowsFirstAppearanceAndGivesUpStaleBodiesOnlyToNewcomers() {
        var pairing = BodyPairing(bodies: 2, forgetAfter: 1)
        func frame(_ people: [(PersonID, Bool)], _ t: Double) -> [Int?] {
            let (bodies, next) = pairing.assign(people.map { (id: $0.0, seen: $0.1) }, time: t)
            pairing = next
            return bodies
        }
        // "x" is pushed first but shows no joint until later: "b" appears first.
        XCTAssertEqual(frame([("x", false), ("b", true)], 0), [nil, 0])
        XCTAssertEqual(frame([("a", true), ("b", true)], 0.1), [1, 0])
        XCTAssertEqual(pairing.people, ["b", "a"])
        // A third person waits while both are in view...
        XCTAssertEqual(frame([("a", true), ("b", true), ("x", true)], 0.2), [1, 0, nil])
        // ...and while "a", though unseen, was seen within a second.
        XCTAssertEqual(frame([("b", true), ("x", true)], 1.1), [0, nil])
        // Past a second, "a"'s body goes to "x"; "a" coming back waits in turn.
        XCTAssertEqual(frame([("b", true), ("x", true)], 1.3), [0, 1])
        XCTAssertEqual(frame([("a", true), ("b", true), ("x", true)], 1.4), [nil, 0, 1])
        // Newcomers in one frame go in the order they were first pushed ("z" before "y").
        var two = BodyPairing(bodies: 2, forgetAfter: 1)
        two = two.assign([(id: "z", seen: false)], time: 0).next
        XCTAssertEqual(two.assign([(id: "y", seen: true), (id: "z", seen: true)], time: 0.1).bodies, [1, 0])
        // Without anyone waiting, an absent person keeps their body however long.
        var kept = BodyPairing(bodies: 2, forgetAfter: 1)
        kept = kept.assign([(id: 1, seen: true), (id: 2, seen: true)], time: 0).next
        XCTAssertEqual(kept.assign([(id: 2, seen: true)], time: 50).next.people, [1, 2])
    }

    /// Issue 36 item 5: a model trained on people named by role (`bodyRoles`) gives each role
    /// its own body whoever appears first; other people take the lowest free body.
    func testPairingGivesRolesTheirOwnBodies() {
        var pairing = BodyPairing(bodies: 2, forgetAfter: 1, roles: ["perp", "victim"])
        XCTAssertEqual(pairing.assign([(id: "victim", seen: true)], time: 0).bodies, [1], "the victim seen first: body 2")
        pairing = pairing.assign([(id: "victim", seen: true)], time: 0).next
        XCTAssertEqual(pairing.assign([(id: "perp", seen: true), (id: "victim", seen: true)], time: 0.1).bodies, [0, 1])
        XCTAssertEqual(BodyPairing(bodies: 2, forgetAfter: 1).assign([(id: "victim", seen: true)], time: 0).bodies, [0], "without roles: body 1")
        // Someone else takes the lowest free body; a role whose body is taken takes the next.
        var mixed = BodyPairing(bodies: 2, forgetAfter: 1, roles: ["perp", "victim"])
        mixed = mixed.assign([(id: 7, seen: true)], time: 0).next
        XCTAssertEqual(mixed.people, [7, nil])
        XCTAssertEqual(mixed.assign([(id: 7, seen: true), (id: "perp", seen: true)], time: 0.1).bodies, [0, 1])
        // Integer roles are the stream's integer ids ("7" in a file is 7 live).
        let numbered = BodyPairing(bodies: 2, forgetAfter: 1, roles: [PersonID(parsing: "2"), PersonID(parsing: "1")])
        XCTAssertEqual(numbered.assign([(id: 1, seen: true), (id: 2, seen: true)], time: 0).bodies, [1, 0])
        var reset = numbered.assign([(id: 1, seen: true)], time: 0).next
        reset.reset()
        XCTAssertEqual(reset.assign([(id: 1, seen: true)], time: 0).bodies, [1], "the roles outlive a reset")
    }

    /// A session of a model with roles pairs a stream as offline reading with the model's order
    /// stacks it: "victim" listed and seen first is still body 2.
    func testASessionWithRolesEqualsTheOfflineStackInTheirOrder() throws {
        let plain = try Self.twoBodyModel()
        var input = plain.input
        input.bodyRoles = ["perp", "victim"]
        let model = try ActionModel(bytes: ModelFile.encode(classes: plain.classes, input: input, network: plain.network, provenance: .init(seed: 7)))
        XCTAssertEqual(model.input.bodyRoles, ["perp", "victim"])
        let a = StreamFixtures.recording(frames: 60, seed: 61), b = StreamFixtures.recording(frames: 60, seed: 62)
        let session = try StreamSession(model: model, options: StreamOptions(stride: 3))
        var online: [StreamWindow] = []
        for (fa, fb) in zip(a, b) { online += try session.push(people: [("victim", fb.points), ("perp", fa.points)], time: fa.time) }
        XCTAssertEqual(session.people, ["perp", "victim"])
        online += session.finish()
        let perp = try StreamFixtures.sequence(a)
        let victim = try StreamFixtures.sequence(zip(a, b).map { StreamFixtures.Frame(time: $0.time, points: $1.points) })
        let offline = try model.predict(sequence: PoseSequence.stackingBodies([perp, victim]), stride: 3, sourceFrameRate: nil)
        XCTAssertEqual(online.map(\.start), offline.map(\.start))
        XCTAssertGreaterThan(online.count, 5)
        for (w, p) in zip(online, offline) { assertClose(w.probabilities, p.probabilities, absolute: 1e-6, relative: 1e-6) }
    }

    /// Two people, "b" seen from the start and "a" from frame 10, pushed as frames of several
    /// people: the windows of the two recordings stacked offline (b in body 1), to 1e-6, and
    /// the bits of those windows run one at a time.
    func testPeopleFramesEqualTheOfflineStackOfTheirRecordings() throws {
        for conv in [true, false] {
            let model = try Self.twoBodyModel(conv: conv)
            let a = StreamFixtures.recording(frames: 80, seed: 51), b = StreamFixtures.recording(frames: 80, seed: 52)
            let session = try StreamSession(model: model, options: StreamOptions(stride: 3))
            var online: [StreamWindow] = []
            for (f, (fa, fb)) in zip(a, b).enumerated() {
                var people: [(id: PersonID, points: [String: PosePoint])] = [("b", fb.points)]
                if f >= 10 { people.insert(("a", fa.points), at: 0) }  // listed first, appears later
                online += try session.push(people: people, time: fa.time)
            }
            XCTAssertEqual(session.people, ["b", "a"])
            online += session.finish()
            // Offline: b's frames at a's times, a absent before frame 10, stacked b then a.
            let bodyA = try StreamFixtures.sequence(
                a.enumerated().map { f, x in StreamFixtures.Frame(time: x.time, points: f >= 10 ? x.points : [:]) })
            let bodyB = try StreamFixtures.sequence(zip(a, b).map { StreamFixtures.Frame(time: $0.time, points: $1.points) })
            let stacked = PoseSequence.stackingBodies([bodyB, bodyA])
            let offline = try model.predict(sequence: stacked, stride: 3, sourceFrameRate: nil)
            let cut = try model.windows(of: stacked, stride: 3, sourceFrameRate: nil)
            XCTAssertEqual(online.map(\.start), offline.map(\.start))
            XCTAssertGreaterThan(online.count, 10)
            for (i, (w, p)) in zip(online, offline).enumerated() {
                assertClose(w.probabilities, p.probabilities, absolute: 1e-6, relative: 1e-6)
                XCTAssertEqual(w.probabilities.map(\.bitPattern), try model.probabilities(window: cut[i].window).map(\.bitPattern))
            }
        }
    }

    func testATrackedStreamGathersLinesIntoFramesAndReportsWhoIsInEachBody() throws {
        let model = try Self.twoBodyModel()
        let a = StreamFixtures.recording(frames: 60, seed: 53), b = StreamFixtures.recording(frames: 60, seed: 54)
        func stream() throws -> TrackedStream {
            try TrackedStream(model: model, options: StreamOptions(stride: 4), events: .standard(classes: model.classes), forgetAfter: 1)
        }
        // Whole frames, and the same frames as one line per person (lines of one time together).
        let frames = try stream(), lines = try stream()
        var byFrame: [TrackedStream.Output] = [], byLine: [TrackedStream.Output] = []
        for (fa, fb) in zip(a, b) {
            byFrame += try frames.push(people: [(1, fa.points), ("two", fb.points)], time: fa.time)
            byLine += try lines.push(track: 1, points: fa.points, time: fa.time)
            byLine += try lines.push(track: "two", points: fb.points, time: fa.time)
        }
        byFrame += frames.finish()
        byLine += lines.finish()
        XCTAssertEqual(byLine.flatMap(\.windows), byFrame.flatMap(\.windows))
        XCTAssertGreaterThan(byFrame.flatMap(\.windows).count, 8)
        // Bodies in order of first appearance (a frame with a joint present).
        let order: [PersonID] = a.firstIndex { !$0.points.isEmpty }! <= b.firstIndex { !$0.points.isEmpty }! ? [1, "two"] : ["two", 1]
        XCTAssertEqual(byFrame.last?.people, order)
        XCTAssertEqual(byFrame.last?.track, order[0])
        // The session alone gives the same windows.
        let session = try StreamSession(model: model, options: StreamOptions(stride: 4))
        var alone: [StreamWindow] = []
        for (fa, fb) in zip(a, b) { alone += try session.push(people: [(1, fa.points), ("two", fb.points)], time: fa.time) }
        alone += session.finish()
        XCTAssertEqual(byFrame.flatMap(\.windows), alone)
        // A line older than the frame being gathered is ignored as going backwards.
        let late = try stream()
        _ = try late.push(track: 1, points: a[0].points, time: 1)
        _ = try late.push(track: 2, points: b[0].points, time: 0.9)
        XCTAssertEqual(late.statistics.count(.timeBackwards), 1)
    }

    func testAThirdPersonWaitsWithAWarningAndPackedLinesStillWork() throws {
        let model = try Self.twoBodyModel()
        let a = StreamFixtures.recording(frames: 30, seed: 55)
        let session = try StreamSession(model: model, options: StreamOptions(stride: 4))
        for f in a { _ = try session.push(people: [(1, f.points), (2, f.points), (3, f.points)], time: f.time) }
        XCTAssertEqual(session.statistics.count(.unpairedPerson), a.filter { !$0.points.isEmpty }.count)
        XCTAssertTrue("\(session.statistics.firstWarnings.first { $0.kind == .unpairedPerson }!)".contains("person 3 waits for a body"))
        // One line naming the bodies' joints (p1.<joint>, p2.<joint>) is the frame as given.
        let packed = try TrackedStream(model: model, options: StreamOptions(stride: 4), events: .standard(classes: model.classes))
        let direct = try StreamSession(model: model, options: StreamOptions(stride: 4))
        var got: [StreamWindow] = [], expected: [StreamWindow] = []
        for f in a {
            var points: [String: PosePoint] = [:]
            for (name, p) in f.points { (points["p1.\(name)"], points["p2.\(name)"]) = (p, p) }
            got += try packed.push(track: 0, points: points, time: f.time).flatMap(\.windows)
            expected += try direct.push(points, time: f.time)
        }
        got += packed.finish().flatMap(\.windows)
        expected += direct.finish()
        XCTAssertEqual(got, expected)
        XCTAssertEqual(packed.statistics.count(.unknownJoint), 0)
        // A model of one person takes one person per frame from a session.
        let one = try StreamSession(model: try StreamFixtures.model(), options: StreamOptions(stride: 4))
        XCTAssertThrowsError(try one.push(people: [(1, a[0].points), (2, a[0].points)], time: 0)) {
            XCTAssertEqual($0 as? StreamError, .onePersonPerSession(people: 2))
            XCTAssertTrue("\($0)".contains("TrackedStream"))
        }
        XCTAssertEqual(try one.push(people: [(1, a[0].points)], time: 0), [])
    }

    func testStringAndIntegerIdsAreTracksOfTheirOwn() throws {
        let model = try StreamFixtures.model()
        let a = StreamFixtures.recording(frames: 40, seed: 56)
        let s = try TrackedStream(model: model, options: StreamOptions(stride: 4), events: .standard(classes: model.classes))
        var tracks = Set<PersonID>()
        for f in a {
            for id: PersonID in [2, "2", "left"] { tracks.formUnion(try s.push(track: id, points: f.points, time: f.time).map(\.track)) }
        }
        XCTAssertEqual(s.trackIDs, [2, "2", "left"])
        XCTAssertEqual(tracks, [2, "2", "left"])
        XCTAssertEqual(PersonID.name("a\"b").json, #""a\"b""#)
        XCTAssertEqual(PersonID.number(-3).json, "-3")
        XCTAssertLessThan(PersonID.number(10), PersonID.name("1"))
    }
}
