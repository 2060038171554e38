"""Loads, validates and evaluates a Core ML ML Program package (`.mlpackage`) with NumPy.

Used by coreml_eval.py when its MODEL is a folder. Independent of the Swift exporter: the
messages come from Apple's published MIL.proto and Model.proto (coremltools' generated
classes), the meaning of each op from coremltools' MIL op reference, and weights/weight.bin is
read here from its documented layout (a 64-byte header: count, version 2; per blob a 64-byte
record: sentinel 0xDEADBEEF, data type 1 = fp16 / 2 = fp32, size, data offset). coremltools must
load the package too (`MLModel(..., skip_model_load=True)`) and turn its program into its own
representation (`milproto.load`), which re-infers every op's output type from the op
definitions and reads the weights with coremltools' own blob reader.

Arithmetic follows the declared types: an op whose output is fp16 computes from its inputs in
float32 and rounds its result to float16 (half-precision storage, single-precision
accumulation, as Core ML's GPU); fp32 ops compute in float32. On request every float is
float64 instead (the reference run: the same graph, the stored weights).
"""
import os
import struct

import numpy as np

MIL_TYPES = {1: "bool", 2: "string", 10: "fp16", 11: "fp32", 12: "fp64", 23: "int32", 24: "int64"}


class Invalid(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# weight.bin


def read_blob(path, offset, dtype, count):
    """The `count` values of `dtype` ("fp16" or "fp32") whose record starts at `offset`."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 64:
        raise Invalid(f"{path}: {len(data)} bytes, shorter than the 64-byte header")
    blobs, version = struct.unpack_from("<II", data, 0)
    if version != 2:
        raise Invalid(f"{path}: storage version {version}, expected 2")
    if offset % 64 or offset < 64 or offset + 64 > len(data):
        raise Invalid(f"{path}: a blob record at {offset} (records are 64-byte aligned, after the header)")
    sentinel, kind, size, start = struct.unpack_from("<IIQQ", data, offset)
    if sentinel != 0xDEADBEEF:
        raise Invalid(f"{path}: no blob record at {offset} (sentinel {sentinel:#x})")
    want = {"fp16": (1, 2), "fp32": (2, 4)}.get(dtype)
    if want is None or kind != want[0]:
        raise Invalid(f"{path}: the blob at {offset} has data type {kind}, the const is {dtype}")
    if size != count * want[1] or start % 64 or start < offset + 64 or start + size > len(data):
        raise Invalid(f"{path}: the blob at {offset} holds {size} bytes at {start}, the const needs {count} values")
    return np.frombuffer(data, dtype="<f2" if dtype == "fp16" else "<f4", count=count, offset=start).copy()


# ---------------------------------------------------------------------------------------------
# Values and types


def tensor_type(vt, where):
    if vt.WhichOneof("type") != "tensorType":
        raise Invalid(f"{where}: a {vt.WhichOneof('type')}, expected a tensor")
    t = vt.tensorType
    dims = []
    for d in t.dimensions:
        if d.WhichOneof("dimension") != "constant":
            raise Invalid(f"{where}: a dimension that is not a constant")
        dims.append(int(d.constant.size))
    if t.rank != len(dims):
        raise Invalid(f"{where}: rank {t.rank} with {len(dims)} dimensions")
    if t.dataType not in MIL_TYPES:
        raise Invalid(f"{where}: data type {t.dataType}")
    return MIL_TYPES[t.dataType], dims


def decode_value(v, where, weights):
    """(type name, shape, numpy array or str) of a `Value`."""
    dtype, shape = tensor_type(v.type, where)
    n = int(np.prod(shape)) if shape else 1
    kind = v.WhichOneof("value")
    if kind == "blobFileValue":
        b = v.blobFileValue
        if b.fileName != "@model_path/weights/weight.bin":
            raise Invalid(f"{where}: blob file {b.fileName!r}")
        x = read_blob(weights, b.offset, dtype, n)
    elif kind == "immediateValue" and v.immediateValue.WhichOneof("value") == "tensor":
        t = v.immediateValue.tensor
        which = t.WhichOneof("value")
        if which == "floats":
            x = np.array(t.floats.values, dtype=np.float32)
        elif which == "ints":
            x = np.array(t.ints.values, dtype=np.int32)
        elif which == "bools":
            x = np.array(t.bools.values, dtype=bool)
        elif which == "strings":
            if dtype != "string" or len(t.strings.values) != 1:
                raise Invalid(f"{where}: string tensors must be one string")
            return dtype, shape, t.strings.values[0]
        elif which == "bytes":
            if dtype != "fp16":
                raise Invalid(f"{where}: bytes for {dtype}")
            x = np.frombuffer(t.bytes.values, dtype="<f2").copy()
        else:
            raise Invalid(f"{where}: tensor value {which}")
        want = {"fp32": "floats", "fp16": "bytes", "int32": "ints", "bool": "bools"}.get(dtype)
        if which != want:
            raise Invalid(f"{where}: {which} for a {dtype} tensor")
    else:
        raise Invalid(f"{where}: value kind {kind}")
    if x.size != n:
        raise Invalid(f"{where}: {x.size} values for shape {shape}")
    return dtype, shape, x.reshape(shape)


# ---------------------------------------------------------------------------------------------
# Ops, from coremltools' MIL op reference (iOS 15/16). `run(args, out_types, F)` gets the
# inputs by parameter name (arrays; `values` a list) and returns the outputs.


def elementwise(fn):
    return lambda a, F: [fn(a["x"], a["y"])]


def select(a, F):
    return [np.where(a["cond"].astype(bool), a["a"], a["b"])]


def cast(a, F):
    to = a["dtype"]
    x = a["x"]
    if to == "int32":
        if not np.all(np.isfinite(x)):
            raise Invalid("cast to int32 of a value that is not finite")
        return [np.trunc(x).astype(np.int32)]
    if to == "bool":
        return [x != 0]
    if to in ("fp16", "fp32"):
        return [x.astype(F)]
    raise Invalid(f"cast to {to}")


def reshape(a, F):
    return [a["x"].reshape([int(v) for v in a["shape"]])]


def transpose(a, F):
    return [np.transpose(a["x"], [int(v) for v in a["perm"]])]


def concat(a, F):
    if a.get("interleave", False):
        raise Invalid("interleaved concat is not implemented")
    return [np.concatenate(a["values"], axis=int(a["axis"]))]


def indices(i, n):
    i = np.asarray(i).astype(np.int64)
    if np.any(i < -n) or np.any(i >= n):
        raise Invalid(f"an index outside 0..<{n}")
    return np.where(i < 0, i + n, i)


def gather(a, F):
    x, ax = a["x"], int(a.get("axis", 0))
    return [np.take(x, indices(a["indices"], x.shape[ax]), axis=ax)]


def gather_along_axis(a, F):
    x, ax = a["x"], int(a.get("axis", 0))
    return [np.take_along_axis(x, indices(a["indices"], x.shape[ax]), axis=ax)]


def slice_by_index(a, F):
    x = a["x"]
    r = x.ndim
    begin, end = [int(v) for v in a["begin"]], [int(v) for v in a["end"]]
    stride = [int(v) for v in a.get("stride", [1] * r)]
    bm = list(a.get("begin_mask", [False] * r))
    em = list(a.get("end_mask", [False] * r))
    if "squeeze_mask" in a and any(a["squeeze_mask"]):
        raise Invalid("squeeze_mask is not implemented")
    if not (len(begin) == len(end) == len(stride) == r):
        raise Invalid("slice_by_index: begin, end and stride need one value per axis")
    return [x[tuple(slice(None if bm[k] else begin[k], None if em[k] else end[k], stride[k]) for k in range(r))]]


def reducer(fn):
    def run(a, F):
        x = a["x"]
        axes = tuple(int(v) % x.ndim for v in a["axes"]) if "axes" in a else tuple(range(x.ndim))
        y = fn(x, axes)
        if a.get("keep_dims", False):
            y = np.expand_dims(y, axes)
        return [y]

    return run


def log_sum_exp(x, axes):
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m, axis=axes)


def softmax(a, F):
    x, ax = a["x"], int(a.get("axis", -1))
    e = np.exp(x - np.max(x, axis=ax, keepdims=True))
    return [e / np.sum(e, axis=ax, keepdims=True)]


def layer_norm(a, F):
    # gamma · (x − mean) / sqrt(var + epsilon) + beta over `axes`; gamma and beta have the shape
    # of those axes.
    x = a["x"]
    axes = tuple(int(v) % x.ndim for v in a["axes"])
    if axes != tuple(range(x.ndim - len(axes), x.ndim)):
        raise Invalid("layer_norm over axes that are not the last ones is not implemented")
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + a.get("epsilon", 1e-5))
    if "gamma" in a:
        y = y * a["gamma"]
    if "beta" in a:
        y = y + a["beta"]
    return [y]


def matmul(a, F):
    x, y = a["x"], a["y"]
    if a.get("transpose_x", False):
        x = np.swapaxes(x, -1, -2)
    if a.get("transpose_y", False):
        y = np.swapaxes(y, -1, -2)
    return [np.matmul(x, y)]


def conv(a, F):
    # x [N, C, *spatial], weight [O, C / groups, *kernel]; pad_type custom with `pad` = begin
    # and end of each spatial axis in turn; valid = no padding.
    x, w = a["x"], a["weight"]
    s = x.ndim - 2
    if s not in (1, 2) or w.ndim != x.ndim:
        raise Invalid(f"conv of {list(x.shape)} by {list(w.shape)}")
    groups = int(a.get("groups", 1))
    strides = [int(v) for v in a.get("strides", [1] * s)]
    dil = [int(v) for v in a.get("dilations", [1] * s)]
    pad_type = a.get("pad_type", "valid")
    if pad_type == "custom":
        pads = [int(v) for v in a["pad"]]
    elif pad_type == "valid":
        pads = [0] * (2 * s)
    else:
        raise Invalid(f"conv pad_type {pad_type} is not implemented")
    if s == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        strides, dil, pads = [1] + strides, [1] + dil, [0, 0] + pads
    N, C, H, W = x.shape
    O, kC, kH, kW = w.shape
    if kC * groups != C or O % groups:
        raise Invalid(f"conv: {C} input channels, weights {list(w.shape)}, {groups} groups")
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    eH, eW = (kH - 1) * dil[0] + 1, (kW - 1) * dil[1] + 1
    oH = (H + pads[0] + pads[1] - eH) // strides[0] + 1
    oW = (W + pads[2] + pads[3] - eW) // strides[1] + 1
    if oH < 1 or oW < 1:
        raise Invalid("conv: the kernel is larger than the padded input")
    y = np.zeros((N, O, oH, oW), dtype=np.result_type(x, w))
    per = O // groups
    for g in range(groups):
        xg, wg = xp[:, g * kC : (g + 1) * kC], w[g * per : (g + 1) * per]
        for i in range(kH):
            for j in range(kW):
                patch = xg[:, :, i * dil[0] : i * dil[0] + strides[0] * (oH - 1) + 1 : strides[0], j * dil[1] : j * dil[1] + strides[1] * (oW - 1) + 1 : strides[1]]
                y[:, g * per : (g + 1) * per] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    if "bias" in a:
        y = y + a["bias"].reshape(1, O, 1, 1)
    return [y[:, :, 0, :] if s == 1 else y]


def topk(a, F):
    x = a["x"]
    ax = int(a.get("axis", -1)) % x.ndim
    k = int(a.get("k", 1))
    order = np.argsort(x if a.get("ascending", False) else -x, axis=ax, kind="stable")
    idx = np.take(order, np.arange(k), axis=ax)
    return [np.take_along_axis(x, idx, axis=ax), idx.astype(np.int32)]


def unary(fn):
    return lambda a, F: [fn(a["x"])]


OPS = {
    "add": elementwise(np.add),
    "sub": elementwise(np.subtract),
    "mul": elementwise(np.multiply),
    "real_div": elementwise(np.divide),
    "maximum": elementwise(np.maximum),
    "minimum": elementwise(np.minimum),
    "greater": elementwise(np.greater),
    "logical_and": elementwise(np.logical_and),
    "select": select,
    "cast": cast,
    "sqrt": unary(np.sqrt),
    "floor": unary(np.floor),
    "tanh": unary(np.tanh),
    "relu": unary(lambda x: np.maximum(x, 0)),
    "reshape": reshape,
    "transpose": transpose,
    "concat": concat,
    "gather": gather,
    "gather_along_axis": gather_along_axis,
    "slice_by_index": slice_by_index,
    "reduce_sum": reducer(lambda x, a: np.sum(x, axis=a)),
    "reduce_mean": reducer(lambda x, a: np.mean(x, axis=a)),
    "reduce_max": reducer(lambda x, a: np.max(x, axis=a)),
    "reduce_log_sum_exp": reducer(log_sum_exp),
    "softmax": softmax,
    "layer_norm": layer_norm,
    "matmul": matmul,
    "conv": conv,
    "topk": topk,
}

# ---------------------------------------------------------------------------------------------
# The package


def paths(package):
    manifest = os.path.join(package, "Manifest.json")
    if not os.path.isfile(manifest):
        raise Invalid(f"{package} has no Manifest.json")
    import json

    with open(manifest) as f:
        m = json.load(f)
    items = m.get("itemInfoEntries", {})
    root = items.get(m.get("rootModelIdentifier"))
    if m.get("fileFormatVersion") != "1.0.0" or root is None:
        raise Invalid(f"{manifest}: fileFormatVersion 1.0.0 and a rootModelIdentifier naming an item are required")
    model = os.path.join(package, "Data", root["path"])
    weights = os.path.join(os.path.dirname(model), "weights", "weight.bin")
    if not os.path.isfile(model):
        raise Invalid(f"{package}: the root item {root['path']} is missing")
    return model, weights


class Program:
    """The main function of a loaded `Model` message, checked op by op."""

    def __init__(self, m, weights):
        if m.WhichOneof("Type") != "mlProgram":
            raise Invalid(f"the model is a {m.WhichOneof('Type')}, not an ML Program")
        if m.specificationVersion < 7:
            raise Invalid(f"specificationVersion {m.specificationVersion}: this package is written for 7 (iOS 16) or later")
        p = m.mlProgram
        if p.version != 1 or list(p.functions) != ["main"]:
            raise Invalid(f"program version {p.version}, functions {list(p.functions)}: expected version 1 and one function main")
        f = p.functions["main"]
        if list(f.block_specializations) != [f.opset]:
            raise Invalid(f"function main: opset {f.opset!r}, blocks {list(f.block_specializations)}")
        self.opset = f.opset
        self.block = f.block_specializations[f.opset]
        self.weights = weights
        self.inputs = {}
        for i in f.inputs:
            self.inputs[i.name] = tensor_type(i.type, f"input {i.name!r}")
        d = m.description
        described = {x.name: list(x.type.multiArrayType.shape) for x in d.input}
        if {k: v[1] for k, v in self.inputs.items()} != described or any(v[0] != "fp32" for v in self.inputs.values()):
            raise Invalid(f"the function's inputs {self.inputs} differ from the description's float32 inputs {described}")
        outputs = [x.name for x in d.output]
        if sorted(self.block.outputs) != sorted(outputs):
            raise Invalid(f"the block's outputs {list(self.block.outputs)} differ from the description's {outputs}")
        # Every op reads defined names and defines new ones; the last is classify.
        defined = dict(self.inputs)
        self.types = dict(self.inputs)
        for k, op in enumerate(self.block.operations):
            where = f"op {k} ({op.type})"
            if op.type not in OPS and op.type not in ("const", "classify"):
                raise Invalid(f"{where}: this evaluator does not implement the op")
            for key, arg in op.inputs.items():
                for b in arg.arguments:
                    if b.WhichOneof("binding") == "name" and b.name not in defined:
                        raise Invalid(f"{where} reads {b.name!r} ({key}), which no earlier op or input makes")
            for o in op.outputs:
                if o.name in defined:
                    raise Invalid(f"{where} defines {o.name!r} a second time")
                if op.type == "classify":
                    defined[o.name] = None
                else:
                    defined[o.name] = tensor_type(o.type, f"{where} output {o.name!r}")
        ops = list(self.block.operations)
        if not ops or ops[-1].type != "classify":
            raise Invalid("the block must end with classify")
        c = ops[-1]
        label, probs = d.predictedFeatureName, d.predictedProbabilitiesName
        if [o.name for o in c.outputs] != [label, probs]:
            raise Invalid(f"classify's outputs {[o.name for o in c.outputs]} must be predictedFeatureName {label!r} and predictedProbabilitiesName {probs!r}")
        (binding,) = c.inputs["classes"].arguments
        self.classes = [v.immediateValue.tensor.strings.values[0] for v in binding.value.immediateValue.list.values]
        (pb,) = c.inputs["probabilities"].arguments
        self.probabilities = pb.name
        if defined.get(pb.name, (None, None))[1] != [len(self.classes)] or defined[pb.name][0] != "fp32":
            raise Invalid(f"classify's probabilities {pb.name!r} are {defined.get(pb.name)}, expected fp32 [{len(self.classes)}]")
        if not self.classes or len(set(self.classes)) != len(self.classes):
            raise Invalid(f"class labels must be non-empty and distinct: {self.classes}")
        self.defined = defined
        # Constants, decoded once (weights from weight.bin).
        self.constants = {}
        for k, op in enumerate(ops):
            if op.type == "const":
                (o,) = op.outputs
                t, s, v = decode_value(op.attributes["val"], f"const {o.name!r}", weights)
                if (t, s) != defined[o.name]:
                    raise Invalid(f"const {o.name!r}: its value is {t} {s}, its output {defined[o.name]}")
                self.constants[o.name] = v

    def op_types(self):
        return sorted({op.type for op in self.block.operations})

    def evaluate(self, feeds, reference=False):
        """All variables for `feeds` (input name -> array). `reference`: every float in float64."""
        F16 = np.float64 if reference else np.float16
        F32 = np.float64 if reference else np.float32
        numpy_type = {"fp16": F16, "fp32": F32, "int32": np.int32, "bool": bool}
        env = {}
        for name, (t, shape) in self.inputs.items():
            x = np.asarray(feeds[name])
            if list(x.shape) != shape:
                raise Invalid(f"input {name!r} has shape {list(x.shape)}, the model declares {shape}")
            env[name] = x.astype(F32)
        for name, v in self.constants.items():
            t = self.defined[name][0]
            env[name] = v if t == "string" else np.asarray(v).astype(numpy_type[t])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k, op in enumerate(self.block.operations):
                if op.type in ("const", "classify"):
                    continue
                where = f"op {k} {op.outputs[0].name!r} ({op.type})"
                args = {}
                for key, arg in op.inputs.items():
                    vals = []
                    for b in arg.arguments:
                        if b.WhichOneof("binding") != "name":
                            raise Invalid(f"{where}: literal arguments are read only by classify")
                        vals.append(env[b.name])
                    args[key] = vals if key == "values" else vals[0]
                # Floats compute in float32 (float64 for the reference) and are stored in the
                # output's declared type.
                for key, v in list(args.items()):
                    if isinstance(v, np.ndarray) and v.dtype == np.float16:
                        args[key] = v.astype(np.float32)
                    elif isinstance(v, list):
                        args[key] = [x.astype(np.float32) if x.dtype == np.float16 else x for x in v]
                try:
                    ys = OPS[op.type](args, F32)
                except Invalid as e:
                    raise Invalid(f"{where}: {e}")
                except Exception as e:
                    raise Invalid(f"{where}: {type(e).__name__}: {e}")
                if len(ys) != len(op.outputs):
                    raise Invalid(f"{where}: {len(op.outputs)} outputs declared, the op makes {len(ys)}")
                for o, y in zip(op.outputs, ys):
                    t, shape = self.defined[o.name]
                    y = np.asarray(y)
                    if list(y.shape) != shape:
                        raise Invalid(f"{where}: output {o.name!r} is declared {t} {shape}, the op makes {list(y.shape)}")
                    kind = "bool" if y.dtype == bool else "int32" if y.dtype.kind in "iu" else "float"
                    if kind != ("float" if t in ("fp16", "fp32") else t):
                        raise Invalid(f"{where}: output {o.name!r} is declared {t}, the op makes {y.dtype}")
                    env[o.name] = y.astype(numpy_type[t])
        return env


def validate_with_coremltools(ct, package, m, weights_dir):
    """coremltools loads the package and turns its program into pymil (re-inferring each op's
    types from its definition, reading weight.bin with its own reader)."""
    model = ct.models.MLModel(package, skip_model_load=True)
    from coremltools.converters.mil.frontend.milproto.load import load as mil_load

    prog = mil_load(m, m.specificationVersion, file_weights_dir=weights_dir)
    main = prog.functions["main"]
    return model, sum(1 for _ in main.operations)
