import PoseCore

/// Why an op cannot be lowered to a Core ML format (a NeuralNetwork layer or an ML Program op).
struct CoreMLLoweringRefusal: Error { var reason: String }

/// What both Core ML lowerings (`CoreMLGraph`, `CoreMLProgramGraph`) read of an op's attributes.
extension Dictionary where Key == String, Value == GraphAttribute {
    func ints(_ key: String) -> [Int]? {
        switch self[key] {
        case .ints(let v): return v
        case .int(let v): return [v]
        default: return nil
        }
    }

    func int(_ key: String, default d: Int) -> Int {
        if case .int(let v) = self[key] { return v }
        return d
    }

    func float(_ key: String, default d: Float) -> Float {
        if case .float(let v) = self[key] { return v }
        return d
    }
}

/// The shape arithmetic both Core ML lowerings share.
enum CoreMLShapes {
    /// `axis` in 0 ..< rank (negative counts from the end).
    static func axis(_ axis: Int, rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0 && a < rank else { throw CoreMLLoweringRefusal(reason: "axis \(axis) is outside a rank-\(rank) value") }
        return a
    }

    /// NumPy broadcasting of `shapes`.
    static func broadcast(_ shapes: [[Int]]) throws -> [Int] {
        let rank = shapes.map(\.count).max() ?? 0
        var out = [Int](repeating: 1, count: rank)
        for s in shapes {
            for (i, d) in s.enumerated() {
                let k = rank - s.count + i
                if out[k] == 1 {
                    out[k] = d
                } else if d != 1 && d != out[k] {
                    throw CoreMLLoweringRefusal(reason: "shapes \(shapes) do not broadcast")
                }
            }
        }
        return out
    }
}
