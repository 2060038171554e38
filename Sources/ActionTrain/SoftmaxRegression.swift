import ActionRuntime
import Foundation

/// Multinomial logistic regression with an L2 penalty, solved to its optimum: the linear
/// classifier over fixed features that `ftp` members (and any network whose only parameters
/// are its last `linear`) are, fitted as the convex problem it is instead of by the optimiser.
///
/// Shapes: n = rows (windows), d = features, K = classes. `x [n, d]` row-major, `W [K, d]` (the
/// `linear` layer's weight layout), `b [K]`.
///
///     f(W, b) = Σ_i s_i (logsumexp_k z_ik − z_i,y_i) + (λ/2)·‖W‖²,   z_i = W x_i + b
///
/// with row weights `s_i ≥ 0` (class weights, normalised to sum to 1; a row of weight 0 is left
/// out, which is how a cross-validation fold holds rows out). The bias is not penalised. The
/// problem is strictly convex in W for λ > 0; L-BFGS (Nocedal & Wright, algorithm 7.4: memory 10,
/// backtracking Armijo line search) stops when the largest gradient component is below
/// `tolerance` or after `maxIterations`. Z = X·Wᵀ and the gradient Rᵀ·X are two GEMMs per
/// evaluation (`BLAS.gemm`, float32); the iterate and the L-BFGS pairs are Double, sums Double.
/// Deterministic: the same inputs and thread count give the same bits.
public final class SoftmaxRegression {
    public let rows: Int, features: Int, classes: Int
    private let x: UnsafePointer<Float>  // [n, d]
    private let labels: [Int32]  // [n]
    /// Parameters in one vector: W [K, d] then b [K].
    public var parameterCount: Int { classes * features + classes }

    private let w = Buffer()  // [K, d] float copy of the iterate's W
    private let z = Buffer()  // [n, K] logits, then the residual R
    private let gw = Buffer()  // [K, d]

    /// `x [rows, features]` must outlive the solver.
    public init(x: UnsafePointer<Float>, rows: Int, features: Int, labels: [Int32], classes: Int) {
        precondition(labels.count == rows && classes >= 2 && features >= 1)
        self.x = x
        self.rows = rows
        self.features = features
        self.labels = labels
        self.classes = classes
    }

    /// What `solve` found.
    public struct Solution: Sendable {
        /// W [K, d] then b [K].
        public var parameters: [Double]
        public var objective: Double
        public var iterations: Int
        /// The largest gradient component at the end.
        public var gradientNorm: Double
    }

    /// Row weights for `labels`: `classWeights[y_i]` (1 when nil) where `include(i)`, else 0,
    /// normalised to sum to 1.
    public func rowWeights(classWeights: [Float]?, include: (Int) -> Bool = { _ in true }) -> [Double] {
        var s = (0..<rows).map { include($0) ? Double(classWeights?[Int(labels[$0])] ?? 1) : 0 }
        let total = s.reduce(0, +)
        if total > 0 { for i in s.indices { s[i] /= total } }
        return s
    }

    /// The objective at `theta` (W then b), its gradient written to `gradient`, for row
    /// weights `s` and penalty `lambda`; the logits of every row (weight 0 or not) are left in
    /// `logits` when given.
    public func objective(
        _ theta: [Double], gradient: inout [Double], s: [Double], lambda: Double, logits: UnsafeMutablePointer<Float>? = nil
    ) -> Double {
        let n = rows, d = features, K = classes, KD = K * d
        w.reserve(KD)
        z.reserve(n * K)
        gw.reserve(KD)
        for i in 0..<KD { w.pointer[i] = Float(theta[i]) }
        // Z [n, K] = X [n, d] · Wᵀ.
        BLAS.gemm(transposeB: true, m: n, n: K, k: d, a: x, lda: d, b: w.pointer, ldb: d, c: z.pointer, ldc: K)
        var f = 0.0
        var gb = [Double](repeating: 0, count: K)
        for i in 0..<n {
            let zi = z.pointer + i * K
            for k in 0..<K { zi[k] += Float(theta[KD + k]) }
            logits.map { ($0 + i * K).update(from: zi, count: K) }
            let si = s[i]
            guard si > 0 else {
                for k in 0..<K { zi[k] = 0 }
                continue
            }
            var top = -Float.infinity
            for k in 0..<K { top = max(top, zi[k]) }
            var sum = 0.0
            for k in 0..<K { sum += Double(expf(zi[k] - top)) }
            let lse = Double(top) + log(sum)
            let y = Int(labels[i])
            f += si * (lse - Double(zi[y]))
            // R_i = s_i (p_i − e_y), in place of the logits.
            for k in 0..<K {
                let r = si * (exp(Double(zi[k]) - lse) - (k == y ? 1 : 0))
                gb[k] += r
                zi[k] = Float(r)
            }
        }
        // G_W [K, d] = Rᵀ [K, n] · X [n, d].
        BLAS.gemm(transposeA: true, m: K, n: d, k: n, a: z.pointer, lda: K, b: x, ldb: d, c: gw.pointer, ldc: d)
        var penalty = 0.0
        for i in 0..<KD {
            penalty += theta[i] * theta[i]
            gradient[i] = Double(gw.pointer[i]) + lambda * theta[i]
        }
        for k in 0..<K { gradient[KD + k] = gb[k] }
        return f + lambda / 2 * penalty
    }

    /// Minimises the objective for row weights `s` and penalty `lambda > 0` from `start` (W then
    /// b; zeros when nil).
    public func solve(
        s: [Double], lambda: Double, start: [Double]? = nil, tolerance: Double = 1e-5, maxIterations: Int = 500
    ) -> Solution {
        let p = parameterCount, memory = 10
        var theta = start ?? [Double](repeating: 0, count: p)
        var g = [Double](repeating: 0, count: p), gNew = g, trial = theta, direction = g
        // The last `memory` pairs s_k = θ_{k+1} − θ_k, y_k = g_{k+1} − g_k in a ring, newest at `newest`.
        var pairS = [[Double]](repeating: g, count: memory), pairY = pairS
        var rho = [Double](repeating: 0, count: memory), alpha = rho
        var stored = 0, newest = -1
        var f = objective(theta, gradient: &g, s: s, lambda: lambda)
        var iterations = 0
        while iterations < maxIterations && Self.largest(g) > tolerance {
            iterations += 1
            // Two-loop recursion: direction = −H·g, H the L-BFGS inverse Hessian.
            for i in 0..<p { direction[i] = -g[i] }
            for back in 0..<stored {
                let j = (newest - back + memory) % memory
                alpha[j] = rho[j] * Self.dot(pairS[j], direction)
                Self.axpy(-alpha[j], pairY[j], &direction)
            }
            let gamma = stored > 0 ? 1 / (rho[newest] * Self.dot(pairY[newest], pairY[newest])) : 1 / max(1, Self.dot(g, g).squareRoot())
            for i in 0..<p { direction[i] *= gamma }
            for forward in 0..<stored {
                let j = (newest - stored + 1 + forward + memory) % memory
                Self.axpy(alpha[j] - rho[j] * Self.dot(pairY[j], direction), pairS[j], &direction)
            }
            var slope = Self.dot(g, direction)
            if slope >= 0 {  // not a descent direction (rounding): start again from steepest descent
                stored = 0
                let scale = 1 / max(1, Self.dot(g, g).squareRoot())
                for i in 0..<p { direction[i] = -g[i] * scale }
                slope = Self.dot(g, direction)
            }
            // Backtracking until the Armijo condition holds.
            var step = 1.0, fNew = f, accepted = false
            for _ in 0..<40 {
                for i in 0..<p { trial[i] = theta[i] + step * direction[i] }
                fNew = objective(trial, gradient: &gNew, s: s, lambda: lambda)
                if fNew.isFinite && fNew <= f + 1e-4 * step * slope {
                    accepted = true
                    break
                }
                step /= 2
            }
            guard accepted else { break }  // no decrease is representable: the optimum, to rounding
            let j = (newest + 1) % memory
            var sy = 0.0, yy = 0.0
            for i in 0..<p {
                let si = trial[i] - theta[i], yi = gNew[i] - g[i]
                pairS[j][i] = si
                pairY[j][i] = yi
                sy += si * yi
                yy += yi * yi
            }
            if sy > 1e-12 * yy {  // curvature: keep the pair
                rho[j] = 1 / sy
                newest = j
                stored = min(stored + 1, memory)
            }
            swap(&theta, &trial)
            swap(&g, &gNew)
            let decrease = f - fNew
            f = fNew
            if decrease <= 1e-12 * max(1, abs(f)) { break }
        }
        return Solution(parameters: theta, objective: f, iterations: iterations, gradientNorm: Self.largest(g))
    }

    private static func largest(_ v: [Double]) -> Double { v.reduce(0) { max($0, abs($1)) } }

    private static func dot(_ a: [Double], _ b: [Double]) -> Double {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var s = 0.0
                for i in 0..<a.count { s += a[i] * b[i] }
                return s
            }
        }
    }

    /// `y += a·x`.
    private static func axpy(_ a: Double, _ x: [Double], _ y: inout [Double]) {
        x.withUnsafeBufferPointer { x in
            y.withUnsafeMutableBufferPointer { y in for i in 0..<x.count { y[i] += a * x[i] } }
        }
    }

    /// The logits `[n, K]` of every row for parameters `theta`.
    public func logits(_ theta: [Double]) -> [Float] {
        var logits = [Float](repeating: 0, count: rows * classes)
        var gradient = [Double](repeating: 0, count: parameterCount)
        let s = [Double](repeating: 0, count: rows)
        logits.withUnsafeMutableBufferPointer { _ = objective(theta, gradient: &gradient, s: s, lambda: 0, logits: $0.baseAddress!) }
        return logits
    }

    /// The weighted mean log loss `Σ_i s_i (logsumexp(t·z_i) − t·z_i,y_i)` of `logits [n, K]` scaled by `scale` (t).
    public static func logLoss(_ logits: [Float], scale t: Double, labels: [Int32], weights s: [Double], classes K: Int) -> Double {
        var total = 0.0
        for i in labels.indices where s[i] > 0 { total += s[i] * rowLogLoss(logits, row: i, scale: t, label: labels[i], classes: K) }
        return total
    }

    /// Row i's log loss `logsumexp(t·z_i) − t·z_i,y` of `logits [n, K]` scaled by `scale` (t).
    public static func rowLogLoss(_ logits: [Float], row i: Int, scale t: Double, label y: Int32, classes K: Int) -> Double {
        let z = logits[(i * K)..<((i + 1) * K)].map { t * Double($0) }
        let top = z.max()!
        return top + log(z.reduce(0) { $0 + exp($1 - top) }) - z[Int(y)]
    }

    /// The factor t > 0 that minimises the weighted log loss `Σ_i s_i (logsumexp(t·z_i) − t·z_i,y_i)`
    /// of `logits [n, K]` scaled by it (temperature scaling, Guo et al. 2017: 1/t is the
    /// temperature). The loss is convex in t; its derivative `Σ_i s_i (E_softmax(t·z_i)[z] − z_i,y_i)`
    /// grows with t, so bisection on log t finds its zero in [10⁻³, `upTo`] (default
    /// `largestScale`: no sharper than float32 holds).
    public static func logitScale(_ logits: [Float], labels: [Int32], weights s: [Double], classes K: Int, upTo: Double? = nil) -> Double {
        func slope(_ t: Double) -> Double {
            var total = 0.0
            for i in labels.indices where s[i] > 0 {
                let z = logits[(i * K)..<((i + 1) * K)].map(Double.init)
                let top = z.max()!
                let e = z.map { exp(t * ($0 - top)) }, sum = e.reduce(0, +)
                var expected = 0.0
                for k in 0..<K { expected += e[k] / sum * z[k] }
                total += s[i] * (expected - z[Int(labels[i])])
            }
            return total
        }
        var lo = log(1e-3), hi = log(upTo ?? largestScale(logits, rows: labels.indices.filter { s[$0] > 0 }, classes: K))
        if slope(exp(lo)) >= 0 { return exp(lo) }
        if slope(exp(hi)) <= 0 { return exp(hi) }
        for _ in 0..<60 {
            let mid = (lo + hi) / 2
            if slope(exp(mid)) < 0 { lo = mid } else { hi = mid }
        }
        return exp((lo + hi) / 2)
    }

    /// The widest a fitted scale may make the evidence's logits: 87.3, where `exp(−x)` leaves
    /// Float's normal range, so that a probability a model computes in float32 cannot change
    /// with a larger gap between two logits. Evidence whose windows are all right (separable)
    /// has no best scale (its log loss falls for ever as it sharpens), and 10³ on top of
    /// logits already sharp made a model's logits 10⁵ and more: past Float16 (an ML Program's
    /// overflow) and at float32 rounding of whole logits.
    public static let largestLogitGap = Double(-log(Float.leastNormalMagnitude))

    /// The upper bound of a fitted scale: 10³, or less where the evidence's widest gap between
    /// two logits of a window (`rows` of `logits [n, K]`) would pass `largestLogitGap`, but never
    /// below 1 (logits already that wide are not sharpened, nor softened for it).
    public static func largestScale(_ logits: [Float], rows: [Int], classes K: Int) -> Double {
        var gap: Float = 0
        for i in rows {
            let z = logits[(i * K)..<((i + 1) * K)]
            gap = max(gap, z.max()! - z.min()!)
        }
        return gap.isFinite && gap > 0 ? min(1e3, max(1, largestLogitGap / Double(gap))) : 1e3
    }
}
