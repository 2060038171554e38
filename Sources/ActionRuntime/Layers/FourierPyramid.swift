import Foundation
import PoseCore

/// A Fourier temporal pyramid (Wang et al. 2012): the magnitudes of the lowest frequencies of
/// every channel over 1, 2, 4, ... equal time segments, side by side:
/// `[time, channels] -> [1, channels · S · K]`, S = Σ levels, K = `coefficients`.
///
/// Shapes: B = batch, T = time, C = channels. The segments are temporalPyramidPool's: for each
/// level L (in order) and s < L, frames `⌊s·T/L⌋ ..< ⌊(s+1)·T/L⌋`, numbered k = 0 ..< S level
/// by level. For segment k of n frames (t from 0 at its start) and frequency f < K:
/// `a = Σ_t x_t cos(2π f t/n)`, `b = Σ_t x_t sin(2π f t/n)`, `y[b, (k·K + f)·C + c] = √(a² + b²)`
/// (segment-major, then frequency, then channel): numpy's `|rfft|` of the segment, whose
/// frequencies above ⌊n/2⌋ do not exist and give 0. The basis values are float32 roundings of
/// the double cos and sin of `2π·((f·t) mod n)/n`, with |v| < 1e-12 taken as 0 (so `b` is 0 at
/// f = 0 and f = n/2).
/// Backward: `dx_t += dy · (a cos(2π f t/n) + b sin(2π f t/n)) / y` (0 where y = 0).
///
/// Fast: the input is transposed once to `[T, B·C]`, then per segment one GEMM of its basis
/// `[2K', n]` (cos rows, then sin rows, K' = min(K, ⌊n/2⌋ + 1)) by its frames `[n, B·C]`;
/// backward one GEMM per segment with the basis transposed, accumulated over the levels.
/// Frozen (a loaded model), never OpenBLAS: each window's segments are read in place, the
/// cos and sin sums of a block of channels held in registers over the segment's frames and the
/// magnitudes written straight out (`PackedGEMM.fourierMagnitudes`), windows split over the
/// threads; a window's values do not depend on the batch it is in, the thread count or the
/// instruction set. (It replaced a transpose to `[B·C, T]` and a packed product per segment
/// whose 8 columns filled half a panel: docs/benchmarks.md, "Batch-1 latency of the default
/// model".)
final class FourierPyramid: PooledInputGradient {
    let shape: Shape
    let levels: [Int], coefficients: Int
    /// Per segment: its first frame, its length n, the frequencies K' it has, and its basis
    /// `[2K', n]` (row f: cos(2π f t/n); row K' + f: sin).
    private let segments: [(start: Int, length: Int, frequencies: Int, basis: [Float])]
    var spec: LayerSpec { .fourierPyramid(levels: levels, coefficients: coefficients) }
    var inputShape: Shape { shape }
    var outputShape: Shape { Shape(time: 1, channels: shape.channels * segments.count * coefficients) }
    private let xt = Buffer()  // [T, B·C], then the input gradient in the same layout
    private let ab = Buffer()  // [S, 2K, B·C]: a and b of each segment and frequency
    private let y = Buffer()  // [B, S·K·C]
    private let g = Buffer()  // [S, 2K, B·C]: dy·a/y and dy·b/y
    var dx = Buffer()  // [B, T, C]
    private var frozen = false
    /// Most parts a frozen forward's windows are split into; nil: `BLAS.threads`. For tests.
    var maxParts: Int?

    init(shape: Shape, levels: [Int], coefficients: Int) {
        self.shape = shape
        self.levels = levels
        self.coefficients = coefficients
        segments = TemporalPyramidPoolKind.segments(levels: levels, time: shape.time).map { start, end in
            let n = end - start, k = min(coefficients, n / 2 + 1)
            return (start, n, k, FourierPyramidKind.basis(length: n, frequencies: k))
        }
    }

    func setFrozen(_ frozen: Bool) { self.frozen = frozen }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        if frozen { return forwardFrozen(x, batch: batch) }
        let T = shape.time, C = shape.channels, BC = batch * C, K = coefficients, S = segments.count
        xt.reserve(T * BC)
        ab.reserve(S * 2 * K * BC)
        y.reserve(batch * S * K * C)
        let xt = xt.pointer, ab = ab.pointer, out = y.pointer
        for b in 0..<batch {
            for t in 0..<T { (xt + t * BC + b * C).update(from: x + (b * T + t) * C, count: C) }
        }
        for (k, s) in segments.enumerated() {
            s.basis.withUnsafeBufferPointer { basis in
                BLAS.gemm(
                    m: 2 * s.frequencies, n: BC, k: s.length, a: basis.baseAddress!, lda: s.length, b: xt + s.start * BC, ldb: BC,
                    c: ab + k * 2 * K * BC, ldc: BC)
            }
        }
        for b in 0..<batch {
            for (k, s) in segments.enumerated() {
                let F = s.frequencies
                for f in 0..<K {
                    let yf = out + (b * S + k) * K * C + f * C
                    guard f < F else {
                        yf.update(repeating: 0, count: C)
                        continue
                    }
                    let a = ab + (k * 2 * K + f) * BC + b * C, bs = ab + (k * 2 * K + F + f) * BC + b * C
                    for c in 0..<C { yf[c] = (a[c] * a[c] + bs[c] * bs[c]).squareRoot() }
                }
            }
        }
        return UnsafePointer(out)
    }

    /// The frozen forward: for window b and segment k, `y[b, k·K·C + f·C + c]` from the
    /// segment's frames `x[b, start ..< start + n, :]` in place; frequencies the segment does
    /// not have are 0.
    private func forwardFrozen(_ x: UnsafePointer<Float>, batch: Int) -> UnsafePointer<Float> {
        let T = shape.time, C = shape.channels, K = coefficients, S = segments.count
        y.reserve(batch * S * K * C)
        let out = y.pointer
        let parts = max(1, min(batch, maxParts ?? PackedGEMM.threads(forWork: batch * C * T * 2 * K)))
        BLAS.parallel(parts) { p in
            for b in (p * batch / parts)..<((p + 1) * batch / parts) {
                for (k, s) in segments.enumerated() {
                    let yk = out + (b * S + k) * K * C
                    s.basis.withUnsafeBufferPointer { basis in
                        PackedGEMM.fourierMagnitudes(
                            frequencies: s.frequencies, length: s.length, basis: basis.baseAddress!, src: x + (b * T + s.start) * C,
                            srcStride: C, dst: yk, dstStride: C, channels: C)
                    }
                    (yk + s.frequencies * C).update(repeating: 0, count: (K - s.frequencies) * C)
                }
            }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        precondition(!frozen, "FourierPyramid.backward on a frozen layer: thaw the network first")
        guard needInputGradient else { return nil }
        let T = shape.time, C = shape.channels, BC = batch * C, K = coefficients, S = segments.count
        g.reserve(S * 2 * K * BC)
        dx.reserve(batch * T * C)
        let ab = ab.pointer, grad = g.pointer, out = y.pointer, dxt = xt.pointer  // the input's copy is no longer needed
        for b in 0..<batch {
            for (k, s) in segments.enumerated() {
                for f in 0..<s.frequencies {
                    let o = (b * S + k) * K * C + f * C, yf = out + o, dyf = dy + o
                    let ia = (k * 2 * K + f) * BC + b * C, ib = (k * 2 * K + s.frequencies + f) * BC + b * C
                    for c in 0..<C {
                        let r = yf[c] > 0 ? dyf[c] / yf[c] : 0
                        grad[ia + c] = r * ab[ia + c]
                        grad[ib + c] = r * ab[ib + c]
                    }
                }
            }
        }
        dxt.update(repeating: 0, count: T * BC)
        for (k, s) in segments.enumerated() {
            s.basis.withUnsafeBufferPointer { basis in
                BLAS.gemm(
                    transposeA: true, m: s.length, n: BC, k: 2 * s.frequencies, a: basis.baseAddress!, lda: s.length,
                    b: grad + k * 2 * K * BC, ldb: BC, beta: 1, c: dxt + s.start * BC, ldc: BC)
            }
        }
        let dxp = dx.pointer
        for b in 0..<batch {
            for t in 0..<T { (dxp + (b * T + t) * C).update(from: dxt + t * BC + b * C, count: C) }
        }
        return UnsafePointer(dxp)
    }
}

/// `{"type": "fourierPyramid", "levels": [1, 2, 4], "coefficients": 4}`: the magnitudes of the
/// `coefficients` lowest frequencies of each channel over 1, 2, 4, ... equal time segments:
/// `[time, channels] -> [1, channels · Σ levels · coefficients]`.
public struct FourierPyramidKind: LayerKind {
    public static let typeName = "fourierPyramid"
    /// Segments per level, each from 1 to the input's time length; at most
    /// `TemporalPyramidPoolKind.maxLevels` levels.
    public var levels: [Int]
    /// Frequencies per segment (DC included), 1 ... `maxCoefficients`.
    public var coefficients: Int
    public static let maxCoefficients = 64
    public init(levels: [Int], coefficients: Int) {
        self.levels = levels
        self.coefficients = coefficients
    }
    public init(fields r: some LayerFieldReader) throws { self.init(levels: try r.ints("levels"), coefficients: try r.int("coefficients")) }
    public var fields: [(key: String, value: LayerField)] { [("levels", .ints(levels)), ("coefficients", .int(coefficients))] }
    public var summary: String { "fourierPyramid \(levels.map(String.init).joined(separator: ",")), \(coefficients) frequencies" }
    /// T = 4: segments of 4, 2 and 2 frames; 3 frequencies, of which the 2-frame segments have 2.
    public static func example(input: Shape) -> Self { Self(levels: [1, 2], coefficients: 3) }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        guard !levels.isEmpty else { throw check.invalid("levels must name at least one level") }
        let maxLevels = TemporalPyramidPoolKind.maxLevels
        guard levels.count <= maxLevels else { throw check.invalid("levels may list at most \(maxLevels) levels, got \(levels.count)") }
        for L in levels { try check.size("a level", L, max: input.time) }
        try check.size("coefficients", coefficients, max: Self.maxCoefficients)
        let segments = levels.reduce(0, +)
        let output = try check.product("outputs", [input.channels, segments, coefficients])
        // Per window: the transposed input, a and b of every segment and frequency (kept for
        // backward), the basis matrices.
        let kept = try check.product("values per window", [input.channels, segments, 2 * coefficients])
        return LayerShapes(output: Shape(time: 1, channels: output), scratch: input.count + kept)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        FourierPyramid(shape: input, levels: levels, coefficients: coefficients)
    }

    /// `Transpose` to `[B, C, T]`, one `MatMul` by the constant `[T, 2·S·K]` whose column s·K + f
    /// holds segment s's cos(2π f t/n) on its frames (0 elsewhere, and 0 for frequencies the
    /// segment lacks) and column S·K + s·K + f its sin; `Slice` into a and b, `Mul`, `Add`,
    /// `Sqrt` → `[B, C, S·K]`, `Transpose` to `[B, S·K, C]` and `Reshape` to `[B, 1, S·K·C]`.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let T = shape.time, K = coefficients
        let segments = TemporalPyramidPoolKind.segments(levels: levels, time: T)
        let SK = segments.count * K
        var m = [Float](repeating: 0, count: T * 2 * SK)  // [T, 2·S·K]
        for (k, (start, end)) in segments.enumerated() {
            let n = end - start, F = min(K, n / 2 + 1), basis = Self.basis(length: n, frequencies: F)
            for f in 0..<F {
                for t in 0..<n {
                    m[(start + t) * 2 * SK + k * K + f] = basis[f * n + t]
                    m[(start + t) * 2 * SK + SK + k * K + f] = basis[(F + f) * n + t]
                }
            }
        }
        let xt = g.node("Transpose", [x], attributes: [("perm", .ints([0, 2, 1]))], name: p + "to_bct")
        let ab = g.node("MatMul", [xt, g.floats(p + "basis", [T, 2 * SK], m)], name: p + "fourier")
        let a = g.slice(ab, axis: 2, 0, SK), b = g.slice(ab, axis: 2, SK, 2 * SK)
        let power = g.node("Add", [g.node("Mul", [a, a], name: p + "square"), g.node("Mul", [b, b], name: p + "square")], name: p + "power")
        let magnitude = g.node("Sqrt", [power], name: p + "magnitude")
        let y = g.node("Transpose", [magnitude], attributes: [("perm", .ints([0, 2, 1]))], name: p + "to_bfc")
        return g.node("Reshape", [y, g.int64s("shape.flatten", [0, 1, -1])], name: p + "flatten")
    }

    /// The basis of an n-frame segment for F frequencies, `[2F, n]` row-major: row f is
    /// `cos(2π·r/n)`, row F + f is `sin(2π·r/n)`, r = (f·t) mod n, in double then rounded to
    /// float32, values below 1e-12 in magnitude set to 0.
    static func basis(length n: Int, frequencies F: Int) -> [Float] {
        var out = [Float](repeating: 0, count: 2 * F * n)
        for f in 0..<F {
            for t in 0..<n {
                let angle = 2 * Double.pi * Double(f * t % n) / Double(n)
                let c = cos(angle), s = sin(angle)
                out[f * n + t] = abs(c) < 1e-12 ? 0 : Float(c)
                out[(F + f) * n + t] = abs(s) < 1e-12 ? 0 : Float(s)
            }
        }
        return out
    }
}

extension LayerSpec {
    /// The magnitudes of the lowest `coefficients` frequencies over 1, 2, 4, ... time segments.
    public static func fourierPyramid(levels: [Int], coefficients: Int) -> LayerSpec {
        LayerSpec(FourierPyramidKind(levels: levels, coefficients: coefficients))
    }
}
