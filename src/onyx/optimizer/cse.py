"""Common subexpression elimination, and sharing of equal small constants.

Two nodes of one graph with the same operator, the same input values and equal attributes compute the
same outputs: readers of the second read the first. Random operators, Dropout (random in training
mode), nodes with subgraphs, calls of model-local functions and operators of other domains than
``ai.onnx`` and ``ai.onnx.ml`` are left alone. Equal small initializers of one graph (that no feed can
override) are merged first, so that e.g. two ``Unsqueeze(x, [0])`` with separate axes constants
become one.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from onyx.ir.model import Attr, AttrType, Graph, Model, Node
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ops import registry
from onyx.optimizer._util import Scope, has_subgraphs

SHARE_LIMIT = 1024  # elements: larger equal initializers are rare and comparing them costs
_DOMAINS = ("", "ai.onnx.ml")


def _array_key(arr: np.ndarray) -> Any:
    if arr.dtype == object:
        return ("o", arr.shape, tuple(arr.reshape(-1).tolist()))
    return (arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes())


def _tensor_key(t: Any) -> Any:
    if isinstance(t, Tensor | SparseTensor):
        return (type(t).__name__, int(getattr(t, "data_type", 0) or 0), _array_key(t.numpy()))
    return None


def _attr_key(a: Attr) -> Any:
    if a.ref_attr_name:
        return (a.name, "ref", a.ref_attr_name)
    t, v = a.type, a.value
    if t == AttrType.FLOAT:
        return (a.name, t, struct.pack("<d", float(v)))
    if t == AttrType.FLOATS:
        return (a.name, t, tuple(struct.pack("<d", float(x)) for x in v))
    if t in (AttrType.INT, AttrType.STRING):
        return (a.name, t, v if not isinstance(v, memoryview) else bytes(v))
    if t in (AttrType.INTS, AttrType.STRINGS):
        return (a.name, t, tuple(bytes(x) if isinstance(x, memoryview) else x for x in v))
    if t in (AttrType.TENSOR, AttrType.SPARSE_TENSOR):
        k = _tensor_key(v)
        return None if k is None else (a.name, t, k)
    if t in (AttrType.TENSORS, AttrType.SPARSE_TENSORS):
        keys = tuple(_tensor_key(x) for x in v)
        return None if any(k is None for k in keys) else (a.name, t, keys)
    return None  # graphs, type protos: never equal for our purpose


def _cheap_key(node: Node) -> Any:
    """What two equal nodes share besides their attributes (compared only when this matches)."""
    return (
        registry.normalize_domain(node.domain),
        node.op_type,
        node.overload or "",
        tuple(id(v) if v is not None else None for v in node.inputs),
        tuple(bool(v.name) for v in node.outputs),
    )


def _attrs_key(node: Node) -> Any:
    """The node's attributes as a comparable key, or None when one cannot be compared."""
    attrs = []
    for a in node.attributes.values():
        k = _attr_key(a)
        if k is None:
            return None
        attrs.append(k)
    attrs.sort(key=lambda k: k[0])
    return tuple(attrs)


_UNKNOWN = object()  # an attribute key not worked out yet


def _share_initializers(sc: Scope, g: Graph) -> bool:
    seen: dict[Any, Any] = {}
    drop: list[str] = []
    for name, v in g.initializers.items():
        if not sc.is_const(v) or sc.is_input(v) or sc.is_graph_output(v) or not isinstance(v.const, Tensor):
            continue
        if v.const.size > SHARE_LIMIT:
            continue
        try:
            key = (int(v.const.data_type), _array_key(v.const.numpy()))
        except Exception:  # noqa: BLE001 - an undecodable tensor is left for the checker/run
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = v
            continue
        if sc.replace_value(v, first):
            drop.append(name)
    for name in drop:
        del g.initializers[name]
    return bool(drop)


def eliminate_common_subexpressions(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        g = entry.graph
        changed |= _share_initializers(sc, g)
        # nodes by their inputs and op; attribute keys (costly for big attribute lists, such as tree
        # ensembles') are worked out only when a second node shares the first key
        seen: dict[Any, list[list[Any]]] = {}
        for node in g.nodes:
            if (node.domain or "") not in (*_DOMAINS, "ai.onnx") or not entry.pure(node):
                continue
            if not node.outputs or has_subgraphs(node) or sc.is_function_call(node):
                continue
            bucket = seen.setdefault(_cheap_key(node), [])
            if not bucket:
                bucket.append([_UNKNOWN, node])
                continue
            key = _attrs_key(node)
            if key is None:
                continue
            first = None
            for candidate in bucket:
                if candidate[0] is _UNKNOWN:
                    candidate[0] = _attrs_key(candidate[1])
                if candidate[0] is not None and candidate[0] == key:
                    first = candidate[1]
                    break
            if first is None:
                bucket.append([key, node])
                continue
            for mine, theirs in zip(node.outputs, first.outputs):
                if sc.is_used(mine) and sc.replace_value(mine, theirs):
                    changed = True
            if not any(sc.is_used(v) for v in node.outputs):
                sc.remove(node)
    sc.flush()
    return changed
