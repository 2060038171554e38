// Benchmarks, run in release builds only:
//
//     swift run -c release actiontrain-bench            # list
//     swift run -c release actiontrain-bench gemm       # one benchmark
//
// Each benchmark prints its figures beside the anchors measured on this machine
// (../shared/bench/RESULTS.md) and the ratio, from one run. Timings never go into tests.
import Foundation

struct Benchmark {
    let name: String
    let summary: String
    let run: ([String]) throws -> Void
}

let benchmarks: [Benchmark] = [
    Benchmark(name: "gemm", summary: "BLAS.gemm GFLOP/s on the reference training shapes vs cblas_sgemm anchors", run: GemmBench.run),
    Benchmark(name: "eval", summary: "eval of 100,000 windows with the reference MLP and every report (target < 2 s)", run: EvalBench.run),
    Benchmark(name: "augment", summary: "Seconds per epoch to build (augmented) inputs for 16,000 windows of 45x19x2 vs training epoch anchors", run: AugmentBench.run),
    Benchmark(name: "parse", summary: "Dataset readers: native/CSV MB/s, .npy load vs raw read, peak memory", run: ParseBench.run),
    Benchmark(name: "train", summary: "a whole training run of a reference model on ../shared/bench's synthetic data: one JSON line", run: TrainBench.run),
    Benchmark(name: "kernels", summary: "the runtime's own packed kernel (AVX-512 / AVX2 / portable) vs OpenBLAS on a loaded model's products", run: KernelBench.run),
    Benchmark(
        name: "layers", summary: "forward+backward of the reference convnet and MLP: windows/s, GEMM share, b1 latency; `graphconv`: graphConv layers; `fourier`: the ftp member's fourierPyramid; `natops`: fit's NATOPS tcn and stgcn networks",
        run: LayersBench.run),
    Benchmark(name: "inference", summary: "model file load time, batch-1 latency and batch-1024 throughput vs PyTorch anchors", run: InferenceBench.run),
    Benchmark(
        name: "latency", summary: "MODEL.atm: batch-1 latency of one model file alone (for callgrind / perf stat); --dilated-im2col: the path before phase Winograd",
        run: LatencyBench.run),
    Benchmark(name: "stream", summary: "live pose streams: frames/s and per-push latency of sessions (stride 1 and 15, 1 and 64 sessions, 1 and 2 threads) vs building windows yourself; --load: 64 concurrent streams; --events: events from windows vs from frames", run: StreamBench.run),
    Benchmark(name: "shared", summary: "one model shared by several calling threads: batch-1 latency and batch-1024 throughput, 1 and --callers N callers, per architecture", run: SharedBench.run),
    Benchmark(name: "member-weights", summary: "DATA RUN...: a two-member model's test scores with equal weights, a temperature, one weight per member fitted out of fold, each member alone", run: MemberWeightsBench.run),
    Benchmark(name: "tune-fidelity", summary: "DATA: every candidate tune tries, scored at each screening share of its epochs and at full length; Spearman correlation of screening with full length", run: TuneFidelityBench.run),
    Benchmark(name: "load", summary: "model file load time alone (copying and mapped readers interleaved, wall and CPU per load), to compare builds", run: LoadBench.run),
]

let args = Array(CommandLine.arguments.dropFirst())
guard let name = args.first, let bench = benchmarks.first(where: { $0.name == name }) else {
    print("usage: actiontrain-bench <benchmark> [options]\n")
    for b in benchmarks { print("  \(b.name.padding(toLength: 14, withPad: " ", startingAt: 0))\(b.summary)") }
    exit(args.isEmpty ? 0 : 2)
}
#if DEBUG
    FileHandle.standardError.write(Data("warning: debug build; run with 'swift run -c release actiontrain-bench'\n".utf8))
#endif
do {
    try bench.run(Array(args.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
