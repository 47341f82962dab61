"""RandomUniform: a tensor of the given shape drawn uniformly from [low, high)."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import cast, float_dtype, generator, scaled_samples, shape_attr_rule, shape_of
from onyx.ops.registry import op, shape_rule


def uniform(rng, shape, low, high, dt):
    out = scaled_samples(rng.random, shape, dt, high - low, low)
    if out.dtype == np.float32 and high > low:
        # float32 rounding can land on ``high``: keep the interval half-open
        np.minimum(out, np.nextafter(np.float32(high), np.float32(low)), out=out)
    return cast(out, dt)


@op("RandomUniform", since=1, pure=False)
def random_uniform(*, shape, dtype=1, high=1.0, low=0.0, seed=None, _ctx=None):
    # Version 22 only adds bfloat16.
    dt = float_dtype(dtype, np.float32, "RandomUniform")
    return uniform(generator(_ctx, seed), shape_of(shape, "RandomUniform"), low, high, dt)


shape_rule("RandomUniform")(shape_attr_rule)
