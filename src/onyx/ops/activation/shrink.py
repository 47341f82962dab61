"""Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0 (float and integer types)."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Shrink", since=9)
def shrink_9(x, *, bias=0.0, lambd=0.5):
    dt = x.dtype
    xc = x if dt.kind == "f" else x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        y = np.where(xc < -lambd, xc + bias, np.where(xc > lambd, xc - bias, 0))
    return y.astype(dt, copy=False)


shape_rule("Shrink")(same_shape_rule)
