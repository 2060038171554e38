import Foundation
import PoseCore

/// Custom skeleton schemas as JSON (docs/datasets.md, "Custom skeletons"): a file given with
/// `--skeleton FILE`, or an object in the native header's `"skeleton"` field.
///
///     {"name": "my-rig-5", "dimensions": 2, "units": "pixels",
///      "joints": ["head", "leftHand", "rightHand", "leftFoot", "rightFoot"],
///      "mirrorPairs": [["leftHand", "rightHand"], ["leftFoot", "rightFoot"]],
///      "bones": [["head", "leftHand"], ["head", "rightHand"]],
///      "centre": ["head"], "torsoUpper": ["head"], "torsoLower": ["leftFoot", "rightFoot"]}
///
/// `name`, `joints` and `dimensions` are required. `units` defaults to `pixels` for 2D and
/// `metres` for 3D. `root` is accepted as another spelling of `centre`, `center` too; a single
/// joint may be given as a string instead of a one-element list. Unknown fields are errors
/// (a misspelt field would otherwise be silently ignored).
public enum SkeletonFile {
    static let knownFields: Set<String> = [
        "name", "joints", "dimensions", "units", "mirrorPairs", "bones", "centre", "center", "root", "torsoUpper",
        "torsoLower",
    ]

    /// A built-in skeleton name, or the path of a JSON schema file.
    public static func resolve(_ nameOrPath: String) throws -> Skeleton {
        if let s = Skeleton.builtIn(named: nameOrPath) { return s }
        if FileManager.default.fileExists(atPath: nameOrPath) { return try load(nameOrPath) }
        throw DatasetError.invalidValue(
            SourceLocation(file: nameOrPath), problem: "neither a built-in skeleton nor a schema file",
            fix: "use one of \(Skeleton.builtIn.keys.sorted().joined(separator: ", ")) or the path of a JSON schema")
    }

    /// Reads and validates a schema file.
    public static func load(_ path: String) throws -> Skeleton {
        try decode(try JSONValue.parse(file: path), at: SourceLocation(file: path))
    }

    /// Decodes and validates a schema object; errors name `at` and the field.
    public static func decode(_ value: JSONValue, at: SourceLocation) throws -> Skeleton {
        func fail(_ field: String, _ problem: String) -> DatasetError { .invalidSkeleton(at, field: field, problem: problem) }
        guard let obj = value.object else { throw fail("(schema)", "the schema must be a JSON object, not \(value.kind)") }
        for key in obj.keys.sorted() where !knownFields.contains(key) {
            throw fail(key, "unknown field; the fields are \(knownFields.sorted().joined(separator: ", "))")
        }
        guard let name = obj["name"]?.string else { throw fail("name", "required: a short identifier string") }
        guard let jointValues = obj["joints"]?.array else { throw fail("joints", "required: the ordered list of joint names") }
        var joints: [String] = []
        for (k, j) in jointValues.enumerated() {
            guard let s = j.string else { throw fail("joints", "entry \(k) is \(j.kind), not a joint name string") }
            joints.append(s)
        }
        guard let dimValue = obj["dimensions"] else { throw fail("dimensions", "required: 2 or 3") }
        guard let dimensions = dimValue.integer else { throw fail("dimensions", "must be the number 2 or 3, not \(dimValue.kind)") }
        var units: Skeleton.Units = dimensions == 3 ? .metres : .pixels
        if let u = obj["units"] {
            switch u.string {
            case "pixels": units = .pixels
            case "metres", "meters": units = .metres
            case "unitless": units = .unitless
            default: throw fail("units", "must be \"pixels\", \"metres\" or \"unitless\"")
            }
        }
        func names(_ field: String, _ v: JSONValue?) throws -> [String] {
            guard let v else { return [] }
            if let s = v.string { return [s] }
            guard let a = v.array else { throw fail(field, "must be a list of joint names, not \(v.kind)") }
            return try a.map { e in
                guard let s = e.string else { throw fail(field, "entries must be joint name strings, found \(e.kind)") }
                return s
            }
        }
        func pairs(_ field: String) throws -> [[String]] {
            guard let v = obj[field] else { return [] }
            guard let a = v.array else { throw fail(field, "must be a list of [joint, joint] pairs, not \(v.kind)") }
            return try a.map { try names(field, $0) }
        }
        let centreFields = ["centre", "center", "root"].filter { obj[$0] != nil }
        guard centreFields.count <= 1 else {
            throw fail(centreFields[1], "give only one of centre, center and root")
        }
        let skeleton = Skeleton(
            name: name, joints: joints, dimensions: dimensions, units: units,
            mirrorPairs: try pairs("mirrorPairs"), bones: try pairs("bones"),
            centre: try names(centreFields.first ?? "centre", centreFields.first.flatMap { obj[$0] }),
            torsoUpper: try names("torsoUpper", obj["torsoUpper"]), torsoLower: try names("torsoLower", obj["torsoLower"]))
        if let (field, problem) = skeleton.problems().first { throw fail(field, problem) }
        return skeleton
    }
}
