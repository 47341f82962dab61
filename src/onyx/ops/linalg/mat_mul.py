"""MatMul: numpy.matmul semantics (1-D operands promoted and the added dimension dropped; batch
dimensions broadcast). float16/bfloat16 run through float32 BLAS; integers wrap as in C."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.products import product
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.math._shape import broadcast, merge_dim
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


def matmul(a, b, ctx=None):
    try:
        if a.dtype in NATIVE_FLOATS and b.dtype == a.dtype and a.ndim >= 2 and b.ndim >= 2:
            m, k = a.shape[-2:]
            batch = max(a.size // max(m * k, 1), b.size // max(k * b.shape[-1], 1))
            if ctx is None:
                return product(a, b, batch * m * k * b.shape[-1])
            # the run's stop, when it has one: a huge product runs in blocks, checking it between them
            return product(a, b, batch * m * k * b.shape[-1], threads=ctx.intra_op_num_threads, stop=ctx.stop)
        if a.dtype in NATIVE_FLOATS or a.dtype.kind in "iu":
            return np.matmul(a, b, out=...)
        return np.matmul(a.astype(F32), b.astype(F32), out=...).astype(a.dtype)
    except ValueError:
        raise InvalidArgument(f"MatMul: shapes {a.shape} and {b.shape} cannot be multiplied") from None


@op("MatMul", since=1)
def mat_mul_1(a, b, *, _ctx=None):
    if a.ndim == 0 or b.ndim == 0:
        raise InvalidArgument(f"MatMul: inputs must have rank >= 1, got {a.shape} and {b.shape}")
    return matmul(a, b, _ctx)


def matmul_dims(ctx: ShapeContext) -> list | None:
    """numpy.matmul's output dims for inputs 0 and 1: a 1-D A gets a 1 prepended and a 1-D B a 1
    appended, both removed again; the batch dims broadcast; the inner dims must agree."""
    a, b = ctx.input_shape(0), ctx.input_shape(1)
    if (a is not None and not a) or (b is not None and not b):
        ctx.fail(f"inputs must have rank >= 1, got {a} and {b}")
    if a is None or b is None:
        return None
    aa = [1, *a] if len(a) == 1 else a
    bb = [*b, 1] if len(b) == 1 else b
    merge_dim(ctx, aa[-1], bb[-2], f"inner dims of A {a} and B {b}")
    dims = broadcast(ctx, [aa[:-2], bb[:-2]]) or []
    if len(a) > 1:
        dims.append(aa[-2])
    if len(b) > 1:
        dims.append(bb[-1])
    return dims


@shape_rule("MatMul")
def _mat_mul_shape(ctx: ShapeContext) -> None:
    ctx.set_output(0, ctx.input_elem(0), matmul_dims(ctx))
