"""QLinearConv: quantized convolution as onnxruntime's CPU kernel computes it: exact int32 sums (with
the int32 bias), times the float32 multiplier x_scale * w_scale / y_scale, rounded half to even, plus
y's zero point, saturated."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import qlinear_conv_rule
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearConv"


def multiplier(a_scale, b_scale, y_scale, what: str, op: str, size: int) -> np.ndarray:
    """The requantization multiplier a_scale * b_scale / y_scale in float32 (per channel when b's is)."""
    sa = _integer.scale_of(a_scale, "x_scale" if what == "conv" else "a_scale", op)
    sb = _integer.scale_of(b_scale, "w_scale" if what == "conv" else "b_scale", op, size)
    sy = _integer.scale_of(y_scale, "y_scale", op)
    return (sa * sb) / sy


def _checked(x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B, x_dtype):
    """The parameters checked and converted: (xz, wz, out dtype, yz, multiplier, bias)."""
    x_like = np.empty(0, x_dtype)
    _integer.check_eight_bit(x_like, "x", OP)
    _integer.check_eight_bit(w, "w", OP)
    if w.ndim < 3:
        raise InvalidArgument(f"{OP}: w must have rank >= 3, got shape {w.shape}")
    m = w.shape[0]
    xz = _integer.zero_point(x_zero_point, x_like, "x_zero_point", OP)
    wz = _integer.zero_point(w_zero_point, w, "w_zero_point", OP, m)
    out_dtype, yz = _integer.out_zero_point(y_zero_point, x_dtype, OP)
    mult = multiplier(x_scale, w_scale, y_scale, "conv", OP, m)
    bias = None
    if B is not None:
        bias = np.asarray(B)
        if bias.dtype != np.int32 or bias.shape != (m,):
            raise InvalidArgument(f"{OP}: B must be int32 of shape ({m},), got {bias.dtype} {bias.shape}")
    return xz, wz, out_dtype, yz, mult, bias


def _requantize(acc, mult, yz, out_dtype, threads):
    n, m = acc.shape[:2]
    y = np.empty(acc.shape, out_dtype)
    for i in range(n):  # (M, rows, columns): per output channel, rows of the (possibly strided) sums
        a3 = acc[i].reshape(m, acc.shape[2], -1) if acc.ndim >= 4 else acc[i][:, None, :]
        y[i] = k8.requantize(a3, mult, 0, yz, out_dtype, threads).reshape(y.shape[1:])
    return y


def _prepare(*, _constants=None, _ctx=None, **attrs):
    """Every input but x constant (a quantized model's convolution): the parameters checked, the
    weights prepared and the bias folded once (FrozenConv); declines otherwise."""
    if _constants is None or len(_constants) < 8 or any(c is None for c in _constants[1:8]):
        return None
    if len(_constants) > 8 and _constants[8] is None:
        return None  # a bias that is not constant
    consts = _constants
    b_const = consts[8] if len(consts) > 8 else None
    x_dtype = np.asarray(consts[2]).dtype
    xz, wz, out_dtype, yz, mult, bias = _checked(*consts[1:8], b_const, x_dtype)
    threads = _integer.threads_of(_ctx)
    frozen = _integer.FrozenConv.make(consts[3], xz, wz, bias, conv_kwargs(attrs), x_dtype, threads)
    if frozen is None:
        return None

    def run(x, *rest):
        if x.dtype != x_dtype or any(r is not c for r, c in zip(rest, consts[1:])):
            return qlinear_conv(x, *rest, _ctx=_ctx, **attrs)
        if x.ndim != 4:
            raise InvalidArgument(f"{OP}: x of shape {x.shape} for a 2-D kernel")
        return frozen(x, (mult, yz, out_dtype))

    return run


@op("QLinearConv", since=10, prepare=_prepare)
@with_conv_attributes
def qlinear_conv(
    x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, *, _ctx=None, **conv
):  # noqa: N803
    _integer.check_eight_bit(x, "x", OP)
    xz, wz, out_dtype, yz, mult, bias = _checked(
        x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B, x.dtype
    )
    threads = _integer.threads_of(_ctx)
    acc = _integer.conv(x, w, xz, wz, conv_kwargs(conv), OP, threads, bias=bias)
    return _requantize(acc, mult, yz, out_dtype, threads)


shape_rule("QLinearConv")(qlinear_conv_rule)
