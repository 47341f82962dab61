"""RandomNormal: a tensor of the given shape drawn from a normal distribution."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import cast, float_dtype, generator, scaled_samples, shape_attr_rule, shape_of
from onyx.ops.registry import op, shape_rule


def normal(rng, shape, mean, scale, dt):
    return cast(scaled_samples(rng.standard_normal, shape, dt, scale, mean), dt)


@op("RandomNormal", since=1, pure=False)
def random_normal(*, shape, dtype=1, mean=0.0, scale=1.0, seed=None, _ctx=None):
    # Version 22 only adds bfloat16.
    dt = float_dtype(dtype, np.float32, "RandomNormal")
    return normal(generator(_ctx, seed), shape_of(shape, "RandomNormal"), mean, scale, dt)


shape_rule("RandomNormal")(shape_attr_rule)
