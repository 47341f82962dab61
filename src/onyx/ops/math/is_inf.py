"""IsInf: elementwise infinity test, optionally of one sign only; bool output."""

import numpy as np

from onyx.ir.dtypes import DataType
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("IsInf", since=10)
def is_inf_10(x, *, detect_negative=1, detect_positive=1):
    if detect_negative and detect_positive:
        return np.isinf(x, out=...)
    if detect_positive:
        return np.isinf(x, out=...) & ~np.signbit(x)
    if detect_negative:
        return np.isinf(x, out=...) & np.signbit(x)
    return np.zeros(x.shape, dtype=np.bool_)


@shape_rule("IsInf")
def _is_inf_shape(ctx: ShapeContext) -> None:
    ctx.same_as_input(0, elem=int(DataType.BOOL))
