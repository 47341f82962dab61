"""Identity elimination: readers of ``Identity(x)`` read ``x`` (graph outputs keep their names)."""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._util import Scope, bypass_where


def _source(sc: Scope, entry, node: Node) -> Value | None:
    return node.inputs[0] if len(node.inputs) == 1 else None


def eliminate_identity(model: Model) -> bool:
    return bypass_where(model, "Identity", _source)
