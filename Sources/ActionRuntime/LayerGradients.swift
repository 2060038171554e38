/// Gradient bookkeeping shared by the layers: a bias gradient's row sums, and for the layers
/// that split a batch into parts on the BLAS threads (`Conv1d`, `GraphConv`) where each part
/// accumulates its gradients and their sum in part order, so that a fixed thread count gives
/// the same bits.
enum LayerGradients {
    /// `sums[c] += Σ_r rows[r, c]` over `count` rows of `width` values, in row order.
    @inline(__always)
    static func addColumnSums(_ rows: UnsafePointer<Float>, count: Int, width: Int, into sums: UnsafeMutablePointer<Float>) {
        for r in 0..<count {
            let row = rows + r * width
            for c in 0..<width { sums[c] += row[c] }
        }
    }

    /// Where batch part `p` accumulates its weight gradient (`count` values) and its bias
    /// gradient (`outputs` values): the network's `dWeight` and `dBias` for part 0 (unless
    /// `allPrivate`), else `buffer`, zeroed, holding both (part 0 keeps the network's `dBias`).
    static func partTargets(
        _ p: Int, buffer: Buffer, count: Int, outputs: Int, dWeight: UnsafeMutablePointer<Float>, dBias: UnsafeMutablePointer<Float>,
        allPrivate: Bool = false
    ) -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) {
        if p == 0 && !allPrivate { return (dWeight, dBias) }
        buffer.reserve(count + outputs)
        buffer.pointer.update(repeating: 0, count: count + outputs)
        return (buffer.pointer, p == 0 ? dBias : buffer.pointer + count)
    }

    /// `dst[i] += part(p)[i]` for `i < count` and parts `p = 1 ..< parts`, in part order.
    @inline(__always)
    static func addParts(_ parts: Int, count: Int, into dst: UnsafeMutablePointer<Float>, _ part: (Int) -> UnsafePointer<Float>) {
        for p in 1..<max(1, parts) {
            let src = part(p)
            for i in 0..<count { dst[i] += src[i] }
        }
    }
}
