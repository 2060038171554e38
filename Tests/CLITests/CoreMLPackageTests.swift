@testable import ActionRuntime
@testable import ActionTrain
import Foundation
@testable import ModelExport
import PoseCore
import TestSupport
import XCTest

@testable import actiontrain

/// `actiontrain export --format coreml --out NAME.mlpackage`: a Core ML ML Program package
/// (specification 7) of every model family `fit` writes, in Float32 and Float16; coremltools
/// loads the package and its program (pymil re-infers each op's types, reads weight.bin with
/// its own reader) and tools/python/coreml_eval.py (coreml_program.py) evaluates it with NumPy
/// against this runtime. Mutations of the weights fail the check; the package is written whole
/// or not at all, and an existing one is replaced only with --force. The Python-dependent tests
/// need python3 with numpy and coremltools (skipped without them, failed under CI).
final class CoreMLPackageTests: XCTestCase {
    /// ExportParityTests' helpers (its mutations, its model file with pose statistics).
    let helpers = ExportParityTests(name: "helpers", testClosure: { _ in })

    func requireCoreMLTools() throws -> String {
        guard CoreMLParity.isAvailable(), let script = CoreMLParity.script() else {
            throw missingPrerequisite("python3 with numpy and coremltools (and tools/python/coreml_eval.py)", fix: "pip install numpy coremltools")
        }
        return script
    }

    func packageCase(_ header: ModelHeader, _ network: Network, interface: CoreMLExport.Interface, precision: CoreMLPackage.Precision, poses: PoseWindows) throws -> CoreMLParity.Case {
        var c = try CoreMLParity.makeCase(mlmodel: [], header: header, network: network, interface: interface, poses: poses)
        c.package = try CoreMLPackage.export(header: header, network: network, options: .init(interface: interface), precision: precision)
        return c
    }

    // MARK: - Every model family

    func testEveryArchitectureExportsAsAProgramAndMatchesTheRuntime() throws {
        let script = try requireCoreMLTools()
        let names = ["mlp", "tcn", "stgcn", "streams", "members tcn + ftp, gaps filled", "ensemble + flip"]
        let configs = CoreMLCLITests.familyConfigs().filter { names.contains($0.0) }
        XCTAssertEqual(configs.map(\.0), names)
        var cases: [(String, CoreMLParity.Case)] = []
        var parameters: [Int] = []
        for (i, (name, config)) in configs.enumerated() {
            let (header, network) = try CoreMLCLITests.model(config, seed: UInt64(40 + i))
            let poses = PoseWindows.random(input: header.input, count: 6, seed: UInt64(i))
            for interface in [CoreMLExport.Interface.native, .createML(CreateMLInput(aspectRatio: 16.0 / 9, root: .hips))] {
                for precision in CoreMLPackage.Precision.allCases {
                    let what = "\(name), \(interface == .native ? "native" : "createml"), \(precision)"
                    cases.append((what, try packageCase(header, network, interface: interface, precision: precision, poses: poses)))
                    parameters.append(network.parameterCount)
                }
            }
        }
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: script))
        for (((what, c), r), parameterCount) in zip(zip(cases, results), parameters) {
            XCTAssertEqual(r.model["specificationVersion"] as? Int, 7, what)
            XCTAssertEqual(r.model["type"] as? String, "mlProgram", what)
            XCTAssertEqual(r.model["classes"] as? [String], ["jump", "squat", "wave"], what)
            let pymil = ((r.model["coremltools"] as? [String: Any])?["pymilOperations"] as? Int) ?? 0
            XCTAssertGreaterThan(pymil, 10, "coremltools turned the program into pymil: \(what)")
            let constants = r.model["constantValues"] as? [String: Int] ?? [:]
            if what.hasSuffix("float32") {
                XCTAssertTrue(r.passed, "\(what): \(r.figures.summary)")
                XCTAssertLessThan(r.maxLogitDifference, 1e-4, what)
                XCTAssertLessThan(r.maxAbsDifference, 1e-5, what)
                XCTAssertNil(constants["fp16"], what)
            } else {
                let f = ParityFigures.measure(export: r.logits, runtime: c.logits, float32: r.logits, float64: r.logits64, factor: ParityFigures.float16Factor)
                XCTAssertTrue(f.passed, "\(what): \(f.summary)")
                XCTAssertGreaterThan(f.rounding, 1e-4, "\(what): half precision rounds visibly")
                XCTAssertLessThan(r.maxAbsDifference, 2e-2, what)
                XCTAssertGreaterThan(constants["fp16"] ?? 0, parameterCount / 2, "\(what): the network's weights are fp16: \(constants)")
            }
        }
    }

    // MARK: - Mutations

    /// Float16 `values`' little-endian bytes.
    static func half(_ values: [Float]) -> [UInt8] { values.flatMap { withUnsafeBytes(of: Float16($0).bitPattern.littleEndian, Array.init) } }

    /// `bytes` with the one occurrence of `from` replaced by `to` (same length).
    func replacing(_ from: [UInt8], with to: [UInt8], in bytes: [UInt8], _ what: String) throws -> [UInt8] {
        XCTAssertEqual(from.count, to.count)
        let found = (0...(bytes.count - from.count)).filter { bytes[$0] == from[0] && Array(bytes[$0..<($0 + from.count)]) == from }
        guard found.count == 1 else { throw XCTSkip("\(what): the values occur \(found.count) times in the weights") }
        var out = bytes
        out.replaceSubrange(found[0]..<(found[0] + from.count), with: to)
        return out
    }

    /// The mistakes of ExportParityTests in the Float32 program's weight.bin (a swapped pair of
    /// conv1d weights, a conv1d and a linear weight untransposed) fail its strict check; in the
    /// Float16 program's, the mistakes only it could hold fail its own check: the conv1d weight
    /// untransposed, its values byte-swapped (big-endian Float16), and written as the top
    /// halves of their float32 bits (a truncated, not rounded, conversion gone wrong).
    func testMutatedPackagesFailWhereTheRightOnesPass() throws {
        let script = try requireCoreMLTools()
        let parity = helpers
        let (header, network) = try ExportParityTests.defaultLikeModel()
        let poses = PoseWindows.random(input: header.input, count: 12, seed: 4)
        var cases: [(String, CoreMLParity.Case)] = []
        for precision in CoreMLPackage.Precision.allCases {
            let right = try packageCase(header, network, interface: .native, precision: precision, poses: poses)
            let weights = right.package!.weights
            var mutated: [(String, [UInt8])] = []
            if precision == .float32 {
                mutated = try parity.mutations(weights, network: network, linear: try parity.linearWeight(network, in: weights))
            } else {
                let conv = try XCTUnwrap(network.tensors.first { $0.layout == "[outputs, kernel, inputs]" && $0.shape[1] > 1 && $0.shape[2] > 1 })
                let (O, K, I) = (conv.shape[0], conv.shape[1], conv.shape[2])
                let oki = try network.exportTensor(conv.name).values
                var oik = [Float](repeating: 0, count: oki.count)
                for o in 0..<O { for k in 0..<K { for i in 0..<I { oik[(o * I + i) * K + k] = oki[(o * K + k) * I + i] } } }
                let stored = Self.half(oik)
                var swapped = stored
                for p in stride(from: 0, to: swapped.count, by: 2) { swapped.swapAt(p, p + 1) }
                let truncated = oik.flatMap { withUnsafeBytes(of: UInt16($0.bitPattern >> 16).littleEndian, Array.init) }
                mutated = [
                    ("a conv1d weight not transposed", try replacing(stored, with: Self.half(oki), in: weights, "conv1d weight")),
                    ("a conv1d weight byte-swapped", try replacing(stored, with: swapped, in: weights, "conv1d weight")),
                    ("a conv1d weight as float32's top halves", try replacing(stored, with: truncated, in: weights, "conv1d weight")),
                ]
            }
            cases.append(("\(precision), right", right))
            for (what, w) in mutated {
                var c = right
                c.package!.weights = w
                cases.append(("\(precision), \(what)", c))
            }
        }
        XCTAssertEqual(cases.count, 8)
        let results = try XCTUnwrap(try CoreMLParity.compare(cases.map(\.1), script: script))
        for ((what, c), r) in zip(cases, results) {
            let f =
                what.hasPrefix("float16")
                ? ParityFigures.measure(export: r.logits, runtime: c.logits, float32: r.logits, float64: r.logits64, factor: ParityFigures.float16Factor) : r.figures
            if what.hasSuffix("right") {
                XCTAssertTrue(f.passed, "\(what): \(f.summary)")
            } else {
                // Float16's own error is large beside this small random model's response to one
                // weight (0.1 in the logits): its mistakes fail by a smaller margin.
                XCTAssertFalse(f.passed, "\(what): \(f.summary)")
                // (Byte-swapped Float16 values overflow: no finite tolerance, a failure.)
                let margin = what.hasPrefix("float16") ? 1.25 : 5
                XCTAssertTrue(!f.tolerance.isFinite || f.difference > margin * f.tolerance, "\(what) is not a close call: \(f.summary)")
            }
        }
    }

    // MARK: - The files

    /// The package's layout without Python: three files, the manifest naming the model as its
    /// root, weight.bin in the blob format (header, 64-byte records, the Float16 values of the
    /// network's weights), the model message of specification 7 with its program; the same
    /// bytes on every export.
    func testThePackageLayoutAndWeightsRoundTrip() throws {
        let (header, network) = try ExportParityTests.defaultLikeModel()
        let p = try CoreMLPackage.export(header: header, network: network, precision: .float16)
        XCTAssertEqual(p.files.map(\.path), ["Manifest.json", "Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin"])
        let again = try CoreMLPackage.export(header: header, network: network, precision: .float16)
        XCTAssertEqual(p.model, again.model)
        XCTAssertEqual(p.weights, again.weights)
        XCTAssertEqual(p.manifest, again.manifest)
        let manifest = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(p.manifest)) as? [String: Any])
        let items = try XCTUnwrap(manifest["itemInfoEntries"] as? [String: [String: String]])
        let root = try XCTUnwrap(manifest["rootModelIdentifier"] as? String)
        XCTAssertEqual(items[root]?["path"], "com.apple.CoreML/model.mlmodel")
        XCTAssertEqual(Set(items.values.compactMap { $0["path"] }), ["com.apple.CoreML/model.mlmodel", "com.apple.CoreML/weights"])
        XCTAssertEqual(manifest["fileFormatVersion"] as? String, "1.0.0")
        // The model message: field 1 = 7, and an mlProgram (field 502) whose function has the opset.
        XCTAssertEqual(Array(p.model.prefix(2)), [0x08, 7])
        XCTAssertNotNil(Data(p.model).range(of: Data(Array("CoreML6".utf8))))
        // weight.bin: blobs of whole records; each conv1d weight is in it as Float16 [O, I, K].
        let w = p.weights
        func u32(_ i: Int) -> UInt32 { w[i..<(i + 4)].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        func u64(_ i: Int) -> UInt64 { w[i..<(i + 8)].reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        XCTAssertEqual(u32(4), 2, "storage version 2")
        var offset = 64, blobs = 0, half = 0
        while offset < w.count {
            XCTAssertEqual(u32(offset), 0xDEAD_BEEF, "a record at \(offset)")
            XCTAssertTrue([1, 2].contains(u32(offset + 4)), "Float16 data (the preprocessing's and the Fourier pyramid's constants: Float32)")
            if u32(offset + 4) == 1 { half += 1 }
            XCTAssertEqual(Int(u64(offset + 16)), offset + 64)
            offset = (offset + 64 + Int(u64(offset + 8)) + 63) / 64 * 64
            blobs += 1
        }
        XCTAssertEqual(Int(u32(0)), blobs)
        XCTAssertGreaterThan(half, 4)
        let conv = try XCTUnwrap(network.tensors.first { $0.layout == "[outputs, kernel, inputs]" })
        let (O, K, I) = (conv.shape[0], conv.shape[1], conv.shape[2])
        let oki = try network.exportTensor(conv.name).values
        var oik = [Float](repeating: 0, count: oki.count)
        for o in 0..<O { for k in 0..<K { for i in 0..<I { oik[(o * I + i) * K + k] = oki[(o * K + k) * I + i] } } }
        XCTAssertNotNil(Data(w).range(of: Data(Self.half(oik))), "the conv1d weight, Float16, [O, I, K]")
        XCTAssertNil(Data(w).range(of: Data(Self.half(oki))))
        // Float32: the same values as float32 bits, type 2.
        let p32 = try CoreMLPackage.export(header: header, network: network, precision: .float32)
        XCTAssertNotNil(Data(p32.weights).range(of: Data(oik.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) })))
        XCTAssertEqual(p32.weights[68], 2)
    }

    /// A weight beyond Float16's range is refused by the Float16 export, naming the layer; the
    /// Float32 export takes it.
    func testAWeightBeyondFloat16sRangeIsRefused() throws {
        let (header, network) = try ExportParityTests.defaultLikeModel()
        let conv = try XCTUnwrap(network.tensors.first { $0.layout == "[outputs, kernel, inputs]" })
        network.parameters[conv.offset] = 70_000
        XCTAssertThrowsError(try CoreMLPackage.export(header: header, network: network, precision: .float16)) { e in
            XCTAssertTrue("\(e)".hasPrefix("cannot export to a Float16 Core ML ML Program: layer layers.0.members.0.1.body.0 (conv1d) has a constant 70000.0 beyond Float16's range (±65504); export it in Float32"), "\(e)")
        }
        XCTAssertNoThrow(try CoreMLPackage.export(header: header, network: network, precision: .float32))
    }

    func testExportWritesAPackageWholeAndReplacesOnlyAPackageWithForce() throws {
        let dir = try scratchFolder()
        let model = try helpers.writeModel(dir)
        let out = dir + "/Classifier.mlpackage"
        let args = ["export", model, "--format", "coreml", "--out", out, "--parity-windows", "8"]
        var r = runCLI(args)
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.hasPrefix("export: wrote \(out) (a folder, "), r.out)
        XCTAssertTrue(r.out.contains("Core ML ML Program, specification 7 (iOS 16+), Float16 network (Float32 preprocessing), input poses [8, 19, 3]"), r.out)
        if CoreMLParity.isAvailable() {
            XCTAssertTrue(r.out.contains("parity: coremltools "), r.out)
            XCTAssertTrue(r.out.contains("the program in Float32: "), r.out)
            XCTAssertTrue(r.out.contains("parity: in Float16: "), r.out)
            XCTAssertTrue(r.out.contains("most likely class changed on "), r.out)
        }
        let files = ["Manifest.json", "Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin"]
        let written = try files.map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["Classifier.mlpackage", "model.atm"], "no temporary folder is left")
        // Not replaced without --force; replaced with it (Float32 now: other weights).
        r = runCLI(args)
        XCTAssertEqual(r.code, 1)
        XCTAssertTrue(r.err.contains("\(out) exists; pass --force to replace the package"), r.err)
        XCTAssertEqual(try files.map { try Data(contentsOf: URL(fileURLWithPath: out + "/" + $0)) }, written)
        r = runCLI(args + ["--force", "--precision", "float32"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("specification 7 (iOS 16+), Float32, input poses"), r.out)
        XCTAssertFalse(r.out.contains("in Float16"), r.out)
        let weights = try Data(contentsOf: URL(fileURLWithPath: out + "/" + files[2]))
        XCTAssertGreaterThan(weights.count, written[2].count, "Float32 weights take twice the bytes")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["Classifier.mlpackage", "model.atm"], "the old package is gone, nothing left beside")
        // A folder that is not a package, and a file, are never replaced.
        let other = dir + "/Other.mlpackage"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: other + "/notes.txt"))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: dir + "/File.mlpackage"))
        for target in [other, dir + "/File.mlpackage"] {
            r = runCLI(["export", model, "--format", "coreml", "--out", target, "--parity-windows", "0", "--force"])
            XCTAssertEqual(r.code, 1, r.err)
            XCTAssertTrue(r.err.contains("exists and is not an ML package (a folder with a Manifest.json); it is never replaced"), r.err)
        }
        // A folder that does not exist is not made.
        r = runCLI(["export", model, "--format", "coreml", "--out", dir + "/nowhere/M.mlpackage", "--parity-windows", "0"])
        XCTAssertEqual(r.code, 1, r.err)
        XCTAssertTrue(r.err.contains("the folder \(dir)/nowhere does not exist; create it first"), r.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/nowhere"))
        XCTAssertEqual(try String(contentsOfFile: other + "/notes.txt", encoding: .utf8), "mine")
        XCTAssertEqual(try String(contentsOfFile: dir + "/File.mlpackage", encoding: .utf8), "mine")
    }

    /// A failed check writes nothing: `ACTIONTRAIN_PYTHON` runs the evaluator and adds 1 to the
    /// first logit of each model in both its runs (float32 and float64: a wrong program, not
    /// rounding).
    /// The default model of the tiny fixture (`fit` with no config but the epochs): its solved
    /// head's held-out predictions and its out-of-fold ones are all right, and both temperatures
    /// went to their bound of 10⁻³. Before, its logits were 10⁵ and more, the Float16 package
    /// overflowed ("in Float16 the program overflows ... on 16 of 16 windows: export with
    /// --precision float32") and the Float32 check's tolerance was 36 logits; now each
    /// temperature stops where its evidence's logits are 87.3 apart.
    func testTheDefaultModelOfSeparableDataExportsAsAFloat16Package() throws {
        _ = try requireCoreMLTools()
        let dir = try scratchFolder()
        let fit = runCLI(["fit", FitCLITests.fixture, "--out", "\(dir)/run", "--epochs", "3", "--threads", "1"])
        XCTAssertEqual(fit.code, 0, fit.err)
        XCTAssertTrue(fit.out.contains("held-out log loss 0.000, accuracy 1.000"), "the head's evidence is separable: \(fit.out)")
        let model = "\(dir)/run/model.atm"
        let calibration = try XCTUnwrap(try ModelFile.load(contentsOf: model).0.calibration)
        XCTAssertGreaterThan(calibration.temperature, 0.01, "not the bound of 10⁻³")
        let r = runCLI(["export", model, "--format", "coreml", "--out", "\(dir)/m.mlpackage", "--parity-windows", "16"])
        XCTAssertEqual(r.code, 0, r.err)
        XCTAssertTrue(r.out.contains("parity: in Float16: "), r.out)
        // The network's logits on the check's windows stay within Float16's range by far.
        let (header, network) = try ModelFile.load(contentsOf: model)
        let poses = PoseWindows.statistics(try XCTUnwrap(header.poseStatistics), input: header.input, count: 16, seed: 1)
        let logits = network.predictLogits(try poses.features(header.input), batch: poses.count)
        XCTAssertLessThan(logits.map(abs).max()!, 1000)
    }

    func testAFailedCheckWritesNoPackage() throws {
        _ = try requireCoreMLTools()
        let dir = try scratchFolder()
        let model = try helpers.writeModel(dir)
        let out = dir + "/m.mlpackage"
        let wrapper = dir + "/python"
        try """
        #!/bin/sh
        case "$1" in -*) exec python3 "$@" ;; esac
        python3 "$@" > "$0.out" || exit $?
        python3 -c 'import json, sys
        d = json.load(open(sys.argv[1]))
        for r in (d if isinstance(d, list) else [d]):
            r["logits"][0][0] += 1
            r["logits64"][0][0] += 1
        json.dump(d, sys.stdout)' "$0.out"
        """.write(toFile: wrapper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper)
        setenv("ACTIONTRAIN_PYTHON", wrapper, 1)
        defer { unsetenv("ACTIONTRAIN_PYTHON") }
        for precision in ["float32", "float16"] {
            let r = runCLI(["export", model, "--format", "coreml", "--out", out, "--parity-windows", "8", "--precision", precision])
            XCTAssertEqual(r.code, 1, r.err)
            XCTAssertTrue(r.err.contains("\(out) not written: the ML Program's logits (in Float32) differ from the runtime's by 1"), r.err)
            XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["model.atm", "python", "python.out"], "no temporary folder is left either")
    }

    func testPackageUsageErrorsSayWhatToDo() throws {
        let dir = try scratchFolder()
        let model = try helpers.writeModel(dir)
        for (name, extra, message) in [
            ("x.mlpackage", [], "an ML Program package is a Core ML model: add --format coreml"),
            ("x.mlmodel", ["--format", "coreml", "--precision", "float16"], "--precision is for an ML Program package (.mlpackage)"),
            ("x.onnx", ["--format", "coreml"], "give a name ending in .mlmodel or .mlpackage"),
            ("x.mlpackage", ["--format", "coreml", "--precision", "half"], "float16"),
            ("x.onnx", ["--precision", "float32"], "--precision is a Core ML option: add --format coreml"),
        ] {
            let out = dir + "/" + name
            let r = runCLI(["export", model, "--parity-windows", "0", "--out", out] + extra)
            XCTAssertEqual(r.code, 2, "\(name) \(extra): \(r.err)")
            XCTAssertTrue(r.err.contains(message), "\(name) \(extra): \(r.err)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        }
        let r = runCLI(["export", model, "--parity-windows", "0", "--format", "coreml", "--precision", "float32"])
        XCTAssertEqual(r.code, 2, r.err)
        XCTAssertTrue(r.err.contains("--precision is for an ML Program package: give --out NAME.mlpackage"), r.err)
    }

    /// The evaluator refuses a broken package, naming what is wrong.
    func testTheEvaluatorRefusesBrokenPackages() throws {
        let script = try requireCoreMLTools()
        let (header, network) = try ExportParityTests.defaultLikeModel()
        let p = try CoreMLPackage.export(header: header, network: network, precision: .float16)
        let dir = try scratchFolder()
        func evaluate(_ package: CoreMLPackage.Package, drop: String? = nil) throws -> (status: Int32, stderr: String) {
            let path = dir + "/p\(UUID().uuidString.prefix(6)).mlpackage"
            for f in package.files where f.path != drop {
                let url = URL(fileURLWithPath: path + "/" + f.path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(f.bytes).write(to: url)
            }
            let r = try ONNXParity.run([CoreMLParity.python, script, path])
            return (r.status, r.stderr)
        }
        XCTAssertEqual(try evaluate(p).status, 0)
        var r = try evaluate(p, drop: "Manifest.json")
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("has no Manifest.json"), r.stderr)
        var broken = p
        broken.weights[64] ^= 0xFF  // the first record's sentinel
        r = try evaluate(broken)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("no blob record at 64"), r.stderr)
        broken = p
        broken.weights.removeLast(2)
        r = try evaluate(broken)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("the const needs"), r.stderr)
    }
}
