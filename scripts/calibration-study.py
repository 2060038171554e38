#!/usr/bin/env python3
"""Calibration maps measured on devbench runs (docs/benchmarks.md, issue 41): for each run folder
of a variant fitted with `calibration temperature` (its calibration.json holds the evidence the
temperature was fitted on: labels and uncalibrated logits), the test split's sequence-level
accuracy, ECE (15 bins, as `eval`) and log loss

- before: T = 1 (the network as trained; recovered from the calibrated test probabilities);
- temperature: the model as written (T fitted on the evidence);
- vector: per-class vector scaling `softmax(a ⊙ l + b)` of the log-probabilities l, fitted on
  the same evidence by L-BFGS (a small L2 pull of a to its mean and of b to 0 keeps it finite
  on separable evidence);
- oracle: one temperature fitted on the test windows themselves (what no fit can know: the floor
  of a temperature's ECE on that split).

    scripts/calibration-study.py --runs runs/devbench/cal-t3 [--sets natops,utk]
"""
import argparse, glob, json, os, statistics
import numpy as np
from scipy.optimize import minimize, minimize_scalar

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--runs", required=True)
ap.add_argument("--sets", default="")
args = ap.parse_args()
EPS = 1e-15  # Metrics.logLossEpsilon


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def softmax(z):
    return np.exp(log_softmax(z))


def ece(p, y, bins=15):
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    b = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)
    total = 0.0
    for k in range(bins):
        m = b == k
        if m.any():
            total += m.sum() / len(y) * abs((pred[m] == y[m]).mean() - conf[m].mean())
    return total


def scores(p, y):
    return dict(accuracy=float((p.argmax(axis=1) == y).mean()), ece=ece(p, y),
                logLoss=float(-np.log(np.clip(p[np.arange(len(y)), y], EPS, 1)).mean()))


def temperature(l, y):
    f = lambda s: -log_softmax(np.exp(s) * l)[np.arange(len(y)), y].mean()
    return 1 / np.exp(minimize_scalar(f, bounds=(-7, 7), method="bounded").x)


def vector(l, y, lam=1.0):
    n, K = l.shape

    def f(theta):
        a, b = theta[:K], theta[K:]
        lp = log_softmax(a * l + b)
        loss = -lp[np.arange(n), y].sum() + lam * (((a - a.mean()) ** 2).sum() + (b ** 2).sum())
        g = np.exp(lp)
        g[np.arange(n), y] -= 1
        ga = (g * l).sum(axis=0) + 2 * lam * (a - a.mean())
        gb = g.sum(axis=0) + 2 * lam * b
        return loss, np.concatenate([ga, gb])

    t = temperature(l, y)
    r = minimize(f, np.concatenate([np.full(K, 1 / t), np.zeros(K)]), jac=True, method="L-BFGS-B")
    return r.x[:K], r.x[K:]


def by_sequence(pw, seqs, order):
    out = np.zeros((len(order), pw.shape[1]))
    count = np.zeros(len(order))
    index = {s: i for i, s in enumerate(order)}
    for p, s in zip(pw, seqs):
        out[index[s]] += p
        count[index[s]] += 1
    return out / count[:, None]


rows = {}
for run in sorted(glob.glob(os.path.join(args.runs, "*-s*"))):
    name = os.path.basename(run)
    s = name.rsplit("-s", 1)[0]
    if args.sets and s not in args.sets.split(","):
        continue
    try:
        cal = json.load(open(os.path.join(run, "calibration.json")))
        test = json.load(open(os.path.join(run, "test.json")))
    except FileNotFoundError:
        continue
    T = cal["calibration"]["temperature"]
    classes = test["classes"]
    oof_l = log_softmax(np.array(cal["logits"], dtype=np.float64))
    oof_y = np.array(cal["labels"])
    win = test["predictions"]["window"]
    seqs = [w["sequence"] for w in win]
    # The written model's window probabilities are softmax(z / T): T · log p is z up to a constant a row.
    l = log_softmax(T * np.log(np.clip(np.array([w["probabilities"] for w in win], dtype=np.float64), 1e-300, 1)))
    order = [q["sequence"] for q in test["predictions"]["sequence"]]
    y = np.array([classes.index(q["true"]) for q in test["predictions"]["sequence"]])
    wy = np.array([classes.index(w["true"]) for w in win])
    a, b = vector(oof_l, oof_y)
    maps = dict(before=softmax(l), temperature=softmax(l / T), vector=softmax(a * l + b),
                oracle=softmax(l / temperature(l, wy)))
    rows.setdefault(s, []).append({k: scores(by_sequence(p, seqs, order), y) for k, p in maps.items()})

methods = ["before", "temperature", "vector", "oracle"]
print("| set | runs | " + " | ".join(f"{m} acc / ECE / log loss" for m in methods) + " |")
print("|---|---|" + "---|" * len(methods))
for s, rs in rows.items():
    cells = []
    for m in methods:
        mean = lambda k: statistics.mean(r[m][k] for r in rs)
        cells.append(f"{mean('accuracy'):.3f} / {mean('ece'):.3f} / {mean('logLoss'):.3f}")
    print(f"| {s} | {len(rs)} | " + " | ".join(cells) + " |")
