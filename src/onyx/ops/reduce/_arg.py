"""Shared by ArgMax and ArgMin."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.tensor._common import compute_dtype, norm_axis


def arg_reduce(fn: str, data, axis: int, keepdims: int, select_last_index: int) -> np.ndarray:
    x = np.asarray(data)
    name = "ArgMax" if fn == "argmax" else "ArgMin"
    if x.ndim == 0:
        norm_axis(axis, 1, f"{name}: axis")
        return np.array(0, dtype=np.int64)
    ax = norm_axis(axis, x.ndim, f"{name}: axis")
    n = x.shape[ax]
    if n == 0:
        raise InvalidArgument(f"{name}: axis {ax} of input shape {x.shape} is empty")
    keys = x.astype(compute_dtype(x.dtype), copy=False)
    f = np.argmax if fn == "argmax" else np.argmin
    if select_last_index:
        r = (n - 1) - f(np.flip(keys, ax), axis=ax)
    else:
        r = f(keys, axis=ax)
    r = np.asarray(r, dtype=np.int64)
    if keepdims:
        r = np.expand_dims(r, ax)
    return r
