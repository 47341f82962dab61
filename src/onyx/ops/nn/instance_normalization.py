"""InstanceNormalization: standardise each (n, c) plane, then per-channel scale and bias."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._norm import standardize_rows
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _run(x, scale, b, epsilon):
    check_rank(x, 3, "InstanceNormalization input")
    n, c = x.shape[:2]
    if scale.shape != (c,) or b.shape != (c,):
        raise InvalidArgument(
            f"InstanceNormalization: scale {scale.shape} and B {b.shape} must be ({c},) for input {x.shape}"
        )
    ct = compute_dtype(x.dtype)
    x2 = x.astype(ct, copy=False).reshape(n * c, -1)
    if x2.size == 0:
        return x.copy()
    rs = np.tile(scale.astype(ct), n).reshape(n * c, 1)
    rb = np.tile(b.astype(ct), n).reshape(n * c, 1)
    y, _, _ = standardize_rows(x2, epsilon, rs, rb)
    return back(y.reshape(x.shape), x.dtype)


@op("InstanceNormalization", since=1, until=6)
def instance_normalization_1(input, scale, B, *, consumed_inputs=None, epsilon=1e-5):
    return _run(input, scale, B, epsilon)


@op("InstanceNormalization", since=6)
def instance_normalization_6(input, scale, B, *, epsilon=1e-5):
    return _run(input, scale, B, epsilon)


shape_rule("InstanceNormalization")(same_shape_rule)
