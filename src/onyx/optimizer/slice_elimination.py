"""Slice elimination: a Slice that takes every element of every axis it names is its input.

Each sliced axis must have step 1, a start that clamps to 0 (0, or a negative start at least as far
back as the static dim) and an end that clamps to the dim (INT_MAX-like ends, or at least the static
dim). Opsets 1-9 carry starts/ends/axes as attributes, later opsets as constant inputs.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._util import Scope, bypass_where, ints_of

_BIG = (1 << 31) - 1


def _takes_all(starts, ends, axes, steps, dims) -> bool:
    if len(starts) != len(ends) or (axes is not None and len(axes) != len(starts)):
        return False
    if steps is not None and (len(steps) != len(starts) or any(s != 1 for s in steps)):
        return False
    rank = None if dims is None else len(dims)
    if axes is None:
        axes = list(range(len(starts)))
    seen = set()
    for start, end, axis in zip(starts, ends, axes):
        if rank is not None:
            if not -rank <= axis < rank:
                return False
            axis %= rank
        if axis in seen:
            return False
        seen.add(axis)
        d = dims[axis] if rank is not None else None
        if start != 0:
            if not (start < 0 and isinstance(d, int) and start + d <= 0):
                return False
        if end < _BIG and not (isinstance(d, int) and end >= d):
            return False
    return True


def _source(sc: Scope, entry, node: Node) -> Value | None:
    if not node.inputs or node.inputs[0] is None:
        return None
    x = node.inputs[0]
    if entry.opset(node.domain) < 10:
        if any(a.ref_attr_name for a in node.attributes.values()):
            return None
        starts, ends = node.attr("starts"), node.attr("ends")
        axes, steps = node.attr("axes"), None
        if starts is None or ends is None:
            return None
        starts, ends = list(starts), list(ends)
        axes = None if axes is None else list(axes)
    else:
        ins = list(node.inputs) + [None] * (5 - len(node.inputs))
        starts, ends = ints_of(sc.const_value(ins[1])), ints_of(sc.const_value(ins[2]))
        axes = ints_of(sc.const_value(ins[3])) if ins[3] is not None else None
        steps = ints_of(sc.const_value(ins[4])) if ins[4] is not None else None
        if starts is None or ends is None:
            return None
        if (ins[3] is not None and axes is None) or (ins[4] is not None and steps is None):
            return None
    return x if _takes_all(starts, ends, axes, steps, sc.dims(x)) else None


def eliminate_slice(model: Model) -> bool:
    return bypass_where(model, "Slice", _source)
