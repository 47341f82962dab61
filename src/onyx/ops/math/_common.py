"""Helpers shared by the math, activation and linalg kernels (not auto-imported: leading underscore)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.errors import InvalidArgument

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
#: Float types numpy computes natively at full speed; others (float16, bfloat16, float8...) go via float32.
NATIVE_FLOATS = frozenset((F32, F64))


def named(fn: Callable, op_type: str, since: int) -> Callable:
    """``fn`` named after the op and opset it serves (``Add_7``), for kernels built by a helper: registry
    messages and tracebacks then name the op rather than the helper's inner function."""
    fn.__name__ = fn.__qualname__ = f"{op_type}_{since}"
    return fn


def shapes(*xs) -> str:
    return ", ".join(str(tuple(getattr(x, "shape", ()))) for x in xs)


def broadcast_error(op_type: str, *xs) -> InvalidArgument:
    """The error for inputs whose shapes do not broadcast together."""
    return InvalidArgument(f"{op_type}: input shapes {shapes(*xs)} are not broadcast-compatible")


def legacy_broadcast(op_type: str, a: np.ndarray, b: np.ndarray, broadcast: int, axis: int | None):
    """``b`` reshaped for the opset<7 rule: with ``broadcast=1`` B matches a contiguous run of A's
    dimensions starting at ``axis`` (or A's trailing dimensions when ``axis`` is absent)."""
    if not broadcast:
        if a.shape != b.shape and b.size != 1:
            raise InvalidArgument(
                f"{op_type}: shapes {shapes(a, b)} differ and the legacy attribute broadcast is 0"
            )
        return b
    if axis is None or b.ndim == 0:
        return b
    if axis < 0:
        axis += a.ndim
    if axis < 0 or axis + b.ndim > a.ndim:
        raise InvalidArgument(f"{op_type}: legacy broadcast of B {b.shape} into A {a.shape} at axis {axis}")
    for da, db in zip(a.shape[axis : axis + b.ndim], b.shape):
        if db != da and db != 1:
            raise InvalidArgument(
                f"{op_type}: legacy broadcast of B {b.shape} into A {a.shape} at axis {axis}: "
                f"dimension {db} does not match {da}"
            )
    return b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))


def to_compute(x: np.ndarray) -> np.ndarray:
    """``x`` itself for float32/float64, else a float32 copy (float16, bfloat16, float8...)."""
    return x if x.dtype in NATIVE_FLOATS else x.astype(F32)


def scalar_axis(axis, op_type: str) -> int:
    """An axis given as a 0-d or one-element integer tensor."""
    a = np.asarray(axis)
    if a.size != 1 or a.dtype.kind not in "iu":
        raise InvalidArgument(f"{op_type}: axis must be one integer, got shape {a.shape} dtype {a.dtype}")
    return int(a.reshape(-1)[0])


def norm_axis(axis: int, rank: int, op_type: str) -> int:
    if not -rank <= axis < rank and not (rank == 0 and axis in (0, -1)):
        raise InvalidArgument(f"{op_type}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def variadic(op_type: str, ufunc, xs) -> np.ndarray:
    """``ufunc`` folded over one or more broadcasting inputs (Max, Min, Sum, Mean); a new array."""
    if len(xs) == 2:
        a, b = xs
        try:
            return ufunc(a, b, out=...)
        except ValueError:
            raise broadcast_error(op_type, a, b) from None
    if not xs:
        raise InvalidArgument(f"{op_type}: needs at least one input")
    if len(xs) == 1:
        return xs[0].copy()
    try:
        out = ufunc(xs[0], xs[1], out=...)
        for x in xs[2:]:
            if np.broadcast_shapes(out.shape, x.shape) == out.shape:
                ufunc(out, x, out=out)
            else:
                out = ufunc(out, x)
        return out
    except ValueError:
        raise broadcast_error(op_type, *xs) from None
