"""RandomNormalLike: normal samples with the shape (and, by default, the element type) of the input."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import cast, float_dtype, generator
from onyx.ops.registry import op, shape_rule


@op("RandomNormalLike", since=1)
def random_normal_like(input, *, dtype=None, mean=0.0, scale=1.0, seed=None, _ctx=None):  # noqa: A002
    x = np.asarray(input)
    dt = float_dtype(dtype, x.dtype, "RandomNormalLike")
    rng = generator(_ctx, seed)
    work = np.float64 if dt == np.float64 else np.float32
    out = rng.standard_normal(x.shape, dtype=work)
    if scale != 1.0:
        out *= work(scale)
    if mean != 0.0:
        out += work(mean)
    return cast(out, dt)


@shape_rule("RandomNormalLike")
def _random_normal_like_shape(ctx) -> None:
    """The input's shape, of ``dtype`` (default: the input's type)."""
    dtype = ctx.attr("dtype")
    ctx.set_output(0, int(dtype) if dtype is not None else ctx.input_elem(0), ctx.input_shape(0))
