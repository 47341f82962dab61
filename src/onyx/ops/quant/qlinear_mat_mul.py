"""QLinearMatMul: a matmul of two quantized tensors requantized to the output's scale and zero point."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.quant import _integer
from onyx.ops.quant._common import matmul_dims, saturate_cast
from onyx.ops.registry import op, shape_rule

OP = "QLinearMatMul"


def _row_param(p: np.ndarray, a: np.ndarray, which: str) -> np.ndarray:
    """Scale / zero point of 'a' (per row) or 'b' (per column) shaped to broadcast with the operand."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    if p.ndim == 1:
        if which == "a":
            if a.ndim < 2 or p.shape[0] != a.shape[-2]:
                raise InvalidArgument(
                    f"QLinearMatMul: per-row a parameter {p.shape} for a of shape {a.shape}"
                )
            return p.reshape(-1, 1)
        if p.shape[0] != a.shape[-1]:
            raise InvalidArgument(f"QLinearMatMul: per-column b parameter {p.shape} for b of shape {a.shape}")
        return p.reshape(1, -1)
    return p


def _centered(a, zp, which):
    if a.dtype.kind in "iu":
        v = a.astype(np.float64)
        if zp is not None:
            v -= _row_param(zp, a, which).astype(np.float64)
        return v
    v = a.astype(np.float32)
    if zp is not None:
        v = v - _row_param(zp, a, which).astype(np.float32)
    return v


def _fast(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, threads):
    """The 8-bit case with per-tensor a parameters: exact integer GEMM, then onnxruntime's
    requantization (float32 multiplier a_scale * b_scale / y_scale, round half to even)."""
    n = b.shape[-1] if b.ndim >= 2 else 1
    za = _integer.zero_point(a_zero_point, a, "a_zero_point", OP)
    zb = _integer.zero_point(b_zero_point, b, "b_zero_point", OP, n)
    out_dtype, yz = _integer.out_zero_point(y_zero_point, a.dtype, OP)
    sa = _integer.scale_of(a_scale, "a_scale", OP)
    sb = _integer.scale_of(b_scale, "b_scale", OP, n)
    mult = (sa * sb) / _integer.scale_of(y_scale, "y_scale", OP)
    acc = _integer.matmul(a, b, za, zb, OP, threads)
    return _integer.requantize_last(acc, mult, yz, out_dtype, threads)


def _fast_applies(a, a_scale, a_zero_point, b, y_zero_point) -> bool:
    eight = _integer.EIGHT_BIT
    return (
        a.dtype in eight
        and b.dtype in eight
        and np.asarray(a_scale).size == 1
        and (a_zero_point is None or np.asarray(a_zero_point).size == 1)
        and (y_zero_point is None or np.asarray(y_zero_point).dtype in eight)
    )


def _qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, threads=0):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim and b.ndim and _fast_applies(a, a_scale, a_zero_point, b, y_zero_point):
        return _fast(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, threads)
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"QLinearMatMul: inputs must not be scalars, got {a.shape} and {b.shape}")
    if a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2]):
        raise InvalidArgument(f"QLinearMatMul: shapes {a.shape} and {b.shape} do not multiply")
    av = _centered(a, a_zero_point, "a")
    bv = _centered(b, b_zero_point, "b")
    acc = np.matmul(av, bv)
    sa = _row_param(a_scale, a, "a").astype(np.float32)
    sb = _row_param(b_scale, b, "b").astype(np.float32)
    sy = np.asarray(y_scale).astype(np.float32)
    if a.ndim == 1 and sa.ndim:
        sa = sa.reshape(-1)
    mult = sa * sb / sy
    y = acc.astype(np.float32) * mult
    out = np.asarray(y_zero_point).dtype
    if out.kind in "iu":
        y = np.rint(y) + np.asarray(y_zero_point).astype(np.float32)
    else:
        y = y + np.asarray(y_zero_point).astype(np.float32)
    return saturate_cast(y, out, 1)


@op("QLinearMatMul", since=10, until=21)
def qlinear_matmul_10(
    a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *, _ctx=None
):
    t = _integer.threads_of(_ctx)
    return _qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, t)


@op("QLinearMatMul", since=21)
def qlinear_matmul_21(
    a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *, _ctx=None
):
    t = _integer.threads_of(_ctx)
    return _qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, t)


@shape_rule("QLinearMatMul")
def _qlinear_matmul_shape(ctx) -> None:
    """numpy.matmul's shape of a and b, element type of y_zero_point."""
    dims = matmul_dims(ctx.input_shape(0), ctx.input_shape(3), ctx.fail)
    elem = ctx.input_elem(7) if ctx.has_input(7) else ctx.input_elem(0)
    ctx.set_output(0, elem, dims)
