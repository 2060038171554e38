import ActionRuntime
@testable import ActionTrain
import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// `TrainingConfig`'s decoding (every key optional, defaults for the missing ones: old run
/// folders resume) and the keys of the relational blocks and the temporal pyramid.
final class TrainingConfigTests: XCTestCase {
    /// A config whose every key differs from the default.
    static var changed: TrainingConfig {
        var c = TrainingConfig()
        c.recipe = .none
        c.architecture = .stgcn
        c.hidden = [7]
        c.widths = [9, 5]
        c.kernel = 3
        c.graph = [["a", "b"]]
        c.mirrorPairs = [["a", "c"]]
        c.pairs = [["a", "c"]]
        c.pyramid = [1, 2]
        c.dilationBase = 3
        c.linearHead = .train
        c.views = .same
        c.memberAverage = .probabilities
        c.linearPenalty = 0.5
        c.linearHeadCopies = 3
        c.calibration = .none
        c.calibrationFolds = 5
        c.switchEvidence = 0.8
        c.residual = false
        c.activation = .gelu
        c.normalization = .none
        c.dropout = 0.3
        c.streams = [[.coordinates]]
        c.members = [.init(architecture: .ftp, channels: [.distances])]
        c.ftpCoefficients = 3
        c.fillGaps = true
        c.testTimeFlip = true
        c.ensemble = 2
        c.windowFrames = 30
        c.windowStride = 4
        c.windowMode = .fit
        c.frameRate = 25
        c.channels = [.relativePositions, .fastMotion]
        c.windowPadding = .edge
        c.useEvents = true
        c.centring = .frame
        c.scaling = .fixed
        c.scaleDivisor = 2
        c.axisDivisors = [1, 2]
        c.alignFacing = true
        c.verticalAxis = 2
        c.augmentation.flipProbability = 0.5
        c.validationFraction = 0.3
        c.epochs = 9
        c.batchSize = 8
        c.accumulate = 2
        c.optimizer = .sgd
        c.learningRate = 0.1
        c.momentum = 0.9
        c.nesterov = true
        c.beta1 = 0.8
        c.beta2 = 0.99
        c.epsilon = 1e-6
        c.weightDecay = 0.01
        c.gradientClipNorm = 1
        c.schedule = .cosine
        c.warmupEpochs = 1
        c.stepEpochs = 3
        c.gamma = 0.5
        c.minLearningRate = 0.01
        c.averageEpochs = 2
        c.labelSmoothing = 0.1
        c.classWeights = .balanced
        c.monitor = .validationLoss
        c.patience = 4
        c.minDelta = 0.01
        c.seed = 11
        c.threads = 1
        return c
    }

    /// Every key is read: a config whose every field differs from the default decodes back to
    /// itself (a key missing from `init(from:)` would come back as its default). The test's
    /// config must change every field: it fails when a new key is not changed here.
    func testEveryKeyIsDecoded() throws {
        let c = Self.changed, d = TrainingConfig()
        for (a, b) in zip(Mirror(reflecting: c).children, Mirror(reflecting: d).children) {
            XCTAssertNotEqual("\(a.value)", "\(b.value)", "TrainingConfigTests.changed leaves '\(a.label ?? "?")' at its default")
        }
        XCTAssertEqual(try JSONDecoder().decode(TrainingConfig.self, from: JSONEncoder().encode(c)), c)
    }

    /// A config saved before a key existed decodes with that key's default, whichever key it is;
    /// a key of the wrong type is still an error naming it.
    func testMissingKeysTakeTheirDefaults() throws {
        let full = try XCTUnwrap(try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.changed)) as? [String: Any])
        for key in full.keys {
            var json = full
            json[key] = nil
            let c = try JSONDecoder().decode(TrainingConfig.self, from: JSONSerialization.data(withJSONObject: json))
            let defaults = Mirror(reflecting: TrainingConfig()).children.first { $0.label == key }
            let decoded = Mirror(reflecting: c).children.first { $0.label == key }
            XCTAssertEqual("\(decoded?.value ?? "missing")", "\(defaults?.value ?? "missing")", key)
        }
        XCTAssertEqual(try JSONDecoder().decode(TrainingConfig.self, from: Data("{}".utf8)), TrainingConfig())
        XCTAssertThrowsError(try JSONDecoder().decode(TrainingConfig.self, from: Data(#"{"pyramid": "1,2"}"#.utf8))) { e in
            XCTAssertTrue("\(e)".contains("pyramid"), "\(e)")
        }
    }

    static let skeleton = Skeleton(
        name: "three", joints: ["a", "b", "c"], dimensions: 2, units: .pixels, bones: [["a", "b"], ["b", "c"]], centre: ["a"],
        torsoUpper: ["b"], torsoLower: ["a"])

    func testPairsGoIntoTheInputOnlyWhenGivenAndAreChecked() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.windowFrames = 4
        c.channels = [.coordinates, .distances]
        XCTAssertNil(try c.inputSpec(for: Self.skeleton, imageSize: nil).pairs)
        XCTAssertEqual(try c.inputSpec(for: Self.skeleton, imageSize: nil).channelsPerFrame, 6 + 3)
        c.pairs = [["c", "a"]]
        let input = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(input.pairs, [["c", "a"]])
        XCTAssertEqual(input.channelsPerFrame, 6 + 1)
        c.pairs = [["c", "x"]]
        XCTAssertThrowsError(try c.inputSpec(for: Self.skeleton, imageSize: nil)) { e in
            guard case TrainingError.invalidConfig("pairs", let why) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(why.contains("names joint 'x'"), why)
        }
        c.channels = [.coordinates]
        c.pairs = [["c", "a"]]
        XCTAssertThrowsError(try c.validate()) { e in
            guard case TrainingError.invalidConfig("pairs", let why) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(why.contains("add relativePositions or distances to channels"), why)
        }
        c.streams = [[.coordinates], [.relativePositions]]
        XCTAssertNoThrow(try c.validate())
    }

    /// The TCN and ST-GCN pool over a temporal pyramid when given levels; stgcn reads fastMotion
    /// per joint and leaves the pair blocks out.
    func testPyramidHeadsAndPerJointChannels() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.windowFrames = 8
        c.widths = [4]
        c.pyramid = [1, 2, 4]
        c.channels = [.coordinates, .relativePositions, .fastMotion]
        let input = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        let tcn = try c.layers(for: input, classes: 3)
        XCTAssertEqual(tcn.suffix(2), [.temporalPyramidPool(levels: [1, 2, 4]), .linear(inputs: 4 * 7, outputs: 3)])
        XCTAssertEqual(try Network(layers: tcn, input: Shape(time: 8, channels: input.channelsPerFrame)).outputShape, Shape(time: 1, channels: 3))
        c.architecture = .stgcn
        let stgcn = try c.layers(for: input, classes: 3)
        // coordinates 0..<6, relativePositions 6..<12 (left out), fastMotion 12..<18.
        XCTAssertEqual(stgcn.first, .selectChannels([0, 1, 12, 13, 2, 3, 14, 15, 4, 5, 16, 17]))
        XCTAssertEqual(stgcn.suffix(2), [.temporalPyramidPool(levels: [1, 2, 4]), .linear(inputs: 3 * 4 * 7, outputs: 3)])
        c.channels = [.relativePositions, .distances]
        XCTAssertThrowsError(try c.inputSpec(for: Self.skeleton, imageSize: nil)) { e in
            guard case TrainingError.invalidConfig("channels", let why) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(why.contains("add coordinates, confidence, mask, motion, fastMotion"), why)
        }
        c.pyramid = [1, 9]
        XCTAssertThrowsError(try c.validate()) { e in
            guard case TrainingError.invalidConfig("pyramid", _) = e else { return XCTFail("\(e)") }
        }
    }

    // MARK: ftp, members, fillGaps

    /// `ftp` is the pyramid (levels 1, 2, 4 or `pyramid`), an uncalibrated standardize and a linear layer.
    func testFTPArchitecture() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.windowFrames = 8
        c.architecture = .ftp
        c.channels = [.relativePositions]
        let input = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(
            try c.layers(for: input, classes: 3),
            [.fourierPyramid(levels: [1, 2, 4], coefficients: 4), .standardize(), .linear(inputs: 6 * 7 * 4, outputs: 3)])
        c.pyramid = [1, 2]
        c.ftpCoefficients = 2
        XCTAssertEqual(
            try c.layers(for: input, classes: 3),
            [.fourierPyramid(levels: [1, 2], coefficients: 2), .standardize(), .linear(inputs: 6 * 3 * 2, outputs: 3)])
        c.ftpCoefficients = 0
        assertThrows(["ftpCoefficients", "must be in [1, 64], got 0"]) { try c.validate() }
        c.ftpCoefficients = 4
        c.pyramid = []
        c.windowFrames = 3
        assertThrows(["windowFrames", "at least 4 for the ftp architecture"]) { try c.validate() }
        c.pyramid = [1, 3]
        XCTAssertNoThrow(try c.validate())
    }

    /// Members: the input holds the union of their blocks; each is selectChannels of its blocks
    /// and its architecture (a stgcn member's joint gather picks from its own blocks); one
    /// member alone is its layers over the input.
    func testMembersOfMixedArchitectures() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.windowFrames = 8
        c.widths = [4]
        c.dropout = 0
        c.channels = [.bones]  // not used with members
        c.members = [.init(architecture: .ftp, channels: [.relativePositions]), .init(architecture: .tcn, channels: [.mask, .relativePositions])]
        let input = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(input.channels, [.relativePositions, .mask])
        let specs = try c.layers(for: input, classes: 3)
        let members = try XCTUnwrap(specs.first?.kind as? any MemberCombinationKind).members
        XCTAssertEqual(specs.count, 1)
        XCTAssertEqual(members[0], [.selectChannels(Array(0..<6)), .fourierPyramid(levels: [1, 2, 4], coefficients: 4), .standardize(), .linear(inputs: 168, outputs: 3)])
        var tcn = c
        tcn.members = []
        tcn.architecture = .tcn
        XCTAssertEqual(members[1], [.selectChannels([6, 7, 8, 0, 1, 2, 3, 4, 5])] + (try tcn.layers(input: Shape(time: 8, channels: 9), classes: 3)))
        XCTAssertEqual(c.modelName, "members ftp:relativePositions, tcn:mask+relativePositions")

        c.members = [.init(architecture: .ftp, channels: [.relativePositions]), .init(architecture: .stgcn, channels: [.mask, .coordinates])]
        let mixed = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(mixed.channels, [.relativePositions, .mask, .coordinates])
        let stgcn = try XCTUnwrap(try c.layers(for: mixed, classes: 3).first?.kind as? any MemberCombinationKind).members[1]
        // relativePositions 0..<6, mask 6..<9, coordinates 9..<15: per joint its mask, then x, y.
        XCTAssertEqual(stgcn.first, .selectChannels([6, 9, 10, 7, 11, 12, 8, 13, 14]))
        c.members = [.init(architecture: .ftp, channels: [.relativePositions])]
        let alone = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(alone.channels, [.relativePositions])
        XCTAssertEqual(try c.layers(for: alone, classes: 3), [.fourierPyramid(levels: [1, 2, 4], coefficients: 4), .standardize(), .linear(inputs: 168, outputs: 3)])
    }

    /// What members cannot be: with streams, empty, a block twice, a stgcn member without
    /// per-joint blocks; pairs need a member that reads them.
    func testMembersValidation() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.windowFrames = 8
        c.members = [.init(architecture: .ftp, channels: [.relativePositions])]
        c.streams = [[.coordinates]]
        assertThrows(["members", "and streams cannot be given together"]) { try c.validate() }
        c.streams = []
        c.members.append(.init(architecture: .tcn, channels: []))
        assertThrows(["members", "member 2 (tcn:) needs at least one channel block"]) { try c.validate() }
        c.members[1].channels = [.mask, .mask]
        assertThrows(["members", "member 2 (tcn:mask+mask) lists a channel block twice"]) { try c.validate() }
        c.members[1] = .init(architecture: .stgcn, channels: [.distances])
        XCTAssertNoThrow(try c.validate())
        assertThrows(["members", "member 2 (stgcn:distances)", "gives architecture stgcn no per-joint values"]) {
            _ = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        }
        c.members = [.init(architecture: .tcn, channels: [.coordinates])]
        c.pairs = [["a", "b"]]
        assertThrows(["pairs", "no channel block reads them: add relativePositions or distances to members"]) { try c.validate() }
        // A member's keys are exactly architecture and channels.
        XCTAssertThrowsError(
            try JSONDecoder().decode(TrainingConfig.self, from: Data(#"{"members": [{"architecture": "ftp", "channels": ["mask"], "widths": [3]}]}"#.utf8))
        ) { e in XCTAssertTrue("\(e)".contains("unknown key 'widths'"), "\(e)") }
        XCTAssertThrowsError(try JSONDecoder().decode(TrainingConfig.self, from: Data(#"{"members": [{"channels": ["mask"]}]}"#.utf8)))
    }

    /// fillGaps puts the step first, before the centring and scaling.
    func testFillGapsIsTheFirstStep() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.fillGaps = true
        let input = try c.inputSpec(for: Self.skeleton, imageSize: nil)
        XCTAssertEqual(input.steps.first, .fillGaps)
        XCTAssertEqual(Array(input.steps.dropFirst()), try TrainingConfig().inputSpec(for: Self.skeleton, imageSize: nil).steps)
    }
}
