import ActionRuntime
import ActionTrain
import Dispatch
import Foundation
import PoseCore

/// One loaded model shared by several calling threads, as an inference service runs it
/// (docs/streaming.md, "Thread safety"): the median latency of batch-1 calls and the
/// throughput of batch-1024 calls, for one caller and for `--callers N` callers at once, with
/// the networks `fit` builds by default for each architecture (`TrainingConfig()`: the MLP,
/// the dilated residual TCN and ST-GCN) and the reference convnet of `inference`, on 45-frame
/// windows of Vision's 19 body joints with their confidence.
///
///     actiontrain-bench shared [--threads N] [--callers N] [--json]
///
/// `--threads` is `BLAS.threads` (the splits of one call); each caller has its own 500
/// windows. Batch 1: `logits(_:count:into:)`, 400 calls per caller after 20 warm-up calls, the
/// median of all calls. Batch 1024: `probabilities(features:count:)` (which runs 256 windows
/// at a time: ST-GCN's activations for 1024 windows at once take 3.4 GB per caller), 3 calls
/// per caller after 1, all callers' windows over the wall time from the first call's start to
/// the last one's end. Callers start together (a barrier).
enum SharedBench {
    static let classes = ["a", "b", "c", "d", "e", "f"]

    /// The model file of `architecture` (nil: the reference convnet of `inference`).
    static func model(_ architecture: TrainingConfig.Architecture?) throws -> ActionModel {
        var config = TrainingConfig()
        config.windowFrames = 45
        config.channels = [.coordinates, .confidence]
        let input = try config.inputSpec(for: .visionBody2D, imageSize: [1920, 1080])
        let layers: [LayerSpec]
        if let architecture {
            config.architecture = architecture
            layers = try config.layers(for: input, classes: classes.count)
        } else {
            layers = InferenceBench.references[1].layers
        }
        let network = try Network(layers: layers, input: Shape(time: 45, channels: input.channelsPerFrame))
        network.initialize(seed: 0)
        return try ActionModel(bytes: try ModelFile.encode(classes: classes, input: input, network: network, provenance: .init(seed: 0)))
    }

    /// Per-call nanoseconds of every caller (batch 1), or the wall seconds of all calls (batch 1024).
    static func measure(_ model: ActionModel, callers: Int, batch: Int, calls: Int, warmUp: Int) -> (perCall: [UInt64], wall: Double) {
        let V = model.valuesPerWindow, K = model.classes.count, windows = 500
        let inputs = (0..<callers).map { c -> [Float] in
            var g = SeededGenerator(seed: UInt64(c + 1))
            return (0..<(batch == 1 ? windows * V : batch * V)).map { _ in g.nextSymmetric(2) }
        }
        final class Results: @unchecked Sendable {  // each caller writes its own slot; read after the join
            var times: [[UInt64]], first: [UInt64], last: [UInt64]
            init(_ n: Int) { (times, first, last) = (Array(repeating: [], count: n), Array(repeating: 0, count: n), Array(repeating: 0, count: n)) }
        }
        let results = Results(callers)
        let ready = DispatchGroup(), go = DispatchSemaphore(value: 0)
        for _ in 0..<callers { ready.enter() }
        let done = DispatchGroup()
        for c in 0..<callers {
            done.enter()
            let thread = Thread {
                var out = [Float](repeating: 0, count: batch * K)
                inputs[c].withUnsafeBufferPointer { w in
                    let base = w.baseAddress!
                    func call(_ k: Int) {
                        if batch == 1 {
                            model.logits(base + (k % windows) * V, count: 1, into: &out)
                        } else {
                            out = try! model.probabilities(features: inputs[c], count: batch)
                        }
                    }
                    for k in 0..<warmUp { call(k) }
                    ready.leave()
                    go.wait()
                    results.first[c] = Clock.now()
                    var times: [UInt64] = []
                    times.reserveCapacity(calls)
                    for k in 0..<calls {
                        let t0 = Clock.now()
                        call(k)
                        times.append(Clock.now() - t0)
                    }
                    results.last[c] = Clock.now()
                    results.times[c] = times
                }
                done.leave()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        ready.wait()
        for _ in 0..<callers { go.signal() }
        done.wait()
        return (results.times.flatMap { $0 }, Double(results.last.max()! - results.first.min()!) / 1e9)
    }

    static func run(_ args: [String]) throws {
        let options = try BenchArguments(args, options: ["--threads", "--callers"], flags: ["--json"])
        let threads = options.int("--threads", default: 2), callers = options.int("--callers", default: 4), json = options.has("--json")
        BLAS.threads = threads
        if !json {
            print("one model shared by callers; OpenBLAS \(BLAS.coreName), BLAS.threads \(threads), kernel \(PackedGEMM.current)")
            print("model    callers  b1 p50 µs  b1 p90 µs  b1024 windows/s  foreign load")
        }
        let families: [(String, TrainingConfig.Architecture?)] = [("mlp", .mlp), ("conv", nil), ("tcn", .tcn), ("stgcn", .stgcn)]
        for (name, architecture) in families {
            let model = try model(architecture)
            for n in Set([1, callers]).sorted() {
                let load = ForeignLoad()
                var b1 = measure(model, callers: n, batch: 1, calls: 400, warmUp: 20).perCall
                b1.sort()
                let big = measure(model, callers: n, batch: 1024, calls: 3, warmUp: 1)
                let p50 = Double(b1[b1.count / 2]) / 1e3, p90 = Double(b1[b1.count * 9 / 10]) / 1e3
                let rate = Double(n * 3 * 1024) / big.wall, foreign = load.share() ?? 0
                if json {
                    print(
                        "{\"model\": \"\(name)\", \"threads\": \(threads), \"callers\": \(n), \"b1_p50_us\": \(format(p50, 2)), "
                            + "\"b1_p90_us\": \(format(p90, 2)), \"b1024_windows_per_s\": \(format(rate, 0)), \"foreign_load\": \(format(foreign, 3))}")
                } else {
                    func col(_ s: String, _ w: Int) -> String { s.padding(toLength: w, withPad: " ", startingAt: 0) }
                    print(
                        col(name, 9) + col("\(n)", 9) + col(format(p50, 1), 11) + col(format(p90, 1), 11) + col(format(rate, 0), 17)
                            + format(foreign * 100, 1) + "%")
                }
            }
        }
    }
}
