#!/usr/bin/env python3
"""Compare training configs by cross-validation on the TRAINING split only (never the test split).

    scripts/protocols/sweep.py DATA BASE.json [--folds 5] [--set key=value ...]...

Each `--set` group is one candidate: BASE.json with those keys replaced (values are JSON, or
plain strings). The training sequences of DATA (split != "test"; the test split is dropped) are
cut into folds: whole groups (subjects) per fold when the data has groups (one fold per group
when there are fewer groups than --folds), otherwise stratified by label with a fixed seed.
For each fold, a copy of the data marks the fold "test", `actiontrain fit` trains on the rest
exactly as the final protocol does (validationFraction 0, fixed epochs), and `actiontrain eval`
scores the fold at its headline level (sequence level for one-label sequences). The script
prints the mean accuracy over folds, each fold's, and the seconds per fit. Needs a release build.
"""
import argparse, collections, json, os, random, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("base")
ap.add_argument("--folds", type=int, default=5)
ap.add_argument("--set", action="append", nargs="*", default=[], metavar="KEY=VALUE")
args = ap.parse_args()
binary = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=root, capture_output=True,
                        text=True, check=True).stdout.strip() + "/actiontrain"

lines = open(args.data).read().splitlines()
header, train = lines[0], [json.loads(l) for l in lines[1:] if l.strip()]
train = [q for q in train if q.get("split") != "test"]
groups = sorted({q["group"] for q in train if q.get("group") is not None})
if groups and len(groups) >= 2:
    per = {g: i % args.folds for i, g in enumerate(groups)} if len(groups) > args.folds else {g: i for i, g in enumerate(groups)}
    fold_of = [per[q["group"]] for q in train]
else:
    rng, by_label, fold_of = random.Random(0), collections.defaultdict(list), [0] * len(train)
    for i, q in enumerate(train):
        by_label[q.get("label")].append(i)
    for label in sorted(by_label, key=str):
        idx = by_label[label]
        rng.shuffle(idx)
        for k, i in enumerate(idx):
            fold_of[i] = k % args.folds
scratch = tempfile.mkdtemp(prefix="sweep-")
folds = []
for k in sorted(set(fold_of)):
    path = os.path.join(scratch, f"fold{k}.jsonl")
    with open(path, "w") as f:
        f.write(header + "\n")
        for q, fk in zip(train, fold_of):
            f.write(json.dumps(dict(q, split="test" if fk == k else "train")) + "\n")
    folds.append(path)

base = json.load(open(args.base))
for cand in args.set or [[]]:
    cfg = dict(base, validationFraction=0)
    for kv in cand:
        k, v = kv.split("=", 1)
        try:
            cfg[k] = json.loads(v)
        except json.JSONDecodeError:
            cfg[k] = v
    accs, secs = [], []
    for data in folds:
        with tempfile.TemporaryDirectory() as tmp:
            path, run = os.path.join(tmp, "config.json"), os.path.join(tmp, "run")
            json.dump(cfg, open(path, "w"))
            t = time.time()
            r = subprocess.run([binary, "fit", data, "--config", path, "--out", run], capture_output=True, text=True)
            secs.append(time.time() - t)
            if r.returncode != 0:
                sys.exit(f"fit failed for {cand}: {r.stderr.strip()}")
            r = subprocess.run([binary, "eval", f"{run}/model.atm", data, "--split", "test", "--json", f"{run}/cv.json"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"eval failed for {cand}: {r.stderr.strip()}")
            report = json.load(open(f"{run}/cv.json"))
            accs.append(report[report["headline"]]["accuracy"])
    mean = sum(accs) / len(accs)
    print(f"cv {mean:.4f}  [{' '.join(f'{a:.3f}' for a in accs)}]  {sum(secs) / len(secs):5.1f} s/fit  "
          f"{' '.join(cand) or '(base)'}", flush=True)
