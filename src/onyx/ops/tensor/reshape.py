"""Reshape: a view with a new shape; 0 copies the input dim (unless allowzero), -1 is inferred."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list
from onyx.shape_inference import ShapeContext


def reshape(x, shape: list[int], allowzero: int = 0) -> np.ndarray:
    x = np.asarray(x)
    out = list(shape)
    if out.count(-1) > 1:
        raise InvalidArgument(f"Reshape: shape {shape} has more than one -1")
    if allowzero and 0 in out and -1 in out:
        raise InvalidArgument(f"Reshape: shape {shape} has both 0 and -1 while allowzero=1")
    for i, d in enumerate(out):
        if d == 0 and not allowzero:
            if i >= x.ndim:
                raise InvalidArgument(f"Reshape: shape {shape} copies dim {i} of an input of shape {x.shape}")
            out[i] = x.shape[i]
        elif d < -1:
            raise InvalidArgument(f"Reshape: shape {shape} has a negative dimension {d}")
    if -1 in out:
        i = out.index(-1)
        rest = math.prod(out[:i] + out[i + 1 :])
        if rest == 0 or x.size % rest:
            raise InvalidArgument(f"Reshape: cannot infer -1 in shape {shape} for input shape {x.shape}")
        out[i] = x.size // rest
    if math.prod(out) != x.size:
        raise InvalidArgument(f"Reshape: input shape {x.shape} ({x.size} elements) cannot become {shape}")
    return x.reshape(out)


@op("Reshape", since=1, until=5)
def reshape_1(data, *, shape=None, consumed_inputs=None):
    if shape is None:
        raise InvalidArgument("Reshape: opset-1 Reshape needs the 'shape' attribute")
    return reshape(data, list(shape))


@op("Reshape", since=5, until=14)
def reshape_5(data, shape):
    return reshape(data, int_list(shape, "Reshape: shape"))


@op("Reshape", since=14)
def reshape_14(data, shape, *, allowzero=0):
    return reshape(data, int_list(shape, "Reshape: shape"), allowzero)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Reshape")
def _reshape_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    if ctx.opset < 5:
        attr = ctx.attr("shape", None)
        target = None if attr is None else [int(v) for v in attr]
    else:
        target = S.int_values(ctx, 1)
    if target is None:
        n = S.vector_length(ctx, 1) if ctx.opset >= 5 else None
        ctx.set_output(0, elem, None if n is None else S.fresh(ctx, n))
        return
    ctx.set_output(0, elem, reshape_dims(ctx, ctx.input_shape(0), target, int(ctx.attr("allowzero", 0))))


def reshape_dims(ctx: ShapeContext, src: list | None, target: list, allowzero: int = 0) -> list:
    """The output dims of Reshape(src -> target), with 0 (copy) and -1 (inferred) resolved."""
    out: list = []
    minus = [i for i, d in enumerate(target) if S.is_int(d) and d == -1]
    if len(minus) > 1:
        ctx.fail(f"Reshape: shape {target} has more than one -1")
    if allowzero and minus and any(S.is_int(d) and d == 0 for d in target):
        ctx.fail(f"Reshape: shape {target} has both 0 and -1 while allowzero=1")
    for i, d in enumerate(target):
        if S.is_int(d) and d == 0 and not allowzero:
            if src is None:
                out.append(None)
            elif i >= len(src):
                ctx.fail(f"Reshape: shape {target} copies dim {i} of an input of rank {len(src)}")
            else:
                out.append(src[i])
        elif S.is_int(d) and d < -1:
            ctx.fail(f"Reshape: shape {target} has a negative dimension {d}")
        elif S.is_int(d) and d == -1:
            out.append(None)
        else:
            out.append(d)
    total = S.prod(src)
    if minus:
        i = minus[0]
        copied = {k for k, d in enumerate(target) if S.is_int(d) and d == 0 and not allowzero}
        out[i] = _infer_minus_one(ctx, src, out, i, copied, target)
    elif S.is_int(total) and S.is_int(S.prod(out)) and total != S.prod(out):
        ctx.fail(f"Reshape: input shape {src} ({total} elements) cannot become {target}")
    return out


def _infer_minus_one(ctx: ShapeContext, src: list | None, out: list, i: int, copied: set, target: list):
    if src is None:
        return None
    # cancel the dims that appear on both sides (keeps unknown input dims out of the quotient): first
    # those a 0 copies (the same dim, even unknown), then equal ones
    left = [d for k, d in enumerate(src) if k not in copied]
    right = []
    for k, d in enumerate(out):
        if k == i or k in copied:
            continue
        for j, s in enumerate(left):
            if d is not None and S.same(s, d):
                del left[j]
                break
        else:
            right.append(d)
    num, den = S.prod(left), S.prod(right)
    if num is None or den is None:
        return None
    if S.is_int(den) and den == 0:
        if S.is_int(num) and num != 0:
            ctx.fail(f"Reshape: cannot infer -1 in shape {target} for input shape {src}")
        return None
    if S.is_int(num) and S.is_int(den):
        if num % den:
            ctx.fail(f"Reshape: cannot infer -1 in shape {target} for input shape {src}")
        return num // den
    return S.div_exact(num, den)
