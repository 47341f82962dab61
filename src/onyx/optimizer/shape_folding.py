"""Shape-subgraph folding: values that shape inference knows at load time become initializers.

``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains compute, at run time, numbers that shape
inference (:mod:`onyx.shape_inference`) already knows from static dims, or from symbolic dims that
cancel out. The inference stage (run before the optimizer) leaves each main-graph value's known
contents on :attr:`Value.inferred_value`; every node of the main graph whose used outputs all hold a
fully numeric known value is replaced by initializers. Subgraphs and function bodies are not folded: a
loop body's values change between iterations and a function body is shared between call sites.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import OnyxError
from onyx.ir.dtypes import DataType
from onyx.ir.model import Model, Node, Value
from onyx.ir.types import TensorType
from onyx.optimizer._util import (
    Scope,
    elem_of_array,
    fold_node,
    has_subgraphs,
    replace_nodes,
    value_elem,
)

SIZE_LIMIT = 1 << 16


def _known(v: Value) -> np.ndarray | None:
    """``v``'s inferred contents as a numeric array of its element type, or None (unknown, too large,
    or symbolic)."""
    arr = v.inferred_value
    if not isinstance(arr, np.ndarray) or arr.size > SIZE_LIMIT:
        return None
    elem = value_elem(v)
    if arr.dtype == object:  # symbolic arithmetic: numeric only when no symbol is left
        flat = arr.reshape(-1).tolist()
        if elem is None or not all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in flat):
            return None
        try:
            dt = DataType(elem).numpy_dtype
        except (ValueError, OnyxError):
            return None
        if dt.kind not in "iu":
            return None
        arr = np.array(flat, dtype=dt).reshape(arr.shape)
    if elem is not None and elem_of_array(arr) != elem:
        return None
    return arr


def _fits(dims, shape) -> bool:
    if len(dims) != len(shape):
        return False
    return all(not isinstance(d, int) or d == s for d, s in zip(dims, shape))


def fold_shapes(model: Model) -> bool:
    """Fold main-graph values known to shape inference into initializers; returns whether any was."""
    sc = Scope(model)
    g = model.graph
    replaced: dict[int, list[Node]] = {}
    for node in g.nodes:
        if not sc.main().pure(node) or has_subgraphs(node) or node.op_type == "Constant":
            continue
        if node.op_type == "DequantizeLinear":
            continue  # left for the QDQ fusions, as constant folding leaves it
        used = [v for v in node.outputs if v.name and sc.is_used(v)]
        if not used:
            continue
        values = [_known(v) for v in used]
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
