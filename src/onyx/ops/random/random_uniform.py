"""RandomUniform: a tensor of the given shape drawn uniformly from [low, high)."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import cast, float_dtype, generator, shape_of
from onyx.ops.registry import op, shape_rule


def uniform(rng, shape, low, high, dt):
    work = np.float64 if dt == np.float64 else np.float32
    out = rng.random(shape, dtype=work)
    if high - low != 1.0:
        out *= work(high - low)
    if low != 0.0:
        out += work(low)
    if work == np.float32 and high > low:
        # float32 rounding can land on ``high``: keep the interval half-open
        np.minimum(out, np.nextafter(np.float32(high), np.float32(low)), out=out)
    return cast(out, dt)


@op("RandomUniform", since=1)
def random_uniform(*, shape, dtype=1, high=1.0, low=0.0, seed=None, _ctx=None):
    # Version 22 only adds bfloat16.
    dt = float_dtype(dtype, np.float32, "RandomUniform")
    return uniform(generator(_ctx, seed), shape_of(shape, "RandomUniform"), low, high, dt)


@shape_rule("RandomUniform")
def _random_uniform_shape(ctx) -> None:
    """The ``shape`` attribute, of ``dtype`` (default float)."""
    ctx.set_output(0, int(ctx.attr("dtype", 1)), [int(d) for d in ctx.attr("shape")])
