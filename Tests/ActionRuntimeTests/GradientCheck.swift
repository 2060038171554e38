@testable import ActionRuntime
import PoseCore
import XCTest

/// One analytic gradient value compared with its central difference.
struct GradientMismatch: CustomStringConvertible {
    var what: String  // "parameter layers.0.weight" or "input"
    var index: Int  // index inside that tensor
    var analytic: Double, numeric: Double
    var description: String { "\(what)[\(index)]: analytic \(analytic), numeric \(numeric)" }
}

/// Finite-difference gradient checker.
///
/// Objective: `L = Σ r ⊙ logits` with fixed random `r ∈ [−1, 1)`, so `dL/dlogits = r` and the
/// network's `backward(r)` gives `dL/dθ` and `dL/dx`. Each numeric derivative is the central
/// difference `(L(θ + h) − L(θ − h)) / 2h`, with `L` summed in Double from Float forwards.
///
/// Error budget, for h = 1e-2 on inputs and parameters of order 1:
/// - truncation `h²/6 · L'''` ≈ 2e-5 for smooth layers;
/// - Float rounding of the logits (≈ 1e-7 relative each) divided by 2h ≈ 1e-5 to 1e-4.
/// Measured worst absolute errors over this suite: about 1e-5 for piecewise-linear networks and
/// up to 2.5e-4 with GELU (inputs to ±3) or layerNorm (`GRADCHECK_VERBOSE=1` prints them), so
/// the default test `|a − n| ≤ 2e-3 + 2e-3·|n|` has a margin of about 8x, while a missing
/// term, a wrong sign or a gradient off by 1% on a value of order 1 fails (the checker's own
/// test shows it). The previous check (`|a − n| / max(1, |n|) ≤ 2e-2`) let 1% errors through.
struct GradientChecker {
    var absolute = 2e-3
    var relative = 2e-3
    var h: Float = 1e-2

    func isClose(_ a: Double, _ n: Double) -> Bool { abs(a - n) <= absolute + relative * abs(n) }

    /// Compares every parameter and input gradient of `net` at `x`; returns the mismatches and
    /// the worst absolute error seen. `trainingSeed` runs every forward in training mode with
    /// a fresh generator from that seed (so dropout draws the same mask each time).
    /// `backwardScale` multiplies `dL/dlogits` in the analytic pass only: 1 except in the
    /// checker's own test, which makes every analytic gradient wrong on purpose.
    func mismatches(net: Network, x inputX: [Float], batch: Int, r: [Float], trainingSeed: UInt64?, backwardScale: Float = 1)
        -> (mismatches: [GradientMismatch], worst: Double)
    {
        var x = inputX
        func makeMode() -> ForwardMode { trainingSeed.map { ForwardMode.training(seed: $0) } ?? .inference }
        func objective() -> Double {
            var mode = makeMode()
            return x.withUnsafeBufferPointer { p in
                let y = net.forward(p.baseAddress!, batch: batch, mode: &mode)
                var s = 0.0
                for i in r.indices { s += Double(y[i]) * Double(r[i]) }
                return s
            }
        }
        net.zeroGradients()
        var mode = makeMode()
        let dx: [Float] = x.withUnsafeBufferPointer { p in
            _ = net.forward(p.baseAddress!, batch: batch, mode: &mode)
            return r.map { $0 * backwardScale }.withUnsafeBufferPointer { rp in
                let d = net.backward(rp.baseAddress!, batch: batch, needInputGradient: true)!
                return Array(UnsafeBufferPointer(start: d, count: x.count))
            }
        }
        let analytic = Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount))
        var found: [GradientMismatch] = [], worst = 0.0
        func compare(_ what: String, _ i: Int, _ a: Float, _ numeric: Double) {
            worst = max(worst, abs(Double(a) - numeric))
            if !isClose(Double(a), numeric) { found.append(GradientMismatch(what: what, index: i, analytic: Double(a), numeric: numeric)) }
        }
        for t in net.tensors {
            for j in 0..<t.count {
                let i = t.offset + j, old = net.parameters[i]
                net.parameters[i] = old + h
                let up = objective()
                net.parameters[i] = old - h
                let down = objective()
                net.parameters[i] = old
                compare("parameter \(t.name)", j, analytic[i], (up - down) / (2 * Double(h)))
            }
        }
        for i in x.indices {
            let old = x[i]
            x[i] = old + h
            let up = objective()
            x[i] = old - h
            let down = objective()
            x[i] = old
            compare("input", i, dx[i], (up - down) / (2 * Double(h)))
        }
        return (found, worst)
    }
}

/// Builds `layers`, initialises them from `seed` (then adds U(±jitter) to every parameter, so
/// that e.g. layerNorm's gamma = 1 cannot hide a missing factor), and checks every gradient.
/// `x` defaults to U(±inputScale) values.
func checkGradients(
    layers: [LayerSpec], input: Shape, batch: Int, seed: UInt64 = 1, x: [Float]? = nil, inputScale: Float = 1,
    jitter: Float = 0, trainingSeed: UInt64? = nil, checker: GradientChecker = GradientChecker(),
    file: StaticString = #filePath, line: UInt = #line
) throws {
    let net = try Network(layers: layers, input: input)
    net.initialize(seed: seed)
    var g = SeededGenerator(seed: seed &+ 99)
    for i in 0..<net.parameterCount where jitter > 0 { net.parameters[i] += g.nextSymmetric(jitter) }
    let x = x ?? (0..<(batch * input.count)).map { _ in g.nextSymmetric(inputScale) }
    precondition(x.count == batch * input.count, "x size")
    let r = (0..<(batch * net.classCount)).map { _ in g.nextSymmetric(1) }
    let (found, worst) = checker.mismatches(net: net, x: x, batch: batch, r: r, trainingSeed: trainingSeed)
    if ProcessInfo.processInfo.environment["GRADCHECK_VERBOSE"] != nil {
        print("gradient check line \(line): \(net.parameterCount) parameters, \(x.count) inputs, worst |error| \(worst)")
    }
    for m in found.prefix(5) {
        XCTFail("\(m) (tolerance \(checker.absolute) + \(checker.relative)·|numeric|)", file: file, line: line)
    }
    if found.count > 5 { XCTFail("... and \(found.count - 5) more gradient mismatches", file: file, line: line) }
}
