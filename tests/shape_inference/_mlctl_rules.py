"""Helpers for the shape-rule tests of the rnn, quant, ml, control, sequence, optional, string,
random, signal, image and training families.

Models are built with onnx.helper (tests only). onyx's inference is compared with onnx's own (strict
mode) where onnx knows the op, with the outputs of onnxruntime/onyx runs for ai.onnx.ml (onnx's
inference knows little of it), and with the expected outputs of the official node-suite cases.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
from onnx import numpy_helper

import onyx
from onyx.ir.dtypes import from_numpy
from onyx.ir.symbolic import Sym, parse_dim
from onyx.ir.types import MapType, OptionalType, SequenceType, TensorType
from tests.shape_inference._oprules import dims_str, registered_ops
from tests.shape_inference._oprules import onnx_types as onnx_types  # re-exported for the tests
from tests.shape_inference._oprules import same_as_onnx as _same_as_onnx

OPS_DIR = Path(onyx.__file__).parent / "ops"
FAMILIES = (
    "rnn",
    "quant",
    "ml",
    "control",
    "sequence",
    "optional",
    "string",
    "random",
    "signal",
    "image",
    "training",
)
RANDOM_OPS = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}


def family_ops(family: str) -> frozenset[str]:
    """Every op type registered in src/onyx/ops/<family>/ (any domain)."""
    return registered_ops(family, default_domain=False)


def all_mine() -> frozenset[str]:
    return frozenset().union(*(family_ops(f) for f in FAMILIES))


# ---------------------------------------------------------------------------------------------
# building models


def vi(name: str, elem: int, dims) -> onnx.ValueInfoProto:
    return oh.make_tensor_value_info(name, elem, dims)


def model(
    op_type: str,
    inputs: list[tuple],
    attrs: dict | None = None,
    *,
    opset: int = 21,
    ml: int | None = None,
    domain: str = "",
    n_out: int = 1,
    inits: dict[str, np.ndarray] | None = None,
    extra_opsets: dict[str, int] | None = None,
) -> onnx.ModelProto:
    """One node. ``inputs``: (name, elem, dims) tensor inputs (dims None: no rank), or (name,
    TypeProto) for other types; an empty name is an absent optional input. Outputs y0.. carry no
    type. ``inits``: initializers by name (their inputs need no entry's type)."""
    inits = inits or {}
    vis = []
    for inp in inputs:
        name = inp[0]
        if not name or name in inits:
            continue
        if len(inp) == 2:
            vis.append(oh.make_value_info(name, inp[1]))
        else:
            vis.append(vi(name, inp[1], inp[2]))
    node = oh.make_node(
        op_type,
        [i[0] for i in inputs],
        [f"y{k}" for k in range(n_out)],
        domain=domain or None,
        **(attrs or {}),
    )
    return graph_model(
        [node],
        vis,
        [f"y{k}" for k in range(n_out)],
        opset=opset,
        ml=ml,
        inits=inits,
        extra_opsets=extra_opsets,
    )


def graph_model(
    nodes: list,
    inputs: list,
    outputs: list[str],
    *,
    opset: int = 21,
    ml: int | None = None,
    inits: dict[str, np.ndarray] | None = None,
    extra_opsets: dict[str, int] | None = None,
) -> onnx.ModelProto:
    g = oh.make_graph(
        nodes,
        "g",
        inputs,
        [onnx.ValueInfoProto(name=n) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    ops = [oh.make_opsetid("", opset)]
    if ml is not None:
        ops.append(oh.make_opsetid("ai.onnx.ml", ml))
    for d, v in (extra_opsets or {}).items():
        ops.append(oh.make_opsetid(d, v))
    return oh.make_model(g, opset_imports=ops, ir_version=10)


def seq_type(elem: int, dims=None) -> onnx.TypeProto:
    return oh.make_sequence_type_proto(oh.make_tensor_type_proto(elem, dims))


def map_type(key: int, value: onnx.TypeProto) -> onnx.TypeProto:
    return oh.make_map_type_proto(key, value)


def opt_type(inner: onnx.TypeProto) -> onnx.TypeProto:
    return oh.make_optional_type_proto(inner)


# ---------------------------------------------------------------------------------------------
# running inference


def _dim(d):
    if d is None or isinstance(d, int):
        return d
    return parse_dim(d)


def onyx_model(m: onnx.ModelProto, strict: bool = True):
    om = onyx.load(m.SerializeToString())
    onyx.infer_shapes(om, strict=strict)
    return om


def onyx_all_types(m: onnx.ModelProto, strict: bool = True) -> dict:
    """Each node output's onyx type (TypeBase or None), main graph and subgraphs."""
    om = onyx_model(m, strict)
    return {v.name: v.type for node in om.graph.walk() for v in node.outputs if v.name}


def td(t) -> tuple[int | None, list | None]:
    """(elem, dims) of a tensor type (dims as ints, Sym or None); (None, None) for anything else."""
    if isinstance(t, TensorType):
        return t.elem_type or None, None if t.shape is None else [_dim(d) for d in t.shape.dims]
    return None, None


def onyx_types(m: onnx.ModelProto, strict: bool = True) -> dict:
    return {k: td(t) for k, t in onyx_all_types(m, strict).items()}


def infer(op_type: str, inputs: list[tuple], attrs: dict | None = None, **kw):
    """(elem, dims) of output 0 by onyx."""
    return onyx_types(model(op_type, inputs, attrs, **kw))["y0"]


def infer_all(op_type: str, inputs: list[tuple], attrs: dict | None = None, **kw) -> list:
    """(elem, dims) of every output y0.. by onyx."""
    got = onyx_types(model(op_type, inputs, attrs, **kw))
    return [got[f"y{k}"] for k in range(kw.get("n_out", 1))]


def infer_type(op_type: str, inputs: list[tuple], attrs: dict | None = None, **kw):
    """The onyx type of output 0."""
    return onyx_all_types(model(op_type, inputs, attrs, **kw))["y0"]


def same_as_onnx(m: onnx.ModelProto) -> dict:
    """_oprules.same_as_onnx with this module's onyx_types (which also reads sequence/map types)."""
    return _same_as_onnx(m, infer=onyx_types)


def _elem_and_shape(value) -> tuple[int, tuple]:
    """ONNX element type and shape of a value: numpy array (strings: object) or TensorProto."""
    if isinstance(value, onnx.TensorProto):
        return value.data_type, tuple(value.dims)
    arr = np.asarray(value)
    return (8 if arr.dtype == object or arr.dtype.kind in "US" else int(from_numpy(arr.dtype))), arr.shape


def agrees_with_value(t, value, where: str = "") -> None:
    """An onyx type agrees with a run's output value (tensor, list of tensors/maps, dict, None)."""
    if value is None:
        assert t is None or isinstance(t, OptionalType), f"{where}: {t} for an empty optional"
        return
    if isinstance(t, OptionalType):
        t = t.elem
    if isinstance(value, list):
        assert isinstance(t, SequenceType), f"{where}: {t} for a sequence"
        assert t.elem is not None, f"{where}: element type unknown"
        for item in value:
            if isinstance(t.elem, TensorType) and t.elem.shape is None:
                # elements of varying shapes: element type only
                assert t.elem.elem_type == _elem_and_shape(item)[0], f"{where}[]: {t.elem} for {item!r}"
            else:
                agrees_with_value(t.elem, item, where + "[]")
        return
    if isinstance(value, dict):
        assert isinstance(t, MapType), f"{where}: {t} for a map"
        if value:
            k = next(iter(value))
            want = 8 if isinstance(k, str) else 7
            assert t.key_type == want, f"{where}: map key {t.key_type}, value has {type(k)}"
        return
    want, shape = _elem_and_shape(value)
    if isinstance(t, OptionalType):
        t = t.elem
    assert isinstance(t, TensorType), f"{where}: {t} for a tensor of {want}{shape}"
    assert t.elem_type == want, f"{where}: elem {t.elem_type}, value {want}"
    assert t.shape is not None, f"{where}: rank unknown, value {shape}"
    dims = [_dim(d) for d in t.shape.dims]
    assert len(dims) == len(shape), f"{where}: {dims_str(dims)}, value {shape}"
    for k, (d, n) in enumerate(zip(dims, shape)):
        assert d is None or isinstance(d, Sym) or d == n, f"{where} dim {k}: {dims_str(dims)}, value {shape}"


def same_as_run(m: onnx.ModelProto, feeds: dict, oracle: str = "onnxruntime") -> dict:
    """Infer with onyx and run the model (onnxruntime, or onyx); every graph output's type agrees
    with the value produced (elem type exactly, rank, every static dim)."""
    types = onyx_all_types(m)
    names = [o.name for o in m.graph.output]
    if oracle == "onnxruntime":
        import onnxruntime as ort

        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        outs = sess.run(names, feeds)
    else:  # onyx's kernels, through the conformance harness's interpreter (outputs need no types)
        from tests.conformance.harness import run_model

        init = {i.name for i in m.graph.initializer}
        outs = run_model(m, [feeds[i.name] for i in m.graph.input if i.name not in init])
    for name, value in zip(names, outs):
        agrees_with_value(types[name], value, name)
    return {k: td(t) for k, t in types.items()}


# ---------------------------------------------------------------------------------------------
# the official node suite, only the modules needed (collecting every case takes many seconds)


def suite_cases(modules: list[str], ops: frozenset[str]) -> list:
    """The node-suite cases of onnx.backend.test.case.node.<module> for each module (imported only
    when needed: collecting every case takes many seconds), keeping those whose top-level ops are all
    from these families and one at least from ``ops`` (cases collected earlier in the process, by
    other modules, are filtered out by ``ops`` too)."""
    import onnx.backend.test.case.node as node_pkg

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for mod in modules:
            importlib.import_module(f"onnx.backend.test.case.node.{mod}")
    mine = all_mine() | {"Constant"}
    out = []
    for c in node_pkg._NodeTestCases:
        top = {n.op_type for n in c.model.graph.node}
        if top <= mine and top & ops:
            out.append(c)
    return out


def strip(m: onnx.ModelProto, symbolic: bool = False) -> onnx.ModelProto:
    """The case's model with untyped outputs and no value_info (so that the rules do the work);
    with ``symbolic``, every tensor input dim replaced by a fresh name."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    g = m2.graph
    del g.value_info[:]
    names = [o.name for o in g.output]
    del g.output[:]
    g.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    if symbolic:
        for i, v in enumerate(g.input):
            if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
                for k, d in enumerate(v.type.tensor_type.shape.dim):
                    d.Clear()
                    d.dim_param = f"s{i}_{k}"
    return m2


def check_case(case, symbolic: bool = True, require_known: bool = True) -> None:
    """The inferred outputs of a node-suite case agree with its expected outputs: element type, rank
    and static dims (all of them when the inputs are static; those onyx claims when they are named).
    Random ops: only type and rank (the values were drawn elsewhere)."""
    expected = case.data_sets[0][1] if case.data_sets else None
    names = [o.name for o in case.model.graph.output]
    for sym in (False, True) if symbolic else (False,):
        types = onyx_all_types(strip(case.model, sym))
        if expected is None:
            continue
        for name, value in zip(names, expected):
            t = types[name]
            where = f"{case.name} {name}{' (named inputs)' if sym else ''}"
            if isinstance(value, list | dict) or value is None:
                if require_known or t is not None:
                    agrees_with_value(t, value, where)
                continue
            want, shape = _elem_and_shape(value)
            if isinstance(t, OptionalType):
                t = t.elem
            elem, dims = td(t)
            if not require_known and dims is None:
                continue
            assert elem == want, f"{where}: elem {elem}, expected {want}"
            assert dims is not None, f"{where}: rank unknown, expected {shape}"
            assert len(dims) == len(shape), f"{where}: dims {dims_str(dims)}, expected {shape}"
            for k, (d, n) in enumerate(zip(dims, shape)):
                if sym or not require_known:
                    ok = d is None or isinstance(d, Sym) or d == n
                else:  # static inputs: exact, or a fresh symbol for a data-dependent dim
                    ok = d == n or (isinstance(d, Sym) and "unk__" in str(d))
                assert ok, f"{where} dim {k}: {dims_str(dims)}, expected {shape}"


def ops_without_rules(family: str) -> list[tuple[str, str]]:
    """(domain, op) of the ops registered in src/onyx/ops/<family>/ that have no shape rule."""
    from onyx.ops import registry

    registry.load_all()
    out = []
    for (dom, op), kernels in registry._registry.items():
        if any(k.fn.__module__.startswith(f"onyx.ops.{family}.") for k in kernels):
            if registry.get_shape_rule(op, dom) is None:
                out.append((dom, op))
    return out
