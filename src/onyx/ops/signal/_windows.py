"""Cosine-sum windows (Hann, Hamming, Blackman): w[n] = sum_k (-1)^k a_k cos(2 pi k n / N)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.signal._common import output_dtype, scalar_int


def cosine_window(size, coefficients, periodic, output_datatype, op_name):
    n = scalar_int(size, f"{op_name}: size")
    if n < 0:
        raise InvalidArgument(f"{op_name}: size must be >= 0, got {n}")
    dt = output_dtype(output_datatype, op_name)
    denom = n if periodic else n - 1
    if denom <= 0:
        return np.ones(n, dtype=np.float64).astype(dt)
    phase = (2.0 * np.pi / denom) * np.arange(n, dtype=np.float64)
    w = np.full(n, coefficients[0], dtype=np.float64)
    for k, a in enumerate(coefficients[1:], start=1):
        w += (-1) ** k * a * np.cos(k * phase)
    return w.astype(dt)
