import ActionRuntime
import Foundation

/// Model file load time alone, for comparing builds on a busy machine: the two reference models
/// of `inference`, each loaded `--reps` times (default 300) with the copying and the mapped
/// reader, interleaved load by load (so that both readers see the same machine), the loaded
/// models released at once (reused memory, as `inference`'s "reused" column). Prints per
/// reader the minimum and median wall time of one `ActionModel(contentsOf:memoryMapped:)` and
/// the process CPU time (user + system, every thread) per load, which waiting for a busy core
/// does not inflate, and the foreign load.
///
/// `--model NAME=FILE` (repeatable) adds a model file of one's own, e.g. the default model
/// `fit` writes.
///
///     actiontrain-bench load [--reps N] [--model NAME=FILE]...
enum LoadBench {
    static func run(_ args: [String]) throws {
        var reps = 300
        if let i = args.firstIndex(of: "--reps"), i + 1 < args.count { reps = Int(args[i + 1]) ?? reps }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("actiontrain-load-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        print("model file loads, \(reps) of each reader interleaved: wall µs min / median, CPU µs per load (all threads)")
        var files: [(name: String, path: String)] = []
        for r in InferenceBench.references {
            let path = "\(dir)/\(r.name).atm"
            try Data(try InferenceBench.modelBytes(r)).write(to: URL(fileURLWithPath: path))
            files.append((r.name, path))
        }
        for (i, a) in args.enumerated() where a == "--model" && i + 1 < args.count {
            let parts = args[i + 1].split(separator: "=", maxSplits: 1).map(String.init)
            files.append(parts.count == 2 ? (parts[0], parts[1]) : (URL(fileURLWithPath: parts[0]).lastPathComponent, parts[0]))
        }
        for (name, path) in files {
            for mapped in [false, true] { _ = try ActionModel(contentsOf: path, memoryMapped: mapped) }  // warm-up
            var wall: [[Double]] = [[], []], cpu = [0.0, 0.0]
            let load = ForeignLoad()
            for _ in 0..<reps {
                for (k, mapped) in [false, true].enumerated() {
                    let c0 = ForeignLoad.processCPUSeconds(), t0 = Clock.now()
                    let model = try ActionModel(contentsOf: path, memoryMapped: mapped)
                    let t1 = Clock.now()
                    withExtendedLifetime(model) {}
                    cpu[k] += ForeignLoad.processCPUSeconds() - c0
                    wall[k].append(Double(t1 - t0) / 1e3)
                }
            }
            for (k, reader) in ["read", "mapped"].enumerated() {
                let w = wall[k].sorted()
                print(
                    "\(name.padding(toLength: 5, withPad: " ", startingAt: 0)) \(reader.padding(toLength: 7, withPad: " ", startingAt: 0))"
                        + " min \(format(w[0])), median \(format(w[w.count / 2])), CPU \(format(cpu[k] / Double(reps) * 1e6))")
            }
            print("      foreign load \(format((load.share() ?? 0) * 100, 1))%")
        }
    }
}
