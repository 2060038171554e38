#!/usr/bin/env python3
"""Evaluates an ONNX model (`.onnx`) with NumPy, in float32 or float64.

Independent of the Swift exporter and of onnxruntime: the file is parsed by hand from the
protobuf wire format and the public schema (onnx/onnx.proto), and each operator follows its
definition in the ONNX operator documentation (opset 17). It implements the operators
actiontrain's exports use, and refuses any other by name. Its purpose is the float64 run:
`actiontrain export` compares onnxruntime with the Swift runtime within a tolerance set by how
far float32 rounding moves this model's outputs, which is the difference between this
evaluator's float32 and float64 runs of the same graph, weights and inputs.

    python3 onnx_eval.py MODEL.onnx X.f32 DIMS                 # DIMS: the input's shape, 4,32,19,3
        # prints JSON: the input and output names and, per output, float32 and float64 values

Exit status 0 when the model was evaluated, 1 with a message naming the problem.
"""
import json
import struct
import sys

import numpy as np


class Invalid(Exception):
    """The file breaks the schema, or uses what this evaluator does not implement."""


# ---------------------------------------------------------------------------------------------
# The protobuf wire format: varints (0), fixed64 (1), length-delimited (2), fixed32 (5).


def varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise Invalid("a varint runs past the end of its message")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise Invalid("a varint is longer than 10 bytes")


def fields(buf):
    """(field number, wire type, value) of each field of one message, in order."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i : i + n], i + n
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise Invalid(f"field {number}: wire type {wire} is not used by the ONNX schema")
        if i > len(buf):
            raise Invalid(f"field {number} runs past the end of its message")
        yield number, wire, value


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def ints(wire, value):
    """A repeated int64 field's values from one occurrence (packed or not)."""
    if wire == 0:
        return [int64(value)]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(int64(v))
    return out


def floats(wire, value):
    if wire == 5:
        return list(struct.unpack("<f", value))
    return list(struct.unpack(f"<{len(value) // 4}f", value))


# ---------------------------------------------------------------------------------------------
# The messages: ModelProto (graph 7), GraphProto (node 1, initializer 5, input 11, output 12),
# NodeProto (input 1, output 2, name 3, op_type 4, attribute 5, domain 7), AttributeProto
# (name 1, f 2, i 3, s 4, floats 7, ints 8), TensorProto (dims 1, data_type 2, float_data 4,
# int64_data 7, name 8, raw_data 9, double_data 10), ValueInfoProto (name 1).

DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}


def tensor(buf):
    dims, dtype, name, raw = [], None, "", None
    data = []
    for n, w, v in fields(buf):
        if n == 1:
            dims += ints(w, v)
        elif n == 2:
            dtype = v
        elif n == 4:
            data += floats(w, v)
        elif n == 7:
            data += ints(w, v)
        elif n == 8:
            name = v.decode()
        elif n == 9:
            raw = v
        elif n == 10:
            data += list(struct.unpack(f"<{len(v) // 8}d", v)) if w == 2 else list(struct.unpack("<d", v))
    if dtype not in DTYPES:
        raise Invalid(f"initializer {name!r}: data type {dtype} is not implemented")
    if raw is not None:
        a = np.frombuffer(raw, dtype=np.dtype(DTYPES[dtype]).newbyteorder("<")).astype(DTYPES[dtype])
    else:
        a = np.array(data, dtype=DTYPES[dtype])
    if a.size != int(np.prod(dims)):
        raise Invalid(f"initializer {name!r} holds {a.size} values for dims {dims}")
    return name, a.reshape(dims)


def attribute(buf):
    name, value = "", None
    for n, w, v in fields(buf):
        if n == 1:
            name = v.decode()
        elif n == 2:
            value = struct.unpack("<f", v)[0]
        elif n == 3:
            value = int64(v)
        elif n == 4:
            value = v
        elif n == 7:
            value = (value or []) + floats(w, v)
        elif n == 8:
            value = (value or []) + ints(w, v)
    return name, value


def node(buf):
    d = {"inputs": [], "outputs": [], "name": "", "op": "", "attributes": {}, "domain": ""}
    for n, w, v in fields(buf):
        if n == 1:
            d["inputs"].append(v.decode())
        elif n == 2:
            d["outputs"].append(v.decode())
        elif n == 3:
            d["name"] = v.decode()
        elif n == 4:
            d["op"] = v.decode()
        elif n == 5:
            k, a = attribute(v)
            d["attributes"][k] = a
        elif n == 7:
            d["domain"] = v.decode()
    return d


def value_name(buf):
    for n, w, v in fields(buf):
        if n == 1:
            return v.decode()
    raise Invalid("a graph input or output has no name")


def load(path):
    """The graph of `path`: nodes, initializers, input and output names."""
    with open(path, "rb") as f:
        data = f.read()
    graph = None
    opset = None
    for n, w, v in fields(data):
        if n == 7:
            graph = v
        elif n == 8:
            domain, version = "", None
            for m, _, u in fields(v):
                if m == 1:
                    domain = u.decode()
                elif m == 2:
                    version = u
            if domain in ("", "ai.onnx"):
                opset = version
    if graph is None:
        raise Invalid(f"{path} has no graph")
    if opset is None or not 13 <= opset <= 17:
        raise Invalid(f"opset {opset}: this evaluator implements opsets 13 to 17")
    g = {"nodes": [], "initializers": {}, "inputs": [], "outputs": []}
    for n, w, v in fields(graph):
        if n == 1:
            g["nodes"].append(node(v))
        elif n == 5:
            k, a = tensor(v)
            g["initializers"][k] = a
        elif n == 11:
            g["inputs"].append(value_name(v))
        elif n == 12:
            g["outputs"].append(value_name(v))
    g["inputs"] = [x for x in g["inputs"] if x not in g["initializers"]]
    return g


# ---------------------------------------------------------------------------------------------
# Operators (opset 17), each as the ONNX documentation defines it. `FLOAT` is the working type:
# every floating value of the graph, initializers and inputs included, is of that type.

FLOAT = np.float32


def real(x):
    return np.asarray(x, dtype=FLOAT)


def axis_of(a, rank):
    if not -rank <= a < rank:
        raise Invalid(f"axis {a} is out of range for rank {rank}")
    return a % rank


def elementwise(fn):
    return lambda xs, at: [real(fn(*xs))]


def op_max(xs, at):
    y = xs[0]
    for x in xs[1:]:
        y = np.maximum(y, x)
    return [real(y)]


def op_cast(xs, at):
    to = at.get("to")
    if to in (1, 11):  # FLOAT or DOUBLE: the working type
        return [real(xs[0])]
    if to in DTYPES:
        return [np.asarray(xs[0]).astype(DTYPES[to])]
    raise Invalid(f"Cast to data type {to} is not implemented")


def op_reshape(xs, at):
    x, shape = xs[0], [int(v) for v in xs[1]]
    if at.get("allowzero", 0):
        raise Invalid("Reshape with allowzero is not implemented")
    shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def op_transpose(xs, at):
    perm = at.get("perm") or list(reversed(range(xs[0].ndim)))
    return [np.ascontiguousarray(np.transpose(xs[0], perm))]


def op_concat(xs, at):
    return [np.concatenate(xs, axis=axis_of(at["axis"], xs[0].ndim))]


def op_slice(xs, at):
    x = xs[0]
    starts, ends = [int(v) for v in xs[1]], [int(v) for v in xs[2]]
    axes = [int(v) for v in xs[3]] if len(xs) > 3 and xs[3] is not None else list(range(len(starts)))
    steps = [int(v) for v in xs[4]] if len(xs) > 4 and xs[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st != 1:
            raise Invalid("Slice with steps other than 1 is not implemented")
        index[axis_of(a, x.ndim)] = slice(s, e)  # Python's slice clamps as ONNX does
    return [np.ascontiguousarray(x[tuple(index)])]


def indices(i, n):
    i = np.asarray(i).astype(np.int64)
    if np.any(i < -n) or np.any(i >= n):
        raise Invalid(f"an index is outside [-{n}, {n})")
    return np.where(i < 0, i + n, i)


def op_gather(xs, at):
    x = xs[0]
    a = axis_of(at.get("axis", 0), x.ndim)
    return [np.take(x, indices(xs[1], x.shape[a]), axis=a)]


def op_gather_elements(xs, at):
    x = xs[0]
    a = axis_of(at.get("axis", 0), x.ndim)
    return [np.take_along_axis(x, indices(xs[1], x.shape[a]), axis=a)]


def reduce(fn, axes_input):
    def run(xs, at):
        x = xs[0]
        axes = [int(v) for v in xs[1]] if axes_input and len(xs) > 1 else at.get("axes")
        if not axes:
            if axes_input and at.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(x.ndim))
        axes = tuple(sorted(axis_of(a, x.ndim) for a in axes))
        return [real(fn(x, axes, bool(at.get("keepdims", 1))))]

    return run


def log_sum_exp(x, axes, keep):
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    y = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return y if keep else np.squeeze(y, axis=axes)


def op_softmax(xs, at):
    x = xs[0]
    a = axis_of(at.get("axis", -1), x.ndim)
    e = np.exp(x - np.max(x, axis=a, keepdims=True))
    return [real(e / np.sum(e, axis=a, keepdims=True))]


def op_log_softmax(xs, at):
    x = xs[0]
    a = axis_of(at.get("axis", -1), x.ndim)
    return [real(x - log_sum_exp(x, (a,), True))]


def op_layer_normalization(xs, at):
    # Over the axes from `axis` to the last: (x − mean) / sqrt(var + epsilon) · scale + bias.
    x = xs[0]
    a = axis_of(at.get("axis", -1), x.ndim)
    axes = tuple(range(a, x.ndim))
    eps = FLOAT(at.get("epsilon", 1e-5))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * xs[1]
    if len(xs) > 2 and xs[2] is not None:
        y = y + xs[2]
    return [real(y)]


def op_matmul(xs, at):
    return [real(np.matmul(xs[0], xs[1]))]


def op_conv(xs, at):
    # X [N, C, D1, ...], W [M, C / group, k1, ...], optional B [M]; pads [begin..., end...].
    x, w = xs[0], xs[1]
    r = x.ndim - 2
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", None) or r not in (1, 2):
        raise Invalid("Conv: only explicit pads on 1D and 2D inputs are implemented")
    k = list(w.shape[2:])
    strides = at.get("strides") or [1] * r
    dil = at.get("dilations") or [1] * r
    pads = at.get("pads") or [0] * (2 * r)
    group = at.get("group", 1)
    if r == 1:  # as 2D with height 1
        x, w = x[:, :, None, :], w[:, :, None, :]
        k, strides, dil, pads = [1] + k, [1] + strides, [1] + dil, [0, pads[0], 0, pads[1]]
    N, C, H, W = x.shape
    M = w.shape[0]
    if w.shape[1] * group != C:
        raise Invalid(f"Conv: {C} input channels, weight {list(w.shape)}, group {group}")
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    eH, eW = (k[0] - 1) * dil[0] + 1, (k[1] - 1) * dil[1] + 1
    oH = (H + pads[0] + pads[2] - eH) // strides[0] + 1
    oW = (W + pads[1] + pads[3] - eW) // strides[1] + 1
    y = np.zeros((N, M, oH, oW), dtype=FLOAT)
    per, cin = M // group, C // group
    for g in range(group):
        xg, wg = xp[:, g * cin : (g + 1) * cin], w[g * per : (g + 1) * per]
        for i in range(k[0]):
            for j in range(k[1]):
                a, b = i * dil[0], j * dil[1]
                patch = xg[:, :, a : a + strides[0] * (oH - 1) + 1 : strides[0], b : b + strides[1] * (oW - 1) + 1 : strides[1]]
                y[:, g * per : (g + 1) * per] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j], dtype=FLOAT)
    if len(xs) > 2 and xs[2] is not None:
        y += xs[2].reshape(1, M, 1, 1)
    return [y[:, :, 0, :] if r == 1 else y]


def op_top_k(xs, at):
    x = xs[0]
    a = axis_of(at.get("axis", -1), x.ndim)
    k = int(np.asarray(xs[1]).reshape(-1)[0])
    if not at.get("sorted", 1):
        raise Invalid("TopK with sorted = 0 is not implemented")
    # Ties: the lower index first.
    order = np.argsort(x if at.get("largest", 1) == 0 else -x, axis=a, kind="stable")
    idx = np.take(order, np.arange(k), axis=a)
    return [np.take_along_axis(x, idx, axis=a), idx.astype(np.int64)]


OPS = {
    "Add": elementwise(np.add),
    "Sub": elementwise(np.subtract),
    "Mul": elementwise(np.multiply),
    "Div": elementwise(np.divide),
    "Max": op_max,
    "Greater": lambda xs, at: [np.greater(xs[0], xs[1])],
    "And": lambda xs, at: [np.logical_and(xs[0], xs[1])],
    "Where": lambda xs, at: [np.where(xs[0], xs[1], xs[2])],
    "Cast": op_cast,
    "Sqrt": elementwise(np.sqrt),
    "Floor": elementwise(np.floor),
    "Tanh": elementwise(np.tanh),
    "Relu": elementwise(lambda x: np.maximum(x, 0)),
    "Reshape": op_reshape,
    "Transpose": op_transpose,
    "Concat": op_concat,
    "Slice": op_slice,
    "Gather": op_gather,
    "GatherElements": op_gather_elements,
    "ReduceSum": reduce(lambda x, a, k: np.sum(x, axis=a, keepdims=k), True),
    "ReduceMean": reduce(lambda x, a, k: np.mean(x, axis=a, keepdims=k), False),
    "ReduceMax": reduce(lambda x, a, k: np.max(x, axis=a, keepdims=k), False),
    "ReduceLogSumExp": reduce(log_sum_exp, False),
    "Softmax": op_softmax,
    "LogSoftmax": op_log_softmax,
    "LayerNormalization": op_layer_normalization,
    "MatMul": op_matmul,
    "Conv": op_conv,
    "TopK": op_top_k,
}


def evaluate(g, feeds, dtype=np.float32):
    """Every value of the graph for `feeds` (input name -> array), computed in `dtype`."""
    global FLOAT
    saved, FLOAT = FLOAT, dtype
    try:
        values = {k: (real(v) if v.dtype.kind == "f" else v) for k, v in g["initializers"].items()}
        for k, v in feeds.items():
            values[k] = real(v)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for i, n in enumerate(g["nodes"]):
                where = f"node {i} {n['name']!r} ({n['op']})"
                if n["domain"] not in ("", "ai.onnx"):
                    raise Invalid(f"{where}: domain {n['domain']!r} is not implemented")
                if n["op"] not in OPS:
                    raise Invalid(f"{where}: this evaluator does not implement the operator {n['op']}")
                for x in n["inputs"]:
                    if x and x not in values:
                        raise Invalid(f"{where} reads {x!r}, which no earlier node, input or initializer makes")
                try:
                    ys = OPS[n["op"]]([values[x] if x else None for x in n["inputs"]], n["attributes"])
                except Invalid as e:
                    raise Invalid(f"{where}: {e}")
                except Exception as e:
                    raise Invalid(f"{where} on inputs {[list(np.shape(values[x])) for x in n['inputs'] if x]}: {e}")
                if len(ys) != len(n["outputs"]):
                    raise Invalid(f"{where} has {len(n['outputs'])} outputs, the operator makes {len(ys)}")
                for name, y in zip(n["outputs"], ys):
                    values[name] = y
        return values
    finally:
        FLOAT = saved


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, inputs, dims = argv[1], argv[2], [int(d) for d in argv[3].split(",")]
    try:
        g = load(path)
        if len(g["inputs"]) != 1:
            raise Invalid(f"the graph has inputs {g['inputs']}; this command feeds one")
        x = np.fromfile(inputs, dtype="<f4")
        if x.size != int(np.prod(dims)):
            raise Invalid(f"{inputs} holds {x.size} floats, not {dims}")
        x = x.reshape(dims)
        result = {"input": g["inputs"][0], "outputs": {}}
        for dtype, key in ((np.float32, "float32"), (np.float64, "float64")):
            values = evaluate(g, {g["inputs"][0]: x}, dtype)
            for o in g["outputs"]:
                result["outputs"].setdefault(o, {})[key] = np.asarray(values[o], dtype=np.float64).reshape(-1).tolist()
    except Invalid as e:
        print(f"onnx_eval.py: {path}: {e}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
