"""SwiGLU: Swish_alpha(A) * B for A and B of the same shape (no broadcasting)."""

from onyx.errors import InvalidArgument
from onyx.ops.activation._common import float_kernel
from onyx.ops.activation.swish import swish
from onyx.ops.math._shape import merge_shapes
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


def _swiglu(a, b, alpha):
    y = swish(a, alpha)
    y *= b
    return y


_run = float_kernel(_swiglu)


@op("SwiGLU", since=28)
def swi_glu_28(a, b, *, alpha=1.0):
    if a.shape != b.shape:
        raise InvalidArgument(f"SwiGLU: A {a.shape} and B {b.shape} must have the same shape")
    return _run(a, b, alpha)


@shape_rule("SwiGLU")
def _swi_glu_shape(ctx: ShapeContext) -> None:
    """A and B have identical shapes (no broadcasting); Y has that shape and A's element type."""
    dims = merge_shapes(ctx, ctx.input_shape(0), ctx.input_shape(1), "SwiGLU A and B")
    elem = ctx.input_elem(0) if ctx.input_elem(0) is not None else ctx.input_elem(1)
    ctx.set_output(0, elem, dims)
