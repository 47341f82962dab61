"""Expand elimination: ``Expand(x, shape)`` whose broadcast leaves x's shape unchanged is x.

The shape must be a constant and x's dims known where the shape is not 1: each trailing dim of the
shape is 1 or equal to x's (static) dim, and the shape is no longer than x's rank.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._util import Scope, bypass_where, ints_of


def _noop(dims: list, shape: list[int]) -> bool:
    if len(shape) > len(dims):
        return False
    for d, s in zip(reversed(dims), reversed(shape)):
        if s == 1:
            continue
        if not isinstance(d, int) or d != s:
            return False
    return True


def _source(sc: Scope, entry, node: Node) -> Value | None:
    if len(node.inputs) != 2:
        return None
    x, s = node.inputs
    shape = ints_of(sc.const_value(s))
    dims = sc.dims(x)
    if x is None or shape is None or dims is None or not _noop(dims, shape):
        return None
    return x


def eliminate_expand(model: Model) -> bool:
    return bypass_where(model, "Expand", _source)
