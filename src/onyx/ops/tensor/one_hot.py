"""OneHot: one-hot encode ``indices`` with ``depth`` classes and [off, on] ``values``."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.symbolic import Sym
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


@op("OneHot", since=9)
def one_hot_9(indices, depth, values, *, axis=-1):
    idx = np.asarray(indices)
    d = np.asarray(depth)
    if d.size != 1:
        raise InvalidArgument(f"OneHot: depth must hold one value, got shape {d.shape}")
    n = int(d.reshape(-1)[0])
    if n < 1:
        raise InvalidArgument(f"OneHot: depth must be positive, got {n}")
    vals = np.asarray(values)
    if vals.size != 2:
        raise InvalidArgument(f"OneHot: values must hold [off_value, on_value], got shape {vals.shape}")
    vals = vals.reshape(2)
    r = idx.ndim + 1
    ax = int(axis)
    if not -r <= ax < r:
        raise InvalidArgument(f"OneHot: axis {ax} out of range for output rank {r}")
    if ax < 0:
        ax += r
    if idx.dtype.kind == "f" or idx.dtype.kind not in "iub":
        idx = idx.astype(np.float64).astype(np.int64)
    else:
        idx = idx.astype(np.int64, copy=False)
    idx = np.where(idx < 0, idx + n, idx)
    shape = [1] * r
    shape[ax] = n
    classes = np.arange(n, dtype=np.int64).reshape(shape)
    hot = np.expand_dims(idx, ax) == classes
    out = np.empty(hot.shape, dtype=vals.dtype)
    out[...] = vals[0]
    out[hot] = vals[1]
    return out


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("OneHot")
@S.with_input_shape(elem_from=2)
def _one_hot_shape(ctx: ShapeContext, elem: int | None, idx: list) -> None:
    r = len(idx) + 1
    ax = S.norm_axis(ctx, ctx.attr("axis", -1), r, "OneHot: axis")
    depth = ctx.input_value(1)
    n = None
    if depth is not None and np.asarray(depth).size == 1:
        v = np.asarray(depth).reshape(-1)[0]
        if isinstance(v, Sym):
            n = v
        else:
            try:
                n = int(float(v))
            except (TypeError, ValueError, OverflowError):
                n = None
            if n is not None and n < 1:
                ctx.fail(f"OneHot: depth must be positive, got {n}")
    ctx.set_output(0, elem, idx[:ax] + [ctx.new_dim() if n is None else n] + idx[ax:])
