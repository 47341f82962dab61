"""Gelu: 0.5 * x * (1 + erf(x / sqrt(2))), or with approximate="tanh"
0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))."""

from onyx.errors import InvalidArgument
from onyx.kernels import activation
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Gelu", since=20)
def gelu_20(x, *, approximate="none", _ctx=None):
    threads = _ctx.intra_op_num_threads if _ctx is not None else 0
    if approximate == "none":
        return activation.gelu(x, threads=threads)
    if approximate == "tanh":
        return activation.gelu_tanh(x, threads=threads)
    raise InvalidArgument(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


shape_rule("Gelu")(same_shape_rule)
