#!/usr/bin/env python3
"""A PyTorch module of an actiontrain model file, for the PyTorch anchor of the default model
(issue 40 item 2): the model `fit` makes with no config, built from the file's header and
tensors as tools/python/read_model.py reads them, in ordinary eager torch ops.

    torch_default.py MODEL.atm                          # the layer list; parity against read_model.py
    torch_default.py MODEL.atm --onnx EXPORT.onnx       # and against onnxruntime on the export
    torch_default.py MODEL.atm --onnx RAW.onnx --poses  # the same from poses (export --raw-poses)

`Network(header, tensors)` mirrors docs/format.md section 4 layer by layer for the layer kinds
the default model contains (selectChannels, conv1d, layerNorm, relu, dropout, residual,
globalAveragePool, linear, fourierPyramid, standardize, averageLogProbabilities); another kind
raises. It takes network inputs [B, T, C] like the export and `ActionModel.logits`, turns them
channels-first once ([B, C, T], PyTorch's layout for conv1d) and gives logits [B, K]. A
calibration temperature needs no layer: the writer folded it into the last layer's numbers
(here the members' weights), as section 3.6 says, so the logits are the calibrated ones.

`PoseFeatures(header["input"])` is section 5.6-5.7 on batches of poses [B, T, J, D + 1]
(coordinates, then a confidence > 0 for a present joint and 0 for an absent one, as the export
with --raw-poses takes them) for the steps and channel blocks of the default model (centre,
divide, alignFacing; coordinates, mask, bones, relativePositions); others raise.

`parity(...)` compares the module's logits on random inputs with onnxruntime on the model's own
ONNX export and with read_model.py, and raises `ParityError` past the tolerance.
"""
import argparse, math, os, sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_model  # noqa: E402


class ParityError(Exception):
    """The module's logits differ from the reference's past the tolerance."""


# ---- layers (docs/format.md section 4), activations channels-first [B, C, T], or [B, C] once
# time has been pooled away ----

class SelectChannels(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.register_buffer("channels", torch.tensor(channels, dtype=torch.long))

    def forward(self, x):
        return x.index_select(1, self.channels)


class LayerNorm(nn.Module):
    """layerNorm over the channels at each time step (F.layer_norm normalises the last axis)."""

    def __init__(self, gamma, beta, epsilon):
        super().__init__()
        self.gamma, self.beta, self.epsilon = nn.Parameter(gamma), nn.Parameter(beta), epsilon

    def forward(self, x):
        return F.layer_norm(x.transpose(1, 2), self.gamma.shape, self.gamma, self.beta, self.epsilon).transpose(1, 2)


class Residual(nn.Module):
    def __init__(self, body, shortcut):
        super().__init__()
        self.body, self.shortcut = body, shortcut  # an empty nn.Sequential is the identity

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


class GlobalAveragePool(nn.Module):
    def forward(self, x):
        return x.mean(2)


def fourier_basis(time, levels, coefficients):
    """[T, 2·S·K]: column k·K + f holds segment k's cos(2π·r/n), r = (f·t) mod n, on its n frames
    (t from 0 at the segment's start) and 0 elsewhere, column S·K + k·K + f its sin; 0 for a
    frequency f > n/2 the segment lacks. Computed in binary64, values below 1e-12 taken as 0,
    rounded to float32 (docs/format.md, fourierPyramid)."""
    segments = [(s * time // n, (s + 1) * time // n) for n in levels for s in range(n)]
    S, K = len(segments), coefficients
    basis = np.zeros((time, 2 * S * K))
    for k, (a, b) in enumerate(segments):
        n = b - a
        for f in range(min(K, n // 2 + 1)):
            angle = 2 * math.pi * ((f * np.arange(n)) % n) / n
            basis[a:b, k * K + f] = np.cos(angle)
            basis[a:b, S * K + k * K + f] = np.sin(angle)
    basis[np.abs(basis) < 1e-12] = 0
    return torch.from_numpy(basis.astype(np.float32))


class FourierPyramid(nn.Module):
    """[B, C, T] -> [B, S·K·C]: per segment k and frequency f < K the magnitude √(re² + im²) of
    the segment's DFT, segment-major, then frequency, then channel (the export's MatMul form)."""

    def __init__(self, time, levels, coefficients):
        super().__init__()
        self.register_buffer("basis", fourier_basis(time, levels, coefficients))
        self.half = self.basis.shape[1] // 2

    def forward(self, x):
        y = torch.matmul(x, self.basis)  # [B, C, 2·S·K]
        re, im = y[..., :self.half], y[..., self.half:]
        return torch.sqrt(re * re + im * im).transpose(1, 2).reshape(x.shape[0], -1)


class Standardize(nn.Module):
    def __init__(self, mean, scale):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("scale", scale)

    def forward(self, x):
        return (x - self.mean) * self.scale


class AverageLogProbabilities(nn.Module):
    """Σ_m w_m · log_softmax(member_m(x)), summed in member order."""

    def __init__(self, members, weights):
        super().__init__()
        self.members, self.weights = nn.ModuleList(members), [float(w) for w in weights]

    def forward(self, x):
        y = None
        for member, w in zip(self.members, self.weights):
            term = w * F.log_softmax(member(x), dim=-1)
            y = term if y is None else y + term
        return y


def build(layers, tensors, prefix, time):
    """nn.Sequential of `layers` (their tensors named `prefix<i>.<param>`) for an input of `time`
    steps (None once pooled); returns (module, the output's time)."""
    modules = []
    for i, L in enumerate(layers):
        p, kind = f"{prefix}{i}.", L["type"]

        def t(name):
            return torch.from_numpy(tensors[p + name].copy())
        if kind == "dropout":  # the identity at inference
            continue
        if kind == "selectChannels":
            modules.append(SelectChannels(L["channels"]))
        elif kind == "conv1d":
            conv = nn.Conv1d(L["inputs"], L["outputs"], L["kernel"], stride=L["stride"], padding=L["padding"],
                             dilation=L["dilation"])
            with torch.no_grad():
                conv.weight.copy_(t("weight").transpose(1, 2))  # ours [O, K, I], PyTorch's [O, I, K]
                conv.bias.copy_(t("bias"))
            modules.append(conv)
            time = (time + 2 * L["padding"] - L["dilation"] * (L["kernel"] - 1) - 1) // L["stride"] + 1
        elif kind == "layerNorm":
            modules.append(LayerNorm(t("gamma"), t("beta"), L["epsilon"]))
        elif kind == "relu":
            modules.append(nn.ReLU())
        elif kind == "residual":
            body, time_body = build(L["body"], tensors, p + "body.", time)
            shortcut, _ = build(L["shortcut"], tensors, p + "shortcut.", time)
            modules.append(Residual(body, shortcut))
            time = time_body
        elif kind == "globalAveragePool":
            modules.append(GlobalAveragePool())
            time = None
        elif kind == "linear":  # after pooling: [B, I] -> [B, O]
            linear = nn.Linear(L["inputs"], L["outputs"])
            with torch.no_grad():
                linear.weight.copy_(t("weight"))
                linear.bias.copy_(t("bias"))
            modules.append(linear)
        elif kind == "fourierPyramid":
            modules.append(FourierPyramid(time, L["levels"], L["coefficients"]))
            time = None
        elif kind == "standardize":
            shape = (-1,) if time is None else (-1, 1)
            modules.append(Standardize(torch.tensor(L["mean"], dtype=torch.float32).reshape(shape),
                                       torch.tensor(L["scale"], dtype=torch.float32).reshape(shape)))
        elif kind == "averageLogProbabilities":
            members = [build(m, tensors, f"{p}members.{k}.", time)[0] for k, m in enumerate(L["members"])]
            modules.append(AverageLogProbabilities(members, L["weights"]))
            time = None
        else:
            raise ValueError(f"torch_default.py: layer type {kind} is not in the default model (not mirrored)")
    return nn.Sequential(*modules), time


class Network(nn.Module):
    """The layers of a model file: network inputs [B, T, C] -> logits [B, K]."""

    def __init__(self, header, tensors):
        super().__init__()
        self.layers, time = build(header["layers"], tensors, "layers.", header["inputShape"]["time"])
        if time is not None:
            raise ValueError("torch_default.py: the network does not pool time away")

    def forward(self, x):
        return self.layers(x.transpose(1, 2))


# ---- input (docs/format.md sections 5.6-5.7) ----

def joint_mean(xyz, present, joints):
    """The mean of the present `joints` at each frame ([B, T, D]) and whether it exists ([B, T])."""
    p = present[:, :, joints]
    count = p.sum(2)
    total = torch.where(p.unsqueeze(-1), xyz[:, :, joints], 0).sum(2)
    return total / count.clamp(min=1).unsqueeze(-1), count > 0


class PoseFeatures(nn.Module):
    """Poses [B, T, J, D + 1] -> network inputs [B, T, C]: the steps, then the channel blocks."""

    def __init__(self, spec):
        super().__init__()
        sk = spec["skeleton"]
        index = {n: i for i, n in enumerate(sk["joints"])}
        J, D = len(sk["joints"]), sk["dimensions"]
        self.steps = []  # (op, parameters with joint names as indices)
        for step in spec["steps"]:
            (op, a), = [(step["op"], step)] if "op" in step else step.items()
            if op == "centre":
                self.steps.append((op, ([index[n] for n in a["joints"]], a["perFrame"])))
            elif op == "divide":
                by = [v if v != 0 else 1 for v in a["by"][:D]]  # 0: that axis unchanged
                self.steps.append((op, torch.tensor(by, dtype=torch.float32)))
            elif op == "alignFacing":
                v = a["verticalAxis"]
                self.steps.append((op, ([index[n] for n in a["left"]], [index[n] for n in a["right"]],
                                        [k for k in range(3) if k != v])))
            else:
                raise ValueError(f"torch_default.py: step {op} is not in the default model (not mirrored)")
        pairs = [(i, j) for i in range(J) for j in range(i + 1, J)] if spec.get("pairs") is None \
            else [(index[a], index[b]) for a, b in spec["pairs"]]
        bones = [(index[a], index[b]) for a, b in sk["bones"]]
        self.channels = spec["channels"]
        for block in self.channels:
            if block not in ("coordinates", "mask", "bones", "relativePositions"):
                raise ValueError(f"torch_default.py: channel block {block} is not in the default model (not mirrored)")
        for block, listed in (("bones", bones), ("relativePositions", pairs)):  # [a, b] of each pair
            self.register_buffer(f"{block}_a", torch.tensor([a for a, _ in listed], dtype=torch.long))
            self.register_buffer(f"{block}_b", torch.tensor([b for _, b in listed], dtype=torch.long))

    def centre(self, xyz, present, joints, per_frame):
        frame, has = joint_mean(xyz, present, joints)
        frames = has.sum(1, keepdim=True)  # [B, 1]
        window = torch.where(has.unsqueeze(-1), frame, 0).sum(1) / frames.clamp(min=1)
        # no frame with a centre: the mean of all present joints of the window, else 0
        everyone = present.flatten(1, 2)
        fallback = torch.where(everyone.unsqueeze(-1), xyz.flatten(1, 2), 0).sum(1) \
            / everyone.sum(1, keepdim=True).clamp(min=1)
        window = torch.where(frames > 0, window, fallback)  # [B, D]
        shift = window.unsqueeze(1).expand_as(frame)
        if per_frame:
            shift = torch.where(has.unsqueeze(-1), frame, shift)
        return xyz - shift.unsqueeze(2)

    def align_facing(self, xyz, present, left, right, axes):
        l, has_l = joint_mean(xyz, present, left)
        r, has_r = joint_mean(xyz, present, right)
        side = torch.where((has_l & has_r).unsqueeze(-1), r - l, 0).sum(1)  # [B, D]
        h1, h2 = axes
        norm = torch.sqrt(side[:, h1] * side[:, h1] + side[:, h2] * side[:, h2])
        ok = (norm > 0) & torch.isfinite(norm)  # otherwise nothing changes
        cos = torch.where(ok, side[:, h1] / norm, 1).view(-1, 1, 1)
        sin = torch.where(ok, side[:, h2] / norm, 0).view(-1, 1, 1)
        x1, x2 = xyz[..., h1], xyz[..., h2]
        axis = list(xyz.unbind(-1))
        axis[h1], axis[h2] = cos * x1 + sin * x2, -sin * x1 + cos * x2
        return torch.stack(axis, -1)

    def differences(self, xyz, present, block):
        """[B, T, P·D]: c[b] − c[a] for each of the block's pairs [a, b] where both are present, else 0."""
        a, b = getattr(self, f"{block}_a"), getattr(self, f"{block}_b")
        both = present[:, :, a] & present[:, :, b]
        d = torch.where(both.unsqueeze(-1), xyz[:, :, b] - xyz[:, :, a], 0)
        return d.flatten(2)

    def forward(self, poses):
        xyz, present = poses[..., :-1], poses[..., -1] > 0
        xyz = torch.where(present.unsqueeze(-1), xyz, 0)  # absent joints: coordinates 0
        for op, a in self.steps:  # each moves absent joints too, but no step reads them
            if op == "centre":
                xyz = self.centre(xyz, present, *a)
            elif op == "divide":
                xyz = xyz / a
            else:
                xyz = self.align_facing(xyz, present, *a)
        xyz = torch.where(present.unsqueeze(-1), xyz, 0)  # absent joints: coordinates 0 again
        blocks = {"coordinates": lambda: xyz.flatten(2), "mask": lambda: present.to(xyz.dtype)}
        return torch.cat([blocks[c]() if c in blocks else self.differences(xyz, present, c)
                          for c in self.channels], 2)


class PosesModel(nn.Module):
    """The whole predict path: poses [B, T, J, D + 1] -> features -> logits [B, K]."""

    def __init__(self, header, tensors):
        super().__init__()
        self.features, self.network = PoseFeatures(header["input"]), Network(header, tensors)

    def forward(self, poses):
        return self.network(self.features(poses))


def load(path, poses=False):
    """(module in eval mode, header) for a model file; `poses`: the feature extractor in front."""
    header, tensors = read_model.read_model(path)
    module = (PosesModel if poses else Network)(header, tensors)
    return module.eval(), header


# ---- parity ----

def random_inputs(header, count, poses, rng, absent=0.0):
    """Inputs uniform in [-2, 2) (the benchmark's); poses with every joint present, except a
    fraction `absent` of joints (confidence 0, coordinates still random: they must be ignored)."""
    T, C = header["inputShape"]["time"], header["inputShape"]["channels"]
    if not poses:
        return rng.uniform(-2, 2, (count, T, C)).astype(np.float32)
    sk = header["input"]["skeleton"]
    x = rng.uniform(-2, 2, (count, T, len(sk["joints"]), sk["dimensions"] + 1)).astype(np.float32)
    x[..., -1] = (rng.uniform(0, 1, x.shape[:-1]) >= absent).astype(np.float32)
    return x


def reference_logits(header, tensors, x, poses):
    """read_model.py's logits for network inputs [B, T, C] or poses [B, T, J, D + 1]."""
    if poses:
        x = np.stack([read_model.features(header["input"], w[..., :-1], w[..., -1] > 0, None) for w in x])
    return read_model.forward(header["layers"], x, tensors, "layers.")[:, 0, :]


def parity(module, model_path, onnx_path=None, poses=False, seed=7, tolerance=1e-4):
    """The module's logits against onnxruntime on `onnx_path` (when given) and against read_model.py,
    on random batches of 1 and 64 (poses: also 64 with a tenth of the joints absent). Returns
    {reference: (max abs diff, max abs logit)} over the batches; raises ParityError when a
    reference's max abs diff exceeds `tolerance` × its max abs logit."""
    header, tensors = read_model.read_model(model_path)
    rng = np.random.default_rng(seed)
    batches = [random_inputs(header, 1, poses, rng), random_inputs(header, 64, poses, rng)]
    if poses:
        batches.append(random_inputs(header, 64, poses, rng, absent=0.1))
    references = {"read_model.py": lambda x: reference_logits(header, tensors, x, poses)}
    if onnx_path:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1  # no worker threads left spinning
        session = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        expected = "poses" if poses else "input"
        if (name == "poses") != poses:
            raise ParityError(f"{onnx_path}: its input is {name}, the module takes {expected}")
        references["onnxruntime"] = lambda x: session.run(["logits"], {name: x})[0]
    result = {}
    for ref, run in references.items():
        diff = scale = 0.0
        for x in batches:
            with torch.inference_mode():
                ours = module(torch.from_numpy(x)).numpy()
            theirs = np.asarray(run(x), np.float32)
            if ours.shape != theirs.shape:
                raise ParityError(f"logits {ours.shape} against {ref}'s {theirs.shape}")
            diff = max(diff, float(np.abs(ours - theirs).max()))
            scale = max(scale, float(np.abs(theirs).max()))
        result[ref] = (diff, scale)
        if not diff <= tolerance * scale:
            raise ParityError(f"logits differ from {ref}'s by up to {diff:.3g} (max |logit| {scale:.3g}; "
                              f"tolerance {tolerance:g} of it)")
    return result


def describe(layers, indent=""):
    """One line per layer, nested members and branches indented."""
    lines = []
    for i, L in enumerate(layers):
        fields = {k: (v if not isinstance(v, list) or len(v) <= 8 else f"[{len(v)} values]")
                  for k, v in L.items() if k not in ("type", "members", "body", "shortcut")}
        lines.append(f"{indent}{i} {L['type']} " + ", ".join(f"{k} {v}" for k, v in fields.items()))
        for k, member in enumerate(L.get("members", [])):
            lines += [f"{indent}  member {k}:"] + describe(member, indent + "    ")
        for branch in ("body", "shortcut"):
            if branch in L:
                lines += [f"{indent}  {branch}:"] + (describe(L[branch], indent + "    ") or [f"{indent}    (identity)"])
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--onnx", help="the model's ONNX export (with --raw-poses for --poses)")
    ap.add_argument("--poses", action="store_true", help="poses through the feature extractor")
    a = ap.parse_args()
    module, header = load(a.model, a.poses)
    print("\n".join(describe(header["layers"])))
    calibration = header.get("calibration")
    print(f"calibration temperature {calibration['temperature']:.4g}, already in the layers" if calibration
          else "no calibration temperature")
    for ref, (diff, scale) in parity(module, a.model, a.onnx, a.poses).items():
        print(f"parity against {ref}: max abs diff {diff:.3g}, max |logit| {scale:.3g}, relative {diff / scale:.3g}")


if __name__ == "__main__":
    main()
