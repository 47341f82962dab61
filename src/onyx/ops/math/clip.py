"""Clip: elementwise ``min(max(x, lo), hi)``; where ``lo > hi`` every value becomes ``hi``.

Opsets 1-10 take the bounds as float attributes, opset 11 on as optional 0-d inputs.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule

_FLT_MAX = 3.4028234663852886e38


def _clip(x, lo, hi):
    if lo is not None:
        y = np.maximum(x, lo, out=...)
        if hi is not None:
            np.minimum(y, hi, out=y)
        return y
    if hi is not None:
        return np.minimum(x, hi, out=...)
    return x.copy()


def _bound(v, x, which):
    if v is None:
        return None
    if v.size != 1:
        raise InvalidArgument(f"Clip: input {which} must be a scalar, got shape {v.shape}")
    return v.reshape(()).astype(x.dtype, copy=False)


def _attr_bound(v, x):
    if abs(v) >= _FLT_MAX:  # the opset-6 defaults: no bound
        return None
    return np.asarray(v).astype(x.dtype)


@op("Clip", since=1, until=6)
def clip_1(x, *, consumed_inputs=None, max=None, min=None):  # noqa: A002 - the attribute names
    return _clip(
        x,
        None if min is None else _attr_bound(min, x),
        None if max is None else _attr_bound(max, x),
    )


@op("Clip", since=6, until=11)
def clip_6(x, *, max=_FLT_MAX, min=-_FLT_MAX):  # noqa: A002 - the attribute names
    return _clip(x, _attr_bound(min, x), _attr_bound(max, x))


@op("Clip", since=11)
def clip_11(x, min=None, max=None):  # noqa: A002 - the input names
    return _clip(x, _bound(min, x, "min"), _bound(max, x, "max"))


shape_rule("Clip")(same_shape_rule)  # bounds are scalars; opsets 1-10 hold them as attributes
