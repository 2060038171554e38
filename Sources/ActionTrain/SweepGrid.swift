import PoseCore

/// A sweep's grid file (`actiontrain sweep GRID`, docs/cli.md "sweep"): a JSON object of
///
///     {"config": {keys}, "grid": {"key": [values], ...}, "folds": 3, "seeds": 1}
///
/// or `"candidates": [{keys}, ...]` instead of `"grid"`: the fixed config keys, the candidates
/// (every combination of the grid's values, the first key varying slowest; or the listed
/// objects), and the folds and seeds of each. Read by `JSONDocument` (a key given twice is an
/// error, as is `8.0` for an integer), and bounded before anything is built: the grid's
/// candidates are counted (the product of its lists' lengths) and refused beyond
/// `maximumCandidates` or `maximumTrials`. What the config keys mean is the caller's: `check`
/// sees each object of config keys (the fixed ones, one grid value at a time, each listed
/// candidate) with its place (`config`, `grid`, `candidate 2`) and throws for a bad one.
public struct SweepGrid {
    public typealias Assignment = [JSONDocument.Member]
    public static let keys = ["config", "grid", "candidates", "folds", "seeds"]
    public static let maximumCandidates = 1_000
    public static let maximumFolds = 100
    public static let maximumSeeds = 100
    /// Candidates × folds × seeds.
    public static let maximumTrials = 10_000

    /// The fixed keys.
    public var config: [JSONDocument.Member] = []
    /// The keys each candidate sets, sorted by key.
    public var candidates: [Assignment] = []
    public var folds = 3
    public var seeds = 1

    public init(parsing bytes: [UInt8], check: (_ keys: [JSONDocument.Member], _ place: String) throws -> Void) throws {
        let object: [JSONDocument.Member]
        do {
            guard case .object(let o) = try JSONDocument.parse(bytes) else { throw SweepGridError.notAnObject }
            object = o
        } catch let e as JSONDocument.SyntaxError {
            throw SweepGridError.syntax(e)
        }
        func value(_ key: String) -> JSONDocument.Value? { JSONDocument.member(key, of: object) }
        for m in object where !Self.keys.contains(m.key) { throw SweepGridError.unknownKey(m.key) }
        if let c = value("config") {
            guard case .object(let members) = c else { throw SweepGridError.notConfigKeys("\"config\"") }
            try check(members, "\"config\"")
            config = members
        }
        func count(_ key: String, _ least: Int, _ most: Int) throws -> Int? {
            guard let v = value(key) else { return nil }
            guard case .int(let n) = v, n >= least, n <= most else { throw SweepGridError.badCount(key, least: least, most: most, got: JSONDocument.text(v)) }
            return n
        }
        folds = try count("folds", 2, Self.maximumFolds) ?? folds
        seeds = try count("seeds", 1, Self.maximumSeeds) ?? seeds
        /// Refuses `n` candidates (nil: more than an Int holds) beyond the bounds, before any is built.
        func checkCount(_ n: Int?, _ what: String) throws {
            let trials = n.flatMap { n -> Int? in
                let (t, overflow) = n.multipliedReportingOverflow(by: folds * seeds)
                return overflow ? nil : t
            }
            guard let n, let trials, n <= Self.maximumCandidates, trials <= Self.maximumTrials else {
                throw SweepGridError.tooLarge(what, candidates: n, folds: folds, seeds: seeds)
            }
        }
        switch (value("grid"), value("candidates")) {
        case (.object(let grid)?, nil) where !grid.isEmpty:
            let sorted = grid.sorted { $0.key < $1.key }
            var product: Int? = 1, sizes: [String] = []
            for m in sorted {
                guard case .array(let list) = m.value, !list.isEmpty else { throw SweepGridError.emptyList(m.key) }
                product = product.flatMap { p in
                    let (q, overflow) = p.multipliedReportingOverflow(by: list.count)
                    return overflow ? nil : q
                }
                sizes.append("\(list.count) \(m.key)")
            }
            try checkCount(product, "the grid (" + sizes.joined(separator: " x ") + ") makes")
            candidates = [[]]
            for m in sorted {
                guard case .array(let list) = m.value else { continue }
                let values = try list.map { v -> JSONDocument.Member in
                    let member = JSONDocument.Member(key: m.key, value: v)
                    try check([member], "grid")
                    return member
                }
                candidates = candidates.flatMap { c in values.map { c + [$0] } }  // the first key varies slowest
            }
        case (nil, .array(let list)?) where !list.isEmpty:
            try checkCount(list.count, "the list makes")
            candidates = try list.enumerated().map { k, v in
                guard case .object(let members) = v else { throw SweepGridError.notConfigKeys("candidate \(k + 1)") }
                try check(members, "candidate \(k + 1)")
                return members.sorted { $0.key < $1.key }
            }
        default:
            throw SweepGridError.neitherGridNorCandidates
        }
    }
}

/// What is wrong with a grid file (the caller names the file).
public enum SweepGridError: Error, Equatable, CustomStringConvertible {
    case syntax(JSONDocument.SyntaxError)
    case notAnObject
    case unknownKey(String)
    case notConfigKeys(String)
    case badCount(String, least: Int, most: Int, got: String)
    case emptyList(String)
    case tooLarge(String, candidates: Int?, folds: Int, seeds: Int)
    case neitherGridNorCandidates

    static let shape = "\"config\", \"grid\" or \"candidates\", \"folds\" and \"seeds\""

    public var description: String {
        switch self {
        case .syntax(let e): return "not a JSON object with \(Self.shape) (\(e))"
        case .notAnObject: return "not a JSON object with \(Self.shape)"
        case .unknownKey(let key): return "unknown key '\(key)'; a grid has \(Self.shape)"
        case .notConfigKeys(let place): return "\(place) must be an object of config keys"
        case .badCount(let key, let least, let most, let got): return "\"\(key)\" must be an integer from \(least) to \(most), got \(got)"
        case .emptyList(let key): return "grid key '\(key)' needs a non-empty list of values"
        case .tooLarge(let what, let n, let folds, let seeds):
            let count = n.map { "\($0) candidates" } ?? "more than \(Int.max) candidates"
            return "\(what) \(count) x \(folds) folds x \(seeds) seeds; a sweep takes at most \(SweepGrid.maximumCandidates) candidates and "
                + "\(SweepGrid.maximumTrials) trials: split it into several sweeps"
        case .neitherGridNorCandidates:
            return "give either \"grid\" (config keys, each with a list of values) or \"candidates\" (a list of objects of config keys)"
        }
    }
}
