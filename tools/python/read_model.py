#!/usr/bin/env python3
"""An independent reader of actiontrain model files (.atm), written from docs/format.md alone.

    read_model.py MODEL                               # print a summary of the header
    read_model.py MODEL --features X.f32 --count N    # logits for N raw float32 inputs [N, T, C]
    read_model.py MODEL --windows W.json              # features and logits for pose windows

Output (with --features or --windows) is one JSON object {"features": [[...]], "logits": [[...]]}.
Needs only Python 3 and NumPy.
"""
import argparse, json, math, struct, sys, zlib
import numpy as np

MAGIC = b"\x89ATM\r\n\x1a\n"


class ModelFileError(Exception):
    """A file this reader must reject (docs/format.md section 2)."""


def read_model(path):
    """Checks the preamble, checksums and tensor tiling; returns (header, {name: array})."""
    b = open(path, "rb").read()
    if b[:8] != MAGIC[:len(b[:8])] or not b:
        raise ModelFileError("not an actiontrain model file")
    if len(b) < 64:
        raise ModelFileError("truncated")  # the preamble is 64 bytes
    major, minor, _flags, H, D, hcrc, dcrc, total = struct.unpack_from("<HHIQQIIQ", b, 8)
    if major != 1:
        raise ModelFileError(f"unsupported major version {major}")
    if total != len(b) or 64 + H + D != total or (64 + H) % 64 or D % 64 or H == 0:
        raise ModelFileError("section lengths do not match the file size")
    header_bytes, data = b[64:64 + H], b[64 + H:]
    if zlib.crc32(header_bytes) != hcrc or zlib.crc32(data) != dcrc:
        raise ModelFileError("checksum mismatch")
    h = json.loads(header_bytes.decode("utf-8"))
    if h["format"] != "actiontrain.model":
        raise ModelFileError("wrong format")
    tensors, expected = {}, 0
    for t in h["tensors"]:
        n = int(np.prod(t["shape"]))
        if t["dtype"] != "float32" or t["length"] != 4 * n or t["offset"] != expected:
            raise ModelFileError(f"tensor {t['name']} does not tile the data section")
        tensors[t["name"]] = np.frombuffer(data, "<f4", n, t["offset"]).reshape(t["shape"]).astype(np.float32)
        expected = (t["offset"] + t["length"] + 63) // 64 * 64
    if expected != D:
        raise ModelFileError("tensors do not end at the end of the data section")
    layer_data(h["layers"], tensors, "layers.")
    return h, tensors


def layer_data(layers, tensors, prefix):
    """Since 1.8 a standardize layer holds "channels" and its mean and scale are tensors, and a graphConv's
    adjacency is a tensor (the first of the table): they go back into the layer as lists, as files before
    1.8 hold them in the header."""
    for i, L in enumerate(layers):
        p = f"{prefix}{i}."
        if L["type"] == "standardize" and "channels" in L:
            C = L.pop("channels")
            wanted = [("mean", (C,)), ("scale", (C,))]
        elif L["type"] == "graphConv" and "adjacency" not in L:
            wanted = [("adjacency", (L["partitions"], L["joints"], L["joints"]))]
        else:
            wanted = []
        for key, shape in wanted:
            v = tensors.pop(p + key, None)
            if v is None or v.shape != shape or not np.isfinite(v).all():
                raise ModelFileError(f"{p}{key}: {L['type']} needs a tensor of {shape} finite values")
            L[key] = v.ravel().tolist()
        for key in ("body", "shortcut"):
            if key in L:
                layer_data(L[key], tensors, f"{p}{key}.")
        for m, member in enumerate(L.get("members", [])):
            layer_data(member, tensors, f"{p}members.{m}.")


# ---- layers (section 4): activations are [B, T, C] float32 ----

def conv1d(x, w, b, stride, dilation, padding):
    B, T, I = x.shape
    O, K, _ = w.shape
    xp = np.pad(x, ((0, 0), (padding, padding), (0, 0)))
    Tout = (T + 2 * padding - dilation * (K - 1) - 1) // stride + 1
    y = np.zeros((B, Tout, O), np.float32) + b
    for k in range(K):
        start = k * dilation
        xs = xp[:, start:start + stride * (Tout - 1) + 1:stride, :]  # [B, Tout, I]
        y += xs @ w[:, k, :].T
    return y


def graph_conv(x, L, w, b):
    """Joint-major [B, T, J*I] -> [B, T, J*O]: a (K, 1) convolution per partition, then A."""
    B, T, _ = x.shape
    J, I, K, P = L["joints"], L["inputs"], L["kernel"], L["partitions"]
    h = (K - 1) // 2
    xp = np.pad(x.reshape(B, T, J, I), ((0, 0), (h, h), (0, 0), (0, 0)))
    z = sum(np.einsum("btic,poc->btpio", xp[:, k:k + T], w[:, :, k, :]) for k in range(K))  # [B, T, P, J, O]
    A = np.array(L["adjacency"], np.float32).reshape(P, J, J)
    return (np.einsum("pji,btpio->btjo", A, z) + b).reshape(B, T, -1)


def layer_norm(x, L, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + np.float32(L["epsilon"])) + b


def log_softmax(z):
    m = z.max(-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(-1, keepdims=True))


def log_mean_exp(ls):
    """log((1/M) sum_m exp(l_m)), elementwise over same-shaped arrays."""
    s = np.stack(ls)
    m = s.max(0)
    return m + np.log(np.exp(s - m).mean(0))


def mirror(x, L):
    return x[:, :, L["channels"]] * np.array(L["signs"], np.float32)


def pyramid(x, levels):
    """Means over segments floor(s*T/n) .. floor((s+1)*T/n) of each level n, side by side on channels."""
    T = x.shape[1]
    return np.concatenate([x[:, s * T // n:(s + 1) * T // n].mean(1, keepdims=True) for n in levels for s in range(n)], 2)


def fourier_pyramid(x, levels, K):
    """|rFFT| of the K lowest frequencies of each segment (0 beyond floor(n/2)), segment-major, then frequency, channel."""
    B, T, C = x.shape
    out = []
    for n in levels:
        for s in range(n):
            seg = x[:, s * T // n:(s + 1) * T // n].astype(np.float64)
            mag = np.abs(np.fft.rfft(seg, axis=1))[:, :K]  # [B, <=K, C]
            out.append(np.concatenate([mag, np.zeros((B, K - mag.shape[1], C))], 1).reshape(B, 1, K * C))
    return np.concatenate(out, 2).astype(np.float32)


LAYERS = {  # type -> f(x [B, T, C], layer JSON, tensor by parameter name, run(layers, x, prefix) for nested layers)
    "linear": lambda x, L, t, run: x @ t("weight").T + t("bias"),
    "relu": lambda x, L, t, run: np.maximum(x, 0),
    "gelu": lambda x, L, t, run: 0.5 * x * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + np.float32(0.044715) * x ** 3))),
    "dropout": lambda x, L, t, run: x,
    "layerNorm": lambda x, L, t, run: layer_norm(x, L, t("gamma"), t("beta")),
    "conv1d": lambda x, L, t, run: conv1d(x, t("weight"), t("bias"), L["stride"], L["dilation"], L["padding"]),
    "graphConv": lambda x, L, t, run: graph_conv(x, L, t("weight"), t("bias")),
    "flatten": lambda x, L, t, run: x.reshape(x.shape[0], 1, -1),
    "globalAveragePool": lambda x, L, t, run: x.mean(1, keepdims=True),
    "globalMaxPool": lambda x, L, t, run: x.max(1, keepdims=True),
    "temporalPyramidPool": lambda x, L, t, run: pyramid(x, L["levels"]),
    "fourierPyramid": lambda x, L, t, run: fourier_pyramid(x, L["levels"], L["coefficients"]),
    "standardize": lambda x, L, t, run: (x - np.array(L["mean"], np.float32)) * np.array(L["scale"], np.float32),
    "residual": lambda x, L, t, run: run(L["body"], x, "body.") + run(L["shortcut"], x, "shortcut."),
    "selectChannels": lambda x, L, t, run: x[:, :, L["channels"]],
    "averageProbabilities": lambda x, L, t, run: log_mean_exp(
        [log_softmax(run(m, x, f"members.{k}.")) for k, m in enumerate(L["members"])]),
    "averageLogProbabilities": lambda x, L, t, run: sum(
        np.float32(w) * log_softmax(run(m, x, f"members.{k}.")) for k, (m, w) in enumerate(zip(L["members"], L["weights"]))),
    "flipAverage": lambda x, L, t, run: log_mean_exp(
        [log_softmax(run(L["body"], x, "body.")), log_softmax(run(L["body"], mirror(x, L), "body."))]),
}


def forward(layers, x, tensors, prefix):
    for i, L in enumerate(layers):
        p = f"{prefix}{i}."
        if L["type"] not in LAYERS:
            raise ModelFileError(f"unknown layer type {L['type']}")
        x = LAYERS[L["type"]](x, L, lambda name: tensors[p + name], lambda ls, y, sub: forward(ls, y, tensors, p + sub))
        x = x.astype(np.float32)
    return x


# ---- input (section 5): one window of poses -> [T, C] ----

def mean_of(xyz, present, f, joints):
    sel = [j for j in joints if present[f, j]]
    return xyz[f, sel].mean(0) if sel else None


def features(inp, coords, present, conf):
    """coords [T, J, D], present [T, J] (0/1), conf [T, J] or None."""
    sk = inp["skeleton"]
    idx = {n: i for i, n in enumerate(sk["joints"])}
    F, J, D = coords.shape
    xyz, pres = coords.astype(np.float32).copy(), present.astype(bool)
    xyz[~pres] = 0
    observed = pres.copy()  # what mask and confidence report, also after fillGaps
    for step in inp["steps"]:  # {"op": name, parameters...}; older files: {name: {parameters}}
        (name, a), = [(step["op"], step)] if "op" in step else step.items()
        if name == "fillGaps":  # per joint: linear in frame index between seen frames, the nearest seen value at the ends
            for j in range(J):
                frames = np.flatnonzero(observed[:, j])
                if len(frames) == 0:
                    continue
                for f in range(F):
                    if observed[f, j]:
                        continue
                    later = frames[frames > f]
                    earlier = frames[frames < f]
                    if len(earlier) == 0 or len(later) == 0:
                        xyz[f, j] = xyz[(later if len(earlier) == 0 else earlier)[0 if len(earlier) == 0 else -1], j]
                    else:
                        p, q = earlier[-1], later[0]
                        w = np.float32(f - p) / np.float32(q - p)
                        xyz[f, j] = xyz[p, j] + w * (xyz[q, j] - xyz[p, j])
                pres[:, j] = True
        elif name == "centre":
            js = [idx[n] for n in a["joints"]]
            per = [mean_of(xyz, pres, f, js) for f in range(F)]
            seen = [m for m in per if m is not None]  # no centre joint anywhere: mean of all present joints
            c = np.mean(np.stack(seen), 0) if seen else xyz[pres].mean(0) if pres.any() else np.zeros(D, np.float32)
            for f in range(F):
                xyz[f, pres[f]] -= per[f] if a["perFrame"] and per[f] is not None else c.astype(np.float32)
        elif name == "scaleByTorso":
            up, lo = [idx[n] for n in a["upper"]], [idx[n] for n in a["lower"]]
            ends = [(mean_of(xyz, pres, f, up), mean_of(xyz, pres, f, lo)) for f in range(F)]
            lengths = [np.sqrt(np.sum((u - l) ** 2, dtype=np.float32)) for u, l in ends if u is not None and l is not None]
            s = np.float32(np.median(np.array(lengths, np.float32))) if lengths else np.float32(0)
            if not s > 0:  # no torso in the window: RMS spread of the present joints
                pts = xyz[pres]
                s = np.float32(np.sqrt(((pts - pts.mean(0)) ** 2).sum(1).mean())) if len(pts) else np.float32(0)
            if s > 0 and np.isfinite(s):
                xyz /= s
        elif name == "divide":
            for d, v in enumerate(a["by"][:D]):
                if v != 0:
                    xyz[..., d][pres] /= np.float32(v)
        elif name == "alignFacing":  # rotate about the vertical axis: mean right-left side vector -> +h1
            lt, rt, v = [idx[n] for n in a["left"]], [idx[n] for n in a["right"]], a["verticalAxis"]
            h1, h2 = [k for k in range(3) if k != v]
            sides = [(mean_of(xyz, pres, f, lt), mean_of(xyz, pres, f, rt)) for f in range(F)]
            side = sum(((r - l) for l, r in sides if l is not None and r is not None), np.zeros(3, np.float32))
            n = np.float32(np.hypot(side[h1], side[h2]))
            if n > 0 and np.isfinite(n):
                c, s_ = side[h1] / n, side[h2] / n
                x1, x2 = xyz[..., h1].copy(), xyz[..., h2].copy()
                xyz[..., h1] = np.where(pres, c * x1 + s_ * x2, 0)
                xyz[..., h2] = np.where(pres, -s_ * x1 + c * x2, 0)
        else:
            raise ModelFileError(f"unknown preprocessing step {name}")
    xyz[~pres] = 0
    conf = np.ones((F, J), np.float32) if conf is None else conf.astype(np.float32)

    def motion(lag):  # c[f] - c[f - lag] where the joint is present at both; 0 for f < lag
        m = np.zeros_like(xyz)
        m[lag:] = np.where((pres[lag:] & pres[:-lag])[..., None], xyz[lag:] - xyz[:-lag], 0)
        return m.reshape(F, J * D)

    def differences(pairs):  # [F, pairs, D]: c[b] - c[a] where both are present
        return np.stack([np.where((pres[:, a] & pres[:, b])[:, None], xyz[:, b] - xyz[:, a], 0) for a, b in pairs], 1) \
            if pairs else np.zeros((F, 0, D), np.float32)

    bones = [(idx[a], idx[b]) for a, b in sk["bones"]]
    pairs = [(i, j) for i in range(J) for j in range(i + 1, J)] if inp.get("pairs") is None \
        else [(idx[a], idx[b]) for a, b in inp["pairs"]]
    make = {"coordinates": lambda: xyz.reshape(F, J * D), "confidence": lambda: np.where(observed, conf, 0),
            "mask": lambda: observed.astype(np.float32), "motion": lambda: motion(1), "fastMotion": lambda: motion(2),
            "bones": lambda: differences(bones).reshape(F, -1),
            "relativePositions": lambda: differences(pairs).reshape(F, -1),
            "distances": lambda: np.sqrt((differences(pairs) ** 2).sum(-1, dtype=np.float32))}
    for b in inp["channels"]:
        if b not in make:
            raise ModelFileError(f"unknown channel block {b}")
    return np.concatenate([make[b]() for b in inp["channels"]], 1).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--features", help="raw little-endian float32 inputs [N, T, C]")
    ap.add_argument("--count", type=int)
    ap.add_argument("--windows", help="JSON: {'windows': [{'coordinates', 'present', 'confidence'?}]}")
    a = ap.parse_args()
    try:
        h, tensors = read_model(a.model)
    except (ModelFileError, OSError, ValueError, KeyError) as e:
        sys.exit(f"error: {a.model}: {e}")
    T, C = h["inputShape"]["time"], h["inputShape"]["channels"]
    if a.features:
        x = np.fromfile(a.features, "<f4").reshape(a.count, T, C)
    elif a.windows:
        sk = h["input"]["skeleton"]
        J, D = len(sk["joints"]), sk["dimensions"]
        ws = json.load(open(a.windows))["windows"]
        x = np.stack([features(h["input"], np.array(w["coordinates"], np.float32).reshape(T, J, D),
                               np.array(w["present"]).reshape(T, J),
                               None if w.get("confidence") is None else np.array(w["confidence"], np.float32).reshape(T, J))
                      for w in ws])
    else:
        print(f"{a.model}: {len(h['layers'])} layers, input [{T}, {C}], classes {h['classes']}, "
              f"{sum(int(np.prod(t.shape)) for t in tensors.values())} parameters")
        return
    z = forward(h["layers"], x.astype(np.float32), tensors, "layers.")[:, 0, :]  # [N, 1, K] -> [N, K]
    json.dump({"features": x.reshape(len(x), -1).tolist(), "logits": z.tolist()}, sys.stdout)


if __name__ == "__main__":
    main()
