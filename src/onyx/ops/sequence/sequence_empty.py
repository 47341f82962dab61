"""SequenceEmpty: an empty sequence of the element type named by ``dtype`` (default float)."""

from __future__ import annotations

from onyx.ir.dtypes import to_numpy
from onyx.ops.registry import op


@op("SequenceEmpty", since=11)
def sequence_empty(*, dtype=None):
    if dtype is not None:
        to_numpy(dtype)  # validates the type code; an empty Python list carries no element type
    return []
