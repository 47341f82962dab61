"""QLinearAdd and QLinearMul (com.microsoft): elementwise ops on quantized tensors (numpy broadcasting),
computed in float32 as onnxruntime's MLAS kernels do: the operands' centred integers times scale ratios,
rounded half to even, plus C's zero point, saturated."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops.contrib._quantized import check_pair
from onyx.ops.quant import _integer


def _zp(z) -> np.float32:
    return np.float32(0 if z is None else int(np.asarray(z).reshape(-1)[0]))


def qlinear_binary(op: str, a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp) -> np.ndarray:
    check_pair(a, a_zp, "A", "A_zero_point", op)
    check_pair(b, b_zp, "B", "B_zero_point", op)
    if a.dtype != b.dtype:
        raise InvalidArgument(f"{op}: A is {a.dtype} but B is {b.dtype}")
    out_dtype, zc = _integer.out_zero_point(c_zp, a.dtype, op)
    sa = _integer.scale_of(a_scale, "A_scale", op)[0]
    sb = _integer.scale_of(b_scale, "B_scale", op)[0]
    sc = _integer.scale_of(c_scale, "C_scale", op)[0]
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise InvalidArgument(f"{op}: shapes {a.shape} and {b.shape} do not broadcast") from None
    za, zb = int(_zp(a_zp)), int(_zp(b_zp))
    if op == "QLinearAdd":
        ra, rb = np.float32(sa / sc), np.float32(sb / sc)
        if a.shape == b.shape:
            return k8.qlinear_add(a, b, ra, rb, za, zb, zc)
        return k8.qlinear_add_numpy(a, b, ra, rb, za, zb, zc, out_dtype)
    y = (a.astype(np.float32) - np.float32(za)) * (b.astype(np.float32) - np.float32(zb))
    y *= np.float32(sa * sb / sc)
    np.rint(y, out=y)
    y += np.float32(zc)
    info = np.iinfo(out_dtype)
    np.clip(y, info.min, info.max, out=y)
    return y.astype(out_dtype)


def shape(ctx) -> None:
    from onyx.shape_inference import broadcast_dims

    a, b = ctx.input_shape(0), ctx.input_shape(3)
    elem = ctx.input_elem(7) if ctx.has_input(7) else ctx.input_elem(0)
    ctx.set_output(0, elem, None if a is None or b is None else broadcast_dims([a, b]))
