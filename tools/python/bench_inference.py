#!/usr/bin/env python3
"""Inference latency and throughput of PyTorch or onnxruntime on the reference models of
../shared/bench (anchor_torch.py's definitions and protocol), for scripts/bench-inference.

    bench_inference.py --framework torch --model mlp|conv --threads N
    bench_inference.py --framework onnxruntime --model mlp|conv --threads N --onnx FILE
    bench_inference.py --summarize RESULTS.jsonl

Latency: batch 1, median of 2,000 calls after 100 warm-up calls, cycling through 2,000 random
windows. Throughput: 1024 / median of 20 batch-1024 calls after 3 warm-up calls. Prints one
JSON line. Inputs are uniform in [-2, 2): the timings do not depend on the values.
"""
import argparse, json, os, statistics, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--framework", choices=["torch", "onnxruntime"])
ap.add_argument("--model", choices=["mlp", "conv"])
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--onnx")
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
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    order = ["portable", "AVX2+FMA", "AVX-512"]  # the runtime's own kernels (CKernels)
    best = max((order.index(r["kernel"]) for r in rows if r.get("kernel") in order), default=0)
    for r in rows:  # the runtime on another OpenBLAS kernel than the environment's Haswell, or own kernels held back
        if r["framework"] != "actiontrain":
            continue
        tags = [r["blas_core"]] if r.get("blas_core", "Haswell") != "Haswell" else []
        if r.get("kernel") in order and order.index(r["kernel"]) < best:
            tags.append(r["kernel"].split("+")[0] + " kernels")
        if tags:
            r["framework"] = "actiontrain " + ", ".join(tags)
    print("median over runs (runs interleaved); ratios are actiontrain / other, lower latency is better\n")
    print(f"{'model':28}{'thr':>4}  {'b1 µs: ours':>15}{'torch':>9}{'onnxrt':>9}{'vs torch':>10}{'vs ort':>8}"
          f"  {'b1024 windows/s: actiontrain':>29}{'torch':>10}{'onnxrt':>10}"
          f"  {'load µs (reused, fresh pages, new process): copying':>52}{'mapped':>22}  foreign load")
    ours = sorted({r["framework"] for r in rows if r["framework"].startswith("actiontrain")}, key=len)
    for model in ["mlp", "conv"]:
        for threads in sorted({r["threads"] for r in rows}):
            sel = lambda fw: [r for r in rows if r["framework"] == fw and r["model"] == model and r["threads"] == threads]
            med = lambda fw, k: statistics.median([r[k] for r in sel(fw)]) if sel(fw) else float("nan")
            foreign = max((r.get("foreign_load", 0) for r in rows if r["model"] == model and r["threads"] == threads), default=0)
            for a in ours:
                lat = {fw: med(fw, "latency_us_median") for fw in [a, "torch", "onnxruntime"]}
                thr = {fw: med(fw, "infer_batch_windows_per_s") for fw in [a, "torch", "onnxruntime"]}
                name = model + ("" if a == "actiontrain" else " (" + a.split(" ", 1)[1] + ")")
                print(f"{name:28}{threads:>4}  {lat[a]:>15.1f}{lat['torch']:>9.1f}{lat['onnxruntime']:>9.1f}"
                      f"{lat[a] / lat['torch']:>10.2f}{lat[a] / lat['onnxruntime']:>8.2f}"
                      f"  {thr[a]:>29.0f}{thr['torch']:>10.0f}{thr['onnxruntime']:>10.0f}"
                      f"  {med(a, 'load_reused_us'):>36.0f} {med(a, 'load_fresh_us'):>7.0f} {med(a, 'load_new_process_us'):>7.0f}"
                      f"  {med(a, 'load_mmap_reused_us'):>7.0f} {med(a, 'load_mmap_fresh_us'):>6.0f} {med(a, 'load_mmap_new_process_us'):>7.0f}"
                      f"  max {100 * foreign:.0f}%")


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
# torch: anchor_torch.py's layouts ([2565] flattened, [57 channels, 45 steps]); onnxruntime: the
# exported graph's input [45 frames, 57 channels].
shape = (45, 57) if args.framework == "onnxruntime" else (2565,) if args.model == "mlp" else (57, 45)
X = rng.uniform(-2, 2, (2000,) + shape).astype(np.float32)
out = {"framework": args.framework, "model": args.model, "threads": args.threads}

if args.framework == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)

    class TConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2, self.fc = nn.Conv1d(57, 64, 5, padding=2), nn.Conv1d(64, 128, 5, padding=2), nn.Linear(128, 6)

        def forward(self, x):
            return self.fc(F.relu(self.c2(F.relu(self.c1(x)))).mean(dim=2))

    model = (nn.Sequential(nn.Linear(2565, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 6))
             if args.model == "mlp" else TConv()).eval()
    Xt = torch.from_numpy(X)
    singles = [Xt[i:i + 1] for i in range(2000)]
    batch = Xt[:1024].contiguous()

    def run(x):
        with torch.inference_mode():
            return model(x)
    out["version"] = torch.__version__
else:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    singles = [X[i:i + 1] for i in range(2000)]
    batch = np.ascontiguousarray(X[:1024])

    def run(x):
        return sess.run(["logits"], {"input": x})
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
