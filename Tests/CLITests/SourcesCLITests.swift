@testable import actiontrain
import Datasets
import Foundation
import TestSupport
import XCTest

/// Issue 13 through the commands: warnings and refusals about coordinate spaces, the repairs
/// of `convert`, and the reading flags every command shares.
final class SourcesCLITests: XCTestCase {
    func run(_ args: [String]) -> (code: Int32, out: String, err: String) {
        var stdout = "", stderr = ""
        var output = Output(write: { stdout += $0 }, note: { stderr += $0 }, isTerminal: false)
        let code = ActionTrainCLI.run(args, out: &output)
        return (code, stdout, stderr)
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    func source(_ name: String) -> String { Self.fixtures.appendingPathComponent("sources/" + name).path }

    func testConvertWarnsRepairsAndStrictRefuses() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("out.jsonl").path
        let plain = run(["convert", out, source("vision-normalised.jsonl")])
        XCTAssertEqual(plain.code, 0, plain.err)
        XCTAssertTrue(plain.err.contains("[normalised-as-pixels]"), plain.err)
        XCTAssertTrue(plain.err.contains("[y-up] heads are below feet in 3 of 3 frames"), plain.err)

        let strict = run(["convert", out, source("vision-normalised.jsonl"), "--force", "--strict"])
        XCTAssertEqual(strict.code, 1)
        XCTAssertTrue(strict.err.hasPrefix("error: \(source("vision-normalised.jsonl")): [normalised-as-pixels]"), strict.err)
        XCTAssertEqual(strict.err.filter { $0 == "\n" }.count, 1, "one line")

        let fixed = run(["convert", out, source("vision-normalised.jsonl"), "--force", "--strict", "--from-normalized", "--origin", "bottom-left"])
        XCTAssertEqual(fixed.code, 0, fixed.err)
        XCTAssertEqual(fixed.err, "")
        let d = try DatasetLoader.load(out)
        assertClose(Array(d.sequences[0].coordinates[0..<2]), [960, 216], absolute: 1e-3)
        XCTAssertEqual(d.sequences[0].present[d.skeleton.index(of: "leftWrist")!], 0, "confidence 0: absent")

        let mirrored = run(["convert", out, source("front-camera.jsonl"), "--force", "--mirror", "--image-size", "1000x480"])
        XCTAssertEqual(mirrored.code, 0, mirrored.err)
        let m = try DatasetLoader.load(out)
        XCTAssertEqual(m.sequences[0].coordinates[2 * m.skeleton.index(of: "rightWrist")!], 900, "the given width wins: 1000 − 100")

        let noSize = run(["convert", out, source("metres-as-pixels.jsonl"), "--force", "--from-normalized"])
        XCTAssertEqual(noSize.code, 1)
        XCTAssertTrue(noSize.err.contains("sequence 'm1': converting normalised points needs the image size; give it"), noSize.err)
        XCTAssertEqual(run(["convert", out, source("y-up-pixels.jsonl"), "--force", "--origin", "up"]).code, 2)
    }

    func testImportClassOrderAndSplitNames() throws {
        let dir = try temporaryDirectory()
        let a = dir.appendingPathComponent("a.jsonl").path, b = dir.appendingPathComponent("b.jsonl").path
        XCTAssertEqual(run(["import", "csv", source("order.csv"), "--skeleton", "coco-17", "--out", a]).code, 0)
        XCTAssertEqual(run(["import", "npz", source("order.npz"), "--out", b]).code, 0)
        XCTAssertEqual(try DatasetLoader.load(a).classes, ["wave", "clap"])
        XCTAssertEqual(try DatasetLoader.load(b).classes, ["wave", "clap"])
        let refused = run(["import", "npz", source("int-split.npz"), "--out", a, "--force"])
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("give split names for the values, e.g. 0=train,1=test"), refused.err)
        let mapped = run(["import", "npz", source("int-split.npz"), "--out", a, "--force", "--split-names", "0=train,1=test", "--classes", "x,y,z"])
        XCTAssertEqual(mapped.code, 0, mapped.err)
        XCTAssertEqual(mapped.out, "import: wrote 3 sequences (test 1, train 2), 3 classes, 3 frames, skeleton coco-17 to \(a)\n")
        XCTAssertEqual(run(["import", "npz", source("int-split.npz"), "--out", a, "--force", "--split-names", "0=training"]).code, 2)
    }

    func testCreateMLBothWays() throws {
        let dir = try temporaryDirectory()
        let native = dir.appendingPathComponent("cml.jsonl").path, folder = dir.appendingPathComponent("cml").path
        let imported = run(["import", "createml", source("createml"), "--image-size", "400x200", "--out", native])
        XCTAssertEqual(imported.code, 0, imported.err)
        XCTAssertEqual(imported.out, "import: wrote 3 sequences ((none) 3), 2 classes, 5 frames, skeleton vision-body-2d to \(native)\n")
        let written = run(["convert", folder, native, "--to", "createml"])
        XCTAssertEqual(written.code, 0, written.err)
        XCTAssertEqual(written.out, "convert: wrote 3 clips in 2 label folders to \(folder)\n")
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/wave/clip-1.json"))
        XCTAssertEqual(run(["convert", folder, native, "--to", "createml"]).code, 1, "an existing folder needs --force")
        // Issue 26 item 8: --force replaced the clips of the same names and kept the others, so
        // that the export mixed two datasets. Now it holds exactly the new clips ...
        var fewer = try DatasetLoader.load(native)
        fewer.sequences.removeFirst()
        let one = dir.appendingPathComponent("fewer.jsonl").path
        try NativeFormat.write(fewer, to: one)
        let replaced = run(["convert", folder, one, "--to", "createml", "--force"])
        XCTAssertEqual(replaced.code, 0, replaced.err)
        XCTAssertEqual(try CreateMLFolder.read(folder).sequences.map(\.id), fewer.sequences.map(\.id))
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/clap"), "the label folder the export no longer has")
        // ... and never removes what it did not write: a folder holding other files is refused.
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/wave/notes.txt"))
        let refused = run(["convert", folder, native, "--to", "createml", "--force"])
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("\(folder) holds 1 file an earlier 'convert --to createml' did not write (wave/notes.txt)"), refused.err)
        XCTAssertEqual(try String(contentsOfFile: folder + "/wave/notes.txt", encoding: .utf8), "mine")
        XCTAssertEqual(try CreateMLFolder.read(folder).sequences.map(\.id), fewer.sequences.map(\.id), "the export is as it was")
        let foreign = dir.appendingPathComponent("foreign").path
        try FileManager.default.createDirectory(atPath: foreign + "/x", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: foreign + "/x/y.json"))
        XCTAssertEqual(run(["convert", foreign, native, "--to", "createml", "--force"]).code, 1, "not an export of ours")
        XCTAssertTrue(FileManager.default.fileExists(atPath: foreign + "/x/y.json"))
        let noSize = run(["import", "createml", source("createml"), "--out", native, "--force"])
        XCTAssertEqual(noSize.code, 1)
        XCTAssertTrue(noSize.err.contains("clap/c1.csv: clip 'clap/c1': no image size"), noSize.err)
    }

    func testNormalizeHeightTwiceScalesOnce() throws {
        // Issue 26 item 9: a second --normalize-height scaled everyone again.
        let dir = try temporaryDirectory()
        let raw = dir.appendingPathComponent("raw.jsonl").path, once = dir.appendingPathComponent("once.jsonl").path
        let twice = dir.appendingPathComponent("twice.jsonl").path
        try Data(
            #"""
            {"actiontrain": "poses", "version": 1, "skeleton": "vision-body-3d", "classes": ["a"]}
            {"id": "tall", "label": "a", "bodyHeight": 2.0, "heightEstimation": "measured", "frames": [{"pose": {"topHead": [0, 1, 0.5], "root": [0, 0, 0]}}]}
            {"id": "plain", "label": "a", "frames": [{"pose": {"topHead": [0, 1, 0.5], "root": [0, 0, 0]}}]}

            """#.utf8
        ).write(to: URL(fileURLWithPath: raw))
        let first = run(["convert", once, raw, "--normalize-height"])
        XCTAssertEqual(first.code, 0, first.err)
        XCTAssertTrue(first.out.contains("convert: \(raw): --normalize-height scaled 1 sequence to 1.8 m; left 1 without a bodyHeight as it is"), first.out)
        let second = run(["convert", twice, once, "--normalize-height"])
        XCTAssertEqual(second.code, 0, second.err)
        XCTAssertTrue(
            second.out.contains("convert: \(once): --normalize-height scaled 0 sequences to 1.8 m; left 1 whose bodyHeight is already 1.8 m as it is"),
            second.out)
        XCTAssertEqual(try DatasetLoader.load(twice).sequences, try DatasetLoader.load(once).sequences)
        assertClose(Array(try DatasetLoader.load(once).sequences[0].coordinates.suffix(3)), [0, 0, 0])
        XCTAssertEqual(try DatasetLoader.load(once).sequences[0].bodyHeight, 1.8)
    }

    func testImportPyskl() throws {
        let out = try temporaryDirectory().appendingPathComponent("ntu.jsonl").path
        let r = run(["import", "pyskl", source("pyskl-3d.pkl"), "--split-names", "xsub_train=train,xsub_val=test", "--people", "bodies=2", "--out", out])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertEqual(r.out, "import: wrote 2 sequences (test 1, train 1), 2 classes, 4 frames, skeleton kinect-v2-25x2 to \(out)\n")
        let evil = run(["import", "pyskl", source("evil.pkl"), "--out", out, "--force"])
        XCTAssertEqual(evil.code, 1)
        XCTAssertTrue(evil.err.contains("calls posix.system, which is not run"), evil.err)
        XCTAssertEqual(evil.err.filter { $0 == "\n" }.count, 1)
    }

    func testImportAndInspectShareTheReadingFlags() throws {
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("c.jsonl").path
        let r = run(["import", "csv", source("confidence.csv"), "--skeleton", "coco-17", "--min-confidence", "0.5", "--out", out])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertEqual(try DatasetLoader.load(out).sequences[0].present[0..<3], [1, 0, 0])
        XCTAssertEqual(run(["import", "csv", source("confidence.csv"), "--min-confidence", "2", "--out", out, "--force"]).code, 2)
        let strict = run(["import", "csv", source("confidence.csv"), "--skeleton", "coco-17", "--out", out, "--force", "--strict"])
        XCTAssertEqual(strict.code, 0, "clean data passes --strict: \(strict.err)")

        let inspect = run(["inspect", source("millimetres-as-metres.jsonl"), "--strict"])
        XCTAssertEqual(inspect.code, 1)
        XCTAssertTrue(inspect.out.contains("coordinates: measured millimetres (bodies 1650 across), vertical y up (3 of 3 frames); declared metres"), inspect.out)
        XCTAssertTrue(inspect.out.contains("[not-metres]"), inspect.out)
    }
}
