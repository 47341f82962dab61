"""Dropout elimination: in inference Dropout returns its input, so readers of its output read the input.

Only when the mask output is absent or unused, and the node cannot be in training mode: opset 12+
with no ``training_mode`` input or a constant false one (opsets 1-6: ``is_test`` does not matter at
inference, onnxruntime ignores it too; opsets 7-11 have no training mode).
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model
from onyx.optimizer._util import Scope, is_op


def eliminate_dropout(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, "Dropout") or not node.inputs or node.inputs[0] is None or not node.outputs:
                continue
            if any(sc.is_used(v) for v in node.outputs[1:]):
                continue
            if entry.opset(node.domain) >= 12 and len(node.inputs) > 2 and node.inputs[2] is not None:
                t = sc.const_value(node.inputs[2])
                if t is None or t.size != 1 or bool(np.asarray(t).reshape(-1)[0]):
                    continue
            changed |= sc.bypass(node, node.outputs[0], node.inputs[0])
    sc.flush()
    return changed
