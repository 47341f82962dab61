"""Reshape chains: ``Reshape(Reshape(x, a), b)`` is ``Reshape(x, b)`` when b is a constant whose dims
do not copy the intermediate shape (no 0, or ``allowzero=1`` where 0 means an empty dim).

Also drops a Reshape to the shape its input already has (static dims, or the shape ``[..]`` whose
only non-static entry is a -1 standing for the one symbolic dim).
"""

from __future__ import annotations

from onyx.ir.model import Model
from onyx.optimizer._util import Scope, ints_of, is_op


def _allowzero(node) -> int:
    a = node.attributes.get("allowzero")
    if a is None:
        return 0
    if a.ref_attr_name:
        return -1
    return int(a.value)


def _same_shape(dims, shape: list[int]) -> bool:
    if dims is None or len(dims) != len(shape):
        return False
    unknown = [i for i, d in enumerate(dims) if not isinstance(d, int)]
    if unknown and 0 in dims:
        return False
    for d, s in zip(dims, shape):
        if isinstance(d, int):
            if s != d and not (s == -1 and not unknown and d != 0):
                return False
        elif s != -1:
            return False
    return len(unknown) <= 1 and shape.count(-1) <= 1


def fold_reshape_chains(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        if entry.opset("") < 5:
            continue  # Reshape-1 takes the shape as an attribute
        for node in sc.nodes(entry):
            if not is_op(node, "Reshape") or len(node.inputs) != 2 or len(node.outputs) != 1:
                continue
            mid, s = node.inputs
            shape = ints_of(sc.const_value(s))
            az = _allowzero(node)
            if mid is None or shape is None or az < 0:
                continue
            if 0 in shape and az == 0:
                continue
            if _same_shape(sc.dims(mid), shape) and sc.bypass(node, node.outputs[0], mid):
                changed = True
                continue
            first = mid.producer
            if first is None or first.graph is not node.graph or not is_op(first, "Reshape"):
                continue
            if not first.inputs or first.inputs[0] is None:
                continue
            node.set_input(0, first.inputs[0])
            if not sc.is_used(mid):
                sc.remove(first)
            changed = True
    sc.flush()
    return changed
