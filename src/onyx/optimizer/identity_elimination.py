"""Identity elimination: readers of ``Identity(x)`` read ``x`` (graph outputs keep their names)."""

from __future__ import annotations

from onyx.ir.model import Model
from onyx.optimizer._util import Scope, is_op


def eliminate_identity(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, "Identity") or len(node.inputs) != 1 or len(node.outputs) != 1:
                continue
            x = node.inputs[0]
            if x is None:
                continue
            changed |= sc.bypass(node, node.outputs[0], x)
    sc.flush()
    return changed
