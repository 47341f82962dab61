"""Shape: the input's shape as int64; opset 15 adds ``start``/``end`` (clamped like Python slices)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op


@op("Shape", since=1, until=15)
def shape_1(data):
    return np.array(np.shape(data), dtype=np.int64)


@op("Shape", since=15)
def shape_15(data, *, end=None, start=0):
    s = np.shape(data)
    return np.array(s[int(start) : (None if end is None else int(end))], dtype=np.int64)
