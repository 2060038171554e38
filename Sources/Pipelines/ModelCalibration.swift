import ActionRuntime
import ActionTrain
import Datasets
import Eval
import Foundation
import PoseCore

/// Temperature scaling of a trained model (`calibration temperature`; Guo et al. 2017): one
/// temperature T divides the model's logits, `p = softmax(z / T)`, T chosen to minimise the log
/// loss of predictions the model did not train on (`Evidence`): the run's validation windows, or
/// without them out-of-fold predictions of the training split (`outOfFold`). Dividing every
/// logit of a window by the same T > 0 keeps their order, so the predicted class, hence the
/// accuracy, is unchanged (up to float rounding of exact ties).
///
/// The temperature is folded into the network (`scaled`): the last `linear` layer's weight and
/// bias, or the weights of a last `averageLogProbabilities`, divided by T. Everything that runs
/// the network (the runtime, streams and events, the Swift library, ONNX and Core ML exports)
/// reads calibrated probabilities with no change; the model file records what was done
/// (`ModelHeader.Calibration`, docs/format.md 3.6).
public enum ModelCalibration {
    /// Logits `[n, classes]` of windows a network did not train on, and their labels.
    public struct Evidence: Sendable {
        public var logits: [Float]
        public var labels: [Int32]
        public var classes: Int
        /// `validation` or `outOfFold` (docs/format.md 3.6).
        public var source: String
        public var folds: Int?
        /// Out of fold: how many of the `folds` were trained and predicted (fewer once
        /// `enoughWindows` were held out).
        public var trained: Int?
        /// For a network whose last layer is an `averageLogProbabilities` of several members:
        /// each member's log-probabilities `[n, classes]` on the same windows
        /// (`memberLogProbabilities`), so that the members' weights can be fitted; else empty.
        public var members: [[Float]]
        /// For a network that averages probabilities (a last `averageProbabilities` or
        /// `flipAverage`): the logits `[n, classes]` of each averaged branch (`branchLogits`), whose
        /// probabilities' mean the network computes; the temperature divides each branch's logits.
        /// Empty for a network whose logits it divides.
        public var branches: [[Float]]
        /// Out of fold: each trained fold's network (as written, not calibrated) and the
        /// training sequences it held out, in fold order (`StreamCalibration` plays them as a
        /// stream the network did not train on); else empty.
        public var heldOut: [HeldOut]

        public init(
            logits: [Float], labels: [Int32], classes: Int, source: String, folds: Int? = nil, trained: Int? = nil, members: [[Float]] = [],
            branches: [[Float]] = [], heldOut: [HeldOut] = []
        ) {
            precondition(logits.count == labels.count * classes, "logits shape")
            precondition((members + branches).allSatisfy { $0.count == logits.count }, "member log-probabilities shape")
            self.members = members
            self.branches = branches
            self.logits = logits
            self.labels = labels
            self.classes = classes
            self.source = source
            self.folds = folds
            self.trained = trained
            self.heldOut = heldOut
        }
    }

    /// A calibration fold's network and the sequences (dataset indices) it did not train on.
    /// The network is never changed after training (`@unchecked`: a `Network` is a class).
    public struct HeldOut: @unchecked Sendable {
        public var network: Network
        public var sequences: [Int]
    }

    /// The temperature that minimises the evidence's mean log loss (`SoftmaxRegression.logitScale`:
    /// bisection on the convex loss, T in [10⁻³, 10³] but no sharper than `SoftmaxRegression.largestLogitGap` between
    /// two logits of a window allows), with the evidence's log loss and
    /// expected calibration error (`Metrics.calibrationBins` bins) before and after it.
    /// With `branches` (a network that averages probabilities) the temperature divides each
    /// branch's logits, `p = mean_b softmax(z_b / T)`, chosen the same way (`branchScale`).
    public static func fit(_ e: Evidence) -> ModelHeader.Calibration {
        let scale = e.branches.isEmpty ? clippedScale(e.logits, labels: e.labels, classes: e.classes) : branchScale(e.branches, labels: e.labels, classes: e.classes)
        let before = scores(e, scale: 1)
        let after = scores(e, scale: scale)
        return ModelHeader.Calibration(
            temperature: 1 / scale, evidence: e.source, folds: e.folds, windows: e.labels.count, logLossBefore: before.logLoss,
            logLossAfter: after.logLoss, eceBefore: before.ece, eceAfter: after.ece)
    }

    /// The scale (1 / T) of `SoftmaxRegression.logitScale` fitted on the windows whose log loss
    /// at it stays within `Metrics.logLossEpsilon`'s clip (34.5 nats), the log loss every report
    /// gives: one window wrong by a thousand logits would otherwise drive the temperature to where
    /// that window's softmax spreads (T ≈ 89 measured: every probability of the model near
    /// uniform). The windows beyond the clip at T = 1 are left out and the fit repeated until the
    /// set left out stops changing; without such windows, the fit of all of them.
    static func clippedScale(_ logits: [Float], labels: [Int32], classes K: Int) -> Double {
        let cap = -log(Metrics.logLossEpsilon)
        func kept(_ t: Double) -> [Double] {
            labels.indices.map { SoftmaxRegression.rowLogLoss(logits, row: $0, scale: t, label: labels[$0], classes: K) <= cap ? 1 : 0 }
        }
        var weights = kept(1), scale = 1.0
        for _ in 0..<10 {
            guard weights.contains(1) else { return 1 }
            scale = SoftmaxRegression.logitScale(logits, labels: labels, weights: weights, classes: K)
            let next = kept(scale)
            if next == weights { break }
            weights = next
        }
        return scale
    }

    /// The evidence's mean log loss and expected calibration error at `scale` (1 / T): of
    /// `softmax(scale · logits)`, or with branches of `mean_b softmax(scale · z_b)`.
    static func scores(_ e: Evidence, scale: Double) -> (logLoss: Double, ece: Double) {
        guard !e.branches.isEmpty else { return scores(e.logits, labels: e.labels, classes: e.classes, scale: scale) }
        return scores(probabilities: branchProbabilities(e.branches, classes: e.classes, scale: scale), labels: e.labels, classes: e.classes)
    }

    /// `mean_b softmax(scale · z_b)` of the branches' logits `[n, K]` each.
    public static func branchProbabilities(_ branches: [[Float]], classes K: Int, scale: Double) -> [Float] {
        var mean = [Float](repeating: 0, count: branches.first?.count ?? 0)
        for z in branches {
            let p = probabilities(z, classes: K, scale: scale)
            for j in mean.indices { mean[j] += p[j] / Float(branches.count) }
        }
        return mean
    }

    /// The scale (1 / T) in [10⁻³, 10³] (or less: `SoftmaxRegression.largestScale` of each branch) that minimises the mean log loss of
    /// `mean_b softmax(scale · z_b)`: golden-section search over log(scale) (a mean of
    /// probabilities is not convex in the scale as one softmax is; the search finds the minimum of
    /// a loss with one valley, which is what branches that mostly agree give).
    static func branchScale(_ branches: [[Float]], labels: [Int32], classes K: Int) -> Double {
        func loss(_ logScale: Double) -> Double {
            Metrics.logLoss(truth: labels, probabilities: branchProbabilities(branches, classes: K, scale: exp(logScale)), classes: K)
        }
        let ratio = (sqrt(5.0) - 1) / 2
        let rows = Array(labels.indices)
        var (a, b) = (log(1e-3), log(branches.map { SoftmaxRegression.largestScale($0, rows: rows, classes: K) }.min() ?? 1e3))
        var (c, d) = (b - ratio * (b - a), a + ratio * (b - a))
        var (fc, fd) = (loss(c), loss(d))
        for _ in 0..<60 {
            if fc <= fd {
                (b, d, fd) = (d, c, fc)
                c = b - ratio * (b - a)
                fc = loss(c)
            } else {
                (a, c, fc) = (c, d, fd)
                d = a + ratio * (b - a)
                fd = loss(d)
            }
        }
        return exp((a + b) / 2)
    }

    /// The mean log loss and expected calibration error of `softmax(scale · logits)`.
    public static func scores(_ logits: [Float], labels: [Int32], classes K: Int, scale: Double) -> (logLoss: Double, ece: Double) {
        scores(probabilities: probabilities(logits, classes: K, scale: scale), labels: labels, classes: K)
    }

    /// The mean log loss and expected calibration error of probabilities `[n, K]`.
    static func scores(probabilities p: [Float], labels: [Int32], classes K: Int) -> (logLoss: Double, ece: Double) {
        let ece = Metrics.calibration(truth: labels, predicted: Metrics.predictions(p, classes: K), probabilities: p, classes: K).ece
        return (Metrics.logLoss(truth: labels, probabilities: p, classes: K), ece)
    }

    /// `softmax(scale · z)` of each row of `logits [n, K]`, in double precision.
    public static func probabilities(_ logits: [Float], classes K: Int, scale: Double) -> [Float] {
        var out = [Float](repeating: 0, count: logits.count)
        for r in 0..<(K == 0 ? 0 : logits.count / K) {
            let z = (0..<K).map { scale * Double(logits[r * K + $0]) }
            let top = z.max()!
            let e = z.map { exp($0 - top) }, sum = e.reduce(0, +)
            for k in 0..<K { out[r * K + k] = Float(e[k] / sum) }
        }
        return out
    }

    /// Why `network` cannot take a temperature folded into it, or nil when it can: its last
    /// layer must be a `linear` or an `averageLogProbabilities` (whose logits are divided), or
    /// the only layer an `averageProbabilities` or `flipAverage` whose every branch can take one
    /// (each branch's logits are divided before their probabilities are averaged).
    public static func unscalable(_ network: Network) -> String? {
        do {
            _ = try scaledPart(network.specs, values(network), input: network.inputShape, temperature: 1)
            return nil
        } catch FitError.cannotCalibrate(let why) {
            return why
        } catch {
            return "\(error)"
        }
    }

    /// `network` with its logits divided by `temperature`: the weights of its last
    /// `averageLogProbabilities`, or its last `linear` layer's weight and bias, divided by it;
    /// in a network that averages probabilities, each branch's (a new network; `network` is
    /// unchanged). Throws when `unscalable` says why not.
    public static func scaled(_ network: Network, temperature: Double) throws -> Network {
        guard temperature > 0 && temperature.isFinite else {
            throw FitError.cannotCalibrate(reason: "the temperature must be positive and finite, got \(temperature)")
        }
        let (specs, scaledValues) = try scaledPart(network.specs, values(network), input: network.inputShape, temperature: temperature)
        let out = try Network(layers: specs, input: network.inputShape)
        scaledValues.withUnsafeBufferPointer { out.load(parameters: $0) }
        return out
    }

    static func values(_ network: Network) -> [Float] { Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount)) }

    /// The layers `specs` (parameters `values`, in network order) with their logits divided by
    /// `temperature` (`scaled`), recursing into the branches of a network that averages them.
    static func scaledPart(_ specs: [LayerSpec], _ values: [Float], input: Shape, temperature: Double) throws -> ([LayerSpec], [Float]) {
        guard let last = specs.last else { throw FitError.cannotCalibrate(reason: "the network has no layers") }
        var specs = specs, values = values
        let l = specs.count - 1
        switch last.kind {
        case let average as AverageLogProbabilitiesKind:
            specs[l] = .averageLogProbabilities(average.members, weights: average.weights.map { Float(Double($0) / temperature) })
        case is LinearKind:
            for t in try Network(layers: specs, input: input).tensors where t.name.hasPrefix("layers.\(l).") {
                for i in t.offset..<(t.offset + t.count) { values[i] = Float(Double(values[i]) / temperature) }
            }
        case let average as AverageProbabilitiesKind where specs.count == 1:
            var members: [[LayerSpec]] = [], out: [Float] = [], offset = 0
            for member in average.members {
                let n = try Network(layers: member, input: input).parameterCount
                let part = try scaledPart(member, Array(values[offset..<(offset + n)]), input: input, temperature: temperature)
                members.append(part.0)
                out += part.1
                offset += n
            }
            return ([.averageProbabilities(members)], out)
        case let flip as FlipAverageKind where specs.count == 1:
            let body = try scaledPart(flip.body, values, input: input, temperature: temperature)
            return ([.flipAverage(channels: flip.channels, signs: flip.signs, body: body.0)], body.1)
        default:
            let why =
                specs.count > 1 && (last.kind is AverageProbabilitiesKind || last.kind is FlipAverageKind)
                ? "its last layer is \(last.typeName) after other layers" : "its last layer is \(last.typeName)"
            throw FitError.cannotCalibrate(
                reason: why + ", not a linear or averageLogProbabilities layer a temperature can be folded into (or a lone averageProbabilities or flipAverage of such branches)")
        }
        return (specs, values)
    }

    /// The logits `[count, classes]` of each branch whose probabilities `network` averages
    /// (its only layer an `averageProbabilities`: each member's; a `flipAverage`: the body's on
    /// the windows and on their mirror images; recursively), or empty for any other network.
    public static func branchLogits(_ network: Network, features: [Float], count: Int) throws -> [[Float]] {
        let specs = network.specs
        guard specs.count == 1, specs[0].kind is AverageProbabilitiesKind || specs[0].kind is FlipAverageKind else { return [] }
        return try leaves(specs, values(network), input: network.inputShape, features: features, count: count)
    }

    static func leaves(_ specs: [LayerSpec], _ values: [Float], input: Shape, features: [Float], count: Int) throws -> [[Float]] {
        if specs.count == 1, let average = specs[0].kind as? AverageProbabilitiesKind {
            var out: [[Float]] = [], offset = 0
            for member in average.members {
                let n = try Network(layers: member, input: input).parameterCount
                out += try leaves(member, Array(values[offset..<(offset + n)]), input: input, features: features, count: count)
                offset += n
            }
            return out
        }
        if specs.count == 1, let flip = specs[0].kind as? FlipAverageKind {
            let C = input.channels
            var mirrored = features
            for r in 0..<(features.count / C) {
                for c in 0..<C { mirrored[r * C + c] = flip.signs[c] * features[r * C + flip.channels[c]] }
            }
            return try leaves(flip.body, values, input: input, features: features, count: count)
                + leaves(flip.body, values, input: input, features: mirrored, count: count)
        }
        let network = try Network(layers: specs, input: input)
        values.withUnsafeBufferPointer { network.load(parameters: $0) }
        return [Inference.logits(network, features: features, count: count)]
    }

    /// Each member's log-probabilities `[count, classes]` on `features` when the network's last
    /// layer is an `averageLogProbabilities` of two or more members (empty otherwise): the
    /// network run once per member, that member weighted 1 and the others 10⁻³⁰ (the layer takes
    /// positive weights only; their share of a logit, under 10⁻²⁶, is below float rounding).
    public static func memberLogProbabilities(_ network: Network, features: [Float], count: Int) throws -> [[Float]] {
        guard let average = network.specs.last?.kind as? AverageLogProbabilitiesKind, average.members.count > 1 else { return [] }
        let M = average.members.count
        return try (0..<M).map { m in
            let alone = try weighted(network, weights: (0..<M).map { $0 == m ? 1 : 1e-30 })
            return Inference.logits(alone, features: features, count: count)
        }
    }

    /// `network` with the weights of its last `averageLogProbabilities` replaced by `weights`
    /// (a new network with the same parameters; `network` is unchanged).
    public static func weighted(_ network: Network, weights: [Double]) throws -> Network {
        guard let average = network.specs.last?.kind as? AverageLogProbabilitiesKind, average.members.count == weights.count else {
            throw FitError.cannotCalibrate(reason: "the network's last layer is not an averageLogProbabilities of \(weights.count) members")
        }
        guard weights.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw FitError.cannotCalibrate(reason: "member weights must be positive and finite, got \(weights)")
        }
        var specs = network.specs
        specs[specs.count - 1] = .averageLogProbabilities(average.members, weights: weights.map { Float($0) })
        let out = try Network(layers: specs, input: network.inputShape)
        out.load(parameters: UnsafeBufferPointer(start: network.parameters, count: network.parameterCount))
        return out
    }

    /// The member weights that minimise the mean log loss of `softmax(Σ_m w_m ℓ_m)` on the
    /// evidence, ℓ_m member m's log-probabilities (`Evidence.members`; empty: nil), each weight
    /// in [`weightRange`]. One temperature is the special case of weights all equal; fitting one
    /// weight per member also sets how far each member is trusted. The loss is convex in w (its
    /// gradient `Σ_i E_p[ℓ_m] − ℓ_m[y_i]`, its Hessian the covariance of the ℓ_m under p), solved
    /// by Newton's method from equal weights with a backtracking line search, a weight at a
    /// bound of the range held there while the gradient pushes it out.
    public static func memberWeights(_ e: Evidence) -> [Double]? {
        let M = e.members.count, K = e.classes, n = e.labels.count
        guard M > 1, K > 0, n > 0 else { return nil }
        let L = e.members.map { $0.map(Double.init) }
        // The loss, and with `derivatives` its gradient and Hessian, at w.
        func evaluate(_ w: [Double], derivatives: Bool) -> (loss: Double, g: [Double], h: [[Double]]) {
            var loss = 0.0
            var g = [Double](repeating: 0, count: derivatives ? M : 0)
            var h = [[Double]](repeating: [Double](repeating: 0, count: M), count: derivatives ? M : 0)
            var z = [Double](repeating: 0, count: K), expected = [Double](repeating: 0, count: M)
            for i in 0..<n {
                let row = i * K, y = Int(e.labels[i])
                for k in 0..<K { z[k] = (0..<M).reduce(0) { $0 + w[$1] * L[$1][row + k] } }
                let top = z.max()!
                var sum = 0.0
                for k in 0..<K {
                    z[k] = exp(z[k] - top)
                    sum += z[k]
                }
                loss += log(sum) + top - (0..<M).reduce(0) { $0 + w[$1] * L[$1][row + y] }
                guard derivatives else { continue }
                for k in 0..<K { z[k] /= sum }  // now p
                for m in 0..<M {
                    expected[m] = (0..<K).reduce(0) { $0 + z[$1] * L[m][row + $1] }
                    g[m] += expected[m] - L[m][row + y]
                }
                for a in 0..<M {
                    for b in a..<M {
                        let c = (0..<K).reduce(0) { $0 + z[$1] * L[a][row + $1] * L[b][row + $1] } - expected[a] * expected[b]
                        h[a][b] += c
                        if a != b { h[b][a] += c }
                    }
                }
            }
            return (loss / Double(n), g.map { $0 / Double(n) }, h.map { $0.map { $0 / Double(n) } })
        }
        var w = [Double](repeating: 1 / Double(M), count: M)
        for _ in 0..<100 {
            let (loss, g, h) = evaluate(w, derivatives: true)
            // Weights at a bound that the gradient pushes out stay there.
            let free = (0..<M).filter { m in
                !(w[m] <= weightRange.lowerBound && g[m] > 0) && !(w[m] >= weightRange.upperBound && g[m] < 0)
            }
            guard !free.isEmpty, free.contains(where: { abs(g[$0]) > 1e-10 }) else { break }
            let step = solve(free.map { a in free.map { b in h[a][b] } }, free.map { -g[$0] })
            var t = 1.0, moved = false
            while t > 1e-12 {
                var trial = w
                for (j, m) in free.enumerated() { trial[m] = min(max(w[m] + t * step[j], weightRange.lowerBound), weightRange.upperBound) }
                if evaluate(trial, derivatives: false).loss < loss {
                    w = trial
                    moved = true
                    break
                }
                t /= 2
            }
            if !moved { break }
        }
        return w
    }

    /// The range of a fitted member weight (`memberWeights`): as a temperature's, 10⁻³ to 10³.
    public static let weightRange: ClosedRange<Double> = 1e-3...1e3

    /// x with `a x = b` for a small symmetric positive semi-definite `a` (Gaussian elimination
    /// with partial pivoting, the diagonal raised by 10⁻⁹ of its trace where it is singular).
    static func solve(_ a: [[Double]], _ b: [Double]) -> [Double] {
        let n = b.count
        let ridge = 1e-9 * max((0..<n).reduce(0) { $0 + abs(a[$1][$1]) }, 1e-300)
        var m = (0..<n).map { i in (0..<n).map { a[i][$0] + (i == $0 ? ridge : 0) } + [b[i]] }
        for c in 0..<n {
            let p = (c..<n).max { abs(m[$0][c]) < abs(m[$1][c]) }!
            m.swapAt(c, p)
            guard m[c][c] != 0 else { continue }
            for r in (c + 1)..<n {
                let f = m[r][c] / m[c][c]
                for j in c...n { m[r][j] -= f * m[c][j] }
            }
        }
        var x = [Double](repeating: 0, count: n)
        for r in stride(from: n - 1, through: 0, by: -1) {
            let s = ((r + 1)..<n).reduce(m[r][n]) { $0 - m[r][$1] * x[$1] }
            x[r] = m[r][r] == 0 ? 0 : s / m[r][r]
        }
        return x
    }

    /// Held-out windows that are enough evidence for one temperature: out of fold, no further
    /// fold is trained once this many are predicted (a large training split costs one fold's
    /// training, not k).
    public static let enoughWindows = 400

    /// Out-of-fold evidence for `config` on the `train` sequences of `dataset`: `folds`
    /// group-aware stratified folds (`Splits.kFold`, seeded by the config's seed; fewer when
    /// the sequences are fewer groups), for each in turn a network trained as the config says
    /// (no validation split, no calibration) on the other folds, and its logits on the fold's
    /// windows (the network as written: `FitPipeline.networkToWrite`), until `enough` windows
    /// are predicted. Nil when the sequences are fewer than 2 groups, or too few of them are of
    /// a class another group holds (`TrainingData.heldOutCanScore`: held-out windows of a class
    /// no other fold trains on are wrong whatever the temperature, which then went to 10³ and
    /// flattened every probability). `onFold(f, k)` is called
    /// before fold f (0-based) of k trains.
    public static func outOfFold(
        dataset: Dataset, train: [Int], config: TrainingConfig, input: InputSpec, folds: Int, enough: Int = enoughWindows,
        onFold: (Int, Int) -> Void = { _, _ in }
    ) throws -> Evidence? {
        let groups = TrainingData.groupCount(dataset, train)
        let k = min(folds, groups)
        guard k >= 2, TrainingData.heldOutCanScore(dataset, train) else { return nil }
        var c = config
        c.calibration = .none
        c.validationFraction = 0
        let parts = try Splits.kFold(dataset, indices: train, k: k, seed: config.seed).folds
        var logits: [Float] = [], labels: [Int32] = [], members: [[Float]] = [], branches: [[Float]] = []
        var trained = 0, heldOut: [HeldOut] = []
        for (f, part) in parts.enumerated() where labels.count < enough {
            onFold(f, k)
            trained += 1
            let data = try TrainingData(dataset: dataset, train: part.train, validation: [], config: c, input: input)
            let training = try Training(config: c, data: data)
            try training.run()
            let network = try FitPipeline.networkToWrite(training.network, config: c, input: input)
            let held = try TrainingData.tensors(dataset, part.test, input: input, stride: c.windowStride, useEvents: c.useEvents)
            heldOut.append(HeldOut(network: network, sequences: part.test))
            logits += Inference.logits(network, features: held.features, count: held.count)
            labels += held.labels
            let each = try memberLogProbabilities(network, features: held.features, count: held.count)
            members = members.isEmpty ? each : zip(members, each).map { $0 + $1 }
            let averaged = try branchLogits(network, features: held.features, count: held.count)
            branches = branches.isEmpty ? averaged : zip(branches, averaged).map { $0 + $1 }
        }
        return Evidence(
            logits: logits, labels: labels, classes: dataset.classes.count, source: "outOfFold", folds: k, trained: trained, members: members,
            branches: branches, heldOut: heldOut)
    }

    /// calibration.json of a run folder: the calibration as the model file records it, the
    /// class names' order aside, and its evidence (`labels [n]`, uncalibrated `logits [n][K]`,
    /// and for a model of several members each one's log-probabilities `members [M][n][K]`),
    /// so that another calibration can be measured on the same predictions.
    public static func evidenceJSON(_ e: Evidence, calibration: ModelHeader.Calibration) throws -> Data {
        func rows(_ values: [Float]) -> [[Float]] { (0..<e.labels.count).map { Array(values[($0 * e.classes)..<(($0 + 1) * e.classes)]) } }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(
            EvidenceFile(calibration: calibration, labels: e.labels, logits: rows(e.logits), members: e.members.isEmpty ? nil : e.members.map(rows)))
    }

    /// The evidence a calibration.json holds (`evidenceJSON`; `source` "file").
    public static func evidence(fromJSON data: Data) throws -> Evidence {
        let f = try JSONDecoder().decode(EvidenceFile.self, from: data)
        return Evidence(
            logits: f.logits.flatMap { $0 }, labels: f.labels, classes: f.logits.first?.count ?? 0, source: "file",
            members: (f.members ?? []).map { $0.flatMap { $0 } })
    }

    /// calibration.json's fields (`evidenceJSON`).
    struct EvidenceFile: Codable {
        var calibration: ModelHeader.Calibration
        var labels: [Int32]
        var logits: [[Float]]
        var members: [[[Float]]]?
    }
}
