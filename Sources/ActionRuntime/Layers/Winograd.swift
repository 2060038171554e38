/// Winograd's minimal filtering F(m, r) for one-dimensional correlation (Cook–Toom), the
/// transforms `Conv1d` uses for stride-1, undilated kernels of 2 to 7 taps.
///
/// For an input tile `d` of α = m + r − 1 consecutive time steps and taps `g` (r values), the m
/// outputs `y[p] = Σ_k g[k]·d[p + k]` are
///
///     y = Aᵀ · ((G·g) ⊙ (Bᵀ·d))        Aᵀ [m, α], G [α, r], Bᵀ [α, α]
///
/// so a tile costs α multiplications instead of m·r. With channels, the elementwise product
/// becomes α independent matrix products over the channels, which is what the GEMMs do.
///
/// Construction (Toom–Cook at the points p₀ … p_{α−2} and ∞): `V_n` is the α × n matrix with
/// rows `[1, p, p², …, p^{n−1}]` for each finite point and `[0, …, 0, 1]` for ∞. Then
/// `Aᵀ = V_mᵀ`, `G = V_r` and `Bᵀ = (V_α⁻¹)ᵀ`. (Linear convolution of h (m values) and g is
/// `V_α⁻¹ · ((V_m·h) ⊙ (V_r·g))`; correlation is its transpose with respect to h.) The points
/// are 0, 1, −1, 2, −2, 1/2, −1/2, in that order, so α ≤ 8: with these small points float32
/// results stay within about 2× the rounding error of the direct sum (measured for F(4, 5) on
/// the reference convnet's shapes); larger α needs larger points and loses accuracy fast.
///
/// Each matrix is kept as its non-zero terms per row, and `apply` computes
/// `dst[row] (=, +=) Σ_c M[row, c] · src[c]` on rows of C channels, eight channels at a time.
/// A class, not a struct: a layer hands its transform to every forward call, and a struct of
/// six matrices of arrays was copied, retained and released array by array on each (3.8% of
/// the default model's batch-1 time in `perf`); a class is retained once.
final class Winograd: Sendable {
    let m: Int, r: Int, alpha: Int
    /// `Aᵀ [m, α]` (output transform), `A [α, m]` (its adjoint), `G [α, r]` (weights),
    /// `Gᵀ [r, α]`, `Bᵀ [α, α]` (input transform) and `B [α, α]` (its adjoint).
    let AT: Terms, A: Terms, G: Terms, GT: Terms, BT: Terms, B: Terms

    static let points: [Double] = [0, 1, -1, 2, -2, 0.5, -0.5]
    static let maxAlpha = points.count + 1

    init(m: Int, r: Int) {
        let alpha = m + r - 1
        precondition(m >= 1 && r >= 1 && alpha <= Winograd.maxAlpha, "Winograd F(\(m), \(r)) needs α ≤ \(Winograd.maxAlpha)")
        self.m = m
        self.r = r
        self.alpha = alpha
        func vandermonde(_ n: Int) -> [[Double]] {
            var rows = Winograd.points.prefix(alpha - 1).map { p in (0..<n).map { Winograd.pow(p, $0) } }
            rows.append((0..<n).map { $0 == n - 1 ? 1 : 0 })
            return rows
        }
        func transpose(_ a: [[Double]]) -> [[Double]] { (0..<a[0].count).map { j in a.map { $0[j] } } }
        let Vm = vandermonde(m), Vr = vandermonde(r), inverse = Winograd.invert(vandermonde(alpha))
        AT = Terms(transpose(Vm))
        A = Terms(Vm)
        G = Terms(Vr)
        GT = Terms(transpose(Vr))
        BT = Terms(transpose(inverse))
        B = Terms(inverse)
    }

    /// The output-tile size for a kernel of `r` taps and `outputTime` outputs: the m with
    /// α ≤ 8 that needs the fewest tile products `α·⌈To/m⌉` (ties: the smaller α), or nil when
    /// no F(m, r) with m ≥ 2 fits.
    static func tileSize(kernel r: Int, outputTime: Int) -> Int? {
        guard r >= 2, r + 1 <= maxAlpha, outputTime >= 2 else { return nil }
        var best: (m: Int, cost: Int)?
        for m in 2...(maxAlpha - r + 1) {
            let cost = (m + r - 1) * ((outputTime + m - 1) / m)
            if best == nil || cost < best!.cost { best = (m, cost) }
        }
        return best?.m
    }

    private static func pow(_ p: Double, _ n: Int) -> Double { (0..<n).reduce(1) { a, _ in a * p } }

    /// Gauss–Jordan inverse with partial pivoting, in Double (the matrices are at most 8 × 8
    /// and well conditioned for the points above; the exact inverses are rationals).
    static func invert(_ matrix: [[Double]]) -> [[Double]] {
        let n = matrix.count
        var a = matrix, inv = (0..<n).map { i in (0..<n).map { $0 == i ? 1.0 : 0.0 } }
        for col in 0..<n {
            let pivot = (col..<n).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            a.swapAt(col, pivot)
            inv.swapAt(col, pivot)
            let d = a[col][col]
            for j in 0..<n {
                a[col][j] /= d
                inv[col][j] /= d
            }
            for i in 0..<n where i != col && a[i][col] != 0 {
                let f = a[i][col]
                for j in 0..<n {
                    a[i][j] -= f * a[col][j]
                    inv[i][j] -= f * inv[col][j]
                }
            }
        }
        return inv
    }

    /// A small matrix as the non-zero terms of each row: row `i` is terms `start[i] ..<
    /// start[i + 1]`, each a column and a coefficient.
    struct Terms {
        let rows: Int, columns: Int
        let start: [Int], column: [Int], coefficient: [Float]
        /// The matrix, row-major `[rows, columns]`, with the same zeros (for `PackedGEMM.transform`).
        let dense: [Float]

        init(_ matrix: [[Double]]) {
            rows = matrix.count
            columns = matrix[0].count
            dense = matrix.flatMap { row in row.map { abs($0) > 1e-12 ? Float($0) : 0 } }
            var start = [0], column: [Int] = [], coefficient: [Float] = []
            for row in matrix {
                for (j, v) in row.enumerated() where abs(v) > 1e-12 {
                    column.append(j)
                    coefficient.append(Float(v))
                }
                start.append(column.count)
            }
            self.start = start
            self.column = column
            self.coefficient = coefficient
        }

        /// The dense value at `(i, j)`, for tests.
        subscript(i: Int, j: Int) -> Float {
            for t in start[i]..<start[i + 1] where column[t] == j { return coefficient[t] }
            return 0
        }
    }

    /// How `apply` treats the destination rows.
    enum Mode {
        case assign, accumulate
        /// Start every destination row from this row of C values (a bias).
        case start(UnsafePointer<Float>)
    }

    /// `dst[i] (=, +=) Σ_{c ∈ columns} M[i, c] · src[c]` for rows `i ∈ rows`, where `dst[i]` is
    /// the C values at `dst + (i − rows.lowerBound)·dstStride` and `src[c]` the C values at
    /// `src + (c − columns.lowerBound)·srcStride`. Terms outside `columns` are skipped (they
    /// multiply zero padding). Each output value sums its terms in column order, every product
    /// and sum rounded on its own: `PackedGEMM.exactTransform` on the dense matrix (C, 8 or 16
    /// channels at a time, each block's source rows loaded once for every output row; zero
    /// coefficients skipped, as they have no terms), the bits of `applyReference`.
    static func apply(
        _ M: Terms, rows: Range<Int>, columns: Range<Int>, src: UnsafePointer<Float>, srcStride: Int,
        dst: UnsafeMutablePointer<Float>, dstStride: Int, channels C: Int, mode: Mode
    ) {
        let (code, start): (Int32, UnsafePointer<Float>?) =
            switch mode {
            case .assign: (0, nil)
            case .accumulate: (1, nil)
            case .start(let s): (2, s)
            }
        M.dense.withUnsafeBufferPointer { dense in
            PackedGEMM.exactTransform(
                rows: rows.count, cols: columns.count, m: dense.baseAddress! + rows.lowerBound * M.columns + columns.lowerBound,
                ldm: M.columns, src: src, srcStride: srcStride, mode: code, start: start, dst: dst, dstStride: dstStride, channels: C)
        }
    }

    /// `apply` in Swift (SIMD8), the reference the tests hold the C kernels to.
    static func applyReference(
        _ M: Terms, rows: Range<Int>, columns: Range<Int>, src: UnsafePointer<Float>, srcStride: Int,
        dst: UnsafeMutablePointer<Float>, dstStride: Int, channels C: Int, mode: Mode
    ) {
        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: M.columns) { sources in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: M.columns) { weights in
                for i in rows {
                    // This row's terms inside `columns`, as (source row, coefficient).
                    var n = 0
                    for t in M.start[i]..<M.start[i + 1] where columns.contains(M.column[t]) {
                        sources[n] = src + (M.column[t] - columns.lowerBound) * srcStride
                        weights[n] = M.coefficient[t]
                        n += 1
                    }
                    let out = dst + (i - rows.lowerBound) * dstStride
                    combine(sources.baseAddress!, weights.baseAddress!, n, into: out, channels: C, mode: mode)
                }
            }
        }
    }

    /// `out[j] (=, +=) Σ_t weights[t] · sources[t][j]` for `j < C`: 32 channels at a time in
    /// four independent 8-wide accumulators, then 8 at a time, then one by one.
    @inline(__always)
    private static func combine(
        _ sources: UnsafeMutablePointer<UnsafePointer<Float>>, _ weights: UnsafeMutablePointer<Float>, _ n: Int,
        into out: UnsafeMutablePointer<Float>, channels C: Int, mode: Mode
    ) {
        typealias V8 = SIMD8<Float>
        @inline(__always) func load(_ p: UnsafePointer<Float>) -> V8 { UnsafeRawPointer(p).loadUnaligned(as: V8.self) }
        @inline(__always) func start(_ j: Int) -> V8 {
            switch mode {
            case .assign: return .zero
            case .accumulate: return load(out + j)
            case .start(let s): return load(s + j)
            }
        }
        @inline(__always) func store(_ v: V8, _ j: Int) { UnsafeMutableRawPointer(out + j).storeBytes(of: v, as: V8.self) }
        var j = 0
        while j + 32 <= C {
            var a0 = start(j), a1 = start(j + 8), a2 = start(j + 16), a3 = start(j + 24)
            for t in 0..<n {
                let w = weights[t], s = sources[t] + j
                a0 += w * load(s)
                a1 += w * load(s + 8)
                a2 += w * load(s + 16)
                a3 += w * load(s + 24)
            }
            store(a0, j)
            store(a1, j + 8)
            store(a2, j + 16)
            store(a3, j + 24)
            j += 32
        }
        while j + 8 <= C {
            var a = start(j)
            for t in 0..<n { a += weights[t] * load(sources[t] + j) }
            store(a, j)
            j += 8
        }
        while j < C {
            var a: Float
            switch mode {
            case .assign: a = 0
            case .accumulate: a = out[j]
            case .start(let s): a = s[j]
            }
            for t in 0..<n { a += weights[t] * sources[t][j] }
            out[j] = a
            j += 1
        }
    }
}
