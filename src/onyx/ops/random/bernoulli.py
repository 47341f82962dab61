"""Bernoulli: 1 with probability p (the input), else 0, in the input's or the requested element type."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy
from onyx.ops.random._common import generator
from onyx.ops.registry import op, shape_rule


@op("Bernoulli", since=15, pure=False)
def bernoulli(input, *, dtype=None, seed=None, _ctx=None):  # noqa: A002
    # Version 22 only adds bfloat16.
    p = np.asarray(input)
    if p.dtype.kind != "f" and p.dtype.kind != "V":
        raise InvalidArgument(f"Bernoulli: input must be floating-point probabilities, got {p.dtype}")
    dt = p.dtype if dtype is None else to_numpy(dtype)
    work = np.float64 if p.dtype == np.float64 else np.float32
    draws = generator(_ctx, seed).random(p.shape, dtype=work)
    return (draws < p.astype(work, copy=False)).astype(dt)


@shape_rule("Bernoulli")
def _bernoulli_shape(ctx) -> None:
    """The input's shape, of ``dtype`` (default: the input's type)."""
    dtype = ctx.attr("dtype")
    ctx.set_output(0, int(dtype) if dtype is not None else ctx.input_elem(0), ctx.input_shape(0))
