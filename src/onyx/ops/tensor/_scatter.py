"""Shared by ScatterElements, Scatter and ScatterND: write or reduce ``updates`` at fancy indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.tensor._common import compute_dtype

_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def scatter_into(data: np.ndarray, key: Any, updates: np.ndarray, reduction: str, op_name: str) -> np.ndarray:
    """A copy of ``data`` with ``updates`` written (``none``) or reduced into ``data[key]``."""
    if reduction == "none":
        out = data.copy()
        out[key] = updates
        return out
    ufunc = _UFUNCS.get(reduction)
    if ufunc is None:
        raise InvalidArgument(f"{op_name}: reduction must be one of none/add/mul/max/min, got {reduction!r}")
    cd = compute_dtype(data.dtype)
    if cd != data.dtype:
        out = data.astype(cd)
        ufunc.at(out, key, updates.astype(cd))
        return out.astype(data.dtype)
    out = data.copy()
    ufunc.at(out, key, updates)
    return out
