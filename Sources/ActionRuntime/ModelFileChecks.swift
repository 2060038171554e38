import Foundation
import PoseCore

/// The header checks of docs/format.md section 2, steps 6 and 7: bounded JSON decoding, the
/// header's semantics, the shape pass over the layers with checked arithmetic against the
/// limits, and the tensor table's tiling.
extension ModelFile {
    /// Decodes the header JSON: with `HeaderJSON` when it accepts the header (what the writer
    /// produces), otherwise with `JSONDecoder` after bounding the nesting depth (a deeply
    /// nested header would otherwise recurse without bound), which gives the typed errors.
    static func decodeHeader(_ headerBytes: UnsafeRawBufferPointer) throws -> ModelHeader {
        if let header = HeaderJSON.decode(headerBytes) { return header }
        return try decodeHeaderWithFoundation(headerBytes)
    }

    /// The Codable path: the reference for `HeaderJSON`, and every error message.
    static func decodeHeaderWithFoundation(_ headerBytes: UnsafeRawBufferPointer) throws -> ModelHeader {
        var depth = 0, inString = false, escaped = false
        for b in headerBytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
            } else if b == 0x22 {
                inString = true
            } else if b == 0x5B || b == 0x7B {
                depth += 1
                guard depth <= Limits.jsonDepth else {
                    throw ModelFileError.limitExceeded(what: "the JSON nesting depth", value: depth, limit: Limits.jsonDepth)
                }
            } else if b == 0x5D || b == 0x7D {
                depth -= 1
            }
        }
        if let duplicate = HeaderJSON.duplicateKey(headerBytes) { throw ModelFileError.badHeader(duplicate) }
        do {
            return try JSONDecoder().decode(ModelHeader.self, from: Data(headerBytes))
        } catch let e as DecodingError {
            throw ModelFileError.badHeader(describe(e, header: headerBytes))
        } catch {
            throw ModelFileError.badHeader("the JSON does not decode: \(error)")
        }
    }

    /// A one-line account of a decoding error: where, and what. A preprocessing step that does
    /// not decode is named (the synthesized decoder only says it found the wrong keys).
    static func describe(_ error: DecodingError, header: UnsafeRawBufferPointer) -> String {
        func path(_ c: [CodingKey]) -> String {
            let p = c.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "the header" : String(p.drop(while: { $0 == "." }))
        }
        let context: DecodingError.Context
        var what: String
        switch error {
        case .keyNotFound(let key, let ctx):
            return "\(path(ctx.codingPath)) has no '\(key.stringValue)'"
        case .valueNotFound(let type, let ctx):
            return "\(path(ctx.codingPath)) is null, expected \(type)"
        case .typeMismatch(let type, let ctx):
            (context, what) = (ctx, "is not \(type): \(ctx.debugDescription)")
        case .dataCorrupted(let ctx):
            if ctx.codingPath.isEmpty {
                // Foundation says the same of a number its field's type cannot hold (1e99 or 3.5
                // for an integer, 1e39 for a float, 1e400 at all): find it before blaming the JSON.
                if let number = numberOutOfRange(header) { return number }
                return "the header is not valid JSON: \(ctx.debugDescription)"
            }
            (context, what) = (ctx, "is invalid: \(ctx.debugDescription)")
        @unknown default:
            return "\(error)"
        }
        let keys = context.codingPath.map(\.stringValue)
        if let s = keys.firstIndex(of: "steps"), s + 1 < keys.count, let k = context.codingPath[s + 1].intValue {
            // The step's own name, from a second (failure-path only) parse.
            let object = try? JSONSerialization.jsonObject(with: Data(header))
            let steps = ((object as? [String: Any])?["input"] as? [String: Any])?["steps"] as? [Any]
            let names = (steps.flatMap { k < $0.count ? $0[k] as? [String: Any] : nil })?.keys.sorted() ?? []
            what =
                "unknown preprocessing step \(names.map { "'\($0)'" }.joined(separator: ", ")) (\(what)); "
                + "this reader knows centre, scaleByTorso, divide, alignFacing and fillGaps"
            return "input.steps[\(k)]: \(what)"
        }
        return "\(path(context.codingPath)) \(what)"
    }

    /// The number of a header that is valid JSON but that its field cannot hold, as "path:
    /// what", or nil. A number beyond a double's range is found in the text; otherwise each
    /// number that is not a small integer (a fraction, or beyond 2^53) is set to 0 in turn,
    /// and the first whose change lets decoding get past it is the one (failure path only).
    static func numberOutOfRange(_ header: UnsafeRawBufferPointer) -> String? {
        if let huge = numberTokens(header).first(where: { !(Double($0)?.isFinite ?? true) }) {
            return "the number \(huge) is beyond the range of a double"
        }
        guard let root = try? JSONSerialization.jsonObject(with: Data(header)) else { return nil }
        var candidates: [(path: [Any], value: NSNumber)] = []
        func collect(_ v: Any, _ path: [Any]) {
            if let d = v as? [String: Any] {
                for k in d.keys.sorted() { collect(d[k]!, path + [k]) }
            } else if let a = v as? [Any] {
                for (i, x) in a.enumerated() { collect(x, path + [i]) }
            } else if let n = v as? NSNumber, !(v is Bool) {
                let d = n.doubleValue
                if d.rounded() != d || abs(d) >= 0x1p53 { candidates.append((path, n)) }
            }
        }
        collect(root, [])
        func replacing(_ v: Any, _ path: ArraySlice<Any>) -> Any {
            guard let first = path.first else { return 0 }
            if var d = v as? [String: Any], let k = first as? String {
                d[k] = replacing(d[k]!, path.dropFirst())
                return d
            }
            if var a = v as? [Any], let i = first as? Int {
                a[i] = replacing(a[i], path.dropFirst())
                return a
            }
            return v
        }
        // Huge numbers first (rarely legitimate), then fractions; at most 256 tries.
        let ordered = candidates.filter { abs($0.value.doubleValue) >= 0x1p53 } + candidates.filter { abs($0.value.doubleValue) < 0x1p53 }
        for c in ordered.prefix(256) {
            guard let changed = try? JSONSerialization.data(withJSONObject: replacing(root, c.path[...])) else { continue }
            do {
                _ = try JSONDecoder().decode(ModelHeader.self, from: changed)
            } catch DecodingError.dataCorrupted(let ctx) where ctx.codingPath.isEmpty {
                continue
            } catch {}
            let parts: [String] = c.path.map { key in (key as? Int).map { "[\($0)]" } ?? ".\(key)" }
            let field = String(parts.joined().drop(while: { $0 == "." }))
            let d = c.value.doubleValue
            return d.rounded() == d
                ? "\(field): the number \(c.value) is out of range for its field (an integer, or a 32-bit float)"
                : "\(field): the number \(c.value) is not an integer, which its field needs"
        }
        return nil
    }

    /// The number tokens of a JSON text, outside strings.
    static func numberTokens(_ text: UnsafeRawBufferPointer) -> [String] {
        var out: [String] = [], inString = false, escaped = false, token: [UInt8] = []
        for b in text {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            if (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2B || b == 0x2E || b == 0x65 || b == 0x45 {
                token.append(b)
                continue
            }
            if !token.isEmpty { out.append(String(decoding: token, as: UTF8.self)) }
            token = []
            if b == 0x22 { inString = true }
        }
        if !token.isEmpty { out.append(String(decoding: token, as: UTF8.self)) }
        return out
    }

    /// The `streaming` field (docs/format.md 3.4): a clip length only for `fit` windows, at
    /// most `Limits.inputTime` frames whose poses fit in the activation budget twice (a
    /// session keeps two clips), a frame rate in the window's range, and thresholds per class
    /// with `0 ≤ exit ≤ enter ≤ 1`, `enter > 0`; frame-level numbers (1.5) with a value per class,
    /// thresholds so, durations of 0 to 3600 s, a look-ahead of 0 to 60 s, and (1.7) a switch evidence of 0 to
    /// 3600 score-seconds.
    static func checkStreaming(_ st: ModelHeader.Streaming, classes K: Int, input: InputSpec) throws {
        func bad(_ why: String) -> ModelFileError { .badHeader("streaming: \(why)") }
        if let n = st.clipFrames {
            guard input.window.mode == .fit else { throw bad("clipFrames is for whole-clip (fit) windows; this model's are sliding") }
            guard n >= 1 && n <= Limits.inputTime else { throw bad("clipFrames \(n) must be 1 to \(Limits.inputTime)") }
            let values = 2 * n * input.skeleton.jointCount * input.skeleton.dimensions  // joints ≤ 2^16: no overflow
            guard values <= Limits.totalActivationValues else {
                throw ModelFileError.limitExceeded(what: "streaming.clipFrames x joints x dimensions x 2", value: values, limit: Limits.totalActivationValues)
            }
        }
        if let r = st.clipFrameRate, !WindowSpec.frameRates.contains(r) {
            throw bad("clipFrameRate \(r) must be \(WindowSpec.frameRates.lowerBound) to \(Int(WindowSpec.frameRates.upperBound)) frames per second")
        }
        guard (st.enter == nil) == (st.exit == nil) else { throw bad("enter and exit go together") }
        if let enter = st.enter, let exit = st.exit {
            guard enter.count == K && exit.count == K else { throw bad("enter and exit need one threshold per class (\(K)), got \(enter.count) and \(exit.count)") }
            for k in 0..<K where !(enter[k] > 0 && enter[k] <= 1 && exit[k] >= 0 && exit[k] <= enter[k]) {
                throw bad("class \(k): the thresholds need 0 <= exit <= enter <= 1 and enter > 0, got enter \(enter[k]), exit \(exit[k])")
            }
        }
        if let f = st.frames {
            func frames(_ why: String) -> ModelFileError { bad("frames: \(why)") }
            guard f.lookAhead > 0 && f.lookAhead <= 60 else { throw frames("lookAhead \(f.lookAhead) must be more than 0 and at most 60 seconds") }
            guard f.stillBelow >= 0 && f.stillBelow <= 1e6 else { throw frames("stillBelow \(f.stillBelow) must be 0 to 1e6") }
            if let v = f.switchEvidence, !(v >= 0 && v <= 3600) { throw frames("switchEvidence \(v) must be 0 to 3600 score-seconds") }
            for (name, values) in [
                ("enter", f.enter), ("exit", f.exit), ("hold", f.hold), ("leadIn", f.leadIn), ("leadOut", f.leadOut), ("minimumDuration", f.minimumDuration),
            ] where values.count != K {
                throw frames("\(name) needs one value per class (\(K)), got \(values.count)")
            }
            for k in 0..<K {
                guard f.enter[k] > 0 && f.enter[k] <= 1 && f.exit[k] >= 0 && f.exit[k] <= f.enter[k] else {
                    throw frames("class \(k): the thresholds need 0 <= exit <= enter <= 1 and enter > 0, got enter \(f.enter[k]), exit \(f.exit[k])")
                }
                for (name, v) in [("hold", f.hold[k]), ("leadIn", f.leadIn[k]), ("leadOut", f.leadOut[k]), ("minimumDuration", f.minimumDuration[k])]
                where !(v >= 0 && v <= 3600) {
                    throw frames("class \(k): \(name) \(v) must be 0 to 3600 seconds")
                }
            }
        }
    }

    /// The `calibration` field (docs/format.md 3.6): a known method and evidence, a positive
    /// finite temperature, at least one window, at least 2 folds out of fold, finite scores.
    static func checkCalibration(_ c: ModelHeader.Calibration) throws {
        func bad(_ why: String) -> ModelFileError { .badHeader("calibration: \(why)") }
        guard ModelHeader.Calibration.methods.contains(c.method) else { throw bad("unknown method '\(c.method)'") }
        guard ModelHeader.Calibration.evidences.contains(c.evidence) else { throw bad("unknown evidence '\(c.evidence)'") }
        guard c.temperature > 0 && c.temperature.isFinite else { throw bad("temperature must be positive and finite, got \(c.temperature)") }
        guard c.windows > 0 else { throw bad("windows must be positive, got \(c.windows)") }
        if let folds = c.folds, folds < 2 { throw bad("folds must be at least 2, got \(folds)") }
        for (name, v) in [("logLossBefore", c.logLossBefore), ("logLossAfter", c.logLossAfter), ("eceBefore", c.eceBefore), ("eceAfter", c.eceAfter)]
        where !(v >= 0 && v.isFinite) {
            throw bad("\(name) must be a finite number ≥ 0, got \(v)")
        }
    }

    /// The `poseStatistics` field (docs/format.md 3.5): one value per dimension, per joint and
    /// dimension, or per joint; every value finite, spreads, motion and confidences at least 0,
    /// shares of frames 0 to 1, at least one window.
    static func checkPoseStatistics(_ p: ModelHeader.PoseStatistics, skeleton: Skeleton) throws {
        func bad(_ why: String) -> ModelFileError { .badHeader("poseStatistics: \(why)") }
        let J = skeleton.jointCount, D = skeleton.dimensions
        guard p.windows >= 1 else { throw bad("windows must be at least 1, got \(p.windows)") }
        let arrays: [(String, [Double], Int, ClosedRange<Double>)] = [
            ("centreMean", p.centreMean, D, -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude),
            ("centreSpread", p.centreSpread, D, 0...Double.greatestFiniteMagnitude),
            ("offsetMean", p.offsetMean, J * D, -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude),
            ("offsetSpread", p.offsetSpread, J * D, 0...Double.greatestFiniteMagnitude),
            ("present", p.present, J, 0...1), ("confidence", p.confidence, J, 0...Double.greatestFiniteMagnitude),
            ("motion", p.motion, J, 0...Double.greatestFiniteMagnitude),
        ]
        for (name, values, count, range) in arrays {
            guard values.count == count else { throw bad("\(name) needs \(count) values (\(J) joints, \(D)D), got \(values.count)") }
            if let i = values.firstIndex(where: { !range.contains($0) }) {
                throw bad("\(name)[\(i)] is \(values[i]); it must be finite\(range.lowerBound == 0 ? " and at least 0" : "")\(range.upperBound == 1 ? " and at most 1" : "")")
            }
        }
    }

    /// Header semantics that need no network: format, classes, coordinates, input, limits,
    /// and the shapes the layers produce (checked arithmetic; docs/format.md 2.1 and 4).
    /// Returns how many tensors, at the head of the table, are the layers' data (format 1.8).
    @discardableResult
    static func validate(_ h: ModelHeader) throws -> Int {
        guard h.format == formatName else { throw ModelFileError.badHeader("format is '\(h.format)', expected '\(formatName)'") }
        guard !h.classes.isEmpty else { throw ModelFileError.badHeader("there are no classes") }
        guard h.classes.count <= Limits.classes else {
            throw ModelFileError.limitExceeded(what: "the number of classes", value: h.classes.count, limit: Limits.classes)
        }
        guard Set(h.classes).count == h.classes.count else { throw ModelFileError.badHeader("the class labels are not distinct") }
        let skeleton = h.input.skeleton
        guard skeleton.jointCount <= Limits.joints else {
            throw ModelFileError.limitExceeded(what: "the number of joints", value: skeleton.jointCount, limit: Limits.joints)
        }
        do { try h.input.validate() } catch { throw ModelFileError.badHeader("the input description is invalid: \(error)") }
        guard h.coordinateSystem == .init(units: skeleton.units) else {
            let c = h.coordinateSystem
            throw ModelFileError.badHeader(
                "coordinateSystem (units \(c.units.rawValue), origin \(c.origin), yAxis \(c.yAxis), sides \(c.sides)) "
                    + "does not match the skeleton's units '\(skeleton.units.rawValue)'")
        }
        let shape = h.inputShape
        guard shape.time >= 1, shape.channels >= 1 else {
            throw ModelFileError.badHeader("inputShape \(shape) must be positive")
        }
        guard shape.time <= Limits.inputTime else {
            throw ModelFileError.limitExceeded(what: "inputShape.time", value: shape.time, limit: Limits.inputTime)
        }
        guard shape.channels <= Limits.inputChannels else {
            throw ModelFileError.limitExceeded(what: "inputShape.channels", value: shape.channels, limit: Limits.inputChannels)
        }
        guard shape.time * shape.channels <= Limits.activationValues else {
            throw ModelFileError.limitExceeded(
                what: "inputShape.time x channels", value: shape.time * shape.channels, limit: Limits.activationValues)
        }
        // Joints are bounded, so channelsPerFrame cannot overflow.
        guard h.input.window.frames == shape.time, h.input.channelsPerFrame == shape.channels else {
            throw ModelFileError.badHeader(
                "inputShape \(shape) does not match the input description: \(h.input.window.frames) frames of \(h.input.channelsPerFrame) channels")
        }
        if let r = h.trainingFrameRate, !WindowSpec.frameRates.contains(r) {
            throw ModelFileError.badHeader(
                "trainingFrameRate \(r) must be \(WindowSpec.frameRates.lowerBound) to \(Int(WindowSpec.frameRates.upperBound)) frames per second")
        }
        if let st = h.streaming { try checkStreaming(st, classes: h.classes.count, input: h.input) }
        if let p = h.poseStatistics { try checkPoseStatistics(p, skeleton: h.input.skeleton) }
        if let c = h.calibration { try checkCalibration(c) }
        for (name, value) in h.provenance.metrics where !value.isFinite {
            throw ModelFileError.badHeader("provenance: metric '\(name)' is \(value); metrics must be finite")
        }
        guard h.tensors.count <= Limits.tensors else {
            throw ModelFileError.limitExceeded(what: "the number of tensors", value: h.tensors.count, limit: Limits.tensors)
        }
        let budget = ShapeBudget()
        let out = try inferShape(h.layers, input: shape, path: "layers", depth: 0, budget: budget)
        guard out.time == 1, out.channels == h.classes.count else {
            throw ModelFileError.badHeader(
                "the network gives \(out) per window; expected [1, \(h.classes.count)] (one logit per class)")
        }
        // The layers' data tensors (format 1.8) open the table, in layer order (docs/format.md 3.2).
        for (k, d) in budget.data.enumerated() {
            let found = k < h.tensors.count ? h.tensors[k] : nil
            guard let t = found, t.name == d.tensor.name, t.shape == d.tensor.shape, t.layout == d.tensor.layout else {
                throw ModelFileError.badTensor(
                    name: d.tensor.name,
                    reason: "\(d.layer) keeps its \(d.field) in this tensor, \(d.tensor.shape) \(d.tensor.layout), entry \(k) of the table "
                        + "(the layers' data come first); found " + (found.map { "'\($0.name)' \($0.shape) \($0.layout)" } ?? "no such entry"))
            }
        }
        var stored = 0, needed = budget.parameters
        for t in h.tensors {
            let (count, _) = try checkedCount(t)
            stored += count  // ≤ 4096 · 2^28: no overflow
        }
        for d in budget.data { needed += d.tensor.count }  // each checked against the limits, ≤ 4096 of them: no overflow
        guard stored == needed else {
            throw ModelFileError.badHeader(
                "the layers need \(needed) \(budget.data.isEmpty ? "parameter" : "parameter and data") values, the tensors hold \(stored)")
        }
        return budget.data.count
    }

    /// Running totals of the shape pass.
    final class ShapeBudget {
        var layers = 0
        var parameters = 0
        /// The layers' data tensors (`LayerShapes.data`, format 1.8) in layer order, full names,
        /// with the layer and field of each (for errors).
        var data: [(tensor: ParameterShape, layer: String, field: String)] = []
        /// Output values of every layer, plus conv1d's im2col rows, per window.
        var activations = 0
    }

    /// The output shape of `layers` for `input`, per docs/format.md section 4, with every
    /// product checked against the limits. Counts layers and parameter values.
    /// Tensor names start with `prefix` (`layers.` at the top level).
    static func inferShape(
        _ layers: [LayerSpec], input: Shape, path: String, depth: Int, budget: ShapeBudget, prefix: String = "layers."
    ) throws -> Shape {
        var s = input
        for (i, spec) in layers.enumerated() {
            let at = "\(path)[\(i)]", name = "\(at) (\(spec.typeName))", names = "\(prefix)\(i)."
            budget.layers += 1
            guard budget.layers <= Limits.layers else {
                throw ModelFileError.limitExceeded(what: "the number of layers", value: budget.layers, limit: Limits.layers)
            }
            let check = ShapeCheck { specs, input, branch in
                guard depth + 1 <= Limits.nestingDepth else {
                    throw ModelFileError.limitExceeded(what: "the layer nesting depth", value: depth + 1, limit: Limits.nestingDepth)
                }
                return try inferShape(
                    specs, input: input, path: "\(at).\(branch)", depth: depth + 1, budget: budget, prefix: "\(names)\(branch).")
            }
            let shapes: LayerShapes
            do {
                shapes = try spec.checkedShapes(input: s, check: check)
            } catch let e as LayerCheckError {
                if let (what, value, limit) = e.limit {
                    throw ModelFileError.limitExceeded(what: "\(name) \(what)", value: value, limit: limit)
                }
                throw ModelFileError.badHeader("\(name): \(e.reason)")
            }
            for p in shapes.parameters { budget.parameters += p.count }  // ≤ 4096 tensors · 2^28: no overflow
            for d in shapes.data { budget.data.append((ParameterShape(names + d.name, d.shape, layout: d.layout), name, d.name)) }
            s = shapes.output
            budget.activations += s.count + shapes.scratch  // each ≤ 2^26, ≤ 1024 layers: no overflow
            guard budget.activations <= Limits.totalActivationValues else {
                throw ModelFileError.limitExceeded(
                    what: "the activations of the layers up to \(name), per window,", value: budget.activations,
                    limit: Limits.totalActivationValues)
            }
        }
        return s
    }

    /// The activation values per window of `layers` on `input`: every layer's output (nested
    /// layers included) plus its scratch (graphConv's and conv1d's columns), as the shape pass
    /// counts them; nil when the layers do not fit `input` or the model file's limits.
    static func activationValues(_ layers: [LayerSpec], input: Shape) -> Int? {
        let budget = ShapeBudget()
        guard (try? inferShape(layers, input: input, path: "layers", depth: 0, budget: budget)) != nil else { return nil }
        return budget.activations
    }

    /// The per-window output shape of each top-level layer for `input` (for summaries).
    public static func layerOutputShapes(_ layers: [LayerSpec], input: Shape) throws -> [Shape] {
        let budget = ShapeBudget()
        var shape = input, shapes: [Shape] = []
        for (i, layer) in layers.enumerated() {
            shape = try inferShape([layer], input: shape, path: "layers[\(i)]", depth: 0, budget: budget)
            shapes.append(shape)
        }
        return shapes
    }

    /// Values in a tensor, with its dtype, rank and length checked.
    static func checkedCount(_ t: ModelHeader.Tensor) throws -> (values: Int, bytes: Int) {
        func bad(_ why: String) -> ModelFileError { .badTensor(name: t.name, reason: why) }
        guard t.dtype == "float32" else { throw bad("dtype '\(t.dtype)' is not float32") }
        guard (1...Limits.tensorRank).contains(t.shape.count) else {
            throw bad("rank \(t.shape.count) is not between 1 and \(Limits.tensorRank)")
        }
        var count = 1
        for d in t.shape {
            guard d >= 1 else { throw bad("shape \(t.shape) has a size below 1") }
            let (p, o) = count.multipliedReportingOverflow(by: d)
            guard !o, p <= Limits.tensorValues else {
                throw ModelFileError.limitExceeded(what: "values in tensor '\(t.name)'", value: o ? Int.max : p, limit: Limits.tensorValues)
            }
            count = p
        }
        guard t.length == count * 4 else { throw bad("length \(t.length) is not 4 x \(count) values of shape \(t.shape)") }
        return (count, count * 4)
    }

    /// The tiling rule (docs/format.md 1.4): tensors in order, each at the next multiple of 64
    /// after the previous one, the data section ending at the last one rounded up to 64.
    static func checkTiling(_ tensors: [ModelHeader.Tensor], dataLength: Int) throws {
        var expected = 0
        for t in tensors {
            let (_, bytes) = try checkedCount(t)
            guard t.offset == expected else {
                let why =
                    t.offset < expected
                    ? "offset \(t.offset) overlaps the previous tensor (expected \(expected))"
                    : "offset \(t.offset) leaves a gap (expected \(expected))"
                throw ModelFileError.badTensor(name: t.name, reason: why)
            }
            guard bytes <= dataLength - expected else {
                throw ModelFileError.badTensor(
                    name: t.name, reason: "bytes \(t.offset)..<\(t.offset + bytes) run past the end of the data section (\(dataLength) bytes)")
            }
            expected = align(expected + bytes)
        }
        guard expected == dataLength else {
            throw ModelFileError.badPreamble("the data section has \(dataLength) bytes but its tensors end at \(expected)")
        }
    }
}
