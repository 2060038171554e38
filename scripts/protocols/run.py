#!/usr/bin/env python3
"""Run a published evaluation protocol with actiontrain and summarise it.

    scripts/protocols/run.py natops      [--source DIR] [--seeds 0,1,2] [--out runs/protocols]
    scripts/protocols/run.py penn-action [--source DIR] ...
    scripts/protocols/run.py utkinect    [--source DIR] ... [--loso] [--half-splits 10]

Each protocol imports the dataset from ../shared/datasets/<name> (or --source) with its official
split, trains once per seed on the whole official training split in each of --modes (default
`default,config`; `default` is `fit` with no config, i.e. the recipe; `config` the committed
configs/<protocol>.json; `tune` is `actiontrain tune` on the training split, then its refitted
winner), evaluates on the official test split (`actiontrain eval --report`),
and prints accuracy per seed, mean and standard deviation, training time and model size.
`--loso` (UTKinect) adds leave-one-subject-out over all 10 subjects (seed 0); `--half-splits N`
adds N random 5/5 subject splits (the protocol of Vemulapalli et al. 2014; seed 0). Settings were
chosen by cross-validation on the training split (scripts/protocols/sweep.py), never on the
test split. Penn Action and UTKinect data stay outside the repository (their terms).
"""
import argparse, json, os, random, re, statistics, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
shared = os.path.join(os.path.dirname(root), "shared", "datasets")
DATASETS = {  # protocol: (importer kind, folder under ../shared/datasets, config)
    "natops": ("natops", "natops", "configs/natops.json"),
    "penn-action": ("penn-action", "penn_action", "configs/penn-action.json"),
    "utkinect": ("utkinect", "utkinect_action3d", "configs/utkinect.json"),
}
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("protocol", choices=sorted(DATASETS))
ap.add_argument("--source", help="dataset folder (default ../shared/datasets/<name>)")
ap.add_argument("--seeds", default="0,1,2")
ap.add_argument("--modes", default="default,config",
                help="comma-separated: default (fit with no config: the recipe), config (configs/<protocol>.json), "
                     "tune (actiontrain tune on the training split, then the refitted winner)")
ap.add_argument("--minutes", default="10", help="tune: search budget in minutes")
ap.add_argument("--out", default="runs/protocols")
ap.add_argument("--loso", action="store_true", help="UTKinect: also leave-one-subject-out over all subjects")
ap.add_argument("--half-splits", type=int, default=0, metavar="N",
                help="UTKinect: also N random half/half subject splits (seed 0), as Vemulapalli et al. 2014 report")
args = ap.parse_args()
kind, folder, config = DATASETS[args.protocol]
source = args.source or os.path.join(shared, folder)
out = os.path.join(root, args.out, args.protocol)
os.makedirs(out, exist_ok=True)


def sh(*cmd):
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}\n{r.stderr.strip()}")
    return r.stdout


sh("swift", "build", "-c", "release", "--product", "actiontrain")
binary = sh("swift", "build", "-c", "release", "--show-bin-path").strip() + "/actiontrain"
data = os.path.join(out, "data.jsonl")
print(sh(binary, "import", kind, source, "--out", data, "--force").strip())


def train_and_eval(data, run, seed, mode="config"):
    t = time.time()
    if mode == "tune":
        sh(binary, "tune", data, "--minutes", args.minutes, "--seed", str(seed), "--out", run, "--force")
        seconds = time.time() - t  # the whole search and the final fit
    else:
        given = ["--config", os.path.join(root, config)] if mode == "config" else []
        log = sh(binary, "fit", data, *given, "--seed", str(seed), "--out", run, "--force")
        seconds = float(re.search(r"trained in ([0-9.]+) s", log).group(1)) if "trained in" in log else time.time() - t
    sh(binary, "eval", f"{run}/model.atm", data, "--split", "test", "--report", f"{run}/test-report", "--force")
    report = json.load(open(f"{run}/test-report/report.json"))
    level = report[report["headline"]]
    return level["accuracy"], level["macroF1"], seconds, os.path.getsize(f"{run}/model.atm")


def summary(name, rows):
    accs = [r[0] for r in rows]
    sd = statistics.stdev(accs) if len(accs) > 1 else 0.0
    print(f"{name}: accuracy {statistics.mean(accs):.4f} ± {sd:.4f} (per run: {', '.join(f'{a:.4f}' for a in accs)}), "
          f"macro-F1 {statistics.mean(r[1] for r in rows):.4f}, training {statistics.mean(r[2] for r in rows):.1f} s "
          f"(max {max(r[2] for r in rows):.1f}), model {rows[0][3] / 1024:.0f} KiB")


for mode in args.modes.split(","):
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        rows.append(train_and_eval(data, os.path.join(out, f"{mode}-seed{seed}"), seed, mode))
        print(f"  {mode}, seed {seed}: accuracy {rows[-1][0]:.4f}, {rows[-1][2]:.1f} s", flush=True)
    summary(f"{args.protocol} official split, {mode}", rows)

lines = open(data).read().splitlines()
seqs = [json.loads(l) for l in lines[1:] if l.strip()]
subjects = sorted({q["group"] for q in seqs if q.get("group") is not None})


def with_test_subjects(name, test):
    """Trains (seed 0) on the other subjects and evaluates on `test`."""
    path = os.path.join(out, f"{name}.jsonl")
    with open(path, "w") as f:
        f.write(lines[0] + "\n")
        for q in seqs:
            f.write(json.dumps(dict(q, split="test" if q["group"] in test else "train")) + "\n")
    return train_and_eval(path, os.path.join(out, name), 0)


if args.loso:
    folds = []
    for subject in subjects:
        folds.append(with_test_subjects(f"loso-{subject}", {subject}))
        print(f"  test subject {subject}: accuracy {folds[-1][0]:.4f}", flush=True)
    sizes = [len([q for q in seqs if q["group"] == s]) for s in subjects]
    pooled = sum(r[0] * n for r, n in zip(folds, sizes)) / sum(sizes)
    summary("leave-one-subject-out (mean over subjects)", folds)
    print(f"leave-one-subject-out, pooled over all {sum(sizes)} sequences: accuracy {pooled:.4f}")

if args.half_splits:
    rng, splits = random.Random(0), []
    for k in range(args.half_splits):
        test = set(rng.sample(subjects, len(subjects) // 2))
        splits.append(with_test_subjects(f"half-{k}", test))
        print(f"  split {k}, test subjects {' '.join(sorted(test))}: accuracy {splits[-1][0]:.4f}", flush=True)
    summary(f"{args.half_splits} random half/half subject splits", splits)
