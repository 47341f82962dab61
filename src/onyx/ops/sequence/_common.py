"""Helpers shared by the sequence kernels. Sequences are Python lists of numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def as_sequence(value: Any, op_name: str) -> list:
    if not isinstance(value, list):
        raise InvalidArgument(f"{op_name}: expected a sequence (list of tensors), got {type(value).__name__}")
    return value


def position(value: Any, op_name: str) -> int:
    """A scalar position tensor (int32 or int64) as a Python int."""
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgument(
            f"{op_name}: position must be a scalar int32/int64 tensor, "
            f"got dtype {arr.dtype} shape {arr.shape}"
        )
    return int(arr.reshape(-1)[0])


def normalize(pos: int, n: int, op_name: str, allow_end: bool = False) -> int:
    """Map a position in [-n, n-1] (or [-n, n] when ``allow_end``) to [0, n-1] (or [0, n])."""
    hi = n if allow_end else n - 1
    if not -n <= pos <= hi:
        raise InvalidArgument(f"{op_name}: position {pos} is out of range [{-n}, {hi}] for length {n}")
    return pos + n if pos < 0 else pos


# -- shape-rule helpers ------------------------------------------------------------------------


def union_dims(a: list | None, b: list | None) -> list | None:
    """Dims covering two tensors of one sequence: equal dims stay, others unknown; ranks differ: None."""
    if a is None or b is None or len(a) != len(b):
        return None
    return [x if x is not None and x == y else None for x, y in zip(a, b)]


def elem_tensor(ctx, i: int):
    """The tensor type of the elements of sequence input ``i``: (elem, dims) or (None, None)."""
    from onyx.ir.types import SequenceType, TensorType
    from onyx.shape_inference import info_from_type

    t = ctx.input_type(i)
    if isinstance(t, SequenceType) and isinstance(t.elem, TensorType):
        info = info_from_type(t.elem)
        return info.elem, info.dims
    if (
        t is not None
        and not isinstance(t, SequenceType)
        and not (isinstance(t, TensorType) and not t.elem_type)
    ):
        ctx.fail(f"input {i} must be a sequence, got {t}")
    return None, None


def set_sequence(ctx, i: int, elem, dims) -> None:
    """Output ``i``: a sequence of tensors of ``elem`` with ``dims``."""
    from onyx.ir.symbolic import dim_to_proto
    from onyx.ir.types import SequenceType, Shape, TensorType

    shape = None if dims is None else Shape([dim_to_proto(d) for d in dims])
    ctx.set_output_type(i, SequenceType(TensorType(elem, shape)))
