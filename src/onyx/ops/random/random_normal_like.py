"""RandomNormalLike: normal samples with the shape (and, by default, the element type) of the input."""

from __future__ import annotations

from onyx.ops.random._common import generator, like, like_shape_rule
from onyx.ops.random.random_normal import normal
from onyx.ops.registry import op, shape_rule


@op("RandomNormalLike", since=1, pure=False)
def random_normal_like(input, *, dtype=None, mean=0.0, scale=1.0, seed=None, _ctx=None):  # noqa: A002
    shape, dt = like(input, dtype, "RandomNormalLike")
    return normal(generator(_ctx, seed), shape, mean, scale, dt)


shape_rule("RandomNormalLike")(like_shape_rule)
