import ActionRuntime
import Foundation
import PoseCore

/// Batch-1 latency of one model file alone, for profilers and instruction counts
/// (`valgrind --tool=callgrind`, `perf stat`): no load-time figures (`inference` starts child
/// processes for those, which valgrind cannot), no batch 1024, nothing else in the process.
///
///     actiontrain-bench latency MODEL.atm [--calls N] [--warm-up N] [--threads N] [--dilated-im2col] [--json]
///
/// `ActionModel.logits(_:count:into:)` on one window at a time, `--warm-up` calls (default
/// 100) and then `--calls` timed calls (default 2,000), cycling through 2,000 windows of random
/// network inputs uniform in [-2, 2) (the protocol of `inference`); prints the median and the
/// quartiles of the timed calls. `--dilated-im2col` builds the network with frozen dilated
/// convolutions on im2col (`Inference.dilatedConvolutionPhases = false`), the path before the
/// phase Winograd, to compare both in one binary. For an instruction count of the calls alone:
///
///     valgrind --tool=callgrind --collect-atstart=no \
///         --toggle-collect='$s13ActionRuntime16InferenceContextC6logits_5count4intoySPySfG_SiSpySfGtF' \
///         actiontrain-bench latency MODEL.atm --calls 200 --warm-up 10
///
/// (the collected instructions over warm-up + calls calls; valgrind has no AVX-512, so run it
/// with `ACTIONTRAIN_KERNEL=avx2`, and on a binary whose DWARF 5 debug information is stripped,
/// `objcopy --strip-debug`, which valgrind 3.19 cannot read).
enum LatencyBench {
    static func run(_ args: [String]) throws {
        var path: String?, calls = 2000, warmUp = 100, threads = 1, json = false
        var i = 0
        func value() throws -> Int {
            i += 1
            guard i < args.count, let v = Int(args[i]), v >= 0 else {
                throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "\(args[i - 1]) expects a count"])
            }
            return v
        }
        while i < args.count {
            switch args[i] {
            case "--calls": calls = max(1, try value())
            case "--warm-up": warmUp = try value()
            case "--threads": threads = max(1, try value())
            case "--dilated-im2col": Inference.dilatedConvolutionPhases = false
            case "--json": json = true
            case let a where !a.hasPrefix("-") && path == nil: path = a
            default: throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "unknown option \(args[i])"])
            }
            i += 1
        }
        guard let path else {
            throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "usage: latency MODEL.atm [options]"])
        }
        BLAS.threads = threads
        let model = try ActionModel(contentsOf: path)
        let V = model.valuesPerWindow, windows = 2000
        var g = SeededGenerator(seed: 1)
        let inputs = (0..<(windows * V)).map { _ in g.nextSymmetric(2) }
        var out = [Float](repeating: 0, count: model.classes.count)
        var times: [UInt64] = []
        times.reserveCapacity(calls)
        inputs.withUnsafeBufferPointer { w in
            for k in 0..<warmUp { model.logits(w.baseAddress! + (k % windows) * V, count: 1, into: &out) }
            for k in 0..<calls {
                let t0 = Clock.now()
                model.logits(w.baseAddress! + (k % windows) * V, count: 1, into: &out)
                times.append(Clock.now() - t0)
            }
        }
        times.sort()
        let us = { (q: Int) in Double(times[min(times.count - 1, q * times.count / 4)]) / 1e3 }
        let paths = Inference.dilatedConvolutionPhases ? "phases" : "im2col"
        if json {
            print(
                "{\"model\": \"\(path)\", \"threads\": \(threads), \"kernel\": \"\(PackedGEMM.current)\", \"dilated\": \"\(paths)\", "
                    + "\"calls\": \(calls), \"latency_us_median\": \(format(us(2), 2)), \"latency_us_q1\": \(format(us(1), 2)), "
                    + "\"latency_us_q3\": \(format(us(3), 2))}")
        } else {
            print(
                "\(path): batch-1 latency \(format(us(2), 2)) µs median (quartiles \(format(us(1), 2))-\(format(us(3), 2))) over \(calls) calls, "
                    + "\(threads) thread(s), kernel \(PackedGEMM.current), dilated convolutions: \(paths)")
        }
    }
}
