"""Det: determinant of square matrices over the last two dimensions, [*, M, M] -> [*]."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.registry import op


@op("Det", since=11)
def det_11(x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgument(f"Det: input must be [*, M, M], got {x.shape}")
    dt = x.dtype
    r = np.linalg.det(x if dt in NATIVE_FLOATS else x.astype(F32))
    return np.asarray(r, dtype=dt)
