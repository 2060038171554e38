import ActionRuntime
import Foundation
import PoseCore
import TestSupport
import XCTest

/// docs/coreml.md's app-side events (`EventTracker`, shown after `<!-- app: EventTracker.swift
/// -->`) compiled with Sources/ActionRuntime/FrameEvents.swift alone, as an app would, and run
/// on a live stream's frames and windows: the runtime's events (`StreamSession` and
/// `EventStream`), to the bit.
final class AppEventsTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A vision-body-2d convnet of 12-frame windows at 30 fps with frame-level event numbers
    /// (format 1.5).
    func model() throws -> ActionModel {
        let skeleton = Skeleton.visionBody2D
        let input = InputSpec(
            skeleton: skeleton, window: WindowSpec(frames: 12, mode: .sliding, padding: .empty, frameRate: 30),
            steps: [.centre(joints: skeleton.joints.filter { $0.hasSuffix("root") }, perFrame: false)], channels: [.coordinates, .motion])
        let C = input.channelsPerFrame
        let network = try Network(
            layers: [.conv1d(inputs: C, outputs: 8, kernel: 3, stride: 1, dilation: 1, padding: 1), .relu, .globalAveragePool, .linear(inputs: 8, outputs: 3)],
            input: Shape(time: 12, channels: C))
        network.initialize(seed: 5)
        let frames = ModelHeader.Streaming.Frames(
            lookAhead: 0.5, stillBelow: 0.05, enter: [0.34, 0.34, 0.34], exit: [0.2, 0.2, 0.2], hold: [0.3, 0.4, 0.3], leadIn: [0.05, 0, 0],
            leadOut: [0, 0.1, 0], minimumDuration: [0.2, 0.2, 0.2], switchEvidence: 0.1)
        return try ActionModel(
            bytes: ModelFile.encode(
                classes: ["wave", "squat", "clap"], input: input, network: network, provenance: .init(seed: 5),
                streaming: ModelHeader.Streaming(frames: frames)))
    }

    func testTheAppsEventTrackerGivesTheRuntimesEvents() throws {
        let doc = try String(contentsOfFile: Self.root.appendingPathComponent("docs/coreml.md").path, encoding: .utf8)
        let lines = doc.components(separatedBy: "\n")
        let marker = try XCTUnwrap(lines.firstIndex(of: "<!-- app: EventTracker.swift -->"), "docs/coreml.md: the app's code block")
        XCTAssertEqual(lines[marker + 1], "```swift")
        let end = try XCTUnwrap(lines[(marker + 2)...].firstIndex(of: "```"))
        let tracker = lines[(marker + 2)..<end].joined(separator: "\n") + "\n"

        // A live stream at the model's rate: a person moving, still in every other 1.3 s.
        let model = try model()
        let J = model.input.skeleton.jointCount
        var g = SeededGenerator(seed: 9)
        var poses: [[PosePoint?]] = []
        for f in 0..<300 {
            if (f / 40) % 2 == 1 && f % 40 != 0 {
                poses.append(poses[f - 1])
                continue
            }
            poses.append(
                (0..<J).map { j in
                    g.nextUnitFloat() < 0.1 ? nil : PosePoint(x: 300 + 40 * sinf(Float(f) / 6 + Float(j)) + Float(j) * 7, y: 200 + Float(j) * 11)
                })
        }
        let session = try StreamSession(model: model, options: .standard(for: model))
        var events = try EventStream(classes: model.classes, options: .standard(for: model))
        var runtime: [ActionEvent] = []
        var input: [String] = []  // the tracker's calls, one JSON object per line
        func window(_ w: StreamWindow) -> String { "\"window\": [\(w.probabilities.map { "\($0)" }.joined(separator: ", "))], \"frames\": \(w.end - w.start)" }
        // The session makes frame f (and the window ending there) in the push of frame f, whose
        // time is the frame's own: the app gives frame f with that window. `finish()` adds the
        // window ending at the last frame when the stride did not land there: the app's
        // `finish(window:)`.
        func give(_ f: Int, _ windows: [StreamWindow]) {
            XCTAssertLessThanOrEqual(windows.count, 1)
            XCTAssertEqual(windows.first.map { $0.end - 1 } ?? f, f)
            let row = poses[f].flatMap { p -> [Float] in p.map { [$0.x, $0.y, 1] } ?? [0, 0, 0] }
            input.append("{\"pose\": [\(row.map { "\($0)" }.joined(separator: ", "))], \"time\": \(Double(f) / 30)" + (windows.first.map { ", " + window($0) } ?? "") + "}")
        }
        for (f, pose) in poses.enumerated() {
            let windows = try session.push(joints: pose, time: Double(f) / 30)
            runtime += events.add(windows: windows, frames: session.takeFrames())
            give(f, windows)
        }
        let last = session.finish()
        runtime += events.add(windows: last, frames: session.takeFrames()) + events.finish()
        XCTAssertLessThanOrEqual(last.count, 1)
        XCTAssertEqual(last.first.map { $0.end - 1 } ?? poses.count - 1, poses.count - 1)
        input.append("{\"finish\": true" + (last.first.map { ", " + window($0) } ?? "") + "}")
        XCTAssertGreaterThan(runtime.count, 2, "the test needs events")

        // The app: EventTracker.swift + FrameEvents.swift + a driver, compiled on their own.
        let dir = try scratchFolder()
        let modelPath = dir + "/model.atm", header = dir + "/events.json"
        try Data(
            try ModelFile.encode(
                classes: model.classes, input: model.input, network: model.network, provenance: model.header.provenance, streaming: model.header.streaming
            )
        ).write(to: URL(fileURLWithPath: modelPath))
        let inspect = runCLI(["inspect", modelPath, "--json"])
        XCTAssertEqual(inspect.code, 0, inspect.err)
        try Data(inspect.out.utf8).write(to: URL(fileURLWithPath: header))
        try Data(input.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: dir + "/input.jsonl"))
        try Data(tracker.utf8).write(to: URL(fileURLWithPath: dir + "/EventTracker.swift"))
        try FileManager.default.copyItem(atPath: Self.root.appendingPathComponent("Sources/ActionRuntime/FrameEvents.swift").path, toPath: dir + "/FrameEvents.swift")
        try Data(Self.driver.utf8).write(to: URL(fileURLWithPath: dir + "/main.swift"))
        let build = try run("/usr/bin/env", ["swiftc", "-o", dir + "/app", dir + "/main.swift", dir + "/EventTracker.swift", dir + "/FrameEvents.swift"], dir: dir)
        XCTAssertEqual(build.code, 0, "compiling the app's files:\n\(build.out)\(build.err)")
        guard build.code == 0 else { return }
        let app = try run(dir + "/app", [header, dir + "/input.jsonl", "\(J)"], dir: dir)
        XCTAssertEqual(app.code, 0, app.err)
        let got = app.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(got, runtime.map { "\($0.label) \($0.start) \($0.end)" })
    }

    /// Reads the header and the calls, runs the tracker, prints `label start end` per event.
    static let driver = """
        import Foundation

        let args = CommandLine.arguments
        let events = try JSONDecoder().decode(ModelEvents.self, from: Data(contentsOf: URL(fileURLWithPath: args[1])))
        let tracker = EventTracker(events: events, joints: Int(args[3])!, dimensions: 2, frameRate: 30)
        struct Call: Decodable {
            var pose: [Float]?, time: Double?, window: [Float]?, frames: Int?, finish: Bool?
        }
        let text = try String(contentsOfFile: args[2], encoding: .utf8)
        for line in text.split(separator: "\\n") {
            let call = try JSONDecoder().decode(Call.self, from: Data(line.utf8))
            let window = call.window.map { ($0, call.frames!) }
            let found = call.finish == true ? tracker.finish(window: window) : tracker.add(pose: call.pose!, time: call.time!, window: window)
            for e in found { print("\\(e.label) \\(e.start) \\(e.end)") }
        }

        """

    func run(_ executable: String, _ args: [String], dir: String) throws -> (code: Int32, out: String, err: String) {
        let out = dir + "/\(UUID().uuidString).out", err = dir + "/\(UUID().uuidString).err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        p.standardOutput = FileHandle(forWritingAtPath: out)
        p.standardError = FileHandle(forWritingAtPath: err)
        try p.run()
        p.waitUntilExit()
        return (p.terminationStatus, try String(contentsOfFile: out, encoding: .utf8), try String(contentsOfFile: err, encoding: .utf8))
    }
}
