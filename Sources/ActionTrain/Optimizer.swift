import ActionRuntime
import PoseCore

/// An optimiser: updates the network's parameter vector in place from its gradient vector.
///
/// Every optimiser here reproduces the update of its PyTorch counterpart (`torch.optim`,
/// single-tensor path, `foreach=False`) operation by operation; the doc comment of each says
/// which formula. Updates are elementwise, so splitting the vector across threads (see
/// `Parallel`) never changes a bit.
public protocol Optimizer: AnyObject {
    /// `sgd`, `adam` or `adamw`, as in the config.
    var name: String { get }
    /// Learning rate of the next `update` (the trainer sets it from the schedule every step).
    var learningRate: Double { get set }
    /// Updates taken so far.
    var step: Int { get }
    /// One step: reads `gradients [count]`, updates `parameters [count]` in place.
    func update(parameters: UnsafeMutablePointer<Float>, gradients: UnsafePointer<Float>, count: Int)
    /// Everything needed to continue bit-identically after a restart.
    func state() -> OptimizerState
    /// Restores `state()`; throws when it was written by another optimiser or for another size.
    func restore(_ state: OptimizerState) throws
}

/// An optimiser's step counter and named state vectors (`[parameterCount]` each), in a fixed
/// order, as stored in checkpoints.
public struct OptimizerState: Equatable, Sendable {
    public var name: String
    public var step: Int
    public var buffers: [(name: String, values: [Float])]

    public init(name: String, step: Int, buffers: [(name: String, values: [Float])]) {
        self.name = name
        self.step = step
        self.buffers = buffers
    }

    public static func == (a: OptimizerState, b: OptimizerState) -> Bool {
        a.name == b.name && a.step == b.step && a.buffers.map(\.name) == b.buffers.map(\.name)
            && a.buffers.map(\.values) == b.buffers.map(\.values)
    }

    /// Checks that the state fits an optimiser called `name` with `count` parameters and the
    /// buffers `expected`, in that order.
    func check(name expectedName: String, buffers expected: [String], count: Int) throws {
        guard name == expectedName else {
            throw TrainingError.incompatibleState("the checkpoint holds \(name) state, the config asks for \(expectedName)")
        }
        guard buffers.map(\.name) == expected else {
            throw TrainingError.incompatibleState("optimiser buffers \(buffers.map(\.name)), expected \(expected)")
        }
        for b in buffers where b.values.count != count {
            throw TrainingError.incompatibleState("optimiser buffer '\(b.name)' has \(b.values.count) values for \(count) parameters")
        }
        guard step >= 0 else { throw TrainingError.incompatibleState("negative optimiser step \(step)") }
    }
}

extension TrainingConfig {
    /// The optimiser this config asks for, over `parameterCount` parameters.
    public func makeOptimizer(parameterCount n: Int) -> Optimizer {
        switch optimizer {
        case .sgd:
            return SGD(
                parameterCount: n, learningRate: learningRate, momentum: momentum, nesterov: nesterov,
                weightDecay: weightDecay, threads: threads)
        case .adam, .adamw:
            return Adam(
                parameterCount: n, learningRate: learningRate, beta1: beta1, beta2: beta2, epsilon: epsilon,
                weightDecay: weightDecay, decoupled: optimizer == .adamw, threads: threads)
        }
    }
}

/// Splits elementwise work over threads with a partition fixed by the length and the thread
/// count only, so that results never depend on scheduling. The parts run on `BLAS.parallel`'s
/// helper threads, which the step's layers have just woken (Dispatch would wake a thread per
/// call, 20-40 µs on the reference machine).
public enum Parallel {
    /// Below this many values one thread does it all (waking a second costs more).
    public static let minimumPerThread = 32_768

    /// Calls `body(range)` for contiguous chunks covering `0..<count`, concurrently. Chunk
    /// boundaries are multiples of 16 values (64 bytes), so threads never share a cache line
    /// of a 64-byte-aligned array.
    public static func chunks(_ count: Int, threads: Int, _ body: (Range<Int>) -> Void) {
        let parts = max(1, min(threads, count / minimumPerThread))
        if parts == 1 {
            body(0..<count)
            return
        }
        let chunk = ((count + parts - 1) / parts + 15) / 16 * 16
        BLAS.parallel(parts) { i in
            let lo = min(count, i * chunk), hi = min(count, lo + chunk)
            if lo < hi { body(lo..<hi) }
        }
    }

    /// Calls `body(i)` for every `i` in `0..<iterations`, spread over up to `threads` threads
    /// in contiguous runs. Each `body(i)` must write only its own outputs.
    public static func forEach(_ iterations: Int, threads: Int, _ body: (Int) -> Void) {
        let parts = max(1, min(threads, iterations))
        if parts == 1 {
            for i in 0..<iterations { body(i) }
            return
        }
        let per = (iterations + parts - 1) / parts
        BLAS.parallel(parts) { p in
            for i in (p * per)..<min(iterations, (p + 1) * per) { body(i) }
        }
    }
}

/// Gradient clipping by global norm, as `torch.nn.utils.clip_grad_norm_` (norm type 2):
/// `total = ‖g‖₂` over all parameters; when `maxNorm / (total + 1e-6) < 1`, every gradient is
/// scaled by that factor. Returns the norm before clipping.
///
/// The sum of squares is accumulated in Double over fixed blocks of 4096 values, combined in
/// order, so the result is the same for every thread count.
public enum GradientClipping {
    public static let blockSize = 4096

    @discardableResult
    public static func clip(_ g: UnsafeMutablePointer<Float>, count n: Int, maxNorm: Double, threads: Int = 1) -> Double {
        let blocks = (n + blockSize - 1) / blockSize
        var partial = [Double](repeating: 0, count: blocks)
        let useThreads = n >= 2 * Parallel.minimumPerThread ? threads : 1
        partial.withUnsafeMutableBufferPointer { sums in
            let sums = sums.baseAddress!
            Parallel.forEach(blocks, threads: useThreads) { b in
                // Four independent accumulators, combined in a fixed order.
                var s0: Double = 0, s1: Double = 0, s2: Double = 0, s3: Double = 0
                let lo = b * blockSize, hi = min(n, lo + blockSize)
                var i = lo
                while i + 4 <= hi {
                    let a = Double(g[i]), c = Double(g[i + 1]), d = Double(g[i + 2]), e = Double(g[i + 3])
                    s0 += a * a
                    s1 += c * c
                    s2 += d * d
                    s3 += e * e
                    i += 4
                }
                while i < hi {
                    s0 += Double(g[i]) * Double(g[i])
                    i += 1
                }
                sums[b] = (s0 + s1) + (s2 + s3)
            }
        }
        let total = partial.reduce(0, +).squareRoot()
        let coefficient = maxNorm / (total + 1e-6)
        if coefficient < 1 {
            let c = Float(coefficient)
            Parallel.chunks(n, threads: threads) { range in
                for i in range { g[i] *= c }
            }
        }
        return total
    }
}
