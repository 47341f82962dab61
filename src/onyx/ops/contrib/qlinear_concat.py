"""com.microsoft QLinearConcat: quantized tensors (each with its scale and zero point) concatenated into
Y's scale and zero point: an input with Y's parameters is copied, any other requantized through a
256-entry table (dequantized, quantized again: half to even, saturated)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import apply_table, check_pair, lookup_table
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearConcat"


@op("QLinearConcat", domain="com.microsoft", since=1)
def qlinear_concat(Y_scale, Y_zero_point, *inputs, axis=None):  # noqa: N803
    if axis is None:
        raise InvalidArgument(f"{OP}: the axis attribute is required")
    if not inputs or len(inputs) % 3:
        raise InvalidArgument(
            f"{OP}: inputs must come in (X, X_scale, X_zero_point) triples, got {len(inputs)}"
        )
    out_dtype, zy = _integer.out_zero_point(Y_zero_point, np.asarray(inputs[0]).dtype, OP)
    sy = _integer.scale_of(Y_scale, "Y_scale", OP)[0]
    parts = []
    for i in range(0, len(inputs), 3):
        x, xs, xz = inputs[i : i + 3]
        check_pair(x, xz, f"input {i // 3}", "its zero point", OP)
        if x.dtype != out_dtype:
            raise InvalidArgument(f"{OP}: input {i // 3} is {x.dtype} but Y_zero_point is {out_dtype}")
        sx = _integer.scale_of(xs, f"scale of input {i // 3}", OP)[0]
        zx = int(np.asarray(xz).reshape(-1)[0])
        if sx == sy and zx == zy:
            parts.append(x)
        else:
            parts.append(
                apply_table(x, lookup_table(xs, xz, Y_scale, Y_zero_point, x.dtype, lambda v: v, OP))
            )
    rank = parts[0].ndim
    if not -rank <= int(axis) < rank or any(p.ndim != rank for p in parts):
        raise InvalidArgument(f"{OP}: axis {axis} or the inputs' ranks {[p.ndim for p in parts]} do not fit")
    try:
        return np.concatenate(parts, axis=int(axis))
    except ValueError as e:
        raise InvalidArgument(
            f"{OP}: inputs of shapes {[p.shape for p in parts]} do not concatenate: {e}"
        ) from None


@shape_rule("QLinearConcat", domain="com.microsoft")
def _shape(ctx) -> None:
    shapes = [ctx.input_shape(i) for i in range(2, ctx.num_inputs, 3)]
    elem = ctx.input_elem(1) if ctx.has_input(1) else ctx.input_elem(2)
    axis = ctx.attr("axis", None)
    if not shapes or any(s is None for s in shapes) or axis is None:
        ctx.set_output(0, elem, None)
        return
    rank = len(shapes[0])
    a = int(axis) % rank if rank else 0
    out = list(shapes[0])
    dims = [s[a] for s in shapes]
    out[a] = sum(dims) if all(isinstance(d, int) for d in dims) else None
    ctx.set_output(0, elem, out)
