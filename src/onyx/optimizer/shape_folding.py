"""Shape-subgraph folding: values that shape inference knows at load time become initializers.

``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains compute, at run time, numbers that shape
inference (:mod:`onyx.shape_inference`) already knows from static dims, or from symbolic dims that
cancel out. Every node of the main graph whose used outputs all have a fully numeric value known to
inference is replaced by initializers.

The pass also writes inferred element types and shapes onto values that have no type yet (only the
element type inside subgraphs, where a loop body's shapes may change between iterations), so that
later passes (Cast, Expand, Slice elimination, MatMul + Add -> Gemm) can see them. Graph outputs and
declared value_info keep their declared types. Subgraphs and function bodies are not folded: a loop
body's values change between iterations and a function body is shared between call sites.
"""

from __future__ import annotations

import warnings

import numpy as np

from onyx.errors import OnyxError
from onyx.ir.dtypes import DataType
from onyx.ir.model import Model, Node
from onyx.ir.types import Shape, TensorType
from onyx.optimizer._util import (
    RANDOM_OPS,
    Scope,
    elem_of_array,
    fold_node,
    has_subgraphs,
    replace_nodes,
)

SIZE_LIMIT = 1 << 16


def _infer(model: Model):
    """Run shape inference without writing back; returns value id -> Info (or None on failure)."""
    try:
        from onyx.shape_inference import _Inference
    except ImportError:
        return None
    try:
        inf = _Inference(model, strict=False)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            inf.infer_graph(model.graph)
    except Exception:  # noqa: BLE001 - inference is best effort; the optimizer then does less
        return None
    return inf.infos


def _tensor_type(info, with_shape: bool) -> TensorType | None:
    from onyx.ir.symbolic import dim_to_proto

    if info is None or not info.elem:
        return None
    if info.type is not None and not isinstance(info.type, TensorType):
        return None
    shape = None
    if with_shape and info.dims is not None:
        shape = Shape([dim_to_proto(d) for d in info.dims])
    return TensorType(int(info.elem), shape)


def _known(info) -> np.ndarray | None:
    if info is None or info.value is None:
        return None
    arr = info.value
    if not isinstance(arr, np.ndarray) or arr.size > SIZE_LIMIT:
        return None
    if arr.dtype == object:  # symbolic arithmetic: numeric only when no symbol is left
        flat = arr.reshape(-1).tolist()
        if info.elem is None or not all(
            isinstance(x, int | np.integer) and not isinstance(x, bool) for x in flat
        ):
            return None
        try:
            dt = DataType(info.elem).numpy_dtype
        except (ValueError, OnyxError):
            return None
        if dt.kind not in "iu":
            return None
        arr = np.array(flat, dtype=dt).reshape(arr.shape)
    if info.elem is not None and elem_of_array(arr) != info.elem:
        return None
    return arr


def _fits(dims, shape) -> bool:
    if len(dims) != len(shape):
        return False
    return all(not isinstance(d, int) or d == s for d, s in zip(dims, shape))


def _annotate(sc: Scope, infos) -> None:
    for entry in sc.graphs():
        if entry.kind == "function":
            continue  # a body shared by call sites with different types
        main = entry.kind == "main"
        for node in entry.graph.nodes:
            for v in node.outputs:
                if not v.name or sc.is_graph_output(v):
                    continue
                t = v.type
                if t is not None and not (isinstance(t, TensorType) and (not t.elem_type or t.shape is None)):
                    continue
                new = _tensor_type(infos.get(id(v)), main)
                if new is None:
                    continue
                if isinstance(t, TensorType):
                    if t.elem_type and new.elem_type != t.elem_type:
                        continue
                    if new.shape is None and t.shape is not None:
                        new.shape = t.shape
                v.type = new


def fold_shapes(model: Model) -> bool:
    """Fold main-graph values known to shape inference into initializers; returns whether any was."""
    infos = _infer(model)
    if infos is None:
        return False
    sc = Scope(model)
    _annotate(sc, infos)
    g = model.graph
    replaced: dict[int, list[Node]] = {}
    for node in g.nodes:
        if node.op_type in RANDOM_OPS or has_subgraphs(node) or node.op_type == "Constant":
            continue
        used = [v for v in node.outputs if v.name and sc.is_used(v)]
        if not used:
            continue
        values = [_known(infos.get(id(v))) for v in used]
        if any(a is None for a in values):
            continue
        for v, a in zip(used, values):
            t = v.type
            if isinstance(t, TensorType):
                if t.elem_type and t.elem_type != elem_of_array(a):
                    break
                if t.shape is not None and not _fits(t.shape.dims, a.shape):
                    break
        else:
            arrays = {i: a for i, a in zip([v.index for v in used], values)}
            replaced[id(node)] = fold_node(sc, g, node, arrays)
    replace_nodes(g, replaced)
    return bool(replaced)
