"""Det: determinant of square matrices over the last two dimensions, [*, M, M] -> [*]."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.math._shape import merge_dim
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("Det", since=11)
def det_11(x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgument(f"Det: input must be [*, M, M], got {x.shape}")
    dt = x.dtype
    r = np.linalg.det(x if dt in NATIVE_FLOATS else x.astype(F32))
    return np.asarray(r, dtype=dt)


@shape_rule("Det")
def _det_shape(ctx: ShapeContext) -> None:
    """[*, M, M] -> [*]."""
    x = ctx.input_shape(0)
    if x is not None:
        if len(x) < 2:
            ctx.fail(f"input must be [*, M, M], got rank {len(x)}")
        merge_dim(ctx, x[-2], x[-1], f"input {x} must be square in its last two dims")
        x = x[:-2]
    ctx.set_output(0, ctx.input_elem(0), x)
