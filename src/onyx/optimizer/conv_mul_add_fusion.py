"""Conv followed by Mul or Add with a per-output-channel constant: fold it into the weights/bias.

    conv(x, W, B) * s = conv(x, W * s, B * s)      conv(x, W, B) + a = conv(x, W, B + a)

The constant must broadcast along the channel axis only, without growing the result: its shape,
right-aligned to the conv output's rank, is 1 everywhere except maybe M (output channels) on axis 1.
The conv output must be read by the Mul/Add only; weights and bias must be float constants of the
same element type as the constant.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model
from onyx.optimizer._util import Scope, is_op
from onyx.optimizer.conv_bn_fusion import conv_weights, per_channel_conv_rewrite


def _channel_vector(c: np.ndarray, rank: int, m: int) -> np.ndarray | None:
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if shape[0] != 1 or shape[1] not in (1, m) or any(d != 1 for d in shape[2:]):
        return None
    return np.broadcast_to(c.reshape(shape[1]).astype(np.float64), (m,))


def fuse_conv_mul_add(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, "Mul", "Add") or len(node.inputs) != 2 or len(node.outputs) != 1:
                continue
            if entry.opset(node.domain) < 7:
                continue  # legacy broadcast/axis attributes
            for k in (0, 1):
                y, c_val = node.inputs[k], node.inputs[1 - k]
                conv = y.producer if y is not None else None
                if conv is None or conv.graph is not node.graph or not is_op(conv, "Conv"):
                    continue
                if y is c_val or not sc.single_use(y, node):
                    continue
                c = sc.const_value(c_val)
                wb = conv_weights(sc, conv)
                if c is None or wb is None or c.dtype != wb[0].dtype:
                    continue
                w, b = wb
                m = w.shape[0]
                vec = _channel_vector(c, w.ndim, m)
                if vec is None or not sc.can_replace(node.outputs[0], y):
                    continue
                if node.op_type == "Mul":
                    ok = per_channel_conv_rewrite(sc, conv, w, b, vec, np.zeros(m))
                else:
                    ok = per_channel_conv_rewrite(sc, conv, w, b, np.ones(m), vec)
                if ok:
                    sc.replace_value(node.outputs[0], y)
                    sc.remove(node)
                    changed = True
                break
    sc.flush()
    return changed
