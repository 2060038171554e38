import ActionRuntime
import PoseCore

/// The preprocessing of docs/format.md 5.6-5.7 as ONNX operators, for an export that takes raw
/// poses (`ONNXExport.export(header:network:rawPoses: true)`, and every Core ML export, whose
/// writer lowers the same ops: `CoreMLExport`).
///
/// Shapes: B = batch, F = frames, J = joints, D = dimensions. The input `poses [B, F, J, D + 1]`
/// holds each joint's D coordinates and its confidence: a joint is present when the confidence
/// is above 0 (give 1 for sources without confidence, 0 for absent joints, whose coordinates
/// are then ignored). `P [B, F, J, 1]` is the presence (1 or 0), `X [B, F, J, D]` the
/// coordinates with absent joints 0. Each step is the Swift `FeatureExtractor`'s, with its
/// fallbacks as `Where`s; sums may run in another order (float32 rounding).
extension ONNXGraph {
    /// Emits the steps and channel blocks of `spec` on `poses`; returns the `[B, F, C]` network input.
    func preprocessing(_ spec: InputSpec, poses: String) throws -> String {
        let s = spec.skeleton, D = s.dimensions, F = spec.window.frames
        func indices(_ names: [String]) -> [Int] { names.map { s.index(of: $0)! } }  // validated with the header
        let confidence = slice(poses, axis: 3, D, D + 1)
        let seen = node("Cast", [node("Greater", [confidence, constant(0)], name: "pre.present")], attributes: [("to", .int(1))], name: "pre.present")
        var P = seen
        var X = node("Mul", [slice(poses, axis: 3, 0, D), P], name: "pre.coordinates")
        for (i, step) in spec.steps.enumerated() {
            switch step {
            case .fillGaps: (X, P) = fillGaps(X, P, frames: F, dimensions: D)
            case .centre(let joints, let perFrame): X = centre(X, P, indices(joints), perFrame: perFrame)
            case .scaleByTorso(let upper, let lower): X = scaleByTorso(X, P, indices(upper), indices(lower), frames: F)
            case .divide(let by): X = node("Div", [X, floats("pre.\(i).divisors", [D], by)], name: "pre.divide")
            case .alignFacing(let left, let right, let v): X = alignFacing(X, P, indices(left), indices(right), vertical: v)
            }
        }
        // Each block's own graph form (`ChannelBlockKind.graph`).
        let values = BlockGraphInput(coordinates: X, present: P, seen: seen, confidence: confidence, frames: F)
        let blocks = try spec.resolvedBlocks().map { $0.block.graph(self, values) }
        return blocks.count == 1 ? blocks[0] : node("Concat", blocks, attributes: [("axis", .int(2))], name: "pre.channels")
    }

    /// Fills each joint's gaps (the first step): for frame t, `p = max{s ≤ t : P[s]}` as
    /// `max_s P[s]·(s+1)·[s ≤ t] − 1` and `q = min{s ≥ t : P[s]}` as `F − max_s P[s]·(F−s)·[s ≥ t]`
    /// (a `[B, F, F, J]` product with a constant mask and a `ReduceMax`), the values at p and q by
    /// `GatherElements` over frames, and `c[p] + w·(c[q] − c[p])` with `w = (t − p)/(q − p)`
    /// (0 at a seen frame), `w = 1` before the first seen frame and 0 after the last. Returns
    /// the filled coordinates and presence (1 wherever the joint is seen in the window).
    private func fillGaps(_ X: String, _ P: String, frames F: Int, dimensions D: Int) -> (X: String, P: String) {
        let Ps = reshape(P, [0, 1, F, -1])  // [B, 1, F(s), J]
        var before = [Float](repeating: 0, count: F * F), after = before  // [F(t), F(s), 1]
        for t in 0..<F {
            for s in 0...t { before[t * F + s] = Float(s + 1) }
            for s in t..<F { after[t * F + s] = Float(F - s) }
        }
        func reach(_ weights: [Float], _ name: String) -> String {  // [B, F, J, 1]
            let product = node("Mul", [Ps, floats("pre.fill.\(name).\(F)", [F, F, 1], weights)], name: "pre.fill")
            let top = node("ReduceMax", [product], attributes: [("axes", .ints([2])), ("keepdims", .int(0))], name: "pre.fill")
            return reshape(top, [0, F, -1, 1])
        }
        let previous = reach(before, "before"), next = reach(after, "after")  // p + 1 and F − q, 0 for none
        let p = node("Sub", [atLeastOne(previous), constant(1)], name: "pre.fill")
        let q = node("Sub", [constant(Float(F)), atLeastOne(next)], name: "pre.fill")
        func at(_ frame: String) -> String {
            let index = node("Add", [frame, floats("pre.fill.zeros\(D)", [D], [Float](repeating: 0, count: D))], name: "pre.fill")
            return node(
                "GatherElements", [X, node("Cast", [index], attributes: [("to", .int(7))], name: "pre.fill")], attributes: [("axis", .int(1))],
                name: "pre.fill")
        }
        let xp = at(p), xq = at(q)
        let t = floats("pre.fill.t\(F)", [1, F, 1, 1], (0..<F).map(Float.init))
        let inside = node("Div", [node("Sub", [t, p], name: "pre.fill"), atLeastOne(node("Sub", [q, p], name: "pre.fill"))], name: "pre.fill")
        let w = node("Where", [positive(previous), node("Where", [positive(next), inside, constant(0)], name: "pre.fill"), constant(1)], name: "pre.fill")
        let filled = node("Add", [xp, node("Mul", [w, node("Sub", [xq, xp], name: "pre.fill")], name: "pre.fill")], name: "pre.fill")
        let anywhere = node("Cast", [positive(node("Add", [previous, next], name: "pre.fill"))], attributes: [("to", .int(1))], name: "pre.fill")
        return (filled, anywhere)
    }

    /// Subtracts the centre from present joints: the window centre (the mean of the frame
    /// centres that exist, else of all present joints), or with `perFrame` each frame's own.
    private func centre(_ X: String, _ P: String, _ joints: [Int], perFrame: Bool) -> String {
        let (m, has) = maskedMean(X, P, joints)
        let seen = sum(has, [1])
        let fromFrames = node("Div", [sum(node("Mul", [m, has], name: "pre.centre"), [1]), atLeastOne(seen)], name: "pre.centre")
        let window = node("Where", [positive(seen), fromFrames, meanOfAll(X, P)], name: "pre.centre")
        let c = perFrame ? node("Where", [positive(has), m, window], name: "pre.centre") : window
        return node("Sub", [X, node("Mul", [c, P], name: "pre.centre")], name: "pre.centre")
    }

    /// Divides by the median torso length over the frames that have both ends, else by the RMS
    /// distance of the present joints from their mean; a zero scale changes nothing.
    private func scaleByTorso(_ X: String, _ P: String, _ upper: [Int], _ lower: [Int], frames F: Int) -> String {
        let (u, hu) = maskedMean(X, P, upper), (l, hl) = maskedMean(X, P, lower)
        let d = node("Sub", [u, l], name: "pre.torso")
        let length = node("Sqrt", [sum(node("Mul", [d, d], name: "pre.torso"), [3])], name: "pre.torso")  // [B, F, 1, 1]
        let valid = node("Mul", [hu, hl], name: "pre.torso")
        let lengths = node("Where", [positive(valid), length, constant(.greatestFiniteMagnitude)], name: "pre.torso")
        let sorted = node(
            "TopK", [reshape(lengths, [0, F]), int64s("pre.frames", [F])], outputs: 2,
            attributes: [("axis", .int(1)), ("largest", .int(0)), ("sorted", .int(1))], name: "pre.torso")[0]
        // The median of the n valid lengths: the mean of sorted[⌊(n−1)/2⌋] and sorted[⌊n/2⌋].
        let n = reshape(sum(valid, [1]), [0, 1])
        func at(_ position: String) -> String {
            let index = node("Max", [node("Floor", [position], name: "pre.median"), constant(0)], name: "pre.median")
            return node("GatherElements", [sorted, node("Cast", [index], attributes: [("to", .int(7))], name: "pre.median")], attributes: [("axis", .int(1))], name: "pre.median")
        }
        let lo = at(node("Div", [node("Sub", [n, constant(1)], name: "pre.median"), constant(2)], name: "pre.median"))
        let hi = at(node("Div", [n, constant(2)], name: "pre.median"))
        let median = reshape(node("Div", [node("Add", [lo, hi], name: "pre.median"), constant(2)], name: "pre.median"), [0, 1, 1, 1])
        let count = reshape(n, [0, 1, 1, 1])
        let useMedian = node("And", [positive(count), positive(median)], name: "pre.torso")
        let scale = node("Where", [useMedian, median, rms(X, P)], name: "pre.torso")
        return node("Where", [positive(scale), node("Div", [X, scale], name: "pre.torso"), X], name: "pre.torso")
    }

    /// Rotates present joints about the vertical axis so that the window's mean right-minus-left
    /// side vector lies on the first horizontal axis (3D).
    private func alignFacing(_ X: String, _ P: String, _ left: [Int], _ right: [Int], vertical v: Int) -> String {
        let h1 = v == 0 ? 1 : 0, h2 = v == 2 ? 1 : 2
        let (l, hl) = maskedMean(X, P, left), (r, hr) = maskedMean(X, P, right)
        let both = node("Mul", [hl, hr], name: "pre.align")
        let side = sum(node("Mul", [node("Sub", [r, l], name: "pre.align"), both], name: "pre.align"), [1])  // [B, 1, 1, 3]
        let a1 = gather(side, [h1], axis: 3), a2 = gather(side, [h2], axis: 3)
        let norm = node("Sqrt", [node("Add", [node("Mul", [a1, a1], name: "pre.align"), node("Mul", [a2, a2], name: "pre.align")], name: "pre.align")], name: "pre.align")
        let c = node("Div", [a1, norm], name: "pre.align"), s = node("Div", [a2, norm], name: "pre.align")
        let x1 = gather(X, [h1], axis: 3), x2 = gather(X, [h2], axis: 3)
        let n1 = node("Add", [node("Mul", [c, x1], name: "pre.align"), node("Mul", [s, x2], name: "pre.align")], name: "pre.align")
        let n2 = node("Sub", [node("Mul", [c, x2], name: "pre.align"), node("Mul", [s, x1], name: "pre.align")], name: "pre.align")
        let axes = (0..<3).map { k in k == h1 ? n1 : k == h2 ? n2 : gather(X, [v], axis: 3) }
        let rotated = node("Concat", axes, attributes: [("axis", .int(3))], name: "pre.align")
        return node("Where", [positive(norm), rotated, X], name: "pre.align")
    }

    // MARK: - Pieces (with PoseCore's `OpGraph` helpers: sum, gather, slice, reshape, ...)

    /// The mean of the present `joints` at each frame `[B, F, 1, D]` and whether there is one `[B, F, 1, 1]`.
    private func maskedMean(_ X: String, _ P: String, _ joints: [Int]) -> (mean: String, has: String) {
        let count = sum(gather(P, joints, axis: 2), [2])
        let mean = node("Div", [sum(gather(X, joints, axis: 2), [2]), atLeastOne(count)], name: "pre.mean")  // absent joints are 0
        return (mean, node("Cast", [positive(count)], attributes: [("to", .int(1))], name: "pre.mean"))
    }

    /// The mean of all present joints of each window `[B, 1, 1, D]` (0 without any).
    private func meanOfAll(_ X: String, _ P: String) -> String {
        node("Div", [sum(X, [1, 2]), atLeastOne(sum(P, [1, 2]))], name: "pre.meanall")
    }

    /// The RMS distance of the present joints from their mean `[B, 1, 1, 1]`.
    private func rms(_ X: String, _ P: String) -> String {
        let deviation = node("Mul", [node("Sub", [X, meanOfAll(X, P)], name: "pre.rms"), P], name: "pre.rms")
        let squares = sum(node("Mul", [deviation, deviation], name: "pre.rms"), [1, 2, 3])
        return node("Sqrt", [node("Div", [squares, atLeastOne(sum(P, [1, 2, 3]))], name: "pre.rms")], name: "pre.rms")
    }
}
