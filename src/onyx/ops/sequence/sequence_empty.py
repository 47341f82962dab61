"""SequenceEmpty: an empty sequence of the element type named by ``dtype`` (default float)."""

from __future__ import annotations

from onyx.ir.dtypes import to_numpy
from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import set_sequence


@op("SequenceEmpty", since=11)
def sequence_empty(*, dtype=None):
    if dtype is not None:
        to_numpy(dtype)  # validates the type code; an empty Python list carries no element type
    return []


@shape_rule("SequenceEmpty")
def _sequence_empty_shape(ctx) -> None:
    """An empty sequence of tensors of ``dtype`` (default float), shape unknown."""
    set_sequence(ctx, 0, int(ctx.attr("dtype", 1)), None)
