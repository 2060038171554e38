@testable import ActionRuntime
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// Every registered channel block (`ChannelBlocks.all`) is supported everywhere: docs/format.md's
/// table (5.7), both Python readers (their features and probabilities), the raw-poses ONNX
/// export (onnxruntime), the mirror image and live streams. A block added to the registry and
/// forgotten in one of these fails here; so does a block in format.md's table that the registry
/// lacks. Each input holds every registered block, on a 2D and a 3D skeleton, with every pair
/// (`pairs` absent) and with given pairs across two bodies, and with the `fillGaps` step.
final class ChannelBlocksTests: XCTestCase {
    /// A body with bones (one reversed in its mirror) and mirror pairs.
    static let body2D = Skeleton(
        name: "blocks-2d", joints: ["root", "neck", "lHand", "rHand", "head"], dimensions: 2, units: .pixels,
        mirrorPairs: [["lHand", "rHand"]], bones: [["root", "neck"], ["neck", "lHand"], ["rHand", "neck"], ["neck", "head"]],
        centre: ["root"], torsoUpper: ["neck"], torsoLower: ["root"])
    static let body3D = Skeleton(
        name: "blocks-3d", joints: ["root", "neck", "lHand", "rHand"], dimensions: 3, units: .metres,
        mirrorPairs: [["lHand", "rHand"]], bones: [["root", "neck"], ["neck", "lHand"], ["neck", "rHand"]], centre: ["root"],
        torsoUpper: ["neck"], torsoLower: ["root"])

    /// Every registered block over `skeleton`, gaps filled first when asked, centred and scaled,
    /// `frames` frames.
    static func input(_ skeleton: Skeleton, pairs: [[String]]? = nil, frames: Int = 7, fillGaps: Bool = false) -> InputSpec {
        var input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: frames),
            steps: (fillGaps ? [.fillGaps] : [])
                + [.centre(joints: skeleton.centre, perFrame: false), .scaleByTorso(upper: skeleton.torsoUpper, lower: skeleton.torsoLower)],
            channels: ChannelBlock.allCases)
        input.pairs = pairs
        return input
    }

    /// Two bodies: the pairs within body 1, and between the bodies' hands (one against the
    /// joint order), closed under the mirror.
    static let twoBodyPairs = [
        ["p1.root", "p1.lHand"], ["p1.root", "p1.rHand"], ["p1.lHand", "p1.rHand"], ["p2.rHand", "p1.lHand"], ["p1.rHand", "p2.lHand"],
    ]

    /// The inputs every test runs: 2D and 3D with every pair, two 2D bodies with given pairs,
    /// and 2D and 3D with their gaps filled (every block reads the filled window, mask and
    /// confidence what was seen).
    static let inputs = [
        input(body2D), input(body3D), input(body2D.bodies(2), pairs: twoBodyPairs), input(body2D, fillGaps: true),
        input(body3D, fillGaps: true),
    ]

    /// A model over `input`: flatten and a linear layer, so every feature moves the logits.
    static func model(_ input: InputSpec, seed: UInt64 = 3) throws -> ActionModel {
        let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
        let network = try ModelFixtures.network([.flatten, .linear(inputs: shape.count, outputs: 3)], input: shape, seed: seed)
        return try ActionModel(bytes: ModelFile.encode(classes: ["a", "b", "c"], input: input, network: network, provenance: .init(seed: seed)))
    }

    static func windows(_ input: InputSpec, count: Int, seed: UInt64) -> [PoseSequence] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { ModelFixtures.randomWindow(input.skeleton, frames: input.window.frames, confidence: $0 % 2 == 0, g: &g) }
    }

    func text(_ path: String) throws -> String {
        try String(contentsOf: ModelFixtures.repoRoot.appendingPathComponent(path), encoding: .utf8)
    }

    func testRegistryNamesAreDistinctAndTheConstantsAreRegistered() {
        let names = ChannelBlocks.all.map { $0.name }
        XCTAssertEqual(Set(names).count, names.count, "\(names)")
        XCTAssertEqual(ChannelBlock.allCases.map(\.rawValue), names)
        for name in names { XCTAssertEqual(ChannelBlock(rawValue: name)?.rawValue, name) }
        XCTAssertNil(ChannelBlock(rawValue: "motion2"))
        let constants: [ChannelBlock] = [.coordinates, .confidence, .mask, .motion, .bones, .relativePositions, .distances, .fastMotion]
        XCTAssertEqual(Set(constants.map(\.rawValue)), Set(names))
    }

    /// format.md section 5.7's table lists exactly the registered blocks; both Python readers name each.
    func testEveryBlockIsDocumentedAndKnownToBothPythonReaders() throws {
        let format = try text("docs/format.md")
        let blocks = try XCTUnwrap(format.range(of: "### 5.7 Channel blocks")), numerics = try XCTUnwrap(format.range(of: "### 5.8"))
        var tableBlocks = Set<String>()
        for line in format[blocks.upperBound..<numerics.lowerBound].split(separator: "\n") where line.hasPrefix("| `\"") {
            tableBlocks.insert(String(line.dropFirst(4).prefix(while: { $0 != "\"" })))
        }
        XCTAssertEqual(tableBlocks, Set(ChannelBlocks.all.map { $0.name }), "docs/format.md section 5.7's table against ChannelBlocks.all")
        for path in ["tools/python/read_model.py", "tools/python/spec_reader.py"] {
            let source = try text(path)
            for block in ChannelBlocks.all {
                XCTAssertTrue(source.contains("\"\(block.name)\""), "\(path) does not know \(block.name)")
            }
        }
    }

    /// Writing and reading the header through both decoders keeps the blocks and the pairs.
    func testEveryBlockAndThePairsRoundTripThroughTheModelFile() throws {
        for input in Self.inputs {
            let model = try Self.model(input)
            let bytes = try ModelFile.encode(classes: model.classes, input: input, network: model.network, provenance: .init(seed: 3))
            let h = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
            try bytes.withUnsafeBytes { raw in
                let header = UnsafeRawBufferPointer(rebasing: raw[64..<(64 + h)])
                let fast = try XCTUnwrap(HeaderJSON.decode(header), "the header fast path declines \(input.skeleton.name)")
                XCTAssertEqual(fast, try ModelFile.decodeHeaderWithFoundation(header))
                XCTAssertEqual(fast.input, input)
                XCTAssertEqual(fast.input.pairs, input.pairs)
            }
            // `pairs` is written only when set.
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self).contains("\"pairs\""), input.pairs != nil)
        }
    }

    /// read_model.py gives each block's features (compared block by block) and the logits;
    /// spec_reader.py gives `predict`'s probabilities on whole sequences.
    func testPythonReadersReproduceEveryBlock() throws {
        guard ModelFixtures.python(has: "numpy") else { throw missingPrerequisite("python3 with numpy", fix: "pip install numpy") }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (i, input) in Self.inputs.enumerated() {
            let model = try Self.model(input)
            let path = dir.appendingPathComponent("m\(i).atm")
            try Data(ModelFile.encode(classes: model.classes, input: input, network: model.network, provenance: .init(seed: 3))).write(to: path)
            let windows = Self.windows(input, count: 4, seed: 10 + UInt64(i))
            let wURL = dir.appendingPathComponent("w\(i).json")
            try JSONSerialization.data(withJSONObject: ["windows": ModelFixtures.windowsJSON(windows)]).write(to: wURL)
            let script = ModelFixtures.repoRoot.appendingPathComponent("tools/python/read_model.py").path
            let r = try ONNXParity.run(["python3", script, path.path, "--windows", wURL.path])
            XCTAssertEqual(r.status, 0, r.stderr)
            let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: [[Double]]])
            let features = try XCTUnwrap(o["features"]), logits = try XCTUnwrap(o["logits"])
            XCTAssertEqual(features.count, windows.count)
            let C = input.channelsPerFrame
            for (w, window) in windows.enumerated() where w < features.count {
                let swift = try model.features(window: window), python = features[w].map(Float.init)
                for (block, offset, width) in input.channelLayout {
                    let at = (0..<input.window.frames).flatMap { f in (f * C + offset)..<(f * C + offset + width) }
                    assertClose(at.map { python[$0] }, at.map { swift[$0] }, absolute: 1e-5, relative: 1e-5, "read_model.py, \(block), \(input.skeleton.name)")
                }
                assertClose(logits[w].map(Float.init), try model.logits(features: swift, count: 1), absolute: 1e-5, relative: 0, "read_model.py logits")
            }
            try assertSpecReaderPredicts(model, path: path.path, windows: windows, dir: dir)
        }
    }

    /// spec_reader.py on `windows` as whole sequences (frames as recorded, stride 2) against
    /// `ActionModel.predict`.
    func assertSpecReaderPredicts(_ model: ActionModel, path: String, windows: [PoseSequence], dir: URL) throws {
        let D = model.input.skeleton.dimensions, J = model.input.skeleton.jointCount
        var sequences: [[String: Any]] = []
        for (s, w) in windows.enumerated() {
            let frames = (0..<w.frameCount).map { f in
                (0..<J).map { j -> Any in
                    let i = f * J + j
                    guard w.present[i] != 0 else { return NSNull() }
                    return (0..<D).map { Double(w.coordinates[i * D + $0]) } + (w.confidence.map { [Double($0[i])] } ?? [])
                }
            }
            sequences.append(["id": "s\(s)", "timestamps": NSNull(), "frames": frames])
        }
        let poses = dir.appendingPathComponent("poses.json")
        try JSONSerialization.data(withJSONObject: ["frameRate": NSNull(), "sequences": sequences]).write(to: poses)
        let script = ModelFixtures.repoRoot.appendingPathComponent("tools/python/spec_reader.py").path
        let r = try ONNXParity.run(["python3", script, path, poses.path, "--stride", "2"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let rows = try r.stdout.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let swift = try windows.flatMap { try model.predict(sequence: $0, stride: 2, sourceFrameRate: nil) }
        XCTAssertEqual(rows.count, swift.count)
        for (row, p) in zip(rows, swift) {
            let q = try XCTUnwrap(row["probabilities"] as? [Double]).map(Float.init)
            assertClose(q, p.probabilities, absolute: 1e-5, relative: 0, "spec_reader.py, \(model.input.skeleton.name)")
        }
    }

    /// The raw-poses export computes every block in the graph: onnxruntime's logits from raw
    /// windows are the Swift runtime's.
    func testOnnxruntimeReproducesEveryBlockFromRawPoses() throws {
        guard ONNXParity.isAvailable() else {
            throw missingPrerequisite("python3 with numpy and onnxruntime", fix: "pip install numpy onnxruntime")
        }
        let cases = try Self.inputs.enumerated().map { i, input in
            let model = try Self.model(input)
            let (header, network) = try ModelFile.load(
                ModelFile.encode(classes: model.classes, input: input, network: model.network, provenance: .init()))
            return try ONNXParity.rawCase(
                onnx: ONNXExport.export(header: header, network: network, rawPoses: true), header: header, network: network, windows: 16,
                seed: UInt64(i))
        }
        let results = try XCTUnwrap(try ONNXParity.compare(cases, windows: 16))
        for (input, r) in zip(Self.inputs, results) { XCTAssertLessThan(r.maxAbsDifference, 1e-4, input.skeleton.name) }
    }

    /// Each block's mirror image, alone and all together: its channel map applied to a window's
    /// features gives the features of the mirrored window (left and right swapped, x reflected).
    func testMirrorImageOfEveryBlockIsTheMirroredWindowsFeatures() throws {
        for input in Self.inputs {
            let inputs =
                [input]
                + input.channels.map { b in
                    var one = input
                    one.channels = [b]
                    return one
                }
            for spec in inputs {
                let map = try spec.mirrorImage()
                XCTAssertEqual(map.channels.count, spec.channelsPerFrame)
                let extractor = try FeatureExtractor(spec)
                let C = spec.channelsPerFrame
                for w in Self.windows(spec, count: 3, seed: 5) {
                    let x = extractor.extract(w), xm = extractor.extract(Self.mirrored(w, spec.skeleton, about: 140))
                    let mapped = (0..<(x.count)).map { i in map.signs[i % C] * x[i / C * C + map.channels[i % C]] }
                    assertClose(mapped, xm, absolute: 1e-5, relative: 1e-5, "\(spec.channels) on \(spec.skeleton.name)")
                }
            }
        }
    }

    /// Test-time flip averaging over every block: a `flipAverage` model gives a window and its
    /// mirror image the same probabilities (its map is an involution that swaps them).
    func testFlipAveragedModelsGiveAWindowAndItsMirrorTheSameProbabilities() throws {
        for input in Self.inputs {
            let shape = Shape(time: input.window.frames, channels: input.channelsPerFrame)
            let mirror = try input.mirrorImage()
            let layers: [LayerSpec] = [
                .flipAverage(channels: mirror.channels, signs: mirror.signs, body: [.flatten, .linear(inputs: shape.count, outputs: 3)])
            ]
            let network = try ModelFixtures.network(layers, input: shape, seed: 8)
            let model = try ActionModel(bytes: ModelFile.encode(classes: ["a", "b", "c"], input: input, network: network, provenance: .init()))
            for w in Self.windows(input, count: 3, seed: 9) {
                let p = try model.probabilities(window: w), q = try model.probabilities(window: Self.mirrored(w, input.skeleton, about: 90))
                assertClose(q, p, absolute: 1e-5, relative: 1e-5, input.skeleton.name)
                XCTAssertGreaterThan(p.max()! - p.min()!, 1e-3, "the model separates the classes")
            }
        }
    }

    /// Pairs whose mirror image is not among them give no mirror image, naming the pair.
    func testPairsWithoutTheirMirrorHaveNoMirrorImage() {
        var input = Self.input(Self.body2D, pairs: [["root", "lHand"], ["neck", "head"]])
        for block in ChannelBlocks.all where block.readsPairs {
            input.channels = [ChannelBlock(block)]
            assertThrows(["the mirror image of pair [root, lHand] is [root, rHand], which is not among the input's pairs"]) {
                _ = try input.mirrorImage()
            }
        }
    }

    /// `window` with left and right swapped and x reflected about `axis` (absent joints stay absent).
    static func mirrored(_ w: PoseSequence, _ s: Skeleton, about axis: Float) -> PoseSequence {
        var m = w
        let sigma = s.mirrorPermutation, J = s.jointCount, D = s.dimensions
        for f in 0..<w.frameCount {
            for j in 0..<J {
                let src = f * J + sigma[j], dst = f * J + j
                m.present[dst] = w.present[src]
                if w.confidence != nil { m.confidence![dst] = w.confidence![src] }
                for d in 0..<D { m.coordinates[dst * D + d] = w.coordinates[src * D + d] }
                if w.present[src] != 0 { m.coordinates[dst * D] = 2 * axis - w.coordinates[src * D] }
            }
        }
        return m
    }

    /// A live stream computes every block as offline extraction does: after each window, the
    /// session's network input is the bits of the same window cut offline.
    func testStreamSessionGivesTheOfflineFeaturesOfEveryBlock() throws {
        for input in Self.inputs {
            var input = input
            input.window.frames = 9
            let model = try Self.model(input)
            var g = SeededGenerator(seed: 21)
            let recording = ModelFixtures.randomWindow(input.skeleton, frames: 39, confidence: true, g: &g)  // windows start at 0, 3, ..., 30 = 39 − 9
            let session = try StreamSession(model: model, options: StreamOptions(stride: 3))
            var online: [[Float]] = []
            for f in 0..<recording.frameCount {
                var points: [String: PosePoint] = [:]
                for (j, name) in input.skeleton.joints.enumerated() where recording.present[f * recording.jointCount + j] != 0 {
                    let i = f * recording.jointCount + j, D = recording.dimensions
                    points[name] = PosePoint(
                        x: recording.coordinates[i * D], y: recording.coordinates[i * D + 1], z: D == 3 ? recording.coordinates[i * D + 2] : 0,
                        confidence: recording.confidence![i])
                }
                for _ in try session.push(points, time: Double(f) / 30) {
                    online.append(Array(UnsafeBufferPointer(start: session.context.window.pointer, count: model.valuesPerWindow)))
                }
            }
            let offline = try model.windows(of: recording, stride: 3, sourceFrameRate: nil).map { try model.features(window: $0.window) }
            XCTAssertEqual(online.count, offline.count)
            XCTAssertGreaterThan(online.count, 5)
            for (a, b) in zip(online, offline) { XCTAssertEqual(a.map(\.bitPattern), b.map(\.bitPattern), input.skeleton.name) }
        }
    }
}
