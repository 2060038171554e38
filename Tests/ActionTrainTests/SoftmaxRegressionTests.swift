import ActionRuntime
@testable import ActionTrain
import PoseCore
import TestSupport
import XCTest

/// The solver of linear heads: its gradient against finite differences, its optimum against
/// scikit-learn's on a fixed problem, optimality on random ones, and the row-space reduction
/// (`RowSpace`) against the problem it replaces.
final class SoftmaxRegressionTests: XCTestCase {
    /// scikit-learn's LogisticRegression on `fixed()` at λ = 0.01
    /// (scripts/softmax-regression-golden.py).
    enum Golden {
        static let weight: [Double] = [
            -0.113855044, 0.0470212406, 0.139011456, 0.0273503827, -0.124378436, 0.019317322, 0.0275043847, -0.0046026554, -0.029967163,
            -0.0114295142, 0.0945377219, -0.0745256253, -0.134408801, 0.00261678025, 0.13580795,
        ]
        static let bias: [Double] = [0.00753312549, 0.0147934821, -0.0223266075]
    }

    /// 12 rows, 5 features, 3 classes: the script's formulas.
    static func fixed() -> (x: [Float], labels: [Int32]) {
        let n = 12, d = 5
        var x = [Float](repeating: 0, count: n * d)
        for i in 0..<n {
            for j in 0..<d {
                let angle = 0.7 * Double(i) + 1.3 * Double(j)
                x[i * d + j] = Float(sin(angle) + 0.1 * Double(j))
            }
        }
        return (x, (0..<n).map { Int32(($0 * 7 + 3) % 3) })
    }

    static func random(rows n: Int, features d: Int, classes K: Int, seed: UInt64) -> (x: [Float], labels: [Int32]) {
        var g = SeededGenerator(seed: seed)
        let labels = (0..<n).map { Int32($0 % K) }
        // Features that carry some of the label, so that the optimum is not at 0.
        var x = [Float](repeating: 0, count: n * d)
        for i in 0..<(n * d) {
            let signal: Float = i % d == Int(labels[i / d]) % d ? 0.8 : 0
            x[i] = g.nextSymmetric(1) + signal
        }
        return (x, labels)
    }

    func testMatchesScikitLearnOnAFixedProblem() {
        let (x, labels) = Self.fixed()
        x.withUnsafeBufferPointer { p in
            let solver = SoftmaxRegression(x: p.baseAddress!, rows: 12, features: 5, labels: labels, classes: 3)
            let s = solver.rowWeights(classWeights: nil)
            // Logits are float32 products (`BLAS.gemm`): the gradient gets to about 1e-5 and
            // the weights, along this problem's flattest direction (curvature about λ), to 1e-4.
            let solution = solver.solve(s: s, lambda: 0.01, tolerance: 1e-7, maxIterations: 2000)
            XCTAssertLessThanOrEqual(solution.gradientNorm, 2e-5)
            let w = Array(solution.parameters[0..<15]), b = Array(solution.parameters[15...])
            for (i, (got, want)) in zip(w, Golden.weight).enumerated() { assertClose(got, want, absolute: 2e-4, "W[\(i)]") }
            let mean = b.reduce(0, +) / 3
            for k in 0..<3 { assertClose(b[k] - mean, Golden.bias[k], absolute: 2e-4, "b[\(k)]") }
            // No higher than scikit-learn's optimum, which it is.
            var scratch = [Double](repeating: 0, count: solver.parameterCount)
            let theirs = solver.objective(Golden.weight + Golden.bias, gradient: &scratch, s: s, lambda: 0.01)
            XCTAssertLessThanOrEqual(solution.objective, theirs + 1e-7)
            XCTAssertLessThanOrEqual(scratch.reduce(0) { max($0, abs($1)) }, 2e-5, "scikit-learn's solution is the optimum here too")
        }
    }

    /// The analytic gradient against central differences of the objective, with row weights
    /// (one row left out) and class weights.
    func testGradientMatchesFiniteDifferences() {
        let n = 9, d = 4, K = 3
        let (x, labels) = Self.random(rows: n, features: d, classes: K, seed: 3)
        x.withUnsafeBufferPointer { p in
            let solver = SoftmaxRegression(x: p.baseAddress!, rows: n, features: d, labels: labels, classes: K)
            let s = solver.rowWeights(classWeights: [1, 2, 0.5]) { $0 != 4 }
            XCTAssertEqual(s[4], 0)
            assertClose(s.reduce(0, +), 1, absolute: 1e-12)
            var g = SeededGenerator(seed: 7)
            let theta = (0..<solver.parameterCount).map { _ in Double(g.nextSymmetric(0.5)) }
            var gradient = [Double](repeating: 0, count: theta.count), scratch = gradient
            _ = solver.objective(theta, gradient: &gradient, s: s, lambda: 0.3)
            let h = 1e-3
            for i in theta.indices {
                var plus = theta, minus = theta
                plus[i] += h
                minus[i] -= h
                let numeric =
                    (solver.objective(plus, gradient: &scratch, s: s, lambda: 0.3) - solver.objective(minus, gradient: &scratch, s: s, lambda: 0.3))
                    / (2 * h)
                assertClose(gradient[i], numeric, absolute: 2e-4, relative: 2e-3, "parameter \(i)")
            }
        }
    }

    /// At the solution the gradient vanishes and no nearby point is lower.
    func testSolutionIsTheMinimum() {
        let n = 40, d = 30, K = 4
        let (x, labels) = Self.random(rows: n, features: d, classes: K, seed: 11)
        x.withUnsafeBufferPointer { p in
            let solver = SoftmaxRegression(x: p.baseAddress!, rows: n, features: d, labels: labels, classes: K)
            let s = solver.rowWeights(classWeights: nil)
            let solution = solver.solve(s: s, lambda: 0.01, maxIterations: 2000)
            XCTAssertLessThanOrEqual(solution.gradientNorm, 1e-5)
            XCTAssertGreaterThan(solution.iterations, 3)
            var g = SeededGenerator(seed: 5), scratch = [Double](repeating: 0, count: solver.parameterCount)
            for _ in 0..<20 {
                let moved = solution.parameters.map { $0 + Double(g.nextSymmetric(1e-2)) }
                XCTAssertGreaterThan(solver.objective(moved, gradient: &scratch, s: s, lambda: 0.01), solution.objective)
            }
            // A stronger penalty gives smaller weights.
            let strong = solver.solve(s: s, lambda: 1, start: solution.parameters)
            let norm = { (v: [Double]) in v[0..<(K * d)].reduce(0) { $0 + $1 * $1 } }
            XCTAssertLessThan(norm(strong.parameters), norm(solution.parameters) / 4)
        }
    }

    /// Solved over the rows' span (`RowSpace`) and lifted back, a problem with fewer rows than
    /// features has the optimum of the problem over the features themselves.
    func testRowSpaceSolvesTheSameProblem() throws {
        let n = 24, d = 60, K = 3
        var (x, labels) = Self.random(rows: n, features: d, classes: K, seed: 21)
        // Two repeated rows: the span has rank n − 2.
        for f in 0..<d {
            x[5 * d + f] = x[2 * d + f]
            x[9 * d + f] = x[2 * d + f]
        }
        try x.withUnsafeBufferPointer { p in
            let space = try XCTUnwrap(RowSpace(x: p.baseAddress!, rows: n, features: d))
            XCTAssertEqual(space.rank, n - 2)
            // X·Wᵀ = C·W'ᵀ for a lifted W'.
            var g = SeededGenerator(seed: 2)
            let small = (0..<(K * space.rank)).map { _ in Double(g.nextSymmetric(1)) }
            let lifted = space.lift(small, classes: K, x: p.baseAddress!)
            for i in 0..<n {
                for k in 0..<K {
                    var full = 0.0, reduced = 0.0
                    for f in 0..<d { full += lifted[k * d + f] * Double(x[i * d + f]) }
                    for j in 0..<space.rank { reduced += small[k * space.rank + j] * Double(space.coordinates[i * space.rank + j]) }
                    assertClose(full, reduced, absolute: 1e-4, relative: 1e-4, "row \(i), class \(k)")
                }
            }
            // The same optimum.
            let primal = SoftmaxRegression(x: p.baseAddress!, rows: n, features: d, labels: labels, classes: K)
            let s = primal.rowWeights(classWeights: nil)
            let direct = primal.solve(s: s, lambda: 0.02, tolerance: 1e-7, maxIterations: 3000)
            let reduced = space.coordinates.withUnsafeBufferPointer { c in
                SoftmaxRegression(x: c.baseAddress!, rows: n, features: space.rank, labels: labels, classes: K)
                    .solve(s: s, lambda: 0.02, tolerance: 1e-7, maxIterations: 3000)
            }
            assertClose(reduced.objective, direct.objective, absolute: 1e-7, relative: 1e-6)
            let w = space.lift(Array(reduced.parameters[0..<(K * space.rank)]), classes: K, x: p.baseAddress!)
            for i in 0..<(K * d) { assertClose(w[i], direct.parameters[i], absolute: 2e-4, relative: 2e-3, "W[\(i)]") }
        }
    }
}
