"""RandomNormal: a tensor of the given shape drawn from a normal distribution."""

from __future__ import annotations

import numpy as np

from onyx.ops.random._common import cast, float_dtype, generator, shape_of
from onyx.ops.registry import op, shape_rule


@op("RandomNormal", since=1)
def random_normal(*, shape, dtype=1, mean=0.0, scale=1.0, seed=None, _ctx=None):
    # Version 22 only adds bfloat16.
    dt = float_dtype(dtype, np.float32, "RandomNormal")
    rng = generator(_ctx, seed)
    work = np.float64 if dt == np.float64 else np.float32
    out = rng.standard_normal(shape_of(shape, "RandomNormal"), dtype=work)
    if scale != 1.0:
        out *= work(scale)
    if mean != 0.0:
        out += work(mean)
    return cast(out, dt)


@shape_rule("RandomNormal")
def _random_normal_shape(ctx) -> None:
    """The ``shape`` attribute, of ``dtype`` (default float)."""
    ctx.set_output(0, int(ctx.attr("dtype", 1)), [int(d) for d in ctx.attr("shape")])
