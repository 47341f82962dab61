"""com.microsoft UnfoldTensor: torch's ``Tensor.unfold(dim, size, step)``: every window of ``size``
along ``dim``, ``step`` apart, as a new last axis (the windows replace ``dim``)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _check(rank: int, dim: int, size: int, step: int, length) -> int:
    if not -rank <= dim < rank:
        raise InvalidArgument(f"UnfoldTensor: dim {dim} is out of range for rank {rank}")
    if size < 1 or step < 1:
        raise InvalidArgument(f"UnfoldTensor: size and step must be positive, got {size} and {step}")
    d = dim % rank
    if isinstance(length, int) and size > length:
        raise InvalidArgument(f"UnfoldTensor: size {size} exceeds the {length} elements of dim {dim}")
    return d


@op("UnfoldTensor", domain="com.microsoft", since=1)
def unfold_tensor(input, *, dim=-1, size, step=1):  # noqa: A002 - the input's name
    x = np.asarray(input)
    d = _check(x.ndim, dim, size, step, x.shape[dim] if x.ndim else None)
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    index = [slice(None)] * windows.ndim
    index[d] = slice(None, None, step)
    return np.ascontiguousarray(windows[tuple(index)])


@shape_rule("UnfoldTensor", domain="com.microsoft")
def _shape(ctx) -> None:
    s, size, step, dim = ctx.input_shape(0), ctx.attr("size"), ctx.attr("step", 1), ctx.attr("dim", -1)
    if s is None or not isinstance(size, int) or not s or not -len(s) <= dim < len(s):
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    d = dim % len(s)
    n = (s[d] - size) // step + 1 if isinstance(s[d], int) and step > 0 and s[d] >= size else None
    ctx.set_output(0, ctx.input_elem(0), list(s[:d]) + [n] + list(s[d + 1 :]) + [size])
