"""Range: ``start, start + delta, ...`` up to ``limit`` (exclusive); opset 27 adds ``stash_type``."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import LazyDtypeSet
from onyx.ir.symbolic import Sym
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext

_BF16 = LazyDtypeSet("bfloat16")


def _scalar(v, what: str) -> np.ndarray:
    a = np.asarray(v)
    if a.size != 1:
        raise InvalidArgument(f"Range: {what} must be a scalar, got shape {a.shape}")
    return a.reshape(())


def _range(start, limit, delta, stash_type: int = 1) -> np.ndarray:
    s, lim, d = _scalar(start, "start"), _scalar(limit, "limit"), _scalar(delta, "delta")
    dtype = s.dtype
    if dtype.kind in "iu":
        si, li, di = int(s), int(lim), int(d)
        if di == 0:
            raise InvalidArgument("Range: delta must not be zero")
        n = max(-((si - li) // di), 0)
        return (si + np.arange(n, dtype=np.int64) * di).astype(dtype)
    if dtype == np.float16 or dtype in _BF16:
        # stash_type 1: start, limit and delta go to float32 first; otherwise compute in the type itself
        work = np.dtype(np.float32) if stash_type == 1 else dtype
    else:
        work = np.dtype(np.float64)
    sf, lf, df = (np.asarray(v).astype(work) for v in (s, lim, d))
    if float(df) == 0:
        raise InvalidArgument("Range: delta must not be zero")
    q = (float(lf) - float(sf)) / float(df)
    if not math.isfinite(q):
        raise InvalidArgument(f"Range: cannot make a range from {float(sf)} to {float(lf)} by {float(df)}")
    n = max(math.ceil(q), 0)
    return (sf + np.arange(n).astype(work) * df).astype(dtype)


@op("Range", since=11, until=27)
def range_11(start, limit, delta):
    return _range(start, limit, delta)


@op("Range", since=27)
def range_27(start, limit, delta, *, stash_type=1):
    return _range(start, limit, delta, stash_type)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Range")
def _range_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    for i in range(3):
        s = ctx.input_shape(i)
        if s is not None and S.prod(s) != 1 and S.is_int(S.prod(s)):
            ctx.fail(f"Range: input {i} must be a scalar, got shape {s}")
    vals = [ctx.input_value(i) for i in range(3)]
    ctx.set_output(0, elem, [_range_len(ctx, vals)])


def _range_len(ctx: ShapeContext, vals: list):
    """The number of elements, exact for numbers, symbolic for symbols with an int delta."""
    if any(v is None or np.asarray(v).size != 1 for v in vals):
        return ctx.new_dim()
    s, lim, d = (np.asarray(v).reshape(-1)[0] for v in vals)
    if not any(isinstance(x, Sym) for x in (s, lim, d)):
        try:
            fs, fl, fd = float(s), float(lim), float(d)
        except (TypeError, ValueError):
            return ctx.new_dim()
        if fd == 0:
            ctx.fail("Range: delta must not be zero")
        if all(isinstance(x, int | np.integer) for x in (s, lim, d)):
            return max(-((int(s) - int(lim)) // int(d)), 0)
        q = (fl - fs) / fd
        return max(math.ceil(q), 0) if math.isfinite(q) else ctx.new_dim()
    if not isinstance(d, int | np.integer) or int(d) == 0:
        return ctx.new_dim()
    d = int(d)
    span = lim - s if d > 0 else s - lim
    if S.is_int(span):
        return max(0, -(-span // abs(d)))
    return S.ceil_div(span, abs(d)) if S.sign(span) != -1 else ctx.new_dim()
