"""RandomUniformLike: uniform samples with the shape (and, by default, the element type) of the input."""

from __future__ import annotations

from onyx.ops.random._common import generator, like, like_shape_rule
from onyx.ops.random.random_uniform import uniform
from onyx.ops.registry import op, shape_rule


@op("RandomUniformLike", since=1, pure=False)
def random_uniform_like(input, *, dtype=None, high=1.0, low=0.0, seed=None, _ctx=None):  # noqa: A002
    shape, dt = like(input, dtype, "RandomUniformLike")
    return uniform(generator(_ctx, seed), shape, low, high, dt)


shape_rule("RandomUniformLike")(like_shape_rule)
