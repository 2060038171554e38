#!/usr/bin/env python3
"""Golden values for the conv1d, layerNorm, GELU, graphConv, temporalPyramidPool, fourierPyramid and standardize forwards of actiontrain.

Writes Tests/ActionRuntimeTests/GoldenValues.swift (committed; re-run this script only when a case changes):

    python3 Tests/golden/make_golden.py

Inputs and parameters are float32 drawn from a seeded NumPy generator and written out in
full (9 significant digits round-trip float32), so the Swift test reads exactly the values
used here. Expected outputs are computed in float64 from those float32 values with NumPy
only, by the defining formulas of Sources/ActionRuntime/LayerSpec.swift:

- conv1d: out[b, t, o] = bias[o] + sum_k sum_i W[o, k, i] x[b, t*stride + k*dilation - padding, i]
  (zeros outside), activations channels-last [batch, time, channels], W [outputs, kernel, inputs];
- layerNorm over channels: (x - mean) / sqrt(biased variance + eps) * gamma + beta;
- GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
- graphConv on joint-major activations [batch, time, joints, inputs]: out[b, t, j, o] = bias[o] +
  sum_p sum_i A[p, j, i] sum_k sum_c x[b, t+k-(K-1)/2, i, c] W[p, o, k, c] (zeros outside);
- temporalPyramidPool: for each level L and segment s < L, the mean of x[b, t, c] over frames
  floor(s*T/L) <= t < floor((s+1)*T/L), segments side by side on the channels;
- fourierPyramid: for the same segments (n frames from a) and each frequency f < K,
  |sum_t x[b, a + t, c] exp(-2 pi i f t / n)| (0 for f > n // 2), at (segment * K + f) * C + c;
- standardize: (x - mean) * scale per channel.

If PyTorch is importable, every case is also checked against torch.nn.functional (conv1d on
the transposed layout, layer_norm, gelu(approximate="tanh"), and for graphConv conv2d over
[B, I, T, J] with a (K, 1) kernel making P*O channels, then einsum with A) in float64 and the script fails
on a disagreement above 1e-9. temporalPyramidPool has no PyTorch counterpart with these bounds
(adaptive_avg_pool1d ends segment s at ceil((s+1)*T/L)), so it is NumPy only. fourierPyramid's direct
sums are checked against numpy.fft.rfft always, and against torch.fft.rfft when PyTorch is there.
That is how the committed file was produced (its first line names the PyTorch version).
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "ActionRuntimeTests", "GoldenValues.swift")
rng = np.random.default_rng(20261130)


def f32(shape, scale=1.0):
    return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)


def conv1d(x, w, b, stride, dilation, padding):
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    B, T, I = x.shape
    O, K, _ = w.shape
    To = (T + 2 * padding - dilation * (K - 1) - 1) // stride + 1
    y = np.zeros((B, To, O))
    for bi in range(B):
        for t in range(To):
            acc = b.copy()
            for k in range(K):
                s = t * stride + k * dilation - padding
                if 0 <= s < T:
                    acc += w[:, k, :] @ x[bi, s, :]
            y[bi, t] = acc
    return y


def layer_norm(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + float(eps)) * gamma.astype(np.float64) + beta.astype(np.float64)


def gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


conv_cases = []
for B, T, I, O, K, S, D, P in [
    (2, 6, 3, 4, 5, 1, 1, 2),  # the reference geometry (k5, pad 2), tiny
    (2, 7, 3, 2, 3, 2, 2, 1),  # stride 2, dilation 2, padding 1
    (1, 2, 2, 3, 3, 1, 2, 2),  # sequence shorter than the dilated kernel, padded
]:
    bound = 1 / math.sqrt(I * K)
    x, w, b = f32((B, T, I)), f32((O, K, I), bound), f32((O,), bound)
    conv_cases.append(dict(batch=B, time=T, inputs=I, outputs=O, kernel=K, stride=S, dilation=D, padding=P,
                           x=x, weight=w, bias=b, y=conv1d(x, w, b, S, D, P)))

norm_cases = []
for B, T, C, eps in [(2, 3, 5, 1e-5), (1, 2, 7, 0.1)]:
    x = f32((B, T, C), 2.0) + np.float32(0.5)
    x[0, 0, :] = np.float32(1.25)  # a constant row: variance 0, the output is beta
    gamma, beta = f32((C,)) + np.float32(1), f32((C,))
    norm_cases.append(dict(batch=B, time=T, channels=C, epsilon=np.float32(eps), x=x, gamma=gamma, beta=beta,
                           y=layer_norm(x, gamma, beta, np.float32(eps))))

gelu_x = np.linspace(-5, 5, 21).astype(np.float32)
gelu_y = gelu(gelu_x)


def graph_conv(x, w, b, a):
    """y[b, t, j, o] = bias[o] + sum_p sum_i A[p, j, i] sum_k sum_c x[b, t+k-h, i, c] W[p, o, k, c]."""
    x, w, b, a = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), a.astype(np.float64)
    B, T, J, I = x.shape
    P, O, K, _ = w.shape
    h = (K - 1) // 2
    y = np.zeros((B, T, J, O)) + b
    for t in range(T):
        for k in range(K):
            s = t + k - h
            if 0 <= s < T:
                z = np.einsum("bic,poc->bpio", x[:, s], w[:, :, k, :])  # [B, P, J(i), O]
                y[:, t] += np.einsum("pji,bpio->bjo", a, z)
    return y


graph_cases = []
for B, T, J, I, O, K, P in [
    (2, 5, 4, 2, 3, 3, 3),  # three partitions, kernel 3
    (1, 3, 3, 3, 2, 5, 1),  # kernel 5 longer than the sequence
    (2, 2, 5, 1, 4, 1, 2),  # kernel 1: a spatial graph convolution
]:
    bound = 1 / math.sqrt(K * I)
    x, w, b = f32((B, T, J, I)), f32((P, O, K, I), bound), f32((O,), bound)
    a = f32((P, J, J))
    a[rng.uniform(size=a.shape) < 0.4] = 0  # sparse and not symmetric
    graph_cases.append(dict(batch=B, time=T, joints=J, inputs=I, outputs=O, kernel=K, partitions=P,
                            x=x, weight=w, bias=b, adjacency=a, y=graph_conv(x, w, b, a)))

def pyramid(x, levels):
    """[B, T, C] -> [B, C * sum(levels)]: per level L and segment s the mean over its frames."""
    x = x.astype(np.float64)
    T = x.shape[1]
    return np.concatenate([x[:, s * T // L:(s + 1) * T // L].mean(axis=1) for L in levels for s in range(L)], axis=1)


pyramid_cases = []
for B, T, C, levels in [
    (2, 7, 3, [1, 2, 4]),  # the usual levels; uneven segments 3 + 4, 1 + 2 + 2 + 2
    (1, 5, 2, [2, 3, 5]),  # a level of one frame per segment
    (2, 4, 3, [1]),  # one level: the global mean
]:
    x = f32((B, T, C), 2.0)
    pyramid_cases.append(dict(batch=B, time=T, channels=C, levels=levels, x=x, y=pyramid(x, levels)))

def fourier(x, levels, K):
    """[B, T, C] -> [B, C * sum(levels) * K]: per segment the magnitudes of its K lowest frequencies."""
    x = x.astype(np.float64)
    B, T, C = x.shape
    out = []
    for L in levels:
        for s in range(L):
            a, b = s * T // L, (s + 1) * T // L
            n = b - a
            seg = np.zeros((B, K, C))
            for f in range(min(K, n // 2 + 1)):
                angle = 2 * np.pi * f * np.arange(n) / n
                re = np.einsum("t,btc->bc", np.cos(angle), x[:, a:b])
                im = np.einsum("t,btc->bc", np.sin(angle), x[:, a:b])
                seg[:, f] = np.sqrt(re * re + im * im)
            out.append(seg.reshape(B, K * C))
    return np.concatenate(out, axis=1)


def fourier_rfft(x, levels, K, rfft):
    B, T, C = x.shape
    out = []
    for L in levels:
        for s in range(L):
            m = np.abs(rfft(x[:, s * T // L:(s + 1) * T // L]))[:, :K]
            out.append(np.concatenate([m, np.zeros((B, K - m.shape[1], C))], axis=1).reshape(B, K * C))
    return np.concatenate(out, axis=1)


fourier_cases = []
for B, T, C, levels, K in [
    (2, 9, 3, [1, 2, 4], 4),  # segments 9, 4, 5, 2, 2, 2, 3: the short ones lack frequencies 2 and 3
    (1, 8, 2, [1, 2], 5),  # even segments: the Nyquist frequency is real; K beyond every segment's
    (2, 6, 1, [3], 1),  # the DC term alone: |sum|
]:
    x = f32((B, T, C), 2.0)
    y = fourier(x, levels, K)
    assert np.abs(y - fourier_rfft(x.astype(np.float64), levels, K, lambda v: np.fft.rfft(v, axis=1))).max() < 1e-12, "numpy rfft"
    fourier_cases.append(dict(batch=B, time=T, channels=C, levels=levels, coefficients=K, x=x, y=y))

standardize_x = f32((2, 3, 4), 3.0)
standardize_mean, standardize_scale = f32((4,), 1.0), f32((4,), 2.0)
standardize_y = (standardize_x.astype(np.float64) - standardize_mean) * standardize_scale

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
if torch is not None:
    for c in conv_cases:
        xt = torch.from_numpy(c["x"].astype(np.float64)).permute(0, 2, 1)  # [B, I, T]
        wt = torch.from_numpy(c["weight"].astype(np.float64)).permute(0, 2, 1)  # [O, I, K]
        yt = F.conv1d(xt, wt, torch.from_numpy(c["bias"].astype(np.float64)), stride=c["stride"],
                      padding=c["padding"], dilation=c["dilation"]).permute(0, 2, 1).numpy()
        assert yt.shape == c["y"].shape and np.abs(yt - c["y"]).max() < 1e-9, "conv1d disagrees with torch"
    for c in norm_cases:
        yt = F.layer_norm(torch.from_numpy(c["x"].astype(np.float64)), (c["channels"],),
                          torch.from_numpy(c["gamma"].astype(np.float64)), torch.from_numpy(c["beta"].astype(np.float64)),
                          eps=float(c["epsilon"])).numpy()
        assert np.abs(yt - c["y"]).max() < 1e-9, "layer_norm disagrees with torch"
    yt = F.gelu(torch.from_numpy(gelu_x.astype(np.float64)), approximate="tanh").numpy()
    assert np.abs(yt - gelu_y).max() < 1e-9, "gelu disagrees with torch"
    for c in graph_cases:
        # Conv2d over [B, I, T, J] with a (K, 1) kernel making P*O channels, then the sum over A.
        P, O, K = c["partitions"], c["outputs"], c["kernel"]
        xt = torch.from_numpy(c["x"].astype(np.float64)).permute(0, 3, 1, 2)  # [B, I, T, J]
        wt = torch.from_numpy(c["weight"].astype(np.float64)).reshape(P * O, K, -1).permute(0, 2, 1).unsqueeze(-1)
        z = F.conv2d(xt, wt, padding=((K - 1) // 2, 0))  # [B, P*O, T, J]
        z = z.reshape(z.shape[0], P, O, z.shape[2], z.shape[3])
        yt = torch.einsum("bpoti,pji->btjo", z, torch.from_numpy(c["adjacency"].astype(np.float64)))
        yt = (yt + torch.from_numpy(c["bias"].astype(np.float64))).numpy()
        assert yt.shape == c["y"].shape and np.abs(yt - c["y"]).max() < 1e-9, "graphConv disagrees with torch"
    for c in fourier_cases:
        yt = fourier_rfft(c["x"].astype(np.float64), c["levels"], c["coefficients"],
                          lambda v: torch.fft.rfft(torch.from_numpy(v), dim=1).numpy())
        assert np.abs(yt - c["y"]).max() < 1e-12, "fourierPyramid disagrees with torch.fft.rfft"
    checked = f"cross-checked against PyTorch {torch.__version__}"
else:
    checked = "PyTorch not available: NumPy only"
print(checked, file=sys.stderr)


def floats(a):
    vals = np.asarray(a).ravel()
    parts = ["%.9g" % float(v) for v in vals]
    lines, line = [], "        "
    for p in parts:
        if len(line) + len(p) + 2 > 110:
            lines.append(line.rstrip())
            line = "        "
        line += p + ", "
    lines.append(line.rstrip())
    return "[\n" + "\n".join(lines) + "\n    ]"


out = [
    "// Generated by Tests/golden/make_golden.py (NumPy, float64 reference; %s). Do not edit." % checked,
    "",
    "struct GoldenConv {",
    "    var batch: Int, time: Int, inputs: Int, outputs: Int, kernel: Int, stride: Int, dilation: Int, padding: Int",
    "    var x: [Float], weight: [Float], bias: [Float], y: [Float]",
    "}",
    "",
    "struct GoldenLayerNorm {",
    "    var batch: Int, time: Int, channels: Int, epsilon: Float",
    "    var x: [Float], gamma: [Float], beta: [Float], y: [Float]",
    "}",
    "",
    "struct GoldenGraphConv {",
    "    var batch: Int, time: Int, joints: Int, inputs: Int, outputs: Int, kernel: Int, partitions: Int",
    "    var x: [Float], weight: [Float], bias: [Float], adjacency: [Float], y: [Float]",
    "}",
    "",
    "struct GoldenPyramid {",
    "    var batch: Int, time: Int, channels: Int, levels: [Int]",
    "    var x: [Float], y: [Float]",
    "}",
    "",
    "struct GoldenFourier {",
    "    var batch: Int, time: Int, channels: Int, levels: [Int], coefficients: Int",
    "    var x: [Float], y: [Float]",
    "}",
    "",
    "enum Golden {",
]
out.append("    static let conv: [GoldenConv] = [")
for c in conv_cases:
    out.append("        GoldenConv(")
    out.append("            batch: %d, time: %d, inputs: %d, outputs: %d, kernel: %d, stride: %d, dilation: %d, padding: %d," % (
        c["batch"], c["time"], c["inputs"], c["outputs"], c["kernel"], c["stride"], c["dilation"], c["padding"]))
    for key in ["x", "weight", "bias", "y"]:
        out.append("            %s: %s%s" % (key, floats(c[key]).replace("\n", "\n        "), "," if key != "y" else ""))
    out.append("        ),")
out.append("    ]")
out.append("    static let layerNorm: [GoldenLayerNorm] = [")
for c in norm_cases:
    out.append("        GoldenLayerNorm(")
    out.append("            batch: %d, time: %d, channels: %d, epsilon: %.9g," % (c["batch"], c["time"], c["channels"], float(c["epsilon"])))
    for key in ["x", "gamma", "beta", "y"]:
        out.append("            %s: %s%s" % (key, floats(c[key]).replace("\n", "\n        "), "," if key != "y" else ""))
    out.append("        ),")
out.append("    ]")
out.append("    static let graphConv: [GoldenGraphConv] = [")
for c in graph_cases:
    out.append("        GoldenGraphConv(")
    out.append("            batch: %d, time: %d, joints: %d, inputs: %d, outputs: %d, kernel: %d, partitions: %d," % (
        c["batch"], c["time"], c["joints"], c["inputs"], c["outputs"], c["kernel"], c["partitions"]))
    for key in ["x", "weight", "bias", "adjacency", "y"]:
        out.append("            %s: %s%s" % (key, floats(c[key]).replace("\n", "\n        "), "," if key != "y" else ""))
    out.append("        ),")
out.append("    ]")
out.append("    static let pyramid: [GoldenPyramid] = [")
for c in pyramid_cases:
    out.append("        GoldenPyramid(")
    out.append("            batch: %d, time: %d, channels: %d, levels: [%s]," % (
        c["batch"], c["time"], c["channels"], ", ".join(str(n) for n in c["levels"])))
    for key in ["x", "y"]:
        out.append("            %s: %s%s" % (key, floats(c[key]).replace("\n", "\n        "), "," if key != "y" else ""))
    out.append("        ),")
out.append("    ]")
out.append("    static let fourier: [GoldenFourier] = [")
for c in fourier_cases:
    out.append("        GoldenFourier(")
    out.append("            batch: %d, time: %d, channels: %d, levels: [%s], coefficients: %d," % (
        c["batch"], c["time"], c["channels"], ", ".join(str(n) for n in c["levels"]), c["coefficients"]))
    for key in ["x", "y"]:
        out.append("            %s: %s%s" % (key, floats(c[key]).replace("\n", "\n        "), "," if key != "y" else ""))
    out.append("        ),")
out.append("    ]")
out.append("    static let standardizeX: [Float] = %s" % floats(standardize_x))
out.append("    static let standardizeMean: [Float] = %s" % floats(standardize_mean))
out.append("    static let standardizeScale: [Float] = %s" % floats(standardize_scale))
out.append("    static let standardizeY: [Float] = %s" % floats(standardize_y))
out.append("    static let geluX: [Float] = %s" % floats(gelu_x))
out.append("    static let geluY: [Float] = %s" % floats(gelu_y))
out.append("}")
with open(OUT, "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote", os.path.normpath(OUT), file=sys.stderr)
