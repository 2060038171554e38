/// The position (0-based) of the largest value, the first on ties; 0 when `values` is empty.
/// A NaN never wins (it compares false), unless it comes first. The package's one argmax: the
/// predicted class of a logit or probability row, and the best-scoring person of a frame.
@inlinable
public func argmax<C: Collection>(_ values: C) -> Int where C.Element: Comparable {
    guard var top = values.first else { return 0 }
    var best = 0
    for (k, v) in values.enumerated() where v > top {
        best = k
        top = v
    }
    return best
}
