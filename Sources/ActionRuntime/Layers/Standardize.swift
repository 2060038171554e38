import Foundation
import PoseCore

/// Per-channel standardisation with fixed statistics: `y[t, c] = (x[t, c] − mean[c]) · scale[c]`.
///
/// Shapes: B = batch, T = time, C = channels. `mean` and `scale` (`[C]` each) are data of the
/// layer (its description; a model file's data tensors since format 1.8), never trained;
/// training calibrates them once, before the first step (`StandardizeCalibration`): the mean
/// and 1/standard deviation of the layer's input over the training windows.
/// Backward: `dx[t, c] = dy[t, c] · scale[c]`.
final class Standardize: PooledInputGradient {
    let shape: Shape
    let mean: [Float], scale: [Float]
    var spec: LayerSpec { .standardize(mean: mean, scale: scale) }
    var inputShape: Shape { shape }
    var outputShape: Shape { shape }
    private let y = Buffer()
    var dx = Buffer()  // [B, T, C] each

    init(shape: Shape, mean: [Float], scale: [Float]) {
        self.shape = shape
        self.mean = mean
        self.scale = scale
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let R = batch * shape.time, C = shape.channels
        y.reserve(R * C)
        let out = y.pointer
        mean.withUnsafeBufferPointer { m in
            scale.withUnsafeBufferPointer { s in
                for r in 0..<R {
                    let xr = x + r * C, yr = out + r * C
                    for c in 0..<C { yr[c] = (xr[c] - m[c]) * s[c] }
                }
            }
        }
        return UnsafePointer(out)
    }

    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        guard needInputGradient else { return nil }
        let R = batch * shape.time, C = shape.channels
        dx.reserve(R * C)
        let out = dx.pointer
        scale.withUnsafeBufferPointer { s in
            for r in 0..<R {
                let dyr = dy + r * C, dxr = out + r * C
                for c in 0..<C { dxr[c] = dyr[c] * s[c] }
            }
        }
        return UnsafePointer(out)
    }
}

/// `{"type": "standardize", "mean": [C numbers], "scale": [C numbers]}`:
/// `y[t, c] = (x[t, c] − mean[c]) · scale[c]`. A config's network may hold it uncalibrated
/// (both lists empty: `LayerSpec.standardize`), which training fills in before the first step
/// (`StandardizeCalibration`); a model file never does.
///
/// A model file of format 1.8 keeps the statistics as the layer's data tensors `mean [C]` and
/// `scale [C]` and its header only `{"type": "standardize", "channels": C}` (`headerForm`: a
/// header of C numbers parsed twice cost more than the rest of a load); the reader puts them
/// back (`described(byData:)`), so a loaded network's spec holds them as before. Files before
/// 1.8 hold the lists in the header, and are read as they were.
public struct StandardizeKind: LayerKind {
    public static let typeName = "standardize"
    /// `[channels]` each; empty in an uncalibrated spec and in the header form.
    public var mean: [Float], scale: [Float]
    /// Only in the header form (format 1.8): the statistics of this many channels are the
    /// layer's data tensors `mean` and `scale`.
    public var channelsInData: Int?
    public init(mean: [Float], scale: [Float]) {
        self.mean = mean
        self.scale = scale
    }
    /// The header form over `channels` channels.
    init(channelsInData channels: Int) {
        self.init(mean: [], scale: [])
        channelsInData = channels
    }
    public init(fields f: some LayerFieldReader) throws {
        if f.contains("channels") {
            self.init(channelsInData: try f.int("channels"))
        } else {
            self.init(mean: try f.floats("mean"), scale: try f.floats("scale"))
        }
    }
    public var fields: [(key: String, value: LayerField)] {
        if let channels = channelsInData { return [("channels", .int(channels))] }
        return [("mean", .floats(mean)), ("scale", .floats(scale))]
    }
    public var summary: String {
        if let channels = channelsInData { return "standardize \(channels) channels (statistics in the data section)" }
        return isCalibrated ? "standardize \(mean.count) channels" : "standardize (not calibrated)"
    }
    /// Whether the statistics are there (an uncalibrated spec has both lists empty).
    public var isCalibrated: Bool { !(mean.isEmpty && scale.isEmpty) }

    /// The data tensors of the header form.
    static func dataShapes(channels: Int) -> [ParameterShape] {
        [ParameterShape("mean", [channels], layout: "[channels]"), ParameterShape("scale", [channels], layout: "[channels]")]
    }

    public func headerForm() -> (kind: Self, data: [(tensor: ParameterShape, values: [Float])])? {
        guard channelsInData == nil, isCalibrated else { return nil }
        let shapes = Self.dataShapes(channels: mean.count)
        return (Self(channelsInData: mean.count), [(shapes[0], mean), (shapes[1], scale)])
    }

    public func described(byData values: [String: [Float]]) -> Self? {
        guard channelsInData != nil, let mean = values["mean"], let scale = values["scale"] else { return nil }
        return Self(mean: mean, scale: scale)
    }

    public static func example(input: Shape) -> Self {
        let C = input.channels
        return Self(mean: (0..<C).map { Float($0) * 0.25 - 0.5 }, scale: (0..<C).map { 2 - Float($0) * 0.375 })
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        if let channels = channelsInData {
            try check.channels(channels, of: input)
            return LayerShapes(output: input, data: Self.dataShapes(channels: channels))
        }
        guard isCalibrated else {
            throw check.invalid("mean and scale are empty: the layer was never calibrated (training fills them in from its training windows)")
        }
        guard mean.count == input.channels, scale.count == input.channels else {
            throw check.invalid("mean has \(mean.count) values and scale \(scale.count); the input has \(input.channels) channels")
        }
        if let bad = mean.firstIndex(where: { !$0.isFinite }) { throw check.invalid("mean[\(bad)] is not finite (\(mean[bad]))") }
        if let bad = scale.firstIndex(where: { !$0.isFinite }) { throw check.invalid("scale[\(bad)] is not finite (\(scale[bad]))") }
        return LayerShapes(output: input)
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        guard channelsInData == nil else {
            throw LayerCheckError(reason: "its statistics are in the model file's data section and were not read")
        }
        return Standardize(shape: input, mean: mean, scale: scale)
    }

    /// `Sub` the mean, `Mul` by the scale (constants `[C]`, broadcast over batch and time).
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let centred = g.node("Sub", [x, g.floats(p + "mean", [mean.count], mean)], name: p + "centre")
        return g.node("Mul", [centred, g.floats(p + "scale", [scale.count], scale)], name: p + "scale")
    }
}

extension LayerSpec {
    /// `y = (x − mean)·scale` per channel; without arguments, uncalibrated (training calibrates it).
    public static func standardize(mean: [Float] = [], scale: [Float] = []) -> LayerSpec {
        LayerSpec(StandardizeKind(mean: mean, scale: scale))
    }
}

/// Calibrates the `standardize` layers of a layer list that training builds uncalibrated: each
/// gets the mean and 1/standard deviation (population) of its input over the training windows,
/// computed through the layers before it, which must have no parameters (`selectChannels`,
/// `fourierPyramid`, ...). A member of `averageProbabilities` is calibrated on its own path
/// (the layers before the container, then the member's own). Per channel c over the N rows
/// (windows × time steps) of the layer's input, in double: `mean = m + Σ(x − m)/N` and
/// `var = Σ(x − m)²/N − (Σ(x − m)/N)²` with m the first row's value; `scale = 1/√var`, or 1
/// where the standard deviation is 0 or below 1e-6 of the largest channel's.
///
/// Deterministic: the windows are read in order, 256 at a time, and the layers run with
/// OpenBLAS on one thread, so the values depend on the windows alone (not on `BLAS.threads`):
/// a resumed run recomputes the same ones.
public enum StandardizeCalibration {
    /// Windows per forward pass of the calibration.
    public static let chunk = 256

    /// Whether `specs` hold an uncalibrated `standardize` at any depth.
    public static func isNeeded(_ specs: [LayerSpec]) -> Bool {
        specs.contains { spec in
            if let s = spec.kind as? StandardizeKind { return !s.isCalibrated }
            return spec.kind.fields.contains { _, value in
                switch value {
                case .layers(let list): return isNeeded(list)
                case .layerLists(let lists): return lists.contains(where: isNeeded)
                default: return false
                }
            }
        }
    }

    /// `specs` (over inputs of `input`) with every uncalibrated `standardize` calibrated on
    /// `windows` windows, which `fill(range, features)` writes as `[range.count, input.count]`.
    /// Throws `ModelError.invalidLayer` when one cannot be calibrated (a layer with parameters
    /// before it, or a place other than a top-level list or an `averageProbabilities` member).
    public static func calibrate(
        _ specs: [LayerSpec], input: Shape, windows: Int, fill: (Range<Int>, UnsafeMutablePointer<Float>) -> Void
    ) throws -> [LayerSpec] {
        guard isNeeded(specs) else { return specs }
        guard windows > 0 else {
            throw ModelError.invalidLayer(layer: "standardize", reason: "there are no training windows to calibrate it on")
        }
        let threads = BLAS.threads
        BLAS.threads = 1
        defer { BLAS.threads = threads }
        let data = UnsafeMutablePointer<Float>.allocate(capacity: min(chunk, windows) * input.count)
        defer { data.deallocate() }
        func calibrated(_ list: [LayerSpec], path: [LayerSpec], at place: String) throws -> [LayerSpec] {
            var out: [LayerSpec] = []
            for (j, spec) in list.enumerated() {
                if let s = spec.kind as? StandardizeKind, !s.isCalibrated {
                    let (mean, scale) = try statistics(through: path + out, at: "\(place)\(j)")
                    out.append(.standardize(mean: mean, scale: scale))
                } else if let a = spec.kind as? any MemberCombinationKind {
                    let members = try a.members.enumerated().map { m, member in
                        try calibrated(member, path: path + out, at: "\(place)\(j).members.\(m).")
                    }
                    out.append(a.with(members: members))
                } else {
                    if isNeeded([spec]) {
                        throw ModelError.invalidLayer(
                            layer: "\(place)\(j) (\(spec.typeName))",
                            reason: "holds an uncalibrated standardize, which is calibrated only in a layer list or an averageProbabilities member")
                    }
                    out.append(spec)
                }
            }
            return out
        }
        /// The mean and scale of the output of `chain` over the windows.
        func statistics(through chain: [LayerSpec], at place: String) throws -> (mean: [Float], scale: [Float]) {
            var layers: [Layer] = [], shape = input
            for (i, spec) in chain.enumerated() {
                let layer = try makeLayer(spec, input: shape, path: "\(place).before.\(i)")
                guard layer.parameterCount == 0 else {
                    throw ModelError.invalidLayer(
                        layer: "\(place) (standardize)",
                        reason: "is calibrated through the layers before it, which must have no parameters; \(spec.typeName) has")
                }
                layers.append(layer)
                shape = layer.outputShape
            }
            let C = shape.channels
            var shift = [Double](repeating: 0, count: C), s1 = shift, s2 = shift
            var rows = 0
            var mode = ForwardMode.inference
            for start in stride(from: 0, to: windows, by: chunk) {
                let n = min(chunk, windows - start)
                fill(start..<(start + n), data)
                var x = UnsafePointer(data)
                for layer in layers { x = layer.forward(x, batch: n, mode: &mode) }
                if rows == 0 { for c in 0..<C { shift[c] = Double(x[c]) } }
                for r in 0..<(n * shape.time) {
                    let xr = x + r * C
                    for c in 0..<C {
                        let d = Double(xr[c]) - shift[c]
                        s1[c] += d
                        s2[c] += d * d
                    }
                }
                rows += n * shape.time
            }
            let N = Double(rows)
            let std = (0..<C).map { c in (max(0, s2[c] / N - (s1[c] / N) * (s1[c] / N))).squareRoot() }
            let largest = std.max() ?? 0
            let mean = (0..<C).map { Float(shift[$0] + s1[$0] / N) }
            let scale = std.map { s -> Float in s > 0 && s >= 1e-6 * largest ? Float(1 / s) : 1 }
            return (mean, scale)
        }
        return try calibrated(specs, path: [], at: "")
    }
}
