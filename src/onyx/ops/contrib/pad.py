"""com.microsoft Pad: onnxruntime's contrib Pad (before ONNX's Pad-11): ``pads`` is an input (1-D
[2 * rank], or [1, 2 * rank]), ``value`` an optional scalar input; modes constant, reflect, edge."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.pad import pad as pad_tensor

MODES = ("constant", "reflect", "edge")


def _pads(pads, rank: int) -> list[int]:
    p = np.asarray(pads)
    if p.dtype != np.int64:
        raise InvalidArgument(f"Pad (com.microsoft): pads must be int64, got {p.dtype}")
    if not (p.ndim == 1 or (p.ndim == 2 and p.shape[0] == 1)) or p.size != 2 * rank:
        raise InvalidArgument(
            f"Pad (com.microsoft): pads must be [{2 * rank}] or [1, {2 * rank}] for rank {rank}, "
            f"got {p.shape}"
        )
    return [int(v) for v in p.reshape(-1)]


@op("Pad", domain="com.microsoft", since=1)
def pad(data, pads, value=None, *, mode="constant"):
    x = np.asarray(data)
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in MODES:
        raise InvalidArgument(f"Pad (com.microsoft): mode must be one of {MODES}, got {mode!r}")
    return pad_tensor(x, _pads(pads, x.ndim), mode, value)


@shape_rule("Pad", domain="com.microsoft")
def _shape(ctx) -> None:
    s, p = ctx.input_shape(0), ctx.input_value(1)
    if s is None or p is None or any(not isinstance(v, int | np.integer) for v in np.asarray(p).reshape(-1)):
        ctx.set_output(0, ctx.input_elem(0), None if s is None else [None] * len(s))
        return
    pads = _pads(np.asarray(p, dtype=np.int64), len(s))
    r = len(s)
    dims = [d + pads[i] + pads[i + r] if isinstance(d, int) else None for i, d in enumerate(s)]
    ctx.set_output(0, ctx.input_elem(0), dims)
