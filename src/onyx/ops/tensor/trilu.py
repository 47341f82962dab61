"""Trilu: keep the upper (or lower) triangle of the last two dims, offset by diagonal ``k``."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor._common import scalar_int
from onyx.shape_inference import ShapeContext


@op("Trilu", since=14)
def trilu_14(input, k=None, *, upper=1):
    x = np.asarray(input)
    if x.ndim < 2:
        raise InvalidArgument(f"Trilu: input must have rank >= 2, got shape {x.shape}")
    kk = 0 if k is None else scalar_int(k, "Trilu: k")
    n, m = x.shape[-2:]
    rows = np.arange(n)[:, None]
    cols = np.arange(m)[None, :]
    keep = (cols - rows >= kk) if upper else (cols - rows <= kk)
    out = np.zeros(x.shape, dtype=x.dtype)
    np.copyto(out, x, where=keep)  # ~2x faster than np.where with a broadcast mask
    return out


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Trilu")
def _trilu_shape(ctx: ShapeContext) -> None:
    s = ctx.input_shape(0)
    if s is not None and len(s) < 2:
        ctx.fail(f"Trilu: input must have rank >= 2, got shape {s}")
    ctx.same_as_input(0)
