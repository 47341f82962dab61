"""Conv (or ConvTranspose) followed by an inference-mode BatchNormalization: fold the normalization
into the convolution's weights and bias.

    BN(conv(x, W) + B) = conv(x, W * f) + (B - mean) * f + beta,   f = scale / sqrt(var + eps)

per output channel. Conditions: W, B (if any) and the four BN parameters are constants; the Conv
output is read by the BN only; the BN has one used output and is not in training mode (opset 14+
``training_mode=0``; opsets 7-8 ``spatial=1``; opsets before 7 are left alone, as onnxruntime does).
The new weights are computed in float64 and stored in the weight's element type; the original
weights stay for other readers (dead-code removal drops them otherwise).
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node
from onyx.optimizer._util import GraphEntry, Scope, is_op

FLOAT_KINDS = ("float16", "float32", "float64", "bfloat16")


def _attr(node: Node, name: str, default):
    a = node.attributes.get(name)
    if a is None:
        return default
    if a.ref_attr_name:
        return None
    return a.value


def _bn_ok(entry: GraphEntry, sc: Scope, bn: Node) -> bool:
    opset = entry.opset(bn.domain)
    if opset < 7 or len(bn.inputs) != 5 or any(v is None for v in bn.inputs):
        return False
    if any(sc.is_used(v) for v in bn.outputs[1:]):
        return False
    if opset < 9 and _attr(bn, "spatial", 1) != 1:
        return False
    if opset >= 14 and _attr(bn, "training_mode", 0) != 0:
        return False
    return _attr(bn, "epsilon", 1e-5) is not None


def per_channel_conv_rewrite(
    sc: Scope, conv: Node, w: np.ndarray, b: np.ndarray | None, mul: np.ndarray, add: np.ndarray
) -> bool:
    """Set conv's weights to ``W * mul`` and bias to ``B * mul + add`` (per output channel, float64)."""
    transpose = conv.op_type == "ConvTranspose"
    if transpose:
        group = int(_attr(conv, "group", 1) or 1)
        cin = w.shape[0]
        if group <= 0 or cin % group:
            return False
        m = w.shape[1] * group
    else:
        m = w.shape[0]
    if mul.shape != (m,) or add.shape != (m,) or (b is not None and b.shape != (m,)):
        return False
    g = conv.graph
    if g is None:
        return False
    hint = conv.inputs[1].name or "W"  # type: ignore[union-attr]
    if not np.all(mul == 1.0):
        w64 = w.astype(np.float64)
        if transpose:
            shaped = w64.reshape((group, cin // group, w.shape[1]) + w.shape[2:])
            f = mul.reshape((group, 1, w.shape[1]) + (1,) * (w.ndim - 2))
            new_w = (shaped * f).reshape(w.shape)
        else:
            new_w = w64 * mul.reshape((m,) + (1,) * (w.ndim - 1))
        conv.set_input(1, sc.new_initializer(g, new_w.astype(w.dtype), hint))
    b64 = np.zeros(m) if b is None else b.astype(np.float64)
    new_b = b64 * mul + add
    b_val = sc.new_initializer(g, new_b.astype(w.dtype), hint + "_bias")
    if len(conv.inputs) > 2:
        conv.set_input(2, b_val)
    else:
        conv.append_input(b_val)
    return True


def conv_weights(sc: Scope, conv: Node):
    """(W, B or None) when the conv's weights (and bias) are float constants, else None."""
    if len(conv.inputs) < 2 or conv.inputs[0] is None or conv.inputs[1] is None or len(conv.outputs) != 1:
        return None
    w = sc.const_value(conv.inputs[1])
    if w is None or str(w.dtype) not in FLOAT_KINDS or w.ndim < 3:
        return None
    b = None
    if len(conv.inputs) > 2 and conv.inputs[2] is not None:
        b = sc.const_value(conv.inputs[2])
        if b is None or b.dtype != w.dtype:
            return None
    return w, b


def fuse_conv_bn(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for bn in sc.nodes(entry):
            if not is_op(bn, "BatchNormalization") or not bn.inputs or bn.inputs[0] is None:
                continue
            y = bn.inputs[0]
            conv = y.producer
            if conv is None or conv.graph is not bn.graph or not is_op(conv, "Conv", "ConvTranspose"):
                continue
            if not sc.single_use(y, bn) or not _bn_ok(entry, sc, bn) or not sc.can_replace(bn.outputs[0], y):
                continue
            wb = conv_weights(sc, conv)
            if wb is None:
                continue
            w, b = wb
            params = [sc.const_value(v) for v in bn.inputs[1:]]
            if any(p is None for p in params):
                continue
            scale, beta, mean, var = (np.asarray(p, dtype=np.float64).reshape(-1) for p in params)  # type: ignore[arg-type]
            eps = float(_attr(bn, "epsilon", 1e-5))
            f = scale / np.sqrt(var + eps)
            if not per_channel_conv_rewrite(sc, conv, w, b, f, beta - mean * f):
                continue
            sc.replace_value(bn.outputs[0], y)
            sc.remove(bn)
            changed = True
    sc.flush()
    return changed
