"""SwiGLU: Swish_alpha(A) * B for A and B of the same shape (no broadcasting)."""

from onyx.errors import InvalidArgument
from onyx.ops.activation._common import float_kernel
from onyx.ops.activation.swish import swish
from onyx.ops.registry import op


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
