"""Transpose: a view with permuted axes (reversed by default)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


@op("Transpose", since=1)
def transpose_1(data, *, perm=None):
    x = np.asarray(data)
    if perm is None:
        return x.transpose()
    p = [int(a) for a in perm]
    if sorted(p) != list(range(x.ndim)):
        raise InvalidArgument(f"Transpose: perm {p} is not a permutation of the axes of shape {x.shape}")
    return x.transpose(p)
