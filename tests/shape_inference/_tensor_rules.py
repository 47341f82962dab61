"""Helpers for the shape-rule tests of the tensor and reduce families.

Models are built with onnx.helper (tests only). onyx's inference is compared with onnx's own (strict
mode: onyx must never disagree with an element type, rank or static dim onnx knows) and with the
outputs of the official node-suite cases, whose symbolic variants are checked by evaluating the
inferred symbolic dims at the inputs' real sizes.
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
from onnx import numpy_helper

import onyx
from onyx.ir.dtypes import from_numpy
from onyx.ir.symbolic import Sym, parse_dim
from onyx.ir.types import TensorType
from tests.shape_inference._oprules import onnx_types as onnx_types  # re-exported for the tests
from tests.shape_inference._oprules import registered_ops
from tests.shape_inference._oprules import same_as_onnx as _same_as_onnx

OPS_DIR = Path(onyx.__file__).parent / "ops"


@functools.cache
def family_ops(*families: str) -> frozenset[str]:
    """Every op type registered (default domain) in src/onyx/ops/<family>/."""
    return registered_ops(*families)


MINE = family_ops("tensor", "reduce")


def model(
    op_type: str,
    inputs: list[tuple],
    attrs: dict | None = None,
    opset: int = 21,
    n_out: int = 1,
    inits: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """One node; ``inputs`` are (name, elem, dims) with dims a list (ints/str/None) or None (no rank);
    an empty name is an absent optional input; ``inits`` gives initializers (known values)."""
    inits = inits or {}
    vis = [
        oh.make_tensor_value_info(name, elem, dims)
        for name, elem, dims in inputs
        if name and name not in inits
    ]
    node = oh.make_node(op_type, [i[0] for i in inputs], [f"y{k}" for k in range(n_out)], **(attrs or {}))
    g = oh.make_graph(
        [node],
        "g",
        vis,
        [oh.make_empty_tensor_value_info(f"y{k}") for k in range(n_out)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)], ir_version=10)


def graph_model(nodes, inputs, outputs, inits=None, opset: int = 21) -> onnx.ModelProto:
    """A model of several nodes: ``inputs`` (name, elem, dims), ``outputs`` names (untyped)."""
    g = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info(n, e, d) for n, e, d in inputs],
        [oh.make_empty_tensor_value_info(n) for n in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)], ir_version=10)


def _dim(d):
    if d is None or isinstance(d, int):
        return d
    return parse_dim(d)


def onyx_types(m: onnx.ModelProto, strict: bool = True) -> dict[str, tuple[int | None, list | None]]:
    """Each node output's (elem, dims) after onyx's inference; dims ints, Sym or None."""
    om = onyx.load(m.SerializeToString())
    onyx.infer_shapes(om, strict=strict)
    out = {}
    for node in om.graph.walk():
        for v in node.outputs:
            t = v.type
            if isinstance(t, TensorType):
                dims = None if t.shape is None else [_dim(d) for d in t.shape.dims]
                out[v.name] = (t.elem_type or None, dims)
            else:
                out[v.name] = (None, None)
    return out


def same_as_onnx(m: onnx.ModelProto, names: bool = False) -> dict:
    """_oprules.same_as_onnx with this module's onyx_types; named dims checked only with ``names``."""
    return _same_as_onnx(m, infer=onyx_types, names=names, render=dims_str)


def dims_str(dims) -> list | None:
    return None if dims is None else [d if d is None or isinstance(d, int) else str(d) for d in dims]


def evaluate(d, env: dict[str, int]) -> int | None:
    """A dim's value with the named dims set from ``env`` (None: not evaluable). Symbolic dims are
    evaluated from their text (what is written into the model): products, sums and the ``(a)//(b)``
    and ``(a)%(b)`` that Sym writes for inexact division."""
    if isinstance(d, int):
        return d
    if not isinstance(d, Sym):
        return None
    text = str(d)
    missing = []

    def name(m: re.Match) -> str:
        if m.group(0) not in env:
            missing.append(m.group(0))
            return "0"
        return str(env[m.group(0)])

    expr = re.sub(r"[A-Za-z_][\w.:]*", name, text)
    if missing or not re.fullmatch(r"[\d+\-*/%() ]*", expr):
        return None
    return int(eval(expr, {"__builtins__": {}}))  # noqa: S307 - digits and operators only


# ---------------------------------------------------------------------------------------------
# the official node suite

#: node-suite modules (onnx/backend/test/case/node/*.py) that hold my ops' cases
SUITE_MODULES = """
argmax argmin cast castlike center_crop_pad compress concat constant constantofshape depthtospace
expand eyelike flatten gather gatherelements gathernd identity nonzero onehot pad rangeop
reduce_log_sum reduce_log_sum_exp reducel1 reducel2 reducemax reducemean reducemin reduceprod
reducesum reducesumsquare reshape reversesequence scatter scatterelements scatternd shape size slice
spacetodepth split squeeze tensorscatter tile topk transpose trilu unique unsqueeze
""".split()


@functools.cache
def suite_cases() -> tuple:
    """Node-suite cases whose ops are all from the tensor and reduce families (importing only the
    modules that hold them: collecting the whole suite takes ~10 s)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        node = importlib.import_module("onnx.backend.test.case.node")
        for name in SUITE_MODULES:
            importlib.import_module(f"onnx.backend.test.case.node.{name}")
        cases = list(node._NodeTestCases)
    out = []
    for c in cases:
        if any(n.domain not in ("", "ai.onnx") for n in c.model.graph.node):
            continue
        if {n.op_type for n in c.model.graph.node} <= MINE and c.data_sets:
            out.append(c)
    return tuple(sorted(out, key=lambda c: c.name))


def _variant(m: onnx.ModelProto, inputs: list, params: bool, symbolic: bool) -> tuple[onnx.ModelProto, dict]:
    """The case's model with untyped outputs and no value_info (so that the rules do the work).

    ``params``: small integer inputs after the first of a node (shapes, axes, pads, k...) become
    initializers, so that rules see their values. ``symbolic``: the other inputs' dims become names
    ``d<size>``; returns the names' values too."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    g = m2.graph
    del g.value_info[:]
    names = [o.name for o in g.output]
    del g.output[:]
    g.output.extend(oh.make_empty_tensor_value_info(n) for n in names)
    env: dict[str, int] = {}
    if params:
        first = {n.input[0] for n in g.node if n.input and n.op_type != "ConstantOfShape"}
        keep = []
        for vi, arr in zip(list(g.input), inputs):
            a = np.asarray(arr) if isinstance(arr, np.ndarray | np.generic) else None
            if a is not None and vi.name not in first and a.dtype.kind in "iufb" and a.size <= 16:
                g.initializer.append(numpy_helper.from_array(a, vi.name))
            else:
                keep.append(vi)
        del g.input[:]
        g.input.extend(keep)
    if symbolic:
        for vi in g.input:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                for d in vi.type.tensor_type.shape.dim:
                    if d.HasField("dim_value"):
                        v = d.dim_value
                        d.Clear()
                        d.dim_param = f"d{v}"
                        env[f"d{v}"] = v
    return m2, env


def check_case(case) -> list[str]:
    """Infer the case's outputs in three ways (as given; with shape-like inputs known; and with
    those known and every other dim named) and compare element types, ranks and dims with the
    expected outputs. Static inputs must give every dim that does not depend on the data (such
    dims get fresh ``unk__`` symbols); named inputs must give dims that evaluate to the real
    sizes. Returns the names of the variants where a dim stayed unknown (a miss, not an error)."""
    inputs, expected = case.data_sets[0]
    names = [o.name for o in case.model.graph.output]
    misses = []
    for label, params, symbolic in (("static", False, False), ("params", True, False), ("named", True, True)):
        m, env = _variant(case.model, list(inputs), params, symbolic)
        got = onyx_types(m)
        for name, arr in zip(names, expected):
            if not isinstance(arr, np.ndarray):
                continue
            where = f"{case.name} [{label}] {name}"
            elem, dims = got[name]
            want = int(from_numpy(arr.dtype))
            assert elem == want, f"{where}: elem {elem}, expected {want}"
            if dims is None:
                misses.append(f"{where}: rank unknown")
                continue
            assert len(dims) == arr.ndim, f"{where}: dims {dims_str(dims)}, expected {arr.shape}"
            for k, (d, n) in enumerate(zip(dims, arr.shape)):
                if isinstance(d, Sym) and any(s.startswith("unk__") for m_ in d.terms for s in m_):
                    continue  # data-dependent
                v = evaluate(d, env)
                if v is None:
                    misses.append(f"{where}: dim {k} {d}")
                    continue
                assert v == n, f"{where} dim {k}: {dims_str(dims)} (= {v}), expected {arr.shape}"
    return misses


def fuzz(iterations: int, seed: int = 0) -> list[str]:
    """Node-suite models with mutated input shapes (unknown ranks, other ranks, named/unknown dims),
    attributes (dropped, odd axes) and initializer values: inference may report a contradiction
    (an onyx error) but must never crash. Returns the crashes."""
    import random
    import traceback

    from onyx.errors import OnyxError

    rng = random.Random(seed)
    cases = suite_cases()
    crashes = []
    for _ in range(iterations):
        c = rng.choice(cases)
        m, _ = _variant(c.model, list(c.data_sets[0][0]), rng.random() < 0.7, rng.random() < 0.5)
        g = m.graph
        for vi in g.input:
            if not vi.type.HasField("tensor_type") or rng.random() < 0.5:
                continue
            tt = vi.type.tensor_type
            rank = len(tt.shape.dim) + rng.choice([-1, 0, 0, 1])
            tt.ClearField("shape")
            if rng.random() < 0.3:
                continue
            tt.shape.SetInParent()
            for _ in range(max(rank, 0)):
                d = tt.shape.dim.add()
                x = rng.random()
                if x < 0.3:
                    d.dim_param = rng.choice(["N", "seq", "a"])
                elif x >= 0.4:
                    d.dim_value = rng.choice([0, 1, 2, 3, 4, 6])
        for node in g.node:
            for a in list(node.attribute):
                x = rng.random()
                if x < 0.1:
                    node.attribute.remove(a)
                elif x < 0.3 and a.type == onnx.AttributeProto.INT:
                    a.i = rng.choice([-3, -1, 0, 1, 2, 5])
                elif x < 0.4 and a.type == onnx.AttributeProto.INTS:
                    del a.ints[:]
                    a.ints.extend(rng.sample([-2, -1, 0, 1, 2, 3], rng.randrange(0, 4)))
        for init in g.initializer:
            a = numpy_helper.to_array(init)
            if rng.random() < 0.3 and a.dtype.kind in "iu" and a.size:
                a = a.copy().reshape(-1)
                big = [2**62, -(2**62)] if a.dtype == np.int64 else []
                a[rng.randrange(a.size)] = rng.choice([-5, -1, 0, 1, 7, *big])
                init.CopyFrom(
                    numpy_helper.from_array(a.reshape(numpy_helper.to_array(init).shape), init.name)
                )
        for strict in (False, True):
            try:
                onyx_types(m, strict=strict)
            except OnyxError:
                pass
            except Exception:  # noqa: BLE001 - what the fuzzer looks for
                crashes.append(f"{c.name}: {traceback.format_exc()[-600:]}")
    return crashes
