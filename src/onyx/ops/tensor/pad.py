"""Pad: pad (or, with negative pads, crop) a tensor; modes constant, reflect, edge and wrap.

Opsets 1 and 2 take the pads (``paddings``, then ``pads``) and the constant ``value`` as attributes;
opset 11 moves them to inputs; opset 18 adds the optional ``axes`` input; opset 19 adds ``wrap``.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axes
from onyx.shape_inference import ShapeContext

_MODES = ("constant", "reflect", "edge", "wrap")


def pad(x, pads: list[int], mode: str, value=None, axes: list[int] | None = None) -> np.ndarray:
    x = np.asarray(x)
    r = x.ndim
    if mode not in _MODES:
        raise InvalidArgument(f"Pad: mode must be one of {_MODES}, got {mode!r}")
    axes = list(range(r)) if axes is None else norm_axes(axes, r, "Pad: axes")
    if len(pads) != 2 * len(axes):
        raise InvalidArgument(
            f"Pad: pads has {len(pads)} values, expected {2 * len(axes)} for {len(axes)} axes "
            f"(input shape {x.shape})"
        )
    begin = [0] * r
    end = [0] * r
    for i, a in enumerate(axes):
        begin[a] = int(pads[i])
        end[a] = int(pads[i + len(axes)])
    # negative pads crop first
    if any(p < 0 for p in begin + end):
        sl = []
        for d in range(r):
            b0 = -begin[d] if begin[d] < 0 else 0
            e0 = x.shape[d] + end[d] if end[d] < 0 else x.shape[d]
            if e0 < b0:
                raise InvalidArgument(f"Pad: negative pads remove more than axis {d} of size {x.shape[d]}")
            sl.append(slice(b0, e0))
        x = x[tuple(sl)]
        begin = [max(p, 0) for p in begin]
        end = [max(p, 0) for p in end]
    if not any(begin) and not any(end):
        return x
    out_shape = tuple(x.shape[d] + begin[d] + end[d] for d in range(r))
    if mode == "constant":
        if value is None:
            fill = "" if x.dtype == object else 0
        else:
            v = np.asarray(value)
            if v.size != 1:
                raise InvalidArgument(f"Pad: constant_value must hold one value, got shape {v.shape}")
            fill = v.reshape(-1)[0]
        out = np.full(out_shape, fill, dtype=x.dtype)
        out[tuple(slice(begin[d], begin[d] + x.shape[d]) for d in range(r))] = x
        return out
    for d in range(r):
        if (begin[d] or end[d]) and x.shape[d] == 0:
            raise InvalidArgument(f"Pad: cannot {mode}-pad axis {d} of size 0 (input shape {x.shape})")
    return np.pad(x, list(zip(begin, end)), mode=mode)


@op("Pad", since=1, until=2)
def pad_1(data, *, paddings, mode="constant", value=0.0):
    return pad(data, list(paddings), mode, np.array(value).astype(np.asarray(data).dtype))


@op("Pad", since=2, until=11)
def pad_2(data, *, pads, mode="constant", value=0.0):
    return pad(data, list(pads), mode, np.array(value).astype(np.asarray(data).dtype))


@op("Pad", since=11, until=18)
def pad_11(data, pads, constant_value=None, *, mode="constant"):
    return pad(data, int_list(pads, "Pad: pads"), mode, constant_value)


@op("Pad", since=18)
def pad_18(data, pads, constant_value=None, axes=None, *, mode="constant"):
    ax = None if axes is None else int_list(axes, "Pad: axes")
    return pad(data, int_list(pads, "Pad: pads"), mode, constant_value, ax)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Pad")
@S.with_input_shape()
def _pad_shape(ctx: ShapeContext, elem: int | None, src: list) -> None:
    r = len(src)
    if ctx.opset < 11:
        attr = ctx.attr("pads" if ctx.opset >= 2 else "paddings", None)
        pads = None if attr is None else [int(v) for v in attr]
        axes: list | None = list(range(r))
    else:
        pads = S.int_values(ctx, 1)
        axes = list(range(r))
        if ctx.has_input(3):
            given = S.plain_ints(S.int_values(ctx, 3))
            axes = None if given is None else S.norm_axes(ctx, given, r, "Pad: axes")
    if pads is None or axes is None:
        ctx.set_output(0, elem, S.fresh(ctx, r))
        return
    if len(pads) != 2 * len(axes):
        ctx.fail(f"Pad: pads has {len(pads)} values, expected {2 * len(axes)} for {len(axes)} axes")
    out = list(src)
    for i, a in enumerate(axes):
        b, e = pads[i], pads[i + len(axes)]
        out[a] = None if out[a] is None else out[a] + b + e
        if S.is_int(out[a]) and out[a] < 0:
            ctx.fail(f"Pad: pads {pads} remove more than axis {a} of input shape {src}")
    ctx.set_output(0, elem, out)
