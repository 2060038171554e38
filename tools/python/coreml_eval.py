#!/usr/bin/env python3
"""Loads, validates and evaluates a Core ML NeuralNetwork classifier (`.mlmodel`) with NumPy,
or an ML Program package (`.mlpackage`, a folder: coreml_program.py).

Independent of the Swift exporter: the meaning of each layer comes from Apple's published
specification (coremltools' mlmodel/format/NeuralNetwork.proto, Model.proto,
FeatureTypes.proto); the file is parsed with coremltools' generated protobuf classes, and
coremltools (which cannot run a model off macOS) must load it too. All arithmetic is float32,
as Core ML's on the CPU, or on request float64 (the reference that measures float32 rounding).

    python3 coreml_eval.py MODEL.mlmodel                      # validate; print the description
    python3 coreml_eval.py MODEL.mlmodel --inputs X.f32 --count N
        # X: N windows of the input's shape, float32 little-endian; prints JSON with the
        # probabilities, labels and the `logits` blob (when the model has one) per window
    python3 coreml_eval.py MODEL.mlmodel --inputs X.f32 --count N --reference float64
        # also `logits64` and `probabilities64`: the same graph evaluated in float64
    python3 coreml_eval.py M1 [--inputs X1 --count N1] M2 [...] ...
        # several models in one process (coremltools takes seconds to import): a JSON list

Exit status 0 when every model is valid (and evaluated), 1 with a message naming the problem.
"""
import json
import sys

import numpy as np

# The working float type: float32 (what Core ML computes), or float64 for the reference run
# (`evaluate(..., dtype=np.float64)`), which evaluates the same graph with the same float32
# weights and inputs in binary64.
FLOAT = np.float32


class Invalid(Exception):
    """The model breaks a rule of the specification (the message says which)."""


def coremltools():
    """coremltools, imported without the frameworks it converts from (torch, TensorFlow,
    scikit-learn...), which it imports when present but which loading a spec never needs."""
    for name in ("torch", "tensorflow", "sklearn", "xgboost", "libsvm", "keras", "tf_keras"):
        sys.modules.setdefault(name, None)
    import coremltools as ct

    return ct


def load(path):
    """The `Model` message of `path` (coremltools' generated class)."""
    coremltools()
    from coremltools.proto import Model_pb2

    m = Model_pb2.Model()
    with open(path, "rb") as f:
        data = f.read()
    try:
        m.ParseFromString(data)
    except Exception as e:  # the protobuf runtime's own message
        raise Invalid(f"{path} is not a Core ML model: {e}")
    return m


# ---------------------------------------------------------------------------------------------
# Validation: the rules Model.proto and NeuralNetwork.proto state for a NeuralNetworkClassifier.


def unknown_fields(msg, path="Model"):
    """Paths of fields the schema does not know (a writer's wrong field number or wire type)."""
    from google.protobuf import unknown_fields as uf

    found = []
    if len(uf.UnknownFieldSet(msg)):
        found.append(path)
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if hasattr(value, "ListFields"):
            found += unknown_fields(value, f"{path}.{field.name}")
            continue
        items = list(value.values()) if hasattr(value, "keys") else list(value)  # a map or a repeated field
        for i, v in enumerate(items):
            if hasattr(v, "ListFields"):
                found += unknown_fields(v, f"{path}.{field.name}[{i}]")
    return found


ARRAY_TYPES = {65568: np.float32, 65600: np.float64, 131104: np.int32}


def network_of(m):
    kind = m.WhichOneof("Type")
    if kind not in ("neuralNetworkClassifier", "neuralNetwork"):
        raise Invalid(f"the model is a {kind}, not a neural network")
    return kind, getattr(m, kind)


def validate(m):
    """Checks the description and the layer graph; returns a summary dict."""
    bad = unknown_fields(m)
    if bad:
        raise Invalid(f"fields unknown to the Core ML schema in {bad[:5]}")
    if m.specificationVersion < 4:
        raise Invalid(f"specificationVersion {m.specificationVersion}: the N-dimensional layers need 4 (iOS 13) or later")
    kind, nn = network_of(m)
    d = m.description
    if nn.arrayInputShapeMapping != 1:
        raise Invalid("arrayInputShapeMapping must be EXACT_ARRAY_MAPPING for N-dimensional layers")
    inputs = {}
    for f in d.input:
        t = f.type.WhichOneof("Type")
        if t != "multiArrayType":
            raise Invalid(f"input {f.name!r} is a {t}; this evaluator takes MultiArray inputs")
        a = f.type.multiArrayType
        if a.dataType not in ARRAY_TYPES or not a.shape or min(a.shape) < 1:
            raise Invalid(f"input {f.name!r}: data type {a.dataType}, shape {list(a.shape)}")
        inputs[f.name] = list(a.shape)
    if not inputs:
        raise Invalid("the model has no input")
    outputs = {f.name: f.type.WhichOneof("Type") for f in d.output}
    classes = None
    if kind == "neuralNetworkClassifier":
        which = nn.WhichOneof("ClassLabels")
        if which is None:
            raise Invalid("a classifier needs class labels")
        classes = list(getattr(nn, which).vector)
        if not classes or len(set(classes)) != len(classes):
            raise Invalid(f"class labels must be non-empty and distinct: {classes}")
        label, probs = d.predictedFeatureName, d.predictedProbabilitiesName
        want_label = "stringType" if which == "stringClassLabels" else "int64Type"
        if outputs.get(label) != want_label:
            raise Invalid(f"predictedFeatureName {label!r} must be an output of type {want_label}, outputs are {outputs}")
        if outputs.get(probs) != "dictionaryType":
            raise Invalid(f"predictedProbabilitiesName {probs!r} must be a dictionary output, outputs are {outputs}")
        key = [f for f in d.output if f.name == probs][0].type.dictionaryType.WhichOneof("KeyType")
        if key != ("stringKeyType" if which == "stringClassLabels" else "int64KeyType"):
            raise Invalid(f"the probabilities' keys are {key}, the labels {which}")
        if not nn.labelProbabilityLayerName:
            raise Invalid("labelProbabilityLayerName is empty")
    defined = set(inputs)
    names = set()
    for i, layer in enumerate(nn.layers):
        t = layer.WhichOneof("layer")
        where = f"layer {i} {layer.name!r} ({t})"
        if not layer.name or layer.name in names:
            raise Invalid(f"{where}: layer names must be unique and non-empty")
        names.add(layer.name)
        if t not in LAYERS:
            raise Invalid(f"{where}: this evaluator does not implement the layer type {t}")
        for x in layer.input:
            if x not in defined:
                raise Invalid(f"{where} reads {x!r}, which no earlier layer or input makes")
        for y in layer.output:
            if y in defined:
                raise Invalid(f"{where} writes {y!r} a second time")
            defined.add(y)
    if kind == "neuralNetworkClassifier" and nn.labelProbabilityLayerName not in defined:
        raise Invalid(f"labelProbabilityLayerName {nn.labelProbabilityLayerName!r} is made by no layer")
    # coremltools must take it too (on Linux it loads the description without compiling).
    ct = coremltools()

    model = ct.models.MLModel(m, skip_model_load=True)
    md = m.description.metadata
    return {
        "specificationVersion": m.specificationVersion,
        "type": kind,
        "inputs": inputs,
        "outputs": outputs,
        "classes": classes,
        "layers": len(nn.layers),
        "layerTypes": sorted({l.WhichOneof("layer") for l in nn.layers}),
        "author": md.author,
        "license": md.license,
        "shortDescription": md.shortDescription,
        "versionString": md.versionString,
        "userDefined": dict(md.userDefined),
        "inputDescriptions": {f.name: f.shortDescription for f in d.input},
        "outputDescriptions": {f.name: f.shortDescription for f in d.output},
        "coremltools": {"version": ct.__version__, "userDefined": dict(model.user_defined_metadata), "author": model.author},
    }


# ---------------------------------------------------------------------------------------------
# Layers, each from its NeuralNetwork.proto description. `run(layer, xs)` gets the input
# blobs (float32 arrays) and returns the list of output blobs.


def weights(w, shape=None):
    if w.float16Value or w.rawValue or w.HasField("quantization"):
        raise Invalid("only float32 weights (floatValue) are implemented")
    v = np.array(w.floatValue, dtype=FLOAT)
    return v if shape is None else v.reshape(shape)


def as_float(x):
    return np.asarray(x, dtype=FLOAT)


def broadcastable(op):
    return lambda p, xs: [as_float(op(xs[0], xs[1]))]


def load_constant_nd(p, xs):
    return [weights(p.data, list(p.shape))]


def greater_than(p, xs):
    other = xs[1] if len(xs) == 2 else FLOAT(p.alpha)
    return [as_float(xs[0] > other)]


def logical_and(p, xs):
    return [as_float((xs[0] != 0) & (xs[1] != 0))]


def where(p, xs):
    return [as_float(np.where(xs[0] != 0, xs[1], xs[2]))]


def unary(p, xs):
    # x <- scale · x + shift (scale 0 means 1), then the function.
    scale = FLOAT(p.scale if p.scale != 0 else 1)
    eps = FLOAT(p.epsilon if p.epsilon != 0 else 1e-6)
    x = as_float(xs[0] * scale + FLOAT(p.shift))
    ops = {
        0: lambda: np.sqrt(x),
        1: lambda: FLOAT(1) / np.sqrt(x + eps),
        2: lambda: FLOAT(1) / (x + eps),
        3: lambda: np.power(x, FLOAT(p.alpha)),
        4: lambda: np.exp(x),
        5: lambda: np.log(x),
        6: lambda: np.abs(x),
        7: lambda: np.maximum(x, FLOAT(p.alpha)),
    }
    return [as_float(ops[p.type]())]


def activation(p, xs):
    x, t = xs[0], p.WhichOneof("NonlinearityType")
    if t == "ReLU":
        return [as_float(np.maximum(x, FLOAT(0)))]
    if t == "tanh":
        return [as_float(np.tanh(x))]
    if t == "sigmoid":
        return [as_float(FLOAT(1) / (FLOAT(1) + np.exp(-x)))]
    if t == "linear":
        return [as_float(FLOAT(p.linear.alpha) * x + FLOAT(p.linear.beta))]
    raise Invalid(f"activation {t} is not implemented")


def reshape_static(p, xs):
    return [xs[0].reshape(list(p.targetShape))]


def transpose(p, xs):
    return [np.ascontiguousarray(np.transpose(xs[0], list(p.axes)))]


def concat_nd(p, xs):
    if p.interleave:
        raise Invalid("interleaved concatenation is not implemented")
    return [np.concatenate(xs, axis=p.axis)]


def index_array(x):
    i = np.asarray(x)
    if not np.all(i == np.round(i)):
        raise Invalid("indices must be whole numbers")
    return i.astype(np.int64)


def gather(p, xs):
    # output.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:] (numpy.take).
    return [np.take(xs[0], index_array(xs[1]), axis=p.axis)]


def gather_along_axis(p, xs):
    i = index_array(xs[1])
    n = xs[0].shape[p.axis]
    return [np.take_along_axis(xs[0], np.where(i < 0, i + n, i), axis=p.axis)]


def slice_static(p, xs):
    x = xs[0]
    r = x.ndim
    if not (len(p.beginIds) == len(p.endIds) == len(p.strides) == len(p.beginMasks) == len(p.endMasks) == r):
        raise Invalid("sliceStatic: every parameter needs one value per axis")
    index, squeeze = [], list(p.squeezeMasks) or [False] * r
    for a in range(r):
        if squeeze[a]:
            index.append(int(p.beginIds[a]))
            continue
        begin = None if p.beginMasks[a] else int(p.beginIds[a])
        end = None if p.endMasks[a] else int(p.endIds[a])
        index.append(slice(begin, end, int(p.strides[a])))
    return [np.ascontiguousarray(x[tuple(index)])]


def reducer(fn):
    def run(p, xs):
        x = xs[0]
        axes = tuple(range(x.ndim)) if p.reduceAll else tuple(a % x.ndim for a in p.axes)
        y = fn(x, axes)
        if p.keepDims:
            y = np.expand_dims(y, axes)
        y = as_float(y)
        return [y.reshape(1) if y.ndim == 0 else y]

    return run


def log_sum_exp(x, axes):
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, FLOAT(0))
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m, axis=axes)


def softmax_nd(p, xs):
    x = xs[0]
    e = np.exp(x - np.max(x, axis=p.axis, keepdims=True))
    return [as_float(e / np.sum(e, axis=p.axis, keepdims=True))]


def layer_normalization(p, xs):
    # gamma · (x − mean) / sqrt(var + eps) + beta, over the last len(normalizedShape) axes.
    x, shape = xs[0], list(p.normalizedShape)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    if list(x.shape[x.ndim - len(shape) :]) != shape:
        raise Invalid(f"layerNormalization: normalizedShape {shape} is not the end of {list(x.shape)}")
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + FLOAT(p.eps))
    return [as_float(y * weights(p.gamma, shape) + weights(p.beta, shape))]


def batched_matmul(p, xs):
    if len(xs) == 1:
        # The weight matrix [X1, X2] is stored column-major.
        X1, X2 = p.weightMatrixFirstDimension, p.weightMatrixSecondDimension
        w = weights(p.weights, [X2, X1]).T
        y = np.matmul(xs[0], w)
        if p.hasBias:
            y = y + weights(p.bias, [X2])
        return [as_float(y)]
    a, b = xs
    if p.transposeA:
        a = np.swapaxes(a, -1, -2)
    if p.transposeB:
        b = np.swapaxes(b, -1, -2)
    return [as_float(np.matmul(a, b))]


def convolution(p, xs):
    # Rank >= 4 [..., C, H, W]; weights [C_out, C_in / groups, kH, kW]; valid padding with
    # explicit amounts (zeros), or same padding; dilation spreads the kernel.
    if p.isDeconvolution:
        raise Invalid("deconvolution is not implemented")
    x = xs[0]
    lead = x.shape[:-3]
    C, H, W = x.shape[-3:]
    x = x.reshape((-1, C, H, W))
    kH, kW = (list(p.kernelSize) or [3, 3])
    sH, sW = (list(p.stride) or [1, 1])
    dH, dW = (list(p.dilationFactor) or [1, 1])
    groups = p.nGroups or 1
    O, kC = p.outputChannels, p.kernelChannels
    if kC * groups != C:
        raise Invalid(f"convolution: {C} input channels, kernelChannels {kC}, nGroups {groups}")
    w = weights(p.weights, [O, kC, kH, kW])
    eH, eW = (kH - 1) * dH + 1, (kW - 1) * dW + 1
    if p.WhichOneof("ConvolutionPaddingType") == "same":
        oH, oW = -(-H // sH), -(-W // sW)
        tH, tW = max(0, (oH - 1) * sH + eH - H), max(0, (oW - 1) * sW + eW - W)
        if p.same.asymmetryMode == 0:  # BOTTOM_RIGHT_HEAVY
            pads = (tH // 2, tH - tH // 2, tW // 2, tW - tW // 2)
        else:
            pads = (tH - tH // 2, tH // 2, tW - tW // 2, tW // 2)
    else:
        b = p.valid.paddingAmounts.borderAmounts
        pads = (b[0].startEdgeSize, b[0].endEdgeSize, b[1].startEdgeSize, b[1].endEdgeSize) if len(b) == 2 else (0, 0, 0, 0)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    oH = (H + pads[0] + pads[1] - eH) // sH + 1
    oW = (W + pads[2] + pads[3] - eW) // sW + 1
    if oH < 1 or oW < 1:
        raise Invalid("convolution: the kernel is larger than the padded input")
    y = np.zeros((x.shape[0], O, oH, oW), dtype=FLOAT)
    per = O // groups
    for g in range(groups):
        xg, wg = xp[:, g * kC : (g + 1) * kC], w[g * per : (g + 1) * per]
        for i in range(kH):
            for j in range(kW):
                patch = xg[:, :, i * dH : i * dH + sH * (oH - 1) + 1 : sH, j * dW : j * dW + sW * (oW - 1) + 1 : sW]
                y[:, g * per : (g + 1) * per] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j], dtype=FLOAT)
    if p.hasBias:
        y += weights(p.bias, [O]).reshape(1, O, 1, 1)
    return [y.reshape(lead + (O, oH, oW))]


def expand_dims(p, xs):
    x = xs[0]
    r = x.ndim + len(p.axes)
    for a in sorted(a % r for a in p.axes):
        x = np.expand_dims(x, a)
    return [x]


def squeeze(p, xs):
    x = xs[0]
    if p.squeezeAll:
        y = np.squeeze(x)
    else:
        axes = tuple(a % x.ndim for a in p.axes)
        if any(x.shape[a] != 1 for a in axes):
            raise Invalid(f"squeeze: axes {axes} of {x.shape} are not all 1")
        y = np.squeeze(x, axis=axes)
    return [y.reshape(1) if y.ndim == 0 else y]


def top_k(p, xs):
    # The K largest (or, with useBottomK, smallest) values along `axis`, in that order, and
    # their indices.
    x = xs[0]
    axis = p.axis % x.ndim
    order = np.argsort(x if p.useBottomK else -x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(p.K), axis=axis)
    return [as_float(np.take_along_axis(x, idx, axis=axis)), as_float(idx)]


def floor(p, xs):
    return [as_float(np.floor(xs[0]))]


def tanh(p, xs):
    return [as_float(np.tanh(xs[0]))]


LAYERS = {
    "loadConstantND": load_constant_nd,
    "addBroadcastable": broadcastable(np.add),
    "subtractBroadcastable": broadcastable(np.subtract),
    "multiplyBroadcastable": broadcastable(np.multiply),
    "divideBroadcastable": broadcastable(np.divide),
    "maxBroadcastable": broadcastable(np.maximum),
    "minBroadcastable": broadcastable(np.minimum),
    "greaterThan": greater_than,
    "logicalAnd": logical_and,
    "whereBroadcastable": where,
    "unary": unary,
    "activation": activation,
    "floor": floor,
    "tanh": tanh,
    "reshapeStatic": reshape_static,
    "transpose": transpose,
    "concatND": concat_nd,
    "gather": gather,
    "gatherAlongAxis": gather_along_axis,
    "sliceStatic": slice_static,
    "reduceSum": reducer(lambda x, a: np.sum(x, axis=a)),
    "reduceMean": reducer(lambda x, a: np.mean(x, axis=a)),
    "reduceMax": reducer(lambda x, a: np.max(x, axis=a)),
    "reduceLogSumExp": reducer(log_sum_exp),
    "softmaxND": softmax_nd,
    "layerNormalization": layer_normalization,
    "batchedMatmul": batched_matmul,
    "convolution": convolution,
    "expandDims": expand_dims,
    "squeeze": squeeze,
    "topK": top_k,
}


def evaluate(m, feeds, dtype=np.float32):
    """Runs the network on `feeds` (input name -> array of the declared shape) with every value
    of type `dtype` (float32 as Core ML; float64 for the reference run); returns all blobs, and
    for a classifier the probabilities (float64, as Core ML's dictionary) and label."""
    global FLOAT
    saved, FLOAT = FLOAT, dtype
    try:
        return evaluate_network(m, feeds)
    finally:
        FLOAT = saved


def evaluate_network(m, feeds):
    kind, nn = network_of(m)
    blobs = {}
    for f in m.description.input:
        a = f.type.multiArrayType
        x = np.asarray(feeds[f.name])
        if list(x.shape) != list(a.shape):
            raise Invalid(f"input {f.name!r} has shape {list(x.shape)}, the model declares {list(a.shape)}")
        blobs[f.name] = as_float(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i, layer in enumerate(nn.layers):
            t = layer.WhichOneof("layer")
            try:
                ys = LAYERS[t](getattr(layer, t), [blobs[x] for x in layer.input])
            except Invalid as e:
                raise Invalid(f"layer {i} {layer.name!r} ({t}): {e}")
            except Exception as e:
                raise Invalid(f"layer {i} {layer.name!r} ({t}) on inputs {[list(blobs[x].shape) for x in layer.input]}: {e}")
            if len(ys) != len(layer.output):
                raise Invalid(f"layer {i} {layer.name!r} ({t}) has {len(layer.output)} outputs, the layer makes {len(ys)}")
            for name, y in zip(layer.output, ys):
                blobs[name] = y
    out = {"blobs": blobs}
    if kind == "neuralNetworkClassifier":
        which = nn.WhichOneof("ClassLabels")
        classes = list(getattr(nn, which).vector)
        p = blobs[nn.labelProbabilityLayerName]
        if p.ndim != 1 or p.shape[0] != len(classes):
            raise Invalid(f"labelProbabilityLayerName {nn.labelProbabilityLayerName!r} has shape {list(p.shape)}, expected [{len(classes)}]")
        out["probabilities"] = [float(v) for v in p]
        out["label"] = classes[int(np.argmax(p))]
    return out


def run_program(path, opts):
    """Validates (and with --inputs evaluates) an ML Program package; its JSON result."""
    import os

    import coreml_program as cp

    ct = coremltools()
    try:
        model_path, weights = cp.paths(path)
        m = load(model_path)
        bad = unknown_fields(m)
        if bad:
            raise Invalid(f"fields unknown to the Core ML schema in {bad[:5]}")
        prog = cp.Program(m, weights)
        model, pymil_ops = cp.validate_with_coremltools(ct, path, m, os.path.dirname(weights))
    except cp.Invalid as e:
        raise Invalid(str(e))
    d, md = m.description, m.description.metadata
    counts = {}
    for op in prog.block.operations:
        if op.type == "const":
            (o,) = op.outputs
            t = prog.defined[o.name][0]
            counts[t] = counts.get(t, 0) + int(np.prod(prog.defined[o.name][1] or [1]))
    summary = {
        "specificationVersion": m.specificationVersion,
        "type": "mlProgram",
        "opset": prog.opset,
        "inputs": {k: v[1] for k, v in prog.inputs.items()},
        "outputs": {f.name: f.type.WhichOneof("Type") for f in d.output},
        "classes": prog.classes,
        "operations": len(prog.block.operations),
        "opTypes": prog.op_types(),
        "constantValues": counts,
        "weightBytes": os.path.getsize(weights) if os.path.exists(weights) else 0,
        "author": md.author,
        "license": md.license,
        "shortDescription": md.shortDescription,
        "versionString": md.versionString,
        "userDefined": dict(md.userDefined),
        "inputDescriptions": {f.name: f.shortDescription for f in d.input},
        "outputDescriptions": {f.name: f.shortDescription for f in d.output},
        "coremltools": {
            "version": ct.__version__,
            "userDefined": dict(model.user_defined_metadata),
            "author": model.author,
            "pymilOperations": pymil_ops,
        },
    }
    result = {"model": summary}
    if "--inputs" in opts:
        ((name, shape),) = summary["inputs"].items()
        n = int(opts.get("--count", "1"))
        x = np.fromfile(opts["--inputs"], dtype="<f4")
        if x.size != n * int(np.prod(shape)):
            raise Invalid(f"{opts['--inputs']} holds {x.size} floats, expected {n} windows of {shape}")
        x = x.reshape([n] + shape)
        logits_var = next((o.outputs[0].name for o in prog.block.operations if o.outputs and o.outputs[0].name == "logits"), None)

        def runs(reference):
            out = []
            for i in range(n):
                try:
                    env = prog.evaluate({name: x[i]}, reference=reference)
                except cp.Invalid as e:
                    raise Invalid(str(e))
                out.append(env)
            return out

        def numbers(v):
            # JSON has no NaN or infinity: a value that is not finite (a Float16 overflow) is null.
            return [float(x) if np.isfinite(x) else None for x in np.asarray(v, dtype=np.float64).reshape(-1)]

        envs = runs(False)
        result["probabilities"] = [numbers(e[prog.probabilities]) for e in envs]
        result["labels"] = [prog.classes[int(np.argmax(e[prog.probabilities]))] for e in envs]
        if logits_var:
            result["logits"] = [numbers(e[logits_var]) for e in envs]
        if opts.get("--reference") == "float64":
            envs = runs(True)
            result["probabilities64"] = [numbers(e[prog.probabilities]) for e in envs]
            if logits_var:
                result["logits64"] = [numbers(e[logits_var]) for e in envs]
        elif "--reference" in opts:
            raise Invalid(f"--reference {opts['--reference']}: the reference precision is float64")
    return result


def run(path, opts):
    """Validates (and with --inputs evaluates) one model; its JSON result."""
    import os

    if os.path.isdir(path):
        return run_program(path, opts)
    m = load(path)
    summary = validate(m)
    result = {"model": summary}
    if "--inputs" in opts:
        ((name, shape),) = summary["inputs"].items()
        n = int(opts.get("--count", "1"))
        x = np.fromfile(opts["--inputs"], dtype="<f4")
        if x.size != n * int(np.prod(shape)):
            raise Invalid(f"{opts['--inputs']} holds {x.size} floats, expected {n} windows of {shape}")
        x = x.reshape([n] + shape)
        runs = [evaluate(m, {name: x[i]}) for i in range(n)]
        result["probabilities"] = [r["probabilities"] for r in runs]
        result["labels"] = [r["label"] for r in runs]
        if "logits" in runs[0]["blobs"]:
            result["logits"] = [[float(v) for v in r["blobs"]["logits"].reshape(-1)] for r in runs]
        if opts.get("--reference") == "float64":
            # The same graph, weights and inputs in binary64: how far float32 rounding moves
            # this model's outputs on these windows.
            runs = [evaluate(m, {name: x[i]}, dtype=np.float64) for i in range(n)]
            result["probabilities64"] = [r["probabilities"] for r in runs]
            if "logits" in runs[0]["blobs"]:
                result["logits64"] = [[float(v) for v in r["blobs"]["logits"].reshape(-1)] for r in runs]
        elif "--reference" in opts:
            raise Invalid(f"--reference {opts['--reference']}: the reference precision is float64")
    return result


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    groups = []  # (model path, {flag: value})
    i = 0
    while i < len(args):
        if args[i].startswith("--"):
            if i + 1 >= len(args):
                print(f"coreml_eval.py: {args[i]} needs a value", file=sys.stderr)
                return 2
            groups[-1][1][args[i]] = args[i + 1]
            i += 2
        else:
            groups.append((args[i], {}))
            i += 1
    results = []
    for path, opts in groups:
        try:
            results.append(run(path, opts))
        except Invalid as e:
            print(f"coreml_eval.py: {path}: {e}", file=sys.stderr)
            return 1
    json.dump(results[0] if len(results) == 1 else results, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
