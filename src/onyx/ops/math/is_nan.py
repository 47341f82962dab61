"""IsNaN: elementwise NaN test, bool output."""

import numpy as np

from onyx.ir.dtypes import DataType
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("IsNaN", since=9)
def is_nan_9(x):
    return np.isnan(x, out=...)


@shape_rule("IsNaN")
def _is_nan_shape(ctx: ShapeContext) -> None:
    ctx.same_as_input(0, elem=int(DataType.BOOL))
