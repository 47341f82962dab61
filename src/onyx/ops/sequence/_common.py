"""Helpers shared by the sequence kernels. Sequences are Python lists of numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def as_sequence(value: Any, op_name: str) -> list:
    if not isinstance(value, list):
        raise InvalidArgument(f"{op_name}: expected a sequence (list of tensors), got {type(value).__name__}")
    return value


def position(value: Any, op_name: str) -> int:
    """A scalar position tensor (int32 or int64) as a Python int."""
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgument(
            f"{op_name}: position must be a scalar int32/int64 tensor, "
            f"got dtype {arr.dtype} shape {arr.shape}"
        )
    return int(arr.reshape(-1)[0])


def normalize(pos: int, n: int, op_name: str, allow_end: bool = False) -> int:
    """Map a position in [-n, n-1] (or [-n, n] when ``allow_end``) to [0, n-1] (or [0, n])."""
    hi = n if allow_end else n - 1
    if not -n <= pos <= hi:
        raise InvalidArgument(f"{op_name}: position {pos} is out of range [{-n}, {hi}] for length {n}")
    return pos + n if pos < 0 else pos
