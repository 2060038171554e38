import ActionRuntime
import ActionTrain
import Foundation
import PoseCore

/// Whole training runs of a reference model of ../shared/bench on its synthetic dataset,
/// measured like `anchor_torch.py` so that scripts/bench-train can interleave both and print
/// ratios: train windows/s = n_train ÷ mean epoch time over epochs 2-4 (shuffle, gather,
/// forward, loss, backward, optimiser step; no evaluation), accuracy on train and val after
/// the last epoch, peak RSS. Prints one JSON line.
///
///     actiontrain-bench train --model mlp|conv [--data DIR] [--epochs 5] [--batch 64]
///                             [--threads 2] [--seed 0] [--ceiling] [--optimizer-threads N] [--steps N]
///
/// `--data` is the folder holding make_synth.py's raw files (default .build/bench). Models,
/// initialisation (PyTorch's default) and optimiser (Adam, lr 1e-3) are
/// `TrainingConfig.reference`. `--ceiling` also replays the step's exact GEMMs alone
/// (`LayersBench.gemms`) and reports the sgemm-bound windows/s of this batch size, measured in
/// the same process. The trainer's own phases (gather, loss, optimiser) are reported per step.
enum TrainBench {
    struct Sidecar: Decodable {
        let n: Int, frames: Int, joints: Int, channels: Int, classes: Int
        let x_file: String, y_file: String, byte_order: String
        let n_train: Int
    }

    static func run(_ args: [String]) throws {
        func value(_ flag: String) -> String? {
            guard let i = args.firstIndex(of: flag), i + 1 < args.count else { return nil }
            return args[i + 1]
        }
        if args.contains("--overhead") { return try overhead(cpu: args.contains("--cpu")) }
        let model = value("--model") ?? "mlp"
        guard var config = TrainingConfig.reference(model) else { throw BenchError("--model must be mlp or conv") }
        config.epochs = Int(value("--epochs") ?? "5") ?? 5
        config.batchSize = Int(value("--batch") ?? "64") ?? 64
        config.threads = Int(value("--threads") ?? "2") ?? 2
        config.seed = UInt64(value("--seed") ?? "0") ?? 0
        let dir = value("--data") ?? ".build/bench"
        let load = ForeignLoad()
        BLAS.threads = config.threads

        let rssStart = currentRSS()
        let (train, validation, side) = try loadSynth(dir)
        let rssData = currentRSS()
        let input = Shape(time: side.frames, channels: side.joints * side.channels)
        let layers = try config.layers(input: input, classes: side.classes)
        let network = try Network(layers: layers, input: input)
        network.initialize(seed: config.seed)
        let trainer = Trainer(network: network, config: config)
        if let t = value("--optimizer-threads").flatMap(Int.init) {
            (trainer.optimizer as? Adam)?.threads = t
            (trainer.optimizer as? SGD)?.threads = t
        }
        var epochSeconds: [Double] = [], epochLoss: [Double] = [], epochCPU: [Double] = []
        // --steps N: stop after N steps and print the time per step by phase (for profilers).
        let stepLimit = value("--steps").flatMap(Int.init)
        var cpuMark = ForeignLoad.processCPUSeconds()
        try trainer.fit(
            train: train, validation: nil, shouldStop: { stepLimit.map { trainer.timings.steps >= $0 } ?? false },
            onEpoch: { r in
                epochSeconds.append(r.seconds)
                epochLoss.append(r.trainLoss)
                let cpu = ForeignLoad.processCPUSeconds()
                epochCPU.append(cpu - cpuMark)
                cpuMark = cpu
            })
        if stepLimit != nil {
            let t = trainer.timings, us = { (s: Double) in (s / Double(max(1, t.steps)) * 1e7).rounded() / 10 }
            print("steps \(t.steps): µs per step gather \(us(t.gather)) forward \(us(t.forward)) loss \(us(t.loss)) backward \(us(t.backward)) optimizer \(us(t.optimizer)) total \(us(t.total))")
            return
        }
        let timed = epochSeconds.count >= 4 ? Array(epochSeconds[1..<4]) : Array(epochSeconds.dropFirst())
        let wps = Double(train.count) / (timed.reduce(0, +) / Double(max(1, timed.count)))
        // The process's CPU time per step over the same epochs (all threads, spinning helpers
        // included): with --threads 1, what a step costs whatever other processes do.
        let timedCPU = epochCPU.count >= 4 ? Array(epochCPU[1..<4]) : Array(epochCPU.dropFirst())
        let stepsPerEpoch = Double((train.count + config.batchSize - 1) / config.batchSize)
        let cpuPerStep = timedCPU.reduce(0, +) / Double(max(1, timedCPU.count)) / stepsPerEpoch
        let trainAccuracy = trainer.evaluate(train).accuracy
        let validationAccuracy = trainer.evaluate(validation).accuracy
        let t = trainer.timings
        func perStep(_ s: Double) -> Double { (s / Double(max(1, t.steps)) * 1e7).rounded() / 10 }
        var out: [String: Any] = [
            "framework": "actiontrain", "model": model, "threads": config.threads, "batch": config.batchSize,
            "core": BLAS.coreName, "n_params": network.parameterCount, "n_train": train.count,
            "n_val": validation.count, "epochs": config.epochs, "epoch_s": epochSeconds.map { round4($0) },
            "epoch_loss": epochLoss.map { round4($0) }, "train_windows_per_s": (wps * 10).rounded() / 10,
            "train_acc": round4(trainAccuracy), "val_acc": round4(validationAccuracy),
            "cpu_us_per_step": (cpuPerStep * 1e7).rounded() / 10,
            "step_us": [
                "gather": perStep(t.gather), "forward": perStep(t.forward), "loss": perStep(t.loss),
                "backward": perStep(t.backward), "optimizer": perStep(t.optimizer), "total": perStep(t.total),
            ],
            "dataset_mib": round4(Double(side.n * side.frames * side.joints * side.channels * 4) / 1_048_576),
            "rss_start_mib": round4(rssStart), "rss_after_data_mib": round4(rssData), "peak_rss_mib": round4(peakRSS()),
        ]
        if let adam = trainer.optimizer as? Adam {
            // Subnormal optimiser state is slow to compute with; count it.
            let subnormal = adam.m.filter(\.isSubnormal).count + adam.v.filter(\.isSubnormal).count
            out["subnormal_state_share"] = Double(subnormal) / Double(2 * adam.m.count)
        }
        if args.contains("--ceiling") {
            let gemm = LayersBench.replay(LayersBench.stepGEMMs(network, batch: config.batchSize), cpu: false)
            out["gemm_bound_windows_per_s"] = (Double(config.batchSize) / gemm).rounded()
        }
        if let share = load.share() { out["foreign_load"] = round4(share) }
        let data = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    /// The trainer's own work per step in isolation, for the MLP's 690,566 parameters: the
    /// optimiser update on 1 and 2 threads, zeroing the gradients, and the batch gather.
    /// Fastest of 30 reps of at least 20 ms each (the minimum is the least disturbed by a busy
    /// machine). `cpu`: 1 thread only, timed with the thread's CPU clock (what other processes'
    /// load barely moves).
    static func overhead(cpu: Bool) throws {
        func now() -> Double {
            guard cpu else { return Double(Clock.now()) / 1e9 }
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
        func fastest(_ body: () -> Void) -> Double {
            body()
            var best = Double.infinity
            for _ in 0..<30 {
                var calls = 0
                let start = now()
                var elapsed = 0.0
                repeat {
                    body()
                    calls += 1
                    elapsed = now() - start
                } while elapsed < 0.02
                best = min(best, elapsed / Double(calls))
            }
            return best
        }
        let n = 690_566
        var g = SeededGenerator(seed: 1)
        var p = (0..<n).map { _ in g.nextSymmetric(1) }
        let grad = (0..<n).map { _ in g.nextSymmetric(1) }
        var rows: [String] = []
        for threads in cpu ? [1] : [1, 2] {
            let optimizers: [Optimizer] = [
                Adam(parameterCount: n, threads: threads), Adam(parameterCount: n, weightDecay: 0.01, decoupled: true, threads: threads),
                SGD(parameterCount: n, learningRate: 0.01, momentum: 0.9, threads: threads),
            ]
            for opt in optimizers {
                let t = p.withUnsafeMutableBufferPointer { pp in
                    fastest { opt.update(parameters: pp.baseAddress!, gradients: grad, count: n) }
                }
                rows.append("\(opt.name)\(opt is Adam && (opt as! Adam).weightDecay > 0 ? " (wd)" : "") threads \(threads): \(format(t * 1e6)) µs")
            }
            let clip = p.withUnsafeMutableBufferPointer { pp in
                fastest { GradientClipping.clip(pp.baseAddress!, count: n, maxNorm: 1e9, threads: threads) }
            }
            rows.append("clip norm threads \(threads): \(format(clip * 1e6)) µs")
        }
        // For comparison: Adam with one division (θ −= (lr·c/(1−β1ᵗ))·m/(√v + ε·c), c = √(1−β2ᵗ)),
        // the same formula rounded differently; not what the library runs.
        var m1 = [Float](repeating: 0, count: n), v1 = [Float](repeating: 0, count: n)
        let oneDivision = p.withUnsafeMutableBufferPointer { pp in
            m1.withUnsafeMutableBufferPointer { mb in
                v1.withUnsafeMutableBufferPointer { vb in
                    grad.withUnsafeBufferPointer { gb in
                        let p = pp.baseAddress!, m = mb.baseAddress!, v = vb.baseAddress!, g = gb.baseAddress!
                        return fastest {
                            let a: Float = 1e-4, ec: Float = 1e-8 * 0.03
                            for i in 0..<n {
                                let gi = g[i]
                                let mi = m[i] + 0.1 * (gi - m[i])
                                let vi = 0.999 * v[i] + 0.001 * gi * gi
                                m[i] = mi
                                v[i] = vi
                                p[i] = p[i] - a * mi / ((vi >= 0 ? vi : 0).squareRoot() + ec)
                            }
                        }
                    }
                }
            }
        }
        rows.append("adam, one division (not used) threads 1: \(format(oneDivision * 1e6)) µs")
        let zero = p.withUnsafeMutableBufferPointer { pp in fastest { pp.update(repeating: 0) } }
        rows.append("zero \(n) gradients: \(format(zero * 1e6)) µs")
        let set = TensorSet(features: [Float](repeating: 1, count: 16_000 * 2565), labels: [Int32](repeating: 0, count: 16_000), valuesPerWindow: 2565)
        var order = Array(0..<16_000)
        order.seededShuffle(using: &g)
        var x = [Float](repeating: 0, count: 64 * 2565), y = [Int32](repeating: 0, count: 64)
        var s = 0
        let gather = fastest {
            x.withUnsafeMutableBufferPointer { xp in
                y.withUnsafeMutableBufferPointer { yp in
                    set.fill(indices: order[s..<(s + 64)], epoch: 1, features: xp.baseAddress!, labels: yp.baseAddress!)
                }
            }
            s = (s + 64) % 15_936
        }
        rows.append("gather 64 x 2565: \(format(gather * 1e6)) µs")
        for r in rows { print(r) }
    }

    /// Reads make_synth.py's raw files straight into the two tensor sets (no intermediate copy
    /// of the 205 MB file): rows [0, n_train) train, the rest validation.
    static func loadSynth(_ dir: String) throws -> (TensorSet, TensorSet, Sidecar) {
        let sidePath = "\(dir)/synth_pose.json"
        guard let sideData = FileManager.default.contents(atPath: sidePath) else {
            throw BenchError("\(sidePath) not found; run: python3 ../shared/bench/make_synth.py --out \(dir)")
        }
        let side = try JSONDecoder().decode(Sidecar.self, from: sideData)
        guard side.byte_order == "little" else { throw BenchError("\(sidePath): byte order \(side.byte_order)") }
        let V = side.frames * side.joints * side.channels
        guard let x = FileHandle(forReadingAtPath: "\(dir)/\(side.x_file)") else { throw BenchError("cannot open \(side.x_file)") }
        defer { try? x.close() }
        func read(rows: Int) throws -> [Float] {
            var values = [Float](repeating: 0, count: rows * V)
            try values.withUnsafeMutableBytes { dst in
                var done = 0
                while done < dst.count {
                    guard let chunk = try x.read(upToCount: min(16 << 20, dst.count - done)), !chunk.isEmpty else {
                        throw BenchError("\(side.x_file) is shorter than its sidecar says")
                    }
                    chunk.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: dst[done..<(done + chunk.count)]))
                    done += chunk.count
                }
            }
            return values
        }
        let trainX = try read(rows: side.n_train)
        let validX = try read(rows: side.n - side.n_train)
        guard let yData = FileManager.default.contents(atPath: "\(dir)/\(side.y_file)"), yData.count == side.n * 8 else {
            throw BenchError("\(side.y_file) is missing or has the wrong size")
        }
        let y: [Int32] = yData.withUnsafeBytes { raw in
            (0..<side.n).map { Int32(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self))) }
        }
        return (
            TensorSet(features: trainX, labels: Array(y[0..<side.n_train]), valuesPerWindow: V),
            TensorSet(features: validX, labels: Array(y[side.n_train...]), valuesPerWindow: V), side
        )
    }

    static func round4(_ v: Double) -> Double { (v * 10_000).rounded() / 10_000 }

    static func peakRSS() -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return Double(usage.ru_maxrss) / 1024  // KiB on Linux
        #else
            getrusage(RUSAGE_SELF, &usage)
            return Double(usage.ru_maxrss) / 1_048_576  // bytes on macOS
        #endif
    }

    static func currentRSS() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return .nan }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (Double(line.split(separator: " ")[1]) ?? .nan) / 1024
        }
        return .nan
    }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}
