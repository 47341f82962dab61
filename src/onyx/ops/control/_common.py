"""Helpers shared by the control-flow kernels (If, Loop, Scan, SequenceMap)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def pack(outputs: list[Any] | tuple[Any, ...]) -> Any:
    """A kernel's return value from a list of outputs: the value itself for one, a tuple for several.

    A single output that is a sequence (a Python list) or an empty optional (None) is returned as is.
    """
    outputs = tuple(outputs)
    if len(outputs) == 1:
        return outputs[0]
    return outputs


def scalar_bool(value: Any, what: str) -> bool:
    """The truth value of a one-element tensor (a condition)."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must hold exactly one element, got shape {arr.shape}")
    return bool(arr.reshape(-1)[0])


def scalar_int(value: Any, what: str) -> int:
    """The integer value of a one-element tensor (a trip count, a length)."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must hold exactly one element, got shape {arr.shape}")
    return int(arr.reshape(-1)[0])


def stack(values: list[Any], what: str) -> np.ndarray:
    """Stack per-iteration scan outputs on a new leading axis, naming the output on a shape mismatch.

    With no iteration at all the element shape is unknown: the result is an empty float32 tensor of
    shape (0,).
    """
    if not values:
        return np.empty((0,), dtype=np.float32)
    arrays = [np.asarray(v) for v in values]
    first = arrays[0]
    for i, a in enumerate(arrays):
        if a.shape != first.shape:
            raise InvalidArgument(
                f"{what}: iteration {i} produced shape {a.shape}, iteration 0 produced {first.shape}; "
                "scan outputs must keep one shape across iterations"
            )
    return np.stack(arrays)


def check_outputs(outs: list[Any], expected: int, what: str) -> None:
    if len(outs) != expected:
        raise InvalidArgument(f"{what}: the body returned {len(outs)} values, expected {expected}")
