#!/usr/bin/env python3
"""1-nearest-neighbour baselines for a native pose dataset (.jsonl), the reference the
accuracy protocols compare with (docs/benchmarks.md).

    scripts/protocols/nn1.py DATA.jsonl [--frames 32]

Each sequence is resampled linearly to --frames frames (absent joints interpolated from the
frames that have them, 0 where a joint is never seen), flattened, and classified by the
Euclidean nearest training sequence. Two variants: raw coordinates ("resampled joints"), and
centred (the sequence's mean over all joints and frames subtracted, then divided by its RMS
spread). Train = every sequence whose split is not "test"; scored on the test split at the
sequence level. Needs numpy.
"""
import argparse, json
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("--frames", type=int, default=32)
ap.add_argument("--dims", type=int, choices=[2, 3],
                help="coordinates per point (default: the schema's, else 3 for the built-in 3D skeletons, else 2)")
args = ap.parse_args()

lines = open(args.data, encoding="utf-8-sig").read().splitlines()
header = json.loads(lines[0])
seqs = [json.loads(l) for l in lines[1:] if l.strip()]
joints = []
for q in seqs:
    for f in q["frames"]:
        for person in ([f["pose"]] if "pose" in f else [p.get("pose", {}) for p in f.get("people", [])[:1]]):
            for j in person:
                if j not in joints:
                    joints.append(j)
skeleton = header.get("skeleton")
D = args.dims or (skeleton.get("dimensions", 2) if isinstance(skeleton, dict) else
                  3 if skeleton in ("vision-body-3d", "natops-8", "kinect-v1-20", "kinect-v2-25") else 2)


def resampled(q):
    T = len(q["frames"])
    a = np.full((max(T, 1), len(joints), D), np.nan)
    for t, f in enumerate(q["frames"]):
        for j, v in f.get("pose", {}).items():
            a[t, joints.index(j)] = v[:D]
    src = np.arange(a.shape[0])
    dst = np.linspace(0, a.shape[0] - 1, args.frames)
    out = np.zeros((args.frames, len(joints), D))
    for j in range(len(joints)):
        for d in range(D):
            ok = ~np.isnan(a[:, j, d])
            if ok.any():
                out[:, j, d] = np.interp(dst, src[ok], a[ok, j, d])
    return out


X = np.stack([resampled(q) for q in seqs])
y = np.array([q.get("label") for q in seqs])
test = np.array([q.get("split") == "test" for q in seqs])


def nn1(F):
    F = F.reshape(len(F), -1)
    tr, te = F[~test], F[test]
    d = (te ** 2).sum(1)[:, None] - 2 * te @ tr.T + (tr ** 2).sum(1)[None, :]
    return float((y[~test][d.argmin(1)] == y[test]).mean())


centred = X - X.mean(axis=(1, 2), keepdims=True)
centred /= np.sqrt((centred ** 2).sum(-1).mean(axis=(1, 2)))[:, None, None, None] + 1e-12
print(f"{args.data}: {(~test).sum()} train, {test.sum()} test, {args.frames} frames; "
      f"1-NN raw {nn1(X):.3f}, centred and scaled {nn1(centred):.3f}")
