"""Slice: a strided view; opset 1 takes starts/ends/axes as attributes, opset 10 as inputs plus steps.

Out-of-range starts and ends are clamped: to [0, dim] for positive steps and to [0, dim - 1] /
[-1, dim - 1] for negative ones (an end of -1 after clamping means "through index 0").
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list, norm_axes


def slice_view(x, starts: list[int], ends: list[int], axes: list[int] | None, steps: list[int] | None):
    x = np.asarray(x)
    r = x.ndim
    n = len(starts)
    if len(ends) != n:
        raise InvalidArgument(f"Slice: starts ({n}) and ends ({len(ends)}) differ in length")
    axes = list(range(n)) if axes is None else norm_axes(axes, r, "Slice: axes")
    steps = [1] * n if steps is None else steps
    if len(axes) != n or len(steps) != n:
        raise InvalidArgument(f"Slice: starts, ends, axes and steps must have the same length ({n})")
    key = [slice(None)] * r
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            raise InvalidArgument("Slice: steps must not be 0")
        dim = x.shape[a]
        if s < 0:
            s += dim
        if e < 0:
            e += dim
        if st > 0:
            s = min(max(s, 0), dim)
            e = min(max(e, 0), dim)
            key[a] = slice(s, e, st)
        else:
            s = min(max(s, 0), dim - 1)
            e = min(max(e, -1), dim - 1)
            key[a] = slice(s, None if e < 0 else e, st)
    return x[tuple(key)]


@op("Slice", since=1, until=10)
def slice_1(data, *, ends, starts, axes=None):
    return slice_view(data, list(starts), list(ends), None if axes is None else list(axes), None)


@op("Slice", since=10)
def slice_10(data, starts, ends, axes=None, steps=None):
    return slice_view(
        data,
        int_list(starts, "Slice: starts"),
        int_list(ends, "Slice: ends"),
        None if axes is None else int_list(axes, "Slice: axes"),
        None if steps is None else int_list(steps, "Slice: steps"),
    )
