import ActionRuntime
@testable import ActionTrain
import Datasets
import PoseCore
import TestSupport
import XCTest

/// The joint graph of `stgcn`: its partitions, the bones inferred for a skeleton without
/// them, and the layers the architecture builds from them.
final class SkeletonGraphTests: XCTestCase {
    /// a - b - c - d, 2D, no centre joints.
    static let chain = Skeleton(
        name: "chain", joints: ["a", "b", "c", "d"], dimensions: 2, units: .unitless, bones: [["a", "b"], ["b", "c"], ["c", "d"]])

    /// The centre is the joint of least eccentricity (b and c tie; b has the lower index); each
    /// joint's neighbours split into nearer the centre (inward) and not (outward), row-normalised.
    func testPartitionsSplitNeighboursByTheirDistanceFromTheCentre() throws {
        let g = try SkeletonGraph(skeleton: Self.chain, edges: [])
        XCTAssertEqual(g.depth, [1, 0, 1, 2])
        let p = g.partitions
        XCTAssertEqual(p.count, 3)
        XCTAssertEqual(p[0], g.identity)
        XCTAssertEqual(p[1], [0, 1, 0, 0] + [0, 0, 0, 0] + [0, 1, 0, 0] + [0, 0, 1, 0])  // rows a, b, c, d
        XCTAssertEqual(p[2], [0, 0, 0, 0] + [0.5, 0, 0.5, 0] + [0, 0, 0, 1] + [0, 0, 0, 0])
        // A named centre joint wins, and `graph` replaces the bones.
        var centred = Self.chain
        centred.centre = ["d"]
        let star = try SkeletonGraph(skeleton: centred, edges: [["d", "a"], ["d", "b"], ["d", "c"], ["a", "d"]])
        XCTAssertEqual(star.edges, [[3, 0], [3, 1], [3, 2]], "the repeated pair is dropped")
        XCTAssertEqual(star.depth, [1, 1, 1, 0])
        XCTAssertEqual(star.partitions[1][0 * 4 + 3], 1)
        XCTAssertEqual(star.partitions[2][3 * 4 + 0], Float(1) / 3)
    }

    func testAGraphThatDoesNotFitTheSkeletonIsRefusedNamingTheKey() {
        var bare = Self.chain
        bare.bones = []
        for (edges, says) in [([[String]](), "names no bones"), ([["a", "x"]], "[\"a\", \"x\"]"), ([["b", "b"]], "to itself")] {
            XCTAssertThrowsError(try SkeletonGraph(skeleton: bare, edges: edges)) { e in
                guard case TrainingError.invalidConfig(let field, let reason) = e else { return XCTFail("\(e)") }
                XCTAssertEqual(field, "graph")
                XCTAssertTrue(reason.contains(says), reason)
            }
        }
    }

    /// An articulated figure whose segments keep their lengths while their angles change at
    /// random: the inferred tree is its segments, whatever the joints' order.
    func testTheInferredTreeIsTheRigidSegments() {
        let names = ["elbow", "tip", "shoulder", "hip", "wrist"]
        // Segments shoulder-elbow (0.3), elbow-wrist (0.25), wrist-tip (0.1), shoulder-hip (0.5).
        var g = SeededGenerator(seed: 7)
        var s = PoseSequence(id: "arm", label: "x", jointCount: 5, dimensions: 2, hasConfidence: false)
        for _ in 0..<400 {
            func angle() -> Float { g.nextUnitFloat() * 2 * .pi }
            let shoulder: (Float, Float) = (g.nextUnitFloat() * 3, 1 + g.nextUnitFloat())
            func step(_ p: (Float, Float), _ length: Float, _ a: Float) -> (Float, Float) { (p.0 + length * cos(a), p.1 + length * sin(a)) }
            let hip = step(shoulder, 0.5, -.pi / 2 + 0.2 * (angle() - .pi) / .pi)
            let elbow = step(shoulder, 0.3, angle()), wrist = step(elbow, 0.25, angle()), tip = step(wrist, 0.1, angle())
            s.appendFrame([elbow, tip, shoulder, hip, wrist].map { PosePoint(x: $0.0, y: $0.1) })
        }
        let sk = Skeleton(name: "arm", joints: names, dimensions: 2, units: .unitless)
        let edges = SkeletonGraph.inferred(Dataset(name: "arm", skeleton: sk, sequences: [s]), indices: [0])
        XCTAssertEqual(
            Set(edges.map { Set($0) }), [["shoulder", "elbow"], ["elbow", "wrist"], ["wrist", "tip"], ["shoulder", "hip"]])
        XCTAssertEqual(edges.first?.first, "elbow", "grown from joint 0")
    }

    /// `stgcn` reads the joint-indexed blocks joint by joint (bones left out), then blocks of a
    /// spatial graph convolution over three partitions and a temporal one per joint.
    func testStgcnLayersReadEachJointsValuesAndConvolveOverTheGraph() throws {
        var c = TrainingConfig()
        c.recipe = .none
        c.architecture = .stgcn
        c.widths = [4, 6]
        c.kernel = 3
        c.windowFrames = 8
        c.centring = .none
        c.scaling = InputSpec.Scaling.none
        c.channels = [.coordinates, .mask, .bones]
        let input = try c.inputSpec(for: Self.chain, imageSize: nil)
        let specs = try c.layers(for: input, classes: 5)
        // coordinates at 0..<8 (x, y per joint), mask at 8..<12, bones at 12..<18.
        XCTAssertEqual(specs.first, .selectChannels([0, 1, 8, 2, 3, 9, 4, 5, 10, 6, 7, 11]))
        let graph = try SkeletonGraph(skeleton: Self.chain, edges: [])
        guard case .some(let first) = specs.dropFirst().first?.kind as? ResidualKind else { return XCTFail("\(specs)") }
        XCTAssertEqual(first.body.first, .graphConv(joints: 4, inputs: 3, outputs: 4, kernel: 1, adjacency: graph.partitions))
        XCTAssertTrue(first.body.contains(.graphConv(joints: 4, inputs: 4, outputs: 4, kernel: 3, adjacency: [graph.identity])))
        XCTAssertEqual(first.shortcut, [.graphConv(joints: 4, inputs: 3, outputs: 4, kernel: 1, adjacency: [graph.identity])])
        XCTAssertEqual(specs.suffix(2), [.globalAveragePool, .linear(inputs: 4 * 6, outputs: 5)])
        let network = try Network(layers: specs, input: Shape(time: 8, channels: input.channelsPerFrame))
        XCTAssertEqual(network.outputShape, Shape(time: 1, channels: 5))

        c.channels = [.bones]
        XCTAssertThrowsError(try c.inputSpec(for: Self.chain, imageSize: nil)) { e in
            guard case TrainingError.invalidConfig("channels", _) = e else { return XCTFail("\(e)") }
        }
        c.channels = [.coordinates]
        c.streams = [[.coordinates]]
        XCTAssertThrowsError(try c.validate()) { e in
            guard case TrainingError.invalidConfig("streams", _) = e else { return XCTFail("\(e)") }
        }
    }

    /// A skeleton without bones: the recipe infers a tree, which becomes the skeleton's bones
    /// (the bones channel, the model's skeleton) and the graph of `stgcn`.
    func testTheRecipeGivesASkeletonWithoutBonesTheInferredTree() throws {
        var bare = RecipeTests.stick
        bare.bones = []
        let d = RecipeTests.dataset(bare, perClass: 9)
        let p = DatasetProfile(d, indices: Array(d.sequences.indices))
        XCTAssertEqual(p.inferredBones.count, 3)
        XCTAssertEqual(p.inferredBones, SkeletonGraph.inferred(d, indices: Array(d.sequences.indices)))
        let (c, choices) = Recipe.choose(TrainingConfig(), explicit: [], profile: p)
        XCTAssertEqual(c.graph, p.inferredBones)
        XCTAssertEqual(c.channels, [.coordinates, .mask, .bones])
        XCTAssertTrue(choices.contains { $0.topic == "channels" && $0.set.contains("graph 3 joint pairs") }, "\(choices)")
        XCTAssertEqual(try c.inputSpec(for: bare, imageSize: nil).skeleton.bones, p.inferredBones)
        // With bones, nothing is inferred; a graph the user gave is kept.
        XCTAssertEqual(DatasetProfile(RecipeTests.dataset(perClass: 9), indices: [0]).inferredBones, [])
        var mine = TrainingConfig()
        mine.graph = [["hip", "head"]]
        XCTAssertEqual(Recipe.choose(mine, explicit: ["graph"], profile: p).config.graph, [["hip", "head"]])
    }
}
