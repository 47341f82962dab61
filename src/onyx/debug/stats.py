"""Error figures between two values: the expected one (the reference side) and the one compared to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class ErrorFigures:
    """How far ``actual`` is from ``expected``: elements count as mismatched where
    ``|actual - expected| > atol + rtol * |expected|`` (numpy's allclose), NaN matching NaN."""

    agreed: bool
    max_abs: float = 0.0
    max_rel: float = 0.0  # |actual - expected| / max(|expected|, atol or the smallest normal float32)
    mismatches: int = 0
    size: int = 0
    cosine: float | None = None  # of the flattened values; None where undefined (non-numeric)
    note: str = ""  # why the values could not be compared element by element (shape, type...)

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.size if self.size else (0.0 if self.agreed else 1.0)


def error_figures(expected: Any, actual: Any, rtol: float, atol: float) -> ErrorFigures:
    """The figures for one pair of values (arrays, sequences of arrays, or other Python values)."""
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return _sequence_figures(list(expected), list(actual), rtol, atol)
    if not isinstance(expected, np.ndarray | np.generic) or not isinstance(actual, np.ndarray | np.generic):
        same = _equal(expected, actual)
        return ErrorFigures(same, note="" if same else f"{type(expected).__name__} values differ")
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape:
        return ErrorFigures(
            False,
            size=max(e.size, a.size),
            mismatches=max(e.size, a.size),
            note=f"shape {list(a.shape)} where {list(e.shape)} was expected",
        )
    if not (_numeric(e) and _numeric(a)):
        eq = e == a
        n = int(e.size - np.count_nonzero(eq))
        return ErrorFigures(
            n == 0,
            mismatches=n,
            size=e.size,
            note="" if e.dtype == a.dtype else f"dtype {a.dtype} where {e.dtype} was expected",
        )
    return _numeric_figures(e, a, rtol, atol)


def _numeric_figures(e: np.ndarray, a: np.ndarray, rtol: float, atol: float) -> ErrorFigures:
    e64, a64 = _as_float64(e), _as_float64(a)
    size = e64.size
    both_nan = np.isnan(e64) & np.isnan(a64)
    same_inf = np.isinf(e64) & (e64 == a64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64 - e64)
    diff[both_nan | same_inf] = 0.0
    diff[np.isnan(diff)] = np.inf  # NaN on one side only
    finite = np.isfinite(e64)
    bound = np.zeros_like(e64)  # a NaN or an infinity must be matched exactly
    bound[finite] = atol + rtol * np.abs(e64[finite])
    mismatched = diff > bound
    floor = atol if atol > 0 else float(np.finfo(np.float32).tiny)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rel = diff / np.maximum(np.abs(e64), floor)
    rel[diff == 0] = 0.0
    rel[np.isnan(rel)] = np.inf  # an infinite error against an infinite value
    n = int(np.count_nonzero(mismatched))
    note = "" if e.dtype == a.dtype else f"dtype {a.dtype} compared with {e.dtype}"
    return ErrorFigures(
        agreed=n == 0,
        max_abs=float(diff.max()) if size else 0.0,
        max_rel=float(rel.max()) if size else 0.0,
        mismatches=n,
        size=size,
        cosine=_cosine(e64, a64),
        note=note,
    )


def _sequence_figures(e: list, a: list, rtol: float, atol: float) -> ErrorFigures:
    if len(e) != len(a):
        return ErrorFigures(False, note=f"a sequence of {len(a)} where {len(e)} were expected")
    parts = [error_figures(x, y, rtol, atol) for x, y in zip(e, a)]
    return ErrorFigures(
        agreed=all(p.agreed for p in parts),
        max_abs=max((p.max_abs for p in parts), default=0.0),
        max_rel=max((p.max_rel for p in parts), default=0.0),
        mismatches=sum(p.mismatches for p in parts),
        size=sum(p.size for p in parts),
        cosine=None,
        note="; ".join(p.note for p in parts if p.note),
    )


def _cosine(e: np.ndarray, a: np.ndarray) -> float | None:
    finite = np.isfinite(e) & np.isfinite(a)
    x, y = e[finite], a[finite]
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 and ny == 0.0:
        return 1.0
    if nx == 0.0 or ny == 0.0:
        return 0.0
    return float(np.dot(x, y) / (nx * ny))


def _numeric(x: np.ndarray) -> bool:
    return x.dtype.kind in "biufc" or (x.dtype.kind == "V" and x.dtype.itemsize <= 4)


def _as_float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":  # real and imaginary parts side by side
        return np.stack([x.real, x.imag], axis=-1).astype(np.float64).ravel()
    return x.astype(np.float64).ravel()


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False
