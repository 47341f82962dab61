"""Unsqueeze followed by Squeeze of the same axes (and Squeeze followed by Unsqueeze) is the identity.

``Squeeze(Unsqueeze(x, axes), axes)``: both axes lists refer to the unsqueezed rank, rank(x) +
len(axes). ``Unsqueeze(Squeeze(x, axes), axes)``: both refer to rank(x); it is the identity only when
those dims of x are 1, which Squeeze requires, so the static dims must say so. Axes come from the
``axes`` attribute before opset 13 and from a constant input from opset 13; Squeeze without axes is
left alone (which dims it drops depends on the data).
"""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._util import GraphEntry, Scope, ints_of, is_op


def _axes(sc: Scope, entry: GraphEntry, node: Node) -> list[int] | None:
    if entry.opset(node.domain) < 13:
        a = node.attributes.get("axes")
        if a is None or a.ref_attr_name or a.value is None:
            return None
        return [int(x) for x in a.value]
    if len(node.inputs) < 2 or node.inputs[1] is None:
        return None
    return ints_of(sc.const_value(node.inputs[1]))


def _normalize(axes: list[int], rank: int | None) -> set[int] | None:
    if any(a < 0 for a in axes):
        if rank is None:
            return None
        axes = [a + rank if a < 0 else a for a in axes]
    if len(set(axes)) != len(axes) or (rank is not None and any(not 0 <= a < rank for a in axes)):
        return None
    return set(axes)


def fold_squeeze_unsqueeze(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, "Squeeze", "Unsqueeze") or len(node.outputs) != 1 or not node.inputs:
                continue
            mid = node.inputs[0]
            first = mid.producer if mid is not None else None
            if first is None or first.graph is not node.graph or len(first.outputs) != 1:
                continue
            if not is_op(first, "Unsqueeze" if node.op_type == "Squeeze" else "Squeeze"):
                continue
            x = first.inputs[0] if first.inputs else None
            a1, a2 = _axes(sc, entry, first), _axes(sc, entry, node)
            if x is None or a1 is None or a2 is None:
                continue
            rank = sc.rank(x)
            if node.op_type == "Squeeze":  # Squeeze(Unsqueeze(x))
                out_rank = None if rank is None else rank + len(a1)
                s1, s2 = _normalize(a1, out_rank), _normalize(a2, out_rank)
                if s1 is None or s1 != s2:
                    continue
            else:  # Unsqueeze(Squeeze(x))
                dims = sc.dims(x)
                s1, s2 = _normalize(a1, rank), _normalize(a2, rank)
                if s1 is None or s1 != s2 or dims is None or any(dims[a] != 1 for a in s1):
                    continue
            changed |= sc.bypass(node, node.outputs[0], x)
    sc.flush()
    return changed
