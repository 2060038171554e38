import ActionRuntime
import ActionTrain
import Foundation
import PoseCore

/// Linear heads over fixed features, solved as the convex problems they are (`linearHead
/// solve`, the default).
///
/// A head is a network, or a member of its `averageProbabilities`, whose only parameters are
/// its last `linear` layer: everything before it (`selectChannels`, `fourierPyramid`, the
/// calibrated `standardize`; `flatten` for an MLP without hidden layers) is a fixed function of
/// the window. Its features are computed once per training window (as cut, and with
/// `linearHeadCopies` for that many augmented copies of it, `copies(_:windows:)`), and the
/// linear layer is the multinomial logistic regression `SoftmaxRegression` over them, solved
/// to its optimum with the L2 penalty `linearPenalty`, or the one of `penalties` that
/// scores best in group-aware k-fold cross-validation on the training windows (the folds of
/// `TrainingData.folds`; ties go to the stronger penalty). The trainer then leaves the head's
/// parameters as they are (`Trainer.fixedMembers`). Deterministic: the same windows, config
/// and thread count give the same bits, so a resumed run solves the same head again.
public enum LinearHeads {
    /// A head found in a network.
    public struct Head: Sendable {
        /// The member of the network's `averageProbabilities`; nil: the whole network.
        public var member: Int?
        /// The parameter-free layers before the linear one, from the network's input.
        public var prefix: [LayerSpec]
        /// Where the linear layer's weight `[K, d]` and then bias `[K]` start in the network's
        /// parameters.
        public var offset: Int
        public var features: Int, classes: Int
    }

    /// What solving a head found (printed by `fit`).
    public struct Solution: Sendable {
        public var member: Int?
        /// The penalty used, and how it was chosen.
        public var penalty: Double
        public var chosenBy: String
        /// Each penalty tried with its mean held-out window accuracy and the log loss of its
        /// out-of-fold logits at their best temperature (empty when the penalty was given).
        public var scores: [(penalty: Double, accuracy: Double, logLoss: Double)]
        /// The temperature the solution's logits were divided by: the one that minimises the
        /// log loss of the out-of-fold logits at the chosen penalty, but no sharper than
        /// `SoftmaxRegression.largestScale` of them (1 without cross-validation).
        public var temperature: Double
        public var windows: Int, features: Int
        public var iterations: Int
        public var seconds: Double
        /// Why the head was left to the trainer instead of solved (nil: solved): its problem is
        /// beyond `maxWork`. Its parameters are then trained with the network's.
        public var notSolved: String?
    }

    /// The penalties cross-validation chooses from: 10^-4 to 10^3, half a decade apart (the
    /// strongest first: each solve starts from the previous one's solution).
    public static let penalties: [Double] = stride(from: 3.0, through: -4.0, by: -0.5).map { pow(10, $0) }

    /// The most feature values a head's training matrix may hold (2^27 floats, 512 MB); beyond
    /// it every k-th window is used, k the smallest that fits.
    public static let maxValues = 1 << 27

    /// The heads of `network`: itself when its parameters are only its last `linear` layer's,
    /// else each such member of its last layer, an `averageProbabilities` (when nothing before
    /// that layer has parameters).
    public static func find(_ network: Network) -> [Head] {
        let specs = network.specs, K = network.classCount
        guard let last = specs.last else { return [] }
        let prefixNames = "layers.\(specs.count - 1)."
        if last.kind is LinearKind, network.tensors.count == 2, network.tensors.allSatisfy({ $0.name.hasPrefix(prefixNames) }),
            let weight = network.tensors.first
        {
            return [Head(member: nil, prefix: Array(specs.dropLast()), offset: weight.offset, features: weight.shape[1], classes: K)]
        }
        guard let average = last.kind as? any MemberCombinationKind, network.tensors.allSatisfy({ $0.name.hasPrefix(prefixNames) }) else {
            return []
        }
        var heads: [Head] = []
        for (m, layers) in average.members.enumerated() {
            let own = prefixNames + "members.\(m)."
            let tensors = network.tensors.filter { $0.name.hasPrefix(own) }
            let head = own + "\(layers.count - 1)."
            guard let linear = layers.last, linear.kind is LinearKind, tensors.count == 2, tensors.allSatisfy({ $0.name.hasPrefix(head) })
            else { continue }
            heads.append(
                Head(
                    member: m, prefix: Array(specs.dropLast()) + Array(layers.dropLast()), offset: tensors[0].offset,
                    features: tensors[0].shape[1], classes: K))
        }
        return heads
    }

    /// Solves `head` of `network` on `data`'s training windows and writes its weight and bias
    /// into the network's parameters. `folds[w]` is window w's cross-validation fold (nil, or
    /// fewer than 2 folds: `fallbackPenalty` unless `penalty` is given). A head whose problem
    /// is beyond `maxWork` is left as it is (`Solution.notSolved`).
    public static func solve(
        _ head: Head, network: Network, data: TrainingData, folds: [Int]?, classWeights: [Float]?, penalty: Double?,
        copies requested: Int = 0, maxWork: Int = maxWork, maxSearchWork: Int = maxSearchWork
    ) throws -> Solution {
        let started = Date()
        let source = data.train, N = source.count
        let copies = source is AugmentedBatches ? Self.copies(requested, windows: N) : 0
        let every = max(1, (N * (1 + copies) * head.features + maxValues - 1) / maxValues)
        let windows = Array(stride(from: 0, to: N, by: every))
        let rows = Array(repeating: windows, count: 1 + copies).flatMap { $0 }
        let n = rows.count, d = head.features, K = head.classes
        // The multiply-adds of one product of the features and the weights (two an evaluation);
        // over the windows' span when they are fewer than the features (its rank is at most n).
        let work = n * K * (n < d && n <= maxRowSpace ? n : d)
        guard work <= maxWork else {
            return Solution(
                member: head.member, penalty: 0, chosenBy: "", scores: [], temperature: 1, windows: n, features: d, iterations: 0,
                seconds: Date().timeIntervalSince(started),
                notSolved: "a logistic regression over \(K) classes and \(n) windows of \(d) features is too large to solve before training "
                    + String(format: "(%.2g multiply-adds an evaluation, beyond %.2g)", Double(work), Double(maxWork)))
        }
        let x = UnsafeMutablePointer<Float>.allocate(capacity: max(1, n * d))  // [n, d]
        defer { x.deallocate() }
        try features(head, network: network, source: source, rows: windows, into: x)
        for m in 0..<copies {
            try features(head, network: network, source: source, rows: windows, into: x + (m + 1) * windows.count * d, epoch: copyEpoch + m)
        }
        let labels = rows.map { source.label(at: $0) }
        // Fewer windows than features: the same problem over the windows' span (`RowSpace`).
        let space = n < d && n <= maxRowSpace ? RowSpace(x: x, rows: n, features: d) : nil
        let coordinates = UnsafeMutablePointer<Float>.allocate(capacity: max(1, space?.coordinates.count ?? 0))  // C [n, r]
        defer { coordinates.deallocate() }
        if let space { coordinates.update(from: space.coordinates, count: space.coordinates.count) }
        let solver = SoftmaxRegression(x: space == nil ? x : coordinates, rows: n, features: space?.rank ?? d, labels: labels, classes: K)
        let fold = folds.map { f in rows.map { f[$0] } }
        let k = Set(fold ?? []).count
        var scores: [(penalty: Double, accuracy: Double, logLoss: Double)] = []
        var iterations = 0
        var scale = 1.0  // of the logits, from their out-of-fold values
        let chosen: Double, chosenBy: String
        if let penalty {
            (chosen, chosenBy) = (penalty, "given")
        } else if fold != nil && k >= 2 && work * (1 + k * penalties.count) > maxSearchWork {
            let solves = 1 + k * penalties.count
            (chosen, chosenBy) = (fallbackPenalty, "the default (cross-validation would solve it \(solves) times over \(n) windows of \(K) classes)")
        } else if let fold, k >= 2 {
            var correct = [Int](repeating: 0, count: penalties.count)
            var held = [[Float]](repeating: [Float](repeating: 0, count: n * K), count: penalties.count)  // out-of-fold logits
            for f in 0..<k {
                // The fold's path from the strongest penalty down, each solve warm-started.
                let s = solver.rowWeights(classWeights: classWeights) { fold[$0] != f }
                var theta: [Double]? = nil
                for (j, lambda) in penalties.enumerated() {
                    let solution = solver.solve(s: s, lambda: lambda, start: theta)
                    iterations += solution.iterations
                    theta = solution.parameters
                    let z = solver.logits(solution.parameters)
                    for i in 0..<n where fold[i] == f {
                        held[j].replaceSubrange((i * K)..<((i + 1) * K), with: z[(i * K)..<((i + 1) * K)])
                        if argmax(z[(i * K)..<((i + 1) * K)]) == Int(labels[i]) { correct[j] += 1 }
                    }
                }
            }
            // The penalty whose out-of-fold logits, each set scaled to its best temperature, have
            // the lowest log loss (smoother than the held-out accuracy, which moves by whole windows).
            // Scales up to 10³ to compare them; the one kept no sharper than float32 holds
            // (`largestScale`: held-out windows all right have no best scale).
            let s = solver.rowWeights(classWeights: classWeights)
            let scales = held.map { SoftmaxRegression.logitScale($0, labels: labels, weights: s, classes: K, upTo: 1e3) }
            let losses = penalties.indices.map { SoftmaxRegression.logLoss(held[$0], scale: scales[$0], labels: labels, weights: s, classes: K) }
            scores = penalties.indices.map { (penalties[$0], Double(correct[$0]) / Double(n), losses[$0]) }
            let j = losses.indices.min { losses[$0] < losses[$1] }!
            let kept = min(scales[j], SoftmaxRegression.largestScale(held[j], rows: labels.indices.filter { s[$0] > 0 }, classes: K))
            (chosen, chosenBy, scale) = (penalties[j], "\(k)-fold cross-validation", kept)
        } else {
            (chosen, chosenBy) = (fallbackPenalty, "the default (too few sequences or groups to cross-validate)")
        }
        let solution = solver.solve(s: solver.rowWeights(classWeights: classWeights), lambda: chosen)
        iterations += solution.iterations
        var theta = solution.parameters.map { $0 * scale }
        if let space {
            theta = space.lift(Array(theta[0..<(K * space.rank)]), classes: K, x: x) + theta[(K * space.rank)...]
        }
        let values = theta.map { Float($0) }
        guard values.allSatisfy(\.isFinite) else {
            throw FitError.networkDoesNotFit(
                architecture: "linear head", input: "\(n) windows of \(d) features", reason: "its solution is not finite (non-finite features?)")
        }
        var parameters = Array(UnsafeBufferPointer(start: network.parameters, count: network.parameterCount))
        parameters.replaceSubrange(head.offset..<(head.offset + K * d + K), with: values)
        parameters.withUnsafeBufferPointer { network.load(parameters: $0) }
        return Solution(
            member: head.member, penalty: chosen, chosenBy: chosenBy, scores: scores, temperature: 1 / scale, windows: n, features: d,
            iterations: iterations, seconds: Date().timeIntervalSince(started))
    }

    /// The head's features `[rows.count, head.features]` of the windows `rows` of `source`, as
    /// cut, or with `epoch` augmented as `source.fill` augments them in that epoch, into `x`.
    static func features(
        _ head: Head, network: Network, source: any BatchSource, rows: [Int], into x: UnsafeMutablePointer<Float>, epoch: Int? = nil
    ) throws {
        let prefix = try Network(layers: head.prefix, input: network.inputShape)
        let V = source.valuesPerWindow, d = head.features, batch = 256
        let windows = UnsafeMutablePointer<Float>.allocate(capacity: batch * V)
        defer { windows.deallocate() }
        var labels = [Int32](repeating: 0, count: batch)
        for start in stride(from: 0, to: rows.count, by: batch) {
            let count = min(batch, rows.count - start)
            if let epoch {  // augmented as in that epoch
                labels.withUnsafeMutableBufferPointer {
                    source.fill(indices: rows[start..<(start + count)], epoch: epoch, features: windows, labels: $0.baseAddress!)
                }
            } else if rows[start + count - 1] - rows[start] == count - 1 {  // consecutive windows: one call
                source.plainFeatures(rows[start]..<(rows[start] + count), into: windows)
            } else {
                for k in 0..<count { source.plainFeatures(rows[start + k]..<(rows[start + k] + 1), into: windows + k * V) }
            }
            (x + start * d).update(from: prefix.forward(windows, batch: count), count: count * d)
        }
    }

    /// The most windows whose span (`RowSpace`: a Gram matrix of n² doubles) a head is solved
    /// in when they are fewer than its features.
    public static let maxRowSpace = 4096

    /// The augmented copies of each of `windows` training windows a head fits when `requested`
    /// are asked for (from a source that augments): only as many as keep the rows within
    /// `maxCopyRows`, so a large training split fits fewer or none.
    public static func copies(_ requested: Int, windows: Int) -> Int {
        min(max(0, requested), max(0, maxCopyRows / max(1, windows) - 1))
    }

    /// The most rows a head's windows and their augmented copies make: the solve's cost grows
    /// with the square of its rows (penn15, 225 windows and 4 copies each, 1,125 rows: the fit's
    /// CPU time 11 -> 27 s; Penn Action, 1,258 windows and 2 copies, 3,774 rows: more than 4
    /// minutes against about one without copies; docs/benchmarks.md, "2D views").
    public static let maxCopyRows = 1250

    /// The epoch whose augmentation the first augmented copy of the training windows takes
    /// (the next copies the following ones): beyond any run's epochs, so that the copies are
    /// not the windows the network member trains on.
    public static let copyEpoch = 1_000_001

    /// The penalty of a head that cannot be cross-validated.
    public static let fallbackPenalty = 0.1

    /// The most multiply-adds one solve may take per evaluation of its objective (2^34):
    /// windows × classes × unknowns per class. One evaluation is two such matrix products and a
    /// solve takes up to 500 of them, so this bounds a solve at minutes; a head beyond it is
    /// trained with the network instead (10,000 classes of one sequence each: 2.4e11, hours, and
    /// the L-BFGS history alone 3.8 GB).
    public static let maxWork = 1 << 34

    /// The same for the solves of a cross-validated penalty together (2^36; 1 + 5 × 15 solves
    /// of the folds' smaller problems, most of them short warm-started steps down the penalty
    /// path). Beyond it the penalty is not cross-validated (`fallbackPenalty`). The largest
    /// shared dataset, Penn Action (1,258 windows, 15 classes), needs 1.8e9; 40 classes of a 2D
    /// set at the 1,250 rows of `maxCopyRows`, 4.8e9.
    public static let maxSearchWork = 1 << 36
}
