"""Softmax, LogSoftmax and Hardmax share their axis handling.

Opsets 1-12 coerce the input to 2-D (dimensions before ``axis`` by dimensions from ``axis`` on) and
work on the second dimension; opset 13 works along ``axis`` itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.ops.math._common import F32, NATIVE_FLOATS, named, norm_axis
from onyx.ops.math._shape import check_axis
from onyx.ops.registry import register, shape_rule
from onyx.shape_inference import ShapeContext


def softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.subtract(x, m, out=...)
    np.exp(e, out=e)
    s = np.sum(e, axis=axis, keepdims=True)
    e /= s
    return e


def masked_softmax_(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis, in place (attention's scores): a row whose scores are all -inf
    (every key masked) gives zeros rather than NaN."""
    m = scores.max(axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0
    scores -= m
    np.exp(scores, out=scores)
    total = scores.sum(axis=-1, keepdims=True)
    total[total == 0] = 1
    scores /= total
    return scores


def log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    d = np.subtract(x, m, out=...)
    e = np.exp(d)
    s = np.sum(e, axis=axis, keepdims=True)
    np.log(s, out=s)
    d -= s
    return d


def hardmax(x, axis):
    out = np.zeros_like(x)
    idx = np.argmax(x, axis=axis, keepdims=True)
    np.put_along_axis(out, idx, 1, axis=axis)
    return out


def run(op_type, fn, x, axis, coerce_2d):
    ax = norm_axis(axis, x.ndim, op_type)
    dt = x.dtype
    if x.size == 0:
        return x.copy()
    # float16 and bfloat16 are computed in their own type, as the spec's reference does: rounding
    # each step is what the conformance suite expects
    xc = x if dt in NATIVE_FLOATS or fn is hardmax or dt.name in ("bfloat16", "float16") else x.astype(F32)
    if coerce_2d:
        shape = x.shape
        n = int(np.prod(shape[:ax], dtype=np.int64))
        y = fn(xc.reshape(n, -1), 1).reshape(shape)
    else:
        y = fn(xc, ax)
    return y if y.dtype == dt else y.astype(dt)


def axis_op(op_type: str, fn: Callable[[np.ndarray, int], np.ndarray]) -> Callable:
    """Register ``op_type`` as ``fn(x, axis)``: opsets 1-12 on the input coerced to 2-D around ``axis``
    (default 1), opset 13 on along ``axis`` itself (default -1). Returns the opset-13 kernel."""

    def kernel_1(x, *, axis=1):
        return run(op_type, fn, x, axis, True)

    def kernel_13(x, *, axis=-1):
        return run(op_type, fn, x, axis, False)

    register(op_type, named(kernel_1, op_type, 1), since=1, until=13)
    register(op_type, named(kernel_13, op_type, 13), since=13)
    shape_rule(op_type)(axis_rule)
    return kernel_13


def axis_rule(ctx: ShapeContext) -> None:
    """Softmax, LogSoftmax, Hardmax: the input's type and shape; ``axis`` (default 1 before opset 13,
    -1 from 13) is checked against the rank."""
    axis = ctx.attr("axis", 1 if ctx.opset < 13 else -1)
    if not isinstance(axis, int):
        ctx.fail(f"attribute axis must be an integer, got {axis!r}")
    check_axis(ctx, axis, ctx.input_rank(0), ctx.node.op_type)
    ctx.same_as_input(0)
