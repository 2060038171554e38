#!/usr/bin/env python3
"""The classic reference pipeline of issue 30: relative positions of every joint pair, a Fourier
temporal pyramid and a linear SVM. A baseline to compare `actiontrain fit` with; not shipped in
the Swift package.

    pip install scikit-learn        # numpy, scipy come with it
    python3 scripts/reference/ftp_baseline.py [--data runs/devsets] [--sets natops,utk,...]
    python3 scripts/reference/ftp_baseline.py path/to/set.jsonl ...

Reads native `.jsonl` sets (default: every set scripts/devsets.py writes, from its default
folder runs/devsets), trains on each set's "train" split, reports sequence accuracy on its
"test" split and prints a Markdown table (set, sizes, features, chosen C, CV accuracy, test
accuracy, seconds). Deterministic: one run per set.

What it does, per sequence (reading and steps 1-4 are scripts/reference/poses.py):
1. absent joints (omitted from a pose, or confidence <= 0) are filled by linear interpolation
   in time from the frames where the same joint is present (held at the ends; a joint never
   seen takes its body's mean): an approximation for this baseline only;
2. linear interpolation in time to T = 32 evenly spaced frames (--frames);
3. centred (sequence mean of the skeleton's centre joints, else of all joints) and scaled (torso
   length when the skeleton declares one, else RMS spread). The relative positions below do
   not depend on the translation; the scale makes them body-size free;
4. per frame, the relative position of every joint pair i < j: p_i - p_j, a D-vector (D = 2 or
   3), so J(J-1)/2 * D features per frame. Several people (utkpairs2d) are two bodies side by
   side, so the pairs include those between the two bodies;
5. Fourier temporal pyramid: the sequence of each feature is cut into 1, 2 and 4 equal
   segments (7 segments); per segment, the magnitudes |FFT| of the K = 4 lowest frequencies
   (DC included; --coefficients) of the real FFT over the segment's frames. 7 * K features per
   relative-position coordinate;
6. standardised (each feature to zero mean and unit variance, fitted on the training split)
   and classified by a linear SVM: L2-regularised hinge loss, w.x + b per pair of classes,
   one-vs-one voting (scikit-learn SVC on the precomputed linear kernel of the standardised
   features, i.e. solved in the dual: there are far more features than sequences).
C is chosen from {1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10} by cross-validation on the training split
only (GroupKFold over the "group" field, at most 5 folds, when every training sequence has a
group and there are >= 2; else StratifiedKFold, 5 folds or the smallest class count if fewer,
shuffled with seed 0); ties go to the smaller C. The test split is used once, for the final accuracy.

Time is wall-clock seconds for steps 1-6 (features, C selection, the final fit and the test
predictions), excluding reading the file, on whatever machine runs it.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poses  # noqa: E402

SETS = ["natops", "natops15", "natops2d", "utk", "utkanon", "utk2d", "utkview", "utkpairs2d", "penn", "penn15", "penn30"]
GRID = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0]


def relative_positions(P):
    """P [N, T, J, D] -> [N, T, J(J-1)/2 * D]: p_i - p_j for i < j, pair-major."""
    i, j = np.triu_indices(P.shape[2], 1)
    rel = P[:, :, i] - P[:, :, j]
    return rel.reshape(P.shape[0], P.shape[1], -1)


def pyramid(F, K, levels=(1, 2, 4)):
    """F [N, T, C] -> [N, sum(levels) * K * C]: |rFFT| of the K lowest frequencies per segment."""
    out = []
    for level in levels:
        for seg in np.array_split(np.arange(F.shape[1]), level):
            mag = np.abs(np.fft.rfft(F[:, seg], axis=1))[:, :K]
            if mag.shape[1] < K:
                mag = np.concatenate([mag, np.zeros((mag.shape[0], K - mag.shape[1], mag.shape[2]))], axis=1)
            out.append(mag.reshape(F.shape[0], -1))
    return np.concatenate(out, axis=1)


def folds(y, groups):
    from sklearn.model_selection import GroupKFold, StratifiedKFold
    if all(g is not None for g in groups) and len(set(groups)) >= 2:
        k = min(5, len(set(groups)))
        return list(GroupKFold(n_splits=k).split(np.zeros(len(y)), y, [str(g) for g in groups])), f"GroupKFold({k})"
    k = max(2, min(5, np.bincount(y).min()))
    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=0).split(np.zeros(len(y)), y)), f"StratifiedKFold({k})"


class LogReg:
    """Standardisation then a multinomial logistic regression with an L2 penalty on the weights
    (scikit-learn LogisticRegression, lbfgs): min 1/2 ||W||^2 + C sum_i CE_i, the convex
    problem the toolkit's pyramid member solves (`--classifier logreg`)."""

    def __init__(self, C):
        self.C = C

    def fit(self, X, y):
        from sklearn.linear_model import LogisticRegression
        self.mean, self.std = X.mean(axis=0), X.std(axis=0)
        self.std[self.std < 1e-12] = 1.0
        self.lr = LogisticRegression(C=self.C, max_iter=2000, tol=1e-6).fit((X - self.mean) / self.std, y)
        return self

    def predict(self, X):
        return self.lr.predict((X - self.mean) / self.std)


class LinearSVM:
    """Standardisation then a linear SVM, solved in the dual with the linear kernel X X^T (there
    are far more features than sequences, so the dual is much cheaper than the primal): the
    decision function is w.x + b with w = sum_i alpha_i y_i x_i, hinge loss, one-vs-one over
    the classes (scikit-learn SVC, kernel='precomputed')."""

    def __init__(self, C):
        self.C = C

    def fit(self, X, y):
        from sklearn.svm import SVC
        self.mean, self.std = X.mean(axis=0), X.std(axis=0)
        self.std[self.std < 1e-12] = 1.0
        self.Xs = (X - self.mean) / self.std
        self.svc = SVC(C=self.C, kernel="precomputed").fit(self.Xs @ self.Xs.T, y)
        return self

    def predict(self, X):
        return self.svc.predict(((X - self.mean) / self.std) @ self.Xs.T)


def run(path, frames, K, classifier="svm"):
    Model = LogReg if classifier == "logreg" else LinearSVM
    ds = poses.load(path)
    start = time.time()
    P = poses.prepare(ds, frames)
    X = pyramid(relative_positions(P), K)
    train, test = ds.split == "train", ds.split == "test"
    Xtr, ytr, gtr = X[train], ds.y[train], [g for g, s in zip(ds.group, ds.split) if s == "train"]
    splits, how = folds(ytr, gtr)
    scores = []
    for C in GRID:
        acc = [np.mean(Model(C).fit(Xtr[a], ytr[a]).predict(Xtr[b]) == ytr[b]) for a, b in splits]
        scores.append(np.mean(acc))
    best = int(np.argmax(scores))
    clf = Model(GRID[best]).fit(Xtr, ytr)
    acc = float(np.mean(clf.predict(X[test]) == ds.y[test]))
    return dict(train=int(train.sum()), test=int(test.sum()), features=X.shape[1], cv=how, C=GRID[best],
                cv_accuracy=round(float(scores[best]), 3), accuracy=round(acc, 3), seconds=round(time.time() - start, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("files", nargs="*", help=".jsonl sets (default: --sets from --data)")
    ap.add_argument("--data", default=os.path.join(root, "runs", "devsets"), help="folder of the development sets")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated set names in --data")
    ap.add_argument("--frames", type=int, default=32, help="frames after resampling (T)")
    ap.add_argument("--coefficients", type=int, default=4, help="lowest FFT magnitudes kept per segment (K)")
    ap.add_argument("--classifier", choices=["svm", "logreg"], default="svm",
                    help="svm: one-vs-one linear SVM (the classic pipeline); logreg: multinomial logistic regression")
    ap.add_argument("--json", help="also append one JSON line per set to this file")
    args = ap.parse_args()
    files = args.files or [os.path.join(args.data, s + ".jsonl") for s in args.sets.split(",") if s]
    rows = []
    for f in files:
        name = os.path.basename(f).rsplit(".", 1)[0]
        r = dict(set=name, **run(f, args.frames, args.coefficients, args.classifier))
        print(json.dumps(r), file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "a") as out:
                out.write(json.dumps(dict(r, method="ftp-" + args.classifier, frames=args.frames, coefficients=args.coefficients)) + "\n")
        rows.append(r)
    print(poses.markdown(rows, ["set", "train", "test", "features", "cv", "C", "cv_accuracy", "accuracy", "seconds"]))


if __name__ == "__main__":
    main()
