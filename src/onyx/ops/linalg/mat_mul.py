"""MatMul: numpy.matmul semantics (1-D operands promoted and the added dimension dropped; batch
dimensions broadcast). float16/bfloat16 run through float32 BLAS; integers wrap as in C."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.registry import op


def matmul(a, b):
    try:
        if a.dtype in NATIVE_FLOATS or a.dtype.kind in "iu":
            return np.matmul(a, b, out=...)
        return np.matmul(a.astype(F32), b.astype(F32), out=...).astype(a.dtype)
    except ValueError:
        raise InvalidArgument(f"MatMul: shapes {a.shape} and {b.shape} cannot be multiplied") from None


@op("MatMul", since=1)
def mat_mul_1(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"MatMul: inputs must have rank >= 1, got {a.shape} and {b.shape}")
    return matmul(a, b)
