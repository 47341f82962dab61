"""QLinearConv: quantized convolution (exact integer accumulation, then requantization)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import qlinear_conv_rule
from onyx.ops.nn.conv import conv_forward
from onyx.ops.nn.conv_integer import centered
from onyx.ops.registry import op, shape_rule


@op("QLinearConv", since=10)
@with_conv_attributes
def qlinear_conv(
    x,
    x_scale,
    x_zero_point,
    w,
    w_scale,
    w_zero_point,
    y_scale,
    y_zero_point,
    B=None,
    **conv,
):
    m = w.shape[0]
    xf = centered(x, x_zero_point, what="x")
    wf = centered(w, w_zero_point, m, what="w")
    acc = conv_forward(xf, wf, None if B is None else B.astype(np.float64), **conv_kwargs(conv))
    ws = np.asarray(w_scale, dtype=np.float64)
    if ws.size != 1 and ws.shape != (m,):
        raise InvalidArgument(f"QLinearConv: w_scale of shape {ws.shape}, expected a scalar or ({m},)")
    scale = float(np.asarray(x_scale).reshape(())) * ws / float(np.asarray(y_scale).reshape(()))
    if scale.size != 1:
        scale = scale.reshape((m,) + (1,) * (acc.ndim - 2))
    else:
        scale = scale.reshape(())
    yzp = np.asarray(y_zero_point)
    dt = yzp.dtype if y_zero_point is not None else x.dtype
    y = np.rint(acc * scale.astype(np.float32).astype(np.float64))
    y += yzp.astype(np.float64).reshape(())
    info = np.iinfo(dt)
    np.clip(y, info.min, info.max, out=y)
    return y.astype(dt)


shape_rule("QLinearConv")(qlinear_conv_rule)
