"""PRelu: x for x >= 0, slope * x otherwise; slope broadcasts to x (unidirectionally from opset 7).

Opsets 1 and 6 describe a slope of size 1 or one value per channel (axis 1); a 1-D per-channel slope
that numpy would align with the last axis instead is reshaped to axis 1 for those opsets.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._shape import broadcast
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


def _prelu(x, slope):
    # max(x, 0) + slope * min(x, 0): exact, and no numpy ``where`` (slow on unpredictable masks)
    neg = np.minimum(x, 0, out=...)
    try:
        y = np.multiply(neg, slope, out=...)
    except ValueError:
        raise InvalidArgument(f"PRelu: slope {slope.shape} does not broadcast to X {x.shape}") from None
    if y.shape != x.shape:
        raise InvalidArgument(f"PRelu: slope {slope.shape} broadcasts X {x.shape} to a larger shape")
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    y += np.maximum(x, 0, out=neg)
    return y


def _legacy_slope(x, slope):
    if slope.size == 1:
        return slope.reshape(())
    if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1]:
        return slope.reshape((-1,) + (1,) * (x.ndim - 2))
    return slope


@op("PRelu", since=1, until=6)
def p_relu_1(x, slope, *, consumed_inputs=None):
    return _prelu(x, _legacy_slope(x, slope))


@op("PRelu", since=6, until=7)
def p_relu_6(x, slope):
    return _prelu(x, _legacy_slope(x, slope))


@op("PRelu", since=7)
def p_relu_7(x, slope):
    return _prelu(x, slope)


@shape_rule("PRelu")
def _p_relu_shape(ctx: ShapeContext) -> None:
    """X's type and shape. From opset 7 the slope broadcasts into X unidirectionally, so its static dims
    other than 1 must be X's (and fill in X's unknown ones); before, it is a scalar or per channel."""
    x, slope = ctx.input_shape(0), ctx.input_shape(1)
    if ctx.opset < 7 or x is None or slope is None:
        ctx.same_as_input(0)
        return
    dims = broadcast(ctx, [x, slope])
    if dims is not None and len(dims) != len(x):
        ctx.fail(f"slope {slope} has a higher rank than X {x}")
    ctx.set_output(0, ctx.input_elem(0), dims)
