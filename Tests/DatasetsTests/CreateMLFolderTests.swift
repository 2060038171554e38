@testable import Datasets
import Foundation
import PoseCore
import TestSupport
import XCTest

/// Issue 13 item 5: Create ML's folder-per-label layout, read and written.
final class CreateMLFolderTests: XCTestCase {
    let folder = fixture("sources/createml")
    let v = Skeleton.visionBody2D
    func point(_ s: PoseSequence, _ f: Int, _ joint: String) -> [Float]? {
        let i = f * v.jointCount + v.index(of: joint)!
        return s.present[i] == 0 ? nil : [s.coordinates[2 * i], s.coordinates[2 * i + 1]]
    }

    func testFolderPerLabelWithJSONAndCSVClips() throws {
        let d = try CreateMLFolder.read(folder, options: .init(imageSize: [400, 200]))
        XCTAssertEqual(d.skeleton, .visionBody2D)
        XCTAssertEqual(d.classes, ["clap", "wave"])
        XCTAssertEqual(d.sequences.map(\.id), ["clap/c1", "wave/clip-1", "wave/clip-2"])
        XCTAssertEqual(d.sequences.map(\.label), ["clap", "wave", "wave"])
        XCTAssertEqual(d.imageSize, [400, 200])
        XCTAssertEqual(d.frameRate, 30)
        let c1 = d.sequences[0], k1 = d.sequences[1], k2 = d.sequences[2]
        assertClose(point(c1, 0, "nose")!, [200, 50])
        assertClose(point(c1, 0, "leftAnkle")!, [200, 150])
        // The [3, 18] form: x · W, (1 − y) · H in Create ML's joint order.
        assertClose(point(k1, 0, "nose")!, [100, 20], absolute: 1e-3)
        assertClose(point(k1, 0, "neck")!, [110, 25], absolute: 1e-3)
        assertClose(point(k1, 1, "nose")!, [150, 20], absolute: 1e-3)
        XCTAssertNil(point(k1, 0, "rightWrist"), "confidence 0")
        XCTAssertNil(point(k1, 0, "root"), "not in Create ML's layout")
        XCTAssertEqual(k1.confidence?[v.index(of: "nose")!], 0.5)
        // The object form with Vision's raw keys, and a null frame.
        XCTAssertEqual(k2.frameCount, 2)
        assertClose(point(k2, 0, "nose")!, [200, 50])
        XCTAssertEqual(k2.present[v.jointCount...].filter { $0 != 0 }.count, 0)
        XCTAssertEqual(CoordinateSpace.measure(d).problems, [], "pixels, y down")
    }

    func testWriteThenReadRoundTrips() throws {
        let d = try CreateMLFolder.read(folder, options: .init(imageSize: [400, 200]))
        let out = try temporaryDirectory().appendingPathComponent("cml").path
        let files = try CreateMLFolder.write(d, to: out)
        XCTAssertEqual(files.map { $0.replacingOccurrences(of: out + "/", with: "") }, ["clap/c1.json", "wave/clip-1.json", "wave/clip-2.json"])
        let back = try CreateMLFolder.read(out)
        XCTAssertEqual(back.sequences.map(\.id), d.sequences.map(\.id))
        XCTAssertEqual(back.sequences.map(\.present), d.sequences.map(\.present))
        for (a, b) in zip(back.sequences, d.sequences) { assertClose(a.coordinates, b.coordinates, absolute: 1e-3) }
        assertThrows(["cml", "skeleton is 'coco-17'", "vision-body-2d"]) {
            _ = try CreateMLFolder.write(try NumpyFormat.read(fixture("coco_small.npz")), to: out)
        }
    }

    func testBadClipsNameFileClipFrameAndJoint() throws {
        func clip(_ text: String, size: [Double]? = [400, 200]) throws {
            _ = try CreateMLFolder.parseClip(Array(text.utf8), file: "w/a.json", id: "w/a", options: .init(imageSize: size))
        }
        assertThrows(["w/a.json: clip 'w/a'", "no image size", "or the image size when importing"]) { try clip("[]", size: nil) }
        assertThrows(["w/a.json: clip 'w/a' frame 0", "[[x × 18], [y × 18], [confidence × 18]]"]) { try clip("[[[1, 2], [3], [4]]]") }
        assertThrows(["w/a.json: clip 'w/a' frame 1: joint 'elbow' is not in skeleton 'vision-body-2d'"]) { try clip(#"[{}, {"elbow": [0.1, 0.2]}]"#) }
        assertThrows(["w/a.json: clip 'w/a' frame 0 joint 'nose'", "x and y must be numbers"]) { try clip(#"[{"nose": {"x": 0.1}}]"#) }
        assertThrows(["w/a.json: clip 'w/a'", "unknown key \"fps\""]) { try clip(#"{"fps": 30, "frames": []}"#) }
        // Before: "w/a.json: expected ..." without the line and column (a location prints its
        // column only after a line), and a clip cut short no differently from a typo.
        assertThrows(["w/a.json:1:3: the input ends in the middle of the clip's JSON; the file looks cut short"]) { try clip("[{") }
        assertThrows(["w/a.json:2:3: expected "]) { try clip("[{},\n {]") }
        assertThrows(["beyond ±1000000"]) { try clip(#"[{"nose": [1e9, 0.5]}]"#) }
    }

    func testACreateMLArchiveGivenAsXIsNamed() {
        assertThrows(["createml.npz", "Create ML keypoints archive", "convert it first with actiontrain import createml"]) {
            _ = try NumpyFormat.read(fixture("createml.npz"))
        }
    }

    func testLinksAreNotFollowedAndEmptyLabelFoldersAreNotClasses() throws {
        // Issue 26 item 8: a linked label folder or clip was followed wherever it led (out of
        // the folder, round a loop), and a label folder without clips became a class without
        // data, without a word.
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let data = "\(dir)/data", outside = "\(dir)/outside"
        try FileManager.default.copyItem(atPath: folder, toPath: data)
        try FileManager.default.copyItem(atPath: folder + "/wave", toPath: outside)
        try FileManager.default.createDirectory(atPath: "\(data)/empty", withIntermediateDirectories: false)
        try Data("notes".utf8).write(to: URL(fileURLWithPath: "\(data)/empty/README.txt"))
        let report = try CreateMLFolder.readReporting(data, options: .init(imageSize: [400, 200]))
        XCTAssertEqual(report.dataset.classes, ["clap", "wave"])
        XCTAssertEqual(report.warnings.map(\.description), ["warning: \(data)/empty: the label folder holds no .json or .csv clip; it is not a class (add its clips, or remove the folder)"])
        for (link, target) in [("\(data)/linked", outside), ("\(data)/wave/more.json", "\(outside)/clip-2.json"), ("\(data)/loop", "\(data)/loop")] {
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
            XCTAssertThrowsError(try CreateMLFolder.read(data, options: .init(imageSize: [400, 200]))) {
                XCTAssertTrue("\($0)".contains("\(link): cannot read: is a symbolic link, which import does not follow"), "\($0)")
            }
            try FileManager.default.removeItem(atPath: link)
        }
    }

    func testHiddenLabelFoldersAndClipsAreSkippedWithAWarning() throws {
        // Issue 38 finding 15: a label folder (or clip) whose name starts with '.' was skipped
        // without a word; a .DS_Store stays quiet.
        let dir = try temporaryDirectory().path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let data = "\(dir)/data"
        try FileManager.default.copyItem(atPath: folder, toPath: data)
        try FileManager.default.copyItem(atPath: folder + "/wave", toPath: "\(data)/.jump")
        try FileManager.default.copyItem(atPath: folder + "/wave/clip-1.json", toPath: "\(data)/wave/.clip-3.json")
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(data)/.DS_Store"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(data)/wave/.DS_Store"))
        let report = try CreateMLFolder.readReporting(data, options: .init(imageSize: [400, 200]))
        XCTAssertEqual(report.dataset.classes, ["clap", "wave"])
        XCTAssertEqual(
            report.warnings.map(\.description),
            [
                "warning: \(data)/.jump: a label folder whose name starts with '.' (hidden) is skipped; rename it to read it",
                "warning: \(data)/wave/.clip-3.json: a clip whose name starts with '.' (hidden) is skipped; rename it to read it",
            ])
    }
}
