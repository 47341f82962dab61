"""Optional: wrap a tensor or sequence as an optional value, or make an empty one (None)."""

from __future__ import annotations

from onyx.ops.registry import op


@op("Optional", since=15)
def optional(input=None, *, type=None):  # noqa: A002 - ONNX names
    # An optional holding a value is represented by the value itself; an empty optional is None. The
    # ``type`` attribute only matters for type inference. Version 28 only adds element types.
    return input
