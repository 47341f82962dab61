"""What the QDQ fusions share: reading a DequantizeLinear feeding a node, or the QuantizeLinear that
alone reads a node's output, with constant 8-bit parameters (the form onnxruntime's quantizer writes)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from onyx.ir.model import Node, Value
from onyx.optimizer._pattern import Ctx, attr, is_op, prod

EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


class QParams(NamedTuple):
    """A Q or DQ node: its quantized value (DQ's input, Q's output), scale and zero point (values and
    constants) and axis."""

    node: Node
    q: Value
    scale: Value
    zp: Value
    scale_c: np.ndarray
    zp_c: np.ndarray
    axis: int

    @property
    def scalar(self) -> bool:
        return self.scale_c.size == 1 and self.zp_c.size == 1

    def same(self, other: QParams) -> bool:
        """The same scalar parameters (value and zero point type)."""
        return (
            self.scalar
            and other.scalar
            and self.zp_c.dtype == other.zp_c.dtype
            and float(self.scale_c.reshape(-1)[0]) == float(other.scale_c.reshape(-1)[0])
            and int(self.zp_c.reshape(-1)[0]) == int(other.zp_c.reshape(-1)[0])
        )


def _params(ctx: Ctx, node: Node, q: Value, int32_ok: bool = False) -> QParams | None:
    if len(node.inputs) < 3 or node.inputs[1] is None or node.inputs[2] is None:
        return None
    if attr(node, "block_size", 0):
        return None
    scale, zp = ctx.const(node.inputs[1]), ctx.const(node.inputs[2])
    if scale is None or zp is None or scale.dtype != np.float32:
        return None
    if zp.dtype not in EIGHT_BIT and not (int32_ok and zp.dtype == np.int32):
        return None
    if scale.size != zp.size or scale.ndim > 1 or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        return None
    return QParams(node, q, node.inputs[1], node.inputs[2], scale, zp, int(attr(node, "axis", 1)))


def dq_of(ctx: Ctx, v: Value | None, int32_ok: bool = False) -> QParams | None:
    """The DequantizeLinear producing ``v`` (to float32), or None."""
    p = prod(v, "DequantizeLinear")
    if p is None or ctx.elem(v) != 1:
        return None
    return _params(ctx, p, p.inputs[0], int32_ok)


def q_after(ctx: Ctx, v: Value) -> QParams | None:
    """The QuantizeLinear that is the only reader of ``v`` (a float32 value), with scalar parameters."""
    if not ctx.single_use(v):
        return None
    node, index = v.uses[0]
    if not is_op(node, "QuantizeLinear") or index != 0 or ctx.elem(v) != 1:
        return None
    out_dtype = attr(node, "output_dtype", 0)
    qp = _params(ctx, node, node.outputs[0])
    if qp is None or not qp.scalar or (out_dtype and ctx.elem(node.outputs[0]) != out_dtype):
        return None
    return qp


def scale_value(qp: QParams) -> float:
    return float(qp.scale_c.reshape(-1)[0])


def per_channel(qp: QParams, size: int, axis: int, rank: int) -> bool:
    """Whether ``qp``'s parameters are one value, or ``size`` values along ``axis`` of a rank-``rank``
    tensor."""
    if qp.scalar:
        return True
    return qp.scale_c.ndim == 1 and qp.scale_c.shape[0] == size and qp.axis % rank == axis


def int_bias(ctx: Ctx, v: Value | None, scale: np.ndarray, size: int) -> np.ndarray | None | bool:
    """A float bias ``v`` (a constant, or DequantizeLinear of a constant int32) as int32 in units of
    ``scale`` (one value or per channel): the int32 values themselves when its DequantizeLinear has that
    scale and zero point 0. None: no bias; False: a bias that cannot be folded."""
    if v is None:
        return None
    scale = np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (size,))
    dq = dq_of(ctx, v, int32_ok=True)
    if dq is not None and dq.zp_c.dtype == np.int32:
        raw = ctx.const(dq.q)
        if raw is None or raw.shape != (size,):
            return False
        if not np.any(dq.zp_c) and np.array_equal(np.broadcast_to(dq.scale_c.reshape(-1), (size,)), scale):
            return raw.astype(np.int32)
        f = (raw.astype(np.float32) - dq.zp_c.astype(np.float32)) * dq.scale_c.astype(np.float32)
    else:
        f = ctx.const(v)
        if f is None or f.dtype != np.float32 or f.shape != (size,):
            return False
    q = np.rint(f.astype(np.float64) / scale.astype(np.float64))
    if np.any(np.abs(q) >= 2**31):
        return False
    return q.astype(np.int32)
