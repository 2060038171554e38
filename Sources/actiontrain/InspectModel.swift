import ActionRuntime
import Foundation
import PoseCore

/// `actiontrain inspect MODEL`: the header of a model file in human form (or as JSON), after
/// the file has passed every check of docs/format.md.
enum InspectModel {
    /// True for a `.atm` file or one that starts like a model file (`\x89ATM`), even if it is
    /// empty or damaged: `inspect` then reports what is wrong with the model instead of
    /// parsing it as data.
    static func isModelFile(path: String) -> Bool { ModelFile.looksLikeModelFile(path: path) }

    /// Describes the file, then refuses (exit 1) one that loads but whose outputs are not
    /// finite on a plain pose (weights that overflow float32), as eval, predict and export do.
    static func run(path: String, json: Bool, out: inout Output) throws {
        try describe(path: path, json: json, out: &out)
        do {
            try ActionModel(contentsOf: path).checkOutputs()
        } catch let e as ModelError {
            throw CLIError.failure("\(path): \(e); eval, predict and export refuse this model")
        }
    }

    /// The file's own format version, from its preamble (bytes 8-11: major and minor, each a
    /// little-endian UInt16), not the reader's: a 1.7 file is described as 1.7.
    static func fileVersion(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 12), data.count == 12 else { return nil }
        let b = [UInt8](data)
        return "\(UInt16(b[8]) | UInt16(b[9]) << 8).\(UInt16(b[10]) | UInt16(b[11]) << 8)"
    }

    static func describe(path: String, json: Bool, out: inout Output) throws {
        let (header, network) = try ModelFile.load(contentsOf: path)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            out.line(String(decoding: try encoder.encode(header), as: UTF8.self))
            return
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let input = header.input, skeleton = input.skeleton
        let version = fileVersion(path) ?? "\(ModelFile.majorVersion).\(ModelFile.minorVersion)"
        out.line("\(path): actiontrain model file \(version), \(grouped(size)) bytes")
        out.line("")
        out.line("classes (\(header.classes.count)), in logit order:")
        for (i, c) in header.classes.enumerated() { out.line("  \(i)  \(c)") }

        out.line("")
        out.line("input: what the runtime must feed the network")
        let c = header.coordinateSystem
        let convention =
            skeleton.units == .pixels
            ? "image pixels, origin top-left, y down" : "\(skeleton.units.rawValue), in the pose source's frame"
        out.line("  skeleton     \(skeleton.name): \(skeleton.jointCount) joints, \(skeleton.dimensions)D, \(convention); sides \(c.sides)")
        out.line("  joints       " + skeleton.joints.enumerated().map { "\($0.offset) \($0.element)" }.joined(separator: ", "))
        let w = input.window
        let rate =
            w.frameRate.map { "resampled to \(number($0)) fps first" }
            ?? "frames used as recorded" + (header.trainingFrameRate.map { " (training data: \(number($0)) fps)" } ?? "")
        let mode = w.mode == .sliding ? "sliding windows, padded with \(w.padding == .empty ? "empty poses" : "the last frame")" : "each sequence resampled to one window"
        out.line("  window       \(w.frames) frames, \(mode); \(rate)")
        if input.steps.isEmpty { out.line("  steps        none: coordinates used as given") }
        for (i, step) in input.steps.enumerated() {
            out.line((i == 0 ? "  steps        " : "               ") + "\(i + 1). " + describe(step))
        }
        let blocks = input.channelLayout.map { "\($0.block.rawValue) \($0.offset)..<\($0.offset + $0.width)" }
        out.line("  channels     \(input.channelsPerFrame) per frame: " + blocks.joined(separator: ", "))
        if let pairs = input.pairs {
            let shown = pairs.prefix(12).map { "\($0[0])-\($0[1])" }.joined(separator: ", ")
            out.line("  pairs        \(pairs.count) joint pairs (b − a): " + shown + (pairs.count > 12 ? ", ..." : ""))
        }
        out.line("  network input [\(header.inputShape.time), \(header.inputShape.channels)] per window (frames, channels), float32")
        if let ps = header.poseStatistics {
            out.line("  poses        statistics of \(ps.windows) training windows' raw poses, for export's parity check (docs/format.md 3.5)")
        }
        out.line("")
        out.line("streams: how predict --stream and --events cut and decide (docs/streaming.md)")
        let st = header.streaming
        if w.mode == .fit {
            if let n = st?.clipFrames {
                let seconds = st?.clipSeconds.map { String(format: " (%.2f s)", $0) } ?? ""
                let at = (w.frameRate ?? st?.clipFrameRate).map { "at \(number($0)) fps" } ?? "as pushed"
                out.line("  clip         \(n) frames \(at)\(seconds), the training clips' median, slid over the stream and resampled to the window")
            } else {
                out.line("  clip         not recorded (a file before format 1.3): give --clip-frames N to stream it")
            }
        }
        if let f = st?.frames {
            let K = header.classes.indices
            out.line("  events       from frames: each frame decided \(number(f.lookAhead)) s after it (--look-ahead), still at motion <= \(number(f.stillBelow)) body sizes/s")
            let evidence =
                f.switchEvidence.map { "\(number($0)) score-seconds, the file's" }
                ?? "\(number(FrameSegmenter.Settings.defaultSwitchEvidence)) score-seconds, the default (the file records none)"
            out.line("  switch       another action starts without rest once its lead adds up to \(evidence) (--switch-evidence)")
            out.line("  thresholds   frame scores enter/exit per class: " + K.map { "\(header.classes[$0]) \(number(f.enter[$0]))/\(number(f.exit[$0]))" }.joined(separator: ", "))
            out.line(
                "  durations    hold/lead-in/lead-out/minimum s per class: "
                    + K.map {
                        "\(header.classes[$0]) \(number(f.hold[$0]))/\(number(f.leadIn[$0]))/\(number(f.leadOut[$0]))/\(number(f.minimumDuration[$0]))"
                    }.joined(separator: ", "))
        }
        if let enter = st?.enter, let exit = st?.exit {
            let pairs = header.classes.indices.map { "\(header.classes[$0]) \(number(enter[$0]))/\(number(exit[$0]))" }
            let which = st?.frames == nil ? "thresholds  " : "windows     "
            out.line("  \(which) enter/exit per class\(st?.frames == nil ? "" : " of events from windows (--window-events)"), calibrated on the \(st?.calibration ?? "training") stream: " + pairs.joined(separator: ", "))
        } else {
            out.line("  thresholds   not recorded: enter 0.6, exit 0.4 for every class")
        }

        out.line("")
        if let c = header.calibration {
            let evidence = c.evidence == "validation" ? "\(c.windows) validation windows" : "out-of-fold predictions of \(c.windows) training windows (\(c.folds ?? 0) folds)"
            out.line(
                "probabilities: calibrated, logits divided by temperature \(number(c.temperature)) (already in the last layer; docs/format.md 3.6), fitted on \(evidence): "
                    + "ECE \(number(c.eceBefore)) → \(number(c.eceAfter)), log loss \(number(c.logLossBefore)) → \(number(c.logLossAfter))")
        } else {
            out.line("probabilities: not calibrated (no calibration recorded: a file before format 1.6, or fitted with calibration none)")
        }
        out.line("")
        out.line("network: \(header.layers.count) layers, \(grouped(network.parameterCount)) parameters")
        let shapes = try ModelFile.layerOutputShapes(header.layers, input: header.inputShape)
        out.line("  #   output        parameters  layer")
        for (i, (layer, shape)) in zip(header.layers, shapes).enumerated() {
            let params = network.tensors.filter { $0.name.hasPrefix("layers.\(i).") }.reduce(0) { $0 + $1.count }
            let count = params > 0 ? grouped(params) : "-"
            out.line("  " + pad("\(i)", 4) + pad(shape.description, 14) + String(repeating: " ", count: max(0, 10 - count.count)) + count + "  " + describe(layer))
        }
        out.line("")
        out.line("tensors (\(header.tensors.count)), float32 little-endian:")
        let parameters = Set(network.tensors.map(\.name))
        for t in header.tensors {
            let data = parameters.contains(t.name) ? "" : " (layer data, docs/format.md 3.2)"
            out.line("  " + pad(t.name, 34) + pad("\(t.shape)", 16) + pad(t.layout, 28) + "offset \(t.offset)" + data)
        }
        out.line("")
        let p = header.provenance
        out.line("provenance")
        out.line("  tool         \(p.tool)")
        if let s = p.seed { out.line("  seed         \(s)") }
        if let d = p.datasetHash { out.line("  dataset      \(d)") }
        if let h = p.configHash { out.line("  config       \(h)") }
        for (k, v) in p.metrics.sorted(by: { $0.key < $1.key }) { out.line("  metric       " + pad(k, 20) + number(v)) }
        for (k, v) in p.notes.sorted(by: { $0.key < $1.key }) { out.line("  note         " + pad(k, 20) + v) }
    }

    static func describe(_ step: PreprocessingStep) -> String {
        switch step {
        case .centre(let joints, let perFrame):
            return "centre on the mean of \(joints.joined(separator: ", ")) " + (perFrame ? "per frame" : "over the window")
        case .scaleByTorso(let upper, let lower):
            return "divide by the median torso length (\(upper.joined(separator: ", ")) to \(lower.joined(separator: ", ")))"
        case .divide(let by):
            return "divide the axes by \(by.map { number(Double($0)) }.joined(separator: ", "))"
        case .fillGaps:
            return "fill each joint's gaps in the window: linear in time between its seen frames, the nearest seen value before the first and after the last (mask and confidence still say not seen)"
        case .alignFacing(let left, let right, let v):
            return "rotate about axis \(["x", "y", "z"][v]) so that \(left.joined(separator: ", ")) -> \(right.joined(separator: ", ")) points along +\(v == 0 ? "y" : "x")"
        }
    }

    static func describe(_ layer: LayerSpec) -> String { layer.kind.summary }

    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s.padding(toLength: n, withPad: " ", startingAt: 0) }

    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(format: "%.6g", v)
    }

    static func grouped(_ n: Int) -> String {
        let s = String(n)
        var out = ""
        for (i, ch) in s.enumerated() {
            if i > 0 && (s.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return out
    }
}
