import ActionRuntime
import Foundation
import PoseCore

/// The runtime on the two reference models of ../shared/bench (README.md there): load time of
/// the model file, batch-1 latency and batch-1024 throughput, measured as anchor_torch.py does
/// (latency: median of 2,000 calls after 100 warm-up calls, cycling through 2,000 windows;
/// throughput: 1024 / median of 20 calls after 3 warm-up calls).
///
///     actiontrain-bench inference [--threads N] [--models DIR] [--json] [--breakdown]
///
/// `--models DIR` also writes the two model files there (for `actiontrain export` and
/// scripts/bench-inference, which runs PyTorch and onnxruntime interleaved with this).
///
/// `--model NAME=PATH` measures that model file instead (e.g. the model `fit` makes with no
/// config, which scripts/bench-inference fits on data/natops.jsonl), on the same network
/// inputs `[frames, channels]` its ONNX export takes (`ActionModel.logits`: the network
/// alone, after the feature extractor; it has no PyTorch anchors), and then, as `NAME-poses`,
/// on poses: the feature extractor and the network (`poses(_:name:threads:json:)`).
///
/// Load times are of `ActionModel(contentsOf:memoryMapped:)`, with the copying reader (the
/// default) and the mapped one (the network bound to the file's tensors in place).
enum InferenceBench {
    struct Reference {
        let name: String
        let layers: [LayerSpec]
        let torchLatencyMicroseconds: Double  // RESULTS.md, 2 threads
        let torchBatchWindowsPerSecond: Double
    }

    /// Input `[45 frames, 57 channels]`: 19 joints of (x, y) coordinates and a confidence.
    static let input = InputSpec(
        skeleton: Skeleton(name: "synth-19", joints: (0..<19).map { "j\($0)" }, dimensions: 2, units: .pixels),
        window: WindowSpec(frames: 45), steps: [], channels: [.coordinates, .confidence])

    static let references = [
        Reference(
            name: "mlp",
            layers: [.flatten, .linear(inputs: 2565, outputs: 256), .relu, .linear(inputs: 256, outputs: 128), .relu, .linear(inputs: 128, outputs: 6)],
            torchLatencyMicroseconds: 54.2, torchBatchWindowsPerSecond: 146_681),
        Reference(
            name: "conv",
            layers: [
                .conv1d(inputs: 57, outputs: 64, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                .conv1d(inputs: 64, outputs: 128, kernel: 5, stride: 1, dilation: 1, padding: 2), .relu,
                .globalAveragePool, .linear(inputs: 128, outputs: 6),
            ],
            torchLatencyMicroseconds: 100.6, torchBatchWindowsPerSecond: 24_129),
    ]

    static func modelBytes(_ r: Reference) throws -> [UInt8] {
        let network = try Network(layers: r.layers, input: Shape(time: 45, channels: input.channelsPerFrame))
        network.initialize(seed: 0)
        return try ModelFile.encode(
            classes: ["wave_right", "wave_left", "clap", "squat", "walk_in_place", "arm_circles"], input: input, network: network,
            provenance: .init(seed: 0, notes: ["purpose": "reference model for actiontrain-bench inference"]))
    }

    /// Times of 15 single loads with `ActionModel(contentsOf:memoryMapped:)`, what an inference
    /// service calls. With `keep`, every loaded model stays alive until the end, so each load
    /// gets fresh pages (as a service reloading a model while the old one still serves); without,
    /// the allocator may hand back the previous load's memory (the minimum of these is the file
    /// work plus a warm allocation).
    static func loadTimes(_ path: String, mapped: Bool, keep: Bool) -> [Double] {
        var kept: [ActionModel] = [], times: [Double] = []
        _ = try! ActionModel(contentsOf: path, memoryMapped: mapped)  // warm-up
        for _ in 0..<15 {
            let t0 = Clock.now()
            let model = try! ActionModel(contentsOf: path, memoryMapped: mapped)
            times.append(Double(Clock.now() - t0) / 1e9)
            if keep { kept.append(model) }
        }
        return times
    }

    /// `--load-once PATH [--mapped]`, run in a new process: the time of its first load (what a
    /// service pays at start-up: page faults, the first use of the code and of the Swift
    /// runtime's caches, the first thread) and of a second load right after it.
    static func loadOnce(_ path: String, mapped: Bool) throws {
        let t0 = Clock.now()
        let first = try ActionModel(contentsOf: path, memoryMapped: mapped)
        let t1 = Clock.now()
        let second = try ActionModel(contentsOf: path, memoryMapped: mapped)
        let t2 = Clock.now()
        withExtendedLifetime((first, second)) { print(Double(t1 - t0) / 1e9, Double(t2 - t1) / 1e9) }
    }

    /// Medians of the first and second load in 11 new processes (`--load-once`).
    static func newProcessLoads(_ path: String, mapped: Bool) throws -> (first: Double, second: Double) {
        var firsts: [Double] = [], seconds: [Double] = []
        for _ in 0..<11 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            p.arguments = ["inference", "--load-once", path] + (mapped ? ["--mapped"] : [])
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            let fields = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
            guard fields.count == 2 else {
                throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "--load-once printed '\(text)'"])
            }
            firsts.append(fields[0])
            seconds.append(fields[1])
        }
        return (firsts.sorted()[5], seconds.sorted()[5])
    }

    /// Load times of one file, µs: for the copying reader and the mapped one.
    struct LoadFigures {
        var reused: Double, fresh: Double, newProcess: Double, newProcessSecond: Double
        init(_ path: String, mapped: Bool) throws {
            reused = loadTimes(path, mapped: mapped, keep: false).min()! * 1e6
            let freshTimes = loadTimes(path, mapped: mapped, keep: true).sorted()
            fresh = freshTimes[freshTimes.count / 2] * 1e6
            (newProcess, newProcessSecond) = try newProcessLoads(path, mapped: mapped)
            newProcess *= 1e6
            newProcessSecond *= 1e6
        }
        var text: String { "\(format(reused)), \(format(fresh)), \(format(newProcess)) (\(format(newProcessSecond)))" }
    }

    /// `--model`'s second row, `NAME-poses`: the predict path from poses, the feature extractor
    /// (into one workspace, as a stream session does; every joint present, no confidence) and
    /// then the network, against the export with `--raw-poses`. Same protocol as the network
    /// inputs; batch 1024 extracts its windows on the calling thread, as `predict` does.
    static func poses(_ model: ActionModel, name: String, threads: Int, json: Bool) throws {
        let s = model.input.skeleton, F = model.input.window.frames, J = s.jointCount, D = s.dimensions
        let V = model.valuesPerWindow, size = F * J * D
        let load = ForeignLoad()
        var g = SeededGenerator(seed: 2)
        let coordinates = (0..<(2000 * size)).map { _ in g.nextSymmetric(2) }
        let present = [UInt8](repeating: 1, count: F * J)
        let workspace = model.extractor.makeWorkspace()
        var features = [Float](repeating: 0, count: 1024 * V)
        var out = [Float](repeating: 0, count: 1024 * model.classes.count)
        let (latency, throughput) = coordinates.withUnsafeBufferPointer { c in
            present.withUnsafeBufferPointer { p in
                features.withUnsafeMutableBufferPointer { x in
                    out.withUnsafeMutableBufferPointer { o -> (Double, Double) in
                        func run(_ k: Int, count: Int) {
                            for i in 0..<count {
                                model.extractor.extract(
                                    coordinates: c.baseAddress! + ((k + i) % 2000) * size, present: p.baseAddress!, confidence: nil,
                                    into: x.baseAddress! + i * V, workspace: workspace)
                            }
                            model.logits(x.baseAddress!, count: count, into: o.baseAddress!)
                        }
                        for k in 0..<100 { run(k, count: 1) }
                        var times: [UInt64] = []
                        times.reserveCapacity(2000)
                        for k in 0..<2000 {
                            let t0 = Clock.now()
                            run(k, count: 1)
                            times.append(Clock.now() - t0)
                        }
                        times.sort()
                        for _ in 0..<3 { run(0, count: 1024) }
                        var batch: [Double] = []
                        for _ in 0..<20 {
                            let t0 = Clock.now()
                            run(0, count: 1024)
                            batch.append(Double(Clock.now() - t0) / 1e9)
                        }
                        batch.sort()
                        return (Double(times[times.count / 2]) / 1e3, 1024 / batch[batch.count / 2])
                    }
                }
            }
        }
        let foreign = load.share() ?? 0
        if json {
            let fields: [String] = [
                "\"framework\": \"actiontrain\"", "\"model\": \"\(name)-poses\"", "\"threads\": \(threads)",
                "\"blas_core\": \"\(BLAS.coreName)\"", "\"kernel\": \"\(PackedGEMM.current)\"",
                "\"latency_us_median\": \(format(latency, 2))", "\"infer_batch_windows_per_s\": \(format(throughput, 0))",
                "\"foreign_load\": \(format(foreign, 3))",
            ]
            print("{" + fields.joined(separator: ", ") + "}")
        } else {
            print("\(name)-poses (feature extractor + network): latency b1 \(format(latency, 1)) µs, b1024 \(format(throughput, 0)) windows/s, foreign load \(format(foreign * 100, 1))%")
        }
    }

    static func run(_ args: [String]) throws {
        if args.count >= 2 && args[0] == "--load-once" {
            try loadOnce(args[1], mapped: args.dropFirst(2).contains("--mapped"))
            return
        }
        var threads = 2, json = false, breakdown = false, modelDir: String? = nil, file: (name: String, path: String)? = nil
        var i = 0
        while i < args.count {
            switch args[i] {
            case "--threads":
                i += 1
                threads = Int(args[i]) ?? 2
            case "--models":
                i += 1
                modelDir = args[i]
            case "--model":
                i += 1
                let parts = args[i].split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else {
                    throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "--model expects NAME=PATH, got \(args[i])"])
                }
                file = (parts[0], parts[1])
            case "--json": json = true
            case "--breakdown": breakdown = true
            default: throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "unknown option \(args[i])"])
            }
            i += 1
        }
        BLAS.threads = threads
        let dir = modelDir ?? FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if modelDir == nil { try? FileManager.default.removeItem(atPath: dir) } }
        if !json {
            print("runtime inference, OpenBLAS \(BLAS.coreName), \(threads) thread(s); PyTorch anchors: ../shared/bench/RESULTS.md (2 threads)")
            print("load µs (ActionModel(contentsOf:)): reused memory, fresh memory, first in a new process (second load there); median of 11 processes")
            print("model  file MB  load read                           load mapped                     latency b1 µs  torch µs  ratio   b1024 windows/s  torch   ratio   foreign load")
        }
        // The breakdown's networks stay alive to the end, so that the allocator cannot hand
        // their memory to the loads measured after them as "fresh".
        var parked: [Network] = [], parkedModels: [ActionModel] = []
        defer { withExtendedLifetime(parked) {} }
        // The reference networks (written to DIR), or the one model file of `--model`.
        let items: [(name: String, path: String, reference: Reference?)] =
            file.map { [($0.name, $0.path, nil)] } ?? references.map { ($0.name, "\(dir)/\($0.name).atm", $0) }
        for (name, path, reference) in items {
            let bytes: [UInt8]
            if let r = reference {
                bytes = try modelBytes(r)
                try Data(bytes).write(to: URL(fileURLWithPath: path))
            } else {
                bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            let load = ForeignLoad()
            if breakdown, let r = reference {
                // Where the load time goes: mapping the file, the data checksum, the whole decode
                // (checksums + JSON + checks; JSONDecoder's time on the same header for comparison:
                // it reads only headers the fast reader declines), building the network in fresh
                // memory (its parameter arena is allocated and zero-filled: page faults), and
                // copying the weights into it.
                let map = Clock.median(reps: 9, minSeconds: 0.05) { _ = try! ModelFile.withContents(of: path) { $0.count } }
                let crc = bytes.withUnsafeBytes { raw in Clock.median(reps: 9, minSeconds: 0.05) { _ = CRC32.parallelChecksum(raw) } }
                let crc1 = bytes.withUnsafeBytes { raw in Clock.median(reps: 9, minSeconds: 0.05) { _ = CRC32.checksum(raw) } }
                // The scan for NaN or infinite weights that rides on the CRC pass, alone, on 1 thread.
                let scan = bytes.withUnsafeBytes { raw in Clock.median(reps: 9, minSeconds: 0.05) { _ = ModelFile.firstNonFinite(raw) } }
                let decode = bytes.withUnsafeBytes { raw in Clock.median(reps: 9, minSeconds: 0.05) { _ = try! ModelFile.decode(raw) } }
                let headerLength = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian) }
                let headerJSON = Data(bytes[64..<(64 + headerLength)])
                let codable = Clock.median(reps: 9, minSeconds: 0.05) { _ = try! JSONDecoder().decode(ModelHeader.self, from: headerJSON) }
                var builds: [Double] = []
                for _ in 0..<15 {  // kept alive, so every build gets fresh pages
                    let t0 = Clock.now()
                    parked.append(try Network(layers: r.layers, input: Shape(time: 45, channels: input.channelsPerFrame)))
                    builds.append(Double(Clock.now() - t0) / 1e9)
                }
                let build = builds.sorted()[builds.count / 2]
                let n = parked.last!.parameterCount * 4
                let copy = Clock.median(reps: 9, minSeconds: 0.05) {
                    bytes.withUnsafeBytes { UnsafeMutableRawPointer(parked.last!.parameters).copyMemory(from: $0.baseAddress! + (bytes.count - n), byteCount: n) }
                }
                // The first window after a load packs the frozen network's weights (fresh memory).
                var firsts: [Double] = []
                let window = [Float](repeating: 0.25, count: input.channelsPerFrame * 45)
                var sink = [Float](repeating: 0, count: 6)
                for _ in 0..<9 {
                    let m = try ActionModel(contentsOf: path, memoryMapped: true)
                    let t0 = Clock.now()
                    window.withUnsafeBufferPointer { m.logits($0.baseAddress!, count: 1, into: &sink) }
                    firsts.append(Double(Clock.now() - t0) / 1e9)
                    parkedModels.append(m)
                }
                let first = firsts.sorted()[firsts.count / 2]
                print(
                    "  \(r.name) first window after a mapped load (packs the weights) \(format(first * 1e6)) µs")
                print(
                    "  \(r.name) load µs: map \(format(map * 1e6)); data CRC \(format(crc * 1e6)) on 2 threads (\(format(crc1 * 1e6)) on 1); "
                        + "non-finite scan \(format(scan * 1e6)) on 1; "
                        + "decode = CRCs + JSON + checks \(format(decode * 1e6)) (JSONDecoder alone on the header: \(format(codable * 1e6))); "
                        + "build the network in fresh memory \(format(build * 1e6)); "
                        + "copy the weights \(format(copy * 1e6))")
            }
            let read = try LoadFigures(path, mapped: false)
            let mapped = try LoadFigures(path, mapped: true)
            let model = try ActionModel(contentsOf: path)
            let V = model.valuesPerWindow
            var g = SeededGenerator(seed: 1)
            let windows = (0..<(2000 * V)).map { _ in g.nextSymmetric(2) }
            var out = [Float](repeating: 0, count: 1024 * model.classes.count)
            let latency = windows.withUnsafeBufferPointer { w -> Double in
                for k in 0..<100 { model.logits(w.baseAddress! + (k % 2000) * V, count: 1, into: &out) }
                var times: [UInt64] = []
                times.reserveCapacity(2000)
                for k in 0..<2000 {
                    let t0 = Clock.now()
                    model.logits(w.baseAddress! + k * V, count: 1, into: &out)
                    times.append(Clock.now() - t0)
                }
                times.sort()
                return Double(times[times.count / 2]) / 1e3
            }
            let throughput = windows.withUnsafeBufferPointer { w -> Double in
                for _ in 0..<3 { model.logits(w.baseAddress!, count: 1024, into: &out) }
                var times: [Double] = []
                for _ in 0..<20 {
                    let t0 = Clock.now()
                    model.logits(w.baseAddress!, count: 1024, into: &out)
                    times.append(Double(Clock.now() - t0) / 1e9)
                }
                times.sort()
                return 1024 / times[times.count / 2]
            }
            let foreign = load.share() ?? 0
            if json {
                let fields: [String] = [
                    "\"framework\": \"actiontrain\"", "\"model\": \"\(name)\"", "\"threads\": \(threads)",
                    "\"blas_core\": \"\(BLAS.coreName)\"", "\"kernel\": \"\(PackedGEMM.current)\"", "\"file_bytes\": \(bytes.count)",
                    "\"load_reused_us\": \(format(read.reused, 1))", "\"load_fresh_us\": \(format(read.fresh, 1))",
                    "\"load_new_process_us\": \(format(read.newProcess, 1))",
                    "\"load_mmap_reused_us\": \(format(mapped.reused, 1))", "\"load_mmap_fresh_us\": \(format(mapped.fresh, 1))",
                    "\"load_mmap_new_process_us\": \(format(mapped.newProcess, 1))",
                    "\"latency_us_median\": \(format(latency, 2))", "\"infer_batch_windows_per_s\": \(format(throughput, 0))",
                    "\"foreign_load\": \(format(foreign, 3))",
                ]
                print("{" + fields.joined(separator: ", ") + "}")
            } else {
                func col(_ s: String, _ n: Int) -> String { s.padding(toLength: n, withPad: " ", startingAt: 0) }
                var row = col(name, max(7, name.count + 1)) + col(format(Double(bytes.count) / 1e6, 2), 9)
                row += col(read.text, 36) + col(mapped.text, 32)
                let torchLatency = reference.map { format($0.torchLatencyMicroseconds, 1) } ?? "–"
                let latencyRatio = reference.map { format(latency / $0.torchLatencyMicroseconds, 2) } ?? "–"
                let torchThroughput = reference.map { format($0.torchBatchWindowsPerSecond, 0) } ?? "–"
                let throughputRatio = reference.map { format(throughput / $0.torchBatchWindowsPerSecond, 2) } ?? "–"
                row += col(format(latency, 1), 15) + col(torchLatency, 10) + col(latencyRatio, 8)
                row += col(format(throughput, 0), 17) + col(torchThroughput, 8) + col(throughputRatio, 8) + format(foreign * 100, 1) + "%"
                print(row)
            }
            if reference == nil { try poses(model, name: name, threads: threads, json: json) }
        }
    }
}
