#!/usr/bin/env python3
"""Golden values for Tests/ActionTrainTests/SoftmaxRegressionTests.swift, from scikit-learn.

    python3 scripts/softmax-regression-golden.py

A tiny fixed problem (12 rows, 5 features, 3 classes; the same formulas as the test) solved by
scikit-learn's LogisticRegression (multinomial, lbfgs, unpenalised intercept) at C = 1 / (n λ),
which is the toolkit's objective Σ_i (1/n) CE_i + (λ/2)‖W‖² scaled by n·C. Prints W and the
intercept (centred: the softmax does not see a constant added to every class's bias) as Swift
literals. Re-run only to regenerate them.
"""
import numpy as np
from sklearn.linear_model import LogisticRegression

n, d, K, lam = 12, 5, 3, 0.01
X = np.array([[np.sin(0.7 * i + 1.3 * j) + 0.1 * j for j in range(d)] for i in range(n)], dtype=np.float32).astype(np.float64)
y = np.array([(i * 7 + 3) % K for i in range(n)])
lr = LogisticRegression(C=1 / (n * lam), tol=1e-12, max_iter=100000).fit(X, y)
W, b = lr.coef_, lr.intercept_ - lr.intercept_.mean()
f = lambda v: ", ".join(f"{x:.9g}" for x in v)
print(f"static let weight: [Double] = [{f(W.ravel())}]")
print(f"static let bias: [Double] = [{f(b)}]")
