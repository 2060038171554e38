import Foundation
import PoseCore

/// The log of the mean of M members' class probabilities, from their logits:
/// `y_k = log((1/M) Σ_m softmax(z_m)_k)`, computed as `logsumexp_m(ℓ_mk) − log M` with
/// `ℓ_m = log softmax(z_m)`. The softmax of `y` is then the mean of the probabilities, so a
/// network ending in it keeps the logits contract (docs/format.md section 4).
///
/// Backward, with `r_mk = exp(ℓ_mk − y_k) / M` (member m's share of the mean) and
/// `p_m = softmax(z_m)`: `dz_mj = dy_j r_mj − p_mj Σ_k dy_k r_mk`.
struct ProbabilityAverage {
    let members: Int, classes: Int
    private let logp = Buffer(), y = Buffer(), dz = Buffer()  // [M, B, K], [B, K], [M, B, K]

    init(members: Int, classes: Int) {
        self.members = members
        self.classes = classes
    }

    /// `logits[m]` points at member m's `[B, K]`; returns `y [B, K]`.
    func forward(_ logits: [UnsafePointer<Float>], batch: Int) -> UnsafePointer<Float> {
        let K = classes, n = batch * K
        logp.reserve(members * n)
        y.reserve(n)
        for (m, z) in logits.enumerated() { Self.logSoftmax(z, into: logp.pointer + m * n, batch: batch, classes: K) }
        let logM = logf(Float(members))
        for i in 0..<n {
            var top = -Float.infinity
            for m in 0..<members { top = max(top, logp.pointer[m * n + i]) }
            var s: Float = 0
            for m in 0..<members { s += expf(logp.pointer[m * n + i] - top) }
            y.pointer[i] = top + logf(s) - logM
        }
        return UnsafePointer(y.pointer)
    }

    /// `l = z − (max z + log Σ exp(z − max z))` per row of `z [B, K]`, in float32.
    static func logSoftmax(_ z: UnsafePointer<Float>, into l: UnsafeMutablePointer<Float>, batch: Int, classes K: Int) {
        for b in 0..<batch {
            let zb = z + b * K, lb = l + b * K
            var top = -Float.infinity
            for k in 0..<K { top = max(top, zb[k]) }
            var s: Float = 0
            for k in 0..<K { s += expf(zb[k] - top) }
            let lse = top + logf(s)
            for k in 0..<K { lb[k] = zb[k] - lse }
        }
    }

    /// The gradient of member m's logits, `[B, K]`, for `dy [B, K]` of the last forward.
    func backward(_ dy: UnsafePointer<Float>, member m: Int, batch: Int) -> UnsafePointer<Float> {
        let K = classes, n = batch * K
        dz.reserve(members * n)
        let l = logp.pointer + m * n, out = dz.pointer + m * n
        let logM = logf(Float(members))
        for b in 0..<batch {
            var dot: Float = 0
            for k in 0..<K {
                let i = b * K + k
                out[i] = dy[i] * expf(l[i] - y.pointer[i] - logM)  // dy_k r_mk
                dot += out[i]
            }
            for k in 0..<K { out[b * K + k] -= expf(l[b * K + k]) * dot }
        }
        return UnsafePointer(out)
    }
}

/// The weighted mean of M members' log-probabilities, from their logits:
/// `y_k = Σ_m w_m ℓ_mk` with `ℓ_m = log softmax(z_m)`. The softmax of `y` is the normalised
/// weighted geometric mean of the members' probabilities, `∝ Π_m p_mk^(w_m)` (log-linear pooling,
/// a product of experts): a class one member finds unlikely stays unlikely.
///
/// Backward, with `p_m = softmax(z_m)`: `dz_mj = w_m (dy_j − p_mj Σ_k dy_k)`.
struct LogProbabilityAverage {
    let weights: [Float], classes: Int
    private let logp = Buffer(), y = Buffer(), dz = Buffer()  // [M, B, K], [B, K], [M, B, K]

    init(weights: [Float], classes: Int) {
        self.weights = weights
        self.classes = classes
    }

    /// `logits[m]` points at member m's `[B, K]`; returns `y [B, K]`.
    func forward(_ logits: [UnsafePointer<Float>], batch: Int) -> UnsafePointer<Float> {
        let K = classes, n = batch * K
        logp.reserve(weights.count * n)
        y.reserve(n)
        y.pointer.update(repeating: 0, count: n)
        for (m, z) in logits.enumerated() {
            ProbabilityAverage.logSoftmax(z, into: logp.pointer + m * n, batch: batch, classes: K)
            let l = logp.pointer + m * n, w = weights[m]
            for i in 0..<n { y.pointer[i] += w * l[i] }
        }
        return UnsafePointer(y.pointer)
    }

    /// The gradient of member m's logits, `[B, K]`, for `dy [B, K]` of the last forward.
    func backward(_ dy: UnsafePointer<Float>, member m: Int, batch: Int) -> UnsafePointer<Float> {
        let K = classes, n = batch * K
        dz.reserve(weights.count * n)
        let l = logp.pointer + m * n, out = dz.pointer + m * n, w = weights[m]
        for b in 0..<batch {
            var total: Float = 0
            for k in 0..<K { total += dy[b * K + k] }
            for k in 0..<K { out[b * K + k] = w * (dy[b * K + k] - expf(l[b * K + k]) * total) }
        }
        return UnsafePointer(out)
    }
}

/// A multi-stream model in one network: M members (layer lists over the same input, each
/// ending in `[1, K]` logits, typically starting with `selectChannels` for their own channel
/// blocks) whose class probabilities are averaged (`ProbabilityAverage`), or with `weights`
/// whose log-probabilities are (`LogProbabilityAverage`, the `averageLogProbabilities` kind).
///
/// Parameters are the members' in order, named `members.<m>.<j>.<name>`.
/// Backward: each member gets its share (`ProbabilityAverage.backward`); `dx = Σ_m dx_m`.
final class AverageProbabilities: LayerContainer {
    let members: [[Layer]]
    private var chains: [LayerChain]
    let inputShape: Shape, outputShape: Shape
    /// Nil: the mean of the probabilities; else the weighted mean of the log-probabilities.
    let weights: [Float]?
    private let average: ProbabilityAverage
    private let logAverage: LogProbabilityAverage
    private let dx = Buffer()
    var spec: LayerSpec {
        let lists = members.map { $0.map(\.spec) }
        return weights.map { .averageLogProbabilities(lists, weights: $0) } ?? .averageProbabilities(lists)
    }

    init(members: [[Layer]], input: Shape, output: Shape, weights: [Float]? = nil) {
        self.members = members
        chains = members.map(LayerChain.init)
        inputShape = input
        outputShape = output
        self.weights = weights
        average = ProbabilityAverage(members: members.count, classes: output.channels)
        logAverage = LogProbabilityAverage(weights: weights ?? [], classes: output.channels)
    }

    private var all: [Layer] { members.flatMap { $0 } }

    var parameterShapes: [ParameterShape] {
        members.enumerated().flatMap { m, layers in
            layers.enumerated().flatMap { j, layer in
                layer.parameterShapes.map { ParameterShape("members.\(m).\(j).\($0.name)", $0.shape, layout: $0.layout) }
            }
        }
    }

    func bind(parameters: UnsafeMutablePointer<Float>, gradients: UnsafeMutablePointer<Float>) {
        var offset = 0
        for layer in all {
            layer.bind(parameters: parameters + offset, gradients: gradients + offset)
            offset += layer.parameterCount
        }
    }

    func initialize(using g: inout SeededGenerator) {
        for layer in all { layer.initialize(using: &g) }  // one stream: each member starts elsewhere
    }

    var sublayers: [Layer] { all }

    private var pool: GradientPool?

    /// The members' chains share the pool; `dx`, the sum over members, stays this layer's own.
    func attach(_ pool: GradientPool) {
        self.pool = pool
        for m in chains.indices { chains[m].attach(pool) }
    }

    func forward(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        var logits: [UnsafePointer<Float>] = []
        for chain in chains { logits.append(chain.forward(x, batch: batch, mode: &mode)) }
        return weights == nil ? average.forward(logits, batch: batch) : logAverage.forward(logits, batch: batch)
    }

    /// `dy` stays pinned in the pool until the last member's share is taken from it.
    func backward(_ dy: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        pool?.pin(dy)
        defer { pool?.unpin(dy) }
        return backward(batch: batch, needInputGradient: needInputGradient) { m in
            weights == nil ? average.backward(dy, member: m, batch: batch) : logAverage.backward(dy, member: m, batch: batch)
        }
    }

    /// `dx = Σ_m` member m's input gradient for its logits' gradient `dz(m)`.
    private func backward(batch: Int, needInputGradient: Bool, _ dz: (Int) -> UnsafePointer<Float>) -> UnsafePointer<Float>? {
        let n = batch * inputShape.count
        if needInputGradient {
            dx.reserve(n)
            dx.pointer.update(repeating: 0, count: n)
        }
        for (m, chain) in chains.enumerated() {
            let g = chain.backward(dz(m), batch: batch, needInputGradient: needInputGradient)
            if needInputGradient, let g { for i in 0..<n { dx.pointer[i] += g[i] } }
        }
        return needInputGradient ? UnsafePointer(dx.pointer) : nil
    }

    // MARK: - Training member by member (`Network.forwardMembers`)

    private let memberLogits = Buffer()  // [M, B, K]

    /// Each member's logits, member-major `[M, B, K]`.
    func forwardMembers(_ x: UnsafePointer<Float>, batch: Int, mode: inout ForwardMode) -> UnsafePointer<Float> {
        let n = batch * outputShape.channels
        memberLogits.reserve(members.count * n)
        for (m, chain) in chains.enumerated() { (memberLogits.pointer + m * n).update(from: chain.forward(x, batch: batch, mode: &mode), count: n) }
        return UnsafePointer(memberLogits.pointer)
    }

    /// The combination of member-major logits `[M, B, K]`, as `forward` makes it.
    func combine(_ logits: UnsafePointer<Float>, batch: Int) -> UnsafePointer<Float> {
        let n = batch * outputShape.channels
        let each = (0..<members.count).map { logits + $0 * n }
        return weights == nil ? average.forward(each, batch: batch) : logAverage.forward(each, batch: batch)
    }

    /// Back-propagates the members' own logit gradients `dz [M, B, K]`.
    func backwardMembers(_ dz: UnsafePointer<Float>, batch: Int, needInputGradient: Bool) -> UnsafePointer<Float>? {
        backward(batch: batch, needInputGradient: needInputGradient) { m in dz + m * batch * self.outputShape.channels }
    }
}

extension ShapeCheck {
    /// The class count K of branches that must each give `[1, K]` logits (the same K).
    func logitBranches(_ branches: [(name: String, layers: [LayerSpec])], input: Shape) throws -> Shape {
        var output: Shape?
        for (name, layers) in branches {
            let s = try chain(layers, input: input, branch: name)
            guard s.time == 1 else { throw invalid("\(name) gives \(s) per window; it must end in [1, classes] logits") }
            if let o = output, o != s { throw invalid("\(name) gives \(s) per window, the first gives \(o); they must agree") }
            output = s
        }
        guard let output else { throw invalid("there must be at least one member") }
        return output
    }
}

/// A kind that combines members' logits (`averageProbabilities`, `averageLogProbabilities`):
/// what code that walks members (calibration, linear heads) needs of either.
public protocol MemberCombinationKind: LayerKind {
    var members: [[LayerSpec]] { get }
    /// The same combination of other members (as many).
    func with(members: [[LayerSpec]]) -> LayerSpec
}

/// `{"type": "averageProbabilities", "members": [[layer], ...]}`: the log of the mean of the
/// members' softmax probabilities (each member a layer list giving `[1, K]`).
public struct AverageProbabilitiesKind: MemberCombinationKind {
    public static let typeName = "averageProbabilities"
    public var members: [[LayerSpec]]
    public init(members: [[LayerSpec]]) { self.members = members }
    public init(fields f: some LayerFieldReader) throws { self.init(members: try f.layerLists("members")) }
    public var fields: [(key: String, value: LayerField)] { [("members", .layerLists(members))] }
    public var summary: String { "averageProbabilities of \(members.count) members: " + members.map(Self.brief).joined(separator: "; ") }

    /// A layer list in a few words: its first layer and how many follow.
    static func brief(_ layers: [LayerSpec]) -> String {
        guard let first = layers.first else { return "the identity" }
        return first.kind.summary + (layers.count > 1 ? " and \(layers.count - 1) more layers" : "")
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        let branches = members.enumerated().map { (name: "members.\($0.offset)", layers: $0.element) }
        return LayerShapes(output: try check.logitBranches(branches, input: input))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        let built = try members.enumerated().map { try builder.chain($0.element, input: input, branch: "members.\($0.offset)").layers }
        return AverageProbabilities(members: built, input: input, output: shapes.output)
    }

    /// Each member, LogSoftmax, then `log mean exp` over the members.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let logp = try members.enumerated().map { m, layers in
            g.logSoftmax(try g.emit(layers, prefix: "\(p)members.\(m).", input: x, shape: shape), name: p + "logsoftmax")
        }
        return g.logMeanExp(logp, name: p + "average")
    }

    public static func example(input: Shape) -> AverageProbabilitiesKind {
        AverageProbabilitiesKind(members: exampleMembers(input: input))
    }

    static func exampleMembers(input: Shape) -> [[LayerSpec]] {
        [
            [.globalAveragePool, .linear(inputs: input.channels, outputs: 3)],
            [.selectChannels([1, 0]), .flatten, .linear(inputs: input.time * 2, outputs: 3)],
        ]
    }

    public func with(members: [[LayerSpec]]) -> LayerSpec { .averageProbabilities(members) }
}

/// `{"type": "averageLogProbabilities", "members": [[layer], ...], "weights": [w, ...]}`: the
/// weighted mean of the members' log-softmax probabilities, `y = Σ_m w_m log softmax(z_m)`
/// (`LogProbabilityAverage`; weights positive, one per member).
public struct AverageLogProbabilitiesKind: MemberCombinationKind {
    public static let typeName = "averageLogProbabilities"
    public var members: [[LayerSpec]]
    public var weights: [Float]
    public init(members: [[LayerSpec]], weights: [Float]) {
        self.members = members
        self.weights = weights
    }
    public init(fields f: some LayerFieldReader) throws { self.init(members: try f.layerLists("members"), weights: try f.floats("weights")) }
    public var fields: [(key: String, value: LayerField)] { [("members", .layerLists(members)), ("weights", .floats(weights))] }
    public var summary: String {
        "averageLogProbabilities of \(members.count) members (weights \(weights.map { "\($0)" }.joined(separator: ", "))): "
            + members.map(AverageProbabilitiesKind.brief).joined(separator: "; ")
    }

    public func shapes(input: Shape, check: ShapeCheck) throws -> LayerShapes {
        guard weights.count == members.count else { throw check.invalid("has \(weights.count) weights for \(members.count) members") }
        guard weights.allSatisfy({ $0 > 0 && $0.isFinite }) else { throw check.invalid("weights must be positive and finite, got \(weights)") }
        let branches = members.enumerated().map { (name: "members.\($0.offset)", layers: $0.element) }
        return LayerShapes(output: try check.logitBranches(branches, input: input))
    }

    public func makeLayer(input: Shape, shapes: LayerShapes, builder: LayerBuilder) throws -> Layer {
        let built = try members.enumerated().map { try builder.chain($0.element, input: input, branch: "members.\($0.offset)").layers }
        return AverageProbabilities(members: built, input: input, output: shapes.output, weights: weights)
    }

    /// Each member, LogSoftmax, times its weight, summed.
    public func exportONNX(_ g: ONNXGraph, input x: String, shape: Shape, prefix p: String) throws -> String {
        let terms = try members.enumerated().map { m, layers in
            let logp = g.logSoftmax(try g.emit(layers, prefix: "\(p)members.\(m).", input: x, shape: shape), name: p + "logsoftmax")
            return g.node("Mul", [logp, g.floats("\(p)weight.\(m)", [], [weights[m]])], name: p + "weighted")
        }
        return terms.dropFirst().reduce(terms[0]) { g.node("Add", [$0, $1], name: p + "average") }
    }

    public static func example(input: Shape) -> AverageLogProbabilitiesKind {
        AverageLogProbabilitiesKind(members: AverageProbabilitiesKind.exampleMembers(input: input), weights: [0.75, 0.25])
    }

    public func with(members: [[LayerSpec]]) -> LayerSpec { .averageLogProbabilities(members, weights: weights) }
}

extension LayerSpec {
    /// Multi-stream: the log of the mean of the members' probabilities.
    public static func averageProbabilities(_ members: [[LayerSpec]]) -> LayerSpec {
        LayerSpec(AverageProbabilitiesKind(members: members))
    }

    /// Multi-stream: the weighted mean of the members' log-probabilities.
    public static func averageLogProbabilities(_ members: [[LayerSpec]], weights: [Float]) -> LayerSpec {
        LayerSpec(AverageLogProbabilitiesKind(members: members, weights: weights))
    }
}
