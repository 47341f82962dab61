"""MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) of 8-bit integers, int32 output.

a_zero_point is a scalar or one value per row of A; b_zero_point a scalar or one per column of B. The
products are exact integer GEMMs (onyx.kernels.int8 through onyx.ops.quant._integer).
"""

from onyx.ir.dtypes import DataType
from onyx.ops.linalg.mat_mul import matmul_dims
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext

OP = "MatMulInteger"


@op("MatMulInteger", since=10)
def mat_mul_integer_10(a, b, a_zero_point=None, b_zero_point=None, *, _ctx=None):
    _integer.check_eight_bit(a, "A", OP)
    _integer.check_eight_bit(b, "B", OP)
    rows = a.shape[-2] if a.ndim >= 2 else None
    cols = b.shape[-1] if b.ndim >= 2 else None
    za = _integer.zero_point(a_zero_point, a, "a_zero_point", OP, rows)
    zb = _integer.zero_point(b_zero_point, b, "b_zero_point", OP, cols)
    return _integer.matmul(a, b, za, zb, OP, _integer.threads_of(_ctx))


@shape_rule("MatMulInteger")
def _mat_mul_integer_shape(ctx: ShapeContext) -> None:
    """MatMul's shape; the products accumulate in int32."""
    ctx.set_output(0, int(DataType.INT32), matmul_dims(ctx))
