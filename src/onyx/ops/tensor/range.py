"""Range: ``start, start + delta, ...`` up to ``limit`` (exclusive); opset 27 adds ``stash_type``."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op

_LOW_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _scalar(v, what: str) -> np.ndarray:
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"Range: {what} must be a scalar, got shape {a.shape}")
    return a.reshape(())


def _range(start, limit, delta, stash_type: int = 1) -> np.ndarray:
    s, lim, d = _scalar(start, "start"), _scalar(limit, "limit"), _scalar(delta, "delta")
    dtype = s.dtype
    if dtype.kind in "iu":
        si, li, di = int(s), int(lim), int(d)
        if di == 0:
            raise InvalidArgument("Range: delta must not be zero")
        n = max(-((si - li) // di), 0)
        return (si + np.arange(n, dtype=np.int64) * di).astype(dtype)
    if dtype in _LOW_FLOATS and stash_type != 1:
        # accumulate in the type itself, as the spec's loop would
        sf, lf, df = s.astype(dtype), lim.astype(dtype), d.astype(dtype)
        n = math.ceil((float(lf) - float(sf)) / float(df)) if float(df) != 0 else None
        if n is None:
            raise InvalidArgument("Range: delta must not be zero")
        n = max(n, 0)
        return (sf + np.arange(n).astype(dtype) * df).astype(dtype)
    sf, lf, df = float(s), float(lim), float(d)
    if df == 0:
        raise InvalidArgument("Range: delta must not be zero")
    q = (lf - sf) / df
    if not math.isfinite(q):
        raise InvalidArgument(f"Range: cannot make a range from {sf} to {lf} by {df}")
    n = max(math.ceil(q), 0)
    return (sf + np.arange(n, dtype=np.float64) * df).astype(dtype)


@op("Range", since=11, until=27)
def range_11(start, limit, delta):
    return _range(start, limit, delta)


@op("Range", since=27)
def range_27(start, limit, delta, *, stash_type=1):
    return _range(start, limit, delta, stash_type)
