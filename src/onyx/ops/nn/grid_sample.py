"""GridSample (v16 2-D names bilinear/bicubic; v20+ N-D linear/nearest/cubic) and padding modes.

Each spatial axis yields per-tap indices and weights over the whole output grid; taps of all axes are
combined by products, and each combination is one fancy-indexed gather from a channels-last view.
"""

from __future__ import annotations

import itertools

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import grid_sample_rule
from onyx.ops.registry import op, shape_rule


def _reflect(p, lo, hi):
    span = hi - lo
    if span <= 0:
        return np.zeros_like(p)
    q = np.abs(p - lo)
    flips = np.floor(q / span)
    extra = q - flips * span
    return np.where(flips % 2 == 0, lo + extra, hi - extra)


def _pad_coord(p, size, padding, align):
    if padding == "border":
        return np.clip(p, 0, size - 1)
    if padding == "reflection":
        p = _reflect(p, 0.0, size - 1.0) if align else _reflect(p, -0.5, size - 0.5)
        return np.clip(p, 0, size - 1)
    return p


def _cubic(d, a=-0.75):
    d = np.abs(d)
    return np.where(
        d <= 1,
        ((a + 2) * d - (a + 3)) * d * d + 1,
        np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0),
    )


def _axis_taps(p, size, mode, padding, align):
    """List of (index, weight, valid) for one spatial axis."""
    if mode == "cubic":
        f = np.floor(p)
        taps = []
        for t in range(-1, 3):
            i = f + t
            w = _cubic(p - i)
            if padding == "zeros":
                valid = (i >= 0) & (i <= size - 1)
            else:
                i = _pad_coord(i, size, padding, align)
                valid = None
            taps.append((np.clip(i, 0, size - 1).astype(np.int64), w, valid))
        return taps
    p = _pad_coord(p, size, padding, align)
    if mode == "nearest":
        i = np.rint(p)
        valid = (i >= 0) & (i <= size - 1) if padding == "zeros" else None
        return [(np.clip(i, 0, size - 1).astype(np.int64), None, valid)]
    f = np.floor(p)
    taps = []
    for t in (0, 1):
        i = f + t
        w = 1 - np.abs(p - i)
        valid = (i >= 0) & (i <= size - 1)
        taps.append((np.clip(i, 0, size - 1).astype(np.int64), w, valid))
    return taps


def grid_sample(X, grid, mode, padding_mode, align_corners):
    if X.ndim < 3 or grid.ndim != X.ndim or grid.shape[0] != X.shape[0] or grid.shape[-1] != X.ndim - 2:
        raise InvalidArgument(
            f"GridSample: grid {grid.shape} does not fit X {X.shape} (need (N, *out, {X.ndim - 2}))"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise InvalidArgument(
            f"GridSample: padding_mode {padding_mode!r} must be zeros, border or reflection"
        )
    ct = compute_dtype(X.dtype)
    n, c = X.shape[:2]
    sp = X.shape[2:]
    r = len(sp)
    out = grid.shape[1:-1]
    xt = np.moveaxis(X.astype(ct, copy=False), 1, -1)  # (N, *sp, C)
    g = grid.astype(np.float64)
    per_axis = []
    for d in range(r):
        size = sp[d]
        gd = g[..., r - 1 - d]
        p = (gd + 1) / 2 * (size - 1) if align_corners else ((gd + 1) * size - 1) / 2
        per_axis.append(_axis_taps(p, size, mode, padding_mode, align_corners))
    nidx = np.arange(n).reshape((n,) + (1,) * len(out))
    y = np.zeros((n,) + tuple(out) + (c,), dtype=ct)
    for combo in itertools.product(*per_axis):
        w = None
        valid = None
        for _, wd, vd in combo:
            if wd is not None:
                w = wd if w is None else w * wd
            if vd is not None:
                valid = vd if valid is None else valid & vd
        if valid is not None:
            w = valid.astype(np.float64) if w is None else np.where(valid, w, 0.0)
        vals = xt[(nidx,) + tuple(t[0] for t in combo)]
        if w is None:
            y += vals
        else:
            y += vals * w.astype(ct)[..., None]
    return back(np.ascontiguousarray(np.moveaxis(y, -1, 1)), X.dtype)


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


@op("GridSample", since=16, until=20)
def grid_sample_16(X, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    m = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}.get(_s(mode))
    if m is None:
        raise InvalidArgument(f"GridSample-16: mode {mode!r} must be bilinear, nearest or bicubic")
    return grid_sample(X, grid, m, _s(padding_mode), bool(align_corners))


@op("GridSample", since=20)
def grid_sample_20(X, grid, *, align_corners=0, mode="linear", padding_mode="zeros"):
    m = _s(mode)
    if m not in ("linear", "nearest", "cubic"):
        raise InvalidArgument(f"GridSample: mode {mode!r} must be linear, nearest or cubic")
    return grid_sample(X, grid, m, _s(padding_mode), bool(align_corners))


shape_rule("GridSample")(grid_sample_rule)
