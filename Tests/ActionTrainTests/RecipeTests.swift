@testable import ActionTrain
import Datasets
import PoseCore
import TestSupport
import XCTest

/// The recipe reads facts from the data (`DatasetProfile`) and chooses the keys the user did
/// not set (`Recipe.choose`). Synthetic datasets with known answers.
final class RecipeTests: XCTestCase {
    /// A 3D stick figure of 4 joints: hip centre at `origin`, head 1 m above, shoulders ±0.5 m.
    static let stick = Skeleton(
        name: "stick", joints: ["hip", "head", "leftShoulder", "rightShoulder"], dimensions: 3, units: .metres,
        mirrorPairs: [["leftShoulder", "rightShoulder"]], bones: [["hip", "head"], ["head", "leftShoulder"], ["head", "rightShoulder"]],
        centre: ["hip"], torsoUpper: ["head"], torsoLower: ["hip"])

    static func sequence(_ id: String, label: String, frames: Int, origin: [Float], scale: Float = 1) -> PoseSequence {
        var s = PoseSequence(id: id, label: label, jointCount: 4, dimensions: 3, hasConfidence: false)
        let offsets: [[Float]] = [[0, 0, 0], [0, 1, 0], [-0.5, 0.8, 0], [0.5, 0.8, 0]]
        for _ in 0..<frames {
            s.appendFrame(offsets.map { o in PosePoint(x: origin[0] + scale * o[0], y: origin[1] + scale * o[1], z: origin[2] + scale * o[2]) })
        }
        return s
    }

    /// `perClass` sequences for each of 3 classes, of lengths 20, 30, 40, ... frames.
    static func dataset(
        _ skeleton: Skeleton = stick, perClass: Int, frames: (Int) -> Int = { 20 + 10 * ($0 % 3) }, origin: [Float] = [0, 0, 3],
        frameRate: Double? = 30
    ) -> Dataset {
        var seqs: [PoseSequence] = []
        for c in 0..<3 {
            for i in 0..<perClass {
                var s = sequence("c\(c)-\(i)", label: "class\(c)", frames: frames(i), origin: origin)
                s.group = "subject\(i % 5)"
                seqs.append(s)
            }
        }
        return Dataset(name: "toy", skeleton: skeleton, sequences: seqs, frameRate: frameRate)
    }

    func testProfileMeasuresLengthsClassesAndGeometry() {
        let d = Self.dataset(perClass: 9)
        let p = DatasetProfile(d, indices: Array(d.sequences.indices))
        XCTAssertEqual(p.sequences, 27)
        XCTAssertEqual(p.classes, 3)
        XCTAssertEqual(p.smallestClass, 9)
        XCTAssertEqual(p.frames, DatasetProfile.Lengths(min: 20, median: 30, p90: 40, max: 40))
        XCTAssertEqual(p.frameRate, 30)
        XCTAssertEqual(p.medianSeconds, 1)
        // Joints about their mean (0, 0.65, 0): squared distances 0.4225 + 0.1225 + 2·(0.25 + 0.0225) = 1.09.
        assertClose(p.bodySize, (1.09 / 4).squareRoot(), absolute: 1e-6)
        // The mean (0, 0.65, 3) is |.| = 3.0695 from the origin.
        assertClose(p.offset, (0.65 * 0.65 + 9).squareRoot() / (1.09 / 4).squareRoot(), absolute: 1e-5)
        XCTAssertEqual(p.axisSpread.count, 3)
        assertClose(p.axisSpread[2], 0, absolute: 1e-6)
    }

    func testClipsBecomeOneWindowAndTheCoordinatesFollowTheSkeleton() {
        let d = Self.dataset(perClass: 9)
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.windowMode, .fit)
        XCTAssertEqual(c.windowFrames, Recipe.fitFrames(30))
        XCTAssertEqual(c.centring, .window)
        XCTAssertEqual(c.scaling, .torso)
        XCTAssertTrue(c.alignFacing, "views auto: a camera elsewhere sees the bodies turned")
        XCTAssertTrue(choices.contains { $0.seen.contains("varies by 0°") && $0.seen.contains("views auto") }, "\(choices)")
        XCTAssertEqual(c.channels, [.coordinates, .mask, .bones])
        XCTAssertEqual(c.validationFraction, 0, "9 sequences a class is small")
        XCTAssertEqual(c.augmentation, Self.tilted(Recipe.standardAugmentation), "small data is augmented, and 3D cameras tilted")
        XCTAssertTrue(c.augmentation.isEnabled)
        XCTAssertEqual(c.augmentation.flipProbability, 0, "flips change lateral classes")
        XCTAssertEqual(Set(choices.map(\.topic)), ["windows", "coordinates", "channels", "model", "size", "training"])
        XCTAssertTrue(choices[0].seen.contains("27 sequences of 20-40 frames (median 30)"), choices[0].seen)
        XCTAssertTrue(choices[0].set.contains("windowMode fit"), choices[0].set)
    }

    func testLongRecordingsAreCutIntoSlidingWindowsOfTwoSeconds() {
        let d = Self.dataset(perClass: 2, frames: { _ in 900 })  // 30 s at 30 fps
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.windowMode, .sliding)
        XCTAssertEqual(c.windowFrames, 60)
        XCTAssertEqual(c.windowStride, 20)
        XCTAssertTrue(choices[0].seen.contains("recordings longer than 10 s"), choices[0].seen)
    }

    func testKeysTheUserSetAreNeverChanged() {
        let d = Self.dataset(perClass: 9)
        var base = TrainingConfig()
        base.windowMode = .sliding
        base.channels = [.coordinates]
        base.epochs = 7
        let (c, choices) = Recipe.choose(
            base, explicit: ["windowMode", "channels", "epochs"], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.windowMode, .sliding)
        XCTAssertEqual(c.channels, [.coordinates])
        XCTAssertEqual(c.epochs, 7)
        XCTAssertFalse(choices.contains { $0.topic == "channels" }, "nothing was chosen for channels")
        XCTAssertEqual(c.windowFrames, Recipe.fitFrames(30), "other window keys are still chosen")
    }

    /// Without centre or torso joints: off-centre data is centred on the mean of all joints and
    /// divided by the measured body size; body-centred data is left where it is.
    func testSkeletonsWithoutCentreOrTorsoAreCentredAndScaledFromTheData() {
        var bare = Self.stick
        bare.name = "bare"
        bare.centre = []
        bare.torsoUpper = []
        bare.torsoLower = []
        bare.bones = []
        let far = Self.dataset(bare, perClass: 9)
        let p = DatasetProfile(far, indices: Array(far.sequences.indices))
        let (c, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: p)
        XCTAssertEqual(c.centring, .mean)
        XCTAssertEqual(c.scaling, .fixed)
        XCTAssertEqual(c.scaleDivisor, Double(Float(p.bodySize)))
        XCTAssertEqual(c.channels, [.coordinates, .mask, .bones], "bones inferred from the data (SkeletonGraphTests)")
        XCTAssertNoThrow(try c.inputSpec(for: bare, imageSize: nil))
        var hands = bare
        hands.joints = ["hip", "head", "leftHand", "rightHand"]
        hands.mirrorPairs = [["leftHand", "rightHand"]]
        // Without hips or shoulders the mirror pairs turn the window (NATOPS's hands, wrists and
        // elbows: 0.944 -> 0.954, turned 45° 0.935 -> 0.954); without mirror pairs nothing can.
        XCTAssertTrue(Recipe.hasFacingPairs(hands))
        var unpaired = bare
        unpaired.mirrorPairs = []
        XCTAssertFalse(Recipe.hasFacingPairs(unpaired))

        let centred = Self.dataset(bare, perClass: 9, origin: [0, -0.65, 0])
        let (c2, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(centred, indices: Array(centred.sequences.indices)))
        XCTAssertEqual(c2.centring, InputSpec.Centring.none)
    }

    /// x and y in image pixels, z in metres (a depth camera's pixel coordinates with a depth):
    /// the recipe says so and scales as for any data (dividing each axis by its spread measured
    /// worse); `axisDivisors` divides each axis by its own number. Spreads within a body's
    /// proportions, or a flat axis, are not taken for different units.
    func testAxesInDifferentUnitsAreEachDividedByTheirOwnSpread() throws {
        let offsets: [[Float]] = [[0, 0, 0], [0, 1, 0.1], [-0.5, 0.8, -0.1], [0.5, 0.8, 0.05]]
        var seqs: [PoseSequence] = []
        for c in 0..<3 {
            for i in 0..<9 {
                var s = PoseSequence(id: "c\(c)-\(i)", label: "class\(c)", jointCount: 4, dimensions: 3, hasConfidence: false)
                for f in 0..<20 {
                    let sway = Float(f % 5) * 0.02
                    s.appendFrame(offsets.map { o in PosePoint(x: 320 + 400 * (o[0] + sway), y: 240 - 400 * o[1], z: 2 + o[2] + sway) })
                }
                seqs.append(s)
            }
        }
        let d = Dataset(name: "pixels-and-metres", skeleton: Self.stick, sequences: seqs, frameRate: 30)
        let p = DatasetProfile(d, indices: Array(d.sequences.indices))
        let spreads = try XCTUnwrap(Recipe.differentUnits(p.axisSpread))
        XCTAssertEqual(spreads, p.axisSpread.map { Double(Float($0)) })
        XCTAssertGreaterThan(spreads[0] / spreads[2], 10)
        var (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: p)
        XCTAssertEqual(c.scaling, .torso)
        XCTAssertEqual(c.axisDivisors, [])
        XCTAssertEqual(c.augmentation, Self.tilted(Recipe.standardAugmentation))
        XCTAssertTrue(choices.contains { $0.seen.contains("different units? axisDivisors converts them") }, "\(choices)")
        c.scaling = .fixed
        c.axisDivisors = [400, 400, 1]
        let input = try c.inputSpec(for: Self.stick, imageSize: nil)
        XCTAssertTrue(input.steps.contains(.divide(by: [400, 400, 1])), "\(input.steps)")
        // A wrong count is refused naming the step.
        var wrong = c
        wrong.axisDivisors = [1, 2]
        XCTAssertThrowsError(try wrong.inputSpec(for: Self.stick, imageSize: nil))

        XCTAssertNil(Recipe.differentUnits([0.2, 0.45, 0.1]), "metres: height against depth")
        XCTAssertNil(Recipe.differentUnits([40, 90]), "pixels")
        XCTAssertNotNil(Recipe.differentUnits([0.05, 0.1, 100]), "image fractions and millimetres")
        XCTAssertNil(Recipe.differentUnits([0.2, 0.4, 1e-6]), "a flat axis with noise")
        XCTAssertNil(Recipe.differentUnits([0.2, 0.4, 0]), "a flat axis")
    }

    func testLargeDatasetsKeepAValidationSplit() {
        let d = Self.dataset(perClass: Recipe.smallClass)
        let (c, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.validationFraction, 0.1)
        XCTAssertEqual(c.augmentation, Self.tilted(AugmentationConfig()), "enough data: no augmentation but the cameras tilted of 3D data")
        XCTAssertEqual(c.labelSmoothing, 0.1)
    }

    func testAnAugmentationTheUserGaveIsKept() {
        let d = Self.dataset(perClass: 9)
        var base = TrainingConfig()
        base.augmentation.jitterProbability = 1
        base.augmentation.jitterStandardDeviation = 0.05
        let (c, choices) = Recipe.choose(base, explicit: ["augmentation"], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.augmentation, base.augmentation)
        let size = choices.first { $0.topic == "size" }
        XCTAssertFalse(size?.set.contains("augmentation") ?? true, size?.set ?? "")
    }

    /// An epoch of a few batches trains for at least `minimumSteps` steps: 27 clips are one
    /// batch of 64, 1,000 epochs (the cap); 300 clips are 5 batches, 200 epochs; 9 batches or
    /// more, 120.
    func testFewBatchesAnEpochTrainLonger() {
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 1), 1000)
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 2), 500)
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 3), 340, "334 rounded up to tens")
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 5), 200)
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 8), 130)
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 9), 120)
        XCTAssertEqual(Recipe.trainingEpochs(batchesPerEpoch: 20), 120)
        let tiny = Self.dataset(perClass: 9)
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(tiny, indices: Array(tiny.sequences.indices)))
        XCTAssertEqual(c.epochs, 1000)
        XCTAssertTrue(choices.last!.seen.contains("27 windows are 1 batch an epoch, at least 1000 steps"), choices.last!.seen)
        let many = Self.dataset(perClass: 100)
        let (c2, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(many, indices: Array(many.sequences.indices)))
        XCTAssertEqual(c2.epochs, 200, "270 training windows (10% validation) are 5 batches")
        let (c3, _) = Recipe.choose(
            TrainingConfig(), explicit: ["epochs"], profile: DatasetProfile(tiny, indices: Array(tiny.sequences.indices)))
        XCTAssertEqual(c3.epochs, TrainingConfig().epochs, "the user's epochs are kept")
    }

    /// The same stick figures turned about the vertical axis by `degrees[i % count]`.
    static func turned(_ d: Dataset, degrees: [Double]) -> Dataset {
        var d = d
        for i in d.sequences.indices {
            let a = Float(degrees[i % degrees.count] * .pi / 180), c = cos(a), s = sin(a)
            var q = d.sequences[i]
            for f in 0..<q.frameCount {
                for j in 0..<q.jointCount {
                    let k = (f * q.jointCount + j) * 3
                    let x = q.coordinates[k], z = q.coordinates[k + 2] - 3
                    q.coordinates[k] = c * x + s * z
                    q.coordinates[k + 2] = 3 - s * x + c * z
                }
            }
            d.sequences[i] = q
        }
        return d
    }

    /// With no architecture given, the model is two members: the recipe's network over its
    /// channels and a Fourier temporal pyramid of the joint pairs' relative positions; gaps are
    /// filled only when joints are absent, and the user's architecture is kept alone.
    func testTheDefaultModelAddsAnFTPMemberAndFillsGapsOnlyWhenJointsAreAbsent() {
        let full = Self.dataset(perClass: 9)
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(full, indices: Array(full.sequences.indices)))
        XCTAssertEqual(c.members, [.init(architecture: .tcn, channels: [.coordinates, .mask, .bones]), .init(architecture: .ftp, channels: [.relativePositions])])
        XCTAssertFalse(c.fillGaps, "every joint was seen")
        XCTAssertEqual(c.pairs, [], "4 joints: every pair")
        let note = choices.first { $0.topic == "model" }?.seen ?? ""
        XCTAssertTrue(note.contains("every joint pair (18 values a frame)"), note)  // 6 pairs, 3D
        XCTAssertNoThrow(try c.inputSpec(for: Self.stick, imageSize: nil))

        // One joint of one frame in four missing: 1/16 of the points.
        var gappy = full
        for i in gappy.sequences.indices {
            for f in stride(from: 0, to: gappy.sequences[i].frameCount, by: 4) { gappy.sequences[i].present[f * 4 + 1] = 0 }
        }
        let p = DatasetProfile(gappy, indices: Array(gappy.sequences.indices))
        let absent = Double(gappy.sequences.map { ($0.frameCount + 3) / 4 }.reduce(0, +)) / Double(gappy.sequences.map { $0.frameCount * 4 }.reduce(0, +))
        assertClose(p.absentShare, absent, absolute: 1e-12)
        let (g, gc) = Recipe.choose(TrainingConfig(), explicit: [], profile: p)
        XCTAssertTrue(g.fillGaps)
        XCTAssertTrue(gc.contains { $0.seen.contains("% of the joints are absent: gaps filled") }, "\(gc)")

        var tcn = TrainingConfig()
        tcn.architecture = .tcn
        let (alone, ac) = Recipe.choose(tcn, explicit: ["architecture"], profile: p)
        XCTAssertEqual(alone.members, [], "the user's architecture alone")
        XCTAssertFalse(alone.fillGaps)
        XCTAssertFalse(ac.contains { $0.topic == "model" })
    }

    /// Key joints of a large skeleton: clustered joints (here "toes" 2 cm from a joint) go first;
    /// two bodies add the pairs between their ends.
    func testKeyJointsDropClusteredJointsAndPairTheBodiesEnds() throws {
        // 17 joints on a grid 0.3 m by 0.4 m apart, and 6 "toes" 2 cm from 6 of them: 23 joints.
        var names = (0..<17).map { "j\($0)" }
        var offsets: [[Float]] = (0..<17).map { k in [Float(k % 4) * 0.3, Float(k / 4) * 0.4, 0] }
        names += ["toeA", "toeB", "toeC", "toeD", "toeE", "toeF"]
        offsets += [[0.02, 0, 0], [0.3, 0.02, 0], [0.6, 0, 0.02], [0.9, 0.02, 0], [0.02, 0.4, 0], [0.3, 0.42, 0]]
        let sk = Skeleton(name: "big", joints: names, dimensions: 3, units: .metres)
        var seqs: [PoseSequence] = []
        for i in 0..<6 {
            var s = PoseSequence(id: "s\(i)", label: "a", jointCount: names.count, dimensions: 3, hasConfidence: false)
            for f in 0..<10 {
                let wobble = Float(f + i) * 0.001
                s.appendFrame(offsets.map { PosePoint(x: $0[0] + wobble, y: $0[1], z: $0[2]) })
            }
            seqs.append(s)
        }
        let one = Dataset(name: "big", skeleton: sk, sequences: seqs, frameRate: 30)
        let pairs = try XCTUnwrap(KeyJoints.pairs(one, indices: Array(seqs.indices)))
        XCTAssertEqual(pairs.count, 15 * 14 / 2)
        let kept = Set(pairs.flatMap { $0 })
        XCTAssertEqual(kept.count, 15)
        // Of each toe and its joint at 2 cm, at most one stays.
        for (toe, joint) in [("toeA", "j0"), ("toeB", "j1"), ("toeC", "j2"), ("toeD", "j3"), ("toeE", "j4"), ("toeF", "j5")] {
            XCTAssertFalse(kept.contains(toe) && kept.contains(joint), "\(toe) and \(joint) are 2 cm apart: one is dropped")
        }
        XCTAssertNil(KeyJoints.pairs(Self.dataset(perClass: 2), indices: [0, 1]), "4 joints: every pair")

        // Two bodies: each body's 105 pairs, then 6 × 6 between the bodies.
        var two = one
        two.skeleton = sk.bodies(2)
        two.sequences = seqs.map { PoseSequence.stackingBodies([$0, $0]) }
        let pairs2 = try XCTUnwrap(KeyJoints.pairs(two, indices: Array(two.sequences.indices)))
        XCTAssertEqual(pairs2.count, 2 * 105 + 36)
        XCTAssertEqual(Set(pairs2.suffix(36).map { $0[0].hasPrefix("p1.") && $0[1].hasPrefix("p2.") }), [true])
    }

    /// Issue 36 item 5: the body order the reader chose for two-person data is a "people" line
    /// of the recipe, which says whether the model keeps roles; one-body data has no such line.
    func testThePeopleLineSaysWhichBodyOrderTheReaderChose() {
        var d = Self.dataset(perClass: 9)
        d.skeleton = Self.stick.bodies(2)
        d.sequences = d.sequences.map { PoseSequence.stackingBodies([$0, $0]) }
        d.bodyOrder = BodyOrder(
            rule: .roles(["perp", "victim"]), given: false, bodies: 2, sequences: 27, reordered: 5, recurring: ["perp", "victim"], covered: 27,
            votes: .init(names: 4, appearance: 1))
        let people = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices))).choices
            .first { $0.topic == "people" }
        XCTAssertEqual(people?.set, "body order 'perp', 'victim' (the model keeps it: input.bodyRoles)")
        XCTAssertTrue(people?.seen.hasPrefix("2 bodies a frame; tracks 'perp', 'victim' recur") == true, people?.seen ?? "no people line")
        XCTAssertTrue(people?.seen.contains("as the names order them in 4 and as first appearance does in 1") == true, people?.seen ?? "")
        d.bodyOrder?.rule = .appearance
        d.bodyOrder?.recurring = []
        d.bodyOrder?.votes = nil
        let first = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices))).choices
            .first { $0.topic == "people" }
        XCTAssertEqual(first?.set, "body order: first appearance in each sequence")
        let one = Self.dataset(perClass: 9)
        XCTAssertFalse(Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(one, indices: [0, 1])).choices.contains { $0.topic == "people" })
    }

    /// The facing spread is the circular sd of the sequences' facing angles (printed); the
    /// recipe turns windows to face one way unless the cameras stay where they were (`views`).
    func testFacingAlignmentFollowsTheViews() {
        let front = Self.dataset(perClass: 10)  // 30 sequences: 15 turned each way
        assertClose(DatasetProfile(front, indices: Array(front.sequences.indices)).facingSpread!, 0, absolute: 1e-6)
        // Half the sequences turned by +a, half by −a: R = cos a, circular sd √(−2 ln cos a).
        for a in [20.0, 60.0] {
            let d = Self.turned(front, degrees: [a, -a])
            let p = DatasetProfile(d, indices: Array(d.sequences.indices))
            assertClose(p.facingSpread!, (-2 * log(cos(a * .pi / 180))).squareRoot() * 180 / .pi, absolute: 1e-3)
            for (views, align) in [(TrainingConfig.Views.auto, true), (.other, true), (.same, false)] {
                var base = TrainingConfig()
                base.views = views
                let (c, choices) = Recipe.choose(base, explicit: ["views"], profile: p)
                XCTAssertEqual(c.alignFacing, align, "±\(a)°, views \(views)")
                XCTAssertTrue(choices.contains { $0.seen.contains("views \(views.rawValue)") }, "\(choices)")
            }
            let (kept, _) = Recipe.choose(TrainingConfig(), explicit: ["alignFacing"], profile: p)
            XCTAssertFalse(kept.alignFacing, "a key the user set is kept")
        }
        // 2D data and skeletons without left/right hips or shoulders have no facing spread.
        var flat = front
        flat.skeleton = Skeleton(name: "flat", joints: ["a", "b", "c", "d"], dimensions: 3, units: .metres)
        XCTAssertNil(DatasetProfile(flat, indices: Array(flat.sequences.indices)).facingSpread)
    }

    /// 3D bodies without left/right joints cannot be turned to face one way: small data turns
    /// them by up to `unturnedRotation` in training instead of 15° (unless the cameras stay
    /// where they were), any data with `views other`; bodies that can be turned keep 15°.
    func testBodiesThatCannotBeTurnedGetWiderTurns() {
        var bare = Self.stick
        bare.name = "bare"
        bare.mirrorPairs = []
        let small = Self.dataset(bare, perClass: 9)
        let p = DatasetProfile(small, indices: Array(small.sequences.indices))
        for (views, degrees) in [(TrainingConfig.Views.auto, Recipe.unturnedRotation), (.other, Recipe.unturnedRotation), (.same, 15)] {
            var base = TrainingConfig()
            base.views = views
            let (c, choices) = Recipe.choose(base, explicit: ["views"], profile: p)
            XCTAssertFalse(c.alignFacing)
            XCTAssertEqual(c.augmentation.maxRotationDegrees, degrees, "views \(views)")
            XCTAssertEqual(c.augmentation.rotationProbability, 0.5)
            let size = choices.first { $0.topic == "size" }!
            XCTAssertEqual(size.set.contains("rotation ±45°"), degrees == 45, size.set)
        }
        let paired = Self.dataset(perClass: 9)
        let (c, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(paired, indices: Array(paired.sequences.indices)))
        XCTAssertTrue(c.alignFacing)
        XCTAssertEqual(c.augmentation, Self.tilted(Recipe.standardAugmentation), "turned to face one way: the standard ±15°")
        XCTAssertEqual(Recipe.unturnedRotation, 45)
    }

    /// `dataset` as a 2D skeleton in image pixels (x and y of the stick figure, 100 pixels a metre,
    /// y down).
    static func flat(perClass: Int) -> Dataset {
        let d = dataset(perClass: perClass)
        var sk = stick
        (sk.name, sk.dimensions, sk.units) = ("stick-2d", 2, .pixels)
        let sequences = d.sequences.map { q in
            var s = PoseSequence(id: q.id, label: q.label, jointCount: 4, dimensions: 2, hasConfidence: false)
            s.group = q.group
            for f in 0..<q.frameCount {
                s.appendFrame((0..<4).map { j in PosePoint(x: 320 + 100 * q.coordinates[(f * 4 + j) * 3], y: 400 - 100 * q.coordinates[(f * 4 + j) * 3 + 1]) })
            }
            return s
        }
        return Dataset(name: "toy-2d", skeleton: sk, sequences: sequences, frameRate: d.frameRate)
    }

    /// 2D bodies cannot be turned to face one way: unless the cameras stay where they were, the
    /// recipe imitates other cameras in training (`viewChange`), small data on top of the
    /// standard augmentation, any data with `views other`, and the pyramid's linear head fits
    /// `viewCopies` copies of each window so changed; 3D data never gets it.
    func testTwoDimensionalBodiesAreSeenFromOtherCamerasUnlessTheViewsStay() throws {
        XCTAssertEqual(Recipe.viewChange.probability, 1)
        XCTAssertEqual(Recipe.viewChange.degrees, 90)
        XCTAssertEqual(Recipe.viewCopies, 4)
        try assertCamerasImitated(
            Self.flat, on: { $0 == .other || ($0 == .auto && Recipe.viewChangeByDefault) }, probability: \.viewProbability, degrees: \.maxViewDegrees,
            expected: 90, seen: { "views \($0.rawValue) and a 2D skeleton, which cannot be turned to face one way: cameras moved up to ±90°" }, part: "cameras moved ±90°",
            check: { c, what in XCTAssertFalse(c.alignFacing, what) })
        // An augmentation the user gave is kept, and without a view change the head fits no copies.
        let d = Self.flat(perClass: 9)
        var given = TrainingConfig()
        given.augmentation.jitterProbability = 1
        given.augmentation.jitterStandardDeviation = 0.01
        let (kept, _) = Recipe.choose(given, explicit: ["augmentation"], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(kept.augmentation, given.augmentation)
        XCTAssertEqual(kept.linearHeadCopies, 0)
        // A 3D skeleton is turned instead.
        let solid = Self.dataset(perClass: 9)
        var other = TrainingConfig()
        other.views = .other
        let (turned, _) = Recipe.choose(other, explicit: ["views"], profile: DatasetProfile(solid, indices: Array(solid.sequences.indices)))
        XCTAssertTrue(turned.alignFacing)
        XCTAssertEqual(turned.augmentation.viewProbability, 0)
        XCTAssertEqual(turned.augmentation.maxTiltDegrees, 30, "and tilted")
    }

    /// `augmentation` with the recipe's camera tilt of 3D windows.
    static func tilted(_ augmentation: AugmentationConfig) -> AugmentationConfig {
        var a = augmentation
        (a.tiltProbability, a.maxTiltDegrees) = (Recipe.cameraTilt.probability, Recipe.cameraTilt.degrees)
        return a
    }

    /// 3D bodies lean when the camera stands higher or lower: unless the cameras stay where they
    /// were, every 3D window is tilted in training (`cameraTilt`), small data on top of the
    /// standard augmentation, large data alone, and the pyramid's head fits `viewCopies` copies;
    /// 2D data never gets it.
    func testThreeDimensionalBodiesAreTiltedUnlessTheViewsStay() throws {
        XCTAssertEqual(Recipe.cameraTilt.probability, 1)
        XCTAssertEqual(Recipe.cameraTilt.degrees, 30)
        try assertCamerasImitated(
            { Self.dataset(perClass: $0) }, on: { $0 != .same }, probability: \.tiltProbability, degrees: \.maxTiltDegrees, expected: 30,
            seen: { "views \($0.rawValue): cameras tilted up to ±30°" }, part: "cameras tilted ±30°",
            check: { c, what in XCTAssertEqual(c.alignFacing, !what.hasSuffix("same"), what) })
        let (flat, _) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(Self.flat(perClass: 9), indices: Array(0..<27)))
        XCTAssertEqual(flat.augmentation.tiltProbability, 0, "2D: no tilt")
    }

    /// For small (9 a class) and large (70) data of `data` and every `views`: where `on(views)`,
    /// the recipe's augmentation is the standard one (small) or none (large) plus the camera change
    /// (`probability` 1, `degrees` `expected`), the pyramid's head fits 4 copies, and the size line
    /// says so (`seen`, and `part` in what it set); elsewhere neither. `check` adds a test's own.
    func assertCamerasImitated(
        _ data: (Int) -> Dataset, on: (TrainingConfig.Views) -> Bool, probability: WritableKeyPath<AugmentationConfig, Double>,
        degrees: WritableKeyPath<AugmentationConfig, Double>, expected: Double, seen: (TrainingConfig.Views) -> String, part: String,
        check: (TrainingConfig, String) -> Void
    ) throws {
        for perClass in [9, 70] {
            let d = data(perClass)
            let p = DatasetProfile(d, indices: Array(d.sequences.indices))
            for views in TrainingConfig.Views.allCases {
                var base = TrainingConfig()
                base.views = views
                let (c, choices) = Recipe.choose(base, explicit: ["views"], profile: p)
                let on = on(views), what = "\(perClass) a class, views \(views)"
                check(c, what)
                XCTAssertEqual(c.augmentation[keyPath: probability], on ? 1 : 0, what)
                XCTAssertEqual(c.augmentation[keyPath: degrees], on ? expected : 0, what)
                XCTAssertEqual(c.linearHeadCopies, on ? 4 : 0, what)
                var rest = c.augmentation
                (rest[keyPath: probability], rest[keyPath: degrees]) = (0, 0)
                XCTAssertEqual(rest, perClass == 9 ? Recipe.standardAugmentation : AugmentationConfig(), what)
                let size = try XCTUnwrap(choices.first { $0.topic == "size" }, what)
                XCTAssertEqual(size.seen.contains(seen(views)), on, size.seen)
                XCTAssertEqual(size.seen.contains("the pyramid's linear head fits 4 copies of each window so changed too (fewer beyond 1,250 rows)"), on, size.seen)
                XCTAssertEqual(size.set.contains("linearHeadCopies 4"), on, size.set)
                if on {
                    let name = perClass == 9 ? "augmentation standard and other views (rotation ±15°, " : "augmentation \(part)"
                    XCTAssertTrue(size.set.contains(name), size.set)
                    XCTAssertTrue(size.set.contains(part), size.set)
                }
            }
        }
    }

    /// Laterality: per sequence (L − R)/(L + R) of the left and right joints' movement; its
    /// consistency within classes says whether a mirror image would change the class.
    func testLateralityMeasuresWhichSideEachClassMoves() {
        var d = Self.dataset(perClass: 4)
        // Class 0 moves its left shoulder in every sequence, class 1 its right one, class 2 the left
        // shoulder in half the sequences and the right one in the other half.
        for i in d.sequences.indices {
            let c = i / 4
            let side = c == 0 ? 2 : c == 1 ? 3 : (i % 2 == 0 ? 2 : 3)
            var q = d.sequences[i]
            for f in 0..<q.frameCount { q.coordinates[(f * 4 + side) * 3 + 1] += Float(f % 2) * 0.1 }
            d.sequences[i] = q
        }
        let l = DatasetProfile(d, indices: Array(d.sequences.indices)).laterality!
        assertClose(l.asymmetry, 1, absolute: 1e-9, "only one side moves in every sequence")
        assertClose(l.consistency, 8.0 / 12, absolute: 1e-9, "classes 0 and 1 consistent (4 + 4), class 2 cancels (0), of 12")

        // Below `consistencyToKeepSides` the small-data augmentation flips; with every class on
        // its own side it does not, and a "no flips" candidate or a user's augmentation is kept.
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(d, indices: Array(d.sequences.indices)))
        XCTAssertEqual(c.augmentation.flipProbability, 0.5)
        XCTAssertTrue(choices.contains { $0.seen.contains("consistency within classes 0.67 (< 0.95: either side, flips)") }, "\(choices)")
        XCTAssertTrue(Tuning.changes(for: Self.stick, base: c).contains { $0.name == "no flips" })
        var lateral = d
        for i in lateral.sequences.indices where i / 4 == 2 {
            lateral.sequences[i] = d.sequences[8]  // class 2 moves its left shoulder every time
            lateral.sequences[i].label = "class2"
        }
        let (k, kc) = Recipe.choose(TrainingConfig(), explicit: [], profile: DatasetProfile(lateral, indices: Array(lateral.sequences.indices)))
        XCTAssertEqual(k.augmentation, Self.tilted(Recipe.standardAugmentation), "consistency 1: a mirror image changes the class")
        XCTAssertTrue(kc.contains { $0.seen.contains("(≥ 0.95: a mirror image changes the class, no flips)") }, "\(kc)")
    }
}
