"""StringConcat: elementwise concatenation of two string tensors, with numpy broadcasting."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.string._common import as_strings
from onyx.shape_inference import broadcast_dims


@op("StringConcat", since=20)
def string_concat(X, Y):
    x = as_strings(X, "StringConcat")
    y = as_strings(Y, "StringConcat")
    try:
        out = np.add(x, y, dtype=object)
    except ValueError:
        raise InvalidArgument(
            f"StringConcat: shapes {x.shape} and {y.shape} do not broadcast together"
        ) from None
    return np.asarray(out, dtype=object)


@shape_rule("StringConcat")
def _string_concat_shape(ctx) -> None:
    """string, the broadcast of X and Y."""
    ctx.set_output(0, 8, broadcast_dims([ctx.input_shape(0), ctx.input_shape(1)]))
