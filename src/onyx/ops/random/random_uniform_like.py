"""RandomUniformLike: uniform samples with the shape (and, by default, the element type) of the input."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import float_dtype, generator
from onyx.ops.random.random_uniform import uniform
from onyx.ops.registry import op, shape_rule


@op("RandomUniformLike", since=1)
def random_uniform_like(input, *, dtype=None, high=1.0, low=0.0, seed=None, _ctx=None):  # noqa: A002
    x = np.asarray(input)
    dt = float_dtype(dtype, x.dtype, "RandomUniformLike")
    return uniform(generator(_ctx, seed), x.shape, low, high, dt)


@shape_rule("RandomUniformLike")
def _random_uniform_like_shape(ctx) -> None:
    """The input's shape, of ``dtype`` (default: the input's type)."""
    dtype = ctx.attr("dtype")
    ctx.set_output(0, int(dtype) if dtype is not None else ctx.input_elem(0), ctx.input_shape(0))
