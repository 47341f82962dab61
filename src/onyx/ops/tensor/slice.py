"""Slice: a strided view; opset 1 takes starts/ends/axes as attributes, opset 10 as inputs plus steps.

Out-of-range starts and ends are clamped: to [0, dim] for positive steps and to [0, dim - 1] /
[-1, dim - 1] for negative ones (an end of -1 after clamping means "through index 0").
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axes
from onyx.shape_inference import ShapeContext


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


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Slice")
@S.with_input_shape()
def _slice_shape(ctx: ShapeContext, elem: int | None, src: list) -> None:
    r = len(src)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts", None), ctx.attr("ends", None)
        axes, steps = ctx.attr("axes", None), None
    else:
        starts, ends = S.int_values(ctx, 1), S.int_values(ctx, 2)
        axes = S.int_values(ctx, 3) if ctx.has_input(3) else None
        steps = S.int_values(ctx, 4) if ctx.has_input(4) else None
        if (ctx.has_input(3) and axes is None) or S.plain_ints(axes) is None and axes is not None:
            ctx.set_output(0, elem, S.fresh(ctx, r))  # which axes are sliced is not known
            return
    if starts is None or ends is None or (ctx.has_input(4) and steps is None):
        # the sliced axes lose their size; without axes every leading axis may be sliced
        out: list = S.fresh(ctx, r)
        if axes is not None:
            sliced = set(S.norm_axes(ctx, axes, r, "Slice: axes"))
            out = [ctx.new_dim() if a in sliced else d for a, d in enumerate(src)]
        ctx.set_output(0, elem, out)
        return
    n = len(starts)
    if axes is None and n > r:
        ctx.fail(f"Slice: {n} starts for an input of rank {r}")
    axes = list(range(n)) if axes is None else S.norm_axes(ctx, axes, r, "Slice: axes")
    steps = [1] * n if steps is None else steps
    if len(ends) != n or len(axes) != n or len(steps) != n:
        ctx.fail(f"Slice: starts, ends, axes and steps must have the same length ({n})")
    out = list(src)
    for s, e, a, st in zip(starts, ends, axes, steps):
        if not S.is_int(st):
            out[a] = ctx.new_dim()
            continue
        if st == 0:
            ctx.fail("Slice: steps must not be 0")
        n_a = slice_len(src[a], s, e, int(st))
        out[a] = n_a if n_a is not None or src[a] is None else ctx.new_dim()
    ctx.set_output(0, elem, out)


def slice_len(dim, start, end, step: int):
    """The length of ``range(start, end, step)`` over an axis of size ``dim`` with ONNX clamping.

    Ends at or beyond INT64_MAX-like values mean the end of the axis. Symbolic starts/ends (computed
    from Shape: non-negative unless every coefficient is negative) and negative ints on a symbolic
    axis are taken to lie within the axis (``x[1:]`` of
    ``seq`` gives ``seq-1``); a positive int end on a symbolic axis (``x[:5]`` of ``seq``:
    ``min(5, seq)``) gives None, as does anything else that cannot be told."""
    if S.is_int(dim) and S.is_int(start) and S.is_int(end):
        return len(range(*slice(int(start), int(end), step).indices(int(dim))))
    fwd = step > 0
    s = _position(dim, start, fwd, is_start=True)
    e = _position(dim, end, fwd, is_start=False)
    if s is None or e is None:
        return None
    span = e - s if fwd else s - e
    if S.is_int(span):
        return max(0, -(-span // abs(step)))
    if S.sign(span) == -1:
        return 0
    return S.ceil_div(span, abs(step))


def _position(dim, v, fwd: bool, is_start: bool):
    """Where a start/end lands on the axis after clamping (forward: [0, dim]; backward: [-1, dim-1]),
    or None when that depends on values not known."""
    last = None if dim is None else dim - 1
    if S.is_int(v):
        v = int(v)
        if v >= S.HUGE:
            return dim if fwd else last
        if v <= -S.HUGE:
            return 0 if fwd else -1
        if v < 0:
            if dim is None:
                return None
            p = dim + v
            if S.is_int(p):
                return max(p, 0 if fwd or is_start else -1)
            return p
        if S.is_int(dim):
            return min(v, dim if fwd else dim - 1)
        # an int position on a symbolic axis: taken as is where it bounds the slice from the low side
        # (x[1:] of seq is seq-1 whenever seq >= 1); min(v, dim) on the high side is not known
        return v if v == 0 or fwd == is_start else None
    # a symbolic position: computed from dims, so taken as a position from the start unless every
    # coefficient is negative (-seq: from the end); k-q (GPT-2's past length) counts as non-negative
    if S.sign(v) == -1:
        return None if dim is None else dim + v
    return v
