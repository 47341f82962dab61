"""ReverseSequence: reverse the first ``sequence_lens[b]`` steps of each batch entry along time."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("ReverseSequence", since=10)
def reverse_sequence_10(input, sequence_lens, *, batch_axis=1, time_axis=0):
    x = np.asarray(input)
    if x.ndim < 2:
        raise InvalidArgument(f"ReverseSequence: input must have rank >= 2, got shape {x.shape}")
    ba, ta = int(batch_axis), int(time_axis)
    if {ba, ta} != {0, 1}:
        raise InvalidArgument(f"ReverseSequence: batch_axis/time_axis must be 0 and 1, got {ba}, {ta}")
    lens = np.asarray(sequence_lens).astype(np.int64).reshape(-1)
    xb = np.moveaxis(x, (ba, ta), (0, 1))  # (batch, time, ...)
    nb, nt = xb.shape[:2]
    if lens.shape[0] != nb:
        raise InvalidArgument(f"ReverseSequence: sequence_lens has {lens.shape[0]} entries, batch is {nb}")
    if lens.size and (lens.min() < 0 or lens.max() > nt):
        raise InvalidArgument(f"ReverseSequence: sequence_lens {lens.tolist()} out of range [0, {nt}]")
    t = np.arange(nt)[None, :]
    ln = lens[:, None]
    src = np.where(t < ln, ln - 1 - t, t)
    out = xb[np.arange(nb)[:, None], src]
    return np.ascontiguousarray(np.moveaxis(out, (0, 1), (ba, ta)))


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("ReverseSequence")
def _reverse_sequence_shape(ctx: ShapeContext) -> None:
    s = ctx.input_shape(0)
    if s is not None and len(s) < 2:
        ctx.fail(f"ReverseSequence: input must have rank >= 2, got shape {s}")
    ctx.same_as_input(0)
