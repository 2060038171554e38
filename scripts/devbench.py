#!/usr/bin/env python3
"""`fit` + `eval` of one variant over the development sets and seeds, as every recipe choice is
measured (docs/benchmarks.md): sequence accuracy on each set's test split, mean ± sd over seeds.

    scripts/devbench.py --name default [--sets natops,utk,...] [--seeds 1,2,3] [-- extra fit flags]
    scripts/devbench.py --table [--names default,aligned]      # the table of what was run

Sets come from scripts/devsets.py (default folder runs/devsets). Each run is `actiontrain fit SET
--seed S --out runs/devbench/NAME/SET-sS` with the extra flags (utkpairs2d gets `--people
bodies=2`), then `actiontrain eval` of its model on the set's test split; one JSON line per run is
appended to runs/devbench/results.jsonl (set, seed, name, flags, accuracy, fit seconds), and a run
already there with the same name, set, seed and flags is not run again. `--table` prints
mean ± sd per set and variant, one column per variant (`--metric`: accuracy, ece, logLoss or cpu).
"""
import argparse, json, os, re, statistics, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = ["natops", "natops15", "natops2d", "utk", "utkanon", "utk2d", "utkview", "utkpairs2d", "penn15",
        "utkrot45", "utkrot90", "utk2drot90", "utkcams", "natopsrot45"]
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--name", help="the variant's name (a column of the table)")
ap.add_argument("--sets", default=",".join(SETS))
ap.add_argument("--seeds", default="1,2,3")
ap.add_argument("--data", default=os.path.join(root, "runs", "devsets"))
ap.add_argument("--out", default=os.path.join(root, "runs", "devbench"))
ap.add_argument("--exe", help="the actiontrain binary to run (default: build this checkout's release one)")
ap.add_argument("--table", action="store_true", help="print the table of the results so far and exit")
ap.add_argument("--names", default="", help="--table: the variants to show, in order (default: all)")
ap.add_argument("--metric", default="accuracy", choices=["accuracy", "ece", "logLoss", "cpu"],
                help="--table: the recorded number to show (sequence level: accuracy, ECE with 15 bins, log loss; or the fit's CPU seconds)")
ap.add_argument("flags", nargs=argparse.REMAINDER, help="extra fit flags, after --")
args = ap.parse_args()
flags = [f for f in args.flags if f != "--"]
results = os.path.join(args.out, "results.jsonl")
os.makedirs(args.out, exist_ok=True)


def load():
    if not os.path.exists(results):
        return []
    with open(results) as f:
        return [json.loads(l) for l in f if l.strip()]


def table():
    rows = load()
    names = [n for n in args.names.split(",") if n] or list(dict.fromkeys(r["name"] for r in rows))
    sets = [s for s in args.sets.split(",") if s]
    sets += [s for s in dict.fromkeys(r["set"] for r in rows) if s not in sets]
    print("| set | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for s in sets:
        cells = []
        for n in names:
            acc = [r[args.metric] for r in rows if r["set"] == s and r["name"] == n and r.get(args.metric) is not None]
            if not acc:
                cells.append("")
            elif len(acc) == 1:
                cells.append(f"{acc[0]:.3f} (1)")
            else:
                cells.append(f"{statistics.mean(acc):.3f} ± {statistics.stdev(acc):.3f}" + (f" ({len(acc)})" if len(acc) != 3 else ""))
        if any(cells):
            print(f"| {s} | " + " | ".join(cells) + " |")


if args.table:
    table()
    sys.exit(0)
if not args.name:
    sys.exit("devbench: --name is required (or --table)")
exe = args.exe
if not exe:
    subprocess.run(["swift", "build", "-c", "release", "--product", "actiontrain"], cwd=root, check=True, capture_output=True)
    exe = os.path.join(subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=root, check=True,
                                      capture_output=True, text=True).stdout.strip(), "actiontrain")
done = {(r["name"], r["set"], r["seed"], tuple(r["flags"])) for r in load()}
for s in [s for s in args.sets.split(",") if s]:
    data = os.path.join(args.data, s + ".jsonl")
    people = ["--people", "bodies=2"] if "pairs" in s else []
    for seed in [int(x) for x in args.seeds.split(",") if x]:
        if (args.name, s, seed, tuple(flags)) in done:
            continue
        run = os.path.join(args.out, args.name, f"{s}-s{seed}")
        start, cpu0 = time.time(), os.times()
        fit = subprocess.run([exe, "fit", data, "--seed", str(seed), "--out", run, "--force"] + people + flags,
                             capture_output=True, text=True)
        seconds, cpu1 = time.time() - start, os.times()
        cpu = cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system
        if fit.returncode != 0:
            print(f"{s} seed {seed}: fit failed\n{fit.stderr[-2000:]}", file=sys.stderr)
            continue
        report = os.path.join(run, "test.json")
        ev = subprocess.run([exe, "eval", os.path.join(run, "model.atm"), data, "--split", "test", "--json", report,
                             "--bootstrap", "0", "--force"] + people, capture_output=True, text=True)
        if ev.returncode != 0:
            print(f"{s} seed {seed}: eval failed\n{ev.stderr[-2000:]}", file=sys.stderr)
            continue
        with open(report) as f:
            rep = json.load(f)
        level = rep[rep.get("headline", "sequence")]
        trained = re.search(r"trained in ([0-9.]+) s", fit.stdout + fit.stderr)
        line = dict(name=args.name, set=s, seed=seed, flags=flags, accuracy=level["accuracy"],
                    logLoss=level.get("logLoss"), ece=level.get("expectedCalibrationError"), seconds=round(seconds, 1),
                    cpu=round(cpu, 1), trained=float(trained.group(1)) if trained else None)
        print(json.dumps(line), flush=True)
        with open(results, "a") as f:
            f.write(json.dumps(line) + "\n")
