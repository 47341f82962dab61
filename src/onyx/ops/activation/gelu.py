"""Gelu: 0.5 * x * (1 + erf(x / sqrt(2))), or with approximate="tanh"
0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))."""

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.activation._common import float_kernel
from onyx.ops.math._erf import gelu
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule

_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x):
    t = np.multiply(x, x, out=...)
    t *= 0.044715
    t += 1
    t *= x
    t *= _SQRT_2_PI
    np.tanh(t, out=t)
    t += 1
    t *= x
    t *= 0.5
    return t


_tanh_run = float_kernel(_gelu_tanh)


@op("Gelu", since=20)
def gelu_20(x, *, approximate="none"):
    if approximate == "none":
        return gelu(x)
    if approximate == "tanh":
        return _tanh_run(x)
    raise InvalidArgument(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


shape_rule("Gelu")(same_shape_rule)
