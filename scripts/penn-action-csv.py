#!/usr/bin/env python3
"""Derives the two CSV files `actiontrain import penn-action` reads from the official Penn Action
release (http://dreamdragon.github.io/PennAction/: Penn_Action.tar.gz, whose `labels/` folder
holds one MATLAB file per clip; the video frames are not needed).

    pip install scipy
    scripts/penn-action-csv.py Penn_Action/labels Penn_Action/derived
    actiontrain import penn-action Penn_Action --out penn.jsonl

Writes `sequences.csv` (`seq_id,action,view,split,height,width,nframes`: one row per clip,
`split` from the file's `train` flag, 1 train and -1 test) and `frames.csv`
(`seq_id,frame,x1,y1,v1,...,x13,y13,v13`: one row per frame, `frame` from 1, coordinates in
image pixels rounded to 3 decimals, `v` the visibility 0 or 1), both with a header row, clips
in file-name order. From the 2,326 files of the release it gives byte for byte the files whose
sha256 ../shared/datasets/penn_action/SOURCE.md records.
"""
import os
import sys


def number(v):
    """A coordinate to 3 decimals, without trailing zeros: 136.5, 71.25, 255."""
    text = ("%.3f" % v).rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    labels, out = argv[1], argv[2]
    try:
        from scipy.io import loadmat
    except ImportError:
        print("penn-action-csv.py: needs scipy to read the MATLAB files: pip install scipy", file=sys.stderr)
        return 1
    names = sorted(n for n in os.listdir(labels) if n.endswith(".mat"))
    if not names:
        print(f"penn-action-csv.py: {labels} holds no .mat file; pass the release's labels/ folder", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "sequences.csv"), "w", newline="\n") as seqs, open(os.path.join(out, "frames.csv"), "w", newline="\n") as frames:
        seqs.write("seq_id,action,view,split,height,width,nframes\n")
        frames.write("seq_id,frame," + ",".join(f"x{j},y{j},v{j}" for j in range(1, 14)) + "\n")
        for name in names:
            path = os.path.join(labels, name)
            m = loadmat(path)
            seq = name[:-4]
            height, width, n = (int(v) for v in m["dimensions"].reshape(-1))
            train = int(m["train"].reshape(-1)[0])
            if train not in (1, -1):
                print(f"penn-action-csv.py: {path}: train is {train}, expected 1 or -1", file=sys.stderr)
                return 1
            action, view = str(m["action"].reshape(-1)[0]), str(m["pose"].reshape(-1)[0])
            x, y, v = m["x"], m["y"], m["visibility"]
            if x.shape != (n, 13) or y.shape != (n, 13) or v.shape != (n, 13):
                print(f"penn-action-csv.py: {path}: x, y, visibility are {x.shape}, {y.shape}, {v.shape}, expected ({n}, 13)", file=sys.stderr)
                return 1
            seqs.write(f"{seq},{action},{view},{'train' if train == 1 else 'test'},{height},{width},{n}\n")
            for f in range(n):
                row = ",".join(f"{number(x[f, j])},{number(y[f, j])},{int(v[f, j])}" for j in range(13))
                frames.write(f"{seq},{f + 1},{row}\n")
    print(f"penn-action-csv.py: wrote {out}/sequences.csv and {out}/frames.csv ({len(names)} clips)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
