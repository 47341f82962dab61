"""Identity: the input itself (tensor, sequence or optional)."""

from __future__ import annotations

from onyx.ops.registry import op


@op("Identity", since=1)
def identity_1(input):
    if isinstance(input, list):
        return list(input)  # a new list object over the same tensors
    return input
