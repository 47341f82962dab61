"""The reduction machinery shared by the Reduce* kernels.

A reduction is an elementwise map, a fold over ``axes`` and a final map (ReduceL2 = sqrt(sum(x*x))).
``axes`` empty or absent means every axis, unless ``noop_with_empty_axes`` is set: then only the
elementwise part is applied and nothing is folded (onnxruntime does the same: ReduceSumSquare gives
x*x). A fold over an empty set gives the identity: 0 for sums, 1 for products, -inf/+inf (or the
type's min/max) for max/min, log(0) = -inf for the log reductions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.tensor._common import ML_FLOATS, ML_INTS


def resolve_axes(axes: Any, rank: int, name: str) -> tuple[int, ...] | None:
    """Normalised axes; ``None`` when no axes were given (or an empty list)."""
    if axes is None:
        return None
    if isinstance(axes, np.ndarray):
        if axes.dtype.kind not in "iu":
            raise InvalidArgument(f"{name}: axes must be an integer tensor, got {axes.dtype}")
        vals: Iterable[Any] = axes.reshape(-1).tolist()
    else:
        vals = axes
    out = []
    for a in vals:
        a = int(a)
        if not -rank <= a < rank and not (rank == 0 and a in (0, -1)):
            raise InvalidArgument(f"{name}: axis {a} out of range for rank {rank}")
        out.append(a % rank if rank else 0)
    if not out:
        return None
    if len(set(out)) != len(out):
        raise InvalidArgument(f"{name}: axes {list(vals)} has repeated entries")
    return tuple(sorted(set(out))) if rank else ()


def _work_dtype(dtype: np.dtype) -> np.dtype:
    if dtype in ML_FLOATS or dtype == np.float16:
        return np.dtype(np.float32)
    if dtype in ML_INTS:
        return np.dtype(np.int64)
    return dtype


def _elementwise(kind: str, x: np.ndarray) -> np.ndarray:
    if kind in ("sum_square", "l2"):
        return x * x
    if kind == "l1":
        return np.abs(x)
    return x


_FOLD = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_PLAIN = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64))


def reduce(
    kind: str, data: Any, axes: Any, keepdims: int, noop_with_empty_axes: int, name: str
) -> np.ndarray:
    x = np.asarray(data)
    if x.dtype == object:
        raise InvalidArgument(f"{name}: string tensors cannot be reduced")
    ax = resolve_axes(axes, x.ndim, name)
    if ax is None:
        if noop_with_empty_axes:
            return _noop(kind, x, x.dtype)
        ax = tuple(range(x.ndim))
    keep = bool(keepdims)
    fold = _FOLD.get(kind)
    if fold is not None and x.dtype in _PLAIN and x.size:
        # the common case, without conversions or error-state bookkeeping
        return np.asarray(fold.reduce(x, axis=ax, keepdims=keep, dtype=x.dtype))
    if kind == "mean" and x.dtype.kind == "f" and x.dtype in _PLAIN and x.size:
        r = np.asarray(np.add.reduce(x, axis=ax, keepdims=keep, dtype=x.dtype))
        return np.asarray(r / r.dtype.type(x.size // max(r.size, 1)))
    return _reduce_general(kind, x, ax, keep)


def _reduce_general(kind: str, x: np.ndarray, ax: tuple[int, ...], keep: bool) -> np.ndarray:
    out_dtype = x.dtype
    wd = x.dtype if kind in ("max", "min") and x.dtype == np.float16 else _work_dtype(x.dtype)
    if kind in ("l2", "log_sum", "log_sum_exp", "mean") and wd.kind in "iub":
        wd = np.dtype(np.float64)
    w = x.astype(wd, copy=False)
    count = 1
    for a in ax:
        count *= x.shape[a]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind in ("max", "min"):
            fold = _FOLD[kind]
            if count == 0:
                r = fold.reduce(w, axis=ax, keepdims=keep, initial=_extreme(w.dtype, kind == "max"))
            else:
                r = fold.reduce(w, axis=ax, keepdims=keep)
        elif kind == "prod":
            r = np.multiply.reduce(w, axis=ax, keepdims=keep, dtype=wd)
        elif kind == "mean":
            r = np.add.reduce(w, axis=ax, keepdims=keep, dtype=wd)
            r = r / count if count else np.full_like(r, np.nan)
        elif kind == "log_sum_exp":
            if count == 0:
                r = np.log(np.add.reduce(w, axis=ax, keepdims=keep, dtype=wd))
            else:
                m = np.maximum.reduce(w, axis=ax, keepdims=True)
                m = np.where(np.isfinite(m), m, 0).astype(wd, copy=False)
                s = np.add.reduce(np.exp(w - m), axis=ax, keepdims=True, dtype=wd)
                r = np.log(s) + m
                if not keep:
                    r = r.reshape([d for i, d in enumerate(r.shape) if i not in ax])
        else:
            r = np.add.reduce(_elementwise(kind, w), axis=ax, keepdims=keep, dtype=wd)
            if kind == "l2":
                r = np.sqrt(r)
            elif kind == "log_sum":
                r = np.log(r)
        return np.asarray(r).astype(out_dtype, copy=False)


def _extreme(dtype: np.dtype, for_max: bool):
    """The identity of max (the lowest value) or of min (the highest) for ``dtype``."""
    if dtype == np.bool_:
        return not for_max
    if dtype.kind == "f":
        return -np.inf if for_max else np.inf
    info = np.iinfo(dtype)
    return info.min if for_max else info.max


def _noop(kind: str, x: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    if kind in ("sum", "mean", "prod", "max", "min", "log_sum_exp"):
        return x
    wd = _work_dtype(x.dtype)
    w = x.astype(wd, copy=False)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == "l2":
            r = np.abs(w)
        elif kind == "log_sum":
            r = np.log(w.astype(np.float64) if wd.kind in "iub" else w)
        else:
            r = _elementwise(kind, w)
    return np.asarray(r).astype(out_dtype, copy=False)
