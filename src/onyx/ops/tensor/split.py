"""Split: views of consecutive chunks along an axis.

Opset 1 takes ``split`` as an optional input or attribute, opsets 2-11 as an attribute, opset 13 as
an input; without it the axis is split into equal parts, one per declared output. Opset 18 adds
``num_outputs``: chunks of ceil(dim / num_outputs), the last one smaller.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axis
from onyx.shape_inference import ShapeContext


def split_views(x, axis: int, sizes: list[int]) -> tuple[np.ndarray, ...]:
    x = np.asarray(x)
    ax = norm_axis(axis, x.ndim)
    dim = x.shape[ax]
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise InvalidArgument(f"Split: split sizes {sizes} do not add up to axis {ax} of size {dim}")
    out = []
    pos = 0
    pre = (slice(None),) * ax
    for s in sizes:
        out.append(x[pre + (slice(pos, pos + s),)])
        pos += s
    return tuple(out)


def _equal(x, axis: int, n: int) -> list[int]:
    x = np.asarray(x)
    dim = x.shape[norm_axis(axis, x.ndim)]
    if n <= 0 or dim % n:
        raise InvalidArgument(f"Split: axis {axis} of size {dim} cannot be split into {n} equal parts")
    return [dim // n] * n


def _check_count(sizes: list[int], n: int) -> None:
    if len(sizes) != n:
        raise InvalidArgument(f"Split: split has {len(sizes)} entries but the node has {n} outputs")


@op("Split", since=1, until=2)
def split_1(input, split_input=None, *, axis=0, split=None, _num_outputs):
    if split_input is not None:
        sizes = int_list(split_input, "Split: split")
    elif split:
        sizes = list(split)
    else:
        sizes = _equal(input, axis, _num_outputs)
    _check_count(sizes, _num_outputs)
    return split_views(input, axis, sizes)


@op("Split", since=2, until=13)
def split_2(input, *, axis=0, split=None, _num_outputs):
    sizes = list(split) if split else _equal(input, axis, _num_outputs)
    _check_count(sizes, _num_outputs)
    return split_views(input, axis, sizes)


@op("Split", since=13, until=18)
def split_13(input, split=None, *, axis=0, _num_outputs):
    sizes = int_list(split, "Split: split") if split is not None else _equal(input, axis, _num_outputs)
    _check_count(sizes, _num_outputs)
    return split_views(input, axis, sizes)


@op("Split", since=18)
def split_18(input, split=None, *, axis=0, num_outputs=None, _num_outputs):
    if split is not None and num_outputs is not None:
        raise InvalidArgument("Split: give either the 'split' input or the 'num_outputs' attribute, not both")
    if split is not None:
        sizes = int_list(split, "Split: split")
    else:
        if num_outputs is None:
            raise InvalidArgument("Split-18: needs the 'split' input or the 'num_outputs' attribute")
        n = int(num_outputs)
        if n != _num_outputs:
            raise InvalidArgument(f"Split: num_outputs={n} but the node has {_num_outputs} outputs")
        x = np.asarray(input)
        dim = x.shape[norm_axis(axis, x.ndim)]
        chunk = -(-dim // n) if n > 0 else 0
        sizes = [max(0, min(chunk, dim - i * chunk)) for i in range(n)]
    _check_count(sizes, _num_outputs)
    return split_views(input, axis, sizes)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Split")
def _split_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    n_out = ctx.num_outputs
    if src is None:
        for i in range(n_out):
            ctx.set_output(i, elem, None)
        return
    ax = S.norm_axis(ctx, ctx.attr("axis", 0), len(src), "Split: axis")
    dim = src[ax]
    sizes: list | None
    if ctx.opset < 13 and ctx.attr("split", None):
        sizes = [int(v) for v in ctx.attr("split")]
    elif ctx.opset < 2 and ctx.has_input(1) or ctx.opset >= 13 and ctx.has_input(1):
        sizes = S.int_values(ctx, 1)
    elif ctx.opset >= 18:
        num = ctx.attr("num_outputs", None)
        if num is None:
            ctx.fail("Split-18: needs the 'split' input or the 'num_outputs' attribute")
        n = int(num)
        if n != n_out:
            ctx.fail(f"Split: num_outputs={n} but the node has {n_out} outputs")
        sizes = _ceil_chunks(ctx, dim, n)
    else:
        sizes = _equal_chunks(ctx, dim, n_out)
    if sizes is not None:
        if len(sizes) != n_out:
            ctx.fail(f"Split: split has {len(sizes)} entries but the node has {n_out} outputs")
        total = sum(sizes) if all(S.is_int(v) for v in sizes) else None
        if total is not None and S.is_int(dim) and total != dim:
            ctx.fail(f"Split: split sizes {sizes} do not add up to axis {ax} of size {dim}")
    for i in range(n_out):
        ctx.set_output(i, elem, src[:ax] + [ctx.new_dim() if sizes is None else sizes[i]] + src[ax + 1 :])
    value = ctx.input_value(0)
    if value is not None and sizes is not None and all(S.is_int(v) and v >= 0 for v in sizes):
        # a symbolic shape vector split into parts (the driver folds numeric values itself)
        arr = np.asarray(value)
        if arr.shape[ax] == sum(sizes):
            for i, part in enumerate(np.split(arr, np.cumsum(sizes[:-1]).astype(int), axis=ax)):
                ctx.set_output_value(i, S.value_array(part), S.INT64)


def _equal_chunks(ctx: ShapeContext, dim, n: int) -> list:
    if n <= 0:
        ctx.fail("Split: the node has no outputs")
    if S.is_int(dim):
        if dim % n:
            ctx.fail(f"Split: axis of size {dim} cannot be split into {n} equal parts")
        return [dim // n] * n
    return [S.div_exact(dim, n)] * n


def _ceil_chunks(ctx: ShapeContext, dim, n: int) -> list:
    if n <= 0:
        return []
    if S.is_int(dim):
        chunk = -(-dim // n)
        return [max(0, min(chunk, dim - i * chunk)) for i in range(n)]
    if dim is None:
        return [None] * n
    if S.is_int(dim % n) and dim % n == 0:
        return [dim // n] * n
    chunk = S.ceil_div(dim, n)
    # the last chunk, dim - (n-1)*ceil(dim/n), has no unambiguous symbolic form: a fresh symbol
    return [chunk] * (n - 1) + [ctx.new_dim()]
