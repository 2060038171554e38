@testable import ActionTrain
import Datasets
import Foundation
import PoseCore
import XCTest

/// Mirror pairs read off a bone tree (`MirrorPairs`), and the recipe giving them to a skeleton
/// that names none.
final class MirrorPairsTests: XCTestCase {
    /// A stick body: 0 pelvis, 1 spine, 2 neck, 3 head, 4/6 shoulders, 5/7 elbows, 8/10 hips,
    /// 9/11 knees; the spine is the centre.
    static let body: (edges: [[Int]], lengths: [Double]) = (
        [[0, 1], [1, 2], [2, 3], [2, 4], [4, 5], [2, 6], [6, 7], [0, 8], [8, 9], [0, 10], [10, 11]],
        [1, 1, 0.5, 0.4, 0.6, 0.4, 0.62, 0.3, 0.9, 0.31, 0.88]
    )

    static func pairs(_ edges: [[Int]], _ lengths: [Double], joints: Int) -> Set<[Int]> {
        Set(MirrorPairs.inferred(joints: joints, edges: edges, lengths: lengths).map { [$0.left, $0.right] })
    }

    func testASymmetricBodyPairsItsLimbsJointByJoint() {
        let found = MirrorPairs.inferred(joints: 12, edges: Self.body.edges, lengths: Self.body.lengths)
        XCTAssertEqual(Set(found.map { [$0.left, $0.right] }), [[8, 10], [9, 11], [4, 6], [5, 7]])
        XCTAssertEqual(Set(found.filter(\.root).map { [$0.left, $0.right] }), [[8, 10], [4, 6]], "the hips and shoulders start their limbs")
        XCTAssertEqual(Set(found.map(\.limb)).count, 2)
        // The edges in another order and direction: the same pairs; the lower index is the left.
        let shuffled = Self.body.edges.reversed().map { [$0[1], $0[0]] }
        XCTAssertEqual(Self.pairs(shuffled, Self.body.lengths.reversed(), joints: 12), [[8, 10], [9, 11], [4, 6], [5, 7]])
        // The sides of a skeleton with those pairs are the pairs hanging from the axis.
        let names = (0..<12).map { "j\($0)" }
        let sk = Skeleton(
            name: "anon", joints: names, dimensions: 3, units: .metres, mirrorPairs: found.map { [names[$0.left], names[$0.right]] },
            bones: Self.body.edges.map { [names[$0[0]], names[$0[1]]] })
        let sides = MirrorPairs.sideJoints(sk)
        XCTAssertEqual(Set(sides.left), ["j4", "j8"])
        XCTAssertEqual(Set(sides.right), ["j6", "j10"])
        XCTAssertEqual(Set(sk.sideJoints.left), ["j4", "j5", "j8", "j9"], "a named skeleton's rule would take every pair")
    }

    func testTwoArmsJoinedAtTheirCentrePairWhole() {
        // NATOPS-like: tip-thumb-wrist(-elbow) on each side, the wrists joined: the centre is an edge.
        let edges = [[0, 6], [6, 4], [4, 2], [4, 5], [5, 7], [7, 1], [5, 3]]
        let found = MirrorPairs.inferred(joints: 8, edges: edges, lengths: [0.3, 0.33, 0.86, 1.7, 0.35, 0.29, 0.83])
        XCTAssertEqual(Set(found.map { [$0.left, $0.right] }), [[4, 5], [6, 7], [0, 1], [2, 3]])
        XCTAssertEqual(found.filter(\.root).map { [$0.left, $0.right] }, [[4, 5]])
        // No joint on the axis: every pair gives the sides.
        let names = (0..<8).map { "j\($0)" }
        let sk = Skeleton(
            name: "anon", joints: names, dimensions: 3, units: .metres, mirrorPairs: found.map { [names[$0.left], names[$0.right]] },
            bones: edges.map { [names[$0[0]], names[$0[1]]] })
        XCTAssertEqual(MirrorPairs.sideJoints(sk).left, ["j4", "j6", "j0", "j2"])
    }

    func testAsymmetricTreesThreeLikeBranchesAndUnequalBonesPairNothing() {
        // One arm a joint longer, one leg a joint longer.
        let lopsided = Self.body.edges + [[5, 12], [9, 13]]
        XCTAssertEqual(Self.pairs(lopsided, Self.body.lengths + [0.2, 0.2], joints: 14), [])
        // Three like branches from the centre.
        let star = [[0, 1], [1, 2], [0, 3], [3, 4], [0, 5], [5, 6]]
        XCTAssertEqual(Self.pairs(star, [Double](repeating: 1, count: 6), joints: 7), [])
        // Legs of different lengths (a thigh 0.9, the other 1.5): only the arms pair.
        var lengths = Self.body.lengths
        lengths[10] = 1.5
        XCTAssertEqual(Self.pairs(Self.body.edges, lengths, joints: 12), [[4, 6], [5, 7]])
        lengths[4] = 0.9
        XCTAssertEqual(Self.pairs(Self.body.edges, lengths, joints: 12), [])
        // Not a tree.
        XCTAssertEqual(Self.pairs([[0, 1], [1, 2], [2, 0]], [1, 1, 1], joints: 4), [])
    }

    /// The minimum tree of a symmetric body that hangs one shoulder (6) from the spine (1), the
    /// other (4) from the neck (2): a swap to the neck bone, a little heavier, pairs the arms; one
    /// heavier than `MirrorPairs.swapRatio` times the spine's, or a lopsided body, keeps the tree.
    func testASwapWithinTheRatioHangsBothShouldersFromOneJoint() {
        var wrong = Self.body.edges
        wrong[5] = [1, 6]
        let lengths: [[Int]: Double] = Dictionary(uniqueKeysWithValues: zip(Self.body.edges, Self.body.lengths)).merging([[1, 6]: 0.7]) { a, _ in a }
        func length(_ a: Int, _ b: Int) -> Double { lengths[[a, b]] ?? lengths[[b, a]] ?? 2 }
        func weights(neck: Double) -> (Int, Int) -> Double {
            { a, b in
                let e = [min(a, b), max(a, b)]
                return e == [2, 6] ? neck : wrong.contains(e) ? 1 : 10
            }
        }
        XCTAssertEqual(Self.pairs(wrong, wrong.map { length($0[0], $0[1]) }, joints: 12), [[8, 10], [9, 11]], "only the legs pair")
        let swapped = MirrorPairs.symmetricTree(joints: 12, edges: wrong, weight: weights(neck: 1.4), length: length)
        XCTAssertEqual(swapped, Self.body.edges, "the new bone in the old one's place, pointing away from joint 0")
        XCTAssertEqual(Self.pairs(swapped, swapped.map { length($0[0], $0[1]) }, joints: 12), [[8, 10], [9, 11], [4, 6], [5, 7]])
        XCTAssertEqual(MirrorPairs.symmetricTree(joints: 12, edges: wrong, weight: weights(neck: 1.6), length: length), wrong)
        // One forearm twice the other: no swap pairs more.
        func lopsided(_ a: Int, _ b: Int) -> Double { [min(a, b), max(a, b)] == [6, 7] ? 1.2 : length(a, b) }
        XCTAssertEqual(MirrorPairs.symmetricTree(joints: 12, edges: wrong, weight: weights(neck: 1.01), length: lopsided), wrong)
        // A tree that pairs already is returned as it is.
        XCTAssertEqual(MirrorPairs.symmetricTree(joints: 12, edges: Self.body.edges, weight: weights(neck: 1), length: length), Self.body.edges)
    }

    /// 10 anonymous joints: 0 hip, 1 spine, 2 shoulder centre, 3 head, 4/5/6 left shoulder, elbow,
    /// hand, 7/8/9 right; the left shoulder sits 10 cm lower, nearer the spine (0.47) than the
    /// shoulder centre is (0.5). The arms swing at random, every joint jitters by 1 cm, each
    /// sequence is turned by its own angle. `forearm`: the right forearm's length (the left's 0.25).
    static func upperBody(forearm: Double, namesPairs: Bool = false) -> Dataset {
        let names = (0..<10).map { "j\($0)" }
        let pairs = namesPairs ? [["j4", "j7"], ["j5", "j8"], ["j6", "j9"]] : []
        let sk = Skeleton(name: "anon-10", joints: names, dimensions: 3, units: .metres, mirrorPairs: pairs)
        var g = SeededGenerator(seed: 3)
        func unit() -> [Double] {
            let v = (0..<3).map { _ in Double(g.nextGaussian()) }
            let n = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return v.map { $0 / n }
        }
        var seqs: [PoseSequence] = []
        for i in 0..<6 {
            var s = PoseSequence(id: "s\(i)", label: "class\(i % 2)", jointCount: 10, dimensions: 3, hasConfidence: false)
            let yaw = Double(i) * 1.1
            for _ in 0..<60 {
                var points: [[Double]] = [[0, 0, 0], [0, 0.5, 0], [0, 1, 0], [0, 1.3, 0]]
                for (shoulder, lower) in [([-0.25, 0.9, 0.0], 0.25), ([0.25, 1, 0], forearm)] {
                    let (u, v) = (unit(), unit())
                    let elbow = (0..<3).map { shoulder[$0] + 0.3 * u[$0] }
                    points += [shoulder, elbow, (0..<3).map { elbow[$0] + lower * v[$0] }]
                }
                s.appendFrame(
                    points.map { p in
                        let q = p.map { $0 + 0.01 * Double(g.nextGaussian()) }
                        return PosePoint(x: Float(q[0] * cos(yaw) + q[2] * sin(yaw)), y: Float(q[1]), z: Float(3 - q[0] * sin(yaw) + q[2] * cos(yaw)))
                    })
            }
            seqs.append(s)
        }
        return Dataset(name: "upper", skeleton: sk, sequences: seqs, frameRate: 30)
    }

    /// A shoulder nearer the spine than the shoulder centre: the minimum tree hangs it from the
    /// spine and pairs nothing; the recipe's tree hangs both shoulders from the shoulder centre
    /// and pairs the arms. With a right forearm 60% longer nothing pairs and the tree is the
    /// minimum one; a skeleton that names its pairs keeps the minimum tree.
    func testAShoulderNearerTheSpineStillHangsFromTheShoulderCentre() {
        let d = Self.upperBody(forearm: 0.25), all = Array(0..<6)
        let minimum = SkeletonGraph.inferredTree(Self.upperBody(forearm: 0.25, namesPairs: true), indices: all)
        XCTAssertTrue(minimum.edges.contains([1, 4]), "the minimum tree hangs the left shoulder from the spine: \(minimum.edges)")
        XCTAssertEqual(Self.pairs(minimum.edges, minimum.lengths, joints: 10), [])
        let p = DatasetProfile(d, indices: all)
        let bones = Set(p.inferredBones)
        XCTAssertTrue(bones.isSuperset(of: [["j1", "j2"], ["j2", "j4"], ["j2", "j7"], ["j2", "j3"]]), "\(p.inferredBones)")
        XCTAssertEqual(p.inferredBones.count, 9)
        XCTAssertEqual(Set(p.inferredMirrorPairs.map { Set($0) }), [["j4", "j7"], ["j5", "j8"], ["j6", "j9"]])
        XCTAssertEqual(p.inferredBones, SkeletonGraph.inferred(d, indices: all))

        let lopsided = Self.upperBody(forearm: 0.4)
        let q = DatasetProfile(lopsided, indices: all)
        XCTAssertEqual(q.inferredMirrorPairs, [])
        var named = lopsided
        named.skeleton.mirrorPairs = [["j4", "j7"]]
        XCTAssertEqual(q.inferredBones, SkeletonGraph.inferred(named, indices: all), "nothing pairs more: the minimum tree")
    }

    /// 7 anonymous joints: 0 hip, 1 chest, 2 head, 3/5 elbows, 4/6 hands; each sequence swings
    /// one arm (either side in every class), the body turned by its own angle.
    static func anonymous(perClass: Int) -> Dataset {
        let names = (0..<7).map { "j\($0)" }
        let sk = Skeleton(name: "anon-7", joints: names, dimensions: 3, units: .metres)
        var seqs: [PoseSequence] = []
        for c in 0..<3 {
            for i in 0..<perClass {
                var s = PoseSequence(id: "c\(c)-\(i)", label: "class\(c)", jointCount: 7, dimensions: 3, hasConfidence: false)
                let yaw = Double(c * perClass + i) * 0.7, moving = i % 2
                for f in 0..<30 {
                    let t = Double(f) / 30 * (1 + Double(c))
                    var points: [[Double]] = [[0, 0, 0], [0, 0.6, 0], [0, 0.9, 0]]
                    for side in 0..<2 {
                        let sign = side == 0 ? -1.0 : 1.0
                        let swing = side == moving ? sin(t * 6) : 0.1
                        let elbow = [sign * 0.4 * cos(swing), 0.6 - 0.4 * sin(swing), 0]
                        let bend = 0.5 + (side == moving ? cos(t * 4) : 0)
                        points += [elbow, [elbow[0] + sign * 0.4 * cos(bend), elbow[1] - 0.4 * sin(bend), elbow[2]]]
                    }
                    s.appendFrame(
                        points.map { p in
                            PosePoint(x: Float(p[0] * cos(yaw) + p[2] * sin(yaw)), y: Float(p[1]), z: Float(3 - p[0] * sin(yaw) + p[2] * cos(yaw)))
                        })
                }
                seqs.append(s)
            }
        }
        return Dataset(name: "anon", skeleton: sk, sequences: seqs, frameRate: 30)
    }

    /// The recipe gives an anonymous skeleton the pairs of its inferred tree: `mirrorPairs`,
    /// facing by the pairs at the axis, and flips when the classes use either side.
    func testTheRecipeGivesAnAnonymousSkeletonItsTreesPairs() throws {
        let d = Self.anonymous(perClass: 9)
        let p = DatasetProfile(d, indices: Array(d.sequences.indices))
        XCTAssertEqual(Set(p.inferredBones.map { Set($0) }), [["j0", "j1"], ["j1", "j2"], ["j1", "j3"], ["j3", "j4"], ["j1", "j5"], ["j5", "j6"]])
        XCTAssertEqual(p.inferredMirrorPairs, [["j3", "j5"], ["j4", "j6"]])
        XCTAssertLessThan(try XCTUnwrap(p.laterality).consistency, Recipe.consistencyToKeepSides)
        XCTAssertNotNil(p.facingSpread)
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: p)
        XCTAssertEqual(c.mirrorPairs, p.inferredMirrorPairs)
        XCTAssertTrue(c.alignFacing)
        XCTAssertEqual(c.augmentation.flipProbability, 0.5)
        XCTAssertTrue(choices.contains { $0.topic == "coordinates" && $0.seen.contains("the inferred tree mirrors 2 joint pairs") && $0.seen.contains("sides j3 | j5") }, "\(choices)")
        let spec = try c.inputSpec(for: d.skeleton, imageSize: nil)
        XCTAssertEqual(spec.skeleton.mirrorPairs, p.inferredMirrorPairs, "the model's skeleton keeps them")
        XCTAssertTrue(spec.steps.contains(.alignFacing(left: ["j3"], right: ["j5"], verticalAxis: 1)), "\(spec.steps)")
        XCTAssertNoThrow(try spec.mirrorImage())

        // A skeleton that names pairs is unchanged; pairs the user gave (or none) are kept.
        XCTAssertEqual(DatasetProfile(RecipeTests.dataset(perClass: 9), indices: [0]).inferredMirrorPairs, [])
        var mine = TrainingConfig()
        mine.mirrorPairs = [["j4", "j6"]]
        XCTAssertEqual(Recipe.choose(mine, explicit: ["mirrorPairs"], profile: p).config.mirrorPairs, [["j4", "j6"]])
        mine.mirrorPairs = [["j4", "j9"]]
        XCTAssertThrowsError(try mine.inputSpec(for: d.skeleton, imageSize: nil)) { e in
            guard case TrainingError.invalidConfig("mirrorPairs", _) = e else { return XCTFail("\(e)") }
        }
    }

    /// Limbs whose lower-indexed joints are on opposite sides are turned to agree in the data.
    func testTheLimbsSidesAgreeInTheData() {
        // 0 centre, 1/2 a pair (1 on the left), 3/4 a pair (4 on the left: its lower index is right).
        let names = (0..<5).map { "j\($0)" }
        let sk = Skeleton(name: "anon-5", joints: names, dimensions: 3, units: .metres)
        var s = PoseSequence(id: "s", label: "a", jointCount: 5, dimensions: 3, hasConfidence: false)
        for _ in 0..<10 {
            s.appendFrame([[0, 0, 0], [-1, 0, 0], [1, 0, 0], [1, 1, 0], [-1, 1, 0]].map { PosePoint(x: Float($0[0]), y: Float($0[1]), z: Float($0[2])) })
        }
        let d = Dataset(name: "x", skeleton: sk, sequences: [s])
        let pairs = [
            MirrorPairs.Pair(left: 1, right: 2, limb: 0, root: true), MirrorPairs.Pair(left: 3, right: 4, limb: 1, root: true),
        ]
        XCTAssertEqual(DatasetProfile.oriented(pairs, d, [0], maxFrames: 100).map { [$0.left, $0.right] }, [[1, 2], [4, 3]])
    }
}
