"""Shared reading and preprocessing for the reference baselines (ftp_baseline.py, ddnet.py).

Not part of the Swift package: a small, independent NumPy reading of the toolkit's native
`.jsonl` pose format (docs/datasets.md) and the preprocessing both baselines share.

Reading (`load`):
- the header's "skeleton" is a built-in name (the three the shared sets use, joint lists copied
  from Sources/PoseCore/BuiltInSkeletons.swift) or a schema object ("joints", "dimensions",
  optional "centre", "torsoUpper", "torsoLower");
- a frame is {"pose": {...}} or {"people": [{"track": id, "pose": {...}}, ...]}. With several
  people, M = the largest number of tracks any sequence has; each sequence's M longest tracks
  (most frames present), in order of first appearance, are put side by side as M bodies
  (joints body-major: all joints of body 1, then body 2); a body missing from a frame is
  absent there, and a sequence with fewer tracks has the remaining bodies absent throughout;
- a point is [x, y(, z)(, confidence)]; a joint omitted from a pose, or with confidence <= 0,
  is absent (NaN); an empty pose is a frame with every joint absent;
- frame times are the frames' "t" when given, else the frame index (even spacing);
- sequences whose "split" is "train" or "test" are kept; other splits are ignored.

Preprocessing (`prepare`), per sequence, in this order:
1. absent joints are filled, per joint and coordinate, by linear interpolation in time between
   the frames where that joint is present (held constant before its first and after its last
   sighting); a joint never present in the sequence takes, in each frame, the mean of the
   filled joints of its own body (of all bodies when its body is never present; zeros when
   nothing is ever present). This filling is for these baselines only: the toolkit itself masks
   absent joints (the Pose contract) and never invents them;
2. linear interpolation in time to `frames` evenly spaced instants from the first to the last
   frame time (a one-frame sequence is repeated);
3. centring: minus the sequence mean of the skeleton's centre joints (mean over the centre
   joints of every body and over all frames; the mean of all joints when the skeleton has no
   centre). One translation per sequence, so whole-body motion (walking) is kept;
4. scaling: divided by the torso length (mean over frames and bodies of the distance between
   the mean of torsoUpper and the mean of torsoLower) when the skeleton declares a torso, else
   by the RMS spread (root mean square distance of each body's joints from that body's mean
   in each frame, averaged over bodies). A scale <= 1e-9 leaves the sequence unscaled.
"""
import json

import numpy as np

KINECT_V1 = ["hipCenter", "spine", "shoulderCenter", "head", "leftShoulder", "leftElbow", "leftWrist", "leftHand",
             "rightShoulder", "rightElbow", "rightWrist", "rightHand", "leftHip", "leftKnee", "leftAnkle", "leftFoot",
             "rightHip", "rightKnee", "rightAnkle", "rightFoot"]
BUILT_IN = {
    "natops-8": dict(joints=["leftHandTip", "rightHandTip", "leftElbow", "rightElbow", "leftWrist", "rightWrist",
                             "leftThumb", "rightThumb"], dimensions=3),
    "penn-action-13": dict(joints=["head", "leftShoulder", "rightShoulder", "leftElbow", "rightElbow", "leftWrist",
                                   "rightWrist", "leftHip", "rightHip", "leftKnee", "rightKnee", "leftAnkle",
                                   "rightAnkle"], dimensions=2, centre=["leftHip", "rightHip"],
                           torsoUpper=["leftShoulder", "rightShoulder"], torsoLower=["leftHip", "rightHip"]),
    "kinect-v1-20": dict(joints=KINECT_V1, dimensions=3, centre=["hipCenter"], torsoUpper=["shoulderCenter"],
                         torsoLower=["hipCenter"]),
}


class Dataset:
    """Sequences of one file: `X[i]` is a float64 array [frames_i, J, D] (NaN = absent), `t[i]`
    its frame times, `y[i]` the class index, `group[i]` (or None), `split[i]` 'train'/'test'.
    `bodies` lists each body's joint indices into J; `centre`, `torso_upper`, `torso_lower` are
    per-body index lists (empty when the skeleton has none)."""


def skeleton(spec, path):
    if isinstance(spec, str):
        if spec not in BUILT_IN:
            raise SystemExit(f"{path}: skeleton '{spec}' is not one of {sorted(BUILT_IN)}; "
                             "add its joint list to scripts/reference/poses.py")
        spec = BUILT_IN[spec]
    if not isinstance(spec, dict) or "joints" not in spec:
        raise SystemExit(f"{path}: the header's skeleton must be a built-in name or a schema object with 'joints'")
    return dict(joints=list(spec["joints"]), dimensions=int(spec.get("dimensions", 3)),
                centre=list(spec.get("centre", [])), torsoUpper=list(spec.get("torsoUpper", [])),
                torsoLower=list(spec.get("torsoLower", [])))


def load(path):
    with open(path, encoding="utf-8-sig") as f:
        lines = [(n, l) for n, l in enumerate(f, 1) if l.strip()]
    header = json.loads(lines[0][1])
    sk = skeleton(header.get("skeleton"), path)
    names, D = sk["joints"], sk["dimensions"]
    index = {j: i for i, j in enumerate(names)}
    raw = []
    for n, line in lines[1:]:
        s = json.loads(line)
        if s.get("split") not in ("train", "test"):
            continue
        tracks, order, times = [], [], []
        for k, fr in enumerate(s["frames"]):
            times.append(float(fr.get("t", k)))
            people = fr["people"] if "people" in fr else [{"track": "0", "pose": fr.get("pose", {})}]
            per = {}
            for p, person in enumerate(people):
                tid = str(person.get("track", p))
                if tid not in order:
                    order.append(tid)
                per[tid] = person.get("pose", {})
            tracks.append(per)
        raw.append((s, n, tracks, order, times))
    M = max([len(r[3]) for r in raw] + [1])
    J = len(names)
    classes = header.get("classes") or sorted({r[0]["label"] for r in raw})
    ds = Dataset()
    ds.path, ds.classes, ds.dims, ds.M = path, list(classes), D, M
    ds.joint_names = [f"p{b + 1}.{j}" if M > 1 else j for b in range(M) for j in names]
    ds.bodies = [list(range(b * J, (b + 1) * J)) for b in range(M)]
    ds.centre = [[b * J + index[j] for j in sk["centre"]] for b in range(M)]
    ds.torso_upper = [[b * J + index[j] for j in sk["torsoUpper"]] for b in range(M)]
    ds.torso_lower = [[b * J + index[j] for j in sk["torsoLower"]] for b in range(M)]
    ds.X, ds.t, ds.y, ds.group, ds.split, ds.ids = [], [], [], [], [], []
    for s, n, tracks, order, times in raw:
        seen = {tid: sum(1 for per in tracks if tid in per) for tid in order}
        keep = sorted(sorted(order, key=lambda tid: -seen[tid])[:M], key=order.index)
        X = np.full((len(tracks), M * J, D), np.nan)
        for k, per in enumerate(tracks):
            for b, tid in enumerate(keep):
                for j, v in per.get(tid, {}).items():
                    if j not in index:
                        raise SystemExit(f"{path}:{n}: joint '{j}' is not in the skeleton")
                    if len(v) > D and v[D] <= 0:
                        continue
                    X[k, b * J + index[j]] = v[:D]
        ds.X.append(X)
        ds.t.append(np.asarray(times))
        ds.y.append(classes.index(s["label"]))
        ds.group.append(s.get("group"))
        ds.split.append(s["split"])
        ds.ids.append(s["id"])
    ds.y = np.asarray(ds.y)
    ds.split = np.asarray(ds.split)
    return ds


def fill(X, t, bodies):
    """A copy of X [F, J, D] with absent joints filled (step 1 of the module docstring); t: frame times."""
    X = X.copy()
    F = X.shape[0]
    if F == 0:
        return X
    frames = t
    never = []
    for j in range(X.shape[1]):
        present = ~np.isnan(X[:, j, 0])
        if not present.any():
            never.append(j)
            continue
        if present.all():
            continue
        for d in range(X.shape[2]):
            X[:, j, d] = np.interp(frames, frames[present], X[present, j, d])
    if never:
        known = [j for j in range(X.shape[1]) if j not in never]
        for j in never:
            body = next(b for b in bodies if j in b)
            own = [k for k in body if k in known]
            src = own or known
            X[:, j] = X[:, src].mean(axis=1) if src else 0.0
    return X


def resample(X, t, frames):
    """Linear interpolation in time to `frames` evenly spaced instants over [t0, t_end]."""
    F = X.shape[0]
    if F == 0:
        return np.zeros((frames,) + X.shape[1:])
    if F == 1 or t[-1] <= t[0]:
        return np.repeat(X[:1], frames, axis=0)
    grid = np.linspace(t[0], t[-1], frames)
    flat = X.reshape(F, -1)
    out = np.empty((frames, flat.shape[1]))
    for c in range(flat.shape[1]):
        out[:, c] = np.interp(grid, t, flat[:, c])
    return out.reshape((frames,) + X.shape[1:])


def normalise(P, ds):
    """Centring and scaling (steps 3 and 4): P is [T, J, D] without absent joints."""
    centre = [j for c in ds.centre for j in c]
    P = P - (P[:, centre] if centre else P).reshape(-1, P.shape[2]).mean(axis=0)
    if all(ds.torso_upper) and all(ds.torso_lower):
        scale = np.mean([np.linalg.norm(P[:, u].mean(axis=1) - P[:, l].mean(axis=1), axis=1).mean()
                         for u, l in zip(ds.torso_upper, ds.torso_lower)])
    else:
        scale = np.mean([np.sqrt(((P[:, b] - P[:, b].mean(axis=1, keepdims=True)) ** 2).sum(axis=2).mean())
                         for b in ds.bodies])
    return P / scale if scale > 1e-9 else P


def prepare(ds, frames):
    """Every sequence filled, resampled to `frames`, centred and scaled: [N, frames, J, D]."""
    return np.stack([normalise(resample(fill(X, t, ds.bodies), t, frames), ds) for X, t in zip(ds.X, ds.t)])


def markdown(rows, columns):
    """A Markdown table: rows are dicts keyed by the column names."""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(out)
