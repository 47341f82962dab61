"""OptionalGetElement: the value held by an optional (a tensor or sequence input is returned as is)."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


@op("OptionalGetElement", since=15)
def optional_get_element(input):  # noqa: A002
    # Version 18 also accepts plain tensors and sequences, returned unchanged; an optional holding a
    # value is the value itself here, so one kernel covers 15, 18 and 28 (new element types).
    if input is None:
        raise InvalidArgument("OptionalGetElement: the optional input is empty")
    return input
