"""Cast elimination: ``Cast(x, to=T)`` (or ``CastLike``) where x already has element type T is x."""

from __future__ import annotations

from onyx.ir.model import Model
from onyx.optimizer._util import Scope, is_op, value_elem


def eliminate_cast(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, "Cast", "CastLike") or not node.inputs or len(node.outputs) != 1:
                continue
            x = node.inputs[0]
            src = value_elem(x)
            if src is None:
                continue
            if node.op_type == "Cast":
                a = node.attributes.get("to")
                if a is None or a.ref_attr_name or not isinstance(a.value, int):
                    continue
                dst = int(a.value)
            else:
                dst = value_elem(node.inputs[1]) if len(node.inputs) > 1 else None
            if dst is None or dst != src:
                continue
            changed |= sc.bypass(node, node.outputs[0], x)  # type: ignore[arg-type]
    sc.flush()
    return changed
