import ActionRuntime
import ActionTrain
import Foundation
import PoseCore

/// Forward + backward of the two reference networks of ../shared/bench (the temporal convnet
/// and the MLP), per step at batch 64 and 256 with 1 and 2 threads, and batch-1 inference
/// latency. A step here is `zeroGradients + forward (training) + backward` — no loss and no
/// optimiser (the trainer's benchmark times whole training runs).
///
/// The GEMM share comes from replaying the exact GEMM calls of one step (same shapes, same
/// transposes, β as in the layers) on their own buffers: `gemm` is that time, `other` is the
/// step minus it (im2col, col2im, bias, ReLU, pooling, dbias, ...). The sgemm-bound ceilings
/// are RESULTS.md's (batch-64 shapes, environment as set: Haswell kernel), and `gemm-bound`
/// is `batch / replayed GEMM time` measured in this run.
enum LayersBench {
    struct Model {
        let name: String
        let layers: [LayerSpec]
        let input = Shape(time: 45, channels: 57)
        let ceiling: [Int: Double]  // RESULTS.md sgemm-bound training ceiling, windows/s by threads
        let torchTrain: [Int: Double]  // PyTorch training windows/s (whole step with Adam)
        let torchLatency: [Int: Double]  // PyTorch batch-1 latency µs
    }

    static let conv = Model(
        name: "conv",
        layers: [
            .conv1d(inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
            .conv1d(inputs: 64, outputs: 128, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
            .globalAveragePool, .linear(inputs: 128, outputs: 6),
        ],
        ceiling: [1: 8_121, 2: 15_848], torchTrain: [1: 7_811, 2: 11_312], torchLatency: [1: 110.5, 2: 100.6])

    static let mlp = Model(
        name: "mlp",
        layers: [
            .flatten, .linear(inputs: 2565, outputs: 256), .relu, .linear(inputs: 256, outputs: 128), .relu,
            .linear(inputs: 128, outputs: 6),
        ],
        ceiling: [1: 42_447, 2: 78_532], torchTrain: [1: 9_943, 2: 15_652], torchLatency: [1: 53.7, 2: 54.2])

    /// The GEMM calls of one training step of `network` at `batch` (zeroGradients, forward in
    /// training mode, backward), exactly as its layers make them, grouped as they run
    /// (`GEMMRecorder`).
    static func stepGEMMs(_ network: Network, batch: Int) -> [GEMMRecorder.Call] {
        var g = SeededGenerator(seed: 9)
        let x = (0..<(batch * network.inputShape.count)).map { _ in g.nextSymmetric(1) }
        let dlogits = (0..<(batch * network.classCount)).map { _ in g.nextSymmetric(1) / Float(batch) }
        let calls = GEMMRecorder.record {
            var mode = ForwardMode.training(seed: 3)
            network.zeroGradients()
            x.withUnsafeBufferPointer { _ = network.forward($0.baseAddress!, batch: batch, mode: &mode) }
            dlogits.withUnsafeBufferPointer { _ = network.backward($0.baseAddress!, batch: batch) }
        }
        precondition(!calls.isEmpty, "no GEMM recorded: the runtime's cblas_sgemm calls did not reach GEMMRecorder")
        return calls
    }

    static func row(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { $0.0.padding(toLength: $0.1, withPad: " ", startingAt: 0) }.joined()
    }

    /// Options: `conv` or `mlp` (one model), `graphconv` (the graphConv table alone), `fourier`
    /// (the fourierPyramid table alone), `--batch N`, `--threads N`, `--steps-only`,
    /// `--latency-only` (to profile one configuration), `--openblas` (every product on OpenBLAS,
    /// none on the runtime's own kernel: `BLAS.ownKernel`), and `--cpu` (with `--threads 1`):
    /// time steps with this thread's CPU clock, which other processes' load barely affects —
    /// for comparing the non-GEMM cost of two versions on a busy machine, not for windows/s.
    static func run(_ args: [String]) throws {
        func value(_ flag: String) throws -> Int? {
            guard let i = args.firstIndex(of: flag) else { return nil }
            guard i + 1 < args.count, let v = Int(args[i + 1]), v > 0 else { throw BenchError.usage("\(flag) needs a positive integer") }
            return v
        }
        if args.contains("--openblas") { BLAS.ownKernelEnabled = false }
        let cpu = args.contains("--cpu"), threadCounts = try value("--threads").map { [$0] } ?? [1, 2]
        if cpu && threadCounts != [1] { throw BenchError.usage("--cpu needs --threads 1") }
        if args.contains("graphconv") { return try graphConvTable(threadCounts: threadCounts, cpu: cpu) }
        if args.contains("fourier") { return try fourierTable(threadCounts: threadCounts, cpu: cpu) }
        if args.contains("natops") {
            let only = TrainingConfig.Architecture.allCases.filter { args.contains($0.rawValue) }
            return try natopsTable(only.isEmpty ? [.tcn, .stgcn] : only, threadCounts: threadCounts, cpu: cpu)
        }
        let models = [conv, mlp].filter { args.contains($0.name) || !(args.contains("conv") || args.contains("mlp")) }
        let batches = try value("--batch").map { [$0] } ?? [64, 256]
        let load = ForeignLoad()
        print("Layers forward+backward, OpenBLAS core \(BLAS.coreName); anchors: ../shared/bench/RESULTS.md (env as set)")
        print("step = zeroGradients + forward(training) + backward; no loss, no optimiser. Medians of 5 reps of >= 0.1 s.")
        print("ceiling = RESULTS.md sgemm-bound training ceiling (batch-64 GEMM shapes); torch = PyTorch whole training step.\n")
        let widths = [6, 7, 5, 10, 11, 9, 10, 11, 9, 9, 9, 8]
        print(row(["model", "batch", "thr", "ms/step", "windows/s", "gemm %", "other ms", "gemm-bound", "ceiling", "ratio", "torch", "ratio"], widths))
        for model in models where !args.contains("--latency-only") {
            for batch in batches {
                for threads in threadCounts {
                    BLAS.threads = threads
                    let net = try Network(layers: model.layers, input: model.input)
                    net.initialize(seed: 1)
                    let step = stepSeconds(net, batch: batch, cpu: cpu)
                    let calls = stepGEMMs(net, batch: batch)
                    let gemmTime = replay(calls, cpu: cpu)
                    if args.contains("--calls") { printCalls(calls, cpu: cpu) }
                    let wps = Double(batch) / step
                    let ceiling = model.ceiling[threads]!, torch = model.torchTrain[threads]!
                    print(
                        row(
                            [
                                model.name, "\(batch)", "\(threads)", format(step * 1e3, 3), format(wps, 0),
                                format(100 * gemmTime / step, 1), format((step - gemmTime) * 1e3, 3),
                                format(Double(batch) / gemmTime, 0), format(ceiling, 0), format(wps / ceiling, 2),
                                format(torch, 0), format(wps / torch, 2),
                            ], widths))
                }
            }
        }
        if !args.contains("--latency-only") { try threadComparison(models) }
        if args.contains("--steps-only") { return }
        print("\nBatch-1 inference latency (forward only, logits), median of 2000 calls after 100 warm-up calls")
        let lw = [6, 5, 12, 12, 8]
        print(row(["model", "thr", "µs median", "torch µs", "ratio"], lw))
        for model in models {
            for threads in threadCounts {
                BLAS.threads = threads
                let net = try Network(layers: model.layers, input: model.input)
                net.initialize(seed: 1)
                var g = SeededGenerator(seed: 4)
                let windows = 64, V = model.input.count
                let x = (0..<(windows * V)).map { _ in g.nextSymmetric(1) }
                var times: [Double] = []
                x.withUnsafeBufferPointer { xp in
                    for i in 0..<2100 {
                        let start = Clock.now()
                        _ = net.forward(xp.baseAddress! + (i % windows) * V, batch: 1)
                        if i >= 100 { times.append(Double(Clock.now() - start) / 1e3) }
                    }
                }
                let median = times.sorted()[times.count / 2], torch = model.torchLatency[threads]!
                print(row([model.name, "\(threads)", format(median, 1), format(torch, 1), format(median / torch, 2)], lw))
            }
        }
        if let share = load.share() { print("\nforeign load during the run: \(format(100 * share, 1))% of the machine") }
    }

    /// Whether one training step's logits and gradients at batch 64 are bit-identical with
    /// 1 and 2 BLAS threads (`BLAS.gemm` computes a large product as one block of C per thread).
    static func threadComparison(_ models: [Model]) throws {
        print("\nLogits and gradients of one step at batch 64 (same weights and inputs):")
        for model in models {
            let net = try Network(layers: model.layers, input: model.input)
            var g = SeededGenerator(seed: 7)
            let x = (0..<(64 * model.input.count)).map { _ in g.nextSymmetric(1) }
            let dlogits = (0..<(64 * net.classCount)).map { _ in g.nextSymmetric(1) / 64 }
            func step(_ threads: Int) -> [Float] {
                BLAS.threads = threads
                net.initialize(seed: 1)
                net.zeroGradients()
                var mode = ForwardMode.training(seed: 3)
                let logits = x.withUnsafeBufferPointer { Array(UnsafeBufferPointer(start: net.forward($0.baseAddress!, batch: 64, mode: &mode), count: 64 * net.classCount)) }
                dlogits.withUnsafeBufferPointer { _ = net.backward($0.baseAddress!, batch: 64) }
                return logits + Array(UnsafeBufferPointer(start: net.gradients, count: net.parameterCount))
            }
            func compare(_ a: [Float], _ b: [Float]) -> String {
                let differing = zip(a, b).filter { $0.0.bitPattern != $0.1.bitPattern }.count
                let worst = zip(a, b).map { abs($0.0 - $0.1) / max(abs($0.0), 1e-30) }.max() ?? 0
                return differing == 0 ? "bit-identical" : "\(differing) of \(a.count) values differ (max relative difference \(worst))"
            }
            let a = step(1), b = step(2), c = step(2), d = step(1)
            print("  \(model.name): 1 vs 2 threads \(compare(a, b)); 2 threads twice \(compare(b, c)); 1 thread twice \(compare(a, d))")
        }
    }

    /// `Clock.median`, or the same on this thread's CPU-time clock.
    static func median(cpu: Bool, _ body: () -> Void) -> Double {
        guard cpu else { return Clock.median(body) }
        func now() -> Double {
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
        body()
        var perCall: [Double] = []
        for _ in 0..<5 {
            var calls = 0
            let start = now()
            repeat {
                body()
                calls += 1
            } while now() - start < 0.1
            perCall.append((now() - start) / Double(calls))
        }
        return perCall.sorted()[2]
    }

    enum BenchError: Error, CustomStringConvertible {
        case usage(String)
        var description: String {
            switch self {
            case .usage(let m): return m
            }
        }
    }

    /// `--calls`: each GEMM of the step alone (its region's parts on their threads), in order:
    /// shape, median µs and GFLOP/s — where a step's GEMM time goes.
    static func printCalls(_ calls: [GEMMRecorder.Call], cpu: Bool) {
        let regions = Dictionary(grouping: calls, by: \.region).sorted { $0.key < $1.key }
        for (_, region) in regions {
            let seconds = replay(region, cpu: cpu)
            let flops = region.reduce(0.0) { $0 + 2 * Double($1.m) * Double($1.n) * Double($1.k) }
            var shapes: [(String, Int)] = []  // distinct shapes in order, with their counts
            for c in region {
                let own = BLAS.ownKernel(transposeA: c.transposeA, n: c.n, k: c.k, alpha: 1, beta: c.beta)
                let shape = "m \(c.m) n \(c.n) k \(c.k)\(c.transposeA ? " Aᵀ" : "")\(c.transposeB ? " Bᵀ" : "") β \(c.beta)\(own ? " own" : "")"
                if let i = shapes.firstIndex(where: { $0.0 == shape }) { shapes[i].1 += 1 } else { shapes.append((shape, 1)) }
            }
            print(
                "    \(shapes.map { "\($0.1) x \($0.0)" }.joined(separator: ", ")): "
                    + "\(format(seconds * 1e6, 1)) µs, \(format(flops / seconds / 1e9, 1)) GFLOP/s")
        }
    }

    /// Median seconds for one replay of `calls` (`stepGEMMs`) on buffers of the right sizes:
    /// each region's parts at once with `BLAS.parallel`, as the layers ran them.
    static func replay(_ calls: [GEMMRecorder.Call], cpu: Bool) -> Double {
        // Calls of the same shape and part share buffers, as a layer reuses its buffers for
        // every chunk (separate buffers per call would make the replay slower than the step).
        typealias Call = GEMMRecorder.Call
        var index: [String: Int] = [:], slot: [Int] = []
        var buffers: [(a: [Float], b: [Float], c: [Float])] = []
        for c in calls {
            let key = "\(c.m) \(c.n) \(c.k) \(c.transposeA) \(c.transposeB) \(c.lda) \(c.ldb) \(c.ldc) \(c.part)"
            if index[key] == nil {
                index[key] = buffers.count
                let aRows = c.transposeA ? c.k : c.m, bRows = c.transposeB ? c.n : c.k
                buffers.append(
                    (
                        [Float](repeating: 0.01, count: aRows * c.lda), [Float](repeating: 0.01, count: bRows * c.ldb),
                        [Float](repeating: 0, count: c.m * c.ldc)
                    ))
            }
            slot.append(index[key]!)
        }
        // Regions in order: [(parts, calls of each part)].
        var regions: [[[Int]]] = []
        var last = -1
        for (i, c) in calls.enumerated() {
            if c.region != last {
                regions.append([])
                last = c.region
            }
            while regions[regions.count - 1].count <= c.part { regions[regions.count - 1].append([]) }
            regions[regions.count - 1][c.part].append(i)
        }
        let pointers = buffers.map { b -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) in
            func copy(_ v: [Float]) -> UnsafeMutablePointer<Float> {
                let p = UnsafeMutablePointer<Float>.allocate(capacity: v.count)
                p.initialize(from: v, count: v.count)
                return p
            }
            return (copy(b.a), copy(b.b), copy(b.c))
        }
        defer { for p in pointers { p.0.deallocate(); p.1.deallocate(); p.2.deallocate() } }
        func run(_ i: Int) {
            let c = calls[i], (a, b, out) = pointers[slot[i]]
            BLAS.gemm(
                transposeA: c.transposeA, transposeB: c.transposeB, m: c.m, n: c.n, k: c.k, a: a, lda: c.lda, b: b,
                ldb: c.ldb, beta: c.beta, c: out, ldc: c.ldc)
        }
        return median(cpu: cpu) {
            for region in regions {
                if region.count == 1 {
                    for i in region[0] { run(i) }
                } else {
                    BLAS.parallel(region.count) { p in for i in region[p] { run(i) } }
                }
            }
        }
    }

    /// ST-GCN-sized `graphConv` layers: forward (training mode) and backward (with the input
    /// gradient) per batch, and the replayed GEMM time of one forward + backward. Partitions
    /// P = 3 are a tree's self / towards-root / away-from-root links (joint j's parent (j − 1)/2),
    /// normalised by degree; P = 1 is the identity (the temporal convolution). `--cpu` (with
    /// `--threads 1`) times with this thread's CPU clock, for a loaded machine.
    static func graphConvTable(threadCounts: [Int], cpu: Bool) throws {
        struct Case { let batch, time, joints, inputs, outputs, kernel, partitions: Int }
        let cases = [
            Case(batch: 64, time: 64, joints: 25, inputs: 3, outputs: 64, kernel: 1, partitions: 3),  // NTU spatial, first layer
            Case(batch: 64, time: 64, joints: 25, inputs: 64, outputs: 64, kernel: 1, partitions: 3),  // spatial, inner layer
            Case(batch: 64, time: 64, joints: 25, inputs: 64, outputs: 64, kernel: 9, partitions: 1),  // temporal, identity
            Case(batch: 64, time: 64, joints: 25, inputs: 9, outputs: 64, kernel: 9, partitions: 3),
            Case(batch: 32, time: 32, joints: 15, inputs: 9, outputs: 32, kernel: 9, partitions: 3),
            Case(batch: 32, time: 32, joints: 15, inputs: 3, outputs: 32, kernel: 1, partitions: 3),
            Case(batch: 64, time: 64, joints: 25, inputs: 64, outputs: 64, kernel: 5, partitions: 1),  // temporal, K = 5: Winograd
            // `fit --architecture stgcn` on NATOPS (8 joints, 45-frame windows, widths 64, kernel 5):
            Case(batch: 64, time: 45, joints: 8, inputs: 4, outputs: 64, kernel: 1, partitions: 3),  // first spatial
            Case(batch: 64, time: 45, joints: 8, inputs: 64, outputs: 64, kernel: 1, partitions: 3),  // inner spatial
            Case(batch: 64, time: 45, joints: 8, inputs: 64, outputs: 64, kernel: 5, partitions: 1),  // temporal
        ]
        func adjacency(_ J: Int, partitions P: Int) -> [[Float]] {
            var a = [[Float]](repeating: [Float](repeating: 0, count: J * J), count: P)
            for j in 0..<J { a[0][j * J + j] = 1 }
            guard P == 3 else { return a }
            for j in 1..<J {
                let parent = (j - 1) / 2
                a[1][j * J + parent] = 1  // towards the root
                a[2][parent * J + j] = 1  // away from the root
            }
            for p in 1...2 {
                for j in 0..<J {
                    let n = (0..<J).reduce(Float(0)) { $0 + a[p][j * J + $1] }
                    for i in 0..<J where n > 0 { a[p][j * J + i] /= n }
                }
            }
            return a
        }
        let load = ForeignLoad()
        defer { if let share = load.share() { print("\nforeign load during the run: \(format(100 * share, 1))% of the machine") } }
        print("graphConv forward (training) and backward (with dx) per batch, ms; gemm = the step's GEMMs replayed. Medians of 5 reps of >= 0.1 s.")
        let widths = [6, 5, 5, 5, 5, 5, 4, 5, 10, 10, 10, 9]
        print(row(["B", "T", "J", "I", "O", "K", "P", "thr", "fwd ms", "bwd ms", "gemm ms", "gemm %"], widths))
        for c in cases {
            for threads in threadCounts {
                BLAS.threads = threads
                let spec = LayerSpec.graphConv(
                    joints: c.joints, inputs: c.inputs, outputs: c.outputs, kernel: c.kernel, adjacency: adjacency(c.joints, partitions: c.partitions))
                let net = try Network(layers: [spec, .flatten], input: Shape(time: c.time, channels: c.joints * c.inputs))
                net.initialize(seed: 1)
                let (forward, backward, gemm) = timeStep(net, batch: c.batch, cpu: cpu)
                print(
                    row(
                        [
                            "\(c.batch)", "\(c.time)", "\(c.joints)", "\(c.inputs)", "\(c.outputs)", "\(c.kernel)", "\(c.partitions)", "\(threads)",
                            format(forward * 1e3, 3), format(backward * 1e3, 3), format(gemm * 1e3, 3), format(100 * gemm / (forward + backward), 1),
                        ], widths))
            }
        }
    }

    /// The networks of `actiontrain fit natops.jsonl --architecture tcn|stgcn --recipe none
    /// --widths 64,64,64 --kernel 5` (window 45 frames of 8 joints' coordinates and mask, 32
    /// channels; layerNorm, dropout 0.1, residual blocks) at its batch of 64: one training step
    /// (zeroGradients, forward in training mode, backward), the step's GEMMs replayed alone, and
    /// their multiply-adds (Σ m·n·k of the calls made, Winograd's products as made), with the
    /// rates they give. `tcn` or `stgcn` among the arguments: that network alone.
    static func natopsTable(_ architectures: [TrainingConfig.Architecture], threadCounts: [Int], cpu: Bool) throws {
        var config = TrainingConfig()
        config.recipe = .none
        config.widths = [64, 64, 64]
        config.kernel = 5
        config.windowFrames = 45
        config.channels = [.coordinates, .mask]
        let input = try config.inputSpec(for: .natops, imageSize: nil)
        let load = ForeignLoad()
        defer { if let share = load.share() { print("\nforeign load during the run: \(format(100 * share, 1))% of the machine") } }
        print("fit's NATOPS networks, batch 64: a training step (no loss, no optimiser) and its GEMMs replayed. Medians of 5 reps of >= 0.1 s.")
        let widths = [7, 4, 11, 10, 10, 9, 14, 14, 11, 11]
        print(row(["arch", "thr", "step ms", "gemm ms", "other ms", "gemm %", "MMAC/window", "act/window", "GFLOP/s", "gemm GF/s"], widths))
        let batch = 64
        for architecture in architectures {
            config.architecture = architecture
            let specs = try config.layers(for: input, classes: 6)
            for threads in threadCounts {
                BLAS.threads = threads
                let net = try Network(layers: specs, input: Shape(time: 45, channels: input.channelsPerFrame))
                net.initialize(seed: 1)
                let step = stepSeconds(net, batch: batch, cpu: cpu)
                let calls = stepGEMMs(net, batch: batch), gemm = replay(calls, cpu: cpu)
                let macs = Double(calls.reduce(0) { $0 + $1.m * $1.n * $1.k })
                print(
                    row(
                        [
                            architecture.rawValue, "\(threads)", format(step * 1e3, 3), format(gemm * 1e3, 3), format((step - gemm) * 1e3, 3),
                            format(100 * gemm / step, 1), format(macs / Double(batch) / 1e6, 2), "\(net.activationValuesPerWindow)",
                            format(2 * macs / step / 1e9, 1), format(2 * macs / gemm / 1e9, 1),
                        ], widths))
            }
        }
        // The parameter-free and normalisation layers between the convolutions, at the ST-GCN's
        // [45, 8·64] and the TCN's [45, 64] activations (each followed by flatten).
        print("\nlayers between the convolutions, batch 64: forward (training) and backward (with dx), ms")
        let lw = [26, 8, 10, 10]
        print(row(["layer", "C", "fwd ms", "bwd ms"], lw))
        for C in [8 * 64, 64] {
            let cases: [(String, [LayerSpec])] = [
                ("layerNorm", [.layerNorm(channels: C, epsilon: 1e-5)]), ("relu", [.relu]), ("dropout 0.1", [.dropout(rate: 0.1)]),
                ("residual(relu) - relu", [.residual(body: [.relu], shortcut: [])]), ("flatten alone", []),
            ]
            for (name, specs) in cases {
                BLAS.threads = threadCounts[0]
                let net = try Network(layers: specs + [.flatten], input: Shape(time: 45, channels: C))
                let (forward, backward, _) = timeStep(net, batch: batch, cpu: cpu)
                print(row([name, "\(C)", format(forward * 1e3, 3), format(backward * 1e3, 3)], lw))
            }
        }
    }

    /// The `ftp` member's `fourierPyramid` (levels 1, 2, 4; 4 frequencies) on the relative
    /// positions of every joint pair: forward (training mode) and backward (with the input
    /// gradient) per batch, and the replayed GEMM time of one forward + backward.
    static func fourierTable(threadCounts: [Int], cpu: Bool) throws {
        struct Case { let batch, time, channels: Int, what: String }
        let cases = [
            Case(batch: 64, time: 32, channels: 156, what: "13 joints 2D (Penn Action)"),
            Case(batch: 64, time: 32, channels: 570, what: "20 joints 3D (UTKinect)"),
            Case(batch: 256, time: 32, channels: 156, what: "13 joints 2D"),
            Case(batch: 1, time: 32, channels: 156, what: "one window"),
        ]
        let load = ForeignLoad()
        defer { if let share = load.share() { print("\nforeign load during the run: \(format(100 * share, 1))% of the machine") } }
        print("fourierPyramid [1, 2, 4] x 4 frequencies, forward (training) and backward (with dx) per batch, ms; gemm = the step's GEMMs replayed. Medians of 5 reps of >= 0.1 s.")
        let widths = [6, 5, 6, 5, 10, 10, 10, 9, 28]
        print(row(["B", "T", "C", "thr", "fwd ms", "bwd ms", "gemm ms", "gemm %", "input"], widths))
        for c in cases {
            for threads in threadCounts {
                BLAS.threads = threads
                let net = try Network(layers: [.fourierPyramid(levels: [1, 2, 4], coefficients: 4)], input: Shape(time: c.time, channels: c.channels))
                let (forward, backward, gemm) = timeStep(net, batch: c.batch, cpu: cpu)
                print(
                    row(
                        [
                            "\(c.batch)", "\(c.time)", "\(c.channels)", "\(threads)", format(forward * 1e3, 3), format(backward * 1e3, 3),
                            format(gemm * 1e3, 3), format(100 * gemm / (forward + backward), 1), c.what,
                        ], widths))
            }
        }
    }

    /// Median seconds of one training step of `net` at `batch` (zeroGradients, forward in
    /// training mode, backward) on seeded random inputs and logit gradients.
    static func stepSeconds(_ net: Network, batch: Int, cpu: Bool) -> Double {
        var g = SeededGenerator(seed: 2)
        let x = (0..<(batch * net.inputShape.count)).map { _ in g.nextSymmetric(1) }
        let dlogits = (0..<(batch * net.classCount)).map { _ in g.nextSymmetric(1) / Float(batch) }
        var mode = ForwardMode.training(seed: 3)
        return x.withUnsafeBufferPointer { xp in
            dlogits.withUnsafeBufferPointer { dp in
                median(cpu: cpu) {
                    net.zeroGradients()
                    _ = net.forward(xp.baseAddress!, batch: batch, mode: &mode)
                    net.backward(dp.baseAddress!, batch: batch)
                }
            }
        }
    }

    /// A training forward and a backward (with dx) of `net` on seeded random values at `batch`:
    /// their median seconds, and the replayed time of the GEMMs of one forward + backward.
    static func timeStep(_ net: Network, batch: Int, cpu: Bool) -> (forward: Double, backward: Double, gemm: Double) {
        var g = SeededGenerator(seed: 2)
        let x = (0..<(batch * net.inputShape.count)).map { _ in g.nextSymmetric(1) }
        let dy = (0..<(batch * net.classCount)).map { _ in g.nextSymmetric(1) }
        var mode = ForwardMode.training(seed: 3)
        let (forward, backward) = x.withUnsafeBufferPointer { xp in
            dy.withUnsafeBufferPointer { dp in
                let f = median(cpu: cpu) { _ = net.forward(xp.baseAddress!, batch: batch, mode: &mode) }
                let b = median(cpu: cpu) { _ = net.backward(dp.baseAddress!, batch: batch, needInputGradient: true) }
                return (f, b)
            }
        }
        let calls = GEMMRecorder.record {
            x.withUnsafeBufferPointer { _ = net.forward($0.baseAddress!, batch: batch, mode: &mode) }
            dy.withUnsafeBufferPointer { _ = net.backward($0.baseAddress!, batch: batch, needInputGradient: true) }
        }
        return (forward, backward, replay(calls, cpu: cpu))
    }
}
