#!/usr/bin/env python3
"""Reference values for Tests/EvalTests, computed independently of the Swift code.

    python3 scripts/eval_reference.py

Prints (1) McNemar p-values for a table of discordant counts (b, c): the exact two-sided
binomial test by hand with math.comb when b + c < 25, otherwise the chi-square test with
Edwards' continuity correction, max(0, |b - c| - 1)^2 / (b + c), whose one-degree-of-freedom
survival function is erfc(sqrt(x / 2)); each is cross-checked with scipy.stats when scipy is
installed; and (2) the metrics of the 8-sample, 3-class example used by MetricsTests
(numpy only, float32 inputs as in Swift). The Swift tests hold these numbers as constants.
"""
import math

import numpy as np

EXACT_BELOW = 25
PAIRS = [(0, 0), (1, 0), (3, 1), (5, 0), (2, 10), (8, 16), (12, 12), (0, 24),
         (12, 13), (15, 30), (40, 60), (70, 100), (0, 30), (200, 150)]


def mcnemar(b, c):
    n = b + c
    if n == 0:
        return 1.0, "exact"
    if n < EXACT_BELOW:
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
        return min(1.0, 2 * tail), "exact"
    x = max(0.0, abs(b - c) - 1.0) ** 2 / n
    return math.erfc(math.sqrt(x / 2)), "chi2"


def scipy_check(b, c, p, method):
    try:
        from scipy import stats
    except ImportError:
        return "scipy not installed"
    n = b + c
    if n == 0:
        return "n = 0"
    if method == "exact":
        q = stats.binomtest(min(b, c), n, 0.5).pvalue
    else:
        q = stats.chi2.sf(max(0.0, abs(b - c) - 1.0) ** 2 / n, 1)
    assert abs(p - q) <= 1e-12 * max(1.0, q), (b, c, p, q)
    return "scipy agrees"


def metrics_example():
    truth = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    probs = np.array([
        [0.70, 0.20, 0.10],
        [0.50, 0.30, 0.20],
        [0.25, 0.45, 0.30],
        [0.10, 0.85, 0.05],
        [0.34, 0.41, 0.25],
        [0.55, 0.35, 0.10],
        [0.05, 0.13, 0.82],
        [0.20, 0.42, 0.38],
    ], dtype=np.float32).astype(np.float64)
    n, k = probs.shape
    pred = probs.argmax(axis=1)
    cm = np.zeros((k, k), dtype=int)
    for t, p in zip(truth, pred):
        cm[t, p] += 1
    po = np.trace(cm) / n
    pe = (cm.sum(axis=1) * cm.sum(axis=0)).sum() / n ** 2
    kappa = (po - pe) / (1 - pe)
    balanced = np.mean([cm[i, i] / cm[i].sum() for i in range(k) if cm[i].sum() > 0])
    logloss = -np.mean(np.log(np.clip(probs[np.arange(n), truth], 1e-15, 1)))
    conf = probs[np.arange(n), pred]
    bins = 15
    b = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)
    ece = 0.0
    for i in range(bins):
        m = b == i
        if m.any():
            ece += m.sum() / n * abs((pred[m] == truth[m]).mean() - conf[m].mean())
    # top-2 with argmax's tie rule (lower index first)
    hits = 0
    for i in range(n):
        t = truth[i]
        rank = sum(1 for j in range(k) if probs[i, j] > probs[i, t] or (j < t and probs[i, j] == probs[i, t]))
        hits += rank < 2
    print("metrics example")
    print("  confusion", cm.tolist())
    print(f"  accuracy {po!r}  kappa {kappa!r}  balanced {balanced!r}")
    print(f"  logLoss {logloss!r}  ece {ece!r}  top2 {hits / n!r}")


if __name__ == "__main__":
    print("McNemar (b, c) -> p")
    for b, c in PAIRS:
        p, method = mcnemar(b, c)
        print(f"  ({b}, {c}) {method:5s} {p!r}  [{scipy_check(b, c, p, method)}]")
    metrics_example()
