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
    if dtype in _LOW_FLOATS:
        # stash_type 1: start, limit and delta go to float32 first; otherwise compute in the type itself
        work = np.dtype(np.float32) if stash_type == 1 else dtype
    else:
        work = np.dtype(np.float64)
    sf, lf, df = (np.asarray(v).astype(work) for v in (s, lim, d))
    if float(df) == 0:
        raise InvalidArgument("Range: delta must not be zero")
    q = (float(lf) - float(sf)) / float(df)
    if not math.isfinite(q):
        raise InvalidArgument(f"Range: cannot make a range from {float(sf)} to {float(lf)} by {float(df)}")
    n = max(math.ceil(q), 0)
    return (sf + np.arange(n).astype(work) * df).astype(dtype)


@op("Range", since=11, until=27)
def range_11(start, limit, delta):
    return _range(start, limit, delta)


@op("Range", since=27)
def range_27(start, limit, delta, *, stash_type=1):
    return _range(start, limit, delta, stash_type)
