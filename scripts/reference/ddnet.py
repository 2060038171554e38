#!/usr/bin/env python3
"""DD-Net (Yang, Sakti, Wu, Nakamura 2019, "Make Skeleton-based Action Recognition Model
Smaller, Faster and Better", arXiv:1907.09658) reimplemented in PyTorch as a reference anchor
for `actiontrain fit`. Not shipped in the Swift package.

    python3 scripts/reference/ddnet.py [--data runs/devsets] [--sets natops,utk,...] [--seeds 0,1,2]
    python3 scripts/reference/ddnet.py path/to/set.jsonl ...
    python3 scripts/reference/ddnet.py --check-params     # parameter counts against the reference code

Reads native `.jsonl` sets (default: every set scripts/devsets.py writes, from its default
folder runs/devsets), trains on each set's "train" split once per seed, reports sequence
accuracy on its "test" split, and prints a Markdown table (set, parameters, accuracy per seed,
mean +- sample sd over seeds, seconds per run). CPU only; --threads (default 1) torch threads.

Model and training follow the authors' Keras code (github.com/fandulu/DD-Net, JHMDB/
jhmdb_1D_lite.ipynb and JHMDB/utils.py), which was read, not copied:
- input: each sequence resampled to 32 frames (--frames). Reading, absent joints and scale are
  scripts/reference/poses.py: absent joints are filled by linear interpolation in time from the
  same joint's present frames (held at the ends; never seen: its body's mean) -- DD-Net has no
  notion of absent joints; the resampling is linear in time (the reference uses
  scipy.ndimage.zoom, a cubic spline); positions are centred on the sequence mean of the centre
  joints and divided by the torso length or RMS spread (the reference feeds JHMDB's
  'pos_world', which is already normalised to the person, and centres SHREC on the sequence
  mean). Several people (utkpairs2d) are two bodies side by side (J = 40);
- JCD (joint collection distances): per frame the Euclidean distance of every joint pair i < j
  (J(J-1)/2 values), then per sequence (M - mean(M)) / mean(M) over the whole [T, pairs]
  matrix (the reference's norm_scale);
- two-scale motion from the positions P [T, J, D]: slow = P[t+1] - P[t] (T-1 frames) and fast =
  the same on P[::2] (T/2 - 1 frames), each stretched back to T and T/2 frames by
  nearest-neighbour resizing (output frame t takes input frame floor(t * n_in / n_out), as TF's
  resize_nearest_neighbor without corner alignment);
- network (filters f = 16: the 0.15 M "lite" model; --filters 32 is the 0.5 M one): c(k, n) =
  Conv1d(kernel k, n channels, 'same' padding, no bias) + BatchNorm + LeakyReLU(0.2);
  SD = spatial dropout 0.1 (whole channels). Each of JCD, slow and fast: c(1, 2f), SD,
  c(3, f), SD, c(1, f), [max-pool 2 for JCD and slow], SD -> T/2 frames; concatenated (3f
  channels); then [c(3, 2f), c(3, 2f)], max-pool 2, SD; [c(3, 4f), c(3, 4f)], max-pool 2, SD;
  [c(3, 8f), c(3, 8f)], SD; global max-pool over time; Dense(128, no bias) + BN + LeakyReLU,
  dropout 0.5; the same again; Dense(classes) + softmax. Glorot-uniform initial weights, BN
  eps 1e-3 and running-average momentum 0.01 (Keras's defaults);
- training: full batch (every training sequence in one batch, as the reference's
  batch_size=len(Y)), cross-entropy, Adam (lr 1e-3, eps 1e-7) with ReduceLROnPlateau on the
  training loss (factor 0.5, patience 5, cooldown 5, min_lr 1e-5) for 600 epochs, then a fresh
  Adam at lr 1e-3 with min_lr 5e-6 for 500 more (the reference's two fit calls; --epochs 600,500).
  No augmentation (the reference's JHMDB notebook uses none). The model after the last epoch is
  evaluated once on the test split (the reference only watches the test split; nothing is
  chosen on it here).
Seconds per run are wall-clock for feature building, training and testing of one seed,
excluding reading the file.

Published figures (for the record): JHMDB (2D poses, mean over 3 splits) 77.2 % in the paper;
the authors' README after bug fixes: 0.15 M parameters 74.7 %, 0.50 M 78.0 % on JHMDB;
SHREC-14 91.8 % (0.15 M) / 94.6 % (1.82 M).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poses  # noqa: E402

SETS = ["natops", "natops15", "natops2d", "utk", "utkanon", "utk2d", "utkview", "utkpairs2d", "penn", "penn15", "penn30"]


def jcd(P):
    """P [N, T, J, D] -> [N, T, J(J-1)/2]: pair distances, each sequence (M - mean) / mean."""
    i, j = np.triu_indices(P.shape[2], 1)
    M = np.linalg.norm(P[:, :, i] - P[:, :, j], axis=3)
    mean = M.mean(axis=(1, 2), keepdims=True)
    return (M - mean) / np.where(mean > 1e-12, mean, 1.0)


def stretch(x, frames):
    """Nearest-neighbour resize along dim 1 to `frames`: source index floor(t * in / frames)."""
    src = (np.arange(frames) * x.shape[1]) // frames
    return x[:, src]


def motion(P):
    """P [N, T, J, D] tensor -> slow [N, T, J*D], fast [N, T/2, J*D] frame differences."""
    N, T = P.shape[:2]
    slow = stretch(P[:, 1:] - P[:, :-1], T)
    fast = P[:, ::2]
    fast = stretch(fast[:, 1:] - fast[:, :-1], T // 2)
    return slow.reshape(N, T, -1), fast.reshape(N, T // 2, -1)


def c1d(cin, cout, k):
    return [nn.Conv1d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm1d(cout, eps=1e-3, momentum=0.01),
            nn.LeakyReLU(0.2)]


def d1d(cin, cout):
    return [nn.Linear(cin, cout, bias=False), nn.BatchNorm1d(cout, eps=1e-3, momentum=0.01), nn.LeakyReLU(0.2)]


def branch(cin, f, pool):
    sd = lambda: nn.Dropout1d(0.1)  # noqa: E731
    layers = c1d(cin, 2 * f, 1) + [sd()] + c1d(2 * f, f, 3) + [sd()] + c1d(f, f, 1)
    return nn.Sequential(*(layers + ([nn.MaxPool1d(2)] if pool else []) + [sd()]))


class DDNet(nn.Module):
    """Inputs: jcd [N, T, J(J-1)/2], positions [N, T, J, D]; output: class logits [N, classes]."""

    def __init__(self, joints, dims, classes, filters=16):
        super().__init__()
        f = filters
        self.jcd = branch(joints * (joints - 1) // 2, f, pool=True)
        self.slow = branch(joints * dims, f, pool=True)
        self.fast = branch(joints * dims, f, pool=False)
        sd = lambda: nn.Dropout1d(0.1)  # noqa: E731
        self.body = nn.Sequential(
            *c1d(3 * f, 2 * f, 3), *c1d(2 * f, 2 * f, 3), nn.MaxPool1d(2), sd(),
            *c1d(2 * f, 4 * f, 3), *c1d(4 * f, 4 * f, 3), nn.MaxPool1d(2), sd(),
            *c1d(4 * f, 8 * f, 3), *c1d(8 * f, 8 * f, 3), sd())
        self.head = nn.Sequential(*d1d(8 * f, 128), nn.Dropout(0.5), *d1d(128, 128), nn.Dropout(0.5),
                                  nn.Linear(128, classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv1d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, m, p):
        slow, fast = motion(p)
        x = torch.cat([self.jcd(m.transpose(1, 2)), self.slow(slow.transpose(1, 2)), self.fast(fast.transpose(1, 2))], 1)
        return self.head(self.body(x).amax(dim=2))


def counts(model):
    """(trainable parameters, BatchNorm running statistics): Keras's 'trainable' and 'non-trainable'."""
    trainable = sum(p.numel() for p in model.parameters())
    stats = sum(b.numel() for n, b in model.named_buffers() if n.endswith(("running_mean", "running_var")))
    return trainable, stats


def train(M, P, y, classes, seed, filters, epochs, log=None):
    torch.manual_seed(seed)
    model = DDNet(P.shape[2], P.shape[3], classes, filters)
    M, P, y = torch.tensor(M, dtype=torch.float32), torch.tensor(P, dtype=torch.float32), torch.tensor(y)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for phase, (n, min_lr) in enumerate(zip(epochs, [1e-5, 5e-6] + [5e-6] * len(epochs))):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=5, threshold=1e-4,
                                                           threshold_mode="abs", cooldown=5, min_lr=min_lr)
        for epoch in range(n):
            opt.zero_grad()
            loss = loss_fn(model(M, P), y)
            loss.backward()
            opt.step()
            sched.step(loss.item())
            if log and (epoch + 1) % 100 == 0:
                print(f"  phase {phase + 1} epoch {epoch + 1}: loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2g}",
                      file=log, flush=True)
    return model


def evaluate(model, M, P):
    model.eval()
    with torch.no_grad():
        return model(torch.tensor(M, dtype=torch.float32), torch.tensor(P, dtype=torch.float32)).argmax(1).numpy()


def check_params():
    """The reference notebooks' Keras summaries: JHMDB (15 joints, 2D, 14 classes) 148,654
    parameters with filters 16 (146,862 trainable + 1,792 BatchNorm statistics) and 488,526
    with filters 32 (485,454 + 3,072); SHREC-14 (22 joints, 3D, 14 classes, filters 16)
    154,990 (153,198 + 1,792)."""
    for (J, D, f), expected in [((15, 2, 16), (146862, 1792)), ((15, 2, 32), (485454, 3072)), ((22, 3, 16), (153198, 1792))]:
        got = counts(DDNet(J, D, 14, f))
        print(f"{J} joints, {D}D, filters {f}: trainable {got[0]:,} + BN statistics {got[1]:,} = {sum(got):,} "
              f"(reference {expected[0]:,} + {expected[1]:,} = {sum(expected):,}) {'OK' if got == expected else 'DIFFERENT'}")
        assert got == expected


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("files", nargs="*", help=".jsonl sets (default: --sets from --data)")
    ap.add_argument("--data", default=os.path.join(root, "runs", "devsets"), help="folder of the development sets")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated set names in --data")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--frames", type=int, default=32)
    ap.add_argument("--filters", type=int, default=16)
    ap.add_argument("--epochs", default="600,500", help="epochs per training phase (a fresh Adam each)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="also append one JSON line per run to this file")
    ap.add_argument("--verbose", action="store_true", help="training loss every 100 epochs on stderr")
    ap.add_argument("--check-params", action="store_true", help="compare parameter counts with the reference and exit")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.check_params:
        check_params()
        return
    epochs = [int(e) for e in args.epochs.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    files = args.files or [os.path.join(args.data, s + ".jsonl") for s in args.sets.split(",") if s]
    rows = []
    for f in files:
        name = os.path.basename(f).rsplit(".", 1)[0]
        ds = poses.load(f)
        accs, secs = [], []
        for seed in seeds:
            start = time.time()
            P = poses.prepare(ds, args.frames)
            M = jcd(P)
            tr, te = ds.split == "train", ds.split == "test"
            model = train(M[tr], P[tr], ds.y[tr], len(ds.classes), seed, args.filters, epochs,
                          sys.stderr if args.verbose else None)
            acc = float(np.mean(evaluate(model, M[te], P[te]) == ds.y[te]))
            secs.append(time.time() - start)
            accs.append(acc)
            r = dict(set=name, seed=seed, accuracy=round(acc, 4), seconds=round(secs[-1], 1), parameters=counts(model)[0])
            print(json.dumps(r), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps(dict(r, method="ddnet", filters=args.filters, epochs=epochs, frames=args.frames)) + "\n")
        sd = float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0
        rows.append(dict(set=name, parameters=f"{counts(model)[0]:,}", seeds=" ".join(f"{a:.3f}" for a in accs),
                         accuracy=f"{np.mean(accs):.3f} ± {sd:.3f}", seconds=f"{np.mean(secs):.0f}"))
    print(poses.markdown(rows, ["set", "parameters", "seeds", "accuracy", "seconds"]))


if __name__ == "__main__":
    main()
