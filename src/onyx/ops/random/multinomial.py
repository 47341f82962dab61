"""Multinomial: ``sample_size`` class indices per row, drawn from unnormalised log-probabilities."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy
from onyx.ops.random._common import generator
from onyx.ops.registry import op, shape_rule


@op("Multinomial", since=7, pure=False)
def multinomial(input, *, dtype=6, sample_size=1, seed=None, _ctx=None):  # noqa: A002
    # Version 22 only adds bfloat16 inputs.
    logits = np.asarray(input)
    if logits.ndim != 2:
        raise InvalidArgument(
            f"Multinomial: input must be [batch_size, class_size], got shape {logits.shape}"
        )
    out_dt = to_numpy(dtype)
    if out_dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise InvalidArgument(f"Multinomial: dtype must be int32 or int64, got {out_dt}")
    if sample_size < 0:
        raise InvalidArgument(f"Multinomial: sample_size must be >= 0, got {sample_size}")
    batch, classes = logits.shape
    if classes == 0:
        raise InvalidArgument("Multinomial: class_size is 0")
    z = logits.astype(np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(z, axis=1)
    cdf /= cdf[:, -1:]
    # One searchsorted for all rows: row r's CDF is shifted into [r, r + 1], which keeps it sorted.
    offsets = np.arange(batch, dtype=np.float64)[:, None]
    u = generator(_ctx, seed).random((batch, sample_size))
    flat = np.searchsorted((cdf + offsets).reshape(-1), (u + offsets).reshape(-1), side="right")
    idx = flat.reshape(batch, sample_size) - (np.arange(batch) * classes)[:, None]
    return np.minimum(idx, classes - 1).astype(out_dt)


@shape_rule("Multinomial")
def _multinomial_shape(ctx) -> None:
    """[batch, sample_size] of ``dtype`` (default int32)."""
    x = ctx.input_shape(0)
    if x is not None and len(x) != 2:
        ctx.fail(f"input must be [batch, class_size], got {x}")
    ctx.set_output(
        0, int(ctx.attr("dtype", 6)), [None if x is None else x[0], int(ctx.attr("sample_size", 1))]
    )
