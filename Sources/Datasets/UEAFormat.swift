import Foundation
import PoseCore

/// The UEA/UCR multivariate `.ts` text format (sktime/aeon), as used by NATOPS.
///
/// After `@data`, each line holds the dimensions separated by `:`, each a comma-separated
/// series in time order, then the class label. Dimensions are grouped as joints with
/// `skeleton.dimensions` coordinates each (`x, y, z` of joint 0, then joint 1, ...).
/// A `?` or `NaN` value marks the joint absent in that frame.
public enum UEAFormat {
    /// Reads a `.ts` file. The skeleton defaults to NATOPS's when the problem is NATOPS.
    /// The split is taken from the file name (`_TRAIN` / `_TEST`) when present.
    public static func read(_ path: String, skeleton given: Skeleton? = nil, split: String? = nil) throws -> Dataset {
        let bytes = try DatasetLoader.contents(of: path)
        let text = String(decoding: bytes, as: UTF8.self)
        var problem = ""
        var classLabels: [String]? = nil
        var dimensions: Int? = nil
        var inData = false
        var rows: [(line: Int, fields: [Substring])] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") { continue }
            if !inData {
                let parts = line.split(separator: " ", omittingEmptySubsequences: true)
                switch parts.first?.lowercased() {
                case "@problemname": problem = parts.dropFirst().joined(separator: " ")
                case "@dimensions": dimensions = parts.count > 1 ? Int(parts[1]) : nil
                case "@classlabel":
                    if parts.count > 2, parts[1].lowercased() == "true" { classLabels = parts.dropFirst(2).map(String.init) }
                case "@data": inData = true
                default: break
                }
                continue
            }
            rows.append((lineNumber, Substring(line).split(separator: ":", omittingEmptySubsequences: false)))
        }
        guard inData else { throw DatasetError.parse(file: path, line: lineNumber, reason: "no @data line; is this a .ts file?") }
        guard !rows.isEmpty else { throw DatasetError.empty(file: path) }

        let skeleton: Skeleton
        if let given {
            skeleton = given
        } else if problem.uppercased() == "NATOPS" {
            skeleton = .natops
        } else {
            let dims = dimensions ?? (rows[0].fields.count - 1)
            skeleton = Skeleton(
                name: "\(problem.isEmpty ? "uea" : problem)-\(dims)", joints: (0..<dims).map { "channel\($0)" },
                dimensions: 2, units: .unitless)
            guard dims % 2 == 0 else {
                throw DatasetError.parse(file: path, line: rows[0].line, reason: "\(dims) dimensions do not group into joints; pass a skeleton")
            }
        }
        let J = skeleton.jointCount, D = skeleton.dimensions
        let expectedFields = J * D + 1
        let fileName = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let fileSplit = split ?? (fileName.uppercased().hasSuffix("_TRAIN") ? "train" : fileName.uppercased().hasSuffix("_TEST") ? "test" : nil)

        var sequences: [PoseSequence] = []
        for (k, row) in rows.enumerated() {
            func fail(_ why: String) -> DatasetError { .parse(file: path, line: row.line, reason: why) }
            guard row.fields.count == expectedFields else {
                throw fail("expected \(expectedFields - 1) dimensions and a label, found \(row.fields.count) ':'-separated fields")
            }
            let label = String(row.fields[expectedFields - 1]).trimmingCharacters(in: .whitespaces)
            if let classLabels, !classLabels.contains(label) {
                throw DatasetError.unknownLabel(file: path, record: "line \(row.line)", label: label, classes: classLabels)
            }
            var series: [[Float?]] = []
            for (c, field) in row.fields.dropLast().enumerated() {
                var values: [Float?] = []
                for v in field.split(separator: ",", omittingEmptySubsequences: false) {
                    let t = v.trimmingCharacters(in: .whitespaces)
                    if t == "?" || t.lowercased() == "nan" {
                        values.append(nil)
                    } else if let f = Float(t), f.isFinite {
                        values.append(f)
                    } else {
                        throw fail("dimension \(c + 1): '\(t)' is not a number")
                    }
                }
                if let first = series.first, first.count != values.count {
                    throw fail("dimension \(c + 1) has \(values.count) values, dimension 1 has \(first.count)")
                }
                series.append(values)
            }
            let T = series[0].count
            guard T > 0 else { throw fail("the series are empty") }
            var seq = PoseSequence(id: "\(fileName)-\(k)", label: label, jointCount: J, dimensions: D, hasConfidence: false)
            for t in 0..<T {
                var frame = [PosePoint?](repeating: nil, count: J)
                for j in 0..<J {
                    let vals = (0..<D).map { series[j * D + $0][t] }
                    if vals.allSatisfy({ $0 != nil }) {
                        frame[j] = PosePoint(x: vals[0]!, y: vals[1]!, z: D == 3 ? vals[2]! : 0)
                    }
                }
                seq.appendFrame(frame)
            }
            seq.split = fileSplit
            sequences.append(seq)
        }
        return Dataset(
            name: problem.isEmpty ? fileName : problem, skeleton: skeleton, sequences: sequences,
            classes: classLabels, frameRate: problem.uppercased() == "NATOPS" ? 20 : nil)
    }
}
