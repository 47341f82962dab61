"""Helpers for the shape-rule tests of the math, activation and linalg families.

Models are built with onnx.helper (tests only); onyx's inference is compared with onnx's own
(strict mode) and with the outputs of the official node-suite cases.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
from onnx import numpy_helper

import onyx
from onyx.ir.dtypes import from_numpy
from onyx.ir.symbolic import Sym, parse_dim
from onyx.ir.types import TensorType

OPS_DIR = Path(onyx.__file__).parent / "ops"


@functools.cache
def registered_ops(*families: str, default_domain: bool = True) -> frozenset[str]:
    """Every op type with a kernel defined in src/onyx/ops/<family>/ (in an op's file or in a helper
    module of the family that builds it), of the default domain only unless ``default_domain`` is
    False."""
    from onyx.ops import registry

    registry.load_all()
    prefixes = tuple(f"onyx.ops.{f}." for f in families)
    return frozenset(
        op
        for (domain, op), kernels in registry._registry.items()
        if (domain == "" or not default_domain) and any(k.fn.__module__.startswith(prefixes) for k in kernels)
    )


def family_ops(family: str) -> frozenset[str]:
    """Every op type registered (default domain) in src/onyx/ops/<family>/."""
    return registered_ops(family)


MINE = ("math", "activation", "linalg")


def all_mine() -> frozenset[str]:
    return frozenset().union(*(family_ops(f) for f in MINE))


def model(
    op_type: str,
    inputs: list[tuple],
    attrs: dict | None = None,
    opset: int = 21,
    n_out: int = 1,
    inits: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """One node; ``inputs`` are (name, elem, dims) with dims a list (ints/str/None) or None (no rank);
    an empty name is an absent optional input. Outputs carry no type. ``inits`` are initializers."""
    inits = inits or {}
    vis = []
    for name, elem, dims in inputs:
        if not name or name in inits:
            continue
        vis.append(oh.make_tensor_value_info(name, elem, dims))
    node = oh.make_node(op_type, [i[0] for i in inputs], [f"y{k}" for k in range(n_out)], **(attrs or {}))
    g = oh.make_graph(
        [node],
        "g",
        vis,
        [oh.make_empty_tensor_value_info(f"y{k}") for k in range(n_out)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
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
    for node in om.graph.nodes:
        for v in node.outputs:
            t = v.type
            if isinstance(t, TensorType):
                dims = None if t.shape is None else [_dim(d) for d in t.shape.dims]
                out[v.name] = (t.elem_type or None, dims)
            else:
                out[v.name] = (None, None)
    return out


def infer(op_type: str, inputs: list[tuple], attrs: dict | None = None, **kw):
    """(elem, dims) of output 0 by onyx."""
    return onyx_types(model(op_type, inputs, attrs, **kw))["y0"]


def onnx_types(m: onnx.ModelProto) -> dict[str, tuple[int | None, list | None]]:
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        out[vi.name] = (tt.elem_type or None, dims)
    return out


def same_as_onnx(m: onnx.ModelProto, infer=None, names: bool = True, render=None) -> dict:
    """Infer with onyx (``infer``, default onyx_types) and with onnx; assert onyx knows every elem, rank
    and static dim onnx knows and, with ``names``, the named dims onnx passes through (not its unk__
    ones). Returns onyx's types. ``render`` formats dims in messages (default dims_str)."""
    ours = (infer or onyx_types)(m)
    theirs = onnx_types(m)
    show = render or dims_str
    for name, (elem, dims) in theirs.items():
        if name not in ours:
            continue
        o_elem, o_dims = ours[name]
        if elem:
            assert o_elem == elem, f"{name}: onyx elem {o_elem}, onnx {elem}"
        if dims is None:
            continue
        assert o_dims is not None, f"{name}: onyx lost the rank; onnx gives {dims}"
        assert len(o_dims) == len(dims), f"{name}: onyx {show(o_dims)}, onnx {dims}"
        for k, (a, b) in enumerate(zip(o_dims, dims)):
            if isinstance(b, int):
                assert a == b, f"{name} dim {k}: onyx {show(o_dims)}, onnx {dims}"
            elif names and isinstance(b, str) and not b.startswith("unk__"):
                assert str(a) == b, f"{name} dim {k}: onyx {show(o_dims)}, onnx {dims}"
    return ours


def dims_str(dims) -> list | None:
    """Dims as ints, names, or None for unknown (a fresh ``unk__k`` name says no more than None)."""
    if dims is None:
        return None
    return [
        d if d is None or isinstance(d, int) else (None if str(d).startswith("unk__") else str(d))
        for d in dims
    ]


# ---------------------------------------------------------------------------------------------
# the official node suite


@dataclass(frozen=True)
class SuiteCase:
    """A node-suite case reduced to what shape tests need: the model and each output's (elem, shape)
    (None for a non-tensor output)."""

    name: str
    model: onnx.ModelProto
    outputs: tuple


def _reduce(case) -> SuiteCase:
    expected = case.data_sets[0][1] if case.data_sets else []
    outs = tuple(
        (int(from_numpy(a.dtype)), tuple(a.shape)) if isinstance(a, np.ndarray) else None for a in expected
    )
    return SuiteCase(case.name, case.model, outs)


def _outs(stored: list) -> list:
    return [None if o is None else (int(o[0]), tuple(o[1])) for o in stored]


@functools.cache
def _cases() -> tuple[SuiteCase, ...]:
    """The node suite's cases whose ops are all from my families. Generating the suite takes seconds,
    so the reduced cases are kept in a cache file per onnx version (in the temp folder)."""
    path = Path(tempfile.gettempdir()) / f"onyx-oprules-suite-{onnx.__version__}-{len(all_mine())}.json"
    try:
        stored = json.loads(path.read_text())
        return tuple(
            SuiteCase(n, onnx.load_from_string(base64.b64decode(m)), tuple(_outs(o))) for n, m, o in stored
        )
    except Exception:  # noqa: BLE001 - no cache yet, or an unreadable one: generate
        pass
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        mine = all_mine()
        cases = []
        for c in collect_testcases():
            nodes = c.model.graph.node
            if any(n.domain not in ("", "ai.onnx") for n in nodes) or not {n.op_type for n in nodes} <= mine:
                continue
            cases.append(_reduce(c))
    try:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        stored = [(c.name, base64.b64encode(c.model.SerializeToString()).decode(), c.outputs) for c in cases]
        tmp.write_text(json.dumps(stored))
        os.replace(tmp, path)
    except OSError:
        pass
    return tuple(cases)


def suite_cases(family: str) -> list[SuiteCase]:
    """Node-suite cases whose ops (default domain) are all from my families, one at least from
    ``family``."""
    fam = family_ops(family)
    return [c for c in _cases() if {n.op_type for n in c.model.graph.node} & fam]


def _strip(m: onnx.ModelProto, symbolic: bool) -> onnx.ModelProto:
    """The case's model with untyped outputs and no value_info (so that the rules do the work);
    with ``symbolic``, every input dim replaced by a fresh name."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    g = m2.graph
    del g.value_info[:]
    names = [o.name for o in g.output]
    del g.output[:]
    g.output.extend(oh.make_empty_tensor_value_info(n) for n in names)
    if symbolic:
        for i, vi in enumerate(g.input):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                for k, d in enumerate(vi.type.tensor_type.shape.dim):
                    d.Clear()
                    d.dim_param = f"s{i}_{k}"
    return m2


def check_case(case: SuiteCase) -> None:
    """The inferred outputs of a node-suite case agree with its expected outputs: element type, rank
    and static dims (all of them when the inputs are static; those onyx claims when they are named)."""
    names = [o.name for o in case.model.graph.output]
    for symbolic in (False, True):
        got = onyx_types(_strip(case.model, symbolic))
        for name, expected in zip(names, case.outputs):
            if expected is None:
                continue
            want_elem, shape = expected
            elem, dims = got[name]
            assert elem == want_elem, f"{case.name} {name}: elem {elem}, expected {want_elem}"
            assert dims is not None, f"{case.name} {name}: rank unknown, expected {shape}"
            assert len(dims) == len(shape), f"{case.name} {name}: dims {dims_str(dims)}, expected {shape}"
            for k, (d, n) in enumerate(zip(dims, shape)):
                if symbolic:
                    assert d is None or isinstance(d, Sym) or d == n, (
                        f"{case.name} {name} (named inputs) dim {k}: {d}, expected {n}"
                    )
                else:
                    assert d == n, f"{case.name} {name} dim {k}: {dims_str(dims)}, expected {shape}"
