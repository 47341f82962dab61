"""Size: the number of elements of the input, as an int64 scalar."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


@op("Size", since=1)
def size_1(data):
    return np.array(np.size(data), dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Size")
def _size_shape(ctx: ShapeContext) -> None:
    total = S.prod(ctx.input_shape(0))
    if total is None:
        ctx.set_output(0, S.INT64, [])
    else:
        ctx.set_output_value(0, S.dims_array(total), S.INT64)
