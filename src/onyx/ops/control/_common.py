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


def stack(values: list[Any], what: str, declared: Any = None) -> np.ndarray:
    """Stack per-iteration scan outputs on a new leading axis, naming the output on a shape mismatch.

    With no iteration at all the element type and shape come from the body output's declared type
    (``declared``, an onyx TensorType) where it has them: (0, *dims) with unknown dims as 0; else an
    empty float32 tensor of shape (0,).
    """
    if not values:
        return empty_scan(declared)
    arrays = [np.asarray(v) for v in values]
    first = arrays[0]
    for i, a in enumerate(arrays):
        if a.shape != first.shape:
            raise InvalidArgument(
                f"{what}: iteration {i} produced shape {a.shape}, iteration 0 produced {first.shape}; "
                "scan outputs must keep one shape across iterations"
            )
    return np.stack(arrays)


def empty_scan(declared: Any) -> np.ndarray:
    """The stacked result of zero iterations for a body output of type ``declared``."""
    elem = getattr(declared, "elem_type", None)
    shape = getattr(declared, "shape", None)
    dtype = np.float32
    if elem:
        from onyx.ir.dtypes import to_numpy

        try:
            dtype = to_numpy(elem)
        except Exception:  # noqa: BLE001 - an unknown code keeps the float32 default
            dtype = np.float32
    dims = (0,)
    if shape is not None:
        dims = (0, *[d if isinstance(d, int) else 0 for d in shape.dims])
    return np.empty(dims, dtype=dtype)


def check_outputs(outs: list[Any], expected: int, what: str) -> None:
    if len(outs) != expected:
        raise InvalidArgument(f"{what}: the body returned {len(outs)} values, expected {expected}")
