#!/usr/bin/env python3
"""Compare training configs by cross-validation on the TRAINING split only (never the test split).

    scripts/protocols/sweep.py DATA BASE.json [--folds 5] [--seeds 1] [--ranks N] [--set key=value ...]...

Each `--set` group is one candidate: BASE.json (with validationFraction 0, as the final protocol
trains) with those keys replaced (values are JSON, or plain strings). This is `actiontrain sweep`
with a "candidates" list (docs/distributed.md): folds by group (subject) over the non-test
sequences, every candidate trained on every fold with every seed and scored at the sequence
level; with --ranks N > 1 the trials are spread over N MPI ranks (`mpirun`, an ACTIONTRAIN_MPI=1
build in .build/mpi). Prints actiontrain's table; the folder (--out) keeps sweep.md, sweep.json
and chosen.json. Builds actiontrain in release unless ACTIONTRAIN_BIN names a binary.
"""
import argparse, json, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("base")
ap.add_argument("--folds", type=int, default=5)
ap.add_argument("--seeds", type=int, default=1)
ap.add_argument("--ranks", type=int, default=1, help="MPI ranks (mpirun -np N; needs Open MPI)")
ap.add_argument("--out", help="folder for the sweep's files (default: a temporary one)")
ap.add_argument("--set", action="append", nargs="*", default=[], metavar="KEY=VALUE")
args = ap.parse_args()

build = ["swift", "build", "-c", "release", "--product", "actiontrain"]
env = dict(os.environ)
launch = []
if args.ranks > 1:
    build += ["--scratch-path", os.path.join(root, ".build/mpi")]
    env["ACTIONTRAIN_MPI"] = "1"
    subprocess.run([os.path.join(root, "scripts/setup"), "--mpi"], check=True)
    launch = ["mpirun", "--oversubscribe", "-np", str(args.ranks)] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
binary = os.environ.get("ACTIONTRAIN_BIN")  # a built binary (an MPI build for --ranks > 1) instead of building
if not binary:
    subprocess.run(build, cwd=root, env=env, check=True, capture_output=True)
    binary = subprocess.run(build[:-2] + ["--show-bin-path"], cwd=root, env=env, capture_output=True, text=True,
                            check=True).stdout.strip() + "/actiontrain"


def value(v):
    try:
        return json.loads(v)
    except json.JSONDecodeError:
        return v


candidates = [dict((kv.split("=", 1)[0], value(kv.split("=", 1)[1])) for kv in group) for group in args.set] or [{}]
grid = {"config": dict(json.load(open(args.base)), validationFraction=0), "candidates": candidates,
        "folds": args.folds, "seeds": args.seeds}
scratch = tempfile.mkdtemp(prefix="sweep-")
path = os.path.join(scratch, "grid.json")
json.dump(grid, open(path, "w"))
out = args.out or os.path.join(scratch, "sweep")
r = subprocess.run(launch + [binary, "sweep", path, args.data, "--out", out, "--force"], text=True)
sys.exit(r.returncode)
