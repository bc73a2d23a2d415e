#!/usr/bin/env python3
"""Special-value test data with ONNX Runtime as the oracle.

The reference interpreter is shapeshift's own oracle, so a bug it shares with
the compiled kernels (Relu turning NaN into 0 was one) is invisible to
`run --check` and `fuzz`. This script is the second oracle: it builds small
ONNX models for the elementwise, reduction, normalization and fused patterns
the compiled path supports, feeds them NaN, +-Inf, -0, denormals, +-FLT_MAX,
huge and tiny magnitudes and mixed rows, records ONNX Runtime's outputs and
writes everything as ONNX test data (model.onnx + test_data_set_0/input_K.pb,
output_K.pb) under tests/data/special_values/. The C++ suite
tests/runtime/special_values_test.cc runs each case through the interpreter
and through a compiled Session and compares both with these outputs (no
Python at test time).

Where ONNX Runtime does not give one answer, the element is not used as an
oracle: each case is also run with ORT's graph optimizations off; each row
case with its rows (for GEMMs: the K axis) reversed, rotated to every offset
and shuffled; sums and GEMMs also in float64. An element (or row) whose
result changes is replaced by an ordinary value and recorded in cases.json
("neutralized", with the reason), because then ORT's answer is an artefact
of its kernel choice or of rounding, not a semantics to follow. Known one:
ReduceMax/ReduceMin keep a NaN only when it is the first element of the row
(or lands in a vector tail). tests/data/special_values/README.md lists all.

Exact pins (bench/peers/requirements.txt):
    bench/peers/setup.sh --ort-only
    bench/peers/.venv-ort/bin/python bench/peers/special_values.py
"""

import argparse
import json
import pathlib
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)
FLT_MIN = float(np.finfo(F32).tiny)
DENORMAL_MIN = float(np.nextafter(F32(0), F32(1)))
NAN, INF = float("nan"), float("inf")

# The values every elementwise case sees: IEEE specials, the ends of the f32
# range, magnitudes where exp/tanh/sigmoid saturate, and ordinary numbers.
PALETTE = [
    NAN, INF, -INF, 0.0, -0.0,
    DENORMAL_MIN, -DENORMAL_MIN, 1e-40, -1e-40, FLT_MIN, -FLT_MIN,
    FLT_MAX, -FLT_MAX, 1e38, -1e38, 1e30, -1e30, 1e-30, -1e-30,
    1.0, -1.0, 0.5, -2.5, 3.0, 88.75, -88.75, 104.0, -104.0, 20.0, -20.0,
]
# Ordinary stand-in for an element (or row) ORT does not answer consistently.
NEUTRAL = 1.0
OPSET = 17
ROWS = "rows"  # the dynamic leading dim of every case

REPO = pathlib.Path(__file__).resolve().parents[2]


def agree(actual, expected, rtol=1e-3, atol=1e-3):
    """The comparison rule of graph/tensor_compare.h, elementwise: NaN matches
    NaN, an infinity matches the same infinity, finite values match within
    atol + rtol*|expected|."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    with np.errstate(invalid="ignore"):
        same_inf = np.isinf(a) & np.isinf(e) & (a == e)
        finite = np.isfinite(a) & np.isfinite(e)
        close = finite & (np.abs(a - e) <= atol + rtol * np.abs(e))
    return both_nan | same_inf | close


class Case:
    """One model with one input set. `row_axes`: the trailing axes a row op
    normalizes or reduces (reversing them must not change ORT's answer);
    None for elementwise cases."""

    def __init__(self, name, what, nodes, inputs, outputs, initializers=(), row_axes=None, weight_rows=None,
                 float64_check=False, opset=OPSET, line_axis=None):
        self.name = name
        # A middle axis the op reduces or normalizes (row_axes are trailing):
        # its lines are permuted like rows, and a whole x[i] is neutralized.
        self.line_axis = line_axis
        self.opset = opset  # OPSET, or the first opset that has the op (Mish: 18)
        self.what = what
        self.nodes = nodes
        self.inputs = inputs  # [(name, array, shape with ROWS for dim 0 or None for static)]
        self.outputs = outputs  # [(name, numpy dtype)]
        self.initializers = list(initializers)
        self.row_axes = row_axes
        # (name, axis) of a GEMM weight whose K axis is permuted with the input's.
        self.weight_rows = weight_rows
        # Sums (reductions, GEMMs): also compare with ORT in float64.
        self.float64_check = float64_check
        self.neutralized = []  # reasons, one per replaced element/row
        self.notes = []

    def model(self):
        def info(name, arr, dynamic):
            shape = list(arr.shape)
            if dynamic and shape:
                shape[0] = ROWS
            return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), shape)

        def build(outputs):
            graph = helper.make_graph(
                self.nodes, self.name, [info(n, a, d) for n, a, d in self.inputs], outputs,
                initializer=[numpy_helper.from_array(np.asarray(v), name=n) for n, v in self.initializers])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                      producer_name="shapeshift bench/peers/special_values.py")
            model.ir_version = 8
            return model

        # Output shapes (symbolic in `rows`) come from ONNX shape inference.
        untyped = build([helper.make_value_info(n, onnx.TypeProto()) for n, _ in self.outputs])
        inferred_graph = onnx.shape_inference.infer_shapes(untyped, strict_mode=True).graph
        inferred = {v.name: v for v in list(inferred_graph.value_info) + list(inferred_graph.output)}
        outputs = []
        for n, t in self.outputs:
            shape = [d.dim_param or d.dim_value for d in inferred[n].type.tensor_type.shape.dim]
            outputs.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), shape))
        model = build(outputs)
        onnx.checker.check_model(model, full_check=True)
        return model


def run_ort(model, feeds, optimize):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def feeds_of(case):
    return {n: a for n, a, _ in case.inputs}


def permute_rows(arr, order, row_axes):
    """arr with the elements of each row (its trailing len(row_axes) axes,
    flattened) taken in `order`."""
    axes = len(row_axes)
    flat = arr.reshape(arr.shape[: arr.ndim - axes] + (-1,))
    return flat[..., order].reshape(arr.shape)


def permuted_model(case, model, order):
    """The model with its float initializers that span the row (gamma, beta)
    permuted like the rows."""
    permuted = onnx.ModelProto()
    permuted.CopyFrom(model)
    row_size = int(np.prod([case.inputs[0][1].shape[a] for a in case.row_axes]))
    for i, init in enumerate(permuted.graph.initializer):
        arr = numpy_helper.to_array(init)
        if case.weight_rows and init.name == case.weight_rows[0]:
            arr = np.take(arr, order, axis=case.weight_rows[1]).copy()
        elif case.weight_rows is None and arr.dtype == F32 and arr.ndim >= len(case.row_axes) and arr.size == row_size:
            arr = permute_rows(arr, order, case.row_axes).copy()
        else:
            continue
        permuted.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, name=init.name))
    return permuted


def float64_model(model):
    """The model with every f32 tensor (inputs, outputs, initializers,
    constant attributes) in float64, or None when it has other f32 uses."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    for v in list(wide.graph.input) + list(wide.graph.output) + list(wide.graph.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.DOUBLE
    for i, init in enumerate(wide.graph.initializer):
        arr = numpy_helper.to_array(init)
        if arr.dtype == F32:
            wide.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr.astype(np.float64), name=init.name))
    for node in wide.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float64)))
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.DOUBLE
    return wide


def disagreement(a, b):
    return ~agree(a, b) if a.dtype.kind == "f" else (a != b)


def unstable_masks(case, model, outputs):
    """(mask, reason) pairs: the output elements where ORT gives another answer
    with graph optimizations off, and (row cases) when the row's elements are
    reversed or rotated (every element comes first once)."""
    found = []
    for i, unoptimized in enumerate(run_ort(model, feeds_of(case), optimize=False)):
        mask = disagreement(outputs[i], unoptimized)
        if mask.any():
            found.append((mask, "without graph optimizations", unoptimized, outputs[i]))
    if case.float64_check:
        # Finite f32 answers that float64 does not reproduce are rounding (a
        # huge term absorbing the others before it cancels), not semantics;
        # an f32 overflow (inf, or NaN from inf - inf) is kept.
        wide_feeds = {n: (a.astype(np.float64) if a.dtype == F32 else a) for n, a, _ in case.inputs}
        try:
            wide_outputs = run_ort(float64_model(model), wide_feeds, optimize=True)
        except ort.capi.onnxruntime_pybind11_state.NotImplemented as e:  # no float64 kernel (Erf)
            case.notes.append(f"no float64 check: {str(e).splitlines()[0]}")
            wide_outputs = []
        for i, wide in enumerate(wide_outputs):
            if outputs[i].dtype != F32:
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                narrowed = wide.astype(F32)
            mask = np.isfinite(outputs[i]) & np.isfinite(narrowed) & disagreement(outputs[i], narrowed)
            if mask.any():
                found.append((mask, "in float64 (its f32 answer is rounding)", narrowed, outputs[i]))
    if case.line_axis is not None:
        x = case.inputs[0][1]
        n = x.shape[case.line_axis]
        shuffles = np.random.RandomState(99)
        orders = ([("reversed", np.arange(n)[::-1])] +
                  [(f"rotated by {k}", np.roll(np.arange(n), -k)) for k in range(1, n)] +
                  [(f"shuffled (seed 99, #{k})", shuffles.permutation(n)) for k in range(4)])
        for label, order in orders:
            feeds = {name: np.take(arr, order, axis=case.line_axis).copy() if arr is x else arr
                     for name, arr, _ in case.inputs}
            for i, out in enumerate(run_ort(model, feeds, optimize=True)):
                if out.shape == x.shape:
                    out = np.take(out, np.argsort(order), axis=case.line_axis)
                mask = disagreement(outputs[i], out)
                if mask.any():
                    found.append((mask, f"with each line {label}", out, outputs[i]))
    if case.row_axes:
        x = case.inputs[0][1]
        row_shape = tuple(x.shape[a] for a in case.row_axes)
        n = int(np.prod(row_shape))
        shuffles = np.random.RandomState(99)
        orders = ([("reversed", np.arange(n)[::-1])] +
                  [(f"rotated by {k}", np.roll(np.arange(n), -k)) for k in range(1, n)] +
                  [(f"shuffled (seed 99, #{k})", shuffles.permutation(n)) for k in range(4)])
        for label, order in orders:
            inverse = np.argsort(order)
            feeds = {}
            for name, arr, _ in case.inputs:
                spans_row = arr.dtype == F32 and arr.ndim == x.ndim and arr.shape[x.ndim - len(row_shape):] == row_shape
                feeds[name] = permute_rows(arr, order, case.row_axes).copy() if spans_row else arr
            for i, out in enumerate(run_ort(permuted_model(case, model, order), feeds, optimize=True)):
                if out.ndim == x.ndim and out.shape[x.ndim - len(row_shape):] == row_shape:
                    out = permute_rows(out, inverse, case.row_axes)
                mask = disagreement(outputs[i], out)
                if mask.any():
                    found.append((mask, f"with each row {label}", out, outputs[i]))
    return found


def neutralize(case, unstable):
    """Replaces the input elements (elementwise cases) or rows (row cases) that
    feed an unstable output element by NEUTRAL and records why, once each."""
    x = case.inputs[0][1]
    lead = x.ndim - len(case.row_axes) if case.row_axes else case.line_axis
    done = set()
    for mask, label, other, ort_answer in unstable:
        if lead is not None and mask.shape[:lead] != x.shape[:lead]:
            continue
        for index in map(tuple, np.argwhere(mask)):
            key = index if lead is None else index[:lead]
            if key in done:
                continue
            done.add(key)
            where = list(map(int, key))
            why = f"ORT {label} gives {float(other[index])!r} instead of {float(ort_answer[index])!r}"
            for name, arr, _ in case.inputs:
                if arr.dtype != F32:
                    continue
                if lead is None and arr.shape == mask.shape:
                    case.neutralized.append(f"{name}{where} = {float(arr[key])!r}: {why}")
                    arr[key] = NEUTRAL
                elif lead is not None and arr.shape[:lead] == x.shape[:lead]:
                    case.neutralized.append(f"{name} row {where}: {why}")
                    arr[key] = NEUTRAL


def stabilize(case):
    """Neutralizes inputs until ORT answers every element one way; returns the
    model and ORT's (optimized) outputs."""
    model = case.model()
    for _ in range(8):
        outputs = run_ort(model, feeds_of(case), optimize=True)
        unstable = unstable_masks(case, model, outputs)
        if not unstable:
            return model, outputs
        neutralize(case, unstable)
    raise RuntimeError(f"{case.name}: ORT still unstable after neutralizing inputs")


# ---------------------------------------------------------------------------
# Input layouts

def palette_rows(length=40, rows=4):
    """The palette in `rows` rotations, cycled to `length`: every value lands in
    the vector body and in the masked tail of a compiled loop (40 = 2*16 + 8)."""
    base = np.array(PALETTE, dtype=F32)
    cycled = np.resize(base, length)
    return np.stack([np.roll(cycled, 7 * r) for r in range(rows)]).astype(F32)


def palette_pairs():
    """Every ordered pair of palette values, as two equally shaped tensors."""
    p = np.array(PALETTE, dtype=F32)
    a, b = np.meshgrid(p, p, indexing="ij")
    return a.astype(F32).copy(), b.astype(F32).copy()


def special_rows(n, for_sums=False):
    """Rows of length n for row ops: one special among ordinary values, specials
    together, all-special rows, overflowing sums and squares (and huge terms
    that cancel: in a sum, every order absorbs other ordinary terms into them,
    which the shuffled-row check neutralizes), tiny rows.
    `for_sums` leaves out the row of alternating +-3e38: its partial sums
    overflow in ORT's vector lanes (NaN) in almost every order, while its
    exact sum (and a sequential one) is 0, so no answer is the semantics of
    a sum; layer norm keeps it (its squares overflow either way)."""
    rng = np.random.RandomState(1234)
    ordinary = lambda: rng.uniform(-3, 3, n).astype(F32)
    rows = []

    def with_values(values, positions):
        row = ordinary()
        for v, p in zip(values, positions):
            row[p % n] = v
        rows.append(row)

    rows.append(ordinary())
    for v in (NAN, INF, -INF, FLT_MAX, -FLT_MAX, DENORMAL_MIN, -0.0, 1e30):
        with_values([v], [0])
        with_values([v], [n - 1])
        with_values([v], [n // 2 + 1])
    with_values([INF, -INF], [1, n - 2])
    with_values([INF, INF], [0, 3])
    with_values([NAN, INF], [2, 5])
    with_values([FLT_MAX, FLT_MAX], [0, n - 1])  # a sum that overflows
    with_values([3e38, -3e38], [1, 2])  # squares that overflow, sum that does not
    with_values([1e20, -1e20], [0, 1])  # squares that overflow
    rows.append(np.full(n, NAN, F32))
    rows.append(np.full(n, -INF, F32))
    rows.append(np.full(n, INF, F32))
    rows.append(np.full(n, FLT_MAX, F32))
    rows.append(np.full(n, -0.0, F32))
    rows.append(np.full(n, DENORMAL_MIN, F32))
    rows.append(np.full(n, 1e-30, F32))
    if not for_sums:
        rows.append(np.where(np.arange(n) % 2 == 0, 3e38, -3e38).astype(F32))
    rows.append(np.resize(np.array(PALETTE, F32), n))
    return np.stack(rows).astype(F32)


# ---------------------------------------------------------------------------
# Cases

def unary(op, attrs=None, name=None, extra_inputs=(), initializers=(), out_type=F32, opset=OPSET):
    x = palette_rows()
    node = helper.make_node(op, ["x"] + list(extra_inputs), ["y"], **(attrs or {}))
    return Case(name or op.lower(), f"{op} on every palette value", [node], [("x", x, True)], [("y", out_type)],
                initializers, opset=opset)


def binary(op, name=None, attrs=None, out_type=F32):
    a, b = palette_pairs()
    node = helper.make_node(op, ["a", "b"], ["y"], **(attrs or {}))
    return Case(name or op.lower(), f"{op} on every pair of palette values", [node],
                [("a", a, True), ("b", b, True)], [("y", out_type)])


def c(value, dtype=F32):
    return np.asarray(value, dtype=dtype)


def elementwise_cases():
    cases = [unary(op) for op in ("Relu", "Neg", "Abs", "Exp", "Log", "Sqrt", "Tanh", "Erf", "Sigmoid",
                                  "Reciprocal")]
    cases.append(unary("LeakyRelu", {"alpha": 0.1}, name="leaky_relu"))
    # ONNX's parameterized activations, default attributes and others.
    cases += [unary(op) for op in ("Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign")]
    cases.append(unary("Mish", opset=18))  # ONNX has Mish from opset 18
    cases.append(unary("Elu", {"alpha": 0.5}, name="elu_alpha"))
    cases.append(unary("HardSigmoid", {"alpha": 0.5, "beta": 0.6}, name="hard_sigmoid_alpha_beta"))
    cases += [unary(op) for op in ("Sin", "Cos", "Floor", "Ceil", "Round", "Sign")]
    cases.append(unary("IsNaN", name="is_nan", out_type=np.bool_))
    cases.append(unary("IsInf", name="is_inf", out_type=np.bool_))
    cases.append(unary("IsInf", {"detect_negative": 0}, name="is_inf_positive", out_type=np.bool_))
    cases.append(unary("Cast", {"to": TensorProto.BOOL}, name="cast_to_bool", out_type=np.bool_))
    cases.append(unary("Clip", name="clip", extra_inputs=["lo", "hi"], initializers=[("lo", c(-1)), ("hi", c(2))]))
    cases.append(unary("Clip", name="clip_max_only", extra_inputs=["", "hi"], initializers=[("hi", c(0.5))]))
    cases.append(unary("Clip", name="clip_nan_bounds", extra_inputs=["lo", "hi"],
                       initializers=[("lo", c(NAN)), ("hi", c(NAN))]))
    for exponent, tag in ((2.0, "2"), (3.0, "3"), (0.5, "half"), (-1.0, "minus1"), (1.5, "1_5")):
        cases.append(unary("Pow", name=f"pow_const_{tag}", extra_inputs=["e"], initializers=[("e", c(exponent))]))
    cases += [binary(op) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")]
    cases.append(binary("PRelu", name="prelu"))
    cases.append(binary("Mod", name="mod_fmod", attrs={"fmod": 1}))
    for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"):
        cases.append(binary(op, name=f"{op.lower()}", out_type=np.bool_))

    a, b = palette_pairs()
    cases.append(Case("sum3", "Sum of three inputs with specials", [helper.make_node("Sum", ["a", "b", "a"], ["y"])],
                      [("a", a, True), ("b", b, True)], [("y", F32)]))
    cases.append(Case("max3", "variadic Max with specials", [helper.make_node("Max", ["a", "b", "a"], ["y"])],
                      [("a", a, True), ("b", b, True)], [("y", F32)]))
    cases.append(Case("mean3", "Mean of three inputs with specials", [helper.make_node("Mean", ["a", "b", "a"], ["y"])],
                      [("a", a, True), ("b", b, True)], [("y", F32)]))
    cond = (np.indices(a.shape).sum(axis=0) % 3 == 0)
    cases.append(Case("where", "Where choosing specials", [helper.make_node("Where", ["c", "a", "b"], ["y"])],
                      [("c", cond, True), ("a", a, True), ("b", b, True)], [("y", F32)]))

    # GELU as the torch exporter writes it (recognized into one Gelu node).
    x = palette_rows()
    erf_nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["x", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    cases.append(Case("gelu_erf", "GELU, erf form (x * (1 + erf(x / sqrt 2)) * 0.5)", erf_nodes,
                      [("x", x.copy(), True)], [("y", F32)],
                      [("sqrt2", c(1.4142135)), ("one", c(1.0)), ("half", c(0.5))]))
    tanh_nodes = [
        helper.make_node("Pow", ["x", "three"], ["x3"]),
        helper.make_node("Mul", ["x3", "k"], ["kx3"]),
        helper.make_node("Add", ["x", "kx3"], ["inner"]),
        helper.make_node("Mul", ["inner", "s"], ["u"]),
        helper.make_node("Tanh", ["u"], ["t"]),
        helper.make_node("Add", ["t", "one"], ["p"]),
        helper.make_node("Mul", ["x", "half"], ["hx"]),
        helper.make_node("Mul", ["hx", "p"], ["y"]),
    ]
    cases.append(Case("gelu_tanh", "GELU, tanh form", tanh_nodes, [("x", x.copy(), True)], [("y", F32)],
                      [("three", c(3.0)), ("k", c(0.044715)), ("s", c(0.7978845608)), ("one", c(1.0)),
                       ("half", c(0.5))]))

    # A fused chain: bias add, Relu, scale, clip, Max and Min against a second input.
    a, b = palette_pairs()
    chain = [
        helper.make_node("Add", ["a", "bias"], ["t0"]),
        helper.make_node("Relu", ["t0"], ["t1"]),
        helper.make_node("Mul", ["t1", "two"], ["t2"]),
        helper.make_node("Clip", ["t2", "lo", "hi"], ["t3"]),
        helper.make_node("Max", ["t3", "b"], ["t4"]),
        helper.make_node("Min", ["t4", "a"], ["y"]),
    ]
    bias = np.resize(np.array([0.0, 1.0, -1.0, 0.25], F32), a.shape[1])
    cases.append(Case("fused_chain", "Add+Relu+Mul+Clip+Max+Min in one kernel", chain,
                      [("a", a, True), ("b", b, True)], [("y", F32)],
                      [("bias", bias), ("two", c(2.0)), ("lo", c(-5.0)), ("hi", c(1e30))]))

    # Index remaps and generators: Transpose, Reshape, Expand, ConstantOfShape.
    x = palette_rows(length=30, rows=2)  # [2, 30]
    remap = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Shape", ["t"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["inf"],
                         value=numpy_helper.from_array(np.array([-INF], F32))),
        helper.make_node("Max", ["t", "inf"], ["m"]),
        helper.make_node("Expand", ["col", "s"], ["e"]),
        helper.make_node("Add", ["m", "e"], ["y"]),
    ]
    cases.append(Case("remap_generators", "Reshape/Transpose/Expand/ConstantOfShape(-inf) around specials", remap,
                      [("x", x, True)], [("y", F32)],
                      [("shape", c([0, 5, 6], np.int64)), ("col", np.array([[0.0], [NAN], [-0.0], [INF], [1.0], [2.0]],
                                                                           F32))]))
    return cases


def reduction_cases():
    cases = []
    x = special_rows(40, for_sums=True)
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare"):
        if op == "ReduceSum":
            node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)
            inits = [("axes", c([1], np.int64))]
        else:
            node = helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=1)
            inits = []
        cases.append(Case(op.lower().replace("reduce", "reduce_"), f"{op} over rows with specials", [node],
                          [("x", x.copy(), True)], [("y", F32)], inits, row_axes=(1,), float64_check=True))
    # Two trailing axes, no keepdims, and an epilogue (sqrt of mean + eps).
    x3 = special_rows(24, for_sums=True).reshape(-1, 4, 6)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 2], keepdims=0),
        helper.make_node("Add", ["m", "eps"], ["p"]),
        helper.make_node("Sqrt", ["p"], ["y"]),
    ]
    cases.append(Case("reduce_mean_2axes_sqrt", "ReduceMean over two trailing axes + Add + Sqrt epilogue", nodes,
                      [("x", x3, True)], [("y", F32)], [("eps", c(1e-5))], row_axes=(1, 2), float64_check=True))
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], axes=[1, 2], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["y"])]
    cases.append(Case("reduce_max_2axes_sub", "x - ReduceMax(x) over two trailing axes", nodes,
                      [("x", x3.copy(), True)], [("y", F32)], row_axes=(1, 2)))
    # The other Reduce* kinds over rows.
    for op in ("ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"):
        node = helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=1)
        name = {"ReduceProd": "reduce_prod", "ReduceL1": "reduce_l1", "ReduceL2": "reduce_l2",
                "ReduceLogSum": "reduce_log_sum", "ReduceLogSumExp": "reduce_log_sum_exp"}[op]
        cases.append(Case(name, f"{op} over rows with specials", [node], [("x", x.copy(), True)], [("y", F32)],
                          row_axes=(1,), float64_check=True))
    # Over a middle axis (the last kept: mean pooling's form, the columns kernel),
    # its lines permuted like rows.
    xt = np.ascontiguousarray(x3.transpose(0, 2, 1))  # [rows, 6, 4]: reduce the 6
    for op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"):
        if op == "ReduceSum":
            node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
            inits = [("axes", c([1], np.int64))]
        else:
            node = helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0)
            inits = []
        cases.append(Case(op.lower().replace("reduce", "reduce_") + "_middle_axis",
                          f"{op} over the middle axis of [rows, 6, 4] with specials", [node],
                          [("x", xt.copy(), True)], [("y", F32)], inits, float64_check=True, line_axis=1))
    # ArgMax/ArgMin: first index of the extreme, NaN, ties (rows of repeated values).
    for op in ("ArgMax", "ArgMin"):
        for last in (0, 1):
            node = helper.make_node(op, ["x"], ["y"], axis=1, keepdims=1, select_last_index=last)
            name = op.lower() + ("_last" if last else "")
            cases.append(Case(name, f"{op} over rows with specials, select_last_index={last}", [node],
                              [("x", x.copy(), True)], [("y", np.int64)]))
    return cases


def normalization_cases():
    cases = []
    for n in (16, 40):
        x = special_rows(n)
        cases.append(Case(f"softmax_{n}", f"Softmax over rows of {n} with specials",
                          [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                          [("x", x, True)], [("y", F32)], row_axes=(1,)))
    cases.append(Case("log_softmax_40", "LogSoftmax over rows of 40 with specials",
                      [helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)],
                      [("x", special_rows(40), True)], [("y", F32)], row_axes=(1,)))
    xm = np.ascontiguousarray(special_rows(16).reshape(-1, 4, 4).transpose(0, 2, 1))
    cases.append(Case("log_softmax_middle_axis", "LogSoftmax over the middle axis of [rows, 4, 4] with specials",
                      [helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)],
                      [("x", xm, True)], [("y", F32)], line_axis=1))
    # Attention scores: softmax(x * 0.125 + mask), mask [batch, 1, 1, k].
    rows = special_rows(16)
    batch = rows.shape[0] // 2
    x = rows[: batch * 2].reshape(batch, 2, 1, 16).repeat(2, axis=2)
    mask = np.zeros((batch, 1, 1, 16), F32)
    mask[1::4, ..., 8:] = -INF
    mask[2::4, ..., ::3] = -10000.0
    mask[3::4, ..., 0] = NAN
    mask[0, ..., :] = -INF  # a fully masked row
    nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]),
             helper.make_node("Add", ["s", "mask"], ["l"]),
             helper.make_node("Softmax", ["l"], ["y"], axis=-1)]
    cases.append(Case("softmax_scale_mask", "Softmax(x * 0.125 + additive mask [b,1,1,k])", nodes,
                      [("x", x.astype(F32), True), ("mask", mask, True)], [("y", F32)], [("scale", c(0.125))],
                      row_axes=(3,)))
    # Layer norm: rows of 8 or more (ORT switches to a scalar Welford loop below 8 on
    # x86, whose overflow behaviour differs; see tests/data/special_values/README.md).
    for n in (8, 40):
        x = special_rows(n)
        gamma = np.linspace(0.5, 1.5, n).astype(F32)
        beta = np.linspace(-0.25, 0.25, n).astype(F32)
        cases.append(Case(f"layer_norm_{n}", f"LayerNormalization over rows of {n} with specials",
                          [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1,
                                            epsilon=1e-5)],
                          [("x", x, True)], [("y", F32)], [("gamma", gamma), ("beta", beta)], row_axes=(1,)))
    n = 16
    x = special_rows(n)
    r = np.roll(special_rows(n), 3, axis=0)
    gamma = np.linspace(0.5, 1.5, n).astype(F32)
    beta = np.linspace(-0.25, 0.25, n).astype(F32)
    nodes = [helper.make_node("Add", ["x", "r"], ["s"]),
             helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5)]
    cases.append(Case("layer_norm_residual", "LayerNormalization(x + residual)", nodes,
                      [("x", x, True), ("r", r, True)], [("y", F32)], [("gamma", gamma), ("beta", beta)],
                      row_axes=(1,)))
    cases.append(Case("layer_norm_residual_sum_out", "LayerNormalization(x + residual), the sum also an output",
                      list(nodes), [("x", x.copy(), True), ("r", r.copy(), True)], [("y", F32), ("s", F32)],
                      [("gamma", gamma), ("beta", beta)], row_axes=(1,)))
    # The decompositions exporters write (recognized into one Softmax / LayerNormalization).
    x = special_rows(16)
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], axes=[-1], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Exp", ["d"], ["e"]),
             helper.make_node("ReduceSum", ["e", "axes"], ["s"], keepdims=1),
             helper.make_node("Div", ["e", "s"], ["y"])]
    cases.append(Case("softmax_decomposed", "Exp(x - ReduceMax(x)) / ReduceSum(...), recognized as Softmax", nodes,
                      [("x", x.copy(), True)], [("y", F32)], [("axes", c([-1], np.int64))], row_axes=(1,)))
    nodes = [helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
             helper.make_node("Sub", ["x", "mean"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["d2"]),
             helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["nrm"]),
             helper.make_node("Mul", ["nrm", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["y"])]
    cases.append(Case("layer_norm_decomposed", "the torch (opset < 17) layer norm decomposition, recognized", nodes,
                      [("x", x.copy(), True)], [("y", F32)],
                      [("two", c(2.0)), ("eps", c(1e-5)), ("gamma", gamma), ("beta", beta)], row_axes=(1,)))
    # Llama's RMSNorm as both exporters write it (recognized into one RMSNormalization row kernel):
    # x * Reciprocal(Sqrt(ReduceMean(x^2) + eps)) * gamma, alone and after a residual Add.
    def rms(src):
        return [helper.make_node("Pow", [src, "two"], ["sq"]),
                helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
                helper.make_node("Add", ["ms", "eps"], ["mse"]),
                helper.make_node("Sqrt", ["mse"], ["root"]),
                helper.make_node("Reciprocal", ["root"], ["inv"]),
                helper.make_node("Mul", [src, "inv"], ["nrm"]),
                helper.make_node("Mul", ["gamma", "nrm"], ["y"])]
    x = special_rows(16)
    cases.append(Case("rms_norm_decomposed", "Llama's RMSNorm decomposition, recognized as RMSNormalization",
                      rms("x"), [("x", x.copy(), True)], [("y", F32)],
                      [("two", c(2.0)), ("eps", c(1e-6)), ("gamma", gamma)], row_axes=(1,)))
    r = np.roll(special_rows(16), 5, axis=0)
    cases.append(Case("rms_norm_residual", "RMSNorm of x + residual, the sum also an output (one row kernel)",
                      [helper.make_node("Add", ["x", "r"], ["s"])] + rms("s"),
                      [("x", x.copy(), True), ("r", r, True)], [("y", F32), ("s", F32)],
                      [("two", c(2.0)), ("eps", c(1e-6)), ("gamma", gamma)], row_axes=(1,)))
    return cases


def rotary_cases():
    """Llama's rotary embedding, x * cos + rotate_half(x) * sin, as both exporters write it (two Slices or a
    Split, Neg, Concat, two Muls, an Add), recognized into one RotateHalfMulAdd row kernel, and GPT-J's
    (every_two_case). Elementwise
    cases: permuting a row would change which elements pair up. cos and sin broadcast over the heads."""
    h = 20  # a last dim of 40: each half loop has a vector body and a masked tail
    x = np.repeat(palette_rows(2 * h, rows=4)[:, None, :], 3, axis=1)  # [rows, heads, 2h]
    x[:, 1] = np.roll(x[:, 1], 13, axis=1)  # each head sees other pairs
    x[:, 2] = np.roll(x[:, 2], 27, axis=1)
    cos = np.roll(palette_rows(2 * h, rows=4), 3, axis=1)[:, None, :].copy()
    sin = np.roll(palette_rows(2 * h, rows=4), 11, axis=1)[:, None, :].copy()
    tail = [helper.make_node("Neg", ["x2"], ["neg"]),
            helper.make_node("Concat", ["neg", "x1"], ["rot"], axis=-1),
            helper.make_node("Mul", ["x", "cos"], ["xc"]),
            helper.make_node("Mul", ["rot", "sin"], ["rs"]),
            helper.make_node("Add", ["xc", "rs"], ["y"])]
    slices = [helper.make_node("Slice", ["x", "zero", "half", "last"], ["x1"]),
              helper.make_node("Slice", ["x", "half", "end", "last"], ["x2"])]
    inputs = lambda: [("x", x.copy(), True), ("cos", cos.copy(), True), ("sin", sin.copy(), True)]
    bounds = [("zero", np.array([0], np.int64)), ("half", np.array([h], np.int64)),
              ("end", np.array([np.iinfo(np.int64).max], np.int64)), ("last", np.array([-1], np.int64))]
    split = [helper.make_node("Split", ["x", "parts"], ["x1", "x2"], axis=-1)]
    return [
        Case("rope_rotate_half", "RoPE x*cos + rotate_half(x)*sin (TorchScript's Slices), one RotateHalfMulAdd",
             slices + tail, inputs(), [("y", F32)], bounds),
        Case("rope_rotate_half_split", "RoPE with rotate_half as a Split (dynamo), one RotateHalfMulAdd",
             split + tail, inputs(), [("y", F32)], [("parts", np.array([h, h], np.int64))]),
        every_two_case(),
    ]


def every_two_case():
    """GPT-J's partial rotary as both exporters write it: the first r channels of each head rotate in
    interleaved pairs (two step-2 Slices, Neg, two Unsqueezes, Concat, Reshape, the mul-add), the rest are
    concatenated back; recognized into one RotateEveryTwoMulAdd row kernel."""
    r, d = 36, 44  # the pair loop has a vector body and a masked tail, and 8 channels pass through
    x = np.repeat(palette_rows(d, rows=4)[:, None, :], 3, axis=1)  # [rows, heads, d]
    x[:, 1] = np.roll(x[:, 1], 13, axis=1)  # each head sees other pairs
    x[:, 2] = np.roll(x[:, 2], 27, axis=1)
    cos = np.roll(palette_rows(r, rows=4), 3, axis=1)[:, None, :].copy()
    sin = np.roll(palette_rows(r, rows=4), 11, axis=1)[:, None, :].copy()
    nodes = [helper.make_node("Slice", ["x", "zero", "r", "last"], ["head"]),
             helper.make_node("Slice", ["x", "r", "end", "last"], ["pass"]),
             helper.make_node("Slice", ["head", "zero", "end", "last", "two"], ["x1"]),
             helper.make_node("Slice", ["head", "one", "end", "last", "two"], ["x2"]),
             helper.make_node("Neg", ["x2"], ["neg"]),
             helper.make_node("Unsqueeze", ["neg", "last"], ["u2"]),
             helper.make_node("Unsqueeze", ["x1", "last"], ["u1"]),
             helper.make_node("Concat", ["u2", "u1"], ["stack"], axis=-1),
             helper.make_node("Reshape", ["stack", "flat"], ["rot"]),
             helper.make_node("Mul", ["head", "cos"], ["xc"]),
             helper.make_node("Mul", ["rot", "sin"], ["rs"]),
             helper.make_node("Add", ["xc", "rs"], ["rope"]),
             helper.make_node("Concat", ["rope", "pass"], ["y"], axis=-1)]
    consts = [("zero", np.array([0], np.int64)), ("one", np.array([1], np.int64)),
              ("two", np.array([2], np.int64)), ("r", np.array([r], np.int64)),
              ("end", np.array([np.iinfo(np.int64).max], np.int64)), ("last", np.array([-1], np.int64)),
              ("flat", np.array([0, 0, -1], np.int64))]
    return Case("rope_every_two_partial",
                "GPT-J's RoPE: rotate_every_two on the first 36 of 44 channels, the rest passed through; "
                "one RotateEveryTwoMulAdd", nodes, [("x", x, True), ("cos", cos, True), ("sin", sin, True)],
                [("y", F32)], consts)


def matmul_cases():
    cases = []
    k, n = 16, 24
    rng = np.random.RandomState(7)
    w = rng.uniform(-1, 1, (k, n)).astype(F32)
    w[:, 5] = 0.0  # inf * 0 = NaN in that column
    bias = rng.uniform(-0.5, 0.5, n).astype(F32)
    a = special_rows(k)
    gelu = [
        helper.make_node("MatMul", ["a", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["x"]),
        helper.make_node("Div", ["x", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["x", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    consts = [("w", w), ("bias", bias), ("sqrt2", c(1.4142135)), ("one", c(1.0)), ("half", c(0.5))]
    cases.append(Case("matmul_bias_gelu", "MatMul + bias + GELU (erf): one oneDNN matmul with post-ops", gelu,
                      [("a", a, True)], [("y", F32)], consts, row_axes=(1,), weight_rows=("w", 0), float64_check=True))
    res = np.roll(special_rows(n), 5, axis=0)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["mm"]),
             helper.make_node("Mul", ["mm", "scale"], ["s"]),
             helper.make_node("Add", ["s", "bias"], ["x"]),
             helper.make_node("Add", ["x", "r"], ["y"])]
    cases.append(Case("matmul_scale_bias_residual", "MatMul * scale + bias + residual", nodes,
                      [("a", a.copy(), True), ("r", res[: a.shape[0]].copy(), True)], [("y", F32)],
                      [("w", w), ("scale", c(0.5)), ("bias", bias)], row_axes=(1,), weight_rows=("w", 0),
                      float64_check=True))
    nodes = [helper.make_node("Gemm", ["a", "wt", "bias"], ["y"], alpha=0.5, beta=1.0, transB=1)]
    cases.append(Case("gemm_alpha_bias", "Gemm(a, w^T, bias) with alpha 0.5", nodes, [("a", a.copy(), True)],
                      [("y", F32)], [("wt", np.ascontiguousarray(w.T)), ("bias", bias)], row_axes=(1,),
                      weight_rows=("wt", 1), float64_check=True))
    return cases


def all_cases():
    return elementwise_cases() + reduction_cases() + normalization_cases() + rotary_cases() + matmul_cases()


def write_case(root, case, model, outputs):
    folder = root / case.name
    data = folder / "test_data_set_0"
    data.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    for k, (name, arr, _) in enumerate(case.inputs):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr, name=name).SerializeToString())
    for k, ((name, _), arr) in enumerate(zip(case.outputs, outputs)):
        (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, name=name).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(REPO / "tests" / "data" / "special_values"),
                        help="output folder (default: tests/data/special_values); its case folders are replaced")
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    root = pathlib.Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    cases = [c_ for c_ in all_cases() if not only or c_.name in only]
    if not only:  # stale cases go; only folders that hold a case (model.onnx) are touched
        for old in root.iterdir():
            if old.is_dir() and (old / "model.onnx").exists():
                shutil.rmtree(old)
    manifest = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__,
                "opset": OPSET, "cases": {}}
    for case in cases:
        model, outputs = stabilize(case)
        if (root / case.name).exists():
            shutil.rmtree(root / case.name)
        write_case(root, case, model, outputs)
        ops = sorted({node.op_type for node in case.nodes})
        manifest["cases"][case.name] = {"what": case.what, "ops": ops, "neutralized": case.neutralized}
        if case.notes:
            manifest["cases"][case.name]["notes"] = sorted(set(case.notes))
        note = f" ({len(case.neutralized)} neutralized)" if case.neutralized else ""
        print(f"special_values: {case.name}: {', '.join(ops)}{note}")
    if only:
        old = json.loads((root / "cases.json").read_text()) if (root / "cases.json").exists() else {"cases": {}}
        old["cases"].update(manifest["cases"])
        manifest["cases"] = dict(sorted(old["cases"].items()))
    (root / "cases.json").write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    all_ops = sorted({op for entry in manifest["cases"].values() for op in entry["ops"]})
    print(f"special_values: {len(manifest['cases'])} cases, {len(all_ops)} op types, written to {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
