"""Split: views of consecutive chunks along an axis.

Opset 1 takes ``split`` as an optional input or attribute, opsets 2-11 as an attribute, opset 13 as
an input; without it the axis is split into equal parts, one per declared output. Opset 18 adds
``num_outputs``: chunks of ceil(dim / num_outputs), the last one smaller.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list, norm_axis


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
