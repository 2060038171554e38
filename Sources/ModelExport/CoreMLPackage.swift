import ActionRuntime
import Foundation
import PoseCore

/// Exports a loaded model as a Core ML ML Program package (`.mlpackage`, specification version
/// 7: iOS 16, macOS 13, tvOS 16, watchOS 9), written by hand from Apple's published schema
/// (Model.proto, FeatureTypes.proto, MIL.proto) and coremltools' package and weight layout:
///
///     NAME.mlpackage/Manifest.json
///     NAME.mlpackage/Data/com.apple.CoreML/model.mlmodel       the Model message, `mlProgram`
///     NAME.mlpackage/Data/com.apple.CoreML/weights/weight.bin  the weights (`CoreMLBlobFile`)
///
/// The same contract as the `.mlmodel` (`CoreMLExport`: input `poses`, outputs
/// `labelProbabilities` and `label`, the same description and metadata); the program's one
/// function `main` holds the input conversion and the preprocessing in fp32 and the network in
/// `precision` (`CoreMLProgramGraph`), then `classify`, which makes the two outputs.
public enum CoreMLPackage {
    public static let specificationVersion = 7
    /// The MIL opset of specification 7.
    public static let opset = "CoreML6"

    public enum Precision: String, Sendable, CaseIterable {
        /// Float16 weights and network arithmetic (the preprocessing stays Float32).
        case float16
        case float32
    }

    /// The package's three files.
    public struct Package: Sendable {
        /// Data/com.apple.CoreML/model.mlmodel.
        public var model: [UInt8]
        /// Data/com.apple.CoreML/weights/weight.bin.
        public var weights: [UInt8]
        /// Manifest.json.
        public var manifest: [UInt8]
        /// All bytes.
        public var size: Int { model.count + weights.count + manifest.count }

        /// (path inside the package, bytes) of each file.
        public var files: [(path: String, bytes: [UInt8])] {
            [("Manifest.json", manifest), ("Data/com.apple.CoreML/model.mlmodel", model), ("Data/com.apple.CoreML/weights/weight.bin", weights)]
        }
    }

    /// The package for `header` and its loaded `network`. Deterministic.
    public static func export(header h: ModelHeader, network: Network, options: CoreMLExport.Options = .init(), precision: Precision = .float16) throws -> Package {
        let K = h.classes.count
        let g = CoreMLProgramGraph(network: network)
        g.networkPrecision = precision == .float16 ? .fp16 : .fp32
        let shape = try CoreMLExport.lower(h, into: g, options: options, probabilities: "probabilities") {
            .unsupportedInProgram(op: "Softmax", in: "the output", reason: $0)
        }
        guard let probabilities = g.variable("probabilities") else {
            throw CoreMLExport.ExportError.unsupportedInProgram(op: "Softmax", in: "the output", reason: "the probabilities have no variable")
        }
        // classify: the probabilities and the classes (a literal list of strings) → `label`
        // (a string) and `labelProbabilities` (a dictionary String → Double).
        var w = ProtobufWriter()
        w.string(1, "classify")
        w.message(2) { e in
            e.string(1, "probabilities")
            e.message(2) { $0.message(1) { $0.string(1, probabilities) } }
        }
        w.message(2) { e in
            e.string(1, "classes")
            e.message(2) { a in
                a.message(1) { b in
                    b.message(2) { v in
                        v.message(2) {  // ValueType: listType of K string scalars
                            $0.message(2) { l in
                                l.message(1) { CoreMLProgramGraph.tensorType(&$0, .string, []) }
                                l.message(2) { $0.message(1) { $0.int(1, K) } }
                            }
                        }
                        v.message(3) { iv in
                            iv.message(3) { list in
                                for c in h.classes { list.message(1) { CoreMLProgramGraph.stringValue(&$0, c) } }
                            }
                        }
                    }
                }
            }
        }
        w.message(3) { t in
            t.string(1, "label")
            t.message(2) { CoreMLProgramGraph.tensorType(&$0, .string, []) }
        }
        w.message(3) { t in
            t.string(1, "labelProbabilities")
            t.message(2) {
                $0.message(4) { d in
                    d.message(1) { CoreMLProgramGraph.tensorType(&$0, .string, []) }
                    d.message(2) { $0.message(1) { $0.int(1, 12) } }  // FLOAT64
                }
            }
        }
        w.message(5) { e in
            e.string(1, "name")
            e.message(2) { CoreMLProgramGraph.stringValue(&$0, "classify") }
        }
        let operations = g.operations + [w.bytes]

        var m = ProtobufWriter()
        m.int(1, specificationVersion)
        try CoreMLExport.describe(&m, h, inputShape: shape, options: options)
        m.message(502) { p in
            p.int(1, 1)  // Program.version
            p.message(2) { e in
                e.string(1, "main")
                e.message(2) { f in
                    f.message(1) { i in
                        i.string(1, "poses")
                        i.message(2) { CoreMLProgramGraph.tensorType(&$0, .fp32, shape) }
                    }
                    f.string(2, opset)
                    f.message(3) { e in
                        e.string(1, opset)
                        e.message(2) { b in
                            b.string(2, "labelProbabilities")
                            b.string(2, "label")
                            for o in operations { b.data(3, o) }
                        }
                    }
                }
            }
        }
        let model = m.bytes, weights = g.weights.bytes
        return Package(model: model, weights: weights, manifest: manifest(model: model, weights: weights))
    }

    /// Manifest.json: the two items (the model and its weights folder), identified by UUIDs
    /// made from the contents (so an export is deterministic), the model the root.
    static func manifest(model: [UInt8], weights: [UInt8]) -> [UInt8] {
        func uuid(_ tag: String, _ bytes: [UInt8]) -> String {
            var a = FNV1a64(), b = FNV1a64()
            a.mix(Array(tag.utf8) + bytes)
            b.mix(bytes + Array(tag.utf8))
            let hex = String(format: "%016llX%016llX", a.value, b.value)
            let c = Array(hex)
            return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20..<32]].map { String($0) }.joined(separator: "-")
        }
        let m = uuid("model", model), w = uuid("weights", weights)
        let text = """
            {
                "fileFormatVersion": "1.0.0",
                "itemInfoEntries": {
                    "\(m)": {
                        "author": "com.apple.CoreML",
                        "description": "CoreML Model Specification",
                        "name": "model.mlmodel",
                        "path": "com.apple.CoreML/model.mlmodel"
                    },
                    "\(w)": {
                        "author": "com.apple.CoreML",
                        "description": "CoreML Model Weights",
                        "name": "weights",
                        "path": "com.apple.CoreML/weights"
                    }
                },
                "rootModelIdentifier": "\(m)"
            }

            """
        return Array(text.utf8)
    }

    public struct WriteError: Error, CustomStringConvertible {
        public var path: String, reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// True when `path` is a folder holding a package's Manifest.json (one `replace` may replace).
    public static func isPackage(_ path: String) -> Bool {
        var folder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
            && FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("Manifest.json"))
    }

    /// Writes `package` as the folder `path`, whole or not at all: into a hidden temporary folder
    /// beside it, then renamed into place. An existing package at `path` is replaced only with
    /// `replacing` (moved aside, then removed once the new one is in place); anything else at
    /// `path` is refused.
    public static func write(_ package: Package, to path: String, replacing: Bool) throws {
        let fm = FileManager.default
        let url = URL(fileURLWithPath: path)
        let parent = url.deletingLastPathComponent(), name = url.lastPathComponent
        let exists = fm.fileExists(atPath: path) || (try? fm.destinationOfSymbolicLink(atPath: path)) != nil
        if exists {
            guard isPackage(path) else { throw WriteError(path: path, reason: "it exists and is not an ML package folder (no Manifest.json); choose another path") }
            guard replacing else { throw WriteError(path: path, reason: "it exists, and replacing it was not asked for") }
        }
        var folder: ObjCBool = false
        guard fm.fileExists(atPath: parent.path, isDirectory: &folder), folder.boolValue else {
            throw WriteError(path: path, reason: "the folder \(parent.path) does not exist; create it first")
        }
        let tag = UUID().uuidString.prefix(8)
        let temporary = parent.appendingPathComponent(".\(name).\(tag).tmp")
        do {
            for f in package.files {
                let file = temporary.appendingPathComponent(f.path)
                try fm.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(f.bytes).write(to: file)
            }
        } catch {
            try? fm.removeItem(at: temporary)
            throw WriteError(path: path, reason: "\(error.localizedDescription)")
        }
        var aside: URL? = nil
        if exists {
            let old = parent.appendingPathComponent(".\(name).\(tag).old.tmp")
            guard rename(path, old.path) == 0 else {
                let why = String(cString: strerror(errno))
                try? fm.removeItem(at: temporary)
                throw WriteError(path: path, reason: "cannot move the old package aside: \(why)")
            }
            aside = old
        }
        guard rename(temporary.path, path) == 0 else {
            let why = String(cString: strerror(errno))
            if let aside { _ = rename(aside.path, path) }
            try? fm.removeItem(at: temporary)
            throw WriteError(path: path, reason: why)
        }
        if let aside { try? fm.removeItem(at: aside) }
    }
}
