#!/usr/bin/env python3
"""An actiontrain model file reader and sequence predictor written from docs/format.md alone.

It checks a model file (.atm) as format.md section 2 says, runs the layers of section 4 in
float32, and turns whole recorded pose sequences into windows and network inputs as section 5
says (resampling, sampling, cutting, steps, channel blocks), then prints each window's class
probabilities. It uses NumPy and the Python standard library only, and no project code: it is
an independent check that format.md is enough to reproduce `actiontrain predict`.

    spec_reader.py MODEL                          check the file; print a summary (JSON)
    spec_reader.py MODEL POSES [--stride S]       predict; one JSON object per window

POSES is a JSON file of recorded sequences (format.md 5.1), in the model's joint order:

    {"frameRate": 30,                       # the data's frame rate r, or null
     "sequences": [{"id": "clip-1",
                    "timestamps": [0.0, 0.033, ...],      # seconds, or null
                    "frames": [[[x, y, k], null, [x, y], ...], ...]}]}

Each frame lists the J joints: null for an absent joint, else its D coordinates followed by
its confidence when the source gives one. The output per window:

    {"sequence": "clip-1", "window": 0, "start": 0, "end": 45, "label": "wave",
     "probabilities": [0.9, 0.1]}

Exit status 1 with a one-line message on stderr for a file that fails a check.
"""

import bisect
import json
import math
import struct
import sys
import zlib

import numpy as np

MAGIC = bytes([0x89, 0x41, 0x54, 0x4D, 0x0D, 0x0A, 0x1A, 0x0A])
F32 = np.float32


class ModelError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Section 2: reading and checking a file


def check_depth(text, limit=64):
    """Nesting depth of the JSON text, counted outside strings, before parsing (step 6)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise ModelError(f"the header nests deeper than {limit} levels")
        elif ch in "]}":
            depth -= 1


def no_repeated_keys(pairs):
    """object_pairs_hook: an object may not repeat a key (section 1.3)."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ModelError(f"the header repeats the key '{key}' in one object")
        seen.add(key)
    return dict(pairs)


def refuse_constant(name):
    raise ModelError(f"the header holds the non-JSON number {name}")


def f32(x):
    """The binary32 value nearest to a JSON number (section 1.3)."""
    return float(np.float32(x))


def need(cond, message):
    if not cond:
        raise ModelError(message)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float))) and not isinstance(v, bool)


def in_range(v, lo, hi):
    return is_num(v) and math.isfinite(v) and lo <= v <= hi


def check_names(names, what):
    need(isinstance(names, list) and all(isinstance(n, str) for n in names), f"{what} must be a list of names")
    return names


def parse_step(step, skeleton, index):
    """A preprocessing step in the op form or the older single-key form (section 5)."""
    need(isinstance(step, dict), f"input.steps[{index}] is not an object")
    if "op" in step:
        op, params = step["op"], step
    elif len(step) == 1 and next(iter(step)) in ("centre", "scaleByTorso", "divide"):
        op, params = next(iter(step.items()))
        need(isinstance(params, dict), f"input.steps[{index}] has no parameters")
    else:
        raise ModelError(f"input.steps[{index}]: unknown preprocessing step {sorted(step)}")
    joints = skeleton["joints"]

    def names(key):
        v = check_names(params.get(key), f"input.steps[{index}].{key}")
        need(len(v) > 0, f"input.steps[{index}].{key} names no joints")
        for n in v:
            need(n in joints, f"input.steps[{index}] names joint '{n}', which is not in the skeleton")
        return [joints.index(n) for n in v]

    D = skeleton["dimensions"]
    if op == "fillGaps":
        need(index == 0, f"input.steps[{index}]: fillGaps must be the first step")
        return ("fillGaps",)
    if op == "centre":
        need(isinstance(params.get("perFrame"), bool), f"input.steps[{index}].perFrame must be true or false")
        return ("centre", names("joints"), params["perFrame"])
    if op == "scaleByTorso":
        return ("scaleByTorso", names("upper"), names("lower"))
    if op == "divide":
        by = params.get("by")
        need(isinstance(by, list) and len(by) == D, f"input.steps[{index}].by needs {D} divisors")
        by = [f32(b) if is_num(b) else None for b in by]
        need(all(b is not None and 1e-6 <= b <= 1e6 for b in by), f"input.steps[{index}].by must be 1e-6 to 1e6 each, got {by}")
        return ("divide", np.array(by, dtype=F32))
    if op == "alignFacing":
        need(D == 3, f"input.steps[{index}]: alignFacing needs a 3D skeleton")
        v = params.get("verticalAxis")
        need(v in (0, 1, 2) and is_int(v), f"input.steps[{index}].verticalAxis must be 0, 1 or 2")
        return ("alignFacing", names("left"), names("right"), v)
    raise ModelError(f"input.steps[{index}]: unknown preprocessing step '{op}'")


BLOCKS = ("coordinates", "confidence", "mask", "motion", "bones", "relativePositions", "distances", "fastMotion")
PAIR_BLOCKS = ("relativePositions", "distances")


def block_width(block, J, D, B, P):
    return {"coordinates": J * D, "confidence": J, "mask": J, "motion": J * D, "bones": B * D,
            "relativePositions": P * D, "distances": P, "fastMotion": J * D}[block]


def parse_pairs(pairs, joints):
    """input.pairs (section 5): null/absent for every pair (i, j), i < j, row by row; else 1 to
    65,536 pairs of two distinct joint names, no pair twice in either order. Joint indices."""
    if pairs is None:
        return None
    need(isinstance(pairs, list) and 1 <= len(pairs) <= 65536, "input.pairs must list 1 to 65,536 pairs")
    index = {n: i for i, n in enumerate(joints)}
    seen, out = set(), []
    for k, p in enumerate(pairs):
        need(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p), f"input.pairs[{k}] must name 2 joints")
        need(all(n in index for n in p), f"input.pairs[{k}] names a joint that is not in the skeleton")
        a, b = index[p[0]], index[p[1]]
        need(a != b, f"input.pairs[{k}] names the same joint twice")
        need((min(a, b), max(a, b)) not in seen, f"input.pairs[{k}] is listed twice")
        seen.add((min(a, b), max(a, b)))
        out.append((a, b))
    return out


def parse_input(inp):
    need(isinstance(inp, dict), "input is not an object")
    sk = inp.get("skeleton")
    need(isinstance(sk, dict), "input.skeleton is missing")
    joints = check_names(sk.get("joints"), "input.skeleton.joints")
    need(1 <= len(joints) <= 65536, "input.skeleton.joints must hold 1 to 65,536 names")
    need(all(j for j in joints) and len(set(joints)) == len(joints), "input.skeleton.joints must be distinct, non-empty names")
    D = sk.get("dimensions")
    need(D in (2, 3) and is_int(D), "input.skeleton.dimensions must be 2 or 3")
    need(sk.get("units") in ("pixels", "metres", "unitless"), "input.skeleton.units is unknown")
    bones = sk.get("bones", [])
    need(isinstance(bones, list), "input.skeleton.bones must be a list")
    bone_index = []
    for b in bones:
        need(isinstance(b, list) and len(b) == 2 and all(n in joints for n in b), f"bone {b} must name two joints")
        bone_index.append((joints.index(b[0]), joints.index(b[1])))
    skeleton = {"joints": joints, "dimensions": D, "units": sk["units"], "bones": bone_index}

    w = inp.get("window")
    need(isinstance(w, dict), "input.window is missing")
    T = w.get("frames")
    need(is_int(T) and 1 <= T <= 100000, f"input.window.frames must be 1 to 100,000, got {T}")
    mode = w.get("mode", "sliding")
    padding = w.get("padding", "empty")
    need(mode in ("sliding", "fit"), f"input.window.mode '{mode}' is unknown")
    need(padding in ("empty", "edge"), f"input.window.padding '{padding}' is unknown")
    rate = w.get("frameRate")
    need(rate is None or in_range(rate, 0.01, 10000), f"input.window.frameRate must be null or 0.01 to 10,000, got {rate}")
    window = {"frames": T, "mode": mode, "padding": padding, "frameRate": None if rate is None else float(rate)}

    steps = inp.get("steps")
    need(isinstance(steps, list), "input.steps must be a list")
    steps = [parse_step(s, skeleton, i) for i, s in enumerate(steps)]

    channels = inp.get("channels")
    need(isinstance(channels, list) and len(channels) > 0, "input.channels must list at least one block")
    for c in channels:
        need(c in BLOCKS, f"input.channels: unknown channel block '{c}'")
    need(len(set(channels)) == len(channels), "input.channels lists a block twice")
    pairs = parse_pairs(inp.get("pairs"), joints)
    J, B = len(joints), len(bone_index)
    P = J * (J - 1) // 2 if pairs is None else len(pairs)
    need(P <= 65536 or not any(c in PAIR_BLOCKS for c in channels), "the pair blocks read more than 65,536 joint pairs")
    for c in channels:
        need(block_width(c, J, D, B, P) > 0, f"channel block '{c}' is empty for this skeleton")
    C = sum(block_width(c, J, D, B, P) for c in channels)
    if pairs is None and any(c in PAIR_BLOCKS for c in channels):
        pairs = [(i, j) for i in range(J) for j in range(i + 1, J)]
    return {"skeleton": skeleton, "window": window, "steps": steps, "channels": channels, "pairs": pairs, "C": C}


LAYOUTS = {"weight2": "[outputs, inputs]", "bias": "[outputs]", "weight3": "[outputs, kernel, inputs]", "channels": "[channels]",
           "weight4": "[partitions, outputs, kernel, inputs]", "adjacency": "[partitions, joints, joints]"}


class Budget:
    def __init__(self):
        self.layers = 0
        self.activations = 0
        self.data = []  # the layers' data tensors (1.8), in layer order: the head of the table


def shape_pass(layers, T, C, prefix, depth, budget, tensors):
    """Checks the layers for an input [T, C] (sections 2.1 and 4); appends the tensors they
    need (name, shape, layout) and returns the output shape and the parsed layers."""
    parsed = []
    for i, layer in enumerate(layers):
        where = f"{prefix}.{i}"
        need(isinstance(layer, dict) and isinstance(layer.get("type"), str), f"{where} has no type")
        budget.layers += 1
        need(budget.layers <= 1024, "more than 1,024 layers")
        kind = layer["type"]

        def size(key, lo=1, hi=1 << 28):
            v = layer.get(key)
            need(is_int(v) and lo <= v <= hi, f"{where} ({kind}) {key} must be {lo} to {hi}, got {v}")
            return v

        if kind == "linear":
            I, O = size("inputs"), size("outputs")
            need(I == C, f"{where} (linear) expects {I} channels, receives {C}")
            need(I * O <= 1 << 28, f"{where} (linear) weight is too large")
            tensors += [(f"{where}.weight", [O, I], LAYOUTS["weight2"]), (f"{where}.bias", [O], LAYOUTS["bias"])]
            parsed.append(("linear",))
            C = O
        elif kind in ("relu", "gelu"):
            parsed.append((kind,))
        elif kind == "dropout":
            r = layer.get("rate")
            need(is_num(r) and 0 <= f32(r) < 1, f"{where} (dropout) rate must be in [0, 1), got {r}")
            parsed.append(("identity",))
        elif kind == "layerNorm":
            ch = size("channels")
            need(ch == C, f"{where} (layerNorm) normalises {ch} channels, receives {C}")
            eps = layer.get("epsilon")
            need(is_num(eps) and 1e-12 <= f32(eps) <= 1, f"{where} (layerNorm) epsilon must be 1e-12 to 1, got {eps}")
            tensors += [(f"{where}.gamma", [C], LAYOUTS["channels"]), (f"{where}.beta", [C], LAYOUTS["channels"])]
            parsed.append(("layerNorm", F32(f32(eps))))
        elif kind == "conv1d":
            I, O = size("inputs"), size("outputs")
            K, S, Dl = size("kernel", 1, 100000), size("stride", 1, 100000), size("dilation", 1, 100000)
            P = size("padding", 0, 100000)
            need(I == C, f"{where} (conv1d) expects {I} channels, receives {C}")
            need(O * K * I <= 1 << 28, f"{where} (conv1d) weight is too large")
            need(Dl * (K - 1) + 1 <= T + 2 * P, f"{where} (conv1d) the kernel is longer than the padded input")
            T2 = (T + 2 * P - Dl * (K - 1) - 1) // S + 1
            budget.activations += T2 * K * I
            tensors += [(f"{where}.weight", [O, K, I], LAYOUTS["weight3"]), (f"{where}.bias", [O], LAYOUTS["bias"])]
            parsed.append(("conv1d", K, S, Dl, P))
            T, C = T2, O
        elif kind == "graphConv":
            J, I, O = size("joints", 1, 1 << 16), size("inputs"), size("outputs")
            K, Pn = size("kernel", 1, 100000), size("partitions", 1, 1 << 20)
            need(K % 2 == 1, f"{where} (graphConv) kernel must be odd, got {K}")
            need(J * I == C, f"{where} (graphConv) expects joints x inputs = {J * I} channels, receives {C}")
            need(Pn * J * J <= 1 << 28 and Pn * O * K * I <= 1 << 28, f"{where} (graphConv) adjacency or weight is too large")
            A = layer.get("adjacency")
            if A is None:  # 1.8: a data tensor
                budget.data.append((f"{where}.adjacency", [Pn, J, J], LAYOUTS["adjacency"]))
            else:
                need(isinstance(A, list) and len(A) == Pn * J * J and all(is_num(v) and math.isfinite(f32(v)) for v in A),
                     f"{where} (graphConv) adjacency must be partitions x joints x joints = {Pn * J * J} finite numbers")
                A = np.array([f32(v) for v in A], dtype=F32).reshape(Pn, J, J)
            budget.activations += T * J * (K * I + Pn * O)
            tensors += [(f"{where}.weight", [Pn, O, K, I], LAYOUTS["weight4"]), (f"{where}.bias", [O], LAYOUTS["bias"])]
            parsed.append(("graphConv", J, K, A))
            C = J * O
        elif kind == "flatten":
            parsed.append(("flatten",))
            T, C = 1, T * C
        elif kind in ("globalAveragePool", "globalMaxPool"):
            parsed.append((kind,))
            T = 1
        elif kind == "temporalPyramidPool":
            levels = layer.get("levels")
            need(isinstance(levels, list) and 1 <= len(levels) <= 16 and all(is_int(n) and 1 <= n <= T for n in levels),
                 f"{where} (temporalPyramidPool) levels must be 1 to 16 numbers, each 1 to the input's time {T}")
            parsed.append(("temporalPyramidPool", [(s * T // n, (s + 1) * T // n) for n in levels for s in range(n)]))
            T, C = 1, C * sum(levels)
        elif kind == "fourierPyramid":
            levels, K = layer.get("levels"), size("coefficients", 1, 64)
            need(isinstance(levels, list) and 1 <= len(levels) <= 16 and all(is_int(n) and 1 <= n <= T for n in levels),
                 f"{where} (fourierPyramid) levels must be 1 to 16 numbers, each 1 to the input's time {T}")
            budget.activations += T * C + C * sum(levels) * 2 * K
            parsed.append(("fourierPyramid", [(s * T // n, (s + 1) * T // n) for n in levels for s in range(n)], K))
            T, C = 1, C * sum(levels) * K
        elif kind == "standardize":
            if "channels" in layer:  # 1.8: mean and scale are data tensors
                need(size("channels", 1, 1 << 20) == C, f"{where} (standardize) channels must be its input's {C}")
                budget.data += [(f"{where}.mean", [C], LAYOUTS["channels"]), (f"{where}.scale", [C], LAYOUTS["channels"])]
                parsed.append(("standardize", None, None))
            else:
                mean, scale = layer.get("mean"), layer.get("scale")
                for key, v in (("mean", mean), ("scale", scale)):
                    need(isinstance(v, list) and len(v) == C and all(is_num(e) and math.isfinite(f32(e)) for e in v),
                         f"{where} (standardize) {key} must be {C} finite numbers (one per input channel)")
                parsed.append(("standardize", np.array([f32(v) for v in mean], dtype=F32), np.array([f32(v) for v in scale], dtype=F32)))
        elif kind == "residual":
            need(depth + 1 <= 8, "layers nest deeper than 8 levels")
            body, shortcut = layer.get("body"), layer.get("shortcut")
            need(isinstance(body, list) and isinstance(shortcut, list), f"{where} (residual) needs body and shortcut lists")
            (bt, bc), pb = shape_pass(body, T, C, f"{where}.body", depth + 1, budget, tensors)
            (st, sc), ps = shape_pass(shortcut, T, C, f"{where}.shortcut", depth + 1, budget, tensors)
            need((bt, bc) == (st, sc), f"{where} (residual) body gives [{bt}, {bc}], shortcut [{st}, {sc}]")
            parsed.append(("residual", pb, ps))
            T, C = bt, bc
        elif kind == "selectChannels":
            ch = layer.get("channels")
            need(isinstance(ch, list) and 1 <= len(ch) <= 1 << 20 and all(is_int(j) and 0 <= j < C for j in ch),
                 f"{where} (selectChannels) channels must be 1 to 2^20 indices below {C}")
            parsed.append(("selectChannels", list(ch)))
            C = len(ch)
        elif kind in ("averageProbabilities", "averageLogProbabilities", "flipAverage"):
            need(depth + 1 <= 8, "layers nest deeper than 8 levels")
            if kind in ("averageProbabilities", "averageLogProbabilities"):
                branches = layer.get("members")
                need(isinstance(branches, list) and branches and all(isinstance(m, list) for m in branches),
                     f"{where} ({kind}) needs a non-empty list of member lists")
                names = [f"{where}.members.{k}" for k in range(len(branches))]
                if kind == "averageLogProbabilities":
                    weights = layer.get("weights")
                    need(isinstance(weights, list) and len(weights) == len(branches)
                         and all(is_num(w) and w > 0 and math.isfinite(w) for w in weights),
                         f"{where} (averageLogProbabilities) weights must be {len(branches)} positive numbers")
            else:
                ch, sg, body = layer.get("channels"), layer.get("signs"), layer.get("body")
                need(isinstance(ch, list) and len(ch) == C and all(is_int(j) and 0 <= j < C for j in ch),
                     f"{where} (flipAverage) channels must list {C} indices below {C}")
                need(isinstance(sg, list) and len(sg) == C and all(v in (1, -1) for v in sg),
                     f"{where} (flipAverage) signs must be {C} values of 1 or -1")
                need(isinstance(body, list), f"{where} (flipAverage) needs a body list")
                branches, names = [body], [f"{where}.body"]
            outs, subs = [], []
            for b, n in zip(branches, names):
                out, sub = shape_pass(b, T, C, n, depth + 1, budget, tensors)
                need(out[0] == 1 and out == (outs[0] if outs else out), f"{n} gives {list(out)}; branches must give the same [1, K]")
                outs.append(out)
                subs.append(sub)
            if kind == "averageProbabilities":
                parsed.append(("averageProbabilities", subs))
            elif kind == "averageLogProbabilities":
                parsed.append(("averageLogProbabilities", subs, [F32(w) for w in weights]))
            else:
                parsed.append(("flipAverage", list(ch), np.array(sg, dtype=F32), subs[0]))
            T, C = outs[0]
        else:
            raise ModelError(f"{where}: unknown layer type '{kind}'")
        need(T * C <= 1 << 24, f"{where} gives more than 2^24 values per window")
        budget.activations += T * C
        need(budget.activations <= 1 << 26, "the activations of the layers exceed 2^26 values per window")
    return (T, C), parsed


def read_model(path):
    with open(path, "rb") as f:
        b = f.read()
    n = len(b)
    # 1. Magic.
    if n == 0:
        raise ModelError("not a model file: the file is empty")
    m = min(n, 8)
    if b[:m] != MAGIC[:m]:
        if m >= 4 and b[:4] == MAGIC[:4]:
            raise ModelError("the magic bytes are damaged (a text-mode transfer)")
        raise ModelError(f"not a model file: it starts with {b[:m].hex(' ')}")
    if n < 64:
        raise ModelError(f"truncated: {n} bytes, shorter than the preamble")
    major, _minor, _flags, H, D, hcrc, dcrc, total = struct.unpack_from("<HHIQQIIQ", b, 8)
    # 2. Version.
    need(major == 1, f"major version {major} is not supported")
    # 3. Total size.
    need(total <= n, f"truncated: the file should have {total} bytes but has {n}")
    need(total >= n, f"trailing bytes: the file should have {total} bytes but has {n}")
    # 4. Section lengths.
    need(64 + H + D == total, "64 + header length + data length is not the total size")
    need(H >= 1 and (64 + H) % 64 == 0 and D % 64 == 0, "the section lengths break the 64-byte alignment")
    need(H <= 16 << 20, "the header is longer than 16 MiB")
    header_bytes, data = b[64 : 64 + H], b[64 + H :]
    # 5. Header CRC, then (as the reference does) 8. the data CRC.
    need(zlib.crc32(header_bytes) == hcrc, "the header checksum does not match")
    need(zlib.crc32(data) == dcrc, "the data checksum does not match")
    # 6. The header.
    try:
        text = header_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError("the header is not UTF-8")
    check_depth(text)
    try:
        h = json.loads(text, object_pairs_hook=no_repeated_keys, parse_constant=refuse_constant)
    except json.JSONDecodeError as e:
        raise ModelError(f"the header is not valid JSON: {e}")
    need(isinstance(h, dict), "the header is not an object")
    need(h.get("format") == "actiontrain.model", "format is not 'actiontrain.model'")
    classes = h.get("classes")
    need(isinstance(classes, list) and all(isinstance(c, str) for c in classes), "classes must be a list of strings")
    need(1 <= len(classes) <= 65536 and len(set(classes)) == len(classes), "classes must be 1 to 65,536 distinct labels")
    inp = parse_input(h.get("input"))
    units = inp["skeleton"]["units"]
    expected_cs = {
        "pixels": {"units": "pixels", "origin": "topLeft", "yAxis": "down", "sides": "anatomical"},
        "metres": {"units": "metres", "origin": "source", "yAxis": "up", "sides": "anatomical"},
        "unitless": {"units": "unitless", "origin": "source", "yAxis": "source", "sides": "anatomical"},
    }[units]
    cs = h.get("coordinateSystem")
    need(isinstance(cs, dict) and all(cs.get(k) == v for k, v in expected_cs.items()), "coordinateSystem does not match the units")
    shape = h.get("inputShape")
    need(isinstance(shape, dict), "inputShape is missing")
    T, C = shape.get("time"), shape.get("channels")
    need(is_int(T) and is_int(C) and 1 <= C <= 1 << 20 and T * C <= 1 << 24, "inputShape is out of bounds")
    need(T == inp["window"]["frames"] and C == inp["C"], "inputShape does not match the input description")
    rate = h.get("trainingFrameRate")
    need(rate is None or in_range(rate, 0.01, 10000), f"trainingFrameRate must be 0.01 to 10,000, got {rate}")
    st = h.get("streaming")  # 3.4: optional, changes no computation; its bounds are checked (2.1)
    if st is not None:
        need(isinstance(st, dict), "streaming must be an object")
        clip = st.get("clipFrames")
        if clip is not None:
            need(inp["window"]["mode"] == "fit", "streaming.clipFrames is for fit windows")
            joints = len(inp["skeleton"]["joints"])
            need(is_int(clip) and 1 <= clip <= 100000 and 2 * clip * joints * inp["skeleton"]["dimensions"] <= 1 << 26,
                 f"streaming.clipFrames {clip} is out of bounds")
        clip_rate = st.get("clipFrameRate")
        need(clip_rate is None or in_range(clip_rate, 0.01, 10000), f"streaming.clipFrameRate must be 0.01 to 10,000, got {clip_rate}")
        enter, exit_ = st.get("enter"), st.get("exit")
        need((enter is None) == (exit_ is None), "streaming.enter and streaming.exit go together")
        if enter is not None:
            need(isinstance(enter, list) and isinstance(exit_, list) and len(enter) == len(exit_) == len(classes),
                 "streaming.enter and exit need one threshold per class")
            need(all(is_num(a) and is_num(b) and 0 < a <= 1 and 0 <= b <= a for a, b in zip(enter, exit_)),
                 "streaming thresholds need 0 <= exit <= enter <= 1 and enter > 0")
    ps = h.get("poseStatistics")  # 3.5 (1.4): optional, changes no computation; its bounds are checked (2.1)
    if ps is not None:
        need(isinstance(ps, dict), "poseStatistics must be an object")
        need(is_int(ps.get("windows")) and ps["windows"] >= 1, "poseStatistics.windows must be at least 1")
        # (Not J and D: D is the data section's length, which step 7 reads below.)
        joints, dims = len(inp["skeleton"]["joints"]), inp["skeleton"]["dimensions"]
        for key, n, low, high in (("centreMean", dims, None, None), ("centreSpread", dims, 0, None), ("offsetMean", joints * dims, None, None),
                                  ("offsetSpread", joints * dims, 0, None), ("present", joints, 0, 1), ("confidence", joints, 0, None), ("motion", joints, 0, None)):
            v = ps.get(key)
            need(isinstance(v, list) and len(v) == n, f"poseStatistics.{key} needs {n} values")
            need(all(is_num(x) and math.isfinite(x) and (low is None or x >= low) and (high is None or x <= high) for x in v),
                 f"poseStatistics.{key} is out of bounds")
    cal = h.get("calibration")  # 3.6 (1.6): optional, a record of what the layers already compute; its bounds are checked (2.1)
    if cal is not None:
        need(isinstance(cal, dict), "calibration must be an object")
        need(cal.get("method") == "temperature", "calibration.method must be temperature")
        need(cal.get("evidence") in ("validation", "outOfFold"), "calibration.evidence must be validation or outOfFold")
        t = cal.get("temperature")
        need(is_num(t) and math.isfinite(t) and t > 0, "calibration.temperature must be a finite number > 0")
        need(is_int(cal.get("windows")) and cal["windows"] >= 1, "calibration.windows must be at least 1")
        need(cal.get("folds") is None or (is_int(cal["folds"]) and cal["folds"] >= 2), "calibration.folds must be at least 2")
        need(all(is_num(cal.get(k)) and math.isfinite(cal[k]) and cal[k] >= 0 for k in ("logLossBefore", "logLossAfter", "eceBefore", "eceAfter")),
             "calibration scores must be finite numbers >= 0")
    prov = h.get("provenance")
    need(isinstance(prov, dict) and isinstance(prov.get("metrics"), dict), "provenance.metrics is missing")
    need(all(is_num(v) and math.isfinite(v) for v in prov["metrics"].values()), "provenance.metrics must be finite numbers")
    seed = prov.get("seed")
    need(seed is None or (is_int(seed) and 0 <= seed < 1 << 64), "provenance.seed must be 0 to 2^64 - 1")
    layers = h.get("layers")
    need(isinstance(layers, list), "layers must be a list")
    needed, budget = [], Budget()
    (t_out, c_out), parsed = shape_pass(layers, T, C, "layers", 0, budget, needed)
    needed = budget.data + needed  # 3.2: the layers' data tensors, then their parameters
    need((t_out, c_out) == (1, len(classes)), f"the network gives [{t_out}, {c_out}] per window, not [1, {len(classes)}]")
    # 7. The tensor table tiles the data section.
    table = h.get("tensors")
    need(isinstance(table, list) and len(table) <= 4096, "tensors must be a list of at most 4,096 entries")
    expected_offset = 0
    for t in table:
        need(isinstance(t, dict), "a tensor entry is not an object")
        name = t.get("name")
        need(t.get("dtype") == "float32", f"tensor '{name}': dtype must be float32")
        sh = t.get("shape")
        need(isinstance(sh, list) and 1 <= len(sh) <= 4 and all(is_int(d) and d >= 1 for d in sh), f"tensor '{name}': bad shape")
        count = int(np.prod(sh, dtype=np.int64)) if sh else 0
        need(count <= 1 << 28, f"tensor '{name}' has more than 2^28 values")
        need(t.get("length") == 4 * count, f"tensor '{name}': length is not 4 x its values")
        need(t.get("offset") == expected_offset, f"tensor '{name}': offset {t.get('offset')} does not tile (expected {expected_offset})")
        need(expected_offset + 4 * count <= D, f"tensor '{name}' runs past the data section")
        expected_offset = (expected_offset + 4 * count + 63) // 64 * 64
    need(expected_offset == D, "the data section does not end where its last tensor does (rounded up to 64)")
    need(sum(int(np.prod(t["shape"])) for t in table) == sum(int(np.prod(s)) for _, s, _ in needed),
         "the tensors do not hold as many values as the layers need")
    # 9. Padding bytes are zero; 10. every value is finite.
    for t in table:
        end = t["offset"] + t["length"]
        need(not any(data[end : (end + 63) // 64 * 64]), f"a padding byte after tensor '{t['name']}' is not zero")
    values = {}
    for t in table:
        v = np.frombuffer(data, dtype="<f4", count=t["length"] // 4, offset=t["offset"]).reshape(t["shape"]).astype(F32)
        need(bool(np.all(np.isfinite(v))), f"tensor '{t['name']}' holds NaN or infinite values")
        values[t["name"]] = v
    # 11. The network's tensors are the header's.
    need([(t["name"], t["shape"], t["layout"]) for t in table] == needed, "the tensors are not those the layers need")
    return {"classes": classes, "input": inp, "layers": parsed, "tensors": values, "header": h}


# ---------------------------------------------------------------------------------------------
# Section 4: the layers, float32, on x [B, T, C]


def forward(layers, x, tensors, prefix="layers"):
    for i, layer in enumerate(layers):
        name = f"{prefix}.{i}"
        kind = layer[0]
        if kind == "linear":
            w, b = tensors[name + ".weight"], tensors[name + ".bias"]
            x = (np.matmul(x, w.T) + b).astype(F32)
        elif kind == "relu":
            x = np.maximum(x, F32(0))
        elif kind == "gelu":
            c = F32(math.sqrt(2 / math.pi))
            x = (F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))).astype(F32)
        elif kind == "identity":
            pass
        elif kind == "layerNorm":
            eps = layer[1]
            mu = x.mean(axis=2, keepdims=True, dtype=F32)
            var = ((x - mu) ** 2).mean(axis=2, keepdims=True, dtype=F32)
            x = (tensors[name + ".gamma"] * (x - mu) / np.sqrt(var + eps) + tensors[name + ".beta"]).astype(F32)
        elif kind == "conv1d":
            _, K, S, Dl, P = layer
            w, b = tensors[name + ".weight"], tensors[name + ".bias"]  # [O, K, I]
            Bn, T, I = x.shape
            T2 = (T + 2 * P - Dl * (K - 1) - 1) // S + 1
            padded = np.zeros((Bn, T + 2 * P, I), dtype=F32)
            padded[:, P : P + T, :] = x
            cols = np.zeros((Bn, T2, K, I), dtype=F32)
            for k in range(K):
                cols[:, :, k, :] = padded[:, k * Dl : k * Dl + S * (T2 - 1) + 1 : S, :]
            x = (np.matmul(cols.reshape(Bn, T2, K * I), w.reshape(w.shape[0], K * I).T) + b).astype(F32)
        elif kind == "graphConv":
            # im2col over time per joint, one matmul for all partitions, then each A[p] over the joints
            _, J, K, A = layer
            A = tensors[name + ".adjacency"] if A is None else A
            w, b = tensors[name + ".weight"], tensors[name + ".bias"]  # [P, O, K, I]
            Pn, O, _, I = w.shape
            Bn, T, _ = x.shape
            h = (K - 1) // 2
            padded = np.zeros((Bn, T + 2 * h, J, I), dtype=F32)
            padded[:, h : h + T] = x.reshape(Bn, T, J, I)
            cols = np.stack([padded[:, k : k + T] for k in range(K)], axis=3).reshape(Bn, T, J, K * I)
            z = np.matmul(cols, w.reshape(Pn * O, K * I).T).reshape(Bn, T, J, Pn, O).astype(F32)
            y = sum(np.matmul(A[p], z[:, :, :, p, :]) for p in range(Pn))  # [J, J] @ [B, T, J, O]
            x = (y + b).reshape(Bn, T, J * O).astype(F32)
        elif kind == "flatten":
            x = x.reshape(x.shape[0], 1, -1)
        elif kind == "globalAveragePool":
            x = x.mean(axis=1, keepdims=True, dtype=F32)
        elif kind == "globalMaxPool":
            x = x.max(axis=1, keepdims=True)
        elif kind == "temporalPyramidPool":
            # Per segment [a, b): the sum in frame order times 1/(b - a), segments side by side.
            means = []
            for a, b in layer[1]:
                total = x[:, a].copy()
                for t in range(a + 1, b):
                    total = (total + x[:, t]).astype(F32)
                means.append((total * (F32(1) / F32(b - a))).astype(F32))
            x = np.concatenate(means, axis=1)[:, None, :]
        elif kind == "fourierPyramid":
            # Per segment of n frames and frequency f < K: |sum_t x_t exp(-2 pi i f t / n)|, 0 for f > n // 2.
            _, segments, K = layer
            Bn, _, C = x.shape
            parts = []
            for a, b in segments:
                n = b - a
                t = np.arange(n)
                part = np.zeros((Bn, K, C), dtype=np.float64)
                for f in range(min(K, n // 2 + 1)):
                    angle = 2 * math.pi * ((f * t) % n) / n
                    re = np.einsum("t,btc->bc", np.cos(angle), x[:, a:b].astype(np.float64))
                    im = np.einsum("t,btc->bc", np.sin(angle), x[:, a:b].astype(np.float64))
                    part[:, f] = np.sqrt(re * re + im * im)
                parts.append(part.reshape(Bn, K * C))
            x = np.concatenate(parts, axis=1).astype(F32)[:, None, :]
        elif kind == "standardize":
            mean, scale = (tensors[f"{name}.{k}"] for k in ("mean", "scale")) if layer[1] is None else layer[1:3]
            x = ((x - mean) * scale).astype(F32)
        elif kind == "residual":
            x = (forward(layer[1], x, tensors, name + ".body") + forward(layer[2], x, tensors, name + ".shortcut")).astype(F32)
        elif kind == "selectChannels":
            x = x[:, :, layer[1]]
        elif kind == "averageProbabilities":
            x = log_mean_exp([log_softmax(forward(m, x, tensors, f"{name}.members.{k}")) for k, m in enumerate(layer[1])])
        elif kind == "averageLogProbabilities":
            x = sum(np.float64(w) * log_softmax(forward(m, x, tensors, f"{name}.members.{k}"))
                    for k, (m, w) in enumerate(zip(layer[1], layer[2]))).astype(F32)
        elif kind == "flipAverage":
            _, ch, sg, body = layer
            x = log_mean_exp([log_softmax(forward(body, x, tensors, name + ".body")),
                              log_softmax(forward(body, (x[:, :, ch] * sg).astype(F32), tensors, name + ".body"))])
    return x


def log_softmax(z):
    """Per row of [B, 1, K], in binary64: z - max - log sum exp (section 4, averageProbabilities)."""
    z = z.astype(np.float64)
    m = z.max(-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(-1, keepdims=True))


def log_mean_exp(ls):
    """log((1/M) sum_m exp(l_m)) elementwise, in binary64, returned as float32."""
    s = np.stack(ls)
    m = s.max(0)
    return (m + np.log(np.exp(s - m).mean(0))).astype(F32)


def softmax(z):
    """Per row, float32: exp(z - max), summed in class order, times 1 / sum (section 4)."""
    out = np.empty_like(z, dtype=F32)
    for r in range(z.shape[0]):
        e = np.exp((z[r] - z[r].max()).astype(F32)).astype(F32)
        s = F32(0)
        for v in e:
            s = F32(s + v)
        out[r] = e * (F32(1) / s)
    return out


# ---------------------------------------------------------------------------------------------
# Section 5: from recorded poses to the network input


class Sequence:
    """n frames of J joints: coordinates [n, J, D] float32, present [n, J] bool, confidence
    [n, J] float32 or None, timestamps (list of seconds) or None."""

    def __init__(self, coords, present, conf, timestamps):
        self.coords, self.present, self.conf, self.timestamps = coords, present, conf, timestamps

    @property
    def n(self):
        return self.coords.shape[0]


def sample(seq, positions, padding):
    """The frames at fractional positions (5.4): coordinates, present, confidence (k = 1 for
    present joints of a source without confidence)."""
    n, J, D = seq.coords.shape
    F = len(positions)
    c = np.zeros((F, J, D), dtype=F32)
    p = np.zeros((F, J), dtype=bool)
    k = np.zeros((F, J), dtype=F32)
    src_k = seq.conf if seq.conf is not None else seq.present.astype(F32)
    for i, P in enumerate(positions):
        r = math.floor(abs(P) + 0.5) * (1 if P >= 0 else -1) if not math.isnan(P) else P
        if not math.isnan(P) and abs(P - r) < 1e-6:
            P = float(r)
        if n == 0 or math.isnan(P) or ((P < 0 or P > n - 1) and padding == "empty"):
            continue
        P = min(max(P, 0.0), float(n - 1))
        f0 = math.floor(P)
        w = F32(P - f0)
        if w == 0:
            c[i], p[i], k[i] = seq.coords[f0], seq.present[f0], src_k[f0]
            continue
        f1 = f0 + 1
        for j in range(J):
            if seq.present[f0, j] and seq.present[f1, j]:
                c[i, j] = seq.coords[f0, j] * (F32(1) - w) + seq.coords[f1, j] * w
                k[i, j] = src_k[f0, j] * (F32(1) - w) + src_k[f1, j] * w
                p[i, j] = True
            else:
                g = f0 if w < 0.5 else f1
                if seq.present[g, j]:
                    c[i, j], k[i, j], p[i, j] = seq.coords[g, j], src_k[g, j], True
    return c, p, k


def resample(seq, R, r):
    """5.3: the sequence at R frames per second (as a new Sequence without timestamps)."""
    n = seq.n
    if n <= 1:
        return seq
    if seq.timestamps is not None:
        t = [float(x) for x in seq.timestamps]
        for f in range(n):
            if not math.isfinite(t[f]) or (f > 0 and t[f] < t[f - 1]):
                raise ModelError(f"frame {f}: bad timestamp")
    else:
        if r is None:
            raise ModelError("no timestamps and no frame rate: cannot resample")
        if r == R:
            return seq
        t = [f / r for f in range(n)]
    span = t[n - 1] - t[0]
    if span == 0:
        raise ModelError("all timestamps are equal")
    M = math.floor(span * R + 1e-6) + 1
    if M > 1000000:
        raise ModelError("resampling gives more than 1,000,000 frames")
    positions = []
    for m in range(M):
        tau = t[0] + m / R
        i = max(bisect.bisect_right(t, tau, 0, n - 1) - 1, 0)  # the largest i <= n-2 with t[i] <= tau
        d = t[i + 1] - t[i]
        if d > 0:
            u = min(max((tau - t[i]) / d, 0.0), 1.0)
        else:
            u = 1.0 if tau >= t[i + 1] else 0.0
        positions.append(i + u)
    c, p, k = sample(seq, positions, "edge")
    return Sequence(c, p, k if seq.conf is not None else None, None)


def windows(seq, window, stride):
    """5.5: (start, end, positions) of each window of a sequence of n >= 1 frames."""
    n, T = seq.n, window["frames"]
    if window["mode"] == "fit":
        if T == 1:
            return [(0, n, [(n - 1) / 2])]
        step = (n - 1) / (T - 1)
        return [(0, n, [0 + i * step for i in range(T)])]
    if n <= T:
        starts = [0]
    else:
        starts = list(range(0, n - T + 1, stride))
        if starts[-1] != n - T:
            starts.append(n - T)
    return [(s, min(s + T, n), [float(s + i) for i in range(T)]) for s in starts]


def mean_of(c, p, f, joints):
    """Mean of the listed joints present at frame f (float32, joint order), or None."""
    total, count = np.zeros(c.shape[2], dtype=F32), 0
    for j in joints:
        if p[f, j]:
            total = (total + c[f, j]).astype(F32)
            count += 1
    return None if count == 0 else (total / F32(count)).astype(F32)


def mean_of_all(c, p):
    total, count = np.zeros(c.shape[2], dtype=F32), 0
    for f in range(c.shape[0]):
        for j in range(c.shape[1]):
            if p[f, j]:
                total = (total + c[f, j]).astype(F32)
                count += 1
    return (total / F32(count)).astype(F32) if count else total, count


def distance(a, b):
    s = F32(0)
    for d in range(len(a)):
        s = F32(s + F32(a[d] - b[d]) * F32(a[d] - b[d]))
    return F32(np.sqrt(s))


def apply_steps(c, p, steps):
    """5.6, in place on c [T, J, D] (absent joints are 0 and stay 0); returns c and the presence
    after the steps (fillGaps makes filled joints present)."""
    T = c.shape[0]
    mask = p[:, :, None]
    for step in steps:
        op = step[0]
        if op == "fillGaps":
            seen, p = p, p.copy()
            for j in range(c.shape[1]):
                frames = [f for f in range(T) if seen[f, j]]
                if not frames:
                    continue
                for f in range(T):
                    if seen[f, j]:
                        continue
                    before = [g for g in frames if g < f]
                    after = [g for g in frames if g > f]
                    if not before:
                        c[f, j] = c[after[0], j]
                    elif not after:
                        c[f, j] = c[before[-1], j]
                    else:
                        a, b = before[-1], after[0]
                        w = F32(F32(f - a) / F32(b - a))
                        c[f, j] = (c[a, j] + (w * (c[b, j] - c[a, j])).astype(F32)).astype(F32)
                    p[f, j] = True
            mask = p[:, :, None]
        elif op == "centre":
            _, joints, per_frame = step
            centres = [mean_of(c, p, f, joints) for f in range(T)]
            defined = [m for m in centres if m is not None]
            if defined:
                total = np.zeros(c.shape[2], dtype=F32)
                for m in defined:
                    total = (total + m).astype(F32)
                M = (total / F32(len(defined))).astype(F32)
            else:
                M, _ = mean_of_all(c, p)
            for f in range(T):
                centre = centres[f] if per_frame and centres[f] is not None else M
                c[f] = np.where(mask[f], (c[f] - centre).astype(F32), c[f])
        elif op == "scaleByTorso":
            _, upper, lower = step
            lengths = []
            for f in range(T):
                u, l = mean_of(c, p, f, upper), mean_of(c, p, f, lower)
                if u is not None and l is not None:
                    lengths.append(distance(u, l))
            s = None
            if lengths:
                lengths.sort()
                h = len(lengths) // 2
                s = lengths[h] if len(lengths) % 2 else F32((lengths[h - 1] + lengths[h]) / F32(2))
                if not (s > 0 and math.isfinite(s)):
                    s = None
            if s is None:
                centre, N = mean_of_all(c, p)
                if N == 0:
                    s = F32(0)
                else:
                    ss = F32(0)
                    for f in range(T):
                        for j in range(c.shape[1]):
                            if p[f, j]:
                                for d in range(c.shape[2]):
                                    ss = F32(ss + F32(c[f, j, d] - centre[d]) * F32(c[f, j, d] - centre[d]))
                    s = F32(np.sqrt(F32(ss / F32(N))))
            if s > 0 and math.isfinite(s):
                c /= s
        elif op == "divide":
            c /= step[1]
        elif op == "alignFacing":
            _, left, right, v = step
            h1, h2 = [a for a in range(3) if a != v]
            a1, a2 = F32(0), F32(0)
            for f in range(T):
                lm, rm = mean_of(c, p, f, left), mean_of(c, p, f, right)
                if lm is not None and rm is not None:
                    a1 = F32(a1 + F32(rm[h1] - lm[h1]))
                    a2 = F32(a2 + F32(rm[h2] - lm[h2]))
            nu = F32(np.sqrt(F32(a1 * a1 + a2 * a2)))
            if nu > 0 and math.isfinite(nu):
                cos, sin = F32(a1 / nu), F32(a2 / nu)
                x1, x2 = c[:, :, h1].copy(), c[:, :, h2].copy()
                c[:, :, h1] = np.where(p, cos * x1 + sin * x2, x1)
                c[:, :, h2] = np.where(p, -sin * x1 + cos * x2, x2)
    return c, p


def features(c, p, k, inp, seen):
    """5.7: the network input [T, C] of a transformed window; `seen` is the window's presence
    before fillGaps (what mask and confidence report)."""
    sk = inp["skeleton"]
    T, J, D = c.shape
    c = np.where(p[:, :, None], c, F32(0)).astype(F32)
    blocks = []
    for block in inp["channels"]:
        if block == "coordinates":
            blocks.append(c.reshape(T, J * D))
        elif block == "confidence":
            blocks.append(np.where(seen, k, F32(0)).astype(F32))
        elif block == "mask":
            blocks.append(seen.astype(F32))
        elif block in ("motion", "fastMotion"):
            lag = 1 if block == "motion" else 2
            m = np.zeros((T, J, D), dtype=F32)
            for f in range(lag, T):
                both = (p[f] & p[f - lag])[:, None]
                m[f] = np.where(both, c[f] - c[f - lag], F32(0))
            blocks.append(m.reshape(T, J * D))
        elif block in ("bones", "relativePositions"):
            blocks.append(differences(c, p, sk["bones"] if block == "bones" else inp["pairs"]).reshape(T, -1))
        elif block == "distances":
            d = differences(c, p, inp["pairs"])
            s = np.zeros((T, d.shape[1]), dtype=F32)
            for k in range(D):  # summed in axis order
                s = (s + d[:, :, k] * d[:, :, k]).astype(F32)
            blocks.append(np.sqrt(s).astype(F32))
    return np.concatenate(blocks, axis=1).astype(F32)


def differences(c, p, pairs):
    """[T, pairs, D]: c[b] - c[a] for each pair (a, b) where both joints are present, else 0."""
    T, _, D = c.shape
    out = np.zeros((T, len(pairs), D), dtype=F32)
    for k, (a, b) in enumerate(pairs):
        both = (p[:, a] & p[:, b])[:, None]
        out[:, k] = np.where(both, c[:, b] - c[:, a], F32(0))
    return out


def predict(model, poses, stride):
    inp = model["input"]
    sk, window = inp["skeleton"], inp["window"]
    J, D = len(sk["joints"]), sk["dimensions"]
    r = poses.get("frameRate")
    out = []
    for s in poses["sequences"]:
        frames = s["frames"]
        n = len(frames)
        coords = np.zeros((n, J, D), dtype=F32)
        present = np.zeros((n, J), dtype=bool)
        conf = np.zeros((n, J), dtype=F32)
        has_conf = False
        for f, frame in enumerate(frames):
            if len(frame) != J:
                raise ModelError(f"sequence '{s['id']}' frame {f} has {len(frame)} joints, the model {J}")
            for j, point in enumerate(frame):
                if point is None:
                    continue
                present[f, j] = True
                coords[f, j] = np.array(point[:D], dtype=np.float64).astype(F32)
                if len(point) > D:
                    conf[f, j] = F32(point[D])
                    has_conf = True
        seq = Sequence(coords, present, conf if has_conf else None, s.get("timestamps"))
        if window["frameRate"] is not None:
            seq = resample(seq, window["frameRate"], r)
        if seq.n == 0:
            continue
        cut = windows(seq, window, stride)
        xs = []
        for _, _, positions in cut:
            c, seen, k = sample(seq, positions, window["padding"])
            c, p = apply_steps(c, seen, inp["steps"])
            xs.append(features(c, p, k, inp, seen))
        z = forward(model["layers"], np.stack(xs).astype(F32), model["tensors"]).reshape(len(xs), -1)
        probabilities = softmax(z)
        for w, ((start, end, _), zrow, prow) in enumerate(zip(cut, z, probabilities)):
            out.append({
                "sequence": s["id"], "window": w, "start": start, "end": end,
                "label": model["classes"][int(np.argmax(zrow))],
                "probabilities": [float(v) for v in prow],
            })
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    stride = None
    if "--stride" in argv:
        i = argv.index("--stride")
        stride = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    try:
        model = read_model(argv[1])
        if len(argv) == 2:
            h = model["header"]
            print(json.dumps({"classes": model["classes"], "inputShape": h["inputShape"], "layers": len(h["layers"]),
                              "tensors": len(h["tensors"])}))
            return 0
        with open(argv[2], encoding="utf-8") as f:
            poses = json.load(f)
        T = model["input"]["window"]["frames"]
        for row in predict(model, poses, stride if stride is not None else max(1, T // 3)):
            print(json.dumps(row))
    except ModelError as e:
        print(f"error: {argv[1]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
