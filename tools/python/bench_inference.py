#!/usr/bin/env python3
"""Inference latency and throughput of PyTorch or onnxruntime on the reference models of
../shared/bench (anchor_torch.py's definitions and protocol) and on the default model, for
scripts/bench-inference.

    bench_inference.py --framework torch --model mlp|conv --threads N
    bench_inference.py --framework torch --model default|default-poses --threads N --model-file MODEL.atm --onnx FILE
    bench_inference.py --framework onnxruntime --model mlp|conv|default|default-poses --threads N --onnx FILE
    bench_inference.py --summarize RESULTS.jsonl     # the table that ends scripts/bench-inference

Latency: batch 1, median of 2,000 calls after 100 warm-up calls, cycling through 2,000 random
windows. Throughput: 1024 / median of 20 batch-1024 calls after 3 warm-up calls. Prints one
JSON line. Inputs are uniform in [-2, 2): the timings do not depend on the values.

`default` is the model `fit` makes with no config (scripts/bench-inference fits it on
data/natops.jsonl), on network inputs [frames, channels] as the runtime's `ActionModel.logits`:
onnxruntime on its export (the shape read from the graph), PyTorch on torch_default.py's module
of the model file (built from its header and tensors, in eager ops); `default-poses` from poses
[frames, joints, dimensions + 1] (every confidence 1: every joint present), as the runtime's
feature extractor followed by the network: onnxruntime on the export with --raw-poses, PyTorch on
torch_default.py's feature extractor in front of the same module. Before timing PyTorch on
either, the module's logits are checked against onnxruntime on --onnx (that export) and against
read_model.py on random batches of 1 and 64 (torch_default.parity); past 1e-4 of the largest
logit it exits with an error and times nothing. The JSON line then carries the differences.
"""
import argparse, json, os, statistics, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--framework", choices=["torch", "onnxruntime"])
ap.add_argument("--model", choices=["mlp", "conv", "default", "default-poses"])
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--onnx")
ap.add_argument("--model-file", help="the default model's .atm (torch default and default-poses)")
ap.add_argument("--summarize")
ap.add_argument("--wait-quiet", type=float, metavar="SECONDS",
                help="wait (at most SECONDS) for 3 consecutive seconds with under 8%% of the machine busy")
args = ap.parse_args()


def cpu_sample():
    """(total, busy, own) CPU ticks, as actiontrain-bench's ForeignLoad."""
    with open("/proc/stat") as f:
        v = [float(x) for x in f.readline().split()[1:]]
    t = os.times()
    return sum(v), sum(v) - v[3] - v[4], (t.user + t.system) * os.sysconf("SC_CLK_TCK")


def summarize(path):
    """One table: per model, thread count and instruction-set family, the medians (lo-hi over
    the runs) of batch-1 latency and batch-1024 throughput for the runtime, PyTorch and
    onnxruntime, the runtime's ratios to both (ratio of the medians), its load times and the
    foreign load of the runs in the row."""
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    families = [f for f in ("avx2", "avx512") if any(r.get("family") == f for r in rows)]
    reps = max((sum(1 for r in rows if r["framework"] == "actiontrain" and r.get("family") == f and r["model"] == "mlp"
                    and r["threads"] == 1) for f in families), default=0)

    def sel(fw, model, threads, family):
        return [r for r in rows if r["framework"] == fw and r["model"] == model and r["threads"] == threads
                and (fw == "onnxruntime" or r.get("family") == family)]

    def med(rs, key):
        v = [r[key] for r in rs if key in r]
        return (statistics.median(v), min(v), max(v)) if v else None

    def cell(s, digits):
        return "–" if s is None else f"{s[0]:,.{digits}f} ({s[1]:,.{digits}f}–{s[2]:,.{digits}f})"

    def ratio(a, b):
        return "–" if a is None or b is None else f"**{a[0] / b[0]:.2f}**"

    ours = next((r for r in rows if r["framework"] == "actiontrain"), {})
    ort = next((r for r in rows if r["framework"] == "onnxruntime"), {})
    torch = next((r for r in rows if r["framework"] == "torch"), {})
    loads = [r.get("foreign_load", 0) for r in rows]
    print(f"\nInference, {reps} runs interleaved; median (lo–hi) over the runs. actiontrain {ours.get('kernel', '?')} kernels "
          f"(avx2 rows: held to AVX2, OpenBLAS Haswell), PyTorch {torch.get('version', '?')} (avx2 rows: "
          f"ATEN_CPU_CAPABILITY=avx2, MKL and oneDNN held to AVX2), onnxruntime {ort.get('version', '?')} "
          "(its own choice of instruction set in every row: it has no switch). Ratios: actiontrain / other "
          "(latency: lower is better; throughput: higher is better). "
          f"Foreign load over all {len(rows)} runs: median {statistics.median(loads or [0]):.2f}, max {max(loads or [0]):.2f}.")
    print("| model | threads | ISA | b1 µs actiontrain | torch | onnxruntime | vs torch | vs ort | b1024 windows/s actiontrain "
          "| torch | onnxruntime | vs torch | vs ort | load µs mapped: reused, new process | foreign load max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in [m for m in ("mlp", "conv", "default", "default-poses") if any(r["model"] == m for r in rows)]:
        for threads in sorted({r["threads"] for r in rows}):
            for f in families:
                a, t, o = sel("actiontrain", model, threads, f), sel("torch", model, threads, f), sel("onnxruntime", model, threads, f)
                la, lt, lo = (med(x, "latency_us_median") for x in (a, t, o))
                ta, tt, to = (med(x, "infer_batch_windows_per_s") for x in (a, t, o))
                foreign = max((r.get("foreign_load", 0) for r in a + t + o), default=0)
                reused, fresh = med(a, "load_mmap_reused_us"), med(a, "load_mmap_new_process_us")
                load = "–" if reused is None or fresh is None else f"{reused[0]:.0f}, {fresh[0]:.0f}"
                print(f"| {model} | {threads} | {'AVX2' if f == 'avx2' else 'AVX-512'} | {cell(la, 1)} | {cell(lt, 1)} | {cell(lo, 1)} "
                      f"| {ratio(la, lt)} | {ratio(la, lo)} | {cell(ta, 0)} | {cell(tt, 0)} | {cell(to, 0)} | {ratio(ta, tt)} "
                      f"| {ratio(ta, to)} | {load} | {100 * foreign:.0f}% |")
    for model in ("default", "default-poses"):
        checked = [r["parity"] for r in rows if r["framework"] == "torch" and r["model"] == model and "parity" in r]
        for ref in sorted({ref for c in checked for ref in c}):
            worst = max((c[ref] for c in checked if ref in c), key=lambda d: d["max_abs_diff"] / d["max_abs_logit"])
            print(f"PyTorch module of {model} against {ref}, {len(checked)} runs: max abs logit difference "
                  f"{worst['max_abs_diff']:.2g} (max |logit| {worst['max_abs_logit']:.3g}, relative "
                  f"{worst['max_abs_diff'] / worst['max_abs_logit']:.2g}) at worst")


def wait_quiet(limit):
    """As ../shared/bench/guard.py: other processes on this shared machine skew timings."""
    start, quiet = time.time(), 0
    while quiet < 3 and time.time() - start < limit:
        t0, b0, _ = cpu_sample()
        time.sleep(1)
        t1, b1, _ = cpu_sample()
        quiet = quiet + 1 if (b1 - b0) / max(t1 - t0, 1) < 0.08 else 0
    if quiet < 3:
        print(f"bench-inference: the machine stayed busy for {limit:.0f} s; measuring anyway", file=sys.stderr)


if args.summarize:
    summarize(args.summarize)
    sys.exit(0)
if args.wait_quiet is not None:
    wait_quiet(args.wait_quiet)
    sys.exit(0)

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(args.threads)
import numpy as np  # noqa: E402

start = cpu_sample()
rng = np.random.default_rng(1)
# torch: anchor_torch.py's layouts ([2565] flattened, [57 channels, 45 steps]), the default model's
# as its export's; onnxruntime: the exported graph's input ([45 frames, 57 channels], ...).
out = {"framework": args.framework, "model": args.model, "threads": args.threads}

if args.framework == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    if args.model.startswith("default"):
        import torch_default
        if not args.model_file:
            sys.exit("bench_inference.py: --model default and default-poses need --model-file")
        poses = args.model == "default-poses"
        model, header = torch_default.load(args.model_file, poses)
        try:
            checked = torch_default.parity(model, args.model_file, args.onnx, poses)
        except torch_default.ParityError as e:
            sys.exit(f"bench_inference.py: the PyTorch module of {args.model_file} fails its parity check: {e}")
        out["parity"] = {ref: {"max_abs_diff": diff, "max_abs_logit": scale} for ref, (diff, scale) in checked.items()}
        X = torch_default.random_inputs(header, 2000, poses, rng)
    else:
        X = rng.uniform(-2, 2, (2000,) + ((2565,) if args.model == "mlp" else (57, 45))).astype(np.float32)

    class TConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2, self.fc = nn.Conv1d(57, 64, 5, padding=2), nn.Conv1d(64, 128, 5, padding=2), nn.Linear(128, 6)

        def forward(self, x):
            return self.fc(F.relu(self.c2(F.relu(self.c1(x)))).mean(dim=2))

    if args.model == "mlp":
        model = nn.Sequential(nn.Linear(2565, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 6)).eval()
    elif args.model == "conv":
        model = TConv().eval()
    Xt = torch.from_numpy(X)
    singles = [Xt[i:i + 1] for i in range(2000)]
    batch = Xt[:1024].contiguous()

    def run(x):
        with torch.inference_mode():
            return model(x)
    out["version"] = torch.__version__
    out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
else:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name  # input [frames, channels] or poses [frames, joints, dims + 1]
    X = rng.uniform(-2, 2, (2000,) + tuple(sess.get_inputs()[0].shape[1:])).astype(np.float32)
    if name == "poses":
        X[..., -1] = 1  # every joint present
    singles = [X[i:i + 1] for i in range(2000)]
    batch = np.ascontiguousarray(X[:1024])

    def run(x):
        return sess.run(["logits"], {name: x})
    out["version"] = ort.__version__

for i in range(100):
    run(singles[i])
lat = []
for x in singles:
    t0 = time.perf_counter_ns()
    run(x)
    lat.append(time.perf_counter_ns() - t0)
for _ in range(3):
    run(batch)
bt = []
for _ in range(20):
    t0 = time.perf_counter()
    run(batch)
    bt.append(time.perf_counter() - t0)
end = cpu_sample()
out["latency_us_median"] = round(statistics.median(lat) / 1e3, 2)
out["infer_batch_windows_per_s"] = round(1024 / statistics.median(bt), 1)
out["foreign_load"] = round(max(0.0, ((end[1] - start[1]) - (end[2] - start[2])) / max(end[0] - start[0], 1)), 3)
print(json.dumps(out))
