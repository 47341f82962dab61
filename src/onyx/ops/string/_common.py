"""Helpers shared by the string kernels. String tensors are numpy object arrays of ``str``."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def as_strings(x: Any, op_name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    if arr.dtype != object:
        raise InvalidArgument(f"{op_name}: expected a string tensor, got element type {arr.dtype}")
    return arr


def _per_char(s: str, fn) -> str:
    # Case mapping one character at a time, a character whose mapping is several characters (such as
    # German sharp s, whose upper case is "SS") is kept unchanged: onnxruntime maps wide characters one
    # to one (towupper/towlower), and the node suite expects that.
    return "".join(m if len(m := fn(c)) == 1 else c for c in s)


def upper(s: str) -> str:
    u = s.upper()
    return u if len(u) == len(s) else _per_char(s, str.upper)


def lower(s: str) -> str:
    u = s.lower()
    return u if len(u) == len(s) else _per_char(s, str.lower)
