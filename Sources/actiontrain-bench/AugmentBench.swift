import ActionRuntime
import ActionTrain
import Datasets
import Foundation
import PoseCore

/// Time per epoch of building training inputs for 16,000 windows of 45 frames x 19 joints x 2
/// (Vision 2D body; coordinates + mask = 2,565 values, the reference MLP's input): plain
/// features, then `AugmentedBatches` at batch 64 with augmentation off, typical and at full
/// strength, on 1 and 2 threads. Printed beside the training epoch times implied by the
/// anchors of ../shared/bench/RESULTS.md (torch MLP 15,652 windows/s, the 2x target,
/// the Haswell sgemm ceiling 78,532 windows/s) and as a share of them. `--channels LIST`
/// builds other channel blocks instead of coordinates and mask (e.g. the relational ones; with
/// `--no-training`, since the reference MLP reads 2,565 values).
///
/// `--kernel` times the feature kernel alone (steps and blocks, `FeatureExtractor.extract` on
/// windows sampled once: what a live stream runs every stride), in CPU seconds.
///
///     actiontrain-bench augment [--channels coordinates,mask,relativePositions] [--no-training | --kernel]
enum AugmentBench {
    static func run(_ args: [String]) throws {
        var channels: [ChannelBlock]? = nil
        if let i = args.firstIndex(of: "--channels"), i + 1 < args.count {
            channels = try args[i + 1].split(separator: ",").map { name in
                guard let block = ChannelBlock(rawValue: String(name)) else { throw LayersBench.BenchError.usage("unknown channel block '\(name)'") }
                return block
            }
        }
        let windows = try makeWindows(channels: channels)
        if args.contains("--kernel") { return try kernel(windows) }
        let load = ForeignLoad()
        defer { print("other processes used \(load.share().map { format(100 * $0, 0) + "%" } ?? "?") of the machine meanwhile") }
        let n = windows.count
        print("input building for one epoch of \(n) windows of 45x19x2 (\(windows.spec.valuesPerWindow) values each: \(windows.spec.channels.map(\.rawValue).joined(separator: ", "))), batch 64")
        print("anchors (RESULTS.md): torch MLP epoch \(format(Double(n) / 15_652, 3)) s; 2x torch target \(format(Double(n) / 31_304, 3)) s; sgemm ceiling \(format(Double(n) / 78_532, 3)) s")
        print("")
        print("case                               threads  s/epoch   windows/s   of 2x-target epoch   of ceiling epoch")
        func report(_ name: String, _ threads: Int, _ seconds: Double) {
            let target = Double(n) / 31_304, ceiling = Double(n) / 78_532
            print(
                name.padding(toLength: 35, withPad: " ", startingAt: 0) + String(threads).padding(toLength: 9, withPad: " ", startingAt: 0)
                    + format(seconds, 4).padding(toLength: 10, withPad: " ", startingAt: 0)
                    + format(Double(n) / seconds, 0).padding(toLength: 12, withPad: " ", startingAt: 0)
                    + (format(100 * seconds / target, 1) + "%").padding(toLength: 21, withPad: " ", startingAt: 0)
                    + format(100 * seconds / ceiling, 1) + "%")
        }
        let features = try windows.features()
        let tensors = TensorSet(features: features, labels: windows.labels, valuesPerWindow: windows.spec.valuesPerWindow)
        report("WindowSet.features (once)", 1, Clock.median(reps: 5, minSeconds: 0) { _ = try! windows.features() })
        // The same in CPU seconds of this process (one thread), which other processes disturb less.
        let cpu0 = ForeignLoad.processCPUSeconds()
        for _ in 0..<5 { _ = try windows.features() }
        report("WindowSet.features (CPU s)", 1, (ForeignLoad.processCPUSeconds() - cpu0) / 5)
        report("TensorSet (precomputed, copy)", 1, Clock.median(reps: 5, minSeconds: 0) { fillEpoch(tensors, epoch: 1) })
        var typical = AugmentationConfig()
        typical.flipProbability = 0.5
        typical.rotationProbability = 0.5
        typical.maxRotationDegrees = 15
        typical.scaleProbability = 0.5
        typical.maxScaleChange = 0.1
        typical.jitterProbability = 0.5
        typical.jitterStandardDeviation = 0.02
        typical.speedProbability = 0.5
        typical.maxSpeedChange = 0.2
        typical.jointDropoutProbability = 0.3
        typical.jointDropoutRate = 0.05
        var full = typical
        full.flipProbability = 1
        full.rotationProbability = 1
        full.scaleProbability = 1
        full.jitterProbability = 1
        full.speedProbability = 1
        full.timeWarpProbability = 1
        full.maxTimeWarp = 0.3
        full.frameDropProbability = 1
        full.frameDropRate = 0.1
        full.jointDropoutProbability = 1
        for (name, config) in [("augmentation off", AugmentationConfig()), ("typical augmentation", typical), ("every augmentation, p = 1", full)] {
            for threads in [1, 2] {
                let source = try AugmentedBatches(windows: windows, augmentation: config, seed: 1, threads: threads)
                var epoch = 0
                report(
                    name, threads,
                    Clock.median(reps: 5, minSeconds: 0) {
                        epoch += 1
                        fillEpoch(source, epoch: epoch)
                    })
            }
        }
        if args.contains("--no-training") { return }

        // The real cost: epochs of the reference MLP (2565-256-128-6, Adam, batch 64, 2 BLAS
        // threads) fed by each source, interleaved.
        print("")
        print("training the reference MLP 2565-256-128-6, batch 64, OpenBLAS \(BLAS.coreName) x2; seconds per epoch (median of 3)")
        BLAS.threads = 2
        var config = TrainingConfig.reference("mlp")!  // not the defaults: those are a TCN
        config.epochs = 1
        let input = Shape(time: 45, channels: windows.spec.channelsPerFrame)
        let sources: [(String, BatchSource)] = [
            ("TensorSet", tensors),
            ("typical augmentation, 1 thread", try AugmentedBatches(windows: windows, augmentation: typical, seed: 1, threads: 1)),
            ("typical augmentation, 2 threads", try AugmentedBatches(windows: windows, augmentation: typical, seed: 1, threads: 2)),
        ]
        var seconds = [[Double]](repeating: [], count: sources.count)
        for _ in 0..<3 {
            for (k, (_, source)) in sources.enumerated() {
                let network = try Network(layers: try config.layers(input: input, classes: 6), input: input)
                network.initialize(seed: 1)
                let trainer = Trainer(network: network, config: config)
                try trainer.fit(train: source, validation: nil)
                seconds[k].append(trainer.progress.records[0].seconds)
            }
        }
        let base = seconds[0].sorted()[1]
        for (k, (name, _)) in sources.enumerated() {
            let t = seconds[k].sorted()[1]
            print(
                name.padding(toLength: 35, withPad: " ", startingAt: 0) + format(t, 3) + " s/epoch  "
                    + format(Double(n) / t, 0) + " windows/s  " + format(t / base, 2) + "x the TensorSet epoch")
        }
    }

    /// The feature kernel on 512 windows sampled once, 20 passes (10,240 windows) after a
    /// warm-up; the median of 5 such runs, in CPU seconds of this process per window.
    static func kernel(_ windows: WindowSet) throws {
        let spec = windows.spec, extractor = try FeatureExtractor(spec), ws = extractor.makeWorkspace()
        let sampled = (0..<512).map { windows.window($0) }
        var out = [Float](repeating: 0, count: spec.valuesPerWindow)
        func pass() { out.withUnsafeMutableBufferPointer { o in for w in sampled { extractor.extract(w, into: o.baseAddress!, workspace: ws) } } }
        pass()
        var runs: [Double] = []
        for _ in 0..<5 {
            let c0 = ForeignLoad.processCPUSeconds()
            for _ in 0..<20 { pass() }
            runs.append((ForeignLoad.processCPUSeconds() - c0) / Double(20 * sampled.count))
        }
        print(
            "feature kernel, \(spec.channels.map(\.rawValue).joined(separator: ", ")) (\(spec.valuesPerWindow) values per window): "
                + "\(format(runs.sorted()[2] * 1e6, 2)) µs per window (CPU; runs \(runs.map { format($0 * 1e6, 2) }.joined(separator: ", ")))")
    }

    /// Fills every batch of one epoch, in a shuffled order, as the trainer does.
    static func fillEpoch<Source: BatchSource>(_ source: Source, epoch: Int) {
        let B = 64, V = source.valuesPerWindow
        var order = Array(0..<source.count)
        var g = SeededGenerator(seed: UInt64(epoch))
        order.seededShuffle(using: &g)
        var x = [Float](repeating: 0, count: B * V), y = [Int32](repeating: 0, count: B)
        x.withUnsafeMutableBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                for s in stride(from: 0, to: order.count, by: B) {
                    source.fill(indices: order[s..<min(s + B, order.count)], epoch: epoch, features: xp.baseAddress!, labels: yp.baseAddress!)
                }
            }
        }
    }

    /// 4,000 sequences of 90 frames (random walks, 5% of joints absent) cut at stride 15:
    /// 4 windows each.
    static func makeWindows(channels: [ChannelBlock]? = nil) throws -> WindowSet {
        let skeleton = Skeleton.visionBody2D
        var g = SeededGenerator(seed: 20_260_101)
        var sequences: [PoseSequence] = []
        for k in 0..<4_000 {
            var s = PoseSequence(id: "s\(k)", label: "c\(k % 6)", jointCount: 19, dimensions: 2, hasConfidence: true)
            var base = (0..<19).map { _ in (Float(300 + g.nextSymmetric(100)), Float(400 + g.nextSymmetric(200))) }
            for _ in 0..<90 {
                base = base.map { ($0.0 + g.nextSymmetric(3), $0.1 + g.nextSymmetric(3)) }
                s.appendFrame(
                    base.map { p in
                        g.nextUnitFloat() < 0.05 ? nil : PosePoint(x: p.0, y: p.1, confidence: 0.5 + g.nextUnitFloat() / 2)
                    })
            }
            sequences.append(s)
        }
        let d = Dataset(name: "synthetic", skeleton: skeleton, sequences: sequences)
        var spec = InputSpec.standard(for: skeleton, frames: 45)
        if let channels { spec.channels = channels }
        return try WindowSet(dataset: d, spec: spec, stride: 15, classes: d.classes)
    }
}
