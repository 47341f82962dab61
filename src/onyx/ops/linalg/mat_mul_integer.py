"""MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) of 8-bit integers, int32 output.

a_zero_point is a scalar or one value per row of A; b_zero_point a scalar or one per column of B.
The products run through float BLAS, exactly: float32 while K * 255 * 255 < 2**24, else float64.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.ops.linalg.mat_mul import matmul_dims
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


def _centred(x, zp, axis, dt, name):
    xf = x.astype(dt)
    if zp is None:
        return xf
    if zp.size == 1:
        z = zp.reshape(())
        if z != 0:
            xf -= dt.type(z)
        return xf
    if zp.ndim == 1:
        # per row of A (axis -2) or per column of B (axis -1)
        z = zp.astype(dt)
        if x.ndim < 2 or x.shape[axis] != z.shape[0]:
            raise InvalidArgument(f"MatMulInteger: {name} {zp.shape} does not match input {x.shape}")
        xf -= z[:, None] if axis == -2 else z
        return xf
    try:
        xf -= zp.astype(dt)
    except ValueError:
        raise InvalidArgument(f"MatMulInteger: {name} {zp.shape} does not match input {x.shape}") from None
    return xf


@op("MatMulInteger", since=10)
def mat_mul_integer_10(a, b, a_zero_point=None, b_zero_point=None):
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"MatMulInteger: inputs must have rank >= 1, got {a.shape} and {b.shape}")
    k = a.shape[-1]
    dt = np.dtype(np.float32) if k * 65025 < (1 << 24) else np.dtype(np.float64)
    af = _centred(a, a_zero_point, -2, dt, "a_zero_point")
    bf = _centred(b, b_zero_point, -1, dt, "b_zero_point")
    try:
        y = np.matmul(af, bf, out=...)
    except ValueError:
        raise InvalidArgument(f"MatMulInteger: shapes {a.shape} and {b.shape} cannot be multiplied") from None
    return y.astype(np.int32)


@shape_rule("MatMulInteger")
def _mat_mul_integer_shape(ctx: ShapeContext) -> None:
    """MatMul's shape; the products accumulate in int32."""
    ctx.set_output(0, int(DataType.INT32), matmul_dims(ctx))
