import Foundation
import PoseCore

/// The native dataset format: JSON Lines, UTF-8 (docs/datasets.md).
///
/// Line 1 is the header; every further non-blank line is one sequence:
///
///     {"actiontrain": "poses", "version": 1, "skeleton": "vision-body-2d", "frameRate": 30,
///      "imageSize": [1920, 1080], "classes": ["squat", "other"]}
///     {"id": "clip-1", "label": "squat", "group": "subject-3", "split": "train",
///      "frames": [{"t": 0.0, "pose": {"nose": [412.5, 96.0, 0.91], "neck": [410.0, 150.2]}},
///                 {"t": 0.033, "pose": {}}]}
///
/// Points are `[x, y]` or `[x, y, confidence]` for 2D skeletons (image pixels, origin
/// top-left, y down) and `[x, y, z]` or `[x, y, z, confidence]` for 3D ones (metres).
/// Absent joints are omitted; an empty `pose` is a frame with nobody in view.
public enum NativeFormat {
    public static let formatName = "poses"
    public static let version = 1

    public static func read(_ path: String) throws -> Dataset {
        let bytes = try DatasetLoader.contents(of: path)
        return try parse(bytes, file: path)
    }

    public static func parse(_ bytes: [UInt8], file: String) throws -> Dataset {
        var lines: [(number: Int, range: Range<Int>)] = []
        var start = 0
        var number = 1
        for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "\n") {
            if i > start, !bytes[start..<i].allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) {
                lines.append((number, start..<i))
            }
            start = i + 1
            number += 1
        }
        guard let first = lines.first else { throw DatasetError.empty(file: file) }
        let header = try object(bytes, first.range, file: file, line: first.number)
        func headerError(_ why: String) -> DatasetError { .parse(file: file, line: first.number, reason: why) }
        guard header["actiontrain"] as? String == formatName else {
            throw headerError("the first line must be the header {\"actiontrain\": \"poses\", \"version\": 1, ...}")
        }
        guard let version = header["version"] as? Int, version == NativeFormat.version else {
            throw headerError("unsupported version \(header["version"] ?? "missing"); this reader knows version \(NativeFormat.version)")
        }
        let skeleton: Skeleton
        if let name = header["skeleton"] as? String {
            do { skeleton = try Skeleton.named(name) } catch let e as PoseError { throw headerError(e.description) }
        } else if let custom = header["skeleton"] as? [String: Any] {
            do {
                let data = try JSONSerialization.data(withJSONObject: custom)
                skeleton = try JSONDecoder().decode(Skeleton.self, from: data)
                try skeleton.validate()
            } catch let e as PoseError {
                throw headerError(e.description)
            } catch {
                throw headerError("the custom skeleton does not decode: \(error)")
            }
        } else {
            throw headerError("\"skeleton\" must be a built-in name or a schema object")
        }
        let frameRate = header["frameRate"] as? Double
        let imageSize = header["imageSize"] as? [Double]
        let declaredClasses = header["classes"] as? [String]

        var index: [String: Int] = [:]
        for (i, j) in skeleton.joints.enumerated() { index[j] = i }
        let D = skeleton.dimensions
        var sequences: [PoseSequence] = []
        for line in lines.dropFirst() {
            func fail(_ why: String) -> DatasetError { .parse(file: file, line: line.number, reason: why) }
            let obj = try object(bytes, line.range, file: file, line: line.number)
            guard let id = obj["id"] as? String ?? (obj["id"] as? Int).map(String.init) else {
                throw fail("a sequence needs an \"id\" string")
            }
            guard let frames = obj["frames"] as? [Any] else { throw fail("sequence '\(id)' needs a \"frames\" array") }
            let label = obj["label"] as? String
            var hasConfidence = false
            var parsed: [[PosePoint?]] = []
            var times: [Double] = []
            for (fi, frameAny) in frames.enumerated() {
                guard let frame = frameAny as? [String: Any], let pose = frame["pose"] as? [String: Any] else {
                    throw fail("sequence '\(id)' frame \(fi): each frame is {\"pose\": {joint: [x, y, ...]}}")
                }
                if let t = frame["t"] {
                    guard let t = t as? Double, t.isFinite else { throw fail("sequence '\(id)' frame \(fi): \"t\" must be a finite number of seconds") }
                    if let last = times.last, t < last { throw fail("sequence '\(id)' frame \(fi): timestamps go backwards (\(t) after \(last))") }
                    times.append(t)
                }
                var points = [PosePoint?](repeating: nil, count: skeleton.jointCount)
                for (name, value) in pose {
                    guard let j = index[name] else {
                        throw DatasetError.unknownJoint(file: file, line: line.number, joint: name, skeleton: skeleton.name)
                    }
                    guard let v = value as? [Double], v.count == D || v.count == D + 1 else {
                        throw fail("sequence '\(id)' frame \(fi) joint '\(name)': expected \(D) coordinates and an optional confidence")
                    }
                    guard v.allSatisfy(\.isFinite) else {
                        throw fail("sequence '\(id)' frame \(fi) joint '\(name)': NaN or infinite value; omit joints that were not seen")
                    }
                    let conf = v.count == D + 1 ? Float(v[D]) : nil
                    if conf != nil { hasConfidence = true }
                    points[j] = PosePoint(x: Float(v[0]), y: Float(v[1]), z: D == 3 ? Float(v[2]) : 0, confidence: conf)
                }
                parsed.append(points)
            }
            guard times.isEmpty || times.count == frames.count else {
                throw fail("sequence '\(id)': give \"t\" on every frame or on none")
            }
            var seq = PoseSequence(id: id, label: label, jointCount: skeleton.jointCount, dimensions: D, hasConfidence: hasConfidence)
            for (fi, p) in parsed.enumerated() { seq.appendFrame(p, time: times.isEmpty ? nil : times[fi]) }
            seq.group = obj["group"] as? String ?? (obj["group"] as? Int).map(String.init)
            seq.split = obj["split"] as? String
            seq.events = obj["events"] as? [Int] ?? []
            sequences.append(seq)
        }
        let dataset = Dataset(
            name: URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent, skeleton: skeleton,
            sequences: sequences, classes: declaredClasses, frameRate: frameRate, imageSize: imageSize)
        try dataset.validateLabels(file: file)
        return dataset
    }

    private static func object(_ bytes: [UInt8], _ range: Range<Int>, file: String, line: Int) throws -> [String: Any] {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(bytes[range]), options: [])
        } catch {
            throw DatasetError.parse(file: file, line: line, reason: "not valid JSON (each line must be one JSON object)")
        }
        guard let obj = value as? [String: Any] else {
            throw DatasetError.parse(file: file, line: line, reason: "expected a JSON object")
        }
        return obj
    }

    /// Writes a dataset in the native format. Coordinates are written with the shortest
    /// representation that reads back to the same Float.
    public static func write(_ d: Dataset, to path: String) throws {
        var out = ""
        out.reserveCapacity(1 << 20)
        let skeletonJSON: String
        if Skeleton.builtIn[d.skeleton.name] == d.skeleton {
            skeletonJSON = jsonString(d.skeleton.name)
        } else {
            let enc = JSONEncoder()
            enc.outputFormatting = [.sortedKeys]
            skeletonJSON = String(decoding: try enc.encode(d.skeleton), as: UTF8.self)
        }
        out += "{\"actiontrain\": \"poses\", \"version\": 1, \"skeleton\": \(skeletonJSON)"
        if let r = d.frameRate { out += ", \"frameRate\": \(r)" }
        if let s = d.imageSize { out += ", \"imageSize\": [\(s.map { "\($0)" }.joined(separator: ", "))]" }
        out += ", \"classes\": [\(d.classes.map(jsonString).joined(separator: ", "))]}\n"
        let J = d.skeleton.jointCount, D = d.skeleton.dimensions
        for s in d.sequences {
            out += "{\"id\": \(jsonString(s.id))"
            if let l = s.label { out += ", \"label\": \(jsonString(l))" }
            if let g = s.group { out += ", \"group\": \(jsonString(g))" }
            if let sp = s.split { out += ", \"split\": \(jsonString(sp))" }
            if !s.events.isEmpty { out += ", \"events\": [\(s.events.map(String.init).joined(separator: ", "))]" }
            out += ", \"frames\": ["
            for f in 0..<s.frameCount {
                if f > 0 { out += ", " }
                out += "{"
                if let t = s.timestamps?[f] { out += "\"t\": \(t), " }
                out += "\"pose\": {"
                var firstJoint = true
                for j in 0..<J where s.present[f * J + j] != 0 {
                    if !firstJoint { out += ", " }
                    firstJoint = false
                    out += "\(jsonString(d.skeleton.joints[j])): ["
                    for k in 0..<D {
                        if k > 0 { out += ", " }
                        out += "\(s.coordinates[(f * J + j) * D + k])"
                    }
                    if let c = s.confidence?[f * J + j] { out += ", \(c)" }
                    out += "]"
                }
                out += "}}"
            }
            out += "]}\n"
        }
        do {
            try out.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw DatasetError.cannotRead(file: path, reason: "cannot write: \(error.localizedDescription)")
        }
    }

    static func jsonString(_ s: String) -> String {
        var r = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": r += "\\\""
            case "\\": r += "\\\\"
            case "\n": r += "\\n"
            case "\r": r += "\\r"
            case "\t": r += "\\t"
            default:
                if u.value < 0x20 { r += String(format: "\\u%04x", u.value) } else { r.unicodeScalars.append(u) }
            }
        }
        return r + "\""
    }
}
